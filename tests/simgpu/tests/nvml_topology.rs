//! A node of several GPUs through NVML: topology, peer-to-peer status, NVLinks, the NVSwitch
//! fabric and NUMA nodes, healthy and with each fault, and a PCIe-only node. NVML reports what
//! the hardware allows: a pair the driver refuses is still `OK` here.

use stackbench_simgpu::nvml::*;
use stackbench_simgpu::profile::Profile;
use stackbench_simgpu::state::{pci, use_on_this_thread, Sim};
use std::ffi::{c_uint, CStr};
use std::ptr::null_mut;

const HGX: &str = r#"
[node]
gpus = 8
nvswitch = true
numa_node = [0, 0, 0, 0, 1, 1, 1, 1]
"#;

const PCIE: &str = r#"
[node]
gpus = 4
numa_node = [0, 0, 1, 1]
"#;

/// NVML initialised on a host of `profile` of the calling thread's own; the device handles.
fn node(profile: &str) -> Vec<nvmlDevice_t> {
    let sim = Box::leak(Box::new(Sim::new(Profile::parse(profile))));
    use_on_this_thread(sim);
    assert_eq!(nvmlInit_v2(), NVML_SUCCESS);
    let mut count = 0;
    // SAFETY: a live out-parameter.
    assert_eq!(unsafe { nvmlDeviceGetCount_v2(&mut count) }, NVML_SUCCESS);
    (0..count)
        .map(|index| {
            let mut device = null_mut();
            // SAFETY: a live out-parameter.
            let status = unsafe { nvmlDeviceGetHandleByIndex_v2(index, &mut device) };
            assert_eq!(status, NVML_SUCCESS);
            device
        })
        .collect()
}

/// A query's `unsigned int` answer, or its status.
fn answer(query: impl FnOnce(*mut c_uint) -> nvmlReturn_t) -> Result<c_uint, nvmlReturn_t> {
    let mut out = c_uint::MAX;
    match query(&mut out) {
        NVML_SUCCESS => Ok(out),
        status => Err(status),
    }
}

fn ancestor(a: nvmlDevice_t, b: nvmlDevice_t) -> Result<c_uint, nvmlReturn_t> {
    // SAFETY: a live out-parameter.
    answer(|out| unsafe { nvmlDeviceGetTopologyCommonAncestor(a, b, out) })
}

fn p2p(a: nvmlDevice_t, b: nvmlDevice_t, index: c_uint) -> Result<c_uint, nvmlReturn_t> {
    // SAFETY: a live out-parameter.
    answer(|out| unsafe { nvmlDeviceGetP2PStatus(a, b, index, out) })
}

fn link_state(device: nvmlDevice_t, link: c_uint) -> Result<c_uint, nvmlReturn_t> {
    // SAFETY: a live out-parameter.
    answer(|out| unsafe { nvmlDeviceGetNvLinkState(device, link, out) })
}

/// `nvmlDeviceGetGpuFabricInfoV` with a v3 struct: (state, status, clique id).
fn fabric(device: nvmlDevice_t) -> (u8, nvmlReturn_t, c_uint) {
    let mut info = nvmlGpuFabricInfo_v3_t {
        version: NVML_GPU_FABRIC_INFO_V3,
        ..Default::default()
    };
    // SAFETY: a live struct of the version it names.
    assert_eq!(
        unsafe { nvmlDeviceGetGpuFabricInfoV(device, &mut info) },
        NVML_SUCCESS
    );
    assert_eq!((info.health_mask, info.health_summary), (0, 0));
    (info.state, info.status, info.clique_id)
}

/// `P2P_STATUS_OK`, `CHIPSET_NOT_SUPPORTED`, `NOT_SUPPORTED`.
const OK: c_uint = 0;
const CHIPSET: c_uint = 1;
const UNSUPPORTED: c_uint = 5;

#[test]
fn a_healthy_hgx_node_is_all_nvlink_through_a_completed_fabric() {
    let gpus = node(HGX);
    assert_eq!(gpus.len(), 8);
    assert_eq!(ancestor(gpus[0], gpus[0]), Ok(0), "INTERNAL");
    assert_eq!(ancestor(gpus[0], gpus[3]), Ok(40), "NODE");
    assert_eq!(ancestor(gpus[0], gpus[4]), Ok(50), "SYSTEM");
    for a in 0..8 {
        for b in (0..8).filter(|b| *b != a) {
            for index in 0..5 {
                assert_eq!(p2p(gpus[a], gpus[b], index), Ok(OK), "{a} {b} {index}");
            }
        }
        for link in 0..18 {
            assert_eq!(link_state(gpus[a], link), Ok(NVML_FEATURE_ENABLED));
            // SAFETY: a live out-parameter.
            let version = answer(|out| unsafe { nvmlDeviceGetNvLinkVersion(gpus[a], link, out) });
            assert_eq!(version, Ok(4));
        }
        assert_eq!(link_state(gpus[a], 18), Err(NVML_ERROR_INVALID_ARGUMENT));
        assert_eq!(fabric(gpus[a]), (3, NVML_SUCCESS, 1));
        // SAFETY: a live out-parameter.
        let numa = answer(|out| unsafe { nvmlDeviceGetNumaNodeId(gpus[a], out) });
        assert_eq!(numa, Ok(u32::from(a >= 4)));
    }
    assert_eq!(p2p(gpus[0], gpus[1], 5), Err(NVML_ERROR_INVALID_ARGUMENT));
    // SAFETY: a live out-parameter.
    let kind = answer(|out| unsafe { nvmlDeviceGetNvLinkRemoteDeviceType(gpus[2], 5, out) });
    assert_eq!(kind, Ok(2), "NVSWITCH");

    // Each link's far end is one of four NVSwitches, at an address no GPU has.
    let mut switches = std::collections::BTreeSet::new();
    for link in 0..18 {
        let mut info = nvmlPciInfo_t::default();
        // SAFETY: a live out-parameter.
        let status = unsafe { nvmlDeviceGetNvLinkRemotePciInfo_v2(gpus[1], link, &mut info) };
        assert_eq!(status, NVML_SUCCESS);
        // SAFETY: NUL-terminated by NVML.
        let bus_id = unsafe { CStr::from_ptr(info.bus_id.as_ptr()) };
        let bus_id = bus_id.to_str().unwrap().to_owned();
        assert_eq!(bus_id, format!("00000000:{:02X}:00.0", info.bus));
        assert!((0..8).all(|gpu| pci(gpu).bus != info.bus), "{bus_id}");
        switches.insert(bus_id);
    }
    assert_eq!(switches.len(), 4);

    // The old struct, and a version NVML does not know.
    let mut old = nvmlGpuFabricInfo_t::default();
    // SAFETY: a live out-parameter.
    assert_eq!(
        unsafe { nvmlDeviceGetGpuFabricInfo(gpus[0], &mut old) },
        NVML_SUCCESS
    );
    assert_eq!((old.state, old.status), (3, NVML_SUCCESS));
    let mut wrong = nvmlGpuFabricInfo_v3_t {
        version: 1 << 24 | 20,
        ..Default::default()
    };
    // SAFETY: a live struct.
    assert_eq!(
        unsafe { nvmlDeviceGetGpuFabricInfoV(gpus[0], &mut wrong) },
        NVML_ERROR_ARGUMENT_VERSION_MISMATCH
    );
    let mut v2 = nvmlGpuFabricInfo_v3_t {
        version: NVML_GPU_FABRIC_INFO_V2,
        health_summary: 9,
        ..Default::default()
    };
    // SAFETY: a live struct, larger than the version it names.
    assert_eq!(
        unsafe { nvmlDeviceGetGpuFabricInfoV(gpus[0], &mut v2) },
        NVML_SUCCESS
    );
    assert_eq!((v2.state, v2.clique_id, v2.health_summary), (3, 1, 9));
}

#[test]
fn each_node_fault_shows_where_nvml_reports_it() {
    let gpus = node(&format!("{HGX}\n[faults]\nnvlink_down = [[3, 7]]\n"));
    assert_eq!(link_state(gpus[3], 7), Ok(NVML_FEATURE_DISABLED));
    assert_eq!(link_state(gpus[3], 6), Ok(NVML_FEATURE_ENABLED));
    assert_eq!(link_state(gpus[2], 7), Ok(NVML_FEATURE_ENABLED));

    let in_progress = node(&format!(
        "{HGX}\n[faults]\nfabric_state = \"in_progress\"\n"
    ));
    assert_eq!(fabric(in_progress[5]), (2, NVML_SUCCESS, 1));
    // The links are up: NVML's P2P status is unchanged; the driver refuses all the same.
    assert_eq!(p2p(in_progress[0], in_progress[5], 2), Ok(OK));

    let failed = format!("{HGX}\n[faults]\nfabric_state = \"insufficient_resources\"\n");
    let failed = node(&failed);
    assert_eq!(fabric(failed[0]), (3, NVML_ERROR_INSUFFICIENT_RESOURCES, 1));

    let denied = node(&format!("{HGX}\n[faults]\npeer_access_denied = [[1, 2]]\n"));
    for index in 0..5 {
        assert_eq!(p2p(denied[1], denied[2], index), Ok(OK));
    }
}

#[test]
fn a_pcie_only_node_has_no_nvlink_and_no_fabric() {
    let gpus = node(PCIE);
    assert_eq!(ancestor(gpus[0], gpus[1]), Ok(20), "MULTIPLE");
    assert_eq!(ancestor(gpus[1], gpus[2]), Ok(50), "SYSTEM");
    assert_eq!(p2p(gpus[0], gpus[1], 0), Ok(OK));
    assert_eq!(p2p(gpus[0], gpus[1], 1), Ok(OK));
    assert_eq!(p2p(gpus[0], gpus[2], 0), Ok(CHIPSET));
    assert_eq!(p2p(gpus[0], gpus[1], 2), Ok(UNSUPPORTED));
    assert_eq!(p2p(gpus[0], gpus[1], 3), Ok(UNSUPPORTED));
    assert_eq!(link_state(gpus[0], 0), Err(NVML_ERROR_NOT_SUPPORTED));
    // SAFETY: a live out-parameter.
    let version = answer(|out| unsafe { nvmlDeviceGetNvLinkVersion(gpus[0], 0, out) });
    assert_eq!(version, Err(NVML_ERROR_NOT_SUPPORTED));
    assert_eq!(fabric(gpus[3]), (0, NVML_SUCCESS, 0));
    // One device alone: the default profile, as before.
    let one = node("");
    assert_eq!(one.len(), 1);
    assert_eq!(link_state(one[0], 0), Err(NVML_ERROR_NOT_SUPPORTED));
}
