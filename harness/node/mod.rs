//! A node of several GPUs: what its GPUs and the links between them show together. `check`
//! probes it in a worker of its own (`stackbench __node`, [`worker`]) once the combinations
//! have run: NVML's topology, NVLinks and fabric state, the driver's peer access, and the copy
//! matrices ([`copies`]); [`findings`] reads the result, root cause first.

pub mod copies;
pub mod findings;
pub mod model;
pub mod outlier;
pub mod worker;

use crate::trust::Policy;
use model::{Engine, NodeReport};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::time::Duration;

/// What the node worker is asked.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct NodeRequest {
    /// CUDA ordinals, in PCI bus order.
    pub devices: Vec<u32>,
    /// Bytes per copy-engine copy.
    pub copy_bytes: usize,
    /// Bytes per SM copy.
    pub sm_bytes: usize,
    /// Timed repetitions of each copy (the median is kept).
    pub repeat: u32,
}

impl NodeRequest {
    /// Sizes that reach a link's bandwidth on a GPU (64 MiB a copy); on the simulator, whose
    /// time is a model and whose copies and kernels cost host time, small ones (its model's
    /// fixed cost per copy then shows in the figures, as a real copy's latency would).
    pub fn new(devices: Vec<u32>, simulated: bool) -> NodeRequest {
        let (copy_bytes, sm_bytes) = if simulated {
            (4 << 20, 512 << 10)
        } else {
            (64 << 20, 64 << 20)
        };
        NodeRequest {
            devices,
            copy_bytes,
            sm_bytes,
            repeat: 3,
        }
    }
}

/// Probes the node through `<worker> __node` with the driver of `driver_dir` (else the
/// system's), on the search path entries `trust` lets it use, within `timeout`; adds the links'
/// nominal peaks and the findings.
pub fn probe(
    worker: &Path,
    driver_dir: Option<&Path>,
    trust: &Policy,
    request: &NodeRequest,
    timeout: Duration,
) -> Result<NodeReport, String> {
    let json = serde_json::to_string(request).map_err(|e| e.to_string())?;
    let mut command = crate::process::worker_command(worker);
    command.arg("__node").arg(json).env(
        crate::devices::DEVICE_ORDER.0,
        crate::devices::DEVICE_ORDER.1,
    );
    crate::gpu::driver_search_path(&mut command, driver_dir, trust);
    let out = crate::process::output_within(command, None, crate::process::Sight::Node, timeout)
        .ok_or_else(|| {
            format!(
                "the node probe (stackbench __node) crashed or did not finish within {} s",
                timeout.as_secs()
            )
        })?;
    let mut report: NodeReport = serde_json::from_str(&out)
        .map_err(|e| format!("the node probe's answer could not be read: {e}"))?;
    add_peaks(&mut report);
    report.findings = findings::findings(&report);
    Ok(report)
}

/// GB/s per direction of one NVLink of `version`: 20 for NVLink 1, 25 for 2 to 4, 50 for 5.
pub fn nvlink_gbs(version: u32) -> f64 {
    match version {
        0 | 1 => 20.0,
        2..=4 => 25.0,
        _ => 50.0,
    }
}

/// Each device-to-device copy's nominal peak: the active NVLinks both ends share, where NVML
/// says the pair talks over NVLink.
fn add_peaks(report: &mut NodeReport) {
    let peaks: Vec<Option<f64>> = report
        .copies
        .iter()
        .map(|c| {
            let (a, b) = (c.src?, c.dst?);
            let pair = report.pair(a, b)?;
            if pair.nvml.nvlink.as_deref() != Some("ok") {
                return None;
            }
            let ends = [report.device(a)?, report.device(b)?];
            let links = ends.iter().map(|d| d.active_links()).min()?;
            let version = ends[0].nvlinks.iter().filter_map(|l| l.version).max()?;
            Some(links as f64 * nvlink_gbs(version))
        })
        .collect();
    for (copy, peak) in report.copies.iter_mut().zip(peaks) {
        copy.peak_gbs = peak;
    }
}

/// The child side: the request is the argument.
pub fn run_worker(request: &str) -> std::process::ExitCode {
    match serde_json::from_str::<NodeRequest>(request) {
        Ok(request) => worker::run(&request),
        Err(e) => {
            eprintln!("stackbench __node: cannot read the request: {e}");
            std::process::ExitCode::from(2)
        }
    }
}

impl NodeReport {
    /// Whether any copy arrived changed.
    pub fn corrupted(&self) -> bool {
        self.copies.iter().any(|c| c.gbs.is_some() && !c.verified)
    }

    /// The copy-engine figure of `src` -> `dst`, one way.
    pub fn ce_gbs(&self, src: Option<u32>, dst: Option<u32>) -> Option<f64> {
        self.copy(Engine::Ce, src, dst, false)?.gbs
    }
}
