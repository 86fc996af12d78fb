//! NVML as stackbench calls it, through the exported functions (the rlib): the default host,
//! several devices, initialisation, handles and the arguments NVIDIA documents as invalid. Each
//! test gives its thread a host of its own, so they run side by side.

use stackbench_simgpu::nvml::identity;
use stackbench_simgpu::nvml::*;
use stackbench_simgpu::profile::{Device, Profile};
use stackbench_simgpu::state::{self, use_on_this_thread, Sim};
use std::ffi::{c_char, c_int, c_uint, CStr};
use std::ptr::null_mut;

/// A host of its own for the calling test's thread: `toml`'s profile, or the default one.
fn host(toml: Option<&str>) -> &'static Sim {
    let profile = toml.map_or_else(|| Ok(Profile::default()), Profile::parse);
    let sim: &'static Sim = Box::leak(Box::new(Sim::new(profile)));
    use_on_this_thread(sim);
    sim
}

fn init() {
    assert_eq!(nvmlInit_v2(), NVML_SUCCESS);
}

fn handle(index: u32) -> nvmlDevice_t {
    let mut device = null_mut();
    // SAFETY: a live out-parameter.
    assert_eq!(
        unsafe { nvmlDeviceGetHandleByIndex_v2(index, &mut device) },
        NVML_SUCCESS
    );
    assert!(!device.is_null());
    device
}

fn by_bus_id(text: &str) -> Result<nvmlDevice_t, nvmlReturn_t> {
    let text = std::ffi::CString::new(text).unwrap();
    let mut device = null_mut();
    // SAFETY: a C string and a live out-parameter.
    match unsafe { nvmlDeviceGetHandleByPciBusId_v2(text.as_ptr(), &mut device) } {
        NVML_SUCCESS => Ok(device),
        status => Err(status),
    }
}

/// A string query's answer, through a buffer of NVML's recommended 96 bytes.
fn text(query: impl FnOnce(*mut c_char, c_uint) -> nvmlReturn_t) -> String {
    let mut buffer = [0 as c_char; 96];
    assert_eq!(query(buffer.as_mut_ptr(), 96), NVML_SUCCESS);
    // SAFETY: NVML wrote a NUL-terminated string into the buffer.
    unsafe { CStr::from_ptr(buffer.as_ptr()) }
        .to_str()
        .unwrap()
        .to_owned()
}

/// One `unsigned int`-like output.
fn value<T: Default>(query: impl FnOnce(*mut T) -> nvmlReturn_t) -> T {
    let mut out = T::default();
    assert_eq!(query(&mut out), NVML_SUCCESS);
    out
}

#[test]
fn the_default_host_is_one_healthy_h100_like_gpu() {
    let sim = host(None);
    {
        init();
        // SAFETY (all calls below): live buffers and out-parameters of the sizes passed.
        unsafe {
            assert_eq!(text(|b, n| nvmlSystemGetDriverVersion(b, n)), "580.95.05");
            assert_eq!(text(|b, n| nvmlSystemGetNVMLVersion(b, n)), "13.580.95.05");
            assert_eq!(
                value(|v: *mut c_int| nvmlSystemGetCudaDriverVersion_v2(v)),
                13000
            );
            assert_eq!(
                value(|v: *mut c_int| nvmlSystemGetCudaDriverVersion(v)),
                13000
            );
            assert_eq!(value(|v: *mut c_uint| nvmlDeviceGetCount_v2(v)), 1);
            let device = handle(0);
            assert_eq!(device, handle(0), "one stable handle per device");
            let mut other = null_mut();
            assert_eq!(
                nvmlDeviceGetHandleByIndex_v2(1, &mut other),
                NVML_ERROR_INVALID_ARGUMENT
            );
            assert_eq!(value(|v| nvmlDeviceGetIndex(device, v)), 0);
            let name = text(|b, n| nvmlDeviceGetName(device, b, n));
            assert_eq!(name, "stackbench simulated GPU (H100-like)");
            let uuid = text(|b, n| nvmlDeviceGetUUID(device, b, n));
            assert_eq!(uuid, identity::uuid(0, &Device::default()));

            // The PCI address the driver gives, and the handle found by it in every form the
            // docs give, the bench telemetry's (`{:x}:{:x}:{:x}.0` of the driver's attributes)
            // first.
            let at = state::pci(0);
            let pci = value(|v| nvmlDeviceGetPciInfo_v3(device, v));
            let bus_id = CStr::from_ptr(pci.bus_id.as_ptr()).to_str().unwrap();
            assert_eq!(bus_id, format!("00000000:{:02X}:00.0", at.bus));
            let legacy = CStr::from_ptr(pci.bus_id_legacy.as_ptr()).to_str().unwrap();
            assert_eq!(legacy, format!("0000:{:02X}:00.0", at.bus));
            assert_eq!(
                (pci.domain, pci.bus, pci.device),
                (at.domain, at.bus, at.device)
            );
            assert_eq!(pci.pci_device_id & 0xffff, 0x10de);
            let harness = format!("{:x}:{:x}:{:x}.0", pci.domain, pci.bus, pci.device);
            let driver = at.bus_id();
            let short = format!("{:x}:00.0", at.bus);
            for form in [&harness, bus_id, legacy, &driver, &short] {
                assert_eq!(by_bus_id(form), Ok(device), "{form}");
            }
            let elsewhere = format!("0:{:x}:0.0", at.bus + 1);
            assert_eq!(by_bus_id(&elsewhere), Err(NVML_ERROR_NOT_FOUND));
            let audio = format!("0:{:x}:0.1", at.bus);
            assert_eq!(by_bus_id(&audio), Err(NVML_ERROR_NOT_FOUND));
            assert_eq!(by_bus_id("not a bus id"), Err(NVML_ERROR_INVALID_ARGUMENT));
            // Found by its UUID in either case.
            let uuid_c = std::ffi::CString::new(uuid.to_uppercase()).unwrap();
            let mut found = null_mut();
            assert_eq!(
                nvmlDeviceGetHandleByUUID(uuid_c.as_ptr(), &mut found),
                NVML_SUCCESS
            );
            assert_eq!(found, device);

            let (mut major, mut minor) = (0, 0);
            assert_eq!(
                nvmlDeviceGetCudaComputeCapability(device, &mut major, &mut minor),
                NVML_SUCCESS
            );
            assert_eq!((major, minor), (15, 0));
            let memory = value(|v| nvmlDeviceGetMemoryInfo(device, v));
            assert_eq!(
                (memory.total, memory.free, memory.used),
                (80 << 30, 80 << 30, 0)
            );
            let mut memory = nvmlMemory_v2_t {
                version: (std::mem::size_of::<nvmlMemory_v2_t>() as u32) | (2 << 24),
                ..nvmlMemory_v2_t::default()
            };
            assert_eq!(
                nvmlDeviceGetMemoryInfo_v2(device, &mut memory),
                NVML_SUCCESS
            );
            assert_eq!((memory.total, memory.free), (80 << 30, 80 << 30));

            // Idle: no kernel has run.
            assert_eq!(
                value(|v| nvmlDeviceGetCurrentClocksEventReasons(device, v)),
                0x1
            );
            assert_eq!(
                value(|v| nvmlDeviceGetCurrentClocksThrottleReasons(device, v)),
                0x1
            );
            assert_eq!(
                value(|v| nvmlDeviceGetSupportedClocksEventReasons(device, v)),
                0x1ff
            );
            assert_eq!(value(|v| nvmlDeviceGetClockInfo(device, 1, v)), 1980);
            assert_eq!(value(|v| nvmlDeviceGetMaxClockInfo(device, 1, v)), 1980);
            assert_eq!(value(|v| nvmlDeviceGetClockInfo(device, 2, v)), 2619);
            assert_eq!(value(|v| nvmlDeviceGetTemperature(device, 0, v)), 45);
            assert_eq!(value(|v| nvmlDeviceGetPowerUsage(device, v)), 72_000);
            assert_eq!(
                value(|v| nvmlDeviceGetEnforcedPowerLimit(device, v)),
                700_000
            );

            // Healthy: persistence and ECC on, no errors, nothing retired or remapped.
            assert_eq!(
                value(|v| nvmlDeviceGetPersistenceMode(device, v)),
                NVML_FEATURE_ENABLED
            );
            let (mut current, mut pending) = (0, 0);
            assert_eq!(
                nvmlDeviceGetEccMode(device, &mut current, &mut pending),
                NVML_SUCCESS
            );
            assert_eq!(
                (current, pending),
                (NVML_FEATURE_ENABLED, NVML_FEATURE_ENABLED)
            );
            for (kind, counter) in [(0, 0), (0, 1), (1, 0), (1, 1)] {
                assert_eq!(
                    value(|v| nvmlDeviceGetTotalEccErrors(device, kind, counter, v)),
                    0
                );
            }
            assert_eq!(
                value(|v| nvmlDeviceGetRetiredPagesPendingStatus(device, v)),
                NVML_FEATURE_DISABLED
            );
            let mut count = 0;
            let mut address = 0;
            assert_eq!(
                nvmlDeviceGetRetiredPages(device, 1, &mut count, &mut address),
                NVML_SUCCESS
            );
            assert_eq!(count, 0);
            let mut rows = [9u32; 4];
            let [a, b, c, d] = &mut rows;
            assert_eq!(nvmlDeviceGetRemappedRows(device, a, b, c, d), NVML_SUCCESS);
            assert_eq!(rows, [0, 0, 0, 0]);

            // A kernel ran: busy, warmer, and no reason holds the clocks back.
            sim.count_launch();
            assert_eq!(
                value(|v| nvmlDeviceGetCurrentClocksEventReasons(device, v)),
                0
            );
            assert_eq!(value(|v| nvmlDeviceGetClockInfo(device, 1, v)), 1980);
            assert_eq!(value(|v| nvmlDeviceGetTemperature(device, 0, v)), 62);
            assert_eq!(value(|v| nvmlDeviceGetPowerUsage(device, v)), 420_000);

            assert_eq!(nvmlShutdown(), NVML_SUCCESS);
        }
    }
}

#[test]
fn init_is_needed_and_reference_counted() {
    host(None);
    {
        let mut count = 0;
        // SAFETY (all calls below): live out-parameters.
        unsafe {
            assert_eq!(nvmlDeviceGetCount_v2(&mut count), NVML_ERROR_UNINITIALIZED);
            assert_eq!(nvmlShutdown(), NVML_ERROR_UNINITIALIZED);
            init();
            let device = handle(0);
            assert_eq!(nvmlInit(), NVML_SUCCESS);
            assert_eq!(nvmlInitWithFlags(0), NVML_SUCCESS);
            assert_eq!(nvmlShutdown(), NVML_SUCCESS);
            assert_eq!(nvmlShutdown(), NVML_SUCCESS);
            // One init is still open.
            assert_eq!(nvmlDeviceGetCount(&mut count), NVML_SUCCESS);
            assert_eq!(count, 1);
            assert_eq!(nvmlShutdown(), NVML_SUCCESS);
            let mut persistence = 0;
            assert_eq!(
                nvmlDeviceGetPersistenceMode(device, &mut persistence),
                NVML_ERROR_UNINITIALIZED
            );
            let mut buffer = [0 as c_char; 96];
            assert_eq!(
                nvmlSystemGetDriverVersion(buffer.as_mut_ptr(), 96),
                NVML_ERROR_UNINITIALIZED
            );
            // A new init gives the same handle.
            init();
            assert_eq!(handle(0), device);
            assert_eq!(nvmlShutdown(), NVML_SUCCESS);
        }
    }
}

#[test]
fn invalid_arguments_as_nvidia_documents_them() {
    host(None);
    {
        init();
        let device = handle(0);
        let foreign = 0x1000 as nvmlDevice_t;
        const INVALID: nvmlReturn_t = NVML_ERROR_INVALID_ARGUMENT;
        // SAFETY (all calls below): null outputs are what is tested; every other pointer is
        // live, and a foreign handle is compared by address only, never read.
        unsafe {
            assert_eq!(nvmlDeviceGetCount_v2(null_mut()), INVALID);
            assert_eq!(nvmlDeviceGetHandleByIndex_v2(0, null_mut()), INVALID);
            assert_eq!(
                nvmlDeviceGetHandleByPciBusId_v2(std::ptr::null(), &mut null_mut()),
                INVALID
            );
            assert_eq!(nvmlSystemGetCudaDriverVersion_v2(null_mut()), INVALID);
            assert_eq!(nvmlSystemGetDriverVersion(null_mut(), 80), INVALID);
            let mut out = 0u32;
            let mut wide = 0u64;
            assert_eq!(nvmlDeviceGetPersistenceMode(foreign, &mut out), INVALID);
            assert_eq!(nvmlDeviceGetPersistenceMode(null_mut(), &mut out), INVALID);
            assert_eq!(nvmlDeviceGetPersistenceMode(device, null_mut()), INVALID);
            assert_eq!(nvmlDeviceGetPowerUsage(device, null_mut()), INVALID);
            assert_eq!(
                nvmlDeviceGetCurrentClocksEventReasons(device, null_mut()),
                INVALID
            );
            assert_eq!(nvmlDeviceGetClockInfo(device, 4, &mut out), INVALID);
            assert_eq!(nvmlDeviceGetClockInfo(device, 1, null_mut()), INVALID);
            assert_eq!(nvmlDeviceGetTemperature(device, 1, &mut out), INVALID);
            assert_eq!(
                nvmlDeviceGetTotalEccErrors(device, 2, 0, &mut wide),
                INVALID
            );
            assert_eq!(
                nvmlDeviceGetTotalEccErrors(device, 1, 2, &mut wide),
                INVALID
            );
            assert_eq!(nvmlDeviceGetEccMode(device, &mut out, null_mut()), INVALID);
            assert_eq!(
                nvmlDeviceGetCudaComputeCapability(device, null_mut(), &mut 0),
                INVALID
            );
            assert_eq!(
                nvmlDeviceGetRetiredPages(device, 2, &mut out, &mut wide),
                INVALID
            );
            assert_eq!(
                nvmlDeviceGetRetiredPages(device, 1, null_mut(), &mut wide),
                INVALID
            );
            assert_eq!(
                nvmlDeviceGetRetiredPages_v2(device, 1, &mut out, &mut wide, null_mut()),
                INVALID
            );
            assert_eq!(
                nvmlDeviceGetRemappedRows(device, &mut 0, &mut 0, null_mut(), &mut 0),
                INVALID
            );
            assert_eq!(nvmlDeviceGetMemoryInfo(device, null_mut()), INVALID);
            let mut memory = nvmlMemory_v2_t::default();
            assert_eq!(
                nvmlDeviceGetMemoryInfo_v2(device, &mut memory),
                NVML_ERROR_ARGUMENT_VERSION_MISMATCH
            );
            // Buffers too small for the answer and its NUL.
            let mut small = [0 as c_char; 8];
            assert_eq!(
                nvmlDeviceGetName(device, small.as_mut_ptr(), 8),
                NVML_ERROR_INSUFFICIENT_SIZE
            );
            assert_eq!(
                nvmlDeviceGetUUID(device, small.as_mut_ptr(), 8),
                NVML_ERROR_INSUFFICIENT_SIZE
            );
            assert_eq!(
                nvmlSystemGetDriverVersion(small.as_mut_ptr(), 9),
                NVML_ERROR_INSUFFICIENT_SIZE
            );
            let mut exact = [0 as c_char; 10];
            assert_eq!(
                nvmlSystemGetDriverVersion(exact.as_mut_ptr(), 10),
                NVML_SUCCESS
            );
            assert_eq!(nvmlShutdown(), NVML_SUCCESS);
        }
    }
}

#[test]
fn error_strings_are_nvml_s() {
    let text = |code| {
        // SAFETY: nvmlErrorString returns a static NUL-terminated string for every code.
        unsafe { CStr::from_ptr(nvmlErrorString(code)) }
            .to_str()
            .unwrap()
    };
    assert_eq!(text(NVML_SUCCESS), "Success");
    assert_eq!(text(NVML_ERROR_UNINITIALIZED), "Uninitialized");
    assert_eq!(text(NVML_ERROR_GPU_IS_LOST), "GPU is lost");
    assert_eq!(text(NVML_ERROR_UNKNOWN), "Unknown Error");
    assert_eq!(text(12345), "Unknown Error");
}

#[test]
fn several_devices_each_with_its_own_identity() {
    let profile = r#"
        [[device]]
        name = "stackbench simulated GPU (H100-like)"

        [[device]]
        name = "stackbench simulated GPU (A100-like)"
        compute_capability = "8.0"
        memory_gib = 40
        sm_clock_mhz = 1410
    "#;
    host(Some(profile));
    {
        init();
        // SAFETY (all calls below): live buffers and out-parameters.
        unsafe {
            assert_eq!(value(|v: *mut c_uint| nvmlDeviceGetCount_v2(v)), 2);
            let (first, second) = (handle(0), handle(1));
            assert_ne!(first, second);
            let bus = |index| format!("0:{:x}:0.0", state::pci(index).bus);
            assert_eq!(by_bus_id(&bus(1)), Ok(second));
            assert_eq!(by_bus_id(&bus(0)), Ok(first));
            assert_eq!(value(|v| nvmlDeviceGetIndex(second, v)), 1);
            assert_eq!(
                text(|b, n| nvmlDeviceGetName(second, b, n)),
                "stackbench simulated GPU (A100-like)"
            );
            let uuids = [first, second].map(|d| text(|b, n| nvmlDeviceGetUUID(d, b, n)));
            assert_ne!(uuids[0], uuids[1]);
            let profile = Profile::parse(profile).unwrap();
            assert_eq!(uuids[1], identity::uuid(1, &profile.device[1]));
            let pci = value(|v| nvmlDeviceGetPciInfo_v3(second, v));
            assert_eq!(
                CStr::from_ptr(pci.bus_id.as_ptr()).to_str(),
                Ok(state::pci(1).nvml_bus_id().as_str())
            );
            let (mut major, mut minor) = (0, 0);
            nvmlDeviceGetCudaComputeCapability(second, &mut major, &mut minor);
            assert_eq!((major, minor), (8, 0));
            assert_eq!(
                value(|v| nvmlDeviceGetMemoryInfo(second, v)).total,
                40 << 30
            );
            assert_eq!(value(|v| nvmlDeviceGetClockInfo(second, 1, v)), 1410);
            assert_eq!(value(|v| nvmlDeviceGetClockInfo(first, 1, v)), 1980);
            assert_eq!(nvmlShutdown(), NVML_SUCCESS);
        }
    }
}
