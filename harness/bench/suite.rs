//! One combination's benchmarks on one GPU, in its own worker: the setup checks, NVRTC compile
//! times, the library load time (fresh workers; on the first GPU's pass only, as they need
//! none), then, where the device came up, the copy ceiling, vector add and matmul; last, every
//! figure against the ceilings measured here, on this GPU.

use super::client::Client;
use super::model::{
    BenchResult, CombinationRun, Key, LibraryVersion, Peaks, Status, Summary, Throughput,
};
use super::plan::{self, Depth, Planned};
use super::protocol::{Command, Implementation, Limits, Measurement, Reply, Workload};
use super::shares::{pct_of_peak, pct_of_spec};
use super::stats;
use super::theoretical;
use crate::check::combination::Combination;
use crate::check::protocol::{CheckRequest, Component};
use crate::check::spec::{self, Side as CheckSide};
use crate::compat::ComputeCapability;
use crate::devices::DeviceKey;
use crate::schema::check::{CheckResult, Status as CheckStatus};
use crate::tolerance::Precision;
use std::path::Path;
use std::time::{Duration, Instant};

/// The checks a bench worker runs first: what the benchmarks need, in `check`'s order.
const SETUP: [&str; 15] = [
    "driver.library",
    "driver.init",
    "driver.version",
    "driver.devices",
    "driver.nvml",
    "cudart.load",
    "nvrtc.load",
    "nvrtc.compile_vector_add",
    "nvrtc.compile_matmul",
    "cublas.load",
    "cublas.handle",
    "cublasLt.load",
    "cublasLt.handle",
    "cublasLt.matmul_fp8",
    "cupti.load",
];

/// How the suite runs.
pub struct Settings<'a> {
    pub depth: Depth,
    /// The architecture compiled for (`sm_90`).
    pub arch: &'a str,
    pub device: u32,
    /// Run the CPU-side benchmarks (NVRTC compile, library load), which need no GPU: on the
    /// first device's pass only.
    pub cpu_side: bool,
    /// Mark each GPU result with its device: a run over several GPUs.
    pub keyed: bool,
    /// Only the benchmarks whose id holds one of these (`--filter`; all when empty).
    pub filter: &'a [String],
    /// The `__bench` executable.
    pub worker: &'a Path,
    /// How long one command may take before the worker counts as hung.
    pub timeout: Duration,
}

impl Settings<'_> {
    /// Whether `--filter` keeps the benchmark `id`.
    pub fn wants(&self, id: &str) -> bool {
        self.filter.is_empty() || self.filter.iter().any(|f| id.contains(f.as_str()))
    }
}

/// Whether `--filter` keeps any benchmark of a pass over one GPU of `combination` (its
/// CPU-side ones on the first pass), at a GPU's sizes or the simulator's.
pub fn wanted(combination: &Combination, settings: &Settings) -> bool {
    let name = combination.name.as_str();
    let mut keys: Vec<Key> = [false, true]
        .into_iter()
        .flat_map(|simulated| plan::gpu(name, settings.depth, simulated))
        .map(|p| p.key)
        .collect();
    if settings.cpu_side {
        keys.extend(
            plan::compile(name, settings.arch)
                .into_iter()
                .map(|p| p.key),
        );
        keys.push(plan::load(name));
    }
    keys.iter().any(|k| settings.wants(&k.id()))
}

/// Tells the caller how far the run is.
pub trait Progress {
    /// `done` of `total` benchmarks of `combination` are done; `last` is the latest one.
    fn update(&self, combination: &str, done: usize, total: usize, last: &BenchResult);
}

/// The check request of a bench worker of `combination`, running the checks `run`.
pub fn request(combination: &Combination, settings: &Settings, run: &[&str]) -> CheckRequest {
    CheckRequest {
        combination: combination.name.clone(),
        components: combination.components.clone(),
        driver: combination.driver.clone(),
        nvml: combination.nvml.clone(),
        target: Some(settings.arch.to_owned()),
        device: settings.device,
        devices: Vec::new(),
        run: spec::SPECS
            .iter()
            .filter(|s| s.side == CheckSide::Worker && run.contains(&s.id))
            .map(|s| s.id.to_owned())
            .collect(),
        settled: Vec::new(),
        world: None,
    }
}

/// Starts a bench worker with the setup checks.
pub fn start(combination: &Combination, settings: &Settings) -> Result<Client, String> {
    Client::start(
        combination,
        request(combination, settings, &SETUP),
        settings.worker,
        settings.timeout,
    )
}

/// Runs every benchmark of `combination`.
pub fn run(
    combination: &Combination,
    settings: &Settings,
    progress: &dyn Progress,
) -> (CombinationRun, Vec<BenchResult>) {
    let name = combination.name.as_str();
    let mut compile = if settings.cpu_side {
        plan::compile(name, settings.arch)
    } else {
        Vec::new()
    };
    compile.retain(|p| settings.wants(&p.key.id()));
    let load = settings.cpu_side && settings.wants(&plan::load(name).id());
    let mut client = start(combination, settings);
    let setup = client.as_ref().map(|c| c.setup.clone()).unwrap_or_default();
    let simulated = crate::schema::check::CombinationReport::ran_simulated(&setup);
    let mut gpu_plan = plan::gpu(name, settings.depth, simulated);
    gpu_plan.retain(|p| settings.wants(&p.key.id()));
    let total = compile.len() + usize::from(load) + gpu_plan.len();
    let mut results = Vec::with_capacity(total);
    let report = |result: BenchResult, results: &mut Vec<BenchResult>| {
        progress.update(name, results.len() + 1, total, &result);
        results.push(result);
    };
    let gpu_unavailable = match &client {
        Err(why) => Some(why.clone()),
        Ok(_) => unmet(&setup, "driver.devices").map(|why| format!("no GPU: {why}")),
    };
    for item in &compile {
        let result = match &mut client {
            Err(why) => BenchResult::failed(item.key.clone(), why.clone()),
            Ok(c) => match unmet(&setup, compile_check(&item.workload)) {
                Some(why) => BenchResult::skipped(item.key.clone(), why),
                None => measure(c, item, settings.depth.cpu_limits(), settings.timeout),
            },
        };
        report(result, &mut results);
    }
    if load {
        report(load_time(combination, settings), &mut results);
    }
    for item in &gpu_plan {
        let result = match (&gpu_unavailable, &mut client) {
            (Some(why), _) => BenchResult::skipped(item.key.clone(), why.clone()),
            (None, Err(why)) => BenchResult::failed(item.key.clone(), why.clone()),
            (None, Ok(c)) => match unmet(&setup, gpu_check(&item.workload))
                .or_else(|| inapplicable(&setup, &item.workload))
                .or_else(|| beyond_the_simulator(simulated, &item.workload))
            {
                Some(why) => BenchResult::skipped(item.key.clone(), why),
                None => measure(c, item, settings.depth.gpu_limits(), settings.timeout),
            },
        };
        // A worker that died takes its device state with it: the next benchmark gets a new one.
        if client.as_mut().is_ok_and(|c| !c.is_alive()) {
            client = start(combination, settings);
        }
        report(result, &mut results);
    }
    let peaks = peaks(&results);
    let spec = listed(&setup, settings.device).map(|d| theoretical::peaks(&device_facts(d)));
    let l2_bytes = l2_bytes(&setup, settings.device);
    let key = settings.keyed.then(|| device_key(&setup, settings.device));
    for result in &mut results {
        result.in_l2 = in_l2(result, l2_bytes);
        result.pct_of_peak = pct_of_peak(result, &peaks);
        result.pct_of_spec = spec.as_ref().and_then(|s| pct_of_spec(result, s));
        if result.side == super::model::Side::Gpu {
            result.device = key.clone();
        }
    }
    let run = CombinationRun {
        peaks,
        spec,
        l2_bytes,
        ..combination_run(combination, &setup, gpu_unavailable)
    };
    (run, results)
}

/// What a worker of `combination` saw of it (the versions behind its figures, whether it ran
/// simulated) from its `setup` checks, and why its GPU benchmarks could not run, if they could
/// not; no ceilings.
pub fn combination_run(
    combination: &Combination,
    setup: &[CheckResult],
    gpu_unavailable: Option<String>,
) -> CombinationRun {
    CombinationRun {
        name: combination.name.clone(),
        cuda_version: detail(setup, "driver.version", "runtime_cuda")
            .or_else(|| combination.cuda_version.clone()),
        driver: combination.driver.clone(),
        driver_cuda_version: detail(setup, "driver.version", "driver_cuda"),
        libraries: libraries(combination, setup),
        peaks: Peaks::default(),
        spec: None,
        l2_bytes: None,
        gpu_unavailable,
        simulated: crate::schema::check::CombinationReport::ran_simulated(setup),
    }
}

/// The setup check a compile benchmark needs.
fn compile_check(workload: &Workload) -> &'static str {
    match workload {
        Workload::Compile {
            kernel: crate::kernels::Kernel::TiledMatmul,
            ..
        } => "nvrtc.compile_matmul",
        _ => "nvrtc.compile_vector_add",
    }
}

/// The setup check a GPU benchmark needs beyond the device.
fn gpu_check(workload: &Workload) -> &'static str {
    match workload {
        Workload::Matmul {
            implementation: Implementation::Cublas,
            precision: Precision::Fp8,
            ..
        } => "cublasLt.handle",
        Workload::Matmul {
            implementation: Implementation::Cublas,
            ..
        } => "cublas.handle",
        Workload::Matmul { .. } => "nvrtc.compile_matmul",
        Workload::VectorAdd { .. } => "nvrtc.compile_vector_add",
        _ => "driver.devices",
    }
}

/// The largest NVRTC matmul a simulated device is given: it interprets the kernel's PTX, about a
/// nanosecond per thread-instruction, so 1024³ takes seconds and 8192³ would take hours.
const SIMULATED_MATMUL_MAX: u64 = 1024;

/// Why a workload is not run on a device that is `simulated`, if it is not: an NVRTC matmul
/// larger than [`SIMULATED_MATMUL_MAX`].
pub fn beyond_the_simulator(simulated: bool, workload: &Workload) -> Option<String> {
    match workload {
        Workload::Matmul {
            implementation: Implementation::Nvrtc,
            size,
            ..
        } if simulated && *size > SIMULATED_MATMUL_MAX => Some(format!(
            "the simulated GPU interprets the kernel's PTX: a {size}³ matmul is beyond what it \
                 runs in a test (up to {SIMULATED_MATMUL_MAX}³)"
        )),
        _ => None,
    }
}

/// The setup check whose skip means a GPU benchmark does not apply here (no FP8 on this GPU
/// or in this cuBLASLt); its failure does not stop the benchmark, which verifies its own
/// output as every GEMM does.
fn applies_check(workload: &Workload) -> Option<&'static str> {
    match workload {
        Workload::Matmul {
            precision: Precision::Fp8,
            ..
        } => Some("cublasLt.matmul_fp8"),
        _ => None,
    }
}

/// Why a GPU benchmark does not apply here, if its [`applies_check`] was skipped.
fn inapplicable(setup: &[CheckResult], workload: &Workload) -> Option<String> {
    let id = applies_check(workload)?;
    setup
        .iter()
        .find(|r| r.id == id && r.status == CheckStatus::Skip)
        .map(|r| format!("{id} skipped: {}", r.reason))
}

/// Why the setup check `id` did not pass, if it did not.
pub fn unmet(setup: &[CheckResult], id: &str) -> Option<String> {
    match setup.iter().find(|r| r.id == id) {
        None => Some(format!("{id} was not run")),
        Some(r) if r.status.satisfies() => None,
        Some(r) => Some(format!(
            "{id} did not pass ({}): {}",
            r.status.name(),
            r.reason
        )),
    }
}

/// A string detail of a setup check.
fn detail(setup: &[CheckResult], id: &str, key: &str) -> Option<String> {
    setup
        .iter()
        .find(|r| r.id == id)
        .and_then(|r| r.details.get(key))
        .and_then(|v| v.as_str())
        .map(str::to_owned)
}

/// Device `ordinal` as `driver.devices` listed it (its details: `uuid`, `pci_bus_id`,
/// `l2_bytes`, ...).
fn listed(setup: &[CheckResult], ordinal: u32) -> Option<&serde_json::Value> {
    setup
        .iter()
        .find(|r| r.id == "driver.devices")?
        .details
        .get("devices")?
        .as_array()?
        .iter()
        .find(|d| d["ordinal"].as_u64() == Some(u64::from(ordinal)))
}

/// What `driver.devices` listed of a device, as far as its theoretical peak needs it.
fn device_facts(listed: &serde_json::Value) -> theoretical::DeviceFacts {
    let number = |key: &str| listed[key].as_u64().and_then(|n| u32::try_from(n).ok());
    theoretical::DeviceFacts {
        name: listed["name"].as_str().unwrap_or_default().to_owned(),
        cc: listed["compute_capability"]
            .as_str()
            .and_then(ComputeCapability::parse),
        multiprocessors: number("multiprocessors"),
        clock_mhz: number("clock_khz").map(|khz| khz / 1000),
        memory_clock_mhz: number("memory_clock_khz").map(|khz| khz / 1000),
        memory_bus_bits: number("memory_bus_bits"),
    }
}

/// The L2 size of device `ordinal`, as `driver.devices` listed it.
fn l2_bytes(setup: &[CheckResult], ordinal: u32) -> Option<u64> {
    listed(setup, ordinal)?.get("l2_bytes")?.as_u64()
}

/// Device `ordinal`'s key: the UUID and bus id the worker's `driver.devices` saw (none where it
/// saw no device).
fn device_key(setup: &[CheckResult], ordinal: u32) -> DeviceKey {
    let text = |key: &str| {
        listed(setup, ordinal)
            .and_then(|d| d[key].as_str())
            .map(str::to_owned)
    };
    DeviceKey {
        index: ordinal,
        uuid: text("uuid"),
        pci_bus_id: text("pci_bus_id"),
    }
}

/// Whether a batch-mode vector add's working set (its three arrays) stays in L2 from one run
/// to the next: within twice the L2, a cache that is not strictly LRU still serves much of it.
/// Unknown L2, cold mode and the other benchmarks: no.
fn in_l2(result: &BenchResult, l2_bytes: Option<u64>) -> bool {
    let (Some(l2), Some(elements)) = (l2_bytes, result.parameters.size) else {
        return false;
    };
    result.benchmark == "vector_add"
        && result.parameters.mode == Some(super::model::Mode::Batch)
        && 12 * elements <= 2 * l2
}

/// Each library of the combination, with the version its load check read.
fn libraries(combination: &Combination, setup: &[CheckResult]) -> Vec<LibraryVersion> {
    combination
        .components
        .iter()
        .map(|file| LibraryVersion {
            component: file.component.stem().to_owned(),
            path: file.path.clone(),
            version: detail(setup, &format!("{}.load", file.component.stem()), "version")
                .or_else(|| file.version.clone()),
        })
        .collect()
}

/// Prepares and verifies `item`, then samples it.
pub fn measure(
    client: &mut Client,
    item: &Planned,
    limits: Limits,
    timeout: Duration,
) -> BenchResult {
    let key = item.key.clone();
    let prepare = Command::Prepare {
        workload: item.workload.clone(),
    };
    let verification = match client.ask(&prepare, timeout) {
        Ok(Reply::Prepared { verification }) => verification,
        Ok(Reply::Failed { reason }) => return BenchResult::failed(key, reason),
        Ok(other) => return BenchResult::failed(key, format!("unexpected answer: {other:?}")),
        Err(why) => return BenchResult::failed(key, why),
    };
    if let Some(v) = verification.as_ref().filter(|v| !v.passed) {
        let mut failed = BenchResult::failed(key, format!("{}; not timed", v.failure()));
        failed.verified = verification;
        return failed;
    }
    let command = Command::Measure {
        workload: item.workload.clone(),
        mode: item.mode.unwrap_or(super::model::Mode::Batch),
        limits,
    };
    // Sampling stops at the time limit; preparing the next sample, verifying and the CUPTI
    // pass come on top.
    let allowed = timeout + Duration::from_secs_f64(limits.time_limit_s);
    let measurement = match client.ask(&command, allowed) {
        Ok(Reply::Measured(m)) => m,
        Ok(Reply::Failed { reason }) => return BenchResult::failed(key, reason),
        Ok(other) => return BenchResult::failed(key, format!("unexpected answer: {other:?}")),
        Err(why) => return BenchResult::failed(key, why),
    };
    let mut result = measured(key, &item.workload, measurement);
    result.verified = verification;
    result
}

/// A measured result from its samples: summary (its noise over every sample taken), host time
/// and rate.
fn measured(key: Key, workload: &Workload, m: Measurement) -> BenchResult {
    let summary = stats::summarize(&m.samples_ns).map(|s| Summary {
        noise: m.noise.unwrap_or(s.noise),
        ..s
    });
    let throughput = summary.and_then(|s| throughput(workload, s.median_ns));
    let reason = (!m.notes.is_empty()).then(|| m.notes.join("; "));
    BenchResult {
        summary,
        host_median_ns: stats::summarize(&m.host_ns).map(|s| s.median_ns),
        throughput,
        samples_taken: Some(m.samples_taken),
        samples_ns: m.samples_ns,
        cupti: m.cupti,
        telemetry: m.telemetry,
        stopped_by: Some(m.stopped_by),
        reason,
        ..BenchResult::from_key(key)
    }
}

/// GB/s (bytes per ns) or TFLOP/s from a median time per run.
fn throughput(workload: &Workload, median_ns: f64) -> Option<Throughput> {
    if median_ns <= 0.0 {
        return None;
    }
    if let Some(bytes) = workload.bytes() {
        return Some(Throughput {
            value: bytes / median_ns,
            unit: "GB/s".into(),
        });
    }
    workload.flops().map(|flops| Throughput {
        value: flops / median_ns / 1e3,
        unit: "TFLOP/s".into(),
    })
}

/// The ceilings measured in this run: the copy's bandwidth and the best cuBLAS rate per
/// precision (batch or cold, whichever was faster).
fn peaks(results: &[BenchResult]) -> Peaks {
    let mut peaks = Peaks::default();
    for r in results.iter().filter(|r| r.status == Status::Measured) {
        let Some(t) = &r.throughput else { continue };
        match (r.benchmark.as_str(), r.parameters.implementation.as_deref()) {
            ("copy", _) => {
                peaks.copy_gbps = Some(peaks.copy_gbps.map_or(t.value, |p| p.max(t.value)))
            }
            ("matmul", Some("cublas")) => {
                if let Some(precision) = &r.parameters.precision {
                    let best = peaks.gemm_tflops.entry(precision.clone()).or_insert(0.0);
                    *best = best.max(t.value);
                }
            }
            _ => {}
        }
    }
    peaks
}

/// The library load time of `combination`: each sample a fresh worker that opens every library
/// and asks its version (the `*.load` checks), the sum of their times.
pub fn load_time(combination: &Combination, settings: &Settings) -> BenchResult {
    let key = plan::load(&combination.name);
    let rule = settings.depth.cpu_limits().rule();
    let mut samples = Vec::new();
    let mut running = stats::Running::default();
    let started = Instant::now();
    let stopped_by = loop {
        match load_once(combination, settings) {
            Ok(ns) => {
                samples.push(ns);
                running.push(ns);
            }
            Err(why) => return BenchResult::failed(key, why),
        }
        if let Some(reason) = rule.verdict(&running, started.elapsed()) {
            break reason;
        }
    };
    BenchResult {
        summary: stats::summarize(&samples),
        samples_taken: Some(running.count()),
        samples_ns: samples,
        stopped_by: Some(stopped_by),
        ..BenchResult::from_key(key)
    }
}

/// One fresh worker's time to open every library of `combination`, ns.
pub fn load_once(combination: &Combination, settings: &Settings) -> Result<f64, String> {
    let loads: Vec<String> = Component::ALL
        .iter()
        .filter(|c| combination.components.iter().any(|f| f.component == **c))
        .map(|c| format!("{}.load", c.stem()))
        .collect();
    let ids: Vec<&str> = loads.iter().map(String::as_str).collect();
    let client = Client::start(
        combination,
        request(combination, settings, &ids),
        settings.worker,
        settings.timeout,
    )?;
    if let Some(failed) = client.setup.iter().find(|r| !r.status.satisfies()) {
        return Err(format!(
            "{} did not pass ({}): {}",
            failed.id,
            failed.status.name(),
            failed.reason
        ));
    }
    Ok(client.setup.iter().map(|r| r.duration_ms * 1e6).sum())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::model::{Mode, Parameters, Side};

    fn result(
        benchmark: &'static str,
        implementation: &str,
        precision: &str,
        value: f64,
    ) -> BenchResult {
        let key = Key {
            combination: "c".into(),
            benchmark,
            side: Side::Gpu,
            parameters: Parameters {
                precision: Some(precision.into()),
                implementation: Some(implementation.into()),
                mode: Some(Mode::Batch),
                ..Parameters::default()
            },
        };
        BenchResult {
            throughput: Some(Throughput {
                value,
                unit: String::new(),
            }),
            ..BenchResult::from_key(key)
        }
    }

    #[test]
    fn figures_are_set_against_the_ceilings_of_the_same_run() {
        let results = vec![
            result("copy", "driver", "", 3000.0),
            result("vector_add", "nvrtc", "f32", 2850.0),
            result("matmul", "cublas", "bf16", 700.0),
            result("matmul", "cublas", "bf16", 800.0),
            result("matmul", "cublas", "f32", 50.0),
            result("matmul", "nvrtc", "f32", 10.0),
        ];
        let peaks = peaks(&results);
        assert_eq!(peaks.copy_gbps, Some(3000.0));
        assert_eq!(peaks.gemm_tflops["bf16"], 800.0);
        let pct: Vec<Option<f64>> = results.iter().map(|r| pct_of_peak(r, &peaks)).collect();
        assert_eq!(pct, [None, Some(95.0), None, None, None, Some(20.0)]);
    }

    #[test]
    fn a_vector_add_within_twice_the_l2_has_no_share_of_the_dram_copy() {
        let peaks = Peaks {
            copy_gbps: Some(3000.0),
            ..Peaks::default()
        };
        let h100_l2 = Some(50 << 20);
        let add = |elements: u64, mode: Mode| {
            let mut r = result("vector_add", "nvrtc", "f32", 3300.0);
            r.parameters.size = Some(elements);
            r.parameters.mode = Some(mode);
            r.in_l2 = in_l2(&r, h100_l2);
            (r.in_l2, pct_of_peak(&r, &peaks).map(f64::round))
        };
        // 1 Mi and 4 Mi elements (12 and 48 MiB) stay in 50 MiB of L2 between runs.
        assert_eq!(add(1 << 20, Mode::Batch), (true, None));
        assert_eq!(add(1 << 22, Mode::Batch), (true, None));
        // 16 Mi elements (192 MiB) and a flushed L2 go to DRAM.
        assert_eq!(add(1 << 24, Mode::Batch), (false, Some(110.0)));
        assert_eq!(add(1 << 20, Mode::Cold), (false, Some(110.0)));
        // A GEMM's ceiling is the best GEMM, whatever its size.
        let mut gemm = result("matmul", "cublas", "bf16", 700.0);
        gemm.parameters.size = Some(1024);
        assert!(!in_l2(&gemm, h100_l2));
        // Without the L2's size nothing is marked.
        let mut unknown = result("vector_add", "nvrtc", "f32", 3300.0);
        unknown.parameters.size = Some(1 << 20);
        assert!(!in_l2(&unknown, None));
    }

    #[test]
    fn the_l2_size_and_the_key_come_from_the_chosen_device() {
        let devices = serde_json::json!([
            {"ordinal": 0, "l2_bytes": 52_428_800, "uuid": "GPU-a", "pci_bus_id": "0000:17:00.0"},
            {"ordinal": 1, "l2_bytes": 62_914_560, "uuid": "GPU-b", "pci_bus_id": "0000:2a:00.0"}
        ]);
        let setup = vec![CheckResult {
            id: "driver.devices".into(),
            library: "driver".into(),
            status: crate::schema::check::Status::Pass,
            reason: String::new(),
            duration_ms: 1.0,
            details: [("devices".to_owned(), devices)].into_iter().collect(),
            device: None,
        }];
        assert_eq!(l2_bytes(&setup, 1), Some(62_914_560));
        let key = device_key(&setup, 1);
        assert_eq!(key.uuid.as_deref(), Some("GPU-b"));
        assert_eq!(key.pci_bus_id.as_deref(), Some("0000:2a:00.0"));
        assert_eq!(l2_bytes(&setup, 2), None);
        assert_eq!(l2_bytes(&[], 0), None);
        assert_eq!(device_key(&[], 3).index, 3);
        assert_eq!(device_key(&[], 3).uuid, None);
    }

    #[test]
    fn only_a_skipped_fp8_check_keeps_the_fp8_gemms_from_running() {
        let fp8 = Workload::Matmul {
            implementation: Implementation::Cublas,
            precision: Precision::Fp8,
            size: 1024,
        };
        let check = |status, reason: &str| CheckResult {
            id: "cublasLt.matmul_fp8".into(),
            library: "cublasLt".into(),
            status,
            reason: reason.into(),
            duration_ms: 1.0,
            details: Default::default(),
            device: None,
        };
        let why = "FP8 GEMM needs compute capability 8.9 or newer";
        assert_eq!(
            inapplicable(&[check(CheckStatus::Skip, why)], &fp8).as_deref(),
            Some("cublasLt.matmul_fp8 skipped: FP8 GEMM needs compute capability 8.9 or newer")
        );
        // A failed check is the benchmark's to show: it verifies its own output.
        assert_eq!(inapplicable(&[check(CheckStatus::Fail, "off")], &fp8), None);
        let bf16 = Workload::Matmul {
            implementation: Implementation::Cublas,
            precision: Precision::Bf16,
            size: 1024,
        };
        assert_eq!(inapplicable(&[check(CheckStatus::Skip, why)], &bf16), None);
        assert_eq!(gpu_check(&fp8), "cublasLt.handle");
    }

    #[test]
    fn rates_come_from_the_median() {
        let add = Workload::VectorAdd { elements: 1000 };
        assert_eq!(throughput(&add, 12.0).unwrap().value, 1000.0);
        let gemm = Workload::Matmul {
            implementation: Implementation::Cublas,
            precision: crate::tolerance::Precision::Bf16,
            size: 1000,
        };
        let t = throughput(&gemm, 1e6).unwrap();
        assert_eq!((t.value, t.unit.as_str()), (2.0, "TFLOP/s"));
        assert!(throughput(&add, 0.0).is_none());
    }
}
