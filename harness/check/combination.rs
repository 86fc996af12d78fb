//! Which combinations `check` runs: one per installation with a CUDA runtime (the host's driver
//! plus that installation's libraries, resolved as a program of it would resolve them, the
//! model `doctor` uses), plus the ones `stackbench.toml` names.

use super::config::UserCombination;
use super::protocol::{Component, ComponentFile};
use crate::diagnose;
use crate::discover;
use crate::model::{Installation, Layout, Library, ScanReport};
use crate::resolve::{self, Requester, SearchContext};
use crate::schema::check::Origin;
use crate::trust::{Decision, Policy};
use std::path::{Path, PathBuf};

/// One driver plus one set of CUDA libraries, as one program would get them.
#[derive(Debug, Clone, PartialEq)]
pub struct Combination {
    pub name: String,
    pub origin: Origin,
    pub root: Option<PathBuf>,
    pub layout: Option<Layout>,
    /// The installation's CUDA version, as the scan read it.
    pub cuda_version: Option<String>,
    /// The combination's own library directories: a CUDA library mapped from elsewhere is
    /// flagged.
    pub dirs: Vec<PathBuf>,
    /// The `LD_LIBRARY_PATH` a program of the combination runs with.
    pub search_path: String,
    /// `--driver-dir` or the combination's own `driver_dir`, put on the worker's search path.
    pub driver_dir: Option<PathBuf>,
    /// The `libcuda.so.1` such a program loads, if any.
    pub driver: Option<PathBuf>,
    /// The driver's `libnvidia-ml.so.1`, if any.
    pub nvml: Option<PathBuf>,
    /// The library of each component the combination has.
    pub components: Vec<ComponentFile>,
    /// The RPATH and RUNPATH directories of its libraries (a toolkit's stubs left out): its
    /// workers' loader searches them, so the trust rule judges them.
    pub runpath_dirs: Vec<PathBuf>,
    /// Who may load its files, and with which search path (the trust rule); `None`: not yet
    /// decided, and its workers run as ourselves with its whole search path.
    pub decision: Option<Decision>,
}

/// The combinations of a scan's installations, then those of the configuration, with unique
/// names. `driver_dir` is `--driver-dir`, for every combination that does not name its own;
/// `environment` is `LD_LIBRARY_PATH` as given; `search` the host's loader search.
pub fn combinations(
    scan: &ScanReport,
    user: &[UserCombination],
    driver_dir: Option<&Path>,
    environment: Option<&str>,
    search: &SearchContext,
) -> Vec<Combination> {
    let mut out: Vec<Combination> = Vec::new();
    for installation in scan.installations.iter().filter(|i| has_runtime(i)) {
        let search_path = diagnose::search_path(installation, environment);
        let libraries: Vec<&Library> = installation.libraries.iter().collect();
        let name = unique(installation_name(installation), &out);
        out.push(
            Combination {
                name,
                origin: Origin::Installation,
                root: Some(installation.root.clone()),
                layout: Some(installation.layout),
                cuda_version: installation.cuda_version.clone(),
                dirs: library_dirs(&libraries),
                search_path,
                driver_dir: driver_dir.map(Path::to_path_buf),
                driver: None,
                nvml: None,
                components: Vec::new(),
                runpath_dirs: Vec::new(),
                decision: None,
            }
            .with_files(&libraries, search),
        );
    }
    for wanted in user {
        let scanned = crate::scan::scan(
            &discover::Options {
                roots: wanted.library_dirs.clone(),
                system: false,
            },
            &discover::Host::default(),
        );
        let dirs: Vec<PathBuf> = wanted.library_dirs.iter().map(|d| canonical(d)).collect();
        let libraries: Vec<&Library> = scanned
            .installations
            .iter()
            .flat_map(|i| &i.libraries)
            .filter(|l| {
                l.path
                    .parent()
                    .is_some_and(|p| dirs.contains(&canonical(p)))
            })
            .collect();
        let search_path = join(&wanted.library_dirs);
        let driver_dir = wanted
            .driver_dir
            .clone()
            .or_else(|| driver_dir.map(Path::to_path_buf));
        out.push(
            Combination {
                name: unique(wanted.name.clone(), &out),
                origin: Origin::Config,
                root: None,
                layout: None,
                cuda_version: None,
                dirs: wanted.library_dirs.clone(),
                search_path,
                driver_dir,
                driver: None,
                nvml: None,
                components: Vec::new(),
                runpath_dirs: Vec::new(),
                decision: None,
            }
            .with_files(&libraries, search),
        );
    }
    out
}

#[cfg(test)]
impl Combination {
    /// A user combination named `name` with nothing in it, for tests to fill in.
    pub(crate) fn empty(name: &str) -> Combination {
        Combination {
            name: name.to_owned(),
            origin: Origin::Config,
            root: None,
            layout: None,
            cuda_version: None,
            dirs: Vec::new(),
            search_path: String::new(),
            driver_dir: None,
            driver: None,
            nvml: None,
            components: Vec::new(),
            runpath_dirs: Vec::new(),
            decision: None,
        }
    }
}

impl Combination {
    /// Decides, by `trust`, who its workers run as and which of its search path (the
    /// driver's directory first) they get.
    pub fn decide(&mut self, trust: &Policy) {
        let files: Vec<PathBuf> = self
            .components
            .iter()
            .map(|c| c.path.clone())
            .chain(self.driver.clone())
            .chain(self.nvml.clone())
            .collect();
        let search_path = self
            .driver_dir
            .iter()
            .map(|d| d.display().to_string())
            .chain((!self.search_path.is_empty()).then(|| self.search_path.clone()))
            .collect::<Vec<_>>()
            .join(":");
        self.decision = Some(trust.decide(&files, &self.runpath_dirs, &search_path));
    }

    /// The combination with its driver, NVML and each component's file, as the loader finds
    /// them on its search path among `libraries` (the driver's from `driver_dir` when it has
    /// one).
    fn with_files(self, libraries: &[&Library], search: &SearchContext) -> Combination {
        let mut ctx = search.clone();
        ctx.ld_library_path = crate::search_path::split_search_path(&self.search_path);
        let program = Requester::default();
        let find = |name: &str| resolve::resolve(name, &program, &ctx).found;
        let components = Component::ALL
            .into_iter()
            .filter_map(|component| {
                let library = pick(libraries, component)?;
                let path = library
                    .soname
                    .as_deref()
                    .and_then(find)
                    .unwrap_or_else(|| library.path.clone());
                Some(ComponentFile {
                    component,
                    path,
                    version: library.version.clone(),
                })
            })
            .collect();
        let driver_file = |name: &str| match &self.driver_dir {
            Some(dir) => Some(dir.join(name)).filter(|p| p.exists()),
            None => find(name),
        };
        let (driver, nvml) = (
            driver_file("libcuda.so.1"),
            driver_file("libnvidia-ml.so.1"),
        );
        let loadable: Vec<&Library> = libraries
            .iter()
            .copied()
            .filter(|l| l.loads_here() && !diagnose::driver::is_under(&l.path, "stubs"))
            .collect();
        Combination {
            driver,
            nvml,
            components,
            runpath_dirs: diagnose::own_dirs(&loadable, search),
            ..self
        }
    }
}

/// The library a program would open for `component`: among the files of its stem, one whose
/// soname names itself (the real library, not a stub), the first in scan order.
fn pick<'a>(libraries: &[&'a Library], component: Component) -> Option<&'a Library> {
    let of_stem: Vec<&&Library> = libraries
        .iter()
        .filter(|l| l.name == component.stem() && l.loads_here())
        .filter(|l| !diagnose::driver::is_stub_or_compat(&l.path))
        .collect();
    of_stem
        .iter()
        .find(|l| l.soname.is_some())
        .or(of_stem.first())
        .map(|l| **l)
}

/// Whether an installation has a CUDA runtime this process can load.
fn has_runtime(installation: &Installation) -> bool {
    installation.layout != Layout::Driver
        && installation
            .libraries
            .iter()
            .any(|l| l.name == "cudart" && l.loads_here())
}

/// The directories the libraries are in, in order, and their real directories (a toolkit's
/// `lib64` is a link to `targets/<triple>/lib`).
fn library_dirs(libraries: &[&Library]) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    for library in libraries {
        for path in [&library.path, &library.real_path] {
            if let Some(dir) = path.parent() {
                if !dirs.iter().any(|d| d == dir) {
                    dirs.push(dir.to_path_buf());
                }
            }
        }
    }
    dirs
}

/// Names a project's environment is given that say nothing of it: the directory above names
/// it (`/opt/torch/.venv` is `torch`).
const PLAIN_ENV_NAMES: &[&str] = &[".venv", "venv", ".env", "env"];

/// A name for an installation's combination: `<layout>:<what people call it>` (`pip:venv-cu12`,
/// `toolkit:cuda-12.9`, `conda:cu13`, `pip:torch` for `/opt/torch/.venv`).
pub fn installation_name(installation: &Installation) -> String {
    let root = &installation.root;
    let short = match installation.layout {
        // .../<env>/lib/python3.11/site-packages: the environment's directory.
        Layout::Pip => root
            .ancestors()
            .find(|a| {
                a.file_name()
                    .is_some_and(|n| n == "lib" || n == "lib64" || n == "Lib")
            })
            .and_then(Path::parent)
            .and_then(|env| match env.file_name() {
                Some(n) if PLAIN_ENV_NAMES.iter().any(|p| n == *p) => {
                    env.parent().and_then(Path::file_name).or(Some(n))
                }
                n => n,
            })
            .or_else(|| root.file_name()),
        _ => root.file_name(),
    };
    let short = short
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| root.display().to_string());
    format!("{}:{}", installation.layout.name(), short)
}

/// `name`, or `name-2`, `name-3`, ... when an earlier combination has it.
fn unique(name: String, taken: &[Combination]) -> String {
    let free = |n: &str| !taken.iter().any(|c| c.name == n);
    if free(&name) {
        return name;
    }
    (2..)
        .map(|k| format!("{name}-{k}"))
        .find(|n| free(n))
        .unwrap_or(name)
}

fn join(dirs: &[PathBuf]) -> String {
    dirs.iter()
        .map(|d| d.display().to_string())
        .collect::<Vec<_>>()
        .join(":")
}

/// `path` with every link resolved, or as given when that fails.
pub(super) fn canonical(path: &Path) -> PathBuf {
    crate::hostfs::real_path(path).unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn installation(root: &str, layout: Layout) -> Installation {
        Installation {
            root: root.into(),
            layout,
            cuda_version: None,
            driver_version: None,
            sources: Vec::new(),
            libraries: Vec::new(),
            problems: Vec::new(),
            platforms: Vec::new(),
        }
    }

    #[rstest]
    #[case(
        "/opt/venvs/torch/lib/python3.11/site-packages",
        Layout::Pip,
        "pip:torch"
    )]
    #[case("/usr/lib/python3/dist-packages", Layout::Pip, "pip:usr")]
    #[case(
        "/opt/torch/.venv/lib/python3.12/site-packages",
        Layout::Pip,
        "pip:torch"
    )]
    #[case("/venv/lib/python3.12/site-packages", Layout::Pip, "pip:venv")]
    #[case("/usr/local/cuda-12.9", Layout::Toolkit, "toolkit:cuda-12.9")]
    #[case("/opt/conda/envs/cu13", Layout::Conda, "conda:cu13")]
    #[case("/usr/lib/x86_64-linux-gnu", Layout::System, "system:x86_64-linux-gnu")]
    fn names(#[case] root: &str, #[case] layout: Layout, #[case] name: &str) {
        assert_eq!(installation_name(&installation(root, layout)), name);
    }

    #[test]
    fn names_are_made_unique() {
        let taken = Combination::empty;
        let existing = [taken("pip:venv"), taken("pip:venv-2")];
        assert_eq!(unique("pip:venv".into(), &existing), "pip:venv-3");
        assert_eq!(unique("conda:x".into(), &existing), "conda:x");
    }
}
