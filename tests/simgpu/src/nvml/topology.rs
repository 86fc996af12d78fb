//! The node as NVML sees it: the topology between two GPUs, their peer-to-peer capabilities,
//! each NVLink (state, version, what is at its far end), the NVSwitch fabric and NUMA nodes, all
//! from [`crate::node`].
//!
//! NVML reports what the hardware allows, not what the driver makes of it: a pair in
//! `peer_access_denied` is still `NVML_P2P_STATUS_OK`, and with the fabric not ready the links
//! are still up (NVML's fabric state says why the driver refuses peer access).

use super::device::{c_array, nvmlPciInfo_t};
use super::{
    identity, nvmlDevice_t, nvmlEnableState_t, nvmlReturn_t, put, with_device, with_pair, Target,
    NVML_ERROR_ARGUMENT_VERSION_MISMATCH, NVML_ERROR_INSUFFICIENT_RESOURCES,
    NVML_ERROR_INVALID_ARGUMENT, NVML_ERROR_NOT_SUPPORTED, NVML_FEATURE_DISABLED,
    NVML_FEATURE_ENABLED, NVML_SUCCESS,
};
use crate::node;
use crate::state::{pci, Pci};
use std::ffi::{c_uchar, c_uint};

/// `nvmlGpuTopologyLevel_t`: `INTERNAL`, `MULTIPLE` (PCIe switches), `NODE`, `SYSTEM`.
const TOPOLOGY_INTERNAL: c_uint = 0;
const TOPOLOGY_MULTIPLE: c_uint = 20;
const TOPOLOGY_NODE: c_uint = 40;
const TOPOLOGY_SYSTEM: c_uint = 50;

/// `nvmlGpuP2PCapsIndex_t`: `READ`, `WRITE`, `NVLINK`, `ATOMICS`, `PROP`.
const P2P_READ: c_uint = 0;
const P2P_WRITE: c_uint = 1;
const P2P_NVLINK: c_uint = 2;
const P2P_ATOMICS: c_uint = 3;
const P2P_PROP: c_uint = 4;

/// `nvmlGpuP2PStatus_t`: `OK`, `CHIPSET_NOT_SUPPORTED`, `NOT_SUPPORTED`.
const P2P_STATUS_OK: c_uint = 0;
const P2P_STATUS_CHIPSET_NOT_SUPPORTED: c_uint = 1;
const P2P_STATUS_NOT_SUPPORTED: c_uint = 5;

/// The NVLink version of every link: 4 (Hopper).
const NVLINK_VERSION: c_uint = 4;
/// `NVML_NVLINK_DEVICE_TYPE_SWITCH`.
const NVLINK_DEVICE_TYPE_SWITCH: c_uint = 2;
/// NVSwitches on the board; link `l` of every GPU goes to switch `l % SWITCHES`.
const SWITCHES: u32 = 4;
/// The NVSwitch's PCI device id (NVSwitch gen 3).
const NVSWITCH_DEVICE_ID: u32 = 0x22a3;

/// `NVML_GPU_FABRIC_STATE_NOT_SUPPORTED`, `_IN_PROGRESS`, `_COMPLETED`.
const FABRIC_NOT_SUPPORTED: c_uchar = 0;
const FABRIC_IN_PROGRESS: c_uchar = 2;
const FABRIC_COMPLETED: c_uchar = 3;
/// The clique of every GPU of the node's fabric.
const CLIQUE_ID: c_uint = 1;
/// The fabric's cluster UUID.
const CLUSTER_UUID: [c_uchar; 16] = *b"stackbench-simnv";

/// `nvmlGpuFabricInfo_t`, the struct of `nvmlDeviceGetGpuFabricInfo`.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct nvmlGpuFabricInfo_t {
    pub cluster_uuid: [c_uchar; 16],
    pub status: nvmlReturn_t,
    pub clique_id: c_uint,
    pub state: c_uchar,
}

/// `nvmlGpuFabricInfo_v2_t`.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct nvmlGpuFabricInfo_v2_t {
    pub version: c_uint,
    pub cluster_uuid: [c_uchar; 16],
    pub status: nvmlReturn_t,
    pub clique_id: c_uint,
    pub state: c_uchar,
    pub health_mask: c_uint,
}

/// `nvmlGpuFabricInfo_v3_t` (`nvmlGpuFabricInfoV_t`).
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct nvmlGpuFabricInfo_v3_t {
    pub version: c_uint,
    pub cluster_uuid: [c_uchar; 16],
    pub status: nvmlReturn_t,
    pub clique_id: c_uint,
    pub state: c_uchar,
    pub health_mask: c_uint,
    pub health_summary: c_uchar,
}

/// `nvmlGpuFabricInfo_v2`: `NVML_STRUCT_VERSION(GpuFabricInfo, 2)`.
pub const NVML_GPU_FABRIC_INFO_V2: c_uint =
    std::mem::size_of::<nvmlGpuFabricInfo_v2_t>() as c_uint | (2 << 24);
/// `nvmlGpuFabricInfo_v3`.
pub const NVML_GPU_FABRIC_INFO_V3: c_uint =
    std::mem::size_of::<nvmlGpuFabricInfo_v3_t>() as c_uint | (3 << 24);

/// Checks that `link` is one of the device's NVLinks: `NOT_SUPPORTED` on a PCIe-only node,
/// `INVALID_ARGUMENT` past the last link.
fn link(d: &Target, link: c_uint) -> Result<(), nvmlReturn_t> {
    let node = &d.profile.node;
    if !node.nvswitch {
        return Err(NVML_ERROR_NOT_SUPPORTED);
    }
    if link >= node.nvlinks_per_gpu {
        return Err(NVML_ERROR_INVALID_ARGUMENT);
    }
    Ok(())
}

/// Runs a query about NVLink `number` of `device`, once the link is checked.
fn with_link(
    device: nvmlDevice_t,
    number: c_uint,
    query: impl FnOnce(&Target) -> nvmlReturn_t,
) -> nvmlReturn_t {
    with_device(device, |d| match link(d, number) {
        Ok(()) => query(d),
        Err(status) => status,
    })
}

/// The PCI address of NVSwitch `switch`: domain 0, the `switch`-th bus from 0xc0 up that no GPU
/// of the node is on.
fn switch_pci(d: &Target, switch: u32) -> Pci {
    let gpus: Vec<u32> = (0..d.profile.device.len()).map(|i| pci(i).bus).collect();
    let bus = (0xc0..0x1c0_u32)
        .map(|b| b & 0xff)
        .filter(|b| !gpus.contains(b))
        .nth(switch as usize)
        .unwrap_or(0xff);
    Pci {
        domain: 0,
        bus,
        device: 0,
    }
}

/// `nvmlDeviceGetTopologyCommonAncestor`: `INTERNAL` for one device; across NUMA nodes
/// `SYSTEM`; within one, `NODE` on an NVSwitch board and `MULTIPLE` (PCIe switches) on a
/// PCIe-only node.
///
/// # Safety
/// `path_info` is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetTopologyCommonAncestor(
    device1: nvmlDevice_t,
    device2: nvmlDevice_t,
    path_info: *mut c_uint,
) -> nvmlReturn_t {
    with_pair(device1, device2, |a, b| {
        let (profile, a) = (a.profile, a.index as usize);
        let level = if a == b {
            TOPOLOGY_INTERNAL
        } else if node::numa(profile, a) != node::numa(profile, b) {
            TOPOLOGY_SYSTEM
        } else if profile.node.nvswitch {
            TOPOLOGY_NODE
        } else {
            TOPOLOGY_MULTIPLE
        };
        // SAFETY: the caller's out-parameter.
        unsafe { put(path_info, level) }
    })
}

/// `nvmlDeviceGetP2PStatus` of two different devices: NVLink and atomics `OK` over NVLink, else
/// `NOT_SUPPORTED`; read, write and `PROP` `OK` over NVLink or within a NUMA node, else
/// `CHIPSET_NOT_SUPPORTED`.
///
/// # Safety
/// `p2p_status` is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetP2PStatus(
    device1: nvmlDevice_t,
    device2: nvmlDevice_t,
    p2p_index: c_uint,
    p2p_status: *mut c_uint,
) -> nvmlReturn_t {
    with_pair(device1, device2, |a, b| {
        let (profile, a) = (a.profile, a.index as usize);
        if a == b {
            return NVML_ERROR_INVALID_ARGUMENT;
        }
        let nvlink = node::nvlink_between(profile, a, b);
        let near = nvlink || node::numa(profile, a) == node::numa(profile, b);
        let status = match p2p_index {
            P2P_NVLINK | P2P_ATOMICS if nvlink => P2P_STATUS_OK,
            P2P_NVLINK | P2P_ATOMICS => P2P_STATUS_NOT_SUPPORTED,
            P2P_READ | P2P_WRITE | P2P_PROP if near => P2P_STATUS_OK,
            P2P_READ | P2P_WRITE | P2P_PROP => P2P_STATUS_CHIPSET_NOT_SUPPORTED,
            _ => return NVML_ERROR_INVALID_ARGUMENT,
        };
        // SAFETY: the caller's out-parameter.
        unsafe { put(p2p_status, status) }
    })
}

/// `nvmlDeviceGetNvLinkState`: enabled unless `faults.nvlink_down` names the link.
///
/// # Safety
/// `is_active` is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetNvLinkState(
    device: nvmlDevice_t,
    link: c_uint,
    is_active: *mut nvmlEnableState_t,
) -> nvmlReturn_t {
    with_link(device, link, |d| {
        let state = if node::link_up(d.profile, d.index as usize, link) {
            NVML_FEATURE_ENABLED
        } else {
            NVML_FEATURE_DISABLED
        };
        // SAFETY: the caller's out-parameter.
        unsafe { put(is_active, state) }
    })
}

/// `nvmlDeviceGetNvLinkVersion`: 4 (Hopper's NVLink).
///
/// # Safety
/// `version` is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetNvLinkVersion(
    device: nvmlDevice_t,
    link: c_uint,
    version: *mut c_uint,
) -> nvmlReturn_t {
    // SAFETY: the caller's out-parameter.
    with_link(device, link, |_| unsafe { put(version, NVLINK_VERSION) })
}

/// `nvmlDeviceGetNvLinkRemotePciInfo_v2`: the NVSwitch at the link's far end (link `l` goes to
/// switch `l % 4`), at a PCI address no GPU has.
///
/// # Safety
/// `pci` is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetNvLinkRemotePciInfo_v2(
    device: nvmlDevice_t,
    link: c_uint,
    pci: *mut nvmlPciInfo_t,
) -> nvmlReturn_t {
    with_link(device, link, |d| {
        let at = switch_pci(d, link % SWITCHES);
        let info = nvmlPciInfo_t {
            bus_id_legacy: c_array(&identity::legacy_bus_id(&at)),
            domain: at.domain,
            bus: at.bus,
            device: at.device,
            pci_device_id: NVSWITCH_DEVICE_ID << 16 | identity::NVIDIA_VENDOR_ID,
            pci_sub_system_id: 0,
            bus_id: c_array(&identity::bus_id(&at)),
        };
        // SAFETY: the caller's out-parameter.
        unsafe { put(pci, info) }
    })
}

/// `nvmlDeviceGetNvLinkRemoteDeviceType`: an NVSwitch.
///
/// # Safety
/// `device_type` is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetNvLinkRemoteDeviceType(
    device: nvmlDevice_t,
    link: c_uint,
    device_type: *mut c_uint,
) -> nvmlReturn_t {
    // SAFETY: the caller's out-parameter.
    with_link(device, link, |_| unsafe {
        put(device_type, NVLINK_DEVICE_TYPE_SWITCH)
    })
}

/// The fabric as every GPU of the node reports it: `NOT_SUPPORTED` on a PCIe-only node;
/// `COMPLETED` and `NVML_SUCCESS` when healthy; `IN_PROGRESS` while the fabric manager is not
/// done; `COMPLETED` with `NVML_ERROR_INSUFFICIENT_RESOURCES` when it failed.
fn fabric(d: &Target) -> nvmlGpuFabricInfo_t {
    if !d.profile.node.nvswitch {
        return nvmlGpuFabricInfo_t {
            state: FABRIC_NOT_SUPPORTED,
            ..nvmlGpuFabricInfo_t::default()
        };
    }
    let (state, status) = match d.faults.fabric_state.as_str() {
        "in_progress" => (FABRIC_IN_PROGRESS, NVML_SUCCESS),
        "insufficient_resources" => (FABRIC_COMPLETED, NVML_ERROR_INSUFFICIENT_RESOURCES),
        _ => (FABRIC_COMPLETED, NVML_SUCCESS),
    };
    nvmlGpuFabricInfo_t {
        cluster_uuid: CLUSTER_UUID,
        status,
        clique_id: CLIQUE_ID,
        state,
    }
}

/// `nvmlDeviceGetGpuFabricInfo`: the fabric's state (see [`fabric`]).
///
/// # Safety
/// `info` is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetGpuFabricInfo(
    device: nvmlDevice_t,
    info: *mut nvmlGpuFabricInfo_t,
) -> nvmlReturn_t {
    // SAFETY: the caller's out-parameter.
    with_device(device, |d| unsafe { put(info, fabric(d)) })
}

/// `nvmlDeviceGetGpuFabricInfoV`: the fabric's state (see [`fabric`]) in the struct version
/// `info.version` names (2 or 3, else `NVML_ERROR_ARGUMENT_VERSION_MISMATCH`), health mask and
/// summary 0 (not supported).
///
/// # Safety
/// `info` is null or valid for reads and writes of the struct its `version` names.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetGpuFabricInfoV(
    device: nvmlDevice_t,
    info: *mut nvmlGpuFabricInfo_v3_t,
) -> nvmlReturn_t {
    with_device(device, |d| {
        if info.is_null() {
            return NVML_ERROR_INVALID_ARGUMENT;
        }
        // SAFETY: non-null, and its first field is the version by the caller's contract.
        let version = unsafe { info.cast::<c_uint>().read() };
        let f = fabric(d);
        let v3 = nvmlGpuFabricInfo_v3_t {
            version,
            cluster_uuid: f.cluster_uuid,
            status: f.status,
            clique_id: f.clique_id,
            state: f.state,
            health_mask: 0,
            health_summary: 0,
        };
        match version {
            // SAFETY: the caller's struct of version 3.
            NVML_GPU_FABRIC_INFO_V3 => unsafe { put(info, v3) },
            NVML_GPU_FABRIC_INFO_V2 => {
                let v2 = nvmlGpuFabricInfo_v2_t {
                    version,
                    cluster_uuid: v3.cluster_uuid,
                    status: v3.status,
                    clique_id: v3.clique_id,
                    state: v3.state,
                    health_mask: v3.health_mask,
                };
                // SAFETY: the caller's struct of version 2.
                unsafe { put(info.cast::<nvmlGpuFabricInfo_v2_t>(), v2) }
            }
            _ => NVML_ERROR_ARGUMENT_VERSION_MISMATCH,
        }
    })
}

/// `nvmlDeviceGetNumaNodeId`: the profile's `numa_node` of the device.
///
/// # Safety
/// `numa` is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetNumaNodeId(
    device: nvmlDevice_t,
    numa: *mut c_uint,
) -> nvmlReturn_t {
    with_device(device, |d| {
        let at = node::numa(d.profile, d.index as usize);
        // SAFETY: the caller's out-parameter.
        unsafe { put(numa, at) }
    })
}
