//! The comparison's data model: the canonical shape of `stackbench.compare/v1`, which every
//! exporter renders. Fields are only ever added.

use super::stats::{Floor, Ratio, Verdict};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Two runs of one kind, set side by side.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CompareReport {
    pub schema: String,
    /// `bench`, `check`, `doctor` or `scan`.
    pub kind: String,
    /// The size a benchmark's change must exceed to count (0.02 is 2%), as `--threshold` set it
    /// for every row; absent by default, when each row takes its own from its noise floor's
    /// evidence (`benchmarks[].threshold`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold: Option<f64>,
    pub old: RunInfo,
    pub new: RunInfo,
    /// The driver change between the runs, when there is one: what a comparison across an
    /// upgrade says first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upgrade: Option<Upgrade>,
    /// What changed in the environment between the runs.
    pub environment: Vec<Change>,
    pub benchmarks: Vec<BenchmarkRow>,
    pub checks: Vec<CheckRow>,
    /// Findings (doctor) that appeared or disappeared.
    pub findings: Vec<Item>,
    /// Libraries (doctor, scan) that appeared or disappeared.
    pub libraries: Vec<Item>,
    /// Every change that counts against the new run under `--fail-on`, in words.
    pub regressions: Vec<String>,
}

impl CompareReport {
    /// Whether one run was on the simulated driver and the other on a GPU.
    pub fn simulated_vs_real(&self) -> bool {
        self.old.simulated != self.new.simulated
    }
}

/// The driver each run used, where they differ: the version (NVML's, else the driver library's
/// file name) and the kernel module a check run saw loaded.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Upgrade {
    pub old: String,
    pub new: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_module: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_module: Option<String>,
}

impl Upgrade {
    /// `driver 550.54.15 -> 580.95.05 (kernel module 550.54.15 -> 580.95.05)`.
    pub fn text(&self) -> String {
        let module = match (&self.old_module, &self.new_module) {
            (None, None) => String::new(),
            (old, new) => format!(
                " (kernel module {} -> {})",
                old.as_deref().unwrap_or("unknown"),
                new.as_deref().unwrap_or("unknown")
            ),
        };
        format!("driver {} -> {}{module}", self.old, self.new)
    }
}

/// Which run, from where.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RunInfo {
    #[serde(with = "crate::pathname")]
    pub path: PathBuf,
    pub started: Option<String>,
    pub hostname: String,
    /// It ran on stackbench's simulated driver. Absent (false) otherwise.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub simulated: bool,
}

/// One thing that differs between the runs' environments.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Change {
    /// `GPU`, `driver`, `stackbench`, `pip:venv-cu12 cublas version`, ...
    pub what: String,
    pub old: Option<String>,
    pub new: Option<String>,
}

/// One benchmark in both runs (or in one of them).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BenchmarkRow {
    pub id: String,
    pub combination: String,
    /// The GPU it ran on, in runs over several GPUs (the new run's, else the old's); absent
    /// otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<crate::devices::DeviceKey>,
    /// `measured`, `skipped`, `failed`; `None` when the run does not have it.
    pub old_status: Option<String>,
    pub new_status: Option<String>,
    pub old_median_ns: Option<f64>,
    pub new_median_ns: Option<f64>,
    /// New figure over old (each the geometric mean of its repetitions' medians), with its 99%
    /// two-level bootstrap interval held to the noise floor, when both were measured.
    pub ratio: Option<Ratio>,
    pub verdict: Option<Verdict>,
    /// The threshold this row was judged at, taken from its noise floor's evidence (the
    /// smallest change its variation between runs lets it call, never below 0.5%); absent when
    /// `--threshold` set one for every row (the report's `threshold`), or the row was not judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold: Option<f64>,
    /// The smallest change this row's interval could call at the threshold (0.024 is ±2.4%):
    /// what the comparison can see of this benchmark.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub could_see: Option<f64>,
    /// The SM clocks the two runs ran at differ by more than the threshold (their means during
    /// the samples; the highest, in runs that did not record a mean): a change may be the
    /// clocks', not the software's. A sample run throttled alone does not set it.
    pub clocks_differ: bool,
    /// Each run's mean SM clock during its samples, MHz, where recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_sm_clock_mhz: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_sm_clock_mhz: Option<f64>,
    /// Where a sample ran throttled or the clocks differ, and both runs recorded their clocks:
    /// the ratio in cycles (time × the mean SM clock during the samples, as nvbench's robust
    /// compare judges throttled kernels), and its verdict at the threshold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cycles: Option<Ratio>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cycles_verdict: Option<Verdict>,
    /// One run's combination ran on the simulated driver and the other's on a GPU: its change
    /// sets a model's figure against a GPU's, so it is shown with a note and never counted as
    /// a regression. Absent (false) otherwise.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub simulated_vs_real: bool,
    /// Each side's figure, ns: the geometric mean of its repetitions' medians (the median, for
    /// one repetition), which `ratio` sets against each other.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_figure_ns: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_figure_ns: Option<f64>,
    /// The measured repetitions behind each side's figure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_repetitions: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_repetitions: Option<usize>,
    /// Where `--results` holds at least two earlier runs of each compared run's environment and
    /// the two differ (a driver upgrade): the runs of each environment judged together, old
    /// and new, the compared runs among them. Their ratio is of the environments' mean figures,
    /// its interval Student's t on the runs' own spread; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment_runs: Option<(usize, usize)>,
    /// The noise floor the interval was held to, and where it came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub floor: Option<Floor>,
    /// The floor, not the runs' own variation, set the interval (on either side).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub floor_set: bool,
    /// Why an `unclear` row is unclear, and what would settle it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// An NCCL row's bus bandwidth in each run (nccl-tests' busbw, GB/s): its time rising is
    /// its busbw falling. Absent for the other benchmarks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_busbw_gbps: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_busbw_gbps: Option<f64>,
    /// What disturbed its GPU in either run, by run: `new run: busy: 2 other processes (...)`.
    /// Its verdict says what the figures did, not what the software did: a `slower` or
    /// `unclear` row with it is not a regression unless `--fail-on disturbed`. Absent when both
    /// runs measured it on a clean GPU, or read no GPU state (files before bench schema 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disturbed: Option<String>,
}

impl BenchmarkRow {
    /// An NCCL row's busbw in both runs: `busbw 400.92 → 267.31 GB/s`; `None` for the others.
    pub fn busbw(&self) -> Option<String> {
        let side = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v:.2}"));
        (self.old_busbw_gbps.is_some() || self.new_busbw_gbps.is_some()).then(|| {
            format!(
                "busbw {} → {} GB/s",
                side(self.old_busbw_gbps),
                side(self.new_busbw_gbps)
            )
        })
    }

    /// Its id, with its GPU where it has one: `copy/c/driver/1073741824/batch on GPU 3
    /// (GPU-..., 0000:3d:00.0)`.
    pub fn label(&self) -> String {
        match &self.device {
            Some(d) => format!("{} on {}", self.id, crate::bench::node::gpu_name(d)),
            None => self.id.clone(),
        }
    }
}

/// How a check changed.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum CheckChange {
    /// It passed (or warned) before and fails now.
    Regression,
    /// It failed before and passes (or warns) now.
    Fixed,
    /// It failed in both, for a different reason.
    NewReason,
    /// Another status otherwise: a pass that is now a warning, a skip that now runs and fails.
    Status,
    /// Only in the new run.
    Appeared,
    /// Only in the old run.
    Disappeared,
}

/// One check whose outcome differs between the runs.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CheckRow {
    pub combination: String,
    pub id: String,
    pub change: CheckChange,
    pub old_status: Option<String>,
    pub new_status: Option<String>,
    pub old_reason: Option<String>,
    pub new_reason: Option<String>,
}

/// Something present in one run only.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Item {
    /// `appeared` or `disappeared`.
    pub change: String,
    /// `error missing_runtime_dependency libcudnn_ops.so.9 (/opt/...)`, `cublasLt 12.9.1 /usr/...`.
    pub what: String,
}
