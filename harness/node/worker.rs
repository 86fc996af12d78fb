//! The child side of the node probe (`stackbench __node`): asks NVML and the driver about the
//! selected GPUs and the pairs between them, measures the copy matrices, and prints the
//! [`NodeReport`] (without findings) as JSON on standard output.

use super::copies;
use super::NodeRequest;
use crate::probe::dl::Library;
use crate::schema::node::{Fabric, NodeDevice, NodePair, NodeReport, NvLink, P2pStatus};
use cudarc::driver::sys::{self, CUdevice_P2PAttribute, CUresult};
use nvml_wrapper::enum_wrappers::device::{P2pCapabilitiesIndex, TopologyLevel};
use nvml_wrapper::{Device, Nvml};
use std::ffi::c_int;
use std::process::ExitCode;

/// NVML's most links per GPU (`NVML_NVLINK_MAX_LINKS`).
const MAX_LINKS: u32 = 18;

/// Probes what `request` names and prints the report.
pub fn run(request: &NodeRequest) -> ExitCode {
    let mut report = NodeReport {
        copy_bytes: request.copy_bytes as u64,
        ..NodeReport::default()
    };
    match Nvml::init() {
        Ok(nvml) => nvml_facts(&nvml, &request.devices, &mut report),
        Err(e) => {
            report.notes.push(format!("NVML: {e}"));
            report.devices = (request.devices.iter())
                .map(|&index| NodeDevice {
                    index,
                    ..NodeDevice::default()
                })
                .collect();
        }
    }
    match copies::Node::open(&request.devices, true) {
        Ok(node) => {
            driver_facts(&node, &mut report);
            copies::measure(&node, request, &mut report);
        }
        Err(e) => report.notes.push(format!("driver: {e}")),
    }
    match serde_json::to_string(&report) {
        Ok(json) => {
            println!("{json}");
            ExitCode::SUCCESS
        }
        Err(_) => ExitCode::from(2),
    }
}

/// Each device's links and fabric, each pair's topology and P2P status, from NVML.
fn nvml_facts(nvml: &Nvml, indices: &[u32], report: &mut NodeReport) {
    let handles: Vec<(u32, Option<Device>)> = indices
        .iter()
        .map(|&i| (i, nvml.device_by_index(i).ok()))
        .collect();
    for (index, device) in &handles {
        let mut node = NodeDevice {
            index: *index,
            ..NodeDevice::default()
        };
        if let Some(device) = device {
            node.name = device.name().unwrap_or_default();
            node.uuid = device.uuid().ok();
            node.pci_bus_id =
                (device.pci_info().ok()).and_then(|p| crate::gpu::normal_bus_id(&p.bus_id));
            node.numa_node = node.pci_bus_id.as_deref().and_then(sysfs_numa_node);
            node.nvlinks = nvlinks(device);
            node.fabric = fabric(device);
        }
        report.devices.push(node);
    }
    for (i, (a, da)) in handles.iter().enumerate() {
        for (b, db) in &handles[i + 1..] {
            let mut pair = NodePair {
                a: *a.min(b),
                b: *a.max(b),
                ..NodePair::default()
            };
            if let (Some(da), Some(db)) = (da, db) {
                pair.topology = (nvml.device_by_index(*b).ok())
                    .and_then(|other| da.topology_common_ancestor(other).ok())
                    .map(level_name);
                let status = |index| {
                    da.p2p_status(db, index)
                        .ok()
                        .map(|s| snake(&format!("{s:?}")))
                };
                pair.nvml = P2pStatus {
                    read: status(P2pCapabilitiesIndex::Read),
                    write: status(P2pCapabilitiesIndex::Write),
                    nvlink: status(P2pCapabilitiesIndex::NvLink),
                    atomics: status(P2pCapabilitiesIndex::Atomics),
                };
            }
            report.pairs.push(pair);
        }
    }
}

/// The GPU's NVLinks, until NVML says there are no more; none on a GPU without NVLink.
fn nvlinks(device: &Device) -> Vec<NvLink> {
    let mut links = Vec::new();
    for link in 0..MAX_LINKS {
        let wrapper = device.link_wrapper_for(link);
        let Ok(active) = wrapper.is_active() else {
            break;
        };
        links.push(NvLink {
            link,
            active,
            version: wrapper.version().ok(),
            remote_pci_bus_id: (wrapper.remote_pci_info().ok())
                .and_then(|p| crate::gpu::normal_bus_id(&p.bus_id)),
        });
    }
    links
}

/// `nvmlGpuFabricInfo_v3_t`, as NVML 12.4 and later define it.
#[repr(C)]
struct FabricInfoV3 {
    version: u32,
    cluster_uuid: [u8; 16],
    status: c_int,
    clique_id: u32,
    state: u8,
    health_mask: u32,
    health_summary: u8,
}

/// The GPU fabric's state, through `nvmlDeviceGetGpuFabricInfoV` looked up by hand (older
/// NVMLs lack it; nvml-wrapper does not bind it); `None` where there is no such call, it
/// fails, or the GPU is in no fabric.
fn fabric(device: &Device) -> Option<Fabric> {
    type GetFabric = unsafe extern "C" fn(*mut libc::c_void, *mut FabricInfoV3) -> c_int;
    // SAFETY: NVML's function of this prototype (nvml.h), when its library exports it.
    let get: GetFabric =
        unsafe { Library::loaded(c"libnvidia-ml.so.1")?.function(c"nvmlDeviceGetGpuFabricInfoV")? };
    let mut info = FabricInfoV3 {
        version: std::mem::size_of::<FabricInfoV3>() as u32 | (3 << 24),
        cluster_uuid: [0; 16],
        status: 0,
        clique_id: 0,
        state: 0,
        health_mask: 0,
        health_summary: 0,
    };
    // SAFETY: a live device handle, and a struct of the version its field names.
    let result = unsafe { get(device.handle().cast(), &mut info) };
    let state = match info.state {
        1 => "not_started",
        2 => "in_progress",
        3 => "completed",
        _ => return None,
    };
    (result == 0).then(|| Fabric {
        state: state.to_owned(),
        status: info.status,
        clique_id: info.clique_id,
        cluster_uuid: info
            .cluster_uuid
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect(),
    })
}

/// `/sys/bus/pci/devices/<bus id>/numa_node`, when it names one (`-1`: none).
fn sysfs_numa_node(bus_id: &str) -> Option<i32> {
    let path = format!("/sys/bus/pci/devices/{bus_id}/numa_node");
    let node: i32 = crate::hostfs::read_to_string(std::path::Path::new(&path), crate::hostfs::TEXT)
        .ok()?
        .trim()
        .parse()
        .ok()?;
    (node >= 0).then_some(node)
}

/// What the driver says of each ordered pair, and peer access enabled where it allows.
fn driver_facts(node: &copies::Node, report: &mut NodeReport) {
    for device in &mut report.devices {
        if device.numa_node.is_none() {
            device.numa_node = node.numa_node(device.index);
        }
    }
    for pair in &mut report.pairs {
        let (a, b) = (pair.a, pair.b);
        pair.can_access = [node.can_access(a, b), node.can_access(b, a)];
        pair.performance_rank = node.p2p_attribute(
            a,
            b,
            CUdevice_P2PAttribute::CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK,
        );
        pair.native_atomics = node
            .p2p_attribute(
                a,
                b,
                CUdevice_P2PAttribute::CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED,
            )
            .map(|v| v != 0);
        let errors: Vec<String> = [(a, b), (b, a)]
            .into_iter()
            .filter_map(|(from, to)| node.enable_peer(from, to).err())
            .collect();
        pair.enable_error = (!errors.is_empty()).then(|| errors.join("; "));
    }
}

/// NVML's topology level by its stable name.
fn level_name(level: TopologyLevel) -> String {
    snake(&format!("{level:?}"))
}

/// `NotSupported` -> `not_supported`.
fn snake(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

/// A driver call's status as a result naming the call and the error.
pub(crate) fn call(name: &str, status: CUresult) -> Result<(), String> {
    if status == CUresult::CUDA_SUCCESS {
        return Ok(());
    }
    let mut text: *const std::ffi::c_char = std::ptr::null();
    // SAFETY: cuGetErrorName writes a pointer to a static string, or leaves it null.
    unsafe { sys::cuGetErrorName(status, &mut text) };
    let error = if text.is_null() {
        format!("{status:?}")
    } else {
        // SAFETY: a NUL-terminated static string from the driver.
        unsafe { std::ffi::CStr::from_ptr(text) }
            .to_string_lossy()
            .into_owned()
    };
    Err(format!("{name}: {error}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_snake_case() {
        assert_eq!(snake("NotSupported"), "not_supported");
        assert_eq!(level_name(TopologyLevel::HostBridge), "host_bridge");
        assert_eq!(snake("Ok"), "ok");
    }
}
