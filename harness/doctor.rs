//! `stackbench doctor`: the scan, live loading of every library in a worker process, and the
//! findings that explain what will fail and how to fix it.

use crate::compat::ComputeCapability;
use crate::diagnose::driver::is_under;
use crate::diagnose::finding::{Finding, Severity};
use crate::diagnose::{self, Context, InstallationProbe, Skip, Skipped};
use crate::discover::frameworks::Framework;
use crate::discover::nvidia::DriverFacts;
use crate::discover::{self, Host};
use crate::gpu::{self, GpuInfo};
use crate::model::{HostInfo, Installation, Library, Problem, ScanReport, SearchRoot};
use crate::probe::{self, ProbeRequest};
use crate::resolve::SearchContext;
use crate::tags::DOCTOR_SCHEMA;
use crate::toolchain::BuildFacts;
use crate::trust::{Decision, Policy};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What `doctor` found: findings first, then everything the scan saw.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DoctorReport {
    pub schema: String,
    /// When the run started, RFC 3339 in UTC; absent in files written before it was kept, which
    /// the history store cannot place in time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<String>,
    pub host: HostInfo,
    pub gpu: GpuInfo,
    /// Whether libraries were loaded (false with `--no-load`).
    pub loaded: bool,
    /// `--load-untrusted`: libraries were loaded whoever could write them, as ourselves.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub load_untrusted: bool,
    pub findings: Vec<Finding>,
    /// What each installation's libraries did when loaded.
    pub probes: Vec<InstallationProbe>,
    pub searched: Vec<SearchRoot>,
    pub installations: Vec<Installation>,
    pub problems: Vec<Problem>,
    /// With `--program`: what the program gets for each library it asks for. The findings are
    /// then those about the program and the files it gets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program: Option<crate::diagnose::program::ProgramReport>,
    /// With `doctor -- COMMAND`: the command's run as the loader saw it. The findings are then
    /// those about the files it got and the libraries it did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<crate::command::CommandReport>,
    /// The `LD_LIBRARY_PATH` entries `cargo run` added, left out of the modelled environment.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cargo_search_path: Vec<String>,
    /// With `--sysroot`: the directory read as the host's `/`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(with = "crate::pathname::option")]
    pub sysroot: Option<PathBuf>,
    /// With `--sysroot`: the driver's own files as read there (kernel module, driver libraries
    /// in the loader's order, GPUs, NVSwitches, Fabric Manager).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver_files: Option<DriverFacts>,
    /// Can this host build CUDA code: each toolkit a build might take, and the host compiler.
    #[serde(default)]
    pub build: BuildFacts,
    /// PyTorch, JAX and CuPy installs and the CUDA each was built for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub frameworks: Vec<Framework>,
}

impl DoctorReport {
    /// True when any finding is an error.
    pub fn has_errors(&self) -> bool {
        self.findings.iter().any(|f| f.severity == Severity::Error)
    }

    /// Counts of findings by severity: errors, warnings, info.
    pub fn severity_counts(&self) -> [usize; 3] {
        let count = |s: Severity| self.findings.iter().filter(|f| f.severity == s).count();
        [
            count(Severity::Error),
            count(Severity::Warning),
            count(Severity::Info),
        ]
    }
}

/// How `doctor` runs.
#[derive(Debug, Clone)]
pub struct DoctorOptions {
    pub discover: discover::Options,
    /// Load libraries in a worker process (false: static analysis only).
    pub load: bool,
    /// How long one library may take to load.
    pub timeout: Duration,
    /// The GPU to check GPU code against when there is no device.
    pub target: Option<ComputeCapability>,
    /// The stackbench executable that serves as worker (`__probe`, `__gpu`): normally this one.
    pub worker: PathBuf,
    /// How programs search for DLLs, for Windows trees.
    pub windows: crate::diagnose::windows::WindowsSearch,
    /// Check wheel files' SHA-256 against their RECORD, not only their size.
    pub verify_hashes: bool,
    /// Compile and link a probe with each toolkit (`--build`).
    pub build: bool,
    /// Explain this one program (an executable or a shared object) rather than the host.
    pub program: Option<PathBuf>,
    /// Run this command and explain the CUDA libraries it loads or fails to load.
    pub command: Vec<String>,
    /// How long the command may run.
    pub command_timeout: Duration,
    /// Keep the command's output rather than passing it through.
    pub quiet: bool,
    /// Who may load what (the trust rule, or `--load-untrusted`).
    pub trust: Policy,
}

/// Runs the doctor on `host`: this machine, or the root file system `--sysroot` gives (an
/// unpacked image, a node's file system), read by static analysis only, nothing run or loaded
/// from it, nothing read outside it.
pub fn doctor(options: &DoctorOptions, host: &Host) -> DoctorReport {
    let started = crate::timestamp::now();
    let sysroot = !host.is_own_root();
    // Nothing is run or loaded from another machine's files.
    let load = options.load && !sysroot;
    let scan = crate::scan::scan(&options.discover, host);
    // Windows trees are read, never loaded; the Linux rules and probes see the rest.
    let (windows, linux): (Vec<Installation>, Vec<Installation>) = scan
        .installations
        .iter()
        .cloned()
        .partition(diagnose::windows::is_windows);
    let linux_scan = ScanReport {
        schema: scan.schema.clone(),
        host: scan.host.clone(),
        searched: scan.searched.clone(),
        installations: linux,
        problems: scan.problems.clone(),
    };
    let ld_library_path = host.env.get("LD_LIBRARY_PATH").cloned();
    // The host's LD_LIBRARY_PATH as `Host` gives it (without what `cargo run` added).
    let search = match sysroot {
        true => search_below(host, ld_library_path.as_deref()),
        false => {
            let mut search = SearchContext::host();
            search.ld_library_path = ld_library_path
                .as_deref()
                .map(crate::search_path::split_search_path)
                .unwrap_or_default();
            search
        }
    };
    // Below a sysroot the rules see LD_LIBRARY_PATH's entries as placed inside it.
    let ld_library_path = match sysroot {
        true => ld_library_path.map(|_| search.ld_library_path.join(":")),
        false => ld_library_path,
    };
    let driver_files = discover::nvidia::read(host);
    let container = discover::container::read(host);
    let mut gpu = match options.target {
        Some(cc) => GpuInfo::target(cc),
        None if sysroot => GpuInfo::none(
            "--sysroot: nothing is run from the tree; give --target sm_XX to check GPU code",
        ),
        None if load => gpu::detect(&options.worker, &options.trust),
        None => GpuInfo::none("--no-load: NVML not asked; give --target sm_XX to check GPU code"),
    };
    if sysroot && gpu.driver_version.is_none() {
        gpu.driver_version = driver_files.module_version().map(str::to_owned);
    }
    // A command is the live load: the host's libraries are not loaded one by one besides.
    let probes = if load && options.command.is_empty() {
        probe_all(&linux_scan, ld_library_path.as_deref(), options, &search)
    } else {
        Vec::new()
    };
    let ctx = Context::new(
        &linux_scan,
        &search,
        ld_library_path.as_deref(),
        &probes,
        gpu.compute_capability(),
    )
    .with_windows(&windows, &options.windows)
    .with_host_files(&driver_files, &container, sysroot);
    let mut build = crate::toolchain::read(host, &linux_scan.installations);
    let builds = crate::toolchain::failure::is_a_build(&options.command);
    if (options.build || builds) && !sysroot {
        build.probe();
    }
    let frameworks = crate::discover::frameworks::read(host, &python_sites(&linux_scan));
    let mut ctx = ctx.with_build(host, &build, &frameworks);
    ctx.verify_hashes = options.verify_hashes;
    ctx.user = (!sysroot).then_some(&options.trust.me);
    ctx.gpu_count = (gpu.source == "nvml").then_some(gpu.devices.len());
    let mut command = (!options.command.is_empty()).then(|| {
        crate::command::run(
            &options.command,
            ld_library_path.as_deref(),
            options.command_timeout,
            options.quiet,
        )
    });
    let program = options.program.as_deref().map(crate::scan::read_elf_file);
    let (program, findings) = match (command.as_mut(), program) {
        (Some(run), _) => (None, diagnose::diagnose_command(&ctx, run)),
        (None, None) => (None, diagnose::diagnose(&ctx)),
        (None, Some(Ok(library))) => {
            let (report, findings) = diagnose::diagnose_program(&ctx, &library);
            (Some(report), findings)
        }
        (None, Some(Err(problem))) => {
            // The program asked about cannot be read: that is the answer, an error.
            let mut findings = diagnose::scan_problems(std::iter::once(&problem));
            for f in &mut findings {
                f.severity = Severity::Error;
            }
            findings.extend(diagnose::diagnose(&ctx));
            (None, findings)
        }
    };
    let ScanReport {
        host: host_info,
        searched,
        installations,
        problems,
        ..
    } = scan;
    DoctorReport {
        schema: DOCTOR_SCHEMA.to_string(),
        started: Some(started),
        host: host_info,
        gpu,
        loaded: load,
        load_untrusted: load && options.trust.load_untrusted,
        findings,
        probes,
        searched,
        installations,
        problems,
        program,
        command,
        cargo_search_path: host.cargo_search_path.clone(),
        sysroot: sysroot.then(|| host.sysroot.clone()),
        driver_files: sysroot.then_some(driver_files),
        build,
        frameworks,
    }
}

/// The site-packages directories to read frameworks from: each pip installation's, and those of
/// each Python environment the scan searched (a venv's `lib/python3.X/site-packages`).
fn python_sites(scan: &ScanReport) -> Vec<PathBuf> {
    let mut sites: Vec<PathBuf> = scan
        .installations
        .iter()
        .filter(|i| i.layout == crate::model::Layout::Pip)
        .map(|i| i.root.clone())
        .collect();
    for root in &scan.searched {
        let below: Vec<PathBuf> = crate::hostfs::read_dir(&root.path.join("lib"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("python3"))
            })
            .flat_map(|p| [p.join("site-packages"), p.join("dist-packages")])
            .chain([root.path.clone()])
            .filter(|p| {
                p.is_dir()
                    && p.file_name()
                        .is_some_and(|n| n == "site-packages" || n == "dist-packages")
            })
            .collect();
        for site in below {
            if !sites.contains(&site) {
                sites.push(site);
            }
        }
    }
    sites
}

/// The loader's search on the host below a sysroot: its `LD_LIBRARY_PATH`, its ld.so.cache and
/// its default directories, each place taken where its links lead inside the sysroot (a cached
/// library by its real file), and every candidate opened inside it, so the loader's simulation
/// reads nothing outside it.
fn search_below(host: &Host, ld_library_path: Option<&str>) -> SearchContext {
    let inside = |path: &Path| {
        host.real(path)
            .or_else(|| discover::inside::place(&host.sysroot, path))
            .unwrap_or_else(|| host.place(path))
    };
    let mut search = SearchContext::native(|dir| host.is_dir(dir));
    search.root = Some(host.sysroot.clone());
    search.ld_library_path = ld_library_path
        .map(crate::search_path::split_search_path)
        .unwrap_or_default()
        .into_iter()
        .map(|e| match e.starts_with('/') {
            true => inside(Path::new(&e)).display().to_string(),
            false => e,
        })
        .collect();
    search.cache = host
        .read(&host.ld_so_cache)
        .and_then(|bytes| discover::ldcache::parse(&bytes).ok())
        .unwrap_or_default()
        .into_iter()
        .map(|mut entry| {
            entry.path = inside(&entry.path);
            entry
        })
        .collect();
    search.default_dirs = search.default_dirs.iter().map(|d| inside(d)).collect();
    search
}

/// Loads every installation's libraries: one worker per installation, as many installations at
/// a time as there are cores, each as the user the trust rule names (or none, and the
/// installation is read statically only). A toolkit's stub and compat `libcuda` go in workers of
/// their own, so they cannot stand in for the real driver when the runtime asks for
/// `libcuda.so.1`.
fn probe_all(
    scan: &ScanReport,
    ld_library_path: Option<&str>,
    options: &DoctorOptions,
    search: &SearchContext,
) -> Vec<InstallationProbe> {
    let probe_one = |installation: &Installation| {
        // A toolkit's stubs/ are for the linker only, so loading one says nothing of the host
        // (CUDA 13's crash in their constructors); nor can another machine's library load.
        let mut loadable: Vec<&Library> = Vec::new();
        let mut skipped = Vec::new();
        for library in &installation.libraries {
            match Skip::of(library) {
                None => loadable.push(library),
                Some(reason) => skipped.push(Skipped {
                    path: library.path.clone(),
                    reason,
                }),
            }
        }
        let files: Vec<PathBuf> = loadable.iter().map(|l| l.real_path.clone()).collect();
        let dirs = diagnose::own_dirs(&loadable, search);
        let search_path = diagnose::search_path(installation, ld_library_path);
        let mut probe = InstallationProbe {
            root: installation.root.clone(),
            loads: Vec::new(),
            loaded_as: None,
            not_loaded: None,
            left_out: Vec::new(),
            environment: Vec::new(),
            skipped,
        };
        let launch = match options.trust.decide(&files, &dirs, &search_path) {
            Decision::Load(launch) => launch,
            Decision::Refuse(refusal) => {
                probe.not_loaded = Some(refusal);
                return probe;
            }
        };
        let (compat, ordinary): (Vec<&Library>, Vec<&Library>) = loadable
            .into_iter()
            .partition(|l| is_under(&l.path, "compat"));
        let request = |libraries: Vec<&Library>, isolate| ProbeRequest {
            libraries: libraries.iter().map(|l| l.real_path.clone()).collect(),
            ld_library_path: Some(launch.search_path.clone()),
            timeout: options.timeout,
            isolate,
            run_as: launch.user.clone(),
        };
        probe.loads = probe::run_with(&request(ordinary, false), &options.worker);
        if !compat.is_empty() {
            probe
                .loads
                .extend(probe::run_with(&request(compat, true), &options.worker));
        }
        probe.loaded_as = launch.user;
        probe.left_out = launch.left_out;
        probe.environment = launch.environment;
        probe
    };
    let parallel = std::thread::available_parallelism().map_or(2, |n| n.get());
    let mut probes = Vec::with_capacity(scan.installations.len());
    for chunk in scan.installations.chunks(parallel) {
        std::thread::scope(|scope| {
            let handles: Vec<_> = chunk
                .iter()
                .map(|i| scope.spawn(move || probe_one(i)))
                .collect();
            probes.extend(handles.into_iter().filter_map(|h| h.join().ok()));
        });
    }
    probes
}
