//! NVML (`libnvidia-ml.so.1`) at NVIDIA's C ABI, as nvml-wrapper 0.13 and stackbench's own
//! probe call it: initialisation (reference counted), the system's driver and CUDA versions,
//! device handles (one stable pointer per device index, found by index, PCI bus id or UUID), and
//! the device queries `check`'s `driver.nvml`/`driver.health`, `stackbench __gpu` and the bench
//! telemetry make. Answers come from the profile ([`model`] turns it and the faults into
//! readings); once the GPU has fallen off the bus (`lost_after_calls`) every device call answers
//! `NVML_ERROR_GPU_IS_LOST`.
//!
//! nvml-wrapper looks every symbol up when it loads the library and fails only on a missing
//! `nvmlInit_v2`; its `Nvml` calls `nvmlShutdown` when dropped (and panics if it is missing), so
//! both are exported with everything stackbench calls.

mod device;
pub mod identity;
pub mod locks;
pub mod model;
mod topology;

pub use device::*;
pub use topology::*;

use crate::profile::{Device, Faults, Profile};
use crate::state::{self, sim, Sim};
use std::ffi::{c_char, c_int, c_uint, CStr};
use std::sync::Mutex;

/// `nvmlReturn_t`.
#[allow(non_camel_case_types)]
pub type nvmlReturn_t = c_uint;

pub const NVML_SUCCESS: nvmlReturn_t = 0;
pub const NVML_ERROR_UNINITIALIZED: nvmlReturn_t = 1;
pub const NVML_ERROR_INVALID_ARGUMENT: nvmlReturn_t = 2;
pub const NVML_ERROR_NOT_SUPPORTED: nvmlReturn_t = 3;
pub const NVML_ERROR_NO_PERMISSION: nvmlReturn_t = 4;
pub const NVML_ERROR_NOT_FOUND: nvmlReturn_t = 6;
pub const NVML_ERROR_INSUFFICIENT_SIZE: nvmlReturn_t = 7;
pub const NVML_ERROR_GPU_IS_LOST: nvmlReturn_t = 15;
pub const NVML_ERROR_INSUFFICIENT_RESOURCES: nvmlReturn_t = 23;
pub const NVML_ERROR_ARGUMENT_VERSION_MISMATCH: nvmlReturn_t = 25;
pub const NVML_ERROR_UNKNOWN: nvmlReturn_t = 999;

/// `nvmlEnableState_t`.
#[allow(non_camel_case_types)]
pub type nvmlEnableState_t = c_uint;
pub const NVML_FEATURE_DISABLED: nvmlEnableState_t = 0;
pub const NVML_FEATURE_ENABLED: nvmlEnableState_t = 1;

/// What an `nvmlDevice_t` points at: the device's index. Callers never look inside.
#[derive(Debug)]
pub struct NvmlDevice {
    index: u32,
}

/// `nvmlDevice_t`.
#[allow(non_camel_case_types)]
pub type nvmlDevice_t = *mut NvmlDevice;

/// NVML's own state on one simulated host (the process's, or one a test gave its thread).
struct Host {
    /// The host's address: which [`Sim`] this is about.
    sim: usize,
    /// How many `nvmlInit` calls have not been matched by `nvmlShutdown` (NVML counts them:
    /// "calls to nvmlInit and nvmlShutdown are reference counted").
    inits: u32,
    /// One handle per device, made once: the pointers stay valid and equal for the process's
    /// life.
    handles: &'static [NvmlDevice],
    /// Whether `nvmlInit` has said why the profile cannot be read.
    said_why: bool,
}

/// Every host NVML has been asked about.
static HOSTS: Mutex<Vec<Host>> = Mutex::new(Vec::new());

/// Runs `f` on NVML's state for the calling thread's host.
fn with_host<R>(f: impl FnOnce(&'static Sim, &mut Host) -> R) -> R {
    let sim = sim();
    let key = std::ptr::from_ref(sim) as usize;
    let mut hosts = HOSTS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let at = match hosts.iter().position(|host| host.sim == key) {
        Some(at) => at,
        None => {
            let count = sim.profile.as_ref().map_or(0, |p| p.device.len());
            let handles: Box<[NvmlDevice]> = (0..count)
                .map(|index| NvmlDevice {
                    index: index as u32,
                })
                .collect();
            hosts.push(Host {
                sim: key,
                inits: 0,
                handles: Box::leak(handles),
                said_why: false,
            });
            hosts.len() - 1
        }
    };
    f(sim, &mut hosts[at])
}

/// The host, its profile and its device handles, while NVML is initialised.
fn initialised() -> Option<(&'static Sim, &'static Profile, &'static [NvmlDevice])> {
    let (sim, handles) = with_host(|sim, host| (host.inits > 0).then_some((sim, host.handles)))?;
    sim.profile
        .as_ref()
        .ok()
        .map(|profile| (sim, profile, handles))
}

/// The handle of device `index` (one of `handles`).
fn handle(handles: &'static [NvmlDevice], index: u32) -> nvmlDevice_t {
    let handle: *const NvmlDevice = &handles[index as usize];
    handle.cast_mut()
}

/// A device a call is about, with what its answers depend on.
pub(crate) struct Target<'a> {
    pub index: u32,
    pub device: &'a Device,
    pub faults: &'a Faults,
    /// The whole profile (the node the device is part of).
    pub profile: &'a Profile,
    /// Kernel launches so far (throttle reasons and the warmer readings follow them).
    pub launches: u64,
}

/// Runs a device query: `NVML_ERROR_UNINITIALIZED` before `nvmlInit`, `INVALID_ARGUMENT` for a
/// handle this library did not give, `GPU_IS_LOST` once the GPU fell off the bus; else `query`.
fn with_device(device: nvmlDevice_t, query: impl FnOnce(&Target) -> nvmlReturn_t) -> nvmlReturn_t {
    let Some((sim, profile, handles)) = initialised() else {
        return NVML_ERROR_UNINITIALIZED;
    };
    // Compared by address only: a foreign pointer is never read.
    let Some(index) = handles
        .iter()
        .position(|known| std::ptr::eq(known, device.cast_const()))
    else {
        return NVML_ERROR_INVALID_ARGUMENT;
    };
    if sim.lost() {
        return NVML_ERROR_GPU_IS_LOST;
    }
    query(&Target {
        index: handles[index].index,
        device: &profile.device[index],
        faults: &profile.faults,
        profile,
        launches: sim.launches(),
    })
}

/// Runs a query about two devices, each checked as [`with_device`] checks one; `query` is given
/// the first and the index of the second.
fn with_pair(
    first: nvmlDevice_t,
    second: nvmlDevice_t,
    query: impl FnOnce(&Target, usize) -> nvmlReturn_t,
) -> nvmlReturn_t {
    let mut other = None;
    let status = with_device(second, |b| {
        other = Some(b.index as usize);
        NVML_SUCCESS
    });
    match other {
        Some(other) => with_device(first, |a| query(a, other)),
        None => status,
    }
}

/// Writes `value` to the out-parameter `out`; `INVALID_ARGUMENT` when it is null.
///
/// # Safety
/// `out` is null or valid for a write of `T`.
unsafe fn put<T>(out: *mut T, value: T) -> nvmlReturn_t {
    if out.is_null() {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    // SAFETY: not null, and valid for a write by the caller's contract.
    unsafe { out.write(value) };
    NVML_SUCCESS
}

/// Copies `text` and its NUL into the caller's buffer of `length` bytes: `INVALID_ARGUMENT`
/// for a null buffer, `INSUFFICIENT_SIZE` (nothing written) when it does not fit.
///
/// # Safety
/// `buffer` is null or valid for writes of `length` bytes.
unsafe fn put_str(buffer: *mut c_char, length: c_uint, text: &str) -> nvmlReturn_t {
    if buffer.is_null() {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    let bytes = text.split('\0').next().unwrap_or_default().as_bytes();
    if (length as usize) < bytes.len() + 1 {
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    // SAFETY: the buffer holds `length` >= len + 1 bytes (the caller's contract); `bytes` is
    // our own string, which cannot overlap it.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), buffer.cast::<u8>(), bytes.len());
        buffer.add(bytes.len()).write(0);
    }
    NVML_SUCCESS
}

/// The text of a C string argument; `None` when null or not UTF-8.
///
/// # Safety
/// `text` is null or a NUL-terminated string.
unsafe fn get_str<'a>(text: *const c_char) -> Option<&'a str> {
    if text.is_null() {
        return None;
    }
    // SAFETY: a NUL-terminated string by the caller's contract.
    unsafe { CStr::from_ptr(text) }.to_str().ok()
}

/// `nvmlInit_v2`: reads the profile (once per process); one that cannot be read fails with
/// `NVML_ERROR_UNKNOWN` ("on any unexpected error") and says why on stderr, once.
#[no_mangle]
pub extern "C" fn nvmlInit_v2() -> nvmlReturn_t {
    with_host(|sim, host| match &sim.profile {
        Ok(_) => {
            host.inits += 1;
            NVML_SUCCESS
        }
        Err(why) => {
            if !host.said_why {
                host.said_why = true;
                eprintln!("stackbench simgpu: nvmlInit_v2: {why}");
            }
            NVML_ERROR_UNKNOWN
        }
    })
}

/// `nvmlInit`, the first version's name: the same.
#[no_mangle]
pub extern "C" fn nvmlInit() -> nvmlReturn_t {
    nvmlInit_v2()
}

/// `nvmlInitWithFlags`: the flags (`NVML_INIT_FLAG_NO_GPUS`, `NVML_INIT_FLAG_NO_ATTACH`) change
/// nothing here, where there is always a GPU to attach.
#[no_mangle]
pub extern "C" fn nvmlInitWithFlags(_flags: c_uint) -> nvmlReturn_t {
    nvmlInit_v2()
}

/// `nvmlShutdown`: undoes one `nvmlInit`; `NVML_ERROR_UNINITIALIZED` when none is left.
#[no_mangle]
pub extern "C" fn nvmlShutdown() -> nvmlReturn_t {
    with_host(|_, host| {
        if host.inits == 0 {
            return NVML_ERROR_UNINITIALIZED;
        }
        host.inits -= 1;
        NVML_SUCCESS
    })
}

/// `nvmlErrorString`: NVML's text for a code (any time, initialised or not).
#[no_mangle]
pub extern "C" fn nvmlErrorString(result: nvmlReturn_t) -> *const c_char {
    let text: &'static CStr = match result {
        0 => c"Success",
        1 => c"Uninitialized",
        2 => c"Invalid Argument",
        3 => c"Not Supported",
        4 => c"Insufficient Permissions",
        5 => c"Already Initialized",
        6 => c"Not Found",
        7 => c"Insufficient Size",
        8 => c"Insufficient External Power",
        9 => c"Driver Not Loaded",
        10 => c"Timeout",
        11 => c"Interrupt request issue",
        12 => c"NVML Shared Library Not Found",
        13 => c"Function Not Found",
        14 => c"Corrupted infoROM",
        15 => c"GPU is lost",
        16 => c"GPU requires restart",
        17 => c"The operating system has blocked the request.",
        18 => c"RM has detected an NVML/RM version mismatch.",
        19 => c"In use by another client",
        20 => c"Insufficient Memory",
        21 => c"No data",
        22 => c"The requested vgpu operation is not available on target device, becasue ECC is enabled",
        23 => c"Insufficient resources",
        24 => c"Frequency not supported",
        25 => c"Argument version mismatch",
        26 => c"Deprecated",
        27 => c"Not ready",
        28 => c"GPU not found",
        29 => c"Invalid state",
        _ => c"Unknown Error",
    };
    text.as_ptr()
}

/// `nvmlSystemGetDriverVersion`: the first device's `driver_version`.
///
/// # Safety
/// `version` is null or valid for writes of `length` bytes.
#[no_mangle]
pub unsafe extern "C" fn nvmlSystemGetDriverVersion(
    version: *mut c_char,
    length: c_uint,
) -> nvmlReturn_t {
    let Some((_, profile, _)) = initialised() else {
        return NVML_ERROR_UNINITIALIZED;
    };
    // SAFETY: the caller's buffer, as this function's contract says.
    unsafe { put_str(version, length, &profile.device[0].driver_version) }
}

/// `nvmlSystemGetNVMLVersion`: `<CUDA major>.<driver version>` (`13.580.95.05`), as NVML
/// numbers itself.
///
/// # Safety
/// `version` is null or valid for writes of `length` bytes.
#[no_mangle]
pub unsafe extern "C" fn nvmlSystemGetNVMLVersion(
    version: *mut c_char,
    length: c_uint,
) -> nvmlReturn_t {
    let Some((_, profile, _)) = initialised() else {
        return NVML_ERROR_UNINITIALIZED;
    };
    let first = &profile.device[0];
    let text = format!(
        "{}.{}",
        first.driver_api_version() / 1000,
        first.driver_version
    );
    // SAFETY: the caller's buffer, as this function's contract says.
    unsafe { put_str(version, length, &text) }
}

/// `nvmlSystemGetCudaDriverVersion_v2`: the CUDA version the driver supports, as
/// `cuDriverGetVersion` gives it (13.0 -> 13000).
///
/// # Safety
/// `version` is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn nvmlSystemGetCudaDriverVersion_v2(version: *mut c_int) -> nvmlReturn_t {
    let Some((_, profile, _)) = initialised() else {
        return NVML_ERROR_UNINITIALIZED;
    };
    // SAFETY: the caller's out-parameter.
    unsafe { put(version, profile.device[0].driver_api_version()) }
}

/// `nvmlSystemGetCudaDriverVersion`: the same.
///
/// # Safety
/// `version` is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn nvmlSystemGetCudaDriverVersion(version: *mut c_int) -> nvmlReturn_t {
    // SAFETY: the same contract.
    unsafe { nvmlSystemGetCudaDriverVersion_v2(version) }
}

/// `nvmlDeviceGetCount_v2`: the profile's devices (a lost GPU is still counted, as NVML does).
///
/// # Safety
/// `count` is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetCount_v2(count: *mut c_uint) -> nvmlReturn_t {
    let Some((_, profile, _)) = initialised() else {
        return NVML_ERROR_UNINITIALIZED;
    };
    // SAFETY: the caller's out-parameter.
    unsafe { put(count, profile.device.len() as c_uint) }
}

/// `nvmlDeviceGetCount`: the same.
///
/// # Safety
/// `count` is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetCount(count: *mut c_uint) -> nvmlReturn_t {
    // SAFETY: the same contract.
    unsafe { nvmlDeviceGetCount_v2(count) }
}

/// Gives the handle of the device `find` picks: `NOT_FOUND` when it picks none, `GPU_IS_LOST`
/// once the GPU fell off the bus.
///
/// # Safety
/// `device` is null or valid for a write.
unsafe fn give_handle(
    device: *mut nvmlDevice_t,
    find: impl FnOnce(&Profile) -> Result<u32, nvmlReturn_t>,
) -> nvmlReturn_t {
    let Some((sim, profile, handles)) = initialised() else {
        return NVML_ERROR_UNINITIALIZED;
    };
    if device.is_null() {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    let index = match find(profile) {
        Ok(index) => index,
        Err(status) => return status,
    };
    if sim.lost() {
        return NVML_ERROR_GPU_IS_LOST;
    }
    // SAFETY: not null, the caller's out-parameter.
    unsafe { put(device, handle(handles, index)) }
}

/// `nvmlDeviceGetHandleByIndex_v2`: `INVALID_ARGUMENT` for an index past the last device.
///
/// # Safety
/// `device` is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetHandleByIndex_v2(
    index: c_uint,
    device: *mut nvmlDevice_t,
) -> nvmlReturn_t {
    // SAFETY: the caller's out-parameter.
    unsafe {
        give_handle(device, |profile| {
            if (index as usize) < profile.device.len() {
                Ok(index)
            } else {
                Err(NVML_ERROR_INVALID_ARGUMENT)
            }
        })
    }
}

/// `nvmlDeviceGetHandleByIndex`: the same.
///
/// # Safety
/// `device` is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetHandleByIndex(
    index: c_uint,
    device: *mut nvmlDevice_t,
) -> nvmlReturn_t {
    // SAFETY: the same contract.
    unsafe { nvmlDeviceGetHandleByIndex_v2(index, device) }
}

/// `nvmlDeviceGetHandleByPciBusId_v2`: `domain:bus:device.function`, `domain:bus:device` or
/// `bus:device.function`, all hexadecimal; `INVALID_ARGUMENT` for anything else, `NOT_FOUND`
/// where no GPU sits.
///
/// # Safety
/// `pci_bus_id` is null or a NUL-terminated string; `device` is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetHandleByPciBusId_v2(
    pci_bus_id: *const c_char,
    device: *mut nvmlDevice_t,
) -> nvmlReturn_t {
    // SAFETY: the caller's string.
    let text = unsafe { get_str(pci_bus_id) };
    // SAFETY: the caller's out-parameter.
    unsafe {
        give_handle(device, |profile| {
            let (wanted, function) = text
                .and_then(identity::parse_bus_id)
                .ok_or(NVML_ERROR_INVALID_ARGUMENT)?;
            (0..profile.device.len() as u32)
                .find(|&index| function == 0 && state::pci(index as usize) == wanted)
                .ok_or(NVML_ERROR_NOT_FOUND)
        })
    }
}

/// `nvmlDeviceGetHandleByPciBusId`: the same.
///
/// # Safety
/// As [`nvmlDeviceGetHandleByPciBusId_v2`].
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetHandleByPciBusId(
    pci_bus_id: *const c_char,
    device: *mut nvmlDevice_t,
) -> nvmlReturn_t {
    // SAFETY: the same contract.
    unsafe { nvmlDeviceGetHandleByPciBusId_v2(pci_bus_id, device) }
}

/// `nvmlDeviceGetHandleByUUID`: `GPU-...` as `nvmlDeviceGetUUID` gives it (any case).
///
/// # Safety
/// `uuid` is null or a NUL-terminated string; `device` is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetHandleByUUID(
    uuid: *const c_char,
    device: *mut nvmlDevice_t,
) -> nvmlReturn_t {
    // SAFETY: the caller's string.
    let text = unsafe { get_str(uuid) };
    // SAFETY: the caller's out-parameter.
    unsafe {
        give_handle(device, |profile| {
            let text = text.ok_or(NVML_ERROR_INVALID_ARGUMENT)?.trim();
            (0..profile.device.len() as u32)
                .find(|&index| {
                    identity::uuid(index, &profile.device[index as usize])
                        .eq_ignore_ascii_case(text)
                })
                .ok_or(NVML_ERROR_NOT_FOUND)
        })
    }
}
