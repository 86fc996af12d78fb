//! `--devices`: which GPUs `check` and `bench` run on, named by CUDA ordinal, UUID or PCI bus
//! id, resolved against the GPUs NVML lists.
//!
//! Ordinals are the CUDA ordinals of the workers, which run with `CUDA_DEVICE_ORDER=PCI_BUS_ID`
//! so that they count devices as NVML and `nvidia-smi` do (CUDA's default puts the fastest
//! first). Every per-device result records the UUID and bus id the worker itself saw, so a
//! result is keyed right whatever the numbering.

use crate::gpu::{normal_bus_id, GpuInfo};
use serde::{Deserialize, Serialize};

/// What the workers are told about device numbering.
pub const DEVICE_ORDER: (&str, &str) = ("CUDA_DEVICE_ORDER", "PCI_BUS_ID");

/// The devices asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeviceChoice {
    /// Every GPU NVML lists (device 0 when it lists none: the worker says why there is none).
    All,
    /// These, each an ordinal, a UUID (`GPU-...`, the prefix optional) or a PCI bus id.
    Listed(Vec<String>),
}

/// One device of a run, as every format keys its results.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceKey {
    /// The CUDA ordinal (in PCI bus order).
    pub index: u32,
    /// `GPU-xxxxxxxx-...`, as `nvidia-smi -L` shows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    /// `0000:17:00.0`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pci_bus_id: Option<String>,
}

/// A name in `--devices` that is no device of this host.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("--devices {name}: no such GPU; this host has {available}; name devices by ordinal (0,3), UUID (GPU-...) or PCI bus id (0000:17:00.0), or give --devices all")]
pub struct NoSuchDevice {
    pub name: String,
    pub available: String,
}

impl DeviceChoice {
    /// `all`, or a comma-separated list; an empty entry is an error.
    pub fn parse(text: &str) -> Result<DeviceChoice, String> {
        if text.trim().eq_ignore_ascii_case("all") {
            return Ok(DeviceChoice::All);
        }
        let names: Vec<String> = text.split(',').map(|n| n.trim().to_owned()).collect();
        if names.iter().any(String::is_empty) {
            return Err(format!(
                "--devices {text}: give `all` or a comma-separated list of ordinals, UUIDs or PCI bus ids, e.g. --devices 0,3"
            ));
        }
        Ok(DeviceChoice::Listed(names))
    }

    /// The one device `--device N` names.
    pub fn one(ordinal: u32) -> DeviceChoice {
        DeviceChoice::Listed(vec![ordinal.to_string()])
    }

    /// The ordinals chosen, in the order given (all: NVML's order), each once.
    pub fn resolve(&self, gpu: &GpuInfo) -> Result<Vec<u32>, NoSuchDevice> {
        let known = gpu.listed_by_nvml();
        let mut chosen = Vec::new();
        match self {
            DeviceChoice::All if known => chosen.extend(gpu.devices.iter().map(|d| d.index)),
            DeviceChoice::All => chosen.push(0),
            DeviceChoice::Listed(names) => {
                for name in names {
                    let index = find(name, gpu, known).ok_or_else(|| NoSuchDevice {
                        name: name.clone(),
                        available: available(gpu, known),
                    })?;
                    if !chosen.contains(&index) {
                        chosen.push(index);
                    }
                }
            }
        }
        Ok(chosen)
    }
}

/// The ordinal `name` stands for: a number (any, when NVML lists no GPU to hold it to), a UUID
/// or a bus id of a GPU NVML lists.
fn find(name: &str, gpu: &GpuInfo, known: bool) -> Option<u32> {
    if let Ok(index) = name.parse::<u32>() {
        return (!known || gpu.devices.iter().any(|d| d.index == index)).then_some(index);
    }
    let uuid = name.to_ascii_lowercase();
    let uuid = uuid.strip_prefix("gpu-").unwrap_or(&uuid);
    let bus = normal_bus_id(name);
    gpu.devices
        .iter()
        .find(|d| {
            let same_uuid = d.uuid.as_deref().is_some_and(|u| {
                let u = u.to_ascii_lowercase();
                u.strip_prefix("gpu-").unwrap_or(&u) == uuid
            });
            let same_bus = bus.is_some() && d.pci_bus_id.as_deref().and_then(normal_bus_id) == bus;
            same_uuid || same_bus
        })
        .map(|d| d.index)
}

/// What the host has, for the error.
fn available(gpu: &GpuInfo, known: bool) -> String {
    if !known {
        return "no GPU NVML can list".to_owned();
    }
    let listed: Vec<String> = gpu
        .devices
        .iter()
        .map(|d| {
            let uuid = d.uuid.as_deref().unwrap_or("no UUID");
            format!("{} ({uuid})", d.index)
        })
        .collect();
    listed.join(", ")
}

/// A PCI bus id as dcgm-exporter and NVML label it (`00000000:1B:00.0`), from any form
/// [`normal_bus_id`] reads, so that our series join dcgm-exporter's; what is not a bus id is
/// kept, upper-cased.
pub fn dcgm_bus_id(text: &str) -> String {
    match normal_bus_id(text) {
        Some(normal) => {
            let upper = normal.to_ascii_uppercase();
            let (domain, rest) = upper.split_once(':').unwrap_or(("0", &upper));
            format!("{domain:0>8}:{rest}")
        }
        None => text.trim().to_ascii_uppercase(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::Gpu;

    fn node(count: u32) -> GpuInfo {
        GpuInfo {
            source: "nvml".into(),
            devices: (0..count)
                .map(|index| Gpu {
                    index,
                    name: "H100".into(),
                    compute_capability: "9.0".into(),
                    uuid: Some(format!("GPU-0000000{index}-aaaa-bbbb-cccc-dddddddddddd")),
                    pci_bus_id: Some(format!("00000000:{:02X}:00.0", 0x17 + 0x13 * index)),
                    memory_bytes: None,
                    memory_clock_mhz: None,
                })
                .collect(),
            driver_version: None,
            note: None,
        }
    }

    #[test]
    fn bus_ids_read_as_dcgm_exporter_writes_them() {
        assert_eq!(dcgm_bus_id("0000:1b:00.0"), "00000000:1B:00.0");
        assert_eq!(dcgm_bus_id("00000000:1B:00.0"), "00000000:1B:00.0");
        assert_eq!(dcgm_bus_id("1b:00.0"), "00000000:1B:00.0");
        assert_eq!(dcgm_bus_id("garbage"), "GARBAGE");
    }

    #[test]
    fn all_is_every_gpu_nvml_lists_and_device_zero_without_one() {
        assert_eq!(DeviceChoice::All.resolve(&node(4)), Ok(vec![0, 1, 2, 3]));
        assert_eq!(
            DeviceChoice::All.resolve(&GpuInfo::none("no NVML")),
            Ok(vec![0])
        );
    }

    #[test]
    fn devices_by_ordinal_uuid_and_bus_id_in_the_order_given_each_once() {
        let choice =
            DeviceChoice::parse("3, GPU-00000001-AAAA-bbbb-cccc-dddddddddddd,0000:3d:00.0,3")
                .unwrap();
        assert_eq!(choice.resolve(&node(4)), Ok(vec![3, 1, 2]));
        let short = DeviceChoice::parse("00000001-aaaa-bbbb-cccc-dddddddddddd,2a:00.0").unwrap();
        assert_eq!(short.resolve(&node(4)), Ok(vec![1]));
    }

    #[test]
    fn a_device_the_host_lacks_is_an_error_naming_what_it_has() {
        let error = DeviceChoice::one(7).resolve(&node(2)).unwrap_err();
        assert_eq!(error.name, "7");
        assert!(error.available.starts_with("0 (GPU-00000000"), "{error}");
        assert!(DeviceChoice::parse("0,,1").is_err());
        assert_eq!(
            DeviceChoice::one(5).resolve(&GpuInfo::none("no NVML")),
            Ok(vec![5])
        );
    }
}
