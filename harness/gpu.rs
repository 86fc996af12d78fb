//! Which GPUs the host has, from NVML, asked in a helper process so a broken driver cannot
//! take stackbench down; or the `--target` the user named.

use crate::compat::ComputeCapability;
use crate::trust::Policy;
use nvml_wrapper::enum_wrappers::device::Clock;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// How long NVML may take to answer.
const NVML_TIMEOUT: Duration = Duration::from_secs(15);

/// The GPUs checked against, and where that knowledge came from.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct GpuInfo {
    /// `nvml`, `target` (from `--target`) or `none`.
    pub source: String,
    pub devices: Vec<Gpu>,
    /// The kernel driver's version, as NVML reports it.
    pub driver_version: Option<String>,
    /// Why there is no device, when there is none.
    pub note: Option<String>,
}

/// One GPU.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Gpu {
    pub index: u32,
    pub name: String,
    /// `9.0`
    pub compute_capability: String,
    /// `GPU-xxxxxxxx-...`, as `nvidia-smi -L` shows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    /// `0000:17:00.0`, as `cuDeviceGetPCIBusId` writes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pci_bus_id: Option<String>,
    /// Total memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_bytes: Option<u64>,
    /// The memory clock it runs at when busy, MHz (NVML's maximum memory clock): a floor
    /// learned at one memory clock says nothing of runs at another.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_clock_mhz: Option<u32>,
}

impl GpuInfo {
    /// Whether NVML listed the GPUs, at least one: the devices are known, not assumed.
    pub fn listed_by_nvml(&self) -> bool {
        self.source == "nvml" && !self.devices.is_empty()
    }

    /// The capability to check GPU code against: the first device's.
    pub fn compute_capability(&self) -> Option<ComputeCapability> {
        self.devices
            .first()
            .and_then(|d| ComputeCapability::parse(&d.compute_capability))
    }

    /// A GPU named with `--target`.
    pub fn target(cc: ComputeCapability) -> GpuInfo {
        GpuInfo {
            source: "target".into(),
            devices: vec![Gpu {
                index: 0,
                name: "--target".into(),
                compute_capability: format!("{}.{}", cc.major, cc.minor),
                uuid: None,
                pci_bus_id: None,
                memory_bytes: None,
                memory_clock_mhz: None,
            }],
            driver_version: None,
            note: None,
        }
    }

    /// No device known, and why.
    pub fn none(note: impl Into<String>) -> GpuInfo {
        GpuInfo {
            source: "none".into(),
            note: Some(note.into()),
            ..GpuInfo::default()
        }
    }
}

/// Asks NVML through `<worker> __gpu` (a stackbench executable) in a child process, which
/// searches only the `LD_LIBRARY_PATH` entries `trust` lets it.
pub fn detect(worker: &Path, trust: &Policy) -> GpuInfo {
    detect_with(worker, None, trust)
}

/// [`detect`], with the NVML of `driver_dir` (found first on the child's search path) when given.
pub fn detect_with(worker: &Path, driver_dir: Option<&Path>, trust: &Policy) -> GpuInfo {
    let mut command = crate::process::worker_command(worker);
    command.arg("__gpu");
    driver_search_path(&mut command, driver_dir, trust);
    match crate::process::output_within(command, None, crate::process::Sight::Node, NVML_TIMEOUT)
        .and_then(|out| serde_json::from_str(&out).ok())
    {
        Some(info) => info,
        None => GpuInfo::none("NVML did not answer (crashed or hung)"),
    }
}

/// Gives `command` the search path a driver helper needs: `driver_dir` first when given, then
/// our own `LD_LIBRARY_PATH`, of which only the entries `trust` lets it search.
pub fn driver_search_path(command: &mut Command, driver_dir: Option<&Path>, trust: &Policy) {
    let environment = std::env::var("LD_LIBRARY_PATH").unwrap_or_default();
    let search_path = match driver_dir {
        Some(dir) if environment.is_empty() => dir.display().to_string(),
        Some(dir) => format!("{}:{environment}", dir.display()),
        None => environment,
    };
    match trust.own_search_path(&search_path) {
        path if path.is_empty() => command.env_remove("LD_LIBRARY_PATH"),
        path => command.env("LD_LIBRARY_PATH", path),
    };
}

/// The child side: asks NVML and prints the answer as JSON.
pub fn report_from_nvml() -> std::process::ExitCode {
    let info = match nvml_wrapper::Nvml::init() {
        Err(e) => GpuInfo::none(format!(
            "no NVML ({e}); give --target sm_XX to check GPU code"
        )),
        Ok(nvml) => {
            let count = nvml.device_count().unwrap_or(0);
            let devices: Vec<Gpu> = (0..count)
                .filter_map(|index| {
                    let device = nvml.device_by_index(index).ok()?;
                    let cc = device.cuda_compute_capability().ok()?;
                    Some(Gpu {
                        index,
                        name: device.name().unwrap_or_default(),
                        compute_capability: format!("{}.{}", cc.major, cc.minor),
                        uuid: device.uuid().ok(),
                        pci_bus_id: device
                            .pci_info()
                            .ok()
                            .and_then(|p| normal_bus_id(&p.bus_id)),
                        memory_bytes: device.memory_info().ok().map(|m| m.total),
                        memory_clock_mhz: device.max_clock_info(Clock::Memory).ok(),
                    })
                })
                .collect();
            let note = devices.is_empty().then(|| "NVML found no GPU".to_string());
            GpuInfo {
                source: "nvml".into(),
                devices,
                driver_version: nvml.sys_driver_version().ok(),
                note,
            }
        }
    };
    match serde_json::to_string(&info) {
        Ok(json) => {
            println!("{json}");
            std::process::ExitCode::SUCCESS
        }
        Err(_) => std::process::ExitCode::from(2),
    }
}

/// A PCI bus id as `cuDeviceGetPCIBusId` writes it (`0000:17:00.0`), from NVML's
/// `00000000:17:00.0`, any case, or a short `17:00.0`; `None` for what is not one.
pub fn normal_bus_id(text: &str) -> Option<String> {
    let text = text.trim().to_ascii_lowercase();
    let mut parts: Vec<&str> = text.split(':').collect();
    if parts.len() == 2 {
        parts.insert(0, "0");
    }
    let [domain, bus, rest] = parts[..] else {
        return None;
    };
    let (device, function) = rest.split_once('.')?;
    let hex = |s: &str, max: u32| u32::from_str_radix(s, 16).ok().filter(|v| *v <= max);
    Some(format!(
        "{:04x}:{:02x}:{:02x}.{:x}",
        hex(domain, 0xffff_ffff)?,
        hex(bus, 0xff)?,
        hex(device, 0x1f)?,
        hex(function, 7)?
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bus_ids_in_every_spelling_are_one() {
        assert_eq!(
            normal_bus_id("00000000:17:00.0").as_deref(),
            Some("0000:17:00.0")
        );
        assert_eq!(normal_bus_id("17:00.0").as_deref(), Some("0000:17:00.0"));
        assert_eq!(normal_bus_id("GPU-1234"), None);
        assert_eq!(normal_bus_id("0000:1ff:00.0"), None);
    }
}
