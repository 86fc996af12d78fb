//! Each NVML fault of the profile read as a real host shows it, and so as stackbench's
//! `driver.health` (harness/check/worker/nvml/findings.rs) and bench telemetry judge it:
//!
//! - `ecc_uncorrected = N`: N uncorrected ECC errors, volatile and aggregate, on every device:
//!   a warning, "uncorrected ECC errors since the driver loaded: N on device 0 ...";
//! - `retired_pages = N`: N pages retired for double-bit errors, pending retirement: "pages
//!   pending retirement on device 0: reset the GPU or reboot to retire them";
//! - `row_remap_pending`: one row remapped for an uncorrectable error, pending, no failure:
//!   "row remapping pending on device 0: reset the GPU ...";
//! - `throttle = [...]`: NVIDIA's bits of the reasons once a kernel ran (idle before), the SM
//!   clock lowered: "clocks throttled on device 0 (SW thermal)", and the telemetry's throttled
//!   samples;
//! - `lost_after_calls = N`: after N driver calls every device call answers
//!   `NVML_ERROR_GPU_IS_LOST` (15): a failure, "device 0: nvmlDeviceGetHandleByIndex_v2:
//!   NVML_ERROR_GPU_IS_LOST (15): ...";
//! - a profile that cannot be read: `nvmlInit_v2` answers `NVML_ERROR_UNKNOWN` (999): a
//!   failure, "nvmlInit_v2: NVML_ERROR_UNKNOWN (999): ...".
//!
//! Each test gives its thread a host of its own, so they run side by side in one process.

use stackbench_simgpu::nvml::*;
use stackbench_simgpu::profile::Profile;
use stackbench_simgpu::state::{use_on_this_thread, Sim};
use std::ffi::{c_char, c_uint};
use std::ptr::null_mut;

/// A host of `toml`'s profile for the calling thread, NVML initialised on it.
fn host(toml: &str) -> &'static Sim {
    let sim: &'static Sim = Box::leak(Box::new(Sim::new(Profile::parse(toml))));
    use_on_this_thread(sim);
    assert_eq!(nvmlInit_v2(), NVML_SUCCESS);
    sim
}

fn handle(index: u32) -> Result<nvmlDevice_t, nvmlReturn_t> {
    let mut device = null_mut();
    // SAFETY: a live out-parameter.
    match unsafe { nvmlDeviceGetHandleByIndex_v2(index, &mut device) } {
        NVML_SUCCESS => Ok(device),
        status => Err(status),
    }
}

/// One output's value, or the status when the call failed.
fn value<T: Default>(query: impl FnOnce(*mut T) -> nvmlReturn_t) -> Result<T, nvmlReturn_t> {
    let mut out = T::default();
    match query(&mut out) {
        NVML_SUCCESS => Ok(out),
        status => Err(status),
    }
}

/// What `driver.health` reads of a device (health.rs's `read_device`).
#[derive(Debug, PartialEq)]
struct Health {
    persistence: Result<u32, nvmlReturn_t>,
    ecc_volatile_uncorrected: Result<u64, nvmlReturn_t>,
    ecc_aggregate_uncorrected: Result<u64, nvmlReturn_t>,
    ecc_aggregate_corrected: Result<u64, nvmlReturn_t>,
    pages_pending_retirement: Result<u32, nvmlReturn_t>,
    /// corrected, uncorrected, pending, failed
    remapped_rows: Result<[u32; 4], nvmlReturn_t>,
    clocks_event_reasons: Result<u64, nvmlReturn_t>,
}

fn health(device: nvmlDevice_t) -> Health {
    // SAFETY (all calls): live out-parameters.
    unsafe {
        Health {
            persistence: value(|v| nvmlDeviceGetPersistenceMode(device, v)),
            ecc_volatile_uncorrected: value(|v| nvmlDeviceGetTotalEccErrors(device, 1, 0, v)),
            ecc_aggregate_uncorrected: value(|v| nvmlDeviceGetTotalEccErrors(device, 1, 1, v)),
            ecc_aggregate_corrected: value(|v| nvmlDeviceGetTotalEccErrors(device, 0, 1, v)),
            pages_pending_retirement: value(|v| nvmlDeviceGetRetiredPagesPendingStatus(device, v)),
            remapped_rows: {
                let mut rows = [0u32; 4];
                let [a, b, c, d] = &mut rows;
                match nvmlDeviceGetRemappedRows(device, a, b, c, d) {
                    NVML_SUCCESS => Ok(rows),
                    status => Err(status),
                }
            },
            clocks_event_reasons: value(|v| nvmlDeviceGetCurrentClocksEventReasons(device, v)),
        }
    }
}

fn healthy() -> Health {
    Health {
        persistence: Ok(NVML_FEATURE_ENABLED),
        ecc_volatile_uncorrected: Ok(0),
        ecc_aggregate_uncorrected: Ok(0),
        ecc_aggregate_corrected: Ok(0),
        pages_pending_retirement: Ok(NVML_FEATURE_DISABLED),
        remapped_rows: Ok([0, 0, 0, 0]),
        clocks_event_reasons: Ok(0x1),
    }
}

/// What the bench telemetry reads (telemetry.rs's `Reading::take`): SM clock, temperature,
/// power.
fn telemetry(
    device: nvmlDevice_t,
) -> (
    Result<u32, nvmlReturn_t>,
    Result<u32, nvmlReturn_t>,
    Result<u32, nvmlReturn_t>,
) {
    // SAFETY (all calls): live out-parameters.
    unsafe {
        (
            value(|v| nvmlDeviceGetClockInfo(device, 1, v)),
            value(|v| nvmlDeviceGetTemperature(device, 0, v)),
            value(|v| nvmlDeviceGetPowerUsage(device, v)),
        )
    }
}

#[test]
fn uncorrected_ecc_errors_on_every_device() {
    host("[[device]]\n[[device]]\n[faults]\necc_uncorrected = 2\n");
    for index in 0..2 {
        let device = handle(index).unwrap();
        assert_eq!(
            health(device),
            Health {
                ecc_volatile_uncorrected: Ok(2),
                ecc_aggregate_uncorrected: Ok(2),
                ..healthy()
            }
        );
    }
}

#[test]
fn retired_pages_are_listed_and_pending() {
    host("[faults]\nretired_pages = 3\n");
    let device = handle(0).unwrap();
    assert_eq!(
        health(device),
        Health {
            pages_pending_retirement: Ok(NVML_FEATURE_ENABLED),
            ..healthy()
        }
    );
    // SAFETY (all calls): live counts and arrays of the room the counts say.
    unsafe {
        // Asking how many (as nvml-wrapper does: a count of 0 and one element's room).
        let (mut count, mut one) = (0, 0);
        assert_eq!(
            nvmlDeviceGetRetiredPages(device, 1, &mut count, &mut one),
            NVML_ERROR_INSUFFICIENT_SIZE
        );
        assert_eq!(count, 3);
        let mut addresses = [0u64; 4];
        let mut timestamps = [0u64; 4];
        let mut count = 4;
        assert_eq!(
            nvmlDeviceGetRetiredPages_v2(
                device,
                1,
                &mut count,
                addresses.as_mut_ptr(),
                timestamps.as_mut_ptr()
            ),
            NVML_SUCCESS
        );
        assert_eq!(count, 3);
        assert!(addresses[..3].iter().all(|&a| a != 0 && a % 4096 == 0));
        assert!(addresses[0] < addresses[1] && addresses[1] < addresses[2]);
        assert!(timestamps[..3].iter().all(|&t| t > 1_600_000_000));
        assert_eq!(
            (addresses[3], timestamps[3]),
            (0, 0),
            "nothing past the count"
        );
        // None for multiple single-bit errors.
        let mut count = 4;
        assert_eq!(
            nvmlDeviceGetRetiredPages(device, 0, &mut count, addresses.as_mut_ptr()),
            NVML_SUCCESS
        );
        assert_eq!(count, 0);
    }
}

#[test]
fn a_pending_row_remap() {
    host("[faults]\nrow_remap_pending = true\n");
    assert_eq!(
        health(handle(0).unwrap()),
        Health {
            remapped_rows: Ok([0, 1, 1, 0]),
            ..healthy()
        }
    );
}

#[test]
fn throttle_reasons_show_once_a_kernel_ran() {
    // (name, NVIDIA's bit, SM clock, temperature, power) once a kernel ran.
    let cases = [
        ("sw_thermal", 0x20, 1683, 87, 420_000),
        ("hw_slowdown", 0x8, 990, 62, 420_000),
        ("hw_thermal", 0x40, 990, 92, 420_000),
        ("hw_power_brake", 0x80, 990, 62, 250_000),
        ("sw_power_cap", 0x4, 1683, 62, 700_000),
    ];
    for (name, bit, clock, temperature, power) in cases {
        let sim = host(&format!("[faults]\nthrottle = [\"{name}\"]\n"));
        let device = handle(0).unwrap();
        assert_eq!(health(device), healthy(), "{name}: idle before any kernel");
        assert_eq!(telemetry(device), (Ok(1980), Ok(45), Ok(72_000)), "{name}");
        sim.count_launch();
        assert_eq!(
            health(device),
            Health {
                clocks_event_reasons: Ok(bit),
                ..healthy()
            },
            "{name}"
        );
        // SAFETY: a live out-parameter.
        let throttle = value(|v| unsafe { nvmlDeviceGetCurrentClocksThrottleReasons(device, v) });
        assert_eq!(throttle, Ok(bit), "{name}: the old name gives the same");
        assert_eq!(
            telemetry(device),
            (Ok(clock), Ok(temperature), Ok(power)),
            "{name}"
        );
    }
    let sim = host("[faults]\nthrottle = [\"sw_thermal\", \"hw_slowdown\"]\n");
    sim.count_launch();
    let device = handle(0).unwrap();
    assert_eq!(health(device).clocks_event_reasons, Ok(0x20 | 0x8));
    assert_eq!(telemetry(device), (Ok(990), Ok(87), Ok(420_000)));
}

#[test]
fn a_lost_gpu_answers_gpu_is_lost_to_every_device_call() {
    let sim = host("[faults]\nlost_after_calls = 3\n");
    let device = handle(0).unwrap();
    assert_eq!(health(device), healthy());
    for _ in 0..3 {
        sim.count_call();
    }
    const LOST: nvmlReturn_t = NVML_ERROR_GPU_IS_LOST;
    assert_eq!(handle(0), Err(LOST));
    let bus = std::ffi::CString::new(stackbench_simgpu::state::pci(0).bus_id()).unwrap();
    let mut found = null_mut();
    // SAFETY: a C string and a live out-parameter.
    let by_bus = unsafe { nvmlDeviceGetHandleByPciBusId_v2(bus.as_ptr(), &mut found) };
    assert_eq!(by_bus, LOST);
    assert_eq!(
        health(device),
        Health {
            persistence: Err(LOST),
            ecc_volatile_uncorrected: Err(LOST),
            ecc_aggregate_uncorrected: Err(LOST),
            ecc_aggregate_corrected: Err(LOST),
            pages_pending_retirement: Err(LOST),
            remapped_rows: Err(LOST),
            clocks_event_reasons: Err(LOST),
        }
    );
    assert_eq!(telemetry(device), (Err(LOST), Err(LOST), Err(LOST)));
    let mut name = [0 as c_char; 96];
    // SAFETY (all calls): live buffers and out-parameters.
    unsafe {
        assert_eq!(nvmlDeviceGetName(device, name.as_mut_ptr(), 96), LOST);
        assert_eq!(nvmlDeviceGetUUID(device, name.as_mut_ptr(), 96), LOST);
        assert_eq!(value(|v| nvmlDeviceGetPciInfo_v3(device, v)), Err(LOST));
        assert_eq!(value(|v| nvmlDeviceGetMemoryInfo(device, v)), Err(LOST));
        // The system still answers, and still counts the device, as NVML does.
        assert_eq!(value(|v: *mut c_uint| nvmlDeviceGetCount_v2(v)), Ok(1));
        assert_eq!(
            nvmlSystemGetDriverVersion(name.as_mut_ptr(), 96),
            NVML_SUCCESS
        );
    }
}

#[test]
fn a_profile_that_cannot_be_read_fails_init() {
    let missing = Profile::read(std::path::Path::new("/nonexistent/simgpu-profile.toml"));
    let malformed = Profile::parse("[faults]\nkernel_hangs = \"x\"\n");
    for profile in [missing, malformed] {
        assert!(profile.is_err());
        use_on_this_thread(Box::leak(Box::new(Sim::new(profile))));
        assert_eq!(nvmlInit_v2(), NVML_ERROR_UNKNOWN);
        assert_eq!(nvmlInit_v2(), NVML_ERROR_UNKNOWN);
        let mut count = 0;
        // SAFETY: a live out-parameter.
        let status = unsafe { nvmlDeviceGetCount_v2(&mut count) };
        assert_eq!(status, NVML_ERROR_UNINITIALIZED);
        assert_eq!(nvmlShutdown(), NVML_ERROR_UNINITIALIZED);
    }
}
