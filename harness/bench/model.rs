//! The bench report's data model: the canonical shape of `stackbench.bench/v1`, which every
//! exporter renders. Each benchmark keeps its samples (an evenly spread subsample when it took
//! more than [`crate::bench::stats::KEPT_SAMPLES`], with the count taken); summaries are derived
//! from them, the noise from every sample. Fields are only ever added.

use crate::bench::conditions::Conditions;
use crate::devices::DeviceKey;
use crate::gpu::GpuInfo;
use crate::model::HostInfo;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Whether a number is zero (serde: left out when it is).
fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// Everything one `stackbench bench` run measured.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BenchReport {
    pub schema: String,
    /// The schema's minor version ([`crate::tags::BENCH_SCHEMA_MINOR`]); absent (0) in files written before
    /// repetitions were kept apart.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub schema_minor: u32,
    /// Minor 8: the run's id, a random UUID ([`crate::run_id`]); a copy of the file is the same
    /// run. Absent in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// `--repeat`: how many times each combination's benchmarks ran, each time in fresh worker
    /// processes, interleaved with the other combinations'. Absent (0) in older files: one run.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub repeat: u32,
    /// When the run started, RFC 3339 in UTC.
    pub started: String,
    /// The host and stackbench's version.
    pub host: HostInfo,
    /// The GPUs (NVML) and the kernel driver's version.
    pub gpu: GpuInfo,
    /// True when any combination ran on stackbench's simulated driver (`tests/simgpu`): its
    /// figures come from a model of a device profile, not from a GPU. Absent (false) otherwise.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub simulated: bool,
    /// The architecture NVRTC compiled for (the device's, else `--target`, else `sm_90`).
    pub target: String,
    /// `--driver-dir`, when the driver's libraries were taken from there.
    #[serde(default, with = "crate::pathname::option")]
    pub driver_dir: Option<PathBuf>,
    /// `--quick`: fewer sizes, one mode, shorter limits.
    pub quick: bool,
    /// `--load-untrusted`: libraries were loaded whoever could write them, as ourselves.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub load_untrusted: bool,
    /// `--allow-busy`: GPUs other programs computed on were measured anyway (each result's
    /// `conditions` names them). Absent (false) otherwise.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_busy: bool,
    /// `--lock-clocks`: the clocks each GPU was locked at while measuring. Absent when unlocked.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clocks_locked: Vec<crate::bench::clocks::LockedClocks>,
    pub combinations: Vec<CombinationRun>,
    pub benchmarks: Vec<BenchResult>,
    /// What the run found about its GPUs together (`slow_device`); absent when nothing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<NodeFinding>,
    /// Set by `bench --from`: when and by which stackbench the run was rendered again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerendered: Option<Rerendered>,
    /// `bench --nodes`: the job across nodes its collectives ran in; absent for a node's run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<JobRun>,
}

/// A job across nodes as `bench --nodes` ran it: where its ranks were, the checks its figures
/// stand on and what they found.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct JobRun {
    /// Each rank's node, by rank.
    pub hosts: Vec<String>,
    /// `check --nodes`' results from the same workers: `nccl.init`, each collective's
    /// verification, `nccl.transport` (every pair of nodes' transport), `nccl.node_pairs`.
    pub checks: Vec<crate::schema::check::CheckResult>,
    /// What they found: `nccl_net_fallback`, `gdr_disabled`, `nccl_slow_node`, ...
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<crate::diagnose::finding::Finding>,
}

impl JobRun {
    /// `2 nodes, 8 ranks: sim1 (ranks 0-3), sim2 (ranks 4-7)`.
    pub fn placement(&self) -> String {
        let nodes = crate::cluster::node_count(&self.hosts);
        format!(
            "{nodes} node{}, {} ranks: {}",
            if nodes == 1 { "" } else { "s" },
            self.hosts.len(),
            crate::cluster::placement(&self.hosts)
        )
    }
}

/// A run rendered again from its file: its figures are the measuring run's, its theoretical
/// peaks and shares this stackbench's.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Rerendered {
    /// RFC 3339, UTC.
    pub at: String,
    /// `stackbench 0.1.0 (<commit>)`.
    pub by: String,
}

/// A GPU of the run whose figures lie beyond its same-model peers' (`crate::node::outlier`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct NodeFinding {
    /// `slow_device`.
    pub code: String,
    /// The GPU's model, as NVML names it: its peers are the run's GPUs of that model.
    pub gpu: String,
    pub device: DeviceKey,
    /// Each benchmark it was the odd one out on, worst first.
    pub benchmarks: Vec<SlowBenchmark>,
    /// What was found, in a sentence.
    pub message: String,
    /// What to do.
    pub fix: String,
}

/// One benchmark on which a GPU was slower than its peers.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SlowBenchmark {
    pub id: String,
    /// Its median time over the peers' median (1.15 is 15% slower).
    pub ratio: f64,
    pub median_ns: f64,
    /// The median of every same-model GPU's median, its own included.
    pub peers_median_ns: f64,
}

/// One combination as the benchmarks used it: the versions behind its figures.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct CombinationRun {
    /// As `check` names it (`pip:venv-cu12`).
    pub name: String,
    /// The CUDA version of its runtime.
    pub cuda_version: Option<String>,
    /// The driver's `libcuda.so.1` it used.
    #[serde(default, with = "crate::pathname::option")]
    pub driver: Option<PathBuf>,
    /// The driver version its `libcuda` reports (`cuDriverGetVersion`, `12.2`).
    pub driver_cuda_version: Option<String>,
    /// Each library it loaded: component, path and version.
    pub libraries: Vec<LibraryVersion>,
    /// The card's own limits, measured in this combination's run.
    pub peaks: Peaks,
    /// The card's theoretical peaks (absent where no device came up, and in files before them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<Spec>,
    /// The device's L2 cache, bytes (`CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE`): vector adds whose
    /// working set fits in a small multiple of it are not set against the DRAM copy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l2_bytes: Option<u64>,
    /// Why its GPU benchmarks could not run, when they could not (from the setup checks).
    pub gpu_unavailable: Option<String>,
    /// True when its driver was stackbench's simulated one. Absent (false) otherwise.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub simulated: bool,
}

/// A library a combination loaded.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LibraryVersion {
    /// `cublasLt`
    pub component: String,
    #[serde(with = "crate::pathname")]
    pub path: PathBuf,
    /// Its own API's answer where it gave one, else the package's.
    pub version: Option<String>,
}

/// The card's measured ceilings, against which every figure is also given.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Peaks {
    /// Device-to-device copy bandwidth, bytes read plus written, GB/s.
    pub copy_gbps: Option<f64>,
    /// The best cuBLAS rate per precision (`bf16`), TFLOP/s.
    pub gemm_tflops: BTreeMap<String, f64>,
}

/// The card's theoretical peaks ([`crate::bench::theoretical`]): what it can do at most.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Spec {
    /// DRAM bandwidth, GB/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_gbps: Option<f64>,
    /// Dense compute per precision (`bf16`), TFLOP/s (TOPS for `int8`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tflops: BTreeMap<String, f64>,
    /// What they were computed from: `Hopper (sm_90): 132 SMs at 1980 MHz; memory: ...`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub basis: String,
    /// Why there is no compute peak: `no theoretical peak: unknown architecture (...)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing: Option<String>,
}

/// Whether a benchmark needs the GPU.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    Gpu,
    Cpu,
}

/// What bounds a GPU benchmark's time: the card's memory (a copy, a vector add, a collective's
/// bandwidth), its SMs' f32 pipes (an f32 matmul), or its tensor cores (a tf32, f16, bf16 or
/// fp8 matmul, which on a Hopper runs against the power cap, so its clocks, and its time, move
/// with the card's power and temperature: 1-2% between the committed H100 boots, against 0.1%
/// for the f32 matmuls). Cycles (time × SM clock) mean something only for the compute-bound;
/// floors pool the variation between boots only within one bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Bound {
    Memory,
    Compute,
    TensorCores,
}

impl Bound {
    pub fn name(self) -> &'static str {
        match self {
            Bound::Memory => "memory-bound",
            Bound::Compute => "f32 compute-bound",
            Bound::TensorCores => "tensor-core",
        }
    }

    /// Bound by the SMs' clock: cycles are the figure that clock changes do not move.
    pub fn by_sm_clock(self) -> bool {
        self != Bound::Memory
    }
}

/// How a GPU figure was taken.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// L2 flushed before each sample; one launch per sample.
    Cold,
    /// Launches back to back between one pair of events, time divided by their number.
    Batch,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Cold => "cold",
            Mode::Batch => "batch",
        }
    }
}

/// What was measured, with which parameters; together with the combination, the row's key.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq, Hash)]
pub struct Parameters {
    /// Elements (vector add), the square side (matmul) or bytes (copy).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// `f32`, `tf32`, `f16`, `bf16`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub precision: Option<String>,
    /// `cublas`, `nvrtc` (the tiled kernel), `driver` (a copy).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub implementation: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<Mode>,
    /// The architecture compiled for (`sm_90`), for compile benchmarks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arch: Option<String>,
    /// `bench --nodes`: the job's shape, `2n16r` (2 nodes, 16 ranks): a collective across
    /// nodes is another benchmark than one within a node, or across another count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<String>,
}

impl Parameters {
    /// Each parameter given, in the order ids name them: implementation, precision, size,
    /// architecture, mode, job.
    pub fn parts(&self) -> Vec<String> {
        let mut parts = Vec::new();
        parts.extend(self.implementation.clone());
        parts.extend(self.precision.clone());
        parts.extend(self.size.map(|s| s.to_string()));
        parts.extend(self.arch.clone());
        parts.extend(self.mode.map(|m| m.name().to_owned()));
        parts.extend(self.job.clone());
        parts
    }
}

/// How a benchmark ended.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Measured,
    /// Not run, with the reason (no GPU, a library missing).
    Skipped,
    /// Run and failed: an error, or an output that did not verify (then nothing was timed).
    Failed,
}

impl Status {
    /// As the JSON says it.
    pub fn name(self) -> &'static str {
        match self {
            Status::Measured => "measured",
            Status::Skipped => "skipped",
            Status::Failed => "failed",
        }
    }
}

/// Why sampling stopped.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// Relative noise fell under the limit after the minimum samples and time.
    Noise,
    /// The time limit came first; the noise is what it was.
    TimeLimit,
    /// A fixed number of samples was asked for.
    SampleCount,
}

/// The summary of a benchmark's samples, in ns.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct Summary {
    pub median_ns: f64,
    pub q1_ns: f64,
    pub q3_ns: f64,
    pub min_ns: f64,
    pub max_ns: f64,
    /// Relative standard deviation of the samples (0.004 is 0.4%).
    pub noise: f64,
}

/// A rate derived from the median.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Throughput {
    pub value: f64,
    /// `GB/s` or `TFLOP/s`.
    pub unit: String,
}

/// The one-time check of a configuration's output before it was timed.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Verification {
    pub passed: bool,
    /// `f32`, `tf32`, `f16`, `bf16`; or `bits` for a copy, compared bit for bit.
    pub precision: String,
    /// The largest relative error; for `bits`, the share of words that differ.
    pub max_relative_error: f64,
    pub tolerance: f64,
    /// Outputs compared with the CPU's float64 result (a spread sample of large outputs), or
    /// words compared (every one of a copy).
    pub compared: usize,
}

/// The precision name of an exact, bit-for-bit comparison.
pub const BITS: &str = "bits";

impl Verification {
    /// What a failed verification found, in words.
    pub fn failure(&self) -> String {
        if self.precision == BITS {
            let differing = (self.max_relative_error * self.compared as f64).round();
            return format!(
                "the copy differs from its source in {differing} of {} words",
                self.compared
            );
        }
        format!(
            "the output differs from the CPU's: relative error {:.2e} beyond {:.0e}",
            self.max_relative_error, self.tolerance
        )
    }
}

/// NVML's view of the GPU while a benchmark ran.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Telemetry {
    /// NVML readings taken.
    pub readings: usize,
    pub sm_clock_mhz_min: Option<u32>,
    pub sm_clock_mhz_max: Option<u32>,
    /// The mean SM clock of the readings taken during the samples (for a sample shorter than
    /// the reading interval, the last reading before its end): what `compare` multiplies a time
    /// by to judge it in cycles. Absent in runs before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sm_clock_mhz_mean: Option<f64>,
    pub temperature_c_max: Option<u32>,
    pub power_w_max: Option<f64>,
    /// Every clocks event (throttle) reason seen, by name.
    pub throttle_reasons: Vec<String>,
    /// Indices of the samples taken while a reason held the clocks back.
    pub throttled_samples: Vec<usize>,
}

/// The CUPTI kernel durations of one batch of launches, beside the CUDA-event time of the same
/// launches.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CuptiCheck {
    /// The kernels' own durations per run, ns (a run may launch more than one kernel).
    pub kernel_ns: f64,
    /// CUDA-event time per run over `kernel_ns` (1.0 is perfect agreement).
    pub event_over_cupti: f64,
    /// Kernel records CUPTI delivered.
    pub launches: usize,
}

/// One benchmark of one combination.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BenchResult {
    /// As criterion names it: `matmul/pip:venv-cu12/bf16/8192/batch`.
    pub id: String,
    pub combination: String,
    /// `vector_add`, `matmul`, `copy`, `nvrtc_compile`, `load`.
    pub benchmark: String,
    pub side: Side,
    pub parameters: Parameters,
    pub status: Status,
    /// Why it was skipped or failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Skipped because it means nothing on this host's shape (NCCL's collectives on one GPU),
    /// not because anything is missing: such a skip does not make `bench` exit 1.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub inapplicable: bool,
    /// The samples kept: GPU time per launch (CUDA events) or host time (CPU-side), ns; every
    /// one taken, or an evenly spread subsample of them when `samples_taken` is larger.
    pub samples_ns: Vec<f64>,
    /// Samples taken, kept or not (absent in runs before subsampling: all were kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub samples_taken: Option<u64>,
    pub summary: Option<Summary>,
    /// Host wall-clock time per sample's launch, median, ns (GPU benchmarks).
    pub host_median_ns: Option<f64>,
    pub throughput: Option<Throughput>,
    /// The throughput as a percentage of the card's ceiling measured in the same run.
    pub pct_of_peak: Option<f64>,
    /// The throughput as a percentage of the card's theoretical peak (`% of spec`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pct_of_spec: Option<f64>,
    /// The working set stayed in L2 between runs (a batch-mode vector add within twice the L2):
    /// its rate is the cache's, and has no percentage of the DRAM copy.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub in_l2: bool,
    pub verified: Option<Verification>,
    pub cupti: Option<CuptiCheck>,
    pub telemetry: Option<Telemetry>,
    pub stopped_by: Option<StopReason>,
    /// Each repetition of the benchmark, in the order they ran; their kept samples lie one
    /// after another in `samples_ns`. Empty in files of schema minor 0 (one repetition).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repetitions: Vec<Repetition>,
    /// The GPU a GPU benchmark ran on, as its worker saw it (ordinal, UUID, PCI bus id): set
    /// only in runs over several GPUs, so a one-GPU run's results read as before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<DeviceKey>,
    /// An NCCL collective's figures in nccl-tests' terms; absent for every other benchmark.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nccl: Option<NcclFigures>,
    /// The state of the GPU it ran on (each GPU of a collective; the first selected GPU for a
    /// CPU-side benchmark) before the run and at its end. Empty where NVML could not be read,
    /// and in files of schema minor 2 and before.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Conditions>,
}

/// An NCCL collective over the node's GPUs as nccl-tests prints it: `size` is the result's
/// `parameters.size`, the time its median.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct NcclFigures {
    /// The GPUs it ran over, in rank order (rank `r` is `devices[r]`).
    pub devices: Vec<u32>,
    /// Across nodes (`bench --nodes`): each rank's node, in rank order (rank `r` is GPU
    /// `devices[r]` of `hosts[r]`). Empty within one node.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<String>,
    /// Elements of the size (`size / 4`), nccl-tests' `count`.
    pub count: u64,
    /// nccl-tests' `type`: `float`.
    pub datatype: String,
    /// nccl-tests' `redop`: `sum`, or `none` for a collective that does not reduce.
    pub redop: String,
    /// nccl-tests' `root`: the broadcast's root rank, -1 for the others.
    pub root: i32,
    /// Algorithm bandwidth: size / median time, GB/s.
    pub algbw_gbps: Option<f64>,
    /// Bus bandwidth: algbw x `bus_factor`, GB/s; nccl-tests' `busbw`.
    pub busbw_gbps: Option<f64>,
    /// nccl-tests' bus factor for this collective over `devices.len()` ranks.
    pub bus_factor: f64,
}

/// One repetition of a benchmark: one fresh worker's run of it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Repetition {
    pub status: Status,
    /// Why it was skipped or failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// How many of the benchmark's `samples_ns` are this repetition's (the next ones in order).
    pub samples: usize,
    /// Samples it took, kept or not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub samples_taken: Option<u64>,
    /// The median of its kept samples, ns.
    pub median_ns: Option<f64>,
    /// Its relative noise over every sample it took.
    pub noise: Option<f64>,
    pub stopped_by: Option<StopReason>,
}

/// Why a benchmark's samples cannot be split into its repetitions.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{id}: its repetitions hold {counted} samples but samples_ns has {kept}")]
pub struct RepetitionsMismatch {
    pub id: String,
    pub counted: usize,
    pub kept: usize,
}

impl BenchResult {
    /// What bounds this benchmark's time; `None` for host-side figures (loading, compiling).
    pub fn bound(&self) -> Option<Bound> {
        match (self.side, self.benchmark.as_str()) {
            (Side::Gpu, "matmul") => Some(match self.parameters.precision.as_deref() {
                Some("f32") | None => Bound::Compute,
                Some(_) => Bound::TensorCores,
            }),
            (Side::Gpu, "copy" | "vector_add" | "nccl") => Some(Bound::Memory),
            _ => None,
        }
    }

    /// The libraries (by component) the row's figure rests on besides the driver: cuBLAS and
    /// cuBLASLt for a cuBLAS GEMM, NVRTC for a kernel it compiled, NCCL for a collective;
    /// none for a copy, which is the driver's alone.
    pub fn rests_on(&self) -> &'static [&'static str] {
        match (
            self.benchmark.as_str(),
            self.parameters.implementation.as_deref(),
        ) {
            ("nccl", _) => &["nccl"],
            ("matmul", Some(i)) if i.starts_with("cublas") => &["cublas", "cublasLt"],
            (_, Some("nvrtc")) => &["nvrtc"],
            _ => &[],
        }
    }

    /// The repetitions' medians as the comparisons and the store take them: each one's log
    /// (those positive and finite).
    pub fn log_medians(&self) -> Vec<f64> {
        self.repetition_medians()
            .into_iter()
            .filter(|m| *m > 0.0 && m.is_finite())
            .map(f64::ln)
            .collect()
    }

    /// The row's figure as a log: the mean of [`Self::log_medians`] (the log of their geometric
    /// mean); `None` when no repetition has a median.
    pub fn log_figure(&self) -> Option<f64> {
        let logs = self.log_medians();
        (!logs.is_empty()).then(|| logs.iter().sum::<f64>() / logs.len() as f64)
    }

    /// The kept samples of each measured repetition that has any, in order: the whole of
    /// `samples_ns` for a file without repetitions.
    pub fn repetition_samples(&self) -> Result<Vec<&[f64]>, RepetitionsMismatch> {
        if self.repetitions.is_empty() {
            return Ok([self.samples_ns.as_slice()]
                .into_iter()
                .filter(|s| !s.is_empty())
                .collect());
        }
        let counted: usize = self.repetitions.iter().map(|r| r.samples).sum();
        if counted != self.samples_ns.len() {
            return Err(RepetitionsMismatch {
                id: self.id.clone(),
                counted,
                kept: self.samples_ns.len(),
            });
        }
        let mut rest = self.samples_ns.as_slice();
        let mut slices = Vec::with_capacity(self.repetitions.len());
        for repetition in &self.repetitions {
            let (mine, after) = rest.split_at(repetition.samples);
            rest = after;
            if repetition.status == Status::Measured && !mine.is_empty() {
                slices.push(mine);
            }
        }
        Ok(slices)
    }

    /// The medians of its measured repetitions (the summary's, for a file without them).
    pub fn repetition_medians(&self) -> Vec<f64> {
        if self.repetitions.is_empty() {
            return self.summary.map(|s| s.median_ns).into_iter().collect();
        }
        self.repetitions
            .iter()
            .filter(|r| r.status == Status::Measured)
            .filter_map(|r| r.median_ns)
            .collect()
    }

    /// A benchmark not run, with the reason.
    pub fn skipped(key: Key, reason: impl Into<String>) -> BenchResult {
        BenchResult {
            status: Status::Skipped,
            reason: Some(reason.into()),
            ..BenchResult::from_key(key)
        }
    }

    /// A benchmark skipped as meaningless here (see [`BenchResult::inapplicable`]).
    pub fn inapplicable(key: Key, reason: impl Into<String>) -> BenchResult {
        BenchResult {
            inapplicable: true,
            ..BenchResult::skipped(key, reason)
        }
    }

    /// A benchmark that failed, with the reason.
    pub fn failed(key: Key, reason: impl Into<String>) -> BenchResult {
        BenchResult {
            status: Status::Failed,
            reason: Some(reason.into()),
            ..BenchResult::from_key(key)
        }
    }

    /// An empty measured result for `key`, to fill in.
    pub fn from_key(key: Key) -> BenchResult {
        BenchResult {
            id: key.id(),
            combination: key.combination,
            benchmark: key.benchmark.to_owned(),
            side: key.side,
            parameters: key.parameters,
            status: Status::Measured,
            reason: None,
            inapplicable: false,
            samples_ns: Vec::new(),
            samples_taken: None,
            summary: None,
            host_median_ns: None,
            throughput: None,
            pct_of_peak: None,
            pct_of_spec: None,
            in_l2: false,
            verified: None,
            cupti: None,
            telemetry: None,
            stopped_by: None,
            repetitions: Vec::new(),
            device: None,
            nccl: None,
            conditions: Vec::new(),
        }
    }

    /// The ordinal of the GPU it ran on, 0 for a result without one (a one-GPU run, whose
    /// device is 0 unless `--devices` named another): what `compare` matches devices by.
    pub fn device_index(&self) -> u32 {
        self.device.as_ref().map_or(0, |d| d.index)
    }

    /// Its id with the GPU it ran on where the run had several: `copy/c/.../batch on GPU 3`.
    pub fn label(&self) -> String {
        match &self.device {
            Some(d) => format!("{} on GPU {}", self.id, d.index),
            None => self.id.clone(),
        }
    }
}

/// What identifies a benchmark row: combination, benchmark and parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Key {
    pub combination: String,
    pub benchmark: &'static str,
    pub side: Side,
    pub parameters: Parameters,
}

impl Key {
    /// The criterion-style id: the benchmark, the combination, then each parameter given, in a
    /// fixed order (`matmul/pip:venv-cu12/cublas/bf16/8192/batch`).
    pub fn id(&self) -> String {
        let mut parts = vec![self.benchmark.to_owned(), self.combination.clone()];
        parts.extend(self.parameters.parts());
        parts.join("/")
    }
}

impl CombinationRun {
    /// Each library with its version: `cudart 12.9`, `cublas 12.9.1.4` (`?` when unknown).
    pub fn library_versions(&self) -> Vec<String> {
        self.libraries
            .iter()
            .map(|l| format!("{} {}", l.component, l.version.as_deref().unwrap_or("?")))
            .collect()
    }
}

impl BenchReport {
    /// Counts of measured, skipped and failed benchmarks.
    pub fn counts(&self) -> [usize; 3] {
        let count = |s: Status| self.benchmarks.iter().filter(|b| b.status == s).count();
        [
            count(Status::Measured),
            count(Status::Skipped),
            count(Status::Failed),
        ]
    }

    /// Whether the run exits 1: a benchmark failed, a GPU was the odd one out, a job across
    /// nodes found something or failed a check, or (unless `allow_skip`) a benchmark was
    /// skipped that could have run on this host's shape.
    pub fn fails(&self, allow_skip: bool) -> bool {
        let [_, _, failed] = self.counts();
        let missed =
            (self.benchmarks.iter()).any(|b| b.status == Status::Skipped && !b.inapplicable);
        let job = (self.job.as_ref()).is_some_and(|j| {
            !j.findings.is_empty()
                || (j.checks.iter()).any(|c| c.status == crate::schema::check::Status::Fail)
        });
        failed > 0 || !self.findings.is_empty() || job || (missed && !allow_skip)
    }

    /// Whether its GPU results are keyed by device: a run over several GPUs.
    pub fn multi_device(&self) -> bool {
        self.benchmarks.iter().any(|b| b.device.is_some())
    }

    /// Each result's GPU conditions' disturbances, once per GPU: `GPU 0: busy: 2 other
    /// processes (...)`; empty when every GPU was clean or none was read.
    pub fn disturbed_devices(&self) -> Vec<String> {
        let mut seen: Vec<(u32, String)> = Vec::new();
        for c in self.benchmarks.iter().flat_map(|b| &b.conditions) {
            if !c.disturbance().is_empty() && !seen.iter().any(|(i, _)| *i == c.before.index) {
                seen.push((c.before.index, c.short()));
            }
        }
        seen.into_iter()
            .map(|(index, text)| format!("GPU {index}: {text}"))
            .collect()
    }

    /// The model (NVML's name) of the GPU `device`: the run's GPU of the same UUID, else of the
    /// same ordinal; `unknown GPU` when NVML listed neither.
    pub fn gpu_model(&self, device: &DeviceKey) -> String {
        let same_uuid = |g: &&crate::gpu::Gpu| {
            let (Some(a), Some(b)) = (g.uuid.as_deref(), device.uuid.as_deref()) else {
                return false;
            };
            a.eq_ignore_ascii_case(b)
        };
        (self.gpu.devices.iter().find(same_uuid))
            .or_else(|| self.gpu.devices.iter().find(|g| g.index == device.index))
            .map_or_else(|| "unknown GPU".to_owned(), |g| g.name.clone())
    }
}

#[cfg(test)]
impl BenchReport {
    /// A run started at `started` of one benchmark `load` of combination `c` on `side`: one
    /// repetition of 20 samples within 0.2% of each of `medians`.
    pub(crate) fn of_repetitions(started: &str, side: Side, medians: &[f64]) -> BenchReport {
        let key = Key {
            combination: "c".into(),
            benchmark: "load",
            side,
            parameters: Parameters::default(),
        };
        let mut samples = Vec::new();
        let mut repetitions = Vec::new();
        for m in medians {
            let mine: Vec<f64> = (0..20)
                .map(|i| m * (1.0 + 0.001 * f64::from(i % 3)))
                .collect();
            repetitions.push(Repetition {
                status: Status::Measured,
                reason: None,
                samples: mine.len(),
                samples_taken: None,
                median_ns: crate::bench::stats::summarize(&mine).map(|s| s.median_ns),
                noise: None,
                stopped_by: None,
            });
            samples.extend(mine);
        }
        let result = BenchResult {
            summary: crate::bench::stats::summarize(&samples),
            samples_ns: samples,
            repetitions,
            ..BenchResult::from_key(key)
        };
        BenchReport {
            repeat: medians.len() as u32,
            started: started.into(),
            ..BenchReport::of(false, vec![result])
        }
    }

    /// A quick run of `benchmarks` for unit tests: one combination `c` (on the simulated
    /// driver or not), no GPU, host `h`, nothing else set.
    pub(crate) fn of(simulated: bool, benchmarks: Vec<BenchResult>) -> BenchReport {
        BenchReport {
            schema: crate::tags::BENCH_SCHEMA.into(),
            schema_minor: crate::tags::BENCH_SCHEMA_MINOR,
            run_id: None,
            repeat: 1,
            started: String::new(),
            host: HostInfo {
                hostname: "h".into(),
                os: "linux".into(),
                arch: "x86_64".into(),
                stackbench_version: "0".into(),
                boot_id: None,
            },
            gpu: crate::gpu::GpuInfo::none("test"),
            simulated,
            target: "sm_90".into(),
            driver_dir: None,
            quick: true,
            load_untrusted: false,
            allow_busy: false,
            clocks_locked: Vec::new(),
            combinations: vec![CombinationRun {
                name: "c".into(),
                simulated,
                ..CombinationRun::default()
            }],
            benchmarks,
            findings: Vec::new(),
            rerendered: None,
            job: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_read_like_criterion_ones() {
        let key = Key {
            combination: "pip:venv-cu12".into(),
            benchmark: "matmul",
            side: Side::Gpu,
            parameters: Parameters {
                size: Some(8192),
                precision: Some("bf16".into()),
                implementation: Some("cublas".into()),
                mode: Some(Mode::Batch),
                ..Parameters::default()
            },
        };
        assert_eq!(key.id(), "matmul/pip:venv-cu12/cublas/bf16/8192/batch");
        let result = BenchResult::skipped(key, "no GPU");
        assert_eq!(result.status, Status::Skipped);
        let json = serde_json::to_value(&result).unwrap();
        assert_eq!(json["parameters"]["mode"], "batch");
        assert!(json["parameters"].get("arch").is_none());
    }
}
