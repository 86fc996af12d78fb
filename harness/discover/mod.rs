//! Where CUDA installations are: the places a host keeps them, walked safely, giving every
//! library file found and how it was found.

pub mod container;
pub mod envwalk;
pub mod frameworks;
pub mod inside;
pub mod layout;
pub mod ldcache;
pub mod ldconf;
pub mod metadata;
pub mod nvidia;
pub mod python;
pub mod walk;

use crate::catalog;
use crate::model::{Problem, ProblemKind, SearchRoot, Source};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use walk::{Limits, Walk};

/// Loader directories are read as the loader reads them: their own entries only.
const FLAT: Limits = Limits {
    max_depth: 0,
    max_entries: 200_000,
    report_depth_cut: false,
};
/// Toolkits and environments: deep enough for `site-packages/nvidia/cu13/lib`.
const INSTALL: Limits = Limits {
    max_depth: 8,
    max_entries: 500_000,
    report_depth_cut: false,
};
/// Places people keep environments in: deep enough for `/home/<user>/<group>/<project>/.venv`
/// with room to spare, not so wide that a home full of data costs the scan its second.
const ENVIRONMENTS: Limits = Limits {
    max_depth: 8,
    max_entries: 200_000,
    report_depth_cut: false,
};
/// `/opt` holds anything; look a few levels down only.
const OPT: Limits = Limits {
    max_depth: 5,
    max_entries: 200_000,
    report_depth_cut: false,
};
/// A `--root` is read whole.
const ROOT: Limits = Limits {
    max_depth: 32,
    max_entries: 2_000_000,
    report_depth_cut: true,
};

/// What to search.
#[derive(Debug, Clone)]
pub struct Options {
    /// Directories given with `--root`.
    pub roots: Vec<PathBuf>,
    /// Also search the host's own places (everything but `--root`).
    pub system: bool,
}

/// The host facts discovery reads, gathered in one place so tests can give their own.
#[derive(Debug, Clone)]
pub struct Host {
    /// The directory that stands for `/`: every absolute place the host's search names, fixed
    /// (`/opt`, `/etc/ld.so.cache`) or taken from the environment (`VIRTUAL_ENV`), is read
    /// under it. `/` for the host itself.
    pub sysroot: PathBuf,
    pub env: HashMap<String, String>,
    pub home: Option<PathBuf>,
    pub ld_so_cache: PathBuf,
    pub ld_so_conf: PathBuf,
    /// Python `site-packages` directories the interpreter on PATH reports; `None`: ask it
    /// (only done when the host's own places are searched).
    pub python_sites: Option<Vec<PathBuf>>,
    /// Running inside WSL, with Windows' drives under `/mnt`.
    pub wsl: bool,
    /// The `LD_LIBRARY_PATH` entries `cargo run` added, left out of `env`: the report describes
    /// the user's environment, not cargo's.
    pub cargo_search_path: Vec<String>,
}

/// The variables that name a toolkit's root, as builds and installers set them.
pub const CUDA_ROOT_VARS: [&str; 3] = ["CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"];

/// Windows' CUDA places as WSL sees them: the toolkits, and System32 for the driver's
/// `nvcuda.dll` (its own files only, not its subdirectories).
const WSL_TOOLKITS: &str = "/mnt/c/Program Files/NVIDIA GPU Computing Toolkit/CUDA";
const WSL_SYSTEM32: &str = "/mnt/c/Windows/System32";

impl Default for Host {
    /// No environment, no home, and the loader's files where glibc keeps them, under `/`.
    fn default() -> Host {
        Host {
            sysroot: PathBuf::from("/"),
            env: HashMap::new(),
            home: None,
            ld_so_cache: PathBuf::from("/etc/ld.so.cache"),
            ld_so_conf: PathBuf::from("/etc/ld.so.conf"),
            python_sites: None,
            wsl: false,
            cargo_search_path: Vec::new(),
        }
    }
}

impl Host {
    /// `path` as this host's root holds it: under the sysroot when that is not `/`; a relative
    /// path as given.
    pub fn place(&self, path: impl AsRef<Path>) -> PathBuf {
        under(&self.sysroot, path.as_ref())
    }

    /// Whether the sysroot is this machine's own `/`.
    pub fn is_own_root(&self) -> bool {
        self.sysroot == Path::new("/")
    }

    /// The real file or directory `path` names on this host (an absolute place as the host
    /// names it, or one already below the sysroot): below a sysroot every link is followed
    /// inside it ([`inside`]), on the machine's own root the path is made canonical. `None`
    /// when it does not exist.
    pub fn real(&self, path: impl AsRef<Path>) -> Option<PathBuf> {
        if self.is_own_root() {
            crate::hostfs::real_path(path.as_ref()).ok()
        } else {
            inside::resolve(&self.sysroot, path.as_ref())
        }
    }

    /// The bytes of the file `path` names on this host, read through [`Host::real`].
    pub fn read(&self, path: impl AsRef<Path>) -> Option<Vec<u8>> {
        crate::hostfs::read(&self.real(path)?, crate::hostfs::TEXT).ok()
    }

    /// Whether `path` names a directory on this host (below a sysroot, where its links lead
    /// inside it).
    pub fn is_dir(&self, path: impl AsRef<Path>) -> bool {
        self.real(path).is_some_and(|real| real.is_dir())
    }

    /// Whether `path` names a file on this host, as [`Host::is_dir`].
    pub fn is_file(&self, path: impl AsRef<Path>) -> bool {
        self.real(path).is_some_and(|real| real.is_file())
    }

    /// The entries of the directory `dir` names on this host, sorted, each below its real
    /// place ([`Host::real`]); none when it cannot be read.
    pub fn entries(&self, dir: impl AsRef<Path>) -> Vec<PathBuf> {
        self.real(dir)
            .map(|real| sorted_entries(&real))
            .unwrap_or_default()
    }

    /// The subdirectories of `dir` whose names `keep` takes, sorted; below a sysroot `dir` is
    /// read where its links lead inside it, and so is each subdirectory.
    pub fn children_matching(&self, dir: &Path, keep: impl Fn(&str) -> bool) -> Vec<PathBuf> {
        let listed = match self.is_own_root() {
            true => sorted_entries(dir),
            false => self.entries(dir),
        };
        listed
            .into_iter()
            .filter(|p| p.file_name().is_some_and(|n| keep(&n.to_string_lossy())))
            .filter(|p| self.is_dir(p))
            .collect()
    }

    /// This host as it is.
    pub fn current() -> Host {
        Host::below(PathBuf::from("/"))
    }

    /// The host whose root file system is `sysroot` (`/`: this one), with this process's
    /// environment standing for the one its programs get, and the kernel release the root
    /// holds (`/proc/sys/kernel/osrelease`; below a sysroot only a support bundle has one).
    pub fn below(sysroot: PathBuf) -> Host {
        // Lossy: a variable that is not UTF-8 must not stop the scan.
        let mut env: HashMap<String, String> = std::env::vars_os()
            .map(|(k, v)| {
                (
                    k.to_string_lossy().into_owned(),
                    v.to_string_lossy().into_owned(),
                )
            })
            .collect();
        let exe = std::env::current_exe().ok();
        let cargo_search_path = strip_cargo_search_path(&mut env, exe.as_deref());
        let host = Host {
            sysroot,
            ..Host::default()
        };
        let osrelease = host
            .read("/proc/sys/kernel/osrelease")
            .map(|bytes| String::from_utf8_lossy(&bytes).to_ascii_lowercase())
            .unwrap_or_default();
        Host {
            cargo_search_path,
            home: env.get("HOME").map(PathBuf::from),
            wsl: env.contains_key("WSL_DISTRO_NAME") || osrelease.contains("microsoft"),
            env,
            ..host
        }
    }
}

/// The entries of `dir`, sorted; none when it cannot be read.
fn sorted_entries(dir: &Path) -> Vec<PathBuf> {
    crate::hostfs::entries(dir)
}

/// `path` below `root` when it is absolute (`/opt` under `/tmp/t` is `/tmp/t/opt`), else as
/// given.
pub fn under(root: &Path, path: &Path) -> PathBuf {
    match path.strip_prefix("/") {
        Ok(inside) if root != Path::new("/") => root.join(inside),
        _ => path.to_path_buf(),
    }
}

/// Removes from `env`'s `LD_LIBRARY_PATH` the entries `cargo run` puts in front of the user's
/// (the running executable's directory and its `deps`, the toolchain's `lib` and
/// `lib/rustlib/<target>/lib`), and returns them; nothing when cargo did not start this process
/// (`CARGO` and `CARGO_MANIFEST_DIR` unset).
pub fn strip_cargo_search_path(
    env: &mut HashMap<String, String>,
    executable: Option<&Path>,
) -> Vec<String> {
    let Some(cargo) = env
        .get("CARGO")
        .filter(|_| env.contains_key("CARGO_MANIFEST_DIR"))
    else {
        return Vec::new();
    };
    let toolchain = Path::new(cargo)
        .parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf);
    let exe_dir = executable.and_then(Path::parent).map(Path::to_path_buf);
    let added = |entry: &str| {
        let entry = Path::new(entry);
        let from_target = exe_dir
            .as_ref()
            .is_some_and(|d| entry == d || entry == d.join("deps"));
        let from_toolchain = toolchain.as_ref().is_some_and(|t| {
            entry == t.join("lib")
                || (entry.starts_with(t.join("lib/rustlib")) && entry.ends_with("lib"))
        });
        from_target || from_toolchain
    };
    let Some(value) = env.get("LD_LIBRARY_PATH") else {
        return Vec::new();
    };
    let (dropped, kept): (Vec<&str>, Vec<&str>) = value.split(':').partition(|e| added(e));
    let dropped: Vec<String> = dropped.into_iter().map(str::to_owned).collect();
    if !dropped.is_empty() {
        let kept = kept.join(":");
        if kept.is_empty() {
            env.remove("LD_LIBRARY_PATH");
        } else {
            env.insert("LD_LIBRARY_PATH".into(), kept);
        }
    }
    dropped
}

/// A library path found, and every way it was found.
#[derive(Debug, Clone)]
pub struct Found {
    pub path: PathBuf,
    pub sources: Vec<Source>,
}

/// The result of discovery: what was searched, what was found, what went wrong.
#[derive(Debug, Default)]
pub struct Discovery {
    pub searched: Vec<SearchRoot>,
    pub found: Vec<Found>,
    pub problems: Vec<Problem>,
}

/// Finds every CUDA library file the options ask for on `host`.
pub fn discover(options: &Options, host: &Host) -> Discovery {
    let (starts, plan_problems) = search_plan(options, host);
    let mut walk = Walk::default();
    if !host.is_own_root() {
        walk.root = Some(host.sysroot.clone());
    }
    let mut found: Vec<Found> = Vec::new();
    let mut index: HashMap<PathBuf, usize> = HashMap::new();
    let mut searched = Vec::new();
    for (root, limits) in starts {
        let before = walk.libraries.len();
        walk.visit(&root.path, limits);
        for path in walk.libraries[before..].iter().map(|p| identity(p, host)) {
            let at = *index.entry(path.clone()).or_insert_with(|| {
                found.push(Found {
                    path,
                    sources: Vec::new(),
                });
                found.len() - 1
            });
            if !found[at].sources.contains(&root.source) {
                found[at].sources.push(root.source);
            }
        }
        if !searched.contains(&root) {
            searched.push(root);
        }
    }
    let mut problems = plan_problems;
    problems.extend(walk.problems);
    Discovery {
        searched,
        found,
        problems,
    }
}

/// A found path with its directory made canonical (inside the sysroot), so `cuda/lib64/x` and
/// `cuda-12.9/targets/x86_64-linux/lib/x` are one file; the file name itself stays as found.
fn identity(path: &Path, host: &Host) -> PathBuf {
    match (path.parent().and_then(|d| host.real(d)), path.file_name()) {
        (Some(dir), Some(name)) => dir.join(name),
        _ => path.to_path_buf(),
    }
}

/// Every directory to read, with why and how deep, in the order the loader would prefer them;
/// and what could not be read while planning (a damaged ld.so.cache).
pub fn search_plan(options: &Options, host: &Host) -> (Vec<(SearchRoot, Limits)>, Vec<Problem>) {
    let mut plan = Vec::new();
    let mut problems = Vec::new();
    for root in &options.roots {
        let path = root.clone();
        plan.push((
            SearchRoot {
                path,
                source: Source::Root,
            },
            ROOT,
        ));
    }
    // Below a sysroot each place is taken where its links lead inside it, so an absolute link
    // (`/usr/local/cuda -> /etc/alternatives/cuda`) is never followed on this machine.
    let mut add = |path: PathBuf, source: Source, limits: Limits| {
        let path = match host.is_own_root() {
            true => Some(path),
            false => inside::place(&host.sysroot, &path),
        };
        if let Some(path) = path {
            plan.push((SearchRoot { path, source }, limits));
        }
    };
    if !options.system {
        return (plan, problems);
    }
    if let Some(value) = host.env.get("LD_LIBRARY_PATH") {
        for entry in crate::search_path::split_search_path(value)
            .into_iter()
            .filter(|e| !e.is_empty())
        {
            add(host.place(entry), Source::LdLibraryPath, FLAT);
        }
    }
    let ld_so_cache = host.place(&host.ld_so_cache);
    if let Ok(bytes) = crate::hostfs::read(&ld_so_cache, crate::hostfs::LISTING) {
        match ldcache::parse(&bytes) {
            Ok(entries) => {
                let mut dirs: Vec<PathBuf> = entries
                    .iter()
                    .filter(|e| catalog::classify(&e.soname).is_some())
                    .filter_map(|e| e.path.parent().map(|dir| host.place(dir)))
                    .collect();
                dirs.dedup();
                for dir in dirs {
                    add(dir, Source::LdSoCache, FLAT);
                }
            }
            Err(e) => problems.push(Problem {
                kind: ProblemKind::MalformedMetadata,
                path: ld_so_cache,
                message: e.to_string(),
            }),
        }
    }
    for dir in ldconf::directories(&host.place(&host.ld_so_conf), &host.sysroot) {
        add(dir, Source::LdSoConf, FLAT);
    }
    for dir in crate::search_path::X86_64_DEFAULT_DIRS {
        add(host.place(dir), Source::SystemDefault, FLAT);
    }
    for var in CUDA_ROOT_VARS {
        if let Some(dir) = host.env.get(var).filter(|v| !v.is_empty()) {
            add(host.place(dir), Source::CudaEnv, INSTALL);
        }
    }
    for dir in host.children_matching(&host.place("/usr/local"), |n| n.starts_with("cuda")) {
        add(dir, Source::UsrLocal, INSTALL);
    }
    let mut environments = python::environments(host);
    let walked = envwalk::environments(host, ENVIRONMENTS);
    problems.extend(walked.problems);
    for dir in walked.environments {
        if !environments.contains(&dir) {
            environments.push(dir);
        }
    }
    for dir in environments {
        let source = if host.is_dir(dir.join("conda-meta")) {
            Source::Conda
        } else {
            Source::Python
        };
        add(dir, source, INSTALL);
    }
    add(host.place("/opt"), Source::Opt, OPT);
    if host.wsl {
        add(host.place(WSL_TOOLKITS), Source::Windows, INSTALL);
        add(host.place(WSL_SYSTEM32), Source::Windows, FLAT);
    }
    (plan, problems)
}

/// A problem for a path given by the user that cannot be searched: missing, not a directory,
/// or not readable.
pub fn check_root(root: &Path) -> Result<(), Problem> {
    let unreadable = |message: String| Problem {
        kind: ProblemKind::Unreadable,
        path: root.to_path_buf(),
        message,
    };
    match std::fs::metadata(root) {
        Ok(meta) if meta.is_dir() => crate::hostfs::read_dir(root)
            .map(|_| ())
            .map_err(|e| unreadable(e.to_string())),
        Ok(_) => Err(unreadable(
            "not a directory; --root takes a directory to search".into(),
        )),
        Err(e) => Err(unreadable(e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(wsl: bool) -> Vec<(PathBuf, Source, usize)> {
        let host = Host {
            ld_so_cache: PathBuf::from("/nonexistent/ld.so.cache"),
            ld_so_conf: PathBuf::from("/nonexistent/ld.so.conf"),
            python_sites: Some(Vec::new()),
            wsl,
            ..Host::default()
        };
        let options = Options {
            roots: Vec::new(),
            system: true,
        };
        search_plan(&options, &host)
            .0
            .into_iter()
            .map(|(root, limits)| (root.path, root.source, limits.max_depth))
            .collect()
    }

    #[test]
    fn what_cargo_run_adds_to_the_search_path_is_left_out() {
        let toolchain = "/root/.rustup/toolchains/stable-x86_64-unknown-linux-gnu";
        let mut env: HashMap<String, String> = [
            ("CARGO", format!("{toolchain}/bin/cargo")),
            ("CARGO_MANIFEST_DIR", "/work/main".to_owned()),
            (
                "LD_LIBRARY_PATH",
                format!(
                    "/work/main/target/release:/work/main/target/release/deps:\
                     {toolchain}/lib/rustlib/x86_64-unknown-linux-gnu/lib:{toolchain}/lib:/opt/user/lib"
                ),
            ),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        let exe = Path::new("/work/main/target/release/stackbench");
        let dropped = strip_cargo_search_path(&mut env, Some(exe));
        assert_eq!(dropped.len(), 4, "{dropped:?}");
        assert_eq!(env["LD_LIBRARY_PATH"], "/opt/user/lib");
        // Without cargo, nothing is touched.
        env.remove("CARGO");
        env.insert("LD_LIBRARY_PATH".into(), "/work/main/target/release".into());
        assert!(strip_cargo_search_path(&mut env, Some(exe)).is_empty());
        assert_eq!(env["LD_LIBRARY_PATH"], "/work/main/target/release");
    }

    #[test]
    fn under_a_sysroot_every_place_is_inside_it_and_venvs_are_found_by_their_markers() {
        let root = tempfile::tempdir().unwrap();
        let venv = root.path().join("opt/torch/.venv");
        std::fs::create_dir_all(&venv).unwrap();
        std::fs::write(venv.join("pyvenv.cfg"), "home = /usr/bin\n").unwrap();
        let env = [
            ("LD_LIBRARY_PATH", "/usr/lib/extra"),
            ("CUDA_HOME", "/usr/local/cuda"),
            ("VIRTUAL_ENV", "/opt/torch/.venv"),
        ];
        let host = Host {
            sysroot: root.path().to_path_buf(),
            env: env.map(|(k, v)| (k.to_owned(), v.to_owned())).into(),
            home: Some(PathBuf::from("/home/me")),
            wsl: true,
            ..Host::default()
        };
        let options = Options {
            roots: Vec::new(),
            system: true,
        };
        let (plan, problems) = search_plan(&options, &host);
        assert!(problems.is_empty(), "{problems:?}");
        let outside: Vec<_> = plan
            .iter()
            .filter(|(r, _)| !r.path.starts_with(root.path()))
            .collect();
        assert!(outside.is_empty(), "{outside:?}");
        let venvs: Vec<_> = plan
            .iter()
            .filter(|(r, _)| r.path == venv)
            .map(|(r, limits)| (r.source, limits.max_depth))
            .collect();
        assert_eq!(venvs, [(Source::Python, INSTALL.max_depth)]);
    }

    #[test]
    fn inside_wsl_windows_toolkits_and_system32_are_searched() {
        let windows: Vec<_> = plan(true)
            .into_iter()
            .filter(|(_, source, _)| *source == Source::Windows)
            .collect();
        assert_eq!(
            windows,
            [
                (
                    PathBuf::from(WSL_TOOLKITS),
                    Source::Windows,
                    INSTALL.max_depth
                ),
                (PathBuf::from(WSL_SYSTEM32), Source::Windows, 0),
            ]
        );
        assert!(plan(false).iter().all(|(_, s, _)| *s != Source::Windows));
    }
}
