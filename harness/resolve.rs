//! The dynamic loader's search, simulated, with the reason each path was or was not taken.
//!
//! Follows glibc's `ld.so` (`man ld.so`, `elf/dl-load.c`): a name with a slash is opened as
//! given; otherwise the requester's DT_RPATH (only when it has no DT_RUNPATH), the directories
//! the program adds itself, LD_LIBRARY_PATH, DT_RUNPATH, `/etc/ld.so.cache`, then the default
//! directories. Every candidate is checked the way glibc's `open_verify` checks it, from its
//! first 20 bytes: a file of the other ELF class or another machine is skipped and the search
//! goes on; a file that is not a loadable ELF stops the search with an error.
//!
//! Not simulated: objects already loaded (glibc matches them by soname first), the DT_RPATH of
//! the requester's own loaders (glibc also searches those when the requester has no DT_RUNPATH),
//! `glibc-hwcaps` subdirectories, DF_1_NODEFLIB, and secure (setuid) mode.

use crate::discover::inside;
use crate::discover::ldcache::{self, CacheEntry};
use crate::model::VersionNeed;
use crate::search_path::{split_search_path, X86_64_DEFAULT_DIRS};
use serde::{Deserialize, Serialize};
use std::io::Read;
use std::path::{Path, PathBuf};

/// Where the loader looks, besides the requester's own DT_RPATH/DT_RUNPATH.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchContext {
    /// LD_LIBRARY_PATH entries exactly as given, empty ones included (they mean the current
    /// directory). See [`split_search_path`].
    pub ld_library_path: Vec<String>,
    /// `/etc/ld.so.cache`, in file order.
    pub cache: Vec<CacheEntry>,
    /// The loader's built-in directories, searched last.
    pub default_dirs: Vec<PathBuf>,
    /// The loading process's ELF class: `ELF64` or `ELF32`.
    pub class: String,
    /// The loading process's machine, named as [`crate::elf::ElfInfo::machine`] names it.
    pub machine: String,
    /// What `$LIB` expands to. glibc fixes it when it is built: `lib/x86_64-linux-gnu` on
    /// Debian and Ubuntu (multiarch), `lib64` on Fedora, RHEL and SUSE.
    pub lib: String,
    /// What `$PLATFORM` expands to (the kernel's AT_PLATFORM: `x86_64`, `i686`, `aarch64`).
    pub platform: String,
    /// The root file system the loader runs in when it is not this machine's (`--sysroot`):
    /// every candidate is placed below it and its links followed inside it
    /// ([`crate::discover::inside`]), so nothing outside it is opened.
    pub root: Option<PathBuf>,
}

/// What the loader knows about one machine: how its libraries look and how ldconfig tags them.
struct Abi {
    machine: &'static str,
    e_machine: u16,
    big_endian: bool,
    /// ld.so.cache flag words this loader accepts (glibc `_dl_cache_check_flags`; the constants
    /// are `FLAG_ELF_LIBC6` 0x0003 or'ed with `FLAG_X8664_LIB64` 0x0300, `FLAG_AARCH64_LIB64`
    /// 0x0a00, ... from glibc's `ldconfig.h`; i386 also takes plain `FLAG_ELF` 0x0001).
    cache_flags: &'static [i32],
    platform: &'static str,
    multiarch: &'static str,
}

const ABIS: &[Abi] = &[
    Abi {
        machine: "x86_64",
        e_machine: 62,
        big_endian: false,
        cache_flags: &[0x0303],
        platform: "x86_64",
        multiarch: "x86_64-linux-gnu",
    },
    Abi {
        machine: "i386",
        e_machine: 3,
        big_endian: false,
        cache_flags: &[0x0003, 0x0001],
        platform: "i686",
        multiarch: "i386-linux-gnu",
    },
    Abi {
        machine: "aarch64",
        e_machine: 183,
        big_endian: false,
        cache_flags: &[0x0a03],
        platform: "aarch64",
        multiarch: "aarch64-linux-gnu",
    },
    Abi {
        machine: "ppc64le",
        e_machine: 21,
        big_endian: false,
        cache_flags: &[0x0503],
        platform: "power9",
        multiarch: "powerpc64le-linux-gnu",
    },
    Abi {
        machine: "arm",
        e_machine: 40,
        big_endian: false,
        cache_flags: &[0x0903],
        platform: "v7l",
        multiarch: "arm-linux-gnueabihf",
    },
];

fn abi(machine: &str) -> Option<&'static Abi> {
    ABIS.iter().find(|a| a.machine == machine)
}

impl SearchContext {
    /// A context with nothing on any path, for `class`/`machine`: `$LIB` in Debian's multiarch
    /// form (`lib/x86_64-linux-gnu`), `$PLATFORM` as the kernel names the machine.
    pub fn bare(class: &str, machine: &str) -> Self {
        let (lib, platform) = match abi(machine) {
            Some(a) => (format!("lib/{}", a.multiarch), a.platform.to_owned()),
            None => ("lib".to_owned(), machine.to_owned()),
        };
        SearchContext {
            ld_library_path: Vec::new(),
            cache: Vec::new(),
            default_dirs: Vec::new(),
            class: class.to_owned(),
            machine: machine.to_owned(),
            lib,
            platform,
            root: None,
        }
    }

    /// This host as a process like stackbench's own sees it: LD_LIBRARY_PATH from the
    /// environment, `/etc/ld.so.cache` (empty when missing or unreadable), and the loader of
    /// [`SearchContext::native`].
    pub fn host() -> Self {
        let mut ctx = SearchContext::native(|dir| dir.is_dir());
        ctx.ld_library_path = std::env::var_os("LD_LIBRARY_PATH")
            .map(|v| split_search_path(&v.to_string_lossy()))
            .unwrap_or_default();
        ctx.cache = crate::hostfs::read(Path::new("/etc/ld.so.cache"), crate::hostfs::LISTING)
            .ok()
            .and_then(|bytes| ldcache::parse(&bytes).ok())
            .unwrap_or_default();
        ctx
    }

    /// The loader of this machine's architecture on a root file system whose directories
    /// `is_dir` tells (an absolute path as that root names it): its default directories, and
    /// `$LIB` as this distribution's glibc expands it (the multiarch directory when
    /// `/lib/<triple>` exists, else `lib64` for 64-bit, else `lib`). Nothing on any path yet.
    pub fn native(is_dir: impl Fn(&Path) -> bool) -> Self {
        let machine = crate::machine::OWN_MACHINE;
        let class = crate::machine::OWN_CLASS;
        let mut ctx = SearchContext::bare(class, machine);
        let multiarch = abi(machine).map(|a| a.multiarch);
        ctx.default_dirs = match multiarch {
            Some("x86_64-linux-gnu") => X86_64_DEFAULT_DIRS.iter().map(PathBuf::from).collect(),
            Some(triple) => [
                format!("/lib/{triple}"),
                format!("/usr/lib/{triple}"),
                "/lib".into(),
                "/usr/lib".into(),
            ]
            .into_iter()
            .map(PathBuf::from)
            .collect(),
            None => vec!["/lib".into(), "/usr/lib".into()],
        };
        ctx.lib = match multiarch {
            Some(triple) if is_dir(&Path::new("/lib").join(triple)) => format!("lib/{triple}"),
            _ if class == "ELF64" && is_dir(Path::new("/lib64")) => "lib64".into(),
            _ => "lib".into(),
        };
        ctx
    }

    /// `path` as the loader names it: below [`SearchContext::root`] when there is one (an
    /// absolute DT_RUNPATH entry of a library in the tree means the tree's directory).
    fn placed(&self, path: PathBuf) -> PathBuf {
        match &self.root {
            Some(root) if !path.starts_with(root) => crate::discover::under(root, &path),
            _ => path,
        }
    }

    /// The file `path` names with every link resolved: inside [`SearchContext::root`] when
    /// there is one. `None` when it does not exist.
    pub fn real(&self, path: &Path) -> Option<PathBuf> {
        match &self.root {
            Some(root) => inside::resolve(root, path),
            None => crate::hostfs::real_path(path).ok(),
        }
    }

    /// The ld.so.cache flag words this context's loader accepts.
    fn cache_flags(&self) -> &'static [i32] {
        abi(&self.machine).map_or(&[0x0003, 0x0001], |a| a.cache_flags)
    }
}

/// The object whose dependency is being resolved.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Requester {
    /// The path the loader loaded the object under, for `$ORIGIN` (its directory). glibc takes
    /// a shared object's origin from that path without resolving symlinks; for the main program
    /// it uses `/proc/self/exe`, the resolved path.
    pub path: PathBuf,
    pub rpath: Vec<String>,
    pub runpath: Vec<String>,
}

impl Requester {
    /// The directories its own RPATH and RUNPATH name, tokens expanded: where the loader looks
    /// for its dependencies before and after `LD_LIBRARY_PATH`.
    pub fn own_dirs(&self, ctx: &SearchContext) -> Vec<PathBuf> {
        self.rpath
            .iter()
            .chain(&self.runpath)
            .flat_map(|entry| split_search_path(entry))
            .filter_map(|entry| expand(&entry, self, ctx))
            .map(PathBuf::from)
            .collect()
    }
}

/// Which step of the search produced a candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SearchStep {
    /// The name had a slash: opened as given.
    Direct,
    Rpath,
    LdLibraryPath,
    Runpath,
    LdSoCache,
    DefaultDir,
}

/// What the loader made of one candidate path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum AttemptResult {
    /// A loadable object of the right class and machine: the search ends here.
    Accepted,
    /// No such file (or a path component is not a directory): the search goes on.
    Missing,
    /// An ELF file of the other class (`ELF32` where `ELF64` is needed): skipped, the search
    /// goes on. If nothing else is found, glibc says "wrong ELF class: ELFCLASS32".
    WrongClass { found: String },
    /// An ELF file for another machine: skipped silently, the search goes on.
    WrongMachine { found: String },
    /// Permission denied: skipped, the search goes on.
    Unreadable { error: String },
    /// Present but not loadable (not ELF, too short, wrong byte order, not a shared object,
    /// unreadable contents): glibc stops the whole search with this error.
    Invalid { error: String },
}

/// One path the loader tried.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attempt {
    #[serde(with = "crate::pathname")]
    pub path: PathBuf,
    pub via: SearchStep,
    #[serde(flatten)]
    pub result: AttemptResult,
}

/// The outcome of resolving one name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resolution {
    pub name: String,
    /// The accepted path, as tried.
    #[serde(default, with = "crate::pathname::option")]
    pub found: Option<PathBuf>,
    /// The accepted path with every symlink resolved.
    #[serde(default, with = "crate::pathname::option")]
    pub real: Option<PathBuf>,
    /// Every candidate, in the order the loader tries them.
    pub attempts: Vec<Attempt>,
    /// What the loader would report when nothing was accepted (glibc's wording).
    pub error: Option<String>,
}

impl Attempt {
    /// One line for people: the path, the step that tried it, and what came of it.
    pub fn describe(&self) -> String {
        let result = match &self.result {
            AttemptResult::Accepted => "found".to_string(),
            AttemptResult::Missing => "no such file".to_string(),
            AttemptResult::WrongClass { found } => format!("wrong ELF class ({found})"),
            AttemptResult::WrongMachine { found } => format!("wrong machine ({found})"),
            AttemptResult::Unreadable { error } | AttemptResult::Invalid { error } => error.clone(),
        };
        format!(
            "{} via {}: {result}",
            self.path.display(),
            self.via.describe()
        )
    }
}

impl SearchStep {
    /// How the step is named in reports.
    pub fn describe(self) -> &'static str {
        match self {
            SearchStep::Direct => "path",
            SearchStep::Rpath => "DT_RPATH",
            SearchStep::LdLibraryPath => "LD_LIBRARY_PATH",
            SearchStep::Runpath => "DT_RUNPATH",
            SearchStep::LdSoCache => "ld.so.cache",
            SearchStep::DefaultDir => "default dir",
        }
    }
}

impl Resolution {
    /// The attempts made in one step of the search.
    pub fn attempts_via(&self, step: SearchStep) -> impl Iterator<Item = &Attempt> {
        self.attempts.iter().filter(move |a| a.via == step)
    }
}

/// Resolves `name` as the loader would for `requester`: see the module documentation for the
/// order. `$ORIGIN`/`${ORIGIN}`, `$LIB` and `$PLATFORM` are expanded in DT_RPATH, DT_RUNPATH,
/// LD_LIBRARY_PATH and in a name with a slash; an entry with `$ORIGIN` is dropped when the
/// requester has no path. Within one list a directory is searched once (glibc drops repeats);
/// empty entries mean the current directory and are tried as `./name`.
pub fn resolve(name: &str, requester: &Requester, ctx: &SearchContext) -> Resolution {
    let mut search = Search {
        ctx,
        attempts: Vec::new(),
        other_class: None,
    };
    let outcome = if name.contains('/') {
        match expand(name, requester, ctx) {
            Some(path) => search.try_path(PathBuf::from(path), SearchStep::Direct),
            None => Outcome::Continue,
        }
    } else {
        search.run(name, requester)
    };
    let (found, error) = match outcome {
        Outcome::Found(path) => (Some(path), None),
        Outcome::Stop(message) => (None, Some(message)),
        Outcome::Continue => {
            let why = match &search.other_class {
                Some(class) => format!(
                    "wrong ELF class: ELFCLASS{}",
                    class.strip_prefix("ELF").unwrap_or(class)
                ),
                None => "cannot open shared object file: No such file or directory".to_owned(),
            };
            (None, Some(format!("{name}: {why}")))
        }
    };
    let real = found.as_ref().and_then(|p| ctx.real(p));
    Resolution {
        name: name.to_owned(),
        found,
        real,
        attempts: search.attempts,
        error,
    }
}

enum Outcome {
    Found(PathBuf),
    Continue,
    Stop(String),
}

struct Search<'a> {
    ctx: &'a SearchContext,
    attempts: Vec<Attempt>,
    /// The class of the last wrong-class file met, for glibc's message.
    other_class: Option<String>,
}

impl Search<'_> {
    fn run(&mut self, name: &str, requester: &Requester) -> Outcome {
        let ctx = self.ctx;
        let expand_all = |entries: &[String]| -> Vec<String> {
            entries
                .iter()
                .filter_map(|e| expand(e, requester, ctx))
                .collect()
        };
        if requester.runpath.is_empty() {
            let dirs = expand_all(&requester.rpath);
            if let Some(o) = self.try_dirs(name, &dirs, SearchStep::Rpath) {
                return o;
            }
        }
        let llp = expand_all(&ctx.ld_library_path);
        if let Some(o) = self.try_dirs(name, &llp, SearchStep::LdLibraryPath) {
            return o;
        }
        let runpath = expand_all(&requester.runpath);
        if let Some(o) = self.try_dirs(name, &runpath, SearchStep::Runpath) {
            return o;
        }
        let flags = ctx.cache_flags();
        if let Some(entry) = ctx
            .cache
            .iter()
            .find(|e| e.soname == name && flags.contains(&e.flags))
        {
            match self.try_path(entry.path.clone(), SearchStep::LdSoCache) {
                Outcome::Continue => {}
                other => return other,
            }
        }
        let defaults: Vec<String> = ctx
            .default_dirs
            .iter()
            .map(|d| d.to_string_lossy().into_owned())
            .collect();
        self.try_dirs(name, &defaults, SearchStep::DefaultDir)
            .unwrap_or(Outcome::Continue)
    }

    /// Tries `name` in each directory once; `None` when the search should go on.
    fn try_dirs(&mut self, name: &str, dirs: &[String], via: SearchStep) -> Option<Outcome> {
        let mut seen: Vec<String> = Vec::new();
        for dir in dirs {
            let dir = normalise_dir(dir);
            if seen.contains(&dir) {
                continue;
            }
            let path = if dir.is_empty() {
                Path::new(".").join(name)
            } else {
                Path::new(&dir).join(name)
            };
            seen.push(dir);
            match self.try_path(path, via) {
                Outcome::Continue => {}
                other => return Some(other),
            }
        }
        None
    }

    fn try_path(&mut self, path: PathBuf, via: SearchStep) -> Outcome {
        let path = self.ctx.placed(path);
        let result = match &self.ctx.root {
            None => verify(&path, &self.ctx.class, &self.ctx.machine),
            Some(root) => match inside::resolve(root, &path) {
                Some(real) => verify(&real, &self.ctx.class, &self.ctx.machine),
                None => AttemptResult::Missing,
            },
        };
        let outcome = match &result {
            AttemptResult::Accepted => Outcome::Found(path.clone()),
            AttemptResult::Invalid { error } => {
                Outcome::Stop(format!("{}: {error}", path.display()))
            }
            AttemptResult::WrongClass { found } => {
                self.other_class = Some(found.clone());
                Outcome::Continue
            }
            _ => Outcome::Continue,
        };
        self.attempts.push(Attempt { path, via, result });
        outcome
    }
}

/// A directory entry without trailing slashes (`/` stays `/`), as glibc stores it.
fn normalise_dir(dir: &str) -> String {
    let trimmed = dir.trim_end_matches('/');
    if trimmed.is_empty() && dir.starts_with('/') {
        "/".to_owned()
    } else {
        trimmed.to_owned()
    }
}

/// Expands `$ORIGIN`, `$LIB`, `$PLATFORM` (also in `${...}` form). Unknown `$` sequences are kept
/// as they are, as glibc keeps them. `None` when the entry needs `$ORIGIN` and the requester has
/// no path (glibc drops such entries), or when nothing is left.
fn expand(entry: &str, requester: &Requester, ctx: &SearchContext) -> Option<String> {
    let mut out = String::with_capacity(entry.len());
    let mut rest = entry;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let (token, len) = dst_token(after);
        let value = match token {
            Some("ORIGIN") => {
                let dir = requester.path.parent()?;
                let dir = dir.to_string_lossy();
                if dir.is_empty() {
                    return None;
                }
                Some(dir.into_owned())
            }
            Some("LIB") => Some(ctx.lib.clone()),
            Some("PLATFORM") => Some(ctx.platform.clone()),
            _ => None,
        };
        match value {
            Some(v) => {
                out.push_str(&v);
                rest = &after[len..];
            }
            None => {
                out.push('$');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    (!out.is_empty() || entry.is_empty()).then_some(out)
}

/// The dynamic string token at the start of `text` (after a `$`) and how many bytes it takes:
/// `ORIGIN...` or `{ORIGIN}...`, likewise `LIB` and `PLATFORM`. A bare name must end at a
/// character that cannot continue a name (glibc's `is_dst`).
fn dst_token(text: &str) -> (Option<&'static str>, usize) {
    for token in ["ORIGIN", "PLATFORM", "LIB"] {
        if let Some(tail) = text.strip_prefix('{') {
            if tail.starts_with(token) && tail[token.len()..].starts_with('}') {
                return (Some(token), token.len() + 2);
            }
        } else if let Some(tail) = text.strip_prefix(token) {
            let continues = tail
                .bytes()
                .next()
                .is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_');
            if !continues {
                return (Some(token), token.len());
            }
        }
    }
    (None, 0)
}

/// Checks one candidate as glibc's `open_verify` does, from its first 20 bytes (`e_ident`,
/// `e_type`, `e_machine`).
fn verify(path: &Path, class: &str, machine: &str) -> AttemptResult {
    let mut file = match crate::hostfs::open(path) {
        Ok((file, _)) => file,
        Err(crate::hostfs::ReadError::Io(e)) => {
            return match e.kind() {
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory => {
                    AttemptResult::Missing
                }
                std::io::ErrorKind::PermissionDenied => AttemptResult::Unreadable {
                    error: e.to_string(),
                },
                _ => AttemptResult::Invalid {
                    error: format!("cannot open shared object file: {e}"),
                },
            }
        }
        Err(refused) => {
            return AttemptResult::Invalid {
                error: format!("cannot open shared object file: {refused}"),
            }
        }
    };
    let mut header = [0u8; 20];
    let mut len = 0;
    while len < header.len() {
        match file.read(&mut header[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                return AttemptResult::Invalid {
                    error: format!("cannot read file data: {e}"),
                }
            }
        }
    }
    check_header(&header[..len], class, machine)
}

/// glibc's checks, in glibc's order, on the first bytes of a file.
fn check_header(header: &[u8], class: &str, machine: &str) -> AttemptResult {
    let invalid = |error: &str| AttemptResult::Invalid {
        error: error.to_owned(),
    };
    if header.len() < 20 {
        return invalid("file too short");
    }
    if header[..4] != *b"\x7fELF" {
        return invalid("invalid ELF header");
    }
    let found_class = match header[4] {
        1 => "ELF32".to_owned(),
        2 => "ELF64".to_owned(),
        other => format!("class {other}"),
    };
    if found_class != class {
        return AttemptResult::WrongClass { found: found_class };
    }
    let abi = abi(machine);
    let big_endian = match header[5] {
        1 => false,
        2 => true,
        _ => return invalid("ELF file data encoding not little-endian"),
    };
    if abi.is_some_and(|a| a.big_endian != big_endian) {
        let expected = if big_endian { "little" } else { "big" };
        return invalid(&format!("ELF file data encoding not {expected}-endian"));
    }
    if header[6] != 1 {
        return invalid("ELF file version ident does not match current one");
    }
    // ELFOSABI_SYSV or ELFOSABI_GNU; an ABI version only with GNU.
    if header[7] != 0 && header[7] != 3 {
        return invalid("ELF file OS ABI invalid");
    }
    if header[8] != 0 && header[7] != 3 {
        return invalid("ELF file ABI version invalid");
    }
    if header[9..16].iter().any(|&b| b != 0) {
        return invalid("nonzero padding in e_ident");
    }
    let half = |at: usize| {
        let bytes = [header[at], header[at + 1]];
        if big_endian {
            u16::from_be_bytes(bytes)
        } else {
            u16::from_le_bytes(bytes)
        }
    };
    let e_machine = half(18);
    let wanted = abi.map(|a| a.e_machine);
    if wanted.map_or(
        crate::elf::machine_name(e_machine, big_endian) != machine,
        |w| w != e_machine,
    ) {
        return AttemptResult::WrongMachine {
            found: crate::elf::machine_name(e_machine, big_endian),
        };
    }
    // ET_EXEC or ET_DYN.
    if !matches!(half(16), 2 | 3) {
        return invalid("only ET_DYN and ET_EXEC can be loaded");
    }
    AttemptResult::Accepted
}

/// The symbol versions `needs` requires from one provider that the provider does not define:
/// what makes the loader fail with "version `X' not found (required by ...)". The provider is
/// matched by file name (a path's last component) against each need's file, which is the
/// DT_NEEDED name, normally the soname. Each missing version is listed once, in order.
pub fn missing_symbol_versions(
    needs: &[VersionNeed],
    provider_file_name_or_soname: &str,
    provider_defs: &[String],
) -> Vec<String> {
    let provider = provider_file_name_or_soname
        .rsplit('/')
        .next()
        .unwrap_or(provider_file_name_or_soname);
    let mut missing: Vec<String> = Vec::new();
    for need in needs.iter().filter(|n| n.file == provider) {
        for version in &need.versions {
            if !provider_defs.contains(version) && !missing.contains(version) {
                missing.push(version.clone());
            }
        }
    }
    missing
}

/// What is wrong with one LD_LIBRARY_PATH entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HygieneKind {
    /// An empty entry (leading, trailing or doubled separator): the current directory, whatever
    /// it is when the program runs.
    Empty,
    /// A relative path: resolved against the current directory at run time.
    Relative,
    /// Anyone may create files there, so anyone can plant a library that is loaded first. The
    /// sticky bit (`/tmp`'s 1777) does not help: it stops others deleting files, not creating
    /// them, so sticky directories are reported too.
    WorldWritable,
    /// The directory does not exist (informational: the loader skips it).
    Missing,
}

impl HygieneKind {
    /// Whether the issue is only informational.
    pub fn is_informational(self) -> bool {
        matches!(self, HygieneKind::Missing)
    }
}

/// One LD_LIBRARY_PATH entry and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct HygieneIssue {
    pub entry: String,
    pub kind: HygieneKind,
}

/// The problems of a LD_LIBRARY_PATH value, entry by entry in order (split as glibc splits it,
/// on `:` and `;`). Entries starting with a dynamic string token (`$ORIGIN/...`) are not
/// relative. Only the directory itself is checked for world-writability, after following
/// symlinks.
pub fn search_path_hygiene(ld_library_path: &str) -> Vec<HygieneIssue> {
    let mut issues = Vec::new();
    for entry in split_search_path(ld_library_path) {
        let kind = if entry.is_empty() {
            Some(HygieneKind::Empty)
        } else if !entry.starts_with('/') && !entry.starts_with('$') {
            Some(HygieneKind::Relative)
        } else if entry.starts_with('$') {
            None
        } else {
            match std::fs::metadata(&entry) {
                Err(_) => Some(HygieneKind::Missing),
                Ok(meta) if world_writable(&meta) => Some(HygieneKind::WorldWritable),
                Ok(_) => None,
            }
        };
        if let Some(kind) = kind {
            issues.push(HygieneIssue { entry, kind });
        }
    }
    issues
}

#[cfg(unix)]
fn world_writable(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o002 != 0
}

#[cfg(not(unix))]
fn world_writable(_meta: &std::fs::Metadata) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use std::fs;

    /// The first 20 bytes of an ELF shared object, then padding to 64.
    fn elf_header(class: u8, big_endian: bool, e_machine: u16, e_type: u16) -> Vec<u8> {
        let mut h = vec![
            0x7f,
            b'E',
            b'L',
            b'F',
            class,
            if big_endian { 2 } else { 1 },
            1,
            0,
        ];
        h.resize(16, 0);
        let half = |v: u16| {
            if big_endian {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        };
        h.extend_from_slice(&half(e_type));
        h.extend_from_slice(&half(e_machine));
        h.resize(64, 0);
        h
    }

    fn lib64() -> Vec<u8> {
        elf_header(2, false, 62, 3)
    }

    fn lib32() -> Vec<u8> {
        elf_header(1, false, 3, 3)
    }

    fn aarch64() -> Vec<u8> {
        elf_header(2, false, 183, 3)
    }

    fn put(path: &Path, bytes: &[u8]) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, bytes).unwrap();
    }

    fn ctx() -> SearchContext {
        SearchContext::bare("ELF64", "x86_64")
    }

    fn s(dir: &Path) -> String {
        dir.to_string_lossy().into_owned()
    }

    fn requester(path: &Path, rpath: &[String], runpath: &[String]) -> Requester {
        Requester {
            path: path.to_path_buf(),
            rpath: rpath.to_vec(),
            runpath: runpath.to_vec(),
        }
    }

    fn summary(r: &Resolution) -> Vec<(SearchStep, &'static str)> {
        r.attempts
            .iter()
            .map(|a| {
                let result = match a.result {
                    AttemptResult::Accepted => "accepted",
                    AttemptResult::Missing => "missing",
                    AttemptResult::WrongClass { .. } => "wrong_class",
                    AttemptResult::WrongMachine { .. } => "wrong_machine",
                    AttemptResult::Unreadable { .. } => "unreadable",
                    AttemptResult::Invalid { .. } => "invalid",
                };
                (a.via, result)
            })
            .collect()
    }

    #[rstest]
    #[case::rpath_first_without_runpath(true, false, SearchStep::Rpath)]
    #[case::runpath_disables_rpath(true, true, SearchStep::Runpath)]
    #[case::runpath_alone(false, true, SearchStep::Runpath)]
    #[case::neither(false, false, SearchStep::LdLibraryPath)]
    fn rpath_runpath_precedence(
        #[case] with_rpath: bool,
        #[case] with_runpath: bool,
        #[case] expected: SearchStep,
    ) {
        let tmp = tempfile::tempdir().unwrap();
        let (rp, rn, llp) = (
            tmp.path().join("rp"),
            tmp.path().join("rn"),
            tmp.path().join("llp"),
        );
        for dir in [&rp, &rn, &llp] {
            put(&dir.join("libx.so.1"), &lib64());
        }
        let rpath = if with_rpath { vec![s(&rp)] } else { vec![] };
        let runpath = if with_runpath { vec![s(&rn)] } else { vec![] };
        let mut c = ctx();
        if !with_rpath && !with_runpath {
            c.ld_library_path = vec![s(&llp)];
        }
        let r = resolve(
            "libx.so.1",
            &requester(&tmp.path().join("app"), &rpath, &runpath),
            &c,
        );
        assert_eq!(r.attempts.last().unwrap().via, expected, "{r:#?}");
        assert!(r.found.is_some());
        assert_eq!(r.error, None);
    }

    #[test]
    fn full_order_is_rpath_llp_runpath_cache_default() {
        let tmp = tempfile::tempdir().unwrap();
        let d = |n: &str| tmp.path().join(n);
        put(&d("default").join("libx.so.1"), &lib64());
        let mut c = ctx();
        c.ld_library_path = vec![s(&d("llp"))];
        c.cache = vec![CacheEntry {
            soname: "libx.so.1".into(),
            path: d("cache").join("libx.so.1"),
            flags: 0x0303,
        }];
        c.default_dirs = vec![d("default")];
        // RPATH is ignored because of RUNPATH: the order is llp, runpath, cache, default.
        let req = requester(&d("app"), &[s(&d("rp"))], &[s(&d("rn"))]);
        let r = resolve("libx.so.1", &req, &c);
        assert_eq!(
            summary(&r),
            [
                (SearchStep::LdLibraryPath, "missing"),
                (SearchStep::Runpath, "missing"),
                (SearchStep::LdSoCache, "missing"),
                (SearchStep::DefaultDir, "accepted"),
            ]
        );
        // Without RUNPATH, RPATH comes first.
        let req = requester(&d("app"), &[s(&d("rp"))], &[]);
        let r = resolve("libx.so.1", &req, &c);
        assert_eq!(r.attempts[0].via, SearchStep::Rpath);
        assert_eq!(r.attempts[0].path, d("rp").join("libx.so.1"));
        assert_eq!(r.found, Some(d("default").join("libx.so.1")));
    }

    #[rstest]
    #[case("$ORIGIN")]
    #[case("${ORIGIN}")]
    #[case("$ORIGIN/")]
    #[case("$ORIGIN/../lib/..//lib")]
    fn expands_origin(#[case] entry: &str) {
        let tmp = tempfile::tempdir().unwrap();
        let lib = tmp.path().join("lib");
        put(&lib.join("libdep.so.2"), &lib64());
        let req = requester(&lib.join("libmain.so.1"), &[], &[entry.to_owned()]);
        let r = resolve("libdep.so.2", &req, &ctx());
        assert!(r.found.is_some(), "{r:#?}");
        assert_eq!(r.attempts.len(), 1);
        assert!(r.attempts[0].path.starts_with(&lib));
        assert_eq!(
            r.real,
            Some(fs::canonicalize(lib.join("libdep.so.2")).unwrap())
        );
    }

    #[rstest]
    #[case("/opt/$LIB/x", "/opt/lib/x86_64-linux-gnu/x")]
    #[case("/opt/${LIB}/x", "/opt/lib/x86_64-linux-gnu/x")]
    #[case("/opt/$PLATFORM", "/opt/x86_64")]
    #[case("/opt/$ORIGINAL", "/opt/$ORIGINAL")]
    #[case("/opt/$LIBRARY", "/opt/$LIBRARY")]
    #[case("/opt/$FOO/x", "/opt/$FOO/x")]
    #[case("$ORIGIN/../lib", "/app/bin/../lib")]
    fn expands_tokens(#[case] entry: &str, #[case] expected: &str) {
        let req = requester(Path::new("/app/bin/prog"), &[], &[]);
        assert_eq!(expand(entry, &req, &ctx()).as_deref(), Some(expected));
    }

    #[test]
    fn origin_without_a_requester_path_is_dropped() {
        let req = Requester::default();
        assert_eq!(expand("$ORIGIN/lib", &req, &ctx()), None);
        let r = resolve(
            "libnothing.so.1",
            &Requester {
                runpath: vec!["$ORIGIN".into()],
                ..req
            },
            &ctx(),
        );
        assert!(r.attempts.is_empty());
    }

    #[test]
    fn wrong_class_is_skipped_then_the_right_one_found() {
        let tmp = tempfile::tempdir().unwrap();
        let (d32, d64) = (tmp.path().join("i386"), tmp.path().join("amd64"));
        put(&d32.join("libcuda.so.1"), &lib32());
        put(&d64.join("libcuda.so.1"), &lib64());
        let mut c = ctx();
        c.ld_library_path = vec![s(&d32), s(&d64)];
        let r = resolve("libcuda.so.1", &Requester::default(), &c);
        assert_eq!(
            r.attempts[0].result,
            AttemptResult::WrongClass {
                found: "ELF32".into()
            }
        );
        assert_eq!(r.attempts[1].result, AttemptResult::Accepted);
        assert_eq!(r.found, Some(d64.join("libcuda.so.1")));

        c.ld_library_path = vec![s(&d32)];
        let r = resolve("libcuda.so.1", &Requester::default(), &c);
        assert_eq!(r.found, None);
        assert_eq!(
            r.error.as_deref(),
            Some("libcuda.so.1: wrong ELF class: ELFCLASS32")
        );
    }

    #[test]
    fn wrong_machine_is_skipped_silently() {
        let tmp = tempfile::tempdir().unwrap();
        put(&tmp.path().join("a/libx.so"), &aarch64());
        let mut c = ctx();
        c.ld_library_path = vec![s(&tmp.path().join("a"))];
        let r = resolve("libx.so", &Requester::default(), &c);
        assert_eq!(
            r.attempts[0].result,
            AttemptResult::WrongMachine {
                found: "aarch64".into()
            }
        );
        assert_eq!(
            r.error.as_deref(),
            Some("libx.so: cannot open shared object file: No such file or directory")
        );
    }

    #[rstest]
    #[case::text(b"/* GNU ld script */\nGROUP ( libc.so.6 )\n".to_vec(), "invalid ELF header")]
    #[case::short(b"\x7fELF\x02\x01".to_vec(), "file too short")]
    #[case::big_endian(elf_header(2, true, 62, 3), "ELF file data encoding not little-endian")]
    #[case::relocatable(elf_header(2, false, 62, 1), "only ET_DYN and ET_EXEC can be loaded")]
    fn invalid_files_stop_the_search(#[case] bytes: Vec<u8>, #[case] error: &str) {
        let tmp = tempfile::tempdir().unwrap();
        put(&tmp.path().join("a/libx.so"), &bytes);
        put(&tmp.path().join("b/libx.so"), &lib64());
        let mut c = ctx();
        c.ld_library_path = vec![s(&tmp.path().join("a")), s(&tmp.path().join("b"))];
        let r = resolve("libx.so", &Requester::default(), &c);
        assert_eq!(r.attempts.len(), 1, "{r:#?}");
        assert_eq!(
            r.attempts[0].result,
            AttemptResult::Invalid {
                error: error.into()
            }
        );
        assert_eq!(r.found, None);
        assert!(r.error.unwrap().ends_with(error));
    }

    #[test]
    fn a_directory_named_like_the_library_stops_the_search() {
        let tmp = tempfile::tempdir().unwrap();
        fs::create_dir_all(tmp.path().join("a/libx.so")).unwrap();
        let mut c = ctx();
        c.ld_library_path = vec![s(&tmp.path().join("a"))];
        let r = resolve("libx.so", &Requester::default(), &c);
        assert!(
            matches!(r.attempts[0].result, AttemptResult::Invalid { .. }),
            "{r:#?}"
        );
    }

    #[test]
    fn cache_entries_must_match_soname_and_flags() {
        let tmp = tempfile::tempdir().unwrap();
        let (p32, p64) = (
            tmp.path().join("32/libz.so.1"),
            tmp.path().join("64/libz.so.1"),
        );
        put(&p32, &lib32());
        put(&p64, &lib64());
        let entry = |soname: &str, path: &Path, flags: i32| CacheEntry {
            soname: soname.into(),
            path: path.to_path_buf(),
            flags,
        };
        let mut c = ctx();
        c.cache = vec![
            entry("libz.so", &p64, 0x0303),
            entry("libz.so.1", &p32, 0x0003),
            entry("libz.so.1", &p64, 0x0303),
        ];
        let r = resolve("libz.so.1", &Requester::default(), &c);
        assert_eq!(summary(&r), [(SearchStep::LdSoCache, "accepted")]);
        assert_eq!(r.found, Some(p64.clone()));

        // A 32-bit loader takes the libc6 entry.
        let mut c32 = SearchContext::bare("ELF32", "i386");
        c32.cache = c.cache.clone();
        let r = resolve("libz.so.1", &Requester::default(), &c32);
        assert_eq!(r.found, Some(p32.clone()));

        // Only the first fitting cache entry is tried; a wrong file there falls to the defaults.
        c.cache = vec![entry("libz.so.1", &p32, 0x0303)];
        c.default_dirs = vec![p64.parent().unwrap().to_path_buf()];
        let r = resolve("libz.so.1", &Requester::default(), &c);
        assert_eq!(
            summary(&r),
            [
                (SearchStep::LdSoCache, "wrong_class"),
                (SearchStep::DefaultDir, "accepted")
            ]
        );
    }

    #[test]
    fn empty_entries_mean_the_current_directory() {
        let mut c = ctx();
        c.ld_library_path = split_search_path("/nonexistent-a::/nonexistent-b:");
        assert_eq!(
            c.ld_library_path,
            ["/nonexistent-a", "", "/nonexistent-b", ""]
        );
        let r = resolve("libstackbench-none.so.1", &Requester::default(), &c);
        let paths: Vec<_> = r.attempts.iter().map(|a| a.path.clone()).collect();
        // The second empty entry is the same directory as the first: tried once.
        assert_eq!(
            paths,
            [
                PathBuf::from("/nonexistent-a/libstackbench-none.so.1"),
                PathBuf::from("./libstackbench-none.so.1"),
                PathBuf::from("/nonexistent-b/libstackbench-none.so.1"),
            ]
        );
        assert!(r
            .attempts
            .iter()
            .all(|a| a.via == SearchStep::LdLibraryPath));
    }

    #[rstest]
    #[case("", &[])]
    #[case("/a", &["/a"])]
    #[case("/a:/b;/c", &["/a", "/b", "/c"])]
    #[case(":", &["", ""])]
    fn splits_like_glibc(#[case] value: &str, #[case] expected: &[&str]) {
        assert_eq!(split_search_path(value), expected);
    }

    #[test]
    fn repeated_directories_are_searched_once() {
        let mut c = ctx();
        c.ld_library_path = vec!["/nonexistent".into(), "/nonexistent/".into()];
        let r = resolve("libq.so", &Requester::default(), &c);
        assert_eq!(r.attempts.len(), 1);
    }

    #[test]
    fn names_with_a_slash_are_used_as_given() {
        let tmp = tempfile::tempdir().unwrap();
        let lib = tmp.path().join("x/libx.so");
        put(&lib, &lib64());
        let mut c = ctx();
        c.ld_library_path = vec![s(tmp.path())];
        let r = resolve(&s(&lib), &Requester::default(), &c);
        assert_eq!(summary(&r), [(SearchStep::Direct, "accepted")]);
        let r = resolve(
            "$ORIGIN/x/libx.so",
            &requester(&tmp.path().join("app"), &[], &[]),
            &c,
        );
        assert_eq!(r.found, Some(lib));
        let r = resolve("/nonexistent/libx.so", &Requester::default(), &c);
        assert_eq!(summary(&r), [(SearchStep::Direct, "missing")]);
    }

    #[test]
    fn symlinks_resolve_to_the_real_file() {
        let tmp = tempfile::tempdir().unwrap();
        let real = tmp.path().join("libcudart.so.12.9.79");
        put(&real, &lib64());
        std::os::unix::fs::symlink("libcudart.so.12.9.79", tmp.path().join("libcudart.so.12"))
            .unwrap();
        let mut c = ctx();
        c.ld_library_path = vec![tmp.path().display().to_string()];
        let r = resolve("libcudart.so.12", &Requester::default(), &c);
        assert_eq!(r.found, Some(tmp.path().join("libcudart.so.12")));
        assert_eq!(r.real, Some(fs::canonicalize(&real).unwrap()));
    }

    #[test]
    fn resolution_serialises() {
        let r = Resolution {
            name: "libx.so".into(),
            found: None,
            real: None,
            attempts: vec![Attempt {
                path: "/a/libx.so".into(),
                via: SearchStep::LdLibraryPath,
                result: AttemptResult::WrongClass {
                    found: "ELF32".into(),
                },
            }],
            error: Some("libx.so: wrong ELF class: ELFCLASS32".into()),
        };
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(
            json["attempts"][0],
            serde_json::json!({"path": "/a/libx.so", "via": "ld_library_path", "result": "wrong_class", "found": "ELF32"})
        );
        let back: Resolution = serde_json::from_value(json).unwrap();
        assert_eq!(back, r);
    }

    #[test]
    fn host_context_reads_this_host() {
        let c = SearchContext::host();
        assert!(!c.default_dirs.is_empty());
        if cfg!(all(target_arch = "x86_64", target_os = "linux")) {
            assert_eq!((c.class.as_str(), c.machine.as_str()), ("ELF64", "x86_64"));
            // The host's own libc resolves through its cache or default directories.
            let r = resolve(
                "libc.so.6",
                &Requester::default(),
                &SearchContext {
                    ld_library_path: Vec::new(),
                    ..c
                },
            );
            assert!(r.found.is_some(), "{r:#?}");
        }
    }

    fn need(file: &str, versions: &[&str]) -> VersionNeed {
        VersionNeed {
            file: file.into(),
            versions: versions.iter().map(|v| v.to_string()).collect(),
        }
    }

    #[rstest]
    #[case::all_there("libnvJitLink.so.12", &["libnvJitLink.so.12", "__nvJitLinkComplete_12_4"], &[])]
    #[case::older_provider("libnvJitLink.so.12", &["libnvJitLink.so.12", "__nvJitLinkComplete_12_0"], &["__nvJitLinkComplete_12_4"])]
    #[case::glibc("/lib/x86_64-linux-gnu/libc.so.6", &["GLIBC_2.2.5", "GLIBC_2.34"], &["GLIBC_2.38"])]
    #[case::other_provider("libm.so.6", &[], &[])]
    fn finds_missing_versions(
        #[case] provider: &str,
        #[case] defs: &[&str],
        #[case] missing: &[&str],
    ) {
        let needs = [
            need(
                "libnvJitLink.so.12",
                &["libnvJitLink.so.12", "__nvJitLinkComplete_12_4"],
            ),
            need("libc.so.6", &["GLIBC_2.2.5", "GLIBC_2.38", "GLIBC_2.38"]),
        ];
        let defs: Vec<String> = defs.iter().map(|d| d.to_string()).collect();
        assert_eq!(missing_symbol_versions(&needs, provider, &defs), missing);
    }

    #[test]
    fn hygiene_flags_each_kind() {
        let tmp = tempfile::tempdir().unwrap();
        let (ok, open, sticky) = (
            tmp.path().join("ok"),
            tmp.path().join("open"),
            tmp.path().join("sticky"),
        );
        for d in [&ok, &open, &sticky] {
            fs::create_dir(d).unwrap();
        }
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&open, fs::Permissions::from_mode(0o777)).unwrap();
        fs::set_permissions(&sticky, fs::Permissions::from_mode(0o1777)).unwrap();
        let missing = tmp.path().join("missing");
        let value = format!(
            ":{}:lib:{}:{}:{};$ORIGIN/lib:{}:",
            s(&ok),
            s(&open),
            s(&sticky),
            s(&missing),
            s(&ok)
        );
        let kinds: Vec<(String, HygieneKind)> = search_path_hygiene(&value)
            .into_iter()
            .map(|i| (i.entry, i.kind))
            .collect();
        assert_eq!(
            kinds,
            [
                (String::new(), HygieneKind::Empty),
                ("lib".into(), HygieneKind::Relative),
                (s(&open), HygieneKind::WorldWritable),
                (s(&sticky), HygieneKind::WorldWritable),
                (s(&missing), HygieneKind::Missing),
                (String::new(), HygieneKind::Empty),
            ]
        );
        assert!(HygieneKind::Missing.is_informational());
        assert!(!HygieneKind::WorldWritable.is_informational());
        assert!(search_path_hygiene("").is_empty());
    }

    proptest::proptest! {
        #[test]
        fn search_path_parsers_never_panic(value in "[a-z/:;. $]{0,60}") {
            let _ = split_search_path(&value);
            let _ = search_path_hygiene(&value);
        }
    }
}
