//! Who may load what. Loading a shared object runs its constructors, so a worker only ever loads
//! files that its user could have written alone: the rule ([`rule`]) is read from metadata, and
//! a worker for files of another user runs as that user when stackbench runs as root
//! ([`identity`]). Static analysis needs no trust and goes on for every installation.

pub mod environment;
pub mod identity;
pub mod rule;

pub use identity::Identity;
pub use rule::{Distrust, Writers};

use identity::owner_of;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// How a run decides who loads what.
#[derive(Debug, Clone)]
pub struct Policy {
    /// The user stackbench runs as.
    pub me: Identity,
    /// `--load-untrusted`: load everything as ourselves, as stackbench once did.
    pub load_untrusted: bool,
}

impl Policy {
    /// The rule, for the user running stackbench.
    pub fn strict() -> Policy {
        Policy {
            me: Identity::current(),
            load_untrusted: false,
        }
    }

    /// The rule, or none with `load_untrusted`.
    pub fn new(load_untrusted: bool) -> Policy {
        Policy {
            load_untrusted,
            ..Policy::strict()
        }
    }

    /// Who may load `files` (each then searching `dirs`), and with which of `search_path`'s
    /// entries: as ourselves when every step is ours or root's; as their owner when we are root
    /// and they are one other user's; not at all otherwise.
    pub fn decide(&self, files: &[PathBuf], dirs: &[PathBuf], search_path: &str) -> Decision {
        if self.load_untrusted {
            return Decision::Load(Launch {
                user: None,
                search_path: search_path.to_owned(),
                left_out: Vec::new(),
                environment: Vec::new(),
            });
        }
        let mut owners: BTreeMap<u32, (u32, PathBuf)> = BTreeMap::new();
        for file in files {
            match rule::walk(file, false) {
                Ok(found) => {
                    for (uid, gid) in found.0 {
                        owners.entry(uid).or_insert((gid, file.clone()));
                    }
                }
                Err(distrust) => return Decision::Refuse(Refusal::Untrusted(distrust)),
            }
        }
        let others: Vec<(u32, (u32, PathBuf))> = owners
            .into_iter()
            .filter(|(uid, _)| *uid != self.me.uid)
            .collect();
        let user = match (others.as_slice(), self.me.is_root()) {
            ([], _) => None,
            ([(uid, (gid, _))], true) => Some(Identity::of(*uid, *gid)),
            ([(uid, (_, file)), ..], false) => {
                return Decision::Refuse(Refusal::NotOwned {
                    owner: owner_of(*uid),
                    path: rule::first_owned_by(file, *uid).unwrap_or_else(|| file.clone()),
                })
            }
            ([(first, _), (second, (_, file)), ..], true) => {
                return Decision::Refuse(Refusal::Mixed {
                    owners: vec![owner_of(*first), owner_of(*second)],
                    path: rule::first_owned_by(file, *second).unwrap_or_else(|| file.clone()),
                })
            }
        };
        let uid = user.as_ref().map_or(self.me.uid, |u| u.uid);
        for dir in dirs {
            if let Some(distrust) = search_distrust(dir, uid) {
                return Decision::Refuse(Refusal::Untrusted(distrust));
            }
        }
        let (search_path, left_out) = trusted_entries(search_path, uid);
        Decision::Load(Launch {
            environment: user
                .as_ref()
                .map(environment::names_for)
                .unwrap_or_default(),
            user,
            search_path,
            left_out,
        })
    }

    /// The entries of `search_path` (an `LD_LIBRARY_PATH`) that our own workers may search.
    pub fn own_search_path(&self, search_path: &str) -> String {
        match self.load_untrusted {
            true => search_path.to_owned(),
            false => trusted_entries(search_path, self.me.uid).0,
        }
    }
}

/// What a worker for a set of files may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Load(Launch),
    Refuse(Refusal),
}

/// How a worker is started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    /// The user it runs as, when not ourselves.
    pub user: Option<Identity>,
    /// Its `LD_LIBRARY_PATH`: the entries that user may search.
    pub search_path: String,
    /// The entries left out, and why.
    pub left_out: Vec<LeftOut>,
    /// When it runs as another user: the names of the variables of ours its environment keeps
    /// (the allow-list's), never their values.
    pub environment: Vec<String>,
}

/// A search-path entry a worker was not given.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeftOut {
    pub entry: String,
    pub distrust: Distrust,
}

/// Why files are not loaded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Refusal {
    /// A step can be written by someone other than its owner, or cannot be read.
    Untrusted(Distrust),
    /// The files are another user's, and we are not root.
    NotOwned {
        owner: String,
        #[serde(with = "crate::pathname")]
        path: PathBuf,
    },
    /// Steps of two users other than us: no one user may load them all.
    Mixed {
        owners: Vec<String>,
        #[serde(with = "crate::pathname")]
        path: PathBuf,
    },
}

impl Refusal {
    /// One line saying why nothing was loaded.
    pub fn reason(&self) -> String {
        match self {
            Refusal::Untrusted(distrust) => format!("not loaded: {}", distrust.describe()),
            Refusal::NotOwned { owner, .. } => {
                format!("not loaded: owned by {owner} (static analysis only)")
            }
            Refusal::Mixed { owners, path } => format!(
                "not loaded: its files belong to {}, and {} is {}'s: no one user may load them all",
                owners.join(" and "),
                path.display(),
                owners.last().map_or("another user", String::as_str)
            ),
        }
    }

    /// The one thing to do about it.
    pub fn fix(&self) -> String {
        match self {
            Refusal::Untrusted(distrust) => distrust.fix(),
            Refusal::NotOwned { owner, .. } => format!(
                "run stackbench as {owner} (or as root, which loads each user's files as that user) to load them"
            ),
            Refusal::Mixed { path, .. } => format!(
                "give {} to the installation's owner, or copy the file into the installation",
                path.display()
            ),
        }
    }
}

impl Distrust {
    /// What is wrong, in words: the path and who can write it.
    pub fn describe(&self) -> String {
        match self {
            Distrust::Writable { path, by } => {
                format!("{} can be written by {}", path.display(), by.describe())
            }
            Distrust::Owned { path, owner } => {
                format!("{} belongs to {}", path.display(), owner_of(*owner))
            }
            Distrust::Unreadable { path, reason } => {
                format!("{} cannot be checked: {reason}", path.display())
            }
            Distrust::Missing { path } => format!("{} is missing", path.display()),
            Distrust::Creatable {
                path,
                parent,
                reason,
            } => format!(
                "{} does not exist yet, and another user could create it in {} ({reason})",
                path.display(),
                parent.display()
            ),
        }
    }

    /// The one thing to do about it.
    pub fn fix(&self) -> String {
        match self {
            Distrust::Writable { path, .. } => format!("chmod go-w {}", path.display()),
            Distrust::Owned { path, .. } => {
                format!(
                    "chown root {} (or remove it from the search path)",
                    path.display()
                )
            }
            Distrust::Unreadable { path, .. } | Distrust::Missing { path } => {
                format!("check {} and its links", path.display())
            }
            Distrust::Creatable { path, .. } => format!(
                "create {} as its installation's owner, or take it off the search path",
                path.display()
            ),
        }
    }
}

impl Writers {
    /// `everyone`, or `group video (gid 44)`.
    pub fn describe(&self) -> String {
        match self {
            Writers::Everyone => "every user".to_owned(),
            Writers::Group(gid) => match identity::group_name(*gid) {
                Some(name) => format!("group {name} (gid {gid})"),
                None => format!("group {gid}"),
            },
        }
    }
}

/// The standard output of `program ARGS` within `timeout`, run as the trust rule would load the
/// program's file: as ourselves when it is ours or root's, as its owner when we are root and it
/// is one other user's (a venv's `python3` first on root's `PATH`), with its environment reset
/// then and only the search-path entries that user may search; otherwise, or when it fails or
/// hangs, why not.
pub fn output_if_trusted(
    program: &Path,
    args: &[&str],
    timeout: std::time::Duration,
) -> Result<String, String> {
    let shown = program.display();
    let search_path = std::env::var("LD_LIBRARY_PATH").unwrap_or_default();
    let launch = match Policy::strict().decide(&[program.to_path_buf()], &[], &search_path) {
        Decision::Load(launch) => launch,
        Decision::Refuse(refusal) => {
            let why = match &refusal {
                Refusal::Untrusted(distrust) => distrust.describe(),
                Refusal::NotOwned { owner, path } => format!("{} is {owner}'s", path.display()),
                Refusal::Mixed { owners, .. } => {
                    format!("its steps are {}'s", owners.join(" and "))
                }
            };
            return Err(format!("{shown} not run: {why}"));
        }
    };
    let mut command = std::process::Command::new(program);
    command.args(args);
    match launch.search_path.as_str() {
        "" => command.env_remove("LD_LIBRARY_PATH"),
        path => command.env("LD_LIBRARY_PATH", path),
    };
    let user = launch.user.as_ref();
    crate::process::output_within(command, user, crate::process::Sight::Own, timeout).ok_or_else(
        || {
            format!(
                "{shown} {} failed or did not answer{}",
                args.join(" "),
                identity::as_user(launch.user.as_ref())
            )
        },
    )
}

/// The subdirectory below every search directory that glibc 2.33 and later searches first, one
/// level per CPU level it supports (`x86-64-v3`, ...): every one there is judged, whichever this
/// CPU would use.
const HWCAPS_DIR: &str = "glibc-hwcaps";

/// The legacy subdirectories glibc 2.26 to 2.36 searches below every search directory, nested up
/// to four deep (`tls/haswell/avx512_1/x86_64` on an AVX-512 CPU under RHEL 8, as `LD_DEBUG=libs`
/// lists them): `tls`, and the platform and hardware-capability names of x86-64, i386 and AArch64.
const LEGACY_SUBDIRS: [&str; 11] = [
    "tls", "x86_64", "haswell", "xeon_phi", "avx512_1", "i386", "i486", "i586", "i686", "sse2",
    "aarch64",
];

/// How deep the legacy subdirectories nest.
const LEGACY_DEPTH: usize = 4;

/// Why `uid` may not search `dir`, if it may not: the directory, every shared object in it, and
/// every subdirectory the loader searches below it, with theirs. A missing directory holds
/// nothing, but only while nobody else can create it: one that another user could create is
/// distrusted as [`Distrust::Creatable`].
pub fn search_distrust(dir: &Path, uid: u32) -> Option<Distrust> {
    match searchable(dir, uid, Below::Entry) {
        Ok(()) => None,
        Err(Distrust::Missing { path }) => creatable(&path, uid),
        Err(distrust) => Some(distrust),
    }
}

/// Where a directory being judged sits below a search-path entry.
#[derive(Clone, Copy)]
enum Below {
    /// The entry itself.
    Entry,
    /// Inside `glibc-hwcaps`: each subdirectory is a level the loader may search.
    Hwcaps,
    /// A hardware-capability level, which the loader searches for files only.
    Level,
    /// A legacy subdirectory this many levels deep.
    Legacy(usize),
}

impl Below {
    /// What a subdirectory named `name` of a directory here is to the loader, if it searches it.
    fn child(self, name: &str) -> Option<Below> {
        let legacy = LEGACY_SUBDIRS.contains(&name);
        match self {
            Below::Entry if name == HWCAPS_DIR => Some(Below::Hwcaps),
            Below::Entry if legacy => Some(Below::Legacy(1)),
            Below::Hwcaps => Some(Below::Level),
            Below::Legacy(depth) if legacy && depth < LEGACY_DEPTH => {
                Some(Below::Legacy(depth + 1))
            }
            _ => None,
        }
    }
}

/// Whether `uid` may search `dir` (at `below`): the directory, every shared object in it, and
/// every subdirectory the loader searches, recursively. A file or subdirectory that vanishes
/// while we look holds nothing.
fn searchable(dir: &Path, uid: u32, below: Below) -> Result<(), Distrust> {
    rule::check(dir, true, uid)?;
    let Ok(entries) = crate::hostfs::read_dir(dir) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let path = entry.path();
        let judged = if name.contains(".so") {
            rule::check(&path, false, uid)
        } else {
            match below.child(&name) {
                Some(child) if path.is_dir() => searchable(&path, uid, child),
                _ => Ok(()),
            }
        };
        match judged {
            Ok(()) | Err(Distrust::Missing { .. }) => {}
            Err(distrust) => return Err(distrust),
        }
    }
    Ok(())
}

/// Why a missing `path` is distrusted for `uid`: someone else could create it, as its parent
/// (which exists: the walk stopped at `path`) is not one that only `uid` or root can write.
fn creatable(path: &Path, uid: u32) -> Option<Distrust> {
    let parent = path.parent()?;
    let distrust = rule::check(parent, true, uid).err()?;
    Some(Distrust::Creatable {
        path: path.to_path_buf(),
        parent: parent.to_path_buf(),
        reason: distrust.describe(),
    })
}

/// The entries of an `LD_LIBRARY_PATH` that `uid` may search (empty and relative ones stand for
/// places below the current directory and are checked there), and the rest with why. A missing
/// entry is left out too: it holds nothing now, and nothing that appears there later is searched.
fn trusted_entries(search_path: &str, uid: u32) -> (String, Vec<LeftOut>) {
    let mut kept = Vec::new();
    let mut left_out = Vec::new();
    if search_path.is_empty() {
        return (String::new(), left_out);
    }
    for entry in search_path.split(':') {
        let place = if entry.is_empty() { "." } else { entry };
        match searchable(Path::new(place), uid, Below::Entry) {
            Ok(()) => kept.push(entry),
            Err(distrust) => left_out.push(LeftOut {
                entry: entry.to_owned(),
                distrust,
            }),
        }
    }
    (kept.join(":"), left_out)
}

/// Whether the test calling it runs as root; if not, says on stderr that `test` is skipped and
/// why (it gives files to other users, which only root can), so a suite run as an ordinary user
/// passes and says what it left out; CI runs as root and runs them.
#[cfg(test)]
pub(crate) fn running_as_root(test: &str) -> bool {
    let root = Identity::current().is_root();
    if !root {
        eprintln!("skipped: {test}: needs root (it gives files to other users); CI runs as root");
    }
    root
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::{chown, PermissionsExt};

    fn chmod(path: &Path, mode: u32) {
        fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
    }

    fn me() -> u32 {
        Identity::current().uid
    }

    /// A private directory (0755) to search, with `libx.so.1` in it.
    fn search_dir() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        chmod(dir.path(), 0o755);
        fs::write(dir.path().join("libx.so.1"), b"").unwrap();
        chmod(&dir.path().join("libx.so.1"), 0o644);
        dir
    }

    #[test]
    fn a_missing_entry_is_left_out_and_said_missing() {
        let dir = search_dir();
        let later = dir.path().join("later");
        let value = format!("{}:{}", later.display(), dir.path().display());
        let (kept, left_out) = trusted_entries(&value, me());
        assert_eq!(kept, dir.path().display().to_string());
        assert_eq!(
            left_out,
            [LeftOut {
                entry: later.display().to_string(),
                distrust: Distrust::Missing { path: later },
            }]
        );
    }

    #[test]
    fn every_subdirectory_the_loader_searches_is_judged_and_no_other() {
        let dir = search_dir();
        let level = dir.path().join("glibc-hwcaps/x86-64-v2");
        fs::create_dir_all(&level).unwrap();
        chmod(&dir.path().join("glibc-hwcaps"), 0o755);
        chmod(&level, 0o755);
        assert_eq!(search_distrust(dir.path(), me()), None);
        // Any level, whichever this CPU would use.
        chmod(&level, 0o777);
        assert_eq!(
            search_distrust(dir.path(), me()),
            Some(Distrust::Writable {
                path: level.clone(),
                by: Writers::Everyone
            })
        );
        chmod(&level, 0o755);
        // A library in a legacy subdirectory three deep.
        let legacy = dir.path().join("tls/x86_64/x86_64");
        fs::create_dir_all(&legacy).unwrap();
        for step in ["tls", "tls/x86_64", "tls/x86_64/x86_64"] {
            chmod(&dir.path().join(step), 0o755);
        }
        fs::write(legacy.join("libcupti.so.12"), b"").unwrap();
        chmod(&legacy.join("libcupti.so.12"), 0o664);
        assert!(matches!(
            search_distrust(dir.path(), me()),
            Some(Distrust::Writable { path, by: Writers::Group(_) }) if path == legacy.join("libcupti.so.12")
        ));
        chmod(&legacy.join("libcupti.so.12"), 0o644);
        // Four deep, as RHEL 8's glibc searches on an AVX-512 CPU.
        let deepest = dir.path().join("tls/haswell/avx512_1/x86_64");
        fs::create_dir_all(&deepest).unwrap();
        for step in [
            "tls/haswell",
            "tls/haswell/avx512_1",
            "tls/haswell/avx512_1/x86_64",
        ] {
            chmod(&dir.path().join(step), 0o755);
        }
        fs::write(deepest.join("libcudart.so.12"), b"").unwrap();
        chmod(&deepest.join("libcudart.so.12"), 0o666);
        assert!(matches!(
            search_distrust(dir.path(), me()),
            Some(Distrust::Writable { path, by: Writers::Everyone }) if path == deepest.join("libcudart.so.12")
        ));
        chmod(&deepest.join("libcudart.so.12"), 0o644);
        // A subdirectory the loader never searches is none of its business.
        let other = dir.path().join("python3.11");
        fs::create_dir(&other).unwrap();
        chmod(&other, 0o777);
        assert_eq!(search_distrust(dir.path(), me()), None);
    }

    #[test]
    fn a_missing_directory_someone_else_could_create_is_distrusted() {
        let dir = search_dir();
        assert_eq!(search_distrust(&dir.path().join("later"), me()), None);
        // /tmp-like: anyone may create an entry in it.
        let open = dir.path().join("open");
        fs::create_dir(&open).unwrap();
        chmod(&open, 0o1777);
        let later = open.join("later");
        match search_distrust(&later, me()) {
            Some(Distrust::Creatable {
                path,
                parent,
                reason,
            }) => {
                assert_eq!((path, parent), (later, open.clone()));
                assert_eq!(
                    reason,
                    format!("{} can be written by every user", open.display())
                );
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_runpath_directory_that_may_not_be_searched_refuses_the_load() {
        let dir = search_dir();
        let file = dir.path().join("libx.so.1");
        let runpath = dir.path().join("rpath");
        fs::create_dir(&runpath).unwrap();
        chmod(&runpath, 0o775);
        let policy = Policy::strict();
        assert!(matches!(
            policy.decide(std::slice::from_ref(&file), std::slice::from_ref(&runpath), ""),
            Decision::Refuse(Refusal::Untrusted(Distrust::Writable { path, .. })) if path == runpath
        ));
        chmod(&runpath, 0o755);
        assert!(matches!(
            policy.decide(&[file], &[runpath], ""),
            Decision::Load(_)
        ));
    }

    #[test]
    fn files_of_two_other_users_are_loaded_by_neither() {
        if !running_as_root("files of two other users") {
            return;
        }
        let dir = search_dir();
        let (a, b) = (dir.path().join("liba.so.1"), dir.path().join("libb.so.1"));
        for (file, uid) in [(&a, 4242), (&b, 4243)] {
            fs::write(file, b"").unwrap();
            chmod(file, 0o644);
            chown(file, Some(uid), Some(uid)).unwrap();
        }
        let policy = Policy::strict();
        assert_eq!(
            policy.decide(&[a.clone(), b.clone()], &[], ""),
            Decision::Refuse(Refusal::Mixed {
                owners: vec!["uid 4242".into(), "uid 4243".into()],
                path: b.clone(),
            })
        );
        // Each alone is loaded as its owner, with our environment reset to the allow-list.
        match policy.decide(std::slice::from_ref(&a), &[], "") {
            Decision::Load(launch) => {
                assert_eq!(launch.user.map(|u| u.uid), Some(4242));
                assert!(launch.environment.contains(&"PATH".to_owned()));
                assert!(launch
                    .environment
                    .iter()
                    .all(|n| n == "PATH" || environment::is_kept(n.as_ref())));
            }
            other => panic!("{other:?}"),
        }
    }
}
