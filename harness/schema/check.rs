//! The check report's data model: the canonical shape of `stackbench.check/v1`, which every
//! exporter renders. Fields are only ever added.

use crate::devices::DeviceKey;
use crate::gpu::GpuInfo;
use crate::model::{HostInfo, Layout};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Everything one `stackbench check` run found.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CheckReport {
    pub schema: String,
    /// When the run started, RFC 3339 in UTC.
    pub started: String,
    pub host: HostInfo,
    /// The GPUs (NVML) and the kernel driver's version: the environment's fingerprint.
    pub gpu: GpuInfo,
    /// True when any combination ran on stackbench's simulated driver (`tests/simgpu`): its
    /// results say nothing of a real GPU. Absent (false) otherwise.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub simulated: bool,
    /// `--target`, the architecture compiled for when there is no device (`sm_90`).
    pub target: Option<String>,
    /// `--driver-dir`, when the driver's libraries were taken from there.
    #[serde(default, with = "crate::pathname::option")]
    pub driver_dir: Option<PathBuf>,
    /// `--load-untrusted`: libraries were loaded whoever could write them, as ourselves.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub load_untrusted: bool,
    pub combinations: Vec<CombinationReport>,
    /// The node: its GPUs' links and fabric, peer access, copy matrices and findings; absent
    /// without a GPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<crate::schema::node::NodeReport>,
    /// `--baseline`: the node's copies against its fleet's; absent without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<crate::schema::judgement::Judgement>,
}

/// One combination (a driver plus one installation's libraries) and its checks.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CombinationReport {
    /// Unique within the run; what `--combination` selects (`pip:venv-cu12`).
    pub name: String,
    /// Where the combination came from.
    pub origin: Origin,
    /// The installation's root, for combinations made from one.
    #[serde(default, with = "crate::pathname::option")]
    pub root: Option<PathBuf>,
    pub layout: Option<Layout>,
    /// The CUDA version of its runtime (`cudaRuntimeGetVersion`, else the installation's).
    pub cuda_version: Option<String>,
    /// The `LD_LIBRARY_PATH` its worker ran with (the pinning directory left out).
    pub search_path: String,
    /// The driver library it used, as a program of it would find it.
    pub driver: Option<DriverUse>,
    /// Every CUDA library involved: the ones a program resolves and each one actually mapped.
    pub libraries: Vec<LibraryUse>,
    pub checks: Vec<CheckResult>,
    /// Wall-clock time for the whole combination.
    pub duration_ms: f64,
    /// True when its driver was stackbench's simulated one (`driver.library` found
    /// `stackbenchSimulated`). Absent (false) otherwise.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub simulated: bool,
    /// The user its workers ran as when not stackbench's own (`alice (uid 1000)`): the owner
    /// of its files, when stackbench runs as root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loaded_as: Option<String>,
    /// When its workers ran as another user: the names of the variables of ours their
    /// environment kept (the allow-list's; never their values).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub environment: Vec<String>,
    /// Search-path entries its workers were not given, and why (the trust rule).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<crate::trust::LeftOut>,
}

/// How a combination came to be checked.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// One installation the scan found, with the host's driver.
    Installation,
    /// A `[[combination]]` of `stackbench.toml`.
    Config,
}

/// The driver's `libcuda.so.1` as a combination used it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DriverUse {
    /// As found (`--driver-dir`, or the loader's search).
    #[serde(with = "crate::pathname")]
    pub path: PathBuf,
    #[serde(with = "crate::pathname")]
    pub real_path: PathBuf,
    /// The driver version from the file's name (`535.261.03`).
    pub version: Option<String>,
    /// The loaded kernel module's version (`/proc/driver/nvidia/version`), beside the
    /// user-space driver's: after an upgrade without a reboot the two differ. Absent when the
    /// host shows no module.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_module: Option<String>,
}

/// One CUDA library of a combination.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LibraryUse {
    /// The component (`cudart`, `cublasLt`, `cudnn_ops`).
    pub component: String,
    /// Its soname (`libcudart.so.12`), or the file name.
    pub name: String,
    /// Its version, from its own API where the worker asked it (`12.9`), else from its file.
    pub version: Option<String>,
    /// Where a program of the combination finds it; `None` for a library only the worker saw
    /// mapped (a dependency such as `libcublasLt.so.12` or a cuDNN sub-library).
    #[serde(default, with = "crate::pathname::option")]
    pub resolved: Option<PathBuf>,
    /// The file the worker actually mapped, canonical; `None` if it was never mapped.
    #[serde(default, with = "crate::pathname::option")]
    pub mapped: Option<PathBuf>,
    /// False when it was mapped from outside the combination's directories.
    pub inside: bool,
}

/// The result of one check.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CheckResult {
    /// `<library>.<check>`: `cublas.sgemm`, `driver.init`.
    pub id: String,
    /// The group it belongs to: `driver`, `cudart`, `nvrtc`, `cublas`, ...
    pub library: String,
    pub status: Status,
    /// Why, always; for a failure the call, the error's name and its text.
    pub reason: String,
    pub duration_ms: f64,
    /// What the check measured or saw (versions, errors, devices).
    #[serde(default)]
    pub details: BTreeMap<String, serde_json::Value>,
    /// The GPU a per-device check ran on, in a run over several; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<DeviceKey>,
}

/// A check's verdict. A skip never counts as a pass.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Pass,
    Warn,
    Skip,
    Fail,
}

impl Status {
    /// The stable name, as in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Warn => "warn",
            Status::Skip => "skip",
            Status::Fail => "fail",
        }
    }

    /// Whether a check that needs this one can run.
    pub fn satisfies(self) -> bool {
        matches!(self, Status::Pass | Status::Warn)
    }
}

impl CheckResult {
    /// Its id, with the GPU it ran on in a run over several: `cublas.sgemm [GPU 3]`.
    pub fn label(&self) -> String {
        match &self.device {
            Some(device) => format!("{} [GPU {}]", self.id, device.index),
            None => self.id.clone(),
        }
    }
}

impl CheckReport {
    /// True when any check of any combination failed, the node has a finding, or a copy
    /// between its GPUs arrived changed.
    pub fn has_failures(&self) -> bool {
        self.checks().any(|c| c.status == Status::Fail)
            || self
                .node
                .as_ref()
                .is_some_and(|n| !n.findings.is_empty() || n.corrupted())
            || (self.baseline.iter()).any(|j| j.slower().next().is_some())
    }

    /// Every check of every combination.
    pub fn checks(&self) -> impl Iterator<Item = &CheckResult> {
        self.combinations.iter().flat_map(|c| c.checks.iter())
    }

    /// The checks by library: each library in the order it first appears, with its check ids
    /// in order of first appearance (the spec's order). The matrix's rows.
    pub fn check_groups(&self) -> Vec<(&str, Vec<&str>)> {
        let mut groups: Vec<(&str, Vec<&str>)> = Vec::new();
        for check in self.checks() {
            let at = match groups
                .iter()
                .position(|(library, _)| *library == check.library)
            {
                Some(at) => at,
                None => {
                    groups.push((&check.library, Vec::new()));
                    groups.len() - 1
                }
            };
            let ids = &mut groups[at].1;
            if !ids.contains(&check.id.as_str()) {
                ids.push(&check.id);
            }
        }
        groups
    }

    /// How many checks have each status: pass, warn, skip, fail.
    pub fn counts(&self) -> [usize; 4] {
        let mut counts = [0; 4];
        for check in self.checks() {
            counts[check.status as usize] += 1;
        }
        counts
    }
}

impl CombinationReport {
    /// Whether its checks ran on a simulated driver, by `driver.library`'s details.
    pub fn ran_simulated(checks: &[CheckResult]) -> bool {
        checks.iter().any(|c| {
            c.id == "driver.library" && c.details.get("simulated") == Some(&serde_json::json!(true))
        })
    }

    /// The result of check `id`, if it ran; of a per-device check run on several GPUs, the
    /// worst (the first of equals), so that one failing GPU shows.
    pub fn check(&self, id: &str) -> Option<&CheckResult> {
        self.checks
            .iter()
            .filter(|c| c.id == id)
            .reduce(|worst, c| if c.status > worst.status { c } else { worst })
    }
}
