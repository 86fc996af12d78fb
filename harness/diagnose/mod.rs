//! Findings: each rule looks at the scan (and, unless `--no-load`, the live probes) and says
//! what is wrong, why, and what to do. One module per family of causes.

mod arch;
mod build;
mod container;
mod cudnn;
mod deps;
pub mod driver;
mod environment;
mod fabric;
pub mod finding;
mod foreign;
mod forward;
mod frameworks;
mod hygiene;
mod load;
mod module;
mod nccl;
pub mod network;
pub mod program;
pub mod rdma;
mod record;
mod shadow;
mod trust;
mod upgrade;
mod wheel;
pub mod windows;

use crate::compat::{ComputeCapability, CudaVersion};
use crate::discover::container::ContainerFacts;
use crate::discover::nvidia::DriverFacts;
use crate::elf;
use crate::model::{Installation, Library, ScanReport};
use crate::probe::LoadReport;
use crate::resolve::{Requester, SearchContext};
use finding::{Cause, Finding, Severity};
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The live results for one installation's libraries.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct InstallationProbe {
    #[serde(with = "crate::pathname")]
    pub root: PathBuf,
    pub loads: Vec<LoadReport>,
    /// The user its libraries were loaded as, when not stackbench's own: their owner, when
    /// stackbench runs as root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loaded_as: Option<crate::trust::Identity>,
    /// Why nothing of it was loaded (the trust rule); its static findings stand.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_loaded: Option<crate::trust::Refusal>,
    /// Search-path entries its worker was not given, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<crate::trust::LeftOut>,
    /// When loaded as another user: the names of the variables of ours its worker's environment
    /// kept (the allow-list's; never their values).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub environment: Vec<String>,
    /// Its libraries not given to the worker, each with the reason.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<Skipped>,
}

/// A library doctor chose not to load.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Skipped {
    #[serde(with = "crate::pathname")]
    pub path: PathBuf,
    pub reason: Skip,
}

/// Why a library was not loaded.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Skip {
    /// A toolkit's `stubs/` copy, for the linker only (CUDA 13's crash in their constructors).
    Stub,
    /// Built for another machine ([`crate::machine::runs_here`]).
    ForeignArchitecture { machine: String },
    /// This machine's other word size (`ELF32` beside `ELF64`): for the other programs.
    OtherClass { class: String },
    /// Not an ELF file this loader reads: a DLL, or a file the scan could not read.
    NotElf,
}

impl Skip {
    /// Why `library` is not loaded here, if it is not.
    pub fn of(library: &Library) -> Option<Skip> {
        if let Some(machine) = library.foreign_machine() {
            return Some(Skip::ForeignArchitecture {
                machine: machine.to_owned(),
            });
        }
        match library.elf_class.as_deref() {
            None => Some(Skip::NotElf),
            Some(class) if !library.loads_here() => Some(Skip::OtherClass {
                class: format!("{class} {}", library.machine.as_deref().unwrap_or("?")),
            }),
            Some(_) if driver::is_under(&library.path, "stubs") => Some(Skip::Stub),
            Some(_) => None,
        }
    }

    /// For what doctor leaves out by design, the note's reason and what to do (nothing);
    /// `None` where another finding names the file with its cause: another machine's library
    /// (`foreign_architecture`), a file that is no shared object (a scan problem, a Windows
    /// tree's DLL).
    pub fn note(&self) -> Option<(String, String)> {
        let bits = |class: &str| if class.starts_with("ELF32") { 32 } else { 64 };
        match self {
            Skip::Stub => Some((
                "toolkit stubs, for the linker only: loading one says nothing of the host".into(),
                "nothing to do: a program links against a stub and loads the real library when it runs".into(),
            )),
            Skip::OtherClass { class } => Some((
                format!(
                    "{class}, for {}-bit programs; doctor's workers are {}-bit",
                    bits(class),
                    bits(crate::machine::OWN_CLASS)
                ),
                "nothing to do unless a program of that word size needs it: run that program with LD_DEBUG=libs to see what it loads".into(),
            )),
            Skip::ForeignArchitecture { .. } | Skip::NotElf => None,
        }
    }
}

/// No Windows search given.
static NO_WINDOWS_SEARCH: windows::WindowsSearch = windows::WindowsSearch {
    path: Vec::new(),
    dll_dirs: Vec::new(),
    cuda_path: None,
};

/// Everything the rules look at.
pub struct Context<'a> {
    pub scan: &'a ScanReport,
    /// The host's loader search (LD_LIBRARY_PATH as given, ld.so.cache, default directories).
    pub search: &'a SearchContext,
    /// `LD_LIBRARY_PATH` exactly as given, for hygiene checks.
    pub ld_library_path: Option<&'a str>,
    /// Live loads; empty with `--no-load`.
    pub probes: &'a [InstallationProbe],
    /// The GPU to check architectures against: the device's, or `--target`.
    pub gpu: Option<ComputeCapability>,
    /// Symbol versions of files outside the scan (a system libc), read once.
    elf_cache: RefCell<HashMap<PathBuf, Option<Vec<String>>>>,
    /// Every library of the scan by each name it goes by (soname, file names along its links),
    /// built on first use: rules ask for copies of a name once per library they judge.
    by_name: std::cell::OnceCell<HashMap<String, Vec<(&'a Installation, &'a Library)>>>,
    /// Installations of Windows DLLs, kept out of `scan`: the rules for them are in [`windows`].
    pub windows: &'a [Installation],
    /// How programs search for DLLs there.
    pub windows_search: &'a windows::WindowsSearch,
    /// Check each wheel file's SHA-256 against its RECORD, not only its size.
    pub verify_hashes: bool,
    /// The driver's own files (kernel module, driver libraries, NVSwitch, Fabric Manager):
    /// the rules of a driver upgrade look at them; `None`: not read.
    pub driver_files: Option<&'a DriverFacts>,
    /// Containers and the NVIDIA Container Toolkit, as the host's files and environment show.
    pub container: Option<&'a ContainerFacts>,
    /// The host is a file system read below `--sysroot` (an image, a node's copy), not this
    /// machine: what is mounted at run time (the driver, in a container) is not there.
    pub sysroot: bool,
    /// The user stackbench runs as, whose programs' search path the hygiene rule judges by the
    /// trust rule; `None` below a sysroot, where nothing runs.
    pub user: Option<&'a crate::trust::Identity>,
    /// What a build of CUDA code would find (toolkits, host compiler); `None`: not read.
    pub build: Option<&'a crate::toolchain::BuildFacts>,
    /// PyTorch, JAX and CuPy installs and the CUDA each was built for.
    pub frameworks: &'a [crate::discover::frameworks::Framework],
    /// The host, for its environment variables and files; `None`: not given.
    pub host: Option<&'a crate::discover::Host>,
    /// How many GPUs the host has, when known.
    pub gpu_count: Option<usize>,
}

impl<'a> Context<'a> {
    pub fn new(
        scan: &'a ScanReport,
        search: &'a SearchContext,
        ld_library_path: Option<&'a str>,
        probes: &'a [InstallationProbe],
        gpu: Option<ComputeCapability>,
    ) -> Context<'a> {
        Context {
            scan,
            search,
            ld_library_path,
            probes,
            gpu,
            elf_cache: RefCell::default(),
            by_name: std::cell::OnceCell::new(),
            windows: &[],
            windows_search: &NO_WINDOWS_SEARCH,
            verify_hashes: false,
            driver_files: None,
            container: None,
            sysroot: false,
            user: None,
            build: None,
            frameworks: &[],
            host: None,
            gpu_count: None,
        }
    }

    /// The same context with the host's environment, its build facts and its frameworks.
    pub fn with_build(
        mut self,
        host: &'a crate::discover::Host,
        build: &'a crate::toolchain::BuildFacts,
        frameworks: &'a [crate::discover::frameworks::Framework],
    ) -> Context<'a> {
        self.host = Some(host);
        self.build = Some(build);
        self.frameworks = frameworks;
        self
    }

    /// The same context with the driver's and the containers' files read from the host.
    pub fn with_host_files(
        mut self,
        driver: &'a DriverFacts,
        container: &'a ContainerFacts,
        sysroot: bool,
    ) -> Context<'a> {
        self.driver_files = Some(driver);
        self.container = Some(container);
        self.sysroot = sysroot;
        self
    }

    /// The same context with Windows installations and their programs' DLL search.
    pub fn with_windows(
        mut self,
        installations: &'a [Installation],
        search: &'a windows::WindowsSearch,
    ) -> Context<'a> {
        self.windows = installations;
        self.windows_search = search;
        self
    }

    /// The search an installation's programs get: see [`search_path`].
    pub fn search_for(&self, installation: &Installation) -> SearchContext {
        let mut search = self.search.clone();
        search.ld_library_path =
            crate::search_path::split_search_path(&search_path(installation, self.ld_library_path));
        search
    }

    /// The symbol versions a file defines (VERDEF): from the scan when it read the file, else
    /// read now (a system libc) and remembered.
    pub fn version_defs_of(&self, path: &Path) -> Option<Vec<String>> {
        let real = self.search.real(path).unwrap_or_else(|| path.to_path_buf());
        let scanned = self
            .scan
            .installations
            .iter()
            .flat_map(|i| &i.libraries)
            .find(|l| l.real_path == real);
        if let Some(library) = scanned {
            return Some(library.version_defs.clone());
        }
        if let Some(cached) = self.elf_cache.borrow().get(&real) {
            return cached.clone();
        }
        let defs = elf::read_path(&real).ok().map(|info| info.version_defs);
        self.elf_cache.borrow_mut().insert(real, defs.clone());
        defs
    }

    /// Every library file on the host the scan saw whose name or soname is `name`.
    pub fn copies_of(&self, name: &str) -> Vec<(&'a Installation, &'a Library)> {
        let by_name = self.by_name.get_or_init(|| {
            let mut by_name: HashMap<String, Vec<(&'a Installation, &'a Library)>> = HashMap::new();
            for installation in &self.scan.installations {
                for library in &installation.libraries {
                    let mut names: Vec<String> = std::iter::once(&library.path)
                        .chain(&library.aliases)
                        .chain(&library.symlink_chain)
                        .map(|p| file_name(p))
                        .chain(library.soname.clone())
                        .collect();
                    names.sort();
                    names.dedup();
                    for name in names {
                        by_name
                            .entry(name)
                            .or_default()
                            .push((installation, library));
                    }
                }
            }
            by_name
        });
        by_name.get(name).cloned().unwrap_or_default()
    }

    /// The installation a path lies in.
    pub fn installation_of(&self, path: &Path) -> Option<&'a Installation> {
        self.scan
            .installations
            .iter()
            .filter(|i| path.starts_with(&i.root))
            .max_by_key(|i| i.root.as_os_str().len())
    }
}

/// Runs every rule, folds findings that share a cause and a fix, and orders them: errors
/// first, then warnings, then info, each root cause first (see [`order`]).
pub fn diagnose(ctx: &Context) -> Vec<Finding> {
    finish(every_rule(ctx))
}

/// One program's libraries and the findings about them (see [`program`]), finished as
/// [`diagnose`] finishes the host's.
pub fn diagnose_program(
    ctx: &Context,
    program: &Library,
) -> (program::ProgramReport, Vec<Finding>) {
    let (report, findings) = program::check(ctx, program, &every_rule(ctx));
    (report, finish(findings))
}

/// The findings about what a program run got (see [`crate::command`]): those about the files
/// it mapped and about the host; one for each CUDA library it asked for and got no file of;
/// one when its CUDA libraries came from several installations. Fills in each library's
/// installation.
pub fn diagnose_command(ctx: &Context, run: &mut crate::command::CommandReport) -> Vec<Finding> {
    for library in &mut run.libraries {
        library.installation = library
            .found
            .as_deref()
            .and_then(|f| ctx.installation_of(&program::real(f)))
            .map(|i| i.root.clone());
    }
    let reached: Vec<&Path> = run
        .libraries
        .iter()
        .filter_map(|l| l.found.as_deref())
        .collect();
    let mut findings = program::about(&every_rule(ctx), &reached);
    findings.extend(build::explain_failure(ctx, run));
    for library in run.libraries.iter().filter(|l| l.found.is_none()) {
        let file = file_name(Path::new(&library.name));
        let candidates: Vec<PathBuf> = ctx
            .copies_of(&file)
            .iter()
            .map(|(_, l)| l.path.clone())
            .collect();
        let fix = if candidates.is_empty() {
            format!("install {file} where the program's loader searches, or add its directory to LD_LIBRARY_PATH")
        } else {
            export_search_path(&candidates[..1], &format!("a copy of {file}"))
        };
        findings.push(
            Finding::new(
                Severity::Error,
                Cause::MissingDependency,
                format!(
                    "the program asked for {} and the loader found no file of it",
                    library.name
                ),
                fix,
            )
            .missing(library.name.clone(), run.command.join(" "))
            .candidates(candidates)
            .evidence(
                library
                    .tried
                    .iter()
                    .map(|t| format!("{}: tried", t.display()))
                    .collect(),
            ),
        );
    }
    let mut origins: Vec<(String, &Path)> = Vec::new();
    for library in &run.libraries {
        let (Some(found), Some(root)) = (&library.found, &library.installation) else {
            continue;
        };
        let driver = ctx
            .installation_of(root)
            .is_some_and(|i| i.layout == crate::model::Layout::Driver);
        if !driver && !origins.iter().any(|(_, r)| *r == root.as_path()) {
            origins.push((file_name(found), root));
        }
    }
    if origins.len() > 1 {
        let said: Vec<String> = origins
            .iter()
            .map(|(file, root)| format!("{file} came from {}", root.display()))
            .collect();
        findings.push(Finding::new(
            Severity::Warning,
            Cause::MixedInstallations,
            format!("the program's CUDA libraries come from {} installations: {}", origins.len(), said.join(", ")),
            "run it with the libraries of one installation first on its search path (LD_LIBRARY_PATH), or install the missing parts into that one".into(),
        ));
    }
    finish(findings)
}

/// What every rule finds, as each rule says it.
fn every_rule(ctx: &Context) -> Vec<Finding> {
    let mut findings = Vec::new();
    let windows_problems = ctx.windows.iter().flat_map(Installation::all_problems);
    findings.extend(scan_problems(
        ctx.scan.all_problems().chain(windows_problems),
    ));
    // A scan of Windows trees alone says nothing about this host's own CUDA.
    if !ctx.scan.installations.is_empty() || ctx.windows.is_empty() {
        findings.extend(module::check(ctx));
        findings.extend(hygiene::check(ctx));
        findings.extend(driver::check(ctx));
        findings.extend(foreign::check(ctx));
        findings.extend(deps::check(ctx));
        findings.extend(load::check(ctx));
        findings.extend(trust::check(ctx));
        findings.extend(record::check(ctx));
        findings.extend(cudnn::check(ctx));
        findings.extend(nccl::check(ctx));
        findings.extend(network::check(ctx));
        findings.extend(rdma::check(ctx));
        findings.extend(shadow::check(ctx));
        findings.extend(arch::check(ctx));
    }
    findings.extend(upgrade::check(ctx));
    findings.extend(fabric::check(ctx));
    findings.extend(forward::check(ctx));
    findings.extend(container::check(ctx));
    container::explain_missing_driver(ctx, &mut findings);
    driver::explain_expected_absence(ctx, &mut findings);
    findings.extend(windows::check(ctx.windows, ctx.windows_search));
    findings.extend(build::check(ctx));
    findings.extend(environment::check(ctx));
    findings.extend(frameworks::check(ctx));
    frameworks::name_in_damaged(ctx, &mut findings);
    findings
}

/// Merged, gathered under damaged wheels, folded and ordered.
fn finish(mut findings: Vec<Finding>) -> Vec<Finding> {
    findings.sort_by(|a, b| identity(a).cmp(&identity(b)));
    order(fold(under_damaged_wheels(merge(findings))))
}

/// What makes a finding itself: severity, cause, installation, library, missing dependency.
fn identity(f: &Finding) -> impl Ord + '_ {
    (f.severity, f.cause, &f.installation, &f.library, &f.missing)
}

/// One finding per (cause, installation, library, missing): the same cause seen by several
/// rules (the loader's simulation and the live load) becomes one finding with all the evidence.
/// What the scan could not read is one finding per file: two venvs' unreadable `METADATA` are
/// two files for their owners to mend.
fn merge(findings: Vec<Finding>) -> Vec<Finding> {
    // Found by key, not by a scan of those merged: a host of thousands of environments has
    // tens of thousands of findings.
    type Key = (
        Cause,
        Option<PathBuf>,
        Option<String>,
        Option<String>,
        Option<PathBuf>,
    );
    let key = |f: &Finding| -> Key {
        let path = (f.cause == Cause::ScanProblem)
            .then(|| f.path.clone())
            .flatten();
        (
            f.cause,
            f.installation.clone(),
            f.library.clone(),
            f.missing.clone(),
            path,
        )
    };
    let mut merged: Vec<Finding> = Vec::new();
    let mut at: HashMap<Key, usize> = HashMap::new();
    for finding in findings {
        match at.get(&key(&finding)).map(|i| &mut merged[*i]) {
            Some(kept) => {
                for line in finding.evidence {
                    if !kept.evidence.contains(&line) {
                        kept.evidence.push(line);
                    }
                }
                for candidate in finding.candidates {
                    if !kept.candidates.contains(&candidate) {
                        kept.candidates.push(candidate);
                    }
                }
            }
            None => {
                at.insert(key(&finding), merged.len());
                merged.push(finding);
            }
        }
    }
    merged
}

/// A finding whose fix is to reinstall a damaged wheel (a library the wheel's RECORD lists,
/// missing) is folded into that wheel's `damaged_installation` finding: the damage is its root
/// cause, and one reinstall fixes both.
fn under_damaged_wheels(findings: Vec<Finding>) -> Vec<Finding> {
    let damaged = |f: &Finding| f.cause == Cause::DamagedInstallation;
    let roots: Vec<(Option<PathBuf>, String)> = findings
        .iter()
        .filter(|f| damaged(f))
        .map(|f| (f.installation.clone(), f.fix.clone()))
        .collect();
    let (under, mut kept): (Vec<Finding>, Vec<Finding>) = findings
        .into_iter()
        .partition(|f| !damaged(f) && roots.contains(&(f.installation.clone(), f.fix.clone())));
    for finding in under {
        if let Some(root) = kept.iter_mut().find(|d| {
            damaged(d) && (&d.installation, &d.fix) == (&finding.installation, &finding.fix)
        }) {
            root.fold(finding);
        }
    }
    kept
}

/// One finding per (severity, cause, installation, library, fix): cuDNN's dispatcher missing
/// its five sub-libraries, or one library missing both halves of cuBLAS, is one thing to fix.
/// The first (in identity order) stands for the rest, which it lists in `also`.
fn fold(findings: Vec<Finding>) -> Vec<Finding> {
    let mut folded: Vec<Finding> = Vec::new();
    let mut at: HashMap<FoldKey, usize> = HashMap::new();
    for finding in findings {
        match at.get(&fold_key(&finding)) {
            Some(i) => folded[*i].fold(finding),
            None => {
                at.insert(fold_key(&finding), folded.len());
                folded.push(finding);
            }
        }
    }
    folded
}

/// What findings folded into one share.
type FoldKey = (Severity, Cause, Option<PathBuf>, Option<String>, String);

fn fold_key(f: &Finding) -> FoldKey {
    (
        f.severity,
        f.cause,
        f.installation.clone(),
        f.library.clone(),
        f.fix.clone(),
    )
}

/// Root cause first: by severity; within one, the driver's causes, then damaged wheels, then
/// the findings whose missing dependency breaks the most libraries; ties keep identity order.
fn order(mut findings: Vec<Finding>) -> Vec<Finding> {
    // Which libraries miss each dependency, over every finding and what is folded into it.
    let mut missed_by: HashMap<&str, Vec<&str>> = HashMap::new();
    for f in &findings {
        let parts = std::iter::once((f.missing.as_deref(), f.library.as_deref())).chain(
            f.also
                .iter()
                .map(|a| (a.missing.as_deref(), a.library.as_deref())),
        );
        for (missing, library) in parts {
            if let (Some(missing), Some(library)) = (missing, library) {
                let libraries = missed_by.entry(missing).or_default();
                if !libraries.contains(&library) {
                    libraries.push(library);
                }
            }
        }
    }
    let reach = |f: &Finding| {
        std::iter::once(f.missing.as_deref())
            .chain(f.also.iter().map(|a| a.missing.as_deref()))
            .flatten()
            .map(|m| missed_by.get(m).map_or(0, Vec::len))
            .max()
            .unwrap_or(0)
    };
    let keys: Vec<_> = findings
        .iter()
        .map(|f| {
            (
                f.severity,
                f.cause.root_rank(),
                // A damaged wheel explains the missing libraries folded into it: next.
                f.cause != Cause::DamagedInstallation,
                std::cmp::Reverse(reach(f)),
            )
        })
        .collect();
    let mut ordered: Vec<(usize, Finding)> = findings.drain(..).enumerate().collect();
    ordered.sort_by_key(|(at, _)| keys[*at]);
    ordered.into_iter().map(|(_, f)| f).collect()
}

/// What the scan could not read becomes a finding too.
pub fn scan_problems<'p>(
    problems: impl Iterator<Item = &'p crate::model::Problem>,
) -> Vec<Finding> {
    problems
        // Another machine's libraries are the foreign-architecture rule's, with cause and fix.
        .filter(|p| p.kind != crate::model::ProblemKind::ForeignArchitecture)
        .map(|p| {
            Finding::new(
                Severity::Warning,
                Cause::ScanProblem,
                format!("{}: {}", p.kind.code(), p.message),
                "see the message; the rest of the report does not depend on this file".into(),
            )
            .library(file_name(&p.path), p.path.clone())
        })
        .collect()
}

/// The `LD_LIBRARY_PATH` a program of this installation runs with: the environment's, as
/// given, then the installation's own library directories. So what the environment puts first
/// (another toolkit, a stray driver copy) shadows the installation, as it would for real.
pub fn search_path(installation: &Installation, environment: Option<&str>) -> String {
    let dirs = library_dirs(installation)
        .into_iter()
        .map(|d| d.display().to_string());
    environment
        .filter(|e| !e.is_empty())
        .map(String::from)
        .into_iter()
        .chain(dirs)
        .collect::<Vec<_>>()
        .join(":")
}

/// The directories an installation's libraries are in, in report order; toolkit `stubs` and
/// `compat` directories are left out, as no program should find those by default.
fn library_dirs(installation: &Installation) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    for library in &installation.libraries {
        let Some(dir) = library.path.parent() else {
            continue;
        };
        let special = dir
            .file_name()
            .is_some_and(|n| n == "stubs" || n == "compat");
        if !special && !dirs.iter().any(|d| d == dir) {
            dirs.push(dir.to_path_buf());
        }
    }
    dirs
}

/// The CUDA version an installation provides or was built for, parsed.
pub fn cuda_of(installation: &Installation) -> Option<CudaVersion> {
    installation
        .cuda_version
        .as_deref()
        .and_then(CudaVersion::parse)
}

/// How the loader would see a library as the loading object.
pub fn requester(library: &Library) -> Requester {
    Requester {
        path: library.real_path.clone(),
        rpath: library.rpath.clone(),
        runpath: library.runpath.clone(),
    }
}

/// The RPATH and RUNPATH directories of `libraries`, expanded as the loader expands them: places
/// a worker loading them searches, which the trust rule must judge.
pub fn own_dirs(libraries: &[&Library], search: &SearchContext) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = libraries
        .iter()
        .flat_map(|l| requester(l).own_dirs(search))
        .collect();
    dirs.sort();
    dirs.dedup();
    dirs
}

/// The name a library is known by: its soname, else its file name.
pub fn display_name(library: &Library) -> String {
    library
        .soname
        .clone()
        .unwrap_or_else(|| file_name(&library.path))
}

pub fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The fix that puts the directories of `copies` first on `LD_LIBRARY_PATH`, saying that
/// `what` is there.
pub fn export_search_path(copies: &[PathBuf], what: &str) -> String {
    format!(
        "export LD_LIBRARY_PATH={}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}   ({what} is there)",
        dirs_of(copies)
    )
}

/// The directories that hold the given paths, without duplicates, as `a:b` for LD_LIBRARY_PATH.
pub fn dirs_of(paths: &[PathBuf]) -> String {
    let mut dirs: Vec<String> = Vec::new();
    for dir in paths.iter().filter_map(|p| p.parent()) {
        let dir = dir.display().to_string();
        if !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    dirs.join(":")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(cause: Cause, severity: Severity, root: &str, fix: &str, missing: &str) -> Finding {
        let f = Finding::new(severity, cause, format!("{cause:?} {missing}"), fix.into())
            .installation(root);
        match missing {
            "" => f,
            name => f.missing(name, "libcudnn.so.8"),
        }
    }

    #[test]
    fn what_a_damaged_wheels_reinstall_fixes_is_folded_into_it() {
        let reinstall = "pip install --force-reinstall --no-deps nvidia-cudnn-cu12==8.9.2.26";
        let findings = finish(vec![
            finding(
                Cause::MissingRuntimeDependency,
                Severity::Error,
                "/venv",
                reinstall,
                "libcudnn_adv_infer.so.8",
            ),
            finding(
                Cause::MissingRuntimeDependency,
                Severity::Warning,
                "/venv",
                reinstall,
                "libcudnn_cnn_infer.so.8",
            ),
            finding(
                Cause::DamagedInstallation,
                Severity::Error,
                "/venv",
                reinstall,
                "",
            ),
            // Another environment's, and another fix: each stays a finding of its own.
            finding(
                Cause::MissingRuntimeDependency,
                Severity::Error,
                "/other",
                reinstall,
                "libcudnn_adv_infer.so.8",
            ),
            finding(
                Cause::MissingRuntimeDependency,
                Severity::Error,
                "/venv",
                "pip install nvidia-cublas-cu12",
                "libcublas.so.12",
            ),
        ]);
        let heads: Vec<(Cause, Option<&str>)> = findings
            .iter()
            .map(|f| (f.cause, f.missing.as_deref()))
            .collect();
        // The damaged wheel first: it is the root of what it folds in.
        assert_eq!(
            heads,
            [
                (Cause::DamagedInstallation, None),
                (
                    Cause::MissingRuntimeDependency,
                    Some("libcudnn_adv_infer.so.8")
                ),
                (Cause::MissingRuntimeDependency, Some("libcublas.so.12")),
            ]
        );
        let damaged = &findings[0];
        let folded: Vec<_> = damaged.also.iter().map(|a| a.missing.as_deref()).collect();
        assert_eq!(
            folded,
            [
                Some("libcudnn_adv_infer.so.8"),
                Some("libcudnn_cnn_infer.so.8")
            ]
        );
    }
}
