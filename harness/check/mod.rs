//! `stackbench check`: conformance tests for every CUDA combination on the host.
//!
//! A combination is the host's driver plus one installation's libraries, resolved as a program
//! of that installation would resolve them (the model `doctor` uses), or one a user names in
//! `stackbench.toml`. Each runs in a worker process of its own (`stackbench __check`) with its
//! search path pinned; the checks (see [`spec`]) load every library, initialise the driver and
//! each handle, compile and launch kernels through NVRTC, profile with CUPTI and verify results.

pub mod combination;
pub mod config;
pub mod mapped;
pub(crate) mod pin;
pub mod protocol;
pub mod quick;
pub(crate) mod runner;
pub mod spec;
pub mod worker;

use crate::cluster::WorldRequest;
use crate::compat::ComputeCapability;
use crate::devices::{DeviceChoice, DeviceKey};
use crate::discover::{self, Host};
use crate::gpu::GpuInfo;
use crate::model::HostInfo;
use crate::resolve::SearchContext;
use crate::schema::check::{CheckReport, CheckResult, CombinationReport, DriverUse};
use crate::tags::CHECK_SCHEMA;
use combination::Combination;
use protocol::CheckRequest;
use protocol::Component;
use spec::Side;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Which combinations to run, against which driver and device: what `check` and `bench`
/// share.
#[derive(Debug, Clone)]
pub struct Selection {
    pub discover: discover::Options,
    /// Take the driver's libraries from here instead of the system's.
    pub driver_dir: Option<PathBuf>,
    /// `--combination`: only these (all when empty).
    pub select: Vec<String>,
    /// Combinations from `stackbench.toml`.
    pub config: config::Config,
    /// The architecture to compile for when there is no device.
    pub target: Option<ComputeCapability>,
    /// The GPUs the GPU work runs on.
    pub devices: DeviceChoice,
    /// Who may load each combination's files.
    pub trust: crate::trust::Policy,
}

/// The host's selected combinations, with the scan's record of the host, the GPUs NVML sees
/// and the ordinals of those selected.
pub struct Selected {
    pub host: HostInfo,
    pub combinations: Vec<Combination>,
    pub gpu: GpuInfo,
    /// At least one: device 0 when NVML lists none.
    pub devices: Vec<u32>,
}

impl Selection {
    /// Every combination found where `discover` looks, with the host's driver, device 0 and
    /// no `--target`: the command line's defaults.
    pub fn of(discover: discover::Options) -> Selection {
        Selection {
            discover,
            driver_dir: None,
            select: Vec::new(),
            config: config::Config::default(),
            target: None,
            devices: DeviceChoice::All,
            trust: crate::trust::Policy::strict(),
        }
    }

    /// Scans the host, forms its combinations and picks the selected ones; asks NVML (through
    /// `worker`, in a helper process) for the GPUs.
    pub fn resolve(&self, host: &Host, worker: &Path) -> Result<Selected, CheckError> {
        let scan = crate::scan::scan(&self.discover, host);
        let all = combination::combinations(
            &scan,
            &self.config.combinations,
            self.driver_dir.as_deref(),
            host.env.get("LD_LIBRARY_PATH").map(String::as_str),
            &SearchContext::host(),
        );
        let mut combinations = select(all, &self.select, &scan)?;
        for combination in &mut combinations {
            combination.decide(&self.trust);
        }
        let gpu = crate::gpu::detect_with(worker, self.driver_dir.as_deref(), &self.trust);
        let devices = self.devices.resolve(&gpu)?;
        Ok(Selected {
            host: scan.host,
            combinations,
            gpu,
            devices,
        })
    }
}

/// How `check` runs.
#[derive(Debug, Clone)]
pub struct CheckOptions {
    pub selection: Selection,
    /// How long one check may take.
    pub timeout: Duration,
    /// The stackbench executable that serves as worker (`__check`, `__gpu`).
    pub worker: PathBuf,
}

/// Why `check` could not run at all (exit status 2).
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    #[error("no CUDA runtime found: no libcudart in any of the {places} place(s) searched, so there is no combination to run; activate the Python or conda environment that holds one (VIRTUAL_ENV, CONDA_PREFIX), give its directory with --root DIR, or name a combination in stackbench.toml")]
    NothingToCheck { places: usize },
    #[error("--combination {name}: no such combination; this host has: {available}")]
    NoSuchCombination { name: String, available: String },
    #[error(transparent)]
    NoSuchDevice(#[from] crate::devices::NoSuchDevice),
    #[error("check --nodes: no combination has NCCL (libnccl.so.2), so no collective can run across nodes; activate the environment that holds it (pip install nvidia-nccl-cu12) or name it with --root DIR")]
    NoNccl,
    #[error("check --nodes: this rank's local rank is {local}, but the node has {gpus} selected GPU(s); start one task per GPU (srun --ntasks-per-node=<GPUs>, torchrun --nproc-per-node=<GPUs>)")]
    NoGpuForRank { local: u32, gpus: usize },
}

/// How much of `check` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// Every check, the parent-side ones and the node's links and copies.
    Full,
    /// `--quick`: the node health check's few checks (see [`quick`]) in one combination.
    Quick,
    /// `--nodes`: this process is one rank of a job across nodes; NCCL's checks on its one
    /// GPU with every other rank's ([`crate::cluster`]), in the first combination with NCCL.
    Nodes,
}

/// The checks that mean something only across nodes: `--nodes` runs them, a node's check does
/// not.
pub const ACROSS_NODES_ONLY: &[&str] = &["nccl.node_pairs"];

/// The checks `--nodes` runs, in order: what NCCL's checks need, then NCCL's.
pub const NODE_CHECKS: &[&str] = &[
    "driver.library",
    "driver.init",
    "driver.devices",
    "cudart.load",
    "nccl.load",
    "nccl.versions",
    "nccl.init",
    "nccl.all_reduce",
    "nccl.all_gather",
    "nccl.reduce_scatter",
    "nccl.broadcast",
    "nccl.node_pairs",
    "nccl.transport",
];

impl Scope {
    /// The worker-side checks to run on the first device, in order.
    fn worker_checks(self) -> Vec<String> {
        let all = spec::SPECS.iter().filter(|s| s.side == Side::Worker);
        match self {
            Scope::Full => all
                .filter(|s| !ACROSS_NODES_ONLY.contains(&s.id))
                .map(|s| s.id.to_owned())
                .collect(),
            Scope::Quick => quick::CHECKS.iter().map(|id| (*id).to_owned()).collect(),
            Scope::Nodes => NODE_CHECKS.iter().map(|id| (*id).to_owned()).collect(),
        }
    }

    /// The checks to run on each other device, in order.
    fn per_device_checks(self) -> Vec<String> {
        (spec::PER_DEVICE.iter())
            .filter(|id| self == Scope::Full || quick::CHECKS.contains(id))
            .map(|id| (*id).to_owned())
            .collect()
    }
}

/// Runs every selected combination's checks, as many combinations at a time as there are
/// cores, each in its own workers, on every selected GPU at once.
pub fn check(options: &CheckOptions, host: &Host) -> Result<CheckReport, CheckError> {
    run_checks(options, host, Scope::Full)
}

/// `check --quick`: the node health check, in seconds. Only the checks of [`quick::CHECKS`],
/// on every selected GPU, in one combination ([`quick::pick`]); no library sweeps, no
/// parent-side checks, no measuring of the node's links. [`quick::judge`] gives the verdict.
pub fn check_quick(options: &CheckOptions, host: &Host) -> Result<CheckReport, CheckError> {
    run_checks(options, host, Scope::Quick)
}

/// `check --nodes`: this process's rank of a job across nodes ([`crate::cluster`]). Rank 0's
/// report is the job's: every rank's verdict on each NCCL check, the transports between every
/// pair of nodes, and the findings that name a node; another rank's holds its own part.
pub fn check_nodes(
    options: &CheckOptions,
    host: &Host,
    world: &WorldRequest,
) -> Result<CheckReport, CheckError> {
    let mut options = options.clone();
    // A rank's first NCCL check waits for the others to join, and for rank 0's start.
    options.timeout +=
        Duration::from_millis(world.join_ms) + crate::cluster::rendezvous::START_GRACE;
    let mut report = run_checks_with(&options, host, Scope::Nodes, Some(world))?;
    let findings = crate::cluster::findings::from_checks(&report.combinations);
    report.node = (!findings.is_empty()).then(|| crate::schema::node::NodeReport {
        findings,
        ..Default::default()
    });
    Ok(report)
}

fn run_checks(
    options: &CheckOptions,
    host: &Host,
    scope: Scope,
) -> Result<CheckReport, CheckError> {
    run_checks_with(options, host, scope, None)
}

fn run_checks_with(
    options: &CheckOptions,
    host: &Host,
    scope: Scope,
    world: Option<&WorldRequest>,
) -> Result<CheckReport, CheckError> {
    let started = crate::timestamp::now();
    let Selected {
        host: host_info,
        combinations: selected,
        gpu,
        devices,
    } = options.selection.resolve(host, &options.worker)?;
    let (selected, devices) = match (scope, world) {
        (Scope::Full, _) => (selected, devices),
        (Scope::Quick, _) => (quick::pick(selected), devices),
        (Scope::Nodes, world) => {
            let local = world.map_or(0, |w| w.world.local_rank);
            let device = gpu_of_rank(&devices, local)?;
            (pick_nccl(selected)?, vec![device])
        }
    };
    let parallel = std::thread::available_parallelism().map_or(2, |n| n.get());
    let mut combinations = Vec::with_capacity(selected.len());
    for chunk in selected.chunks(parallel) {
        std::thread::scope(|s| {
            let handles: Vec<_> = chunk
                .iter()
                .map(|c| s.spawn(|| run_combination(c, options, &devices, (scope, world))))
                .collect();
            combinations.extend(handles.into_iter().filter_map(|h| h.join().ok()));
        });
    }
    let module = crate::discover::nvidia::kernel_modules(host)
        .into_iter()
        .next()
        .map(|m| m.version);
    for driver in combinations.iter_mut().filter_map(|c| c.driver.as_mut()) {
        driver.kernel_module.clone_from(&module);
    }
    let simulated = combinations.iter().any(|c| c.simulated);
    let measure = scope == Scope::Full && gpu.listed_by_nvml();
    let node = measure.then(|| {
        let request = crate::node::NodeRequest::new(devices.clone(), simulated);
        let selection = &options.selection;
        crate::node::probe(
            &options.worker,
            selection.driver_dir.as_deref(),
            &selection.trust,
            &request,
            options.timeout,
        )
        .unwrap_or_else(|why| crate::schema::node::NodeReport {
            notes: vec![why],
            ..Default::default()
        })
    });
    let node = node.map(|mut node| {
        let fallbacks = crate::nccl::findings::from_checks(&combinations, &node);
        node.findings.extend(fallbacks);
        node
    });
    Ok(CheckReport {
        schema: CHECK_SCHEMA.to_owned(),
        started,
        host: host_info,
        gpu,
        target: options
            .selection
            .target
            .map(|cc| format!("sm_{}{}", cc.major, cc.minor)),
        driver_dir: options.selection.driver_dir.clone(),
        load_untrusted: options.selection.trust.load_untrusted,
        simulated,
        combinations,
        node,
        baseline: None,
    })
}

/// The GPU of the rank whose local rank is `local`: the node's `local`-th selected GPU, or the
/// one GPU a scheduler gave each task (`--gpus-per-task=1`).
fn gpu_of_rank(devices: &[u32], local: u32) -> Result<u32, CheckError> {
    match devices {
        [only] => Ok(*only),
        _ => devices
            .get(local as usize)
            .copied()
            .ok_or(CheckError::NoGpuForRank {
                local,
                gpus: devices.len(),
            }),
    }
}

/// The one combination `--nodes` runs in: the first with NCCL.
fn pick_nccl(combinations: Vec<Combination>) -> Result<Vec<Combination>, CheckError> {
    let has_nccl = |c: &Combination| (c.components.iter()).any(|f| f.component == Component::Nccl);
    match combinations.into_iter().find(has_nccl) {
        Some(combination) => Ok(vec![combination]),
        None => Err(CheckError::NoNccl),
    }
}

/// The combinations `--combination` names, in the order found; all of them when it names none.
fn select(
    all: Vec<Combination>,
    names: &[String],
    scan: &crate::model::ScanReport,
) -> Result<Vec<Combination>, CheckError> {
    if all.is_empty() {
        return Err(CheckError::NothingToCheck {
            places: scan.searched.len(),
        });
    }
    if let Some(missing) = names.iter().find(|n| !all.iter().any(|c| &c.name == *n)) {
        return Err(CheckError::NoSuchCombination {
            name: missing.clone(),
            available: all
                .iter()
                .map(|c| c.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    Ok(all
        .into_iter()
        .filter(|c| names.is_empty() || names.contains(&c.name))
        .collect())
}

/// Runs one combination: its worker-side checks in workers on the first device, its
/// per-device checks on each other device at the same time (each in workers of its own, told
/// the first device's other results), then the parent-side checks.
fn run_combination(
    combination: &Combination,
    options: &CheckOptions,
    devices: &[u32],
    (scope, world): (Scope, Option<&WorldRequest>),
) -> CombinationReport {
    let started = Instant::now();
    let first = devices.first().copied().unwrap_or(0);
    let request = CheckRequest {
        combination: combination.name.clone(),
        components: combination.components.clone(),
        driver: combination.driver.clone(),
        nvml: combination.nvml.clone(),
        target: options
            .selection
            .target
            .map(|cc| format!("sm_{}{}", cc.major, cc.minor)),
        device: first,
        devices: devices.to_vec(),
        run: scope.worker_checks(),
        settled: Vec::new(),
        world: world.cloned(),
    };
    let mut run = runner::run(
        combination,
        request.clone(),
        options.timeout,
        &options.worker,
    );
    if devices.len() > 1 {
        let others = std::thread::scope(|threads| {
            let handles: Vec<_> = devices[1..]
                .iter()
                .map(|&device| {
                    let request = CheckRequest {
                        device,
                        run: scope.per_device_checks(),
                        settled: (run.results.iter())
                            .filter(|r| !spec::PER_DEVICE.contains(&r.id.as_str()))
                            .cloned()
                            .collect(),
                        ..request.clone()
                    };
                    threads.spawn(move || {
                        runner::run(combination, request, options.timeout, &options.worker)
                    })
                })
                .collect();
            handles
                .into_iter()
                .zip(&devices[1..])
                .map(|(h, &device)| (device, h.join().map(|r| r.results).unwrap_or_default()))
                .collect::<Vec<_>>()
        });
        key_by_device(&mut run.results, first);
        for (device, mut results) in others {
            key_by_device(&mut results, device);
            run.results.extend(results);
        }
    }
    let mut checks = run.results;
    let libraries = mapped::library_uses(combination, &run.mapped, &checks);
    if scope == Scope::Full {
        let arch = device_arch(&checks, first).or(options.selection.target);
        for (id, outcome) in [
            (
                "coverage.kernels",
                mapped::coverage(&libraries, arch, &mapped::nvrtc_images(&checks), |path| {
                    mapped::read_targets(path, runner::run_as(combination))
                }),
            ),
            ("combination.isolated", mapped::isolated(&libraries)),
        ] {
            checks.push(CheckResult {
                details: outcome.details,
                ..CheckResult::new(id, outcome.status, outcome.reason)
            });
        }
    }
    let runtime = checks
        .iter()
        .find(|c| c.id == "cudart.load")
        .and_then(|c| c.details.get("version"))
        .and_then(|v| v.as_str())
        .and_then(crate::compat::CudaVersion::parse)
        .map(|v| v.to_string());
    CombinationReport {
        name: combination.name.clone(),
        origin: combination.origin,
        root: combination.root.clone(),
        layout: combination.layout,
        cuda_version: runtime.or_else(|| combination.cuda_version.clone()),
        search_path: combination.search_path.clone(),
        driver: combination
            .driver
            .as_ref()
            .map(|path| driver_use(path, &checks)),
        libraries,
        simulated: CombinationReport::ran_simulated(&checks),
        loaded_as: runner::run_as(combination).map(|u| u.label()),
        environment: runner::launch(combination)
            .map(|l| l.environment.clone())
            .unwrap_or_default(),
        left_out: runner::launch(combination)
            .map(|l| l.left_out.clone())
            .unwrap_or_default(),
        checks,
        duration_ms: started.elapsed().as_secs_f64() * 1e3,
    }
}

/// Marks each per-device result with the GPU it ran on: its ordinal, and the UUID and bus id
/// its worker's `driver.devices` saw.
fn key_by_device(results: &mut [CheckResult], ordinal: u32) {
    let listed = results
        .iter()
        .find(|r| r.id == "driver.devices")
        .and_then(|r| r.details.get("devices"))
        .and_then(|d| d.as_array())
        .and_then(|all| {
            all.iter()
                .find(|d| d["ordinal"].as_u64() == Some(u64::from(ordinal)))
        })
        .cloned()
        .unwrap_or_default();
    let text = |key: &str| listed[key].as_str().map(str::to_owned);
    let key = DeviceKey {
        index: ordinal,
        uuid: text("uuid"),
        pci_bus_id: text("pci_bus_id"),
    };
    for result in results
        .iter_mut()
        .filter(|r| spec::PER_DEVICE.contains(&r.id.as_str()))
    {
        result.device = Some(key.clone());
    }
}

/// The compute capability of the device `driver.devices` set up, from its details.
fn device_arch(checks: &[CheckResult], ordinal: u32) -> Option<ComputeCapability> {
    let devices = checks.iter().find(|c| c.id == "driver.devices")?;
    if !devices.status.satisfies() {
        return None;
    }
    devices
        .details
        .get("devices")?
        .as_array()?
        .iter()
        .find(|d| d["ordinal"].as_u64() == Some(u64::from(ordinal)))
        .and_then(|d| d["compute_capability"].as_str())
        .and_then(ComputeCapability::parse)
}

/// The driver library as the combination used it.
fn driver_use(path: &std::path::Path, checks: &[CheckResult]) -> DriverUse {
    let library = checks.iter().find(|c| c.id == "driver.library");
    let detail = |key: &str| {
        library
            .and_then(|c| c.details.get(key))
            .and_then(|v| v.as_str())
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
    };
    DriverUse {
        path: path.to_path_buf(),
        real_path: crate::hostfs::real_path(path).unwrap_or_else(|_| path.to_path_buf()),
        version: detail("driver_version"),
        kernel_module: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rank_takes_its_local_gpu_or_the_one_it_was_given() {
        assert_eq!(gpu_of_rank(&[0, 1, 2, 3], 2).unwrap(), 2);
        assert_eq!(gpu_of_rank(&[5], 3).unwrap(), 5);
        assert!(matches!(
            gpu_of_rank(&[0, 1], 2),
            Err(CheckError::NoGpuForRank { local: 2, gpus: 2 })
        ));
    }
}
