//! A node of several GPUs: what its GPUs and the links between them show together. `check`
//! probes it in a worker of its own (`stackbench __node`, [`worker`]) once the combinations
//! have run: NVML's topology, NVLinks and fabric state, the driver's peer access, and the copy
//! matrices ([`copies`]); [`findings`] reads the result, root cause first.

pub mod copies;
pub mod findings;
pub mod outlier;
pub mod worker;

use crate::schema::node::{Engine, NodeReport};
use crate::trust::Policy;
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

/// The GPUs of Grace superchips (the names the driver gives them), whose host memory is the
/// Grace CPU's, reached over NVLink-C2C: 900 GB/s both ways together, 450 GB/s each way (NVIDIA
/// GH200 Grace Hopper Superchip datasheet; GB200 NVL72 datasheet). Not PCIe's 64 GB/s (Gen5
/// x16): a host-device copy there is judged against C2C.
const C2C: [&str; 3] = [
    "NVIDIA GH200 480GB",
    "NVIDIA GH200 144G HBM3e",
    "NVIDIA GB200",
];

/// NVLink-C2C's bandwidth each way, GB/s.
const C2C_GBS: f64 = 450.0;

/// Each copy's nominal peak per direction: between two GPUs, the active NVLinks both ends
/// share, where NVML says the pair talks over NVLink; between a Grace superchip's GPU and the
/// host, NVLink-C2C. Elsewhere none is known.
fn add_peaks(report: &mut NodeReport) {
    let peaks: Vec<Option<f64>> = report
        .copies
        .iter()
        .map(|c| {
            if let (Some(gpu), None) | (None, Some(gpu)) = (c.src, c.dst) {
                let name = &report.device(gpu)?.name;
                return C2C.contains(&name.trim()).then_some(C2C_GBS);
            }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::node::{Copy, Engine, NodeDevice};

    fn host_copy(src: Option<u32>, dst: Option<u32>) -> Copy {
        Copy {
            engine: Engine::Ce,
            src,
            dst,
            both_ways: false,
            gbs: Some(400.0),
            verified: true,
            first_wrong_byte: None,
            peak_gbs: None,
            error: None,
        }
    }

    #[test]
    fn a_grace_superchip_s_host_copies_are_set_against_c2c_and_a_pcie_card_s_against_nothing() {
        let device = |index: u32, name: &str| NodeDevice {
            index,
            name: name.into(),
            ..NodeDevice::default()
        };
        let mut report = NodeReport {
            devices: vec![
                device(0, "NVIDIA GH200 480GB"),
                device(1, "NVIDIA H100 PCIe"),
            ],
            copies: vec![
                host_copy(None, Some(0)),
                host_copy(Some(0), None),
                host_copy(None, Some(1)),
            ],
            ..NodeReport::default()
        };
        add_peaks(&mut report);
        let peaks: Vec<Option<f64>> = report.copies.iter().map(|c| c.peak_gbs).collect();
        assert_eq!(peaks, [Some(450.0), Some(450.0), None]);
    }
}
