//! The device queries, each as NVIDIA documents it: the handle checked first (see
//! [`super::with_device`]), then its arguments (`NVML_ERROR_INVALID_ARGUMENT` for a null output
//! or an unknown enum value), then the answer from [`super::model`] and [`super::identity`].

use super::{
    identity, locks, model, nvmlDevice_t, nvmlEnableState_t, nvmlReturn_t, put, put_str,
    with_device, NVML_ERROR_ARGUMENT_VERSION_MISMATCH, NVML_ERROR_INSUFFICIENT_SIZE,
    NVML_ERROR_INVALID_ARGUMENT, NVML_ERROR_NOT_FOUND, NVML_ERROR_NOT_SUPPORTED,
    NVML_ERROR_NO_PERMISSION, NVML_FEATURE_DISABLED, NVML_FEATURE_ENABLED, NVML_SUCCESS,
};
use std::ffi::{c_char, c_int, c_uint, c_ulonglong};

/// `nvmlMemory_t`, bytes.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct nvmlMemory_t {
    pub total: c_ulonglong,
    pub free: c_ulonglong,
    pub used: c_ulonglong,
}

/// `nvmlMemory_v2_t`, bytes; `version` is `nvmlMemory_v2` (its size | 2 << 24).
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct nvmlMemory_v2_t {
    pub version: c_uint,
    pub total: c_ulonglong,
    pub reserved: c_ulonglong,
    pub free: c_ulonglong,
    pub used: c_ulonglong,
}

/// `nvmlMemory_v2`: `NVML_STRUCT_VERSION(Memory, 2)`.
pub const NVML_MEMORY_V2: c_uint = std::mem::size_of::<nvmlMemory_v2_t>() as c_uint | (2 << 24);

/// `nvmlPciInfo_t` (the layout of `nvmlDeviceGetPciInfo_v3`).
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct nvmlPciInfo_t {
    pub bus_id_legacy: [c_char; 16],
    pub domain: c_uint,
    pub bus: c_uint,
    pub device: c_uint,
    pub pci_device_id: c_uint,
    pub pci_sub_system_id: c_uint,
    pub bus_id: [c_char; 32],
}

/// `NVML_TEMPERATURE_GPU`.
const NVML_TEMPERATURE_GPU: c_uint = 0;
/// `NVML_MEMORY_ERROR_TYPE_CORRECTED`, `..._UNCORRECTED`.
const NVML_MEMORY_ERROR_TYPE_CORRECTED: c_uint = 0;
const NVML_MEMORY_ERROR_TYPE_UNCORRECTED: c_uint = 1;
/// `NVML_VOLATILE_ECC`, `NVML_AGGREGATE_ECC`.
const NVML_VOLATILE_ECC: c_uint = 0;
const NVML_AGGREGATE_ECC: c_uint = 1;
/// `NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS`, `..._DOUBLE_BIT_ECC_ERROR`.
const NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS: c_uint = 0;
const NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR: c_uint = 1;

fn enabled(on: bool) -> nvmlEnableState_t {
    if on {
        NVML_FEATURE_ENABLED
    } else {
        NVML_FEATURE_DISABLED
    }
}

/// `text` into a fixed C array, NUL-terminated (cut to fit).
pub(super) fn c_array<const N: usize>(text: &str) -> [c_char; N] {
    let mut array = [0 as c_char; N];
    for (slot, byte) in array.iter_mut().zip(text.bytes().take(N - 1)) {
        *slot = byte as c_char;
    }
    array
}

/// `nvmlDeviceGetIndex`: the index `nvmlDeviceGetHandleByIndex_v2` takes.
///
/// # Safety
/// `index` is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetIndex(
    device: nvmlDevice_t,
    index: *mut c_uint,
) -> nvmlReturn_t {
    // SAFETY: the caller's out-parameter.
    with_device(device, |d| unsafe { put(index, d.index) })
}

/// `nvmlDeviceGetName`: the profile's name (which says "simulated").
///
/// # Safety
/// `name` is null or valid for writes of `length` bytes.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetName(
    device: nvmlDevice_t,
    name: *mut c_char,
    length: c_uint,
) -> nvmlReturn_t {
    // SAFETY: the caller's buffer.
    with_device(device, |d| unsafe { put_str(name, length, &d.device.name) })
}

/// `nvmlDeviceGetUUID`: `GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`, fixed per device index.
///
/// # Safety
/// `uuid` is null or valid for writes of `length` bytes.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetUUID(
    device: nvmlDevice_t,
    uuid: *mut c_char,
    length: c_uint,
) -> nvmlReturn_t {
    // SAFETY: the caller's buffer.
    with_device(device, |d| unsafe {
        put_str(uuid, length, &identity::uuid(d.index, d.device))
    })
}

/// `nvmlDeviceGetPciInfo_v3`: the location the driver's `CU_DEVICE_ATTRIBUTE_PCI_*` give.
///
/// # Safety
/// `pci` is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetPciInfo_v3(
    device: nvmlDevice_t,
    pci: *mut nvmlPciInfo_t,
) -> nvmlReturn_t {
    with_device(device, |d| {
        let at = crate::state::pci(d.index as usize);
        let info = nvmlPciInfo_t {
            bus_id_legacy: c_array(&identity::legacy_bus_id(&at)),
            domain: at.domain,
            bus: at.bus,
            device: at.device,
            pci_device_id: identity::PCI_DEVICE_ID << 16 | identity::NVIDIA_VENDOR_ID,
            pci_sub_system_id: identity::PCI_SUBSYSTEM_ID,
            bus_id: c_array(&identity::bus_id(&at)),
        };
        // SAFETY: the caller's out-parameter.
        unsafe { put(pci, info) }
    })
}

/// `nvmlDeviceGetCudaComputeCapability`: the profile's.
///
/// # Safety
/// `major` and `minor` are null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetCudaComputeCapability(
    device: nvmlDevice_t,
    major: *mut c_int,
    minor: *mut c_int,
) -> nvmlReturn_t {
    with_device(device, |d| {
        if major.is_null() || minor.is_null() {
            return NVML_ERROR_INVALID_ARGUMENT;
        }
        let (ma, mi) = d.device.compute_capability();
        // SAFETY: both checked not null; the caller's out-parameters.
        unsafe {
            put(major, ma);
            put(minor, mi)
        }
    })
}

/// The device's memory in bytes: `memory_gib` GiB.
fn memory_total(d: &super::Target) -> u64 {
    d.device.memory_gib << 30
}

/// The device's memory in use, bytes: what other users' processes hold.
fn memory_used(d: &super::Target) -> u64 {
    model::memory_used(d.index, d.device, d.faults)
}

/// `nvmlDeviceGetMemoryInfo`.
///
/// # Safety
/// `memory` is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetMemoryInfo(
    device: nvmlDevice_t,
    memory: *mut nvmlMemory_t,
) -> nvmlReturn_t {
    with_device(device, |d| {
        let (total, used) = (memory_total(d), memory_used(d));
        let info = nvmlMemory_t {
            total,
            free: total - used,
            used,
        };
        // SAFETY: the caller's out-parameter.
        unsafe { put(memory, info) }
    })
}

/// `nvmlDeviceGetMemoryInfo_v2`: the caller sets `version` to `nvmlMemory_v2`, else
/// `NVML_ERROR_ARGUMENT_VERSION_MISMATCH`.
///
/// # Safety
/// `memory` is null or valid for a read and a write.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetMemoryInfo_v2(
    device: nvmlDevice_t,
    memory: *mut nvmlMemory_v2_t,
) -> nvmlReturn_t {
    with_device(device, |d| {
        if memory.is_null() {
            return NVML_ERROR_INVALID_ARGUMENT;
        }
        // SAFETY: not null; the caller's in-out parameter.
        if unsafe { (*memory).version } != NVML_MEMORY_V2 {
            return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
        }
        let (total, used) = (memory_total(d), memory_used(d));
        let info = nvmlMemory_v2_t {
            version: NVML_MEMORY_V2,
            total,
            reserved: 0,
            free: total - used,
            used,
        };
        // SAFETY: as above.
        unsafe { put(memory, info) }
    })
}

/// `nvmlDeviceGetClockInfo`, MHz: the SM clock, lower while throttled.
///
/// # Safety
/// `clock` is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetClockInfo(
    device: nvmlDevice_t,
    clock_type: c_uint,
    clock: *mut c_uint,
) -> nvmlReturn_t {
    with_device(device, |d| {
        let Some(kind) = model::ClockType::from_c(clock_type) else {
            return NVML_ERROR_INVALID_ARGUMENT;
        };
        let reasons = model::clocks_event_reasons(d.faults, d.launches);
        let locks = locks::of(d.device, d.index);
        let locked = match kind {
            model::ClockType::Memory => locks.memory,
            _ => locks.sm,
        };
        // SAFETY: the caller's out-parameter.
        unsafe { put(clock, model::clock_mhz(d.device, kind, reasons, locked)) }
    })
}

/// `nvmlDeviceGetMaxClockInfo`, MHz.
///
/// # Safety
/// `clock` is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetMaxClockInfo(
    device: nvmlDevice_t,
    clock_type: c_uint,
    clock: *mut c_uint,
) -> nvmlReturn_t {
    with_device(device, |d| {
        let Some(kind) = model::ClockType::from_c(clock_type) else {
            return NVML_ERROR_INVALID_ARGUMENT;
        };
        // SAFETY: the caller's out-parameter.
        unsafe { put(clock, model::max_clock_mhz(d.device, kind)) }
    })
}

/// Sets or resets device `d`'s lock of `kind` as the driver does: root only
/// (`NVML_ERROR_NO_PERMISSION` otherwise), a range within the clock's maximum.
/// `NVML_CLOCK_LIMIT_ID_TDP`: as a locked clock, the clock the device sustains at its power
/// limit (the profile's `tdp_clock_mhz`).
const NVML_CLOCK_LIMIT_ID_TDP: c_uint = 0xffff_ff01;
/// `NVML_CLOCK_LIMIT_ID_UNLIMITED`: as a locked clock, the maximum.
const NVML_CLOCK_LIMIT_ID_UNLIMITED: c_uint = 0xffff_ff02;

fn lock(d: &super::Target, kind: locks::Locked, range: Option<(u32, u32)>) -> nvmlReturn_t {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return NVML_ERROR_NO_PERMISSION;
    }
    let clock = match kind {
        locks::Locked::Sm => model::ClockType::Sm,
        locks::Locked::Memory => model::ClockType::Memory,
    };
    // NVML's clock limit ids stand for clocks of the device's own: the TDP clock, or none.
    let range = range.map(|(min, max)| {
        let limit = |mhz: u32| match mhz {
            NVML_CLOCK_LIMIT_ID_TDP if kind == locks::Locked::Sm => d.device.tdp_clock_mhz,
            NVML_CLOCK_LIMIT_ID_UNLIMITED => model::max_clock_mhz(d.device, clock),
            mhz => mhz,
        };
        (limit(min), limit(max))
    });
    if let Some((min, max)) = range {
        if min > max || max > model::max_clock_mhz(d.device, clock) {
            return NVML_ERROR_INVALID_ARGUMENT;
        }
    }
    if locks::set(d.device, d.index, kind, range) {
        NVML_SUCCESS
    } else {
        NVML_ERROR_NOT_SUPPORTED
    }
}

/// `nvmlDeviceSetGpuLockedClocks`: locks the SM clock within `min`..`max` MHz.
#[no_mangle]
pub extern "C" fn nvmlDeviceSetGpuLockedClocks(
    device: nvmlDevice_t,
    min: c_uint,
    max: c_uint,
) -> nvmlReturn_t {
    with_device(device, |d| lock(d, locks::Locked::Sm, Some((min, max))))
}

/// `nvmlDeviceResetGpuLockedClocks`.
#[no_mangle]
pub extern "C" fn nvmlDeviceResetGpuLockedClocks(device: nvmlDevice_t) -> nvmlReturn_t {
    with_device(device, |d| lock(d, locks::Locked::Sm, None))
}

/// `nvmlDeviceSetMemoryLockedClocks`: locks the memory clock within `min`..`max` MHz.
#[no_mangle]
pub extern "C" fn nvmlDeviceSetMemoryLockedClocks(
    device: nvmlDevice_t,
    min: c_uint,
    max: c_uint,
) -> nvmlReturn_t {
    with_device(device, |d| lock(d, locks::Locked::Memory, Some((min, max))))
}

/// `nvmlDeviceResetMemoryLockedClocks`.
#[no_mangle]
pub extern "C" fn nvmlDeviceResetMemoryLockedClocks(device: nvmlDevice_t) -> nvmlReturn_t {
    with_device(device, |d| lock(d, locks::Locked::Memory, None))
}

/// `nvmlDeviceGetApplicationsClock`, MHz: the defaults (the maximum clocks), never changed.
///
/// # Safety
/// `clock` is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetApplicationsClock(
    device: nvmlDevice_t,
    clock_type: c_uint,
    clock: *mut c_uint,
) -> nvmlReturn_t {
    // SAFETY: the same contract.
    unsafe { nvmlDeviceGetDefaultApplicationsClock(device, clock_type, clock) }
}

/// `nvmlDeviceGetDefaultApplicationsClock`, MHz: the maximum clocks.
///
/// # Safety
/// `clock` is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetDefaultApplicationsClock(
    device: nvmlDevice_t,
    clock_type: c_uint,
    clock: *mut c_uint,
) -> nvmlReturn_t {
    // SAFETY: the same contract as the maximum's.
    unsafe { nvmlDeviceGetMaxClockInfo(device, clock_type, clock) }
}

/// `nvmlProcessInfo_t` (`nvmlProcessInfo_v2_t`), as `..._v2` and `..._v3` of
/// `nvmlDeviceGetComputeRunningProcesses` fill it.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct nvmlProcessInfo_t {
    pub pid: c_uint,
    /// Bytes.
    pub used_gpu_memory: c_ulonglong,
    /// `0xFFFFFFFF` where MIG is off, as here.
    pub gpu_instance_id: c_uint,
    pub compute_instance_id: c_uint,
}

/// `NVML_VALUE_NOT_AVAILABLE` as an instance id: MIG is off.
const NO_INSTANCE: c_uint = 0xFFFF_FFFF;

/// `nvmlDeviceGetComputeRunningProcesses_v3`: `faults.other_processes` processes. `*count` is
/// the room in `infos` on entry and the number of processes on return; with too little room
/// (a null `infos` counts as none) the answer is `NVML_ERROR_INSUFFICIENT_SIZE`, nothing
/// written, as nvml.h says ("a size of 0 ... returns the number of processes").
///
/// # Safety
/// `count` is null or valid for a read and a write; `infos` is null or valid for writes of
/// `*count` elements.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetComputeRunningProcesses_v3(
    device: nvmlDevice_t,
    count: *mut c_uint,
    infos: *mut nvmlProcessInfo_t,
) -> nvmlReturn_t {
    with_device(device, |d| {
        if count.is_null() {
            return NVML_ERROR_INVALID_ARGUMENT;
        }
        let processes = model::foreign_processes(d.index, d.device, d.faults);
        let room = if infos.is_null() {
            0
        } else {
            // SAFETY: not null; the caller's in-out parameter.
            unsafe { count.read() as usize }
        };
        // SAFETY: as above.
        unsafe { count.write(processes.len() as c_uint) };
        if room < processes.len() {
            return NVML_ERROR_INSUFFICIENT_SIZE;
        }
        for (i, p) in processes.iter().enumerate() {
            let info = nvmlProcessInfo_t {
                pid: p.pid,
                used_gpu_memory: p.used_bytes,
                gpu_instance_id: NO_INSTANCE,
                compute_instance_id: NO_INSTANCE,
            };
            // SAFETY: i < processes.len() <= room, the length of the caller's array.
            unsafe { infos.add(i).write(info) };
        }
        NVML_SUCCESS
    })
}

/// `nvmlDeviceGetComputeRunningProcesses_v2`: the same structure, the same answer.
///
/// # Safety
/// As [`nvmlDeviceGetComputeRunningProcesses_v3`].
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetComputeRunningProcesses_v2(
    device: nvmlDevice_t,
    count: *mut c_uint,
    infos: *mut nvmlProcessInfo_t,
) -> nvmlReturn_t {
    // SAFETY: the same contract.
    unsafe { nvmlDeviceGetComputeRunningProcesses_v3(device, count, infos) }
}

/// `nvmlDeviceGetTemperature(NVML_TEMPERATURE_GPU)`, C.
///
/// # Safety
/// `temperature` is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetTemperature(
    device: nvmlDevice_t,
    sensor: c_uint,
    temperature: *mut c_uint,
) -> nvmlReturn_t {
    with_device(device, |d| {
        if sensor != NVML_TEMPERATURE_GPU {
            return NVML_ERROR_INVALID_ARGUMENT;
        }
        let reasons = model::clocks_event_reasons(d.faults, d.launches);
        // SAFETY: the caller's out-parameter.
        unsafe { put(temperature, model::temperature_c(reasons, d.launches)) }
    })
}

/// `nvmlDeviceGetPowerUsage`, mW.
///
/// # Safety
/// `power` is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetPowerUsage(
    device: nvmlDevice_t,
    power: *mut c_uint,
) -> nvmlReturn_t {
    with_device(device, |d| {
        let reasons = model::clocks_event_reasons(d.faults, d.launches);
        // SAFETY: the caller's out-parameter.
        unsafe { put(power, model::power_mw(reasons, d.launches)) }
    })
}

/// `nvmlDeviceGetEnforcedPowerLimit`, mW.
///
/// # Safety
/// `limit` is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetEnforcedPowerLimit(
    device: nvmlDevice_t,
    limit: *mut c_uint,
) -> nvmlReturn_t {
    // SAFETY: the caller's out-parameter.
    with_device(device, |_| unsafe { put(limit, model::POWER_LIMIT_MW) })
}

/// `nvmlDeviceGetCurrentClocksEventReasons`: idle before any kernel ran, then the profile's
/// `throttle` reasons.
///
/// # Safety
/// `reasons` is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetCurrentClocksEventReasons(
    device: nvmlDevice_t,
    reasons: *mut c_ulonglong,
) -> nvmlReturn_t {
    with_device(device, |d| {
        // SAFETY: the caller's out-parameter.
        unsafe { put(reasons, model::clocks_event_reasons(d.faults, d.launches)) }
    })
}

/// `nvmlDeviceGetCurrentClocksThrottleReasons`, the name before NVML 12.2: the same.
///
/// # Safety
/// `reasons` is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetCurrentClocksThrottleReasons(
    device: nvmlDevice_t,
    reasons: *mut c_ulonglong,
) -> nvmlReturn_t {
    // SAFETY: the same contract.
    unsafe { nvmlDeviceGetCurrentClocksEventReasons(device, reasons) }
}

/// `nvmlDeviceGetSupportedClocksEventReasons`.
///
/// # Safety
/// `reasons` is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetSupportedClocksEventReasons(
    device: nvmlDevice_t,
    reasons: *mut c_ulonglong,
) -> nvmlReturn_t {
    // SAFETY: the caller's out-parameter.
    with_device(device, |_| unsafe {
        put(reasons, model::SUPPORTED_REASONS)
    })
}

/// `nvmlDeviceGetSupportedClocksThrottleReasons`: the same.
///
/// # Safety
/// `reasons` is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetSupportedClocksThrottleReasons(
    device: nvmlDevice_t,
    reasons: *mut c_ulonglong,
) -> nvmlReturn_t {
    // SAFETY: the same contract.
    unsafe { nvmlDeviceGetSupportedClocksEventReasons(device, reasons) }
}

/// `nvmlDeviceGetPersistenceMode`: enabled, as on a well-run server, unless the profile's
/// `persistence_off` fault.
///
/// # Safety
/// `mode` is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetPersistenceMode(
    device: nvmlDevice_t,
    mode: *mut nvmlEnableState_t,
) -> nvmlReturn_t {
    // SAFETY: the caller's out-parameter.
    with_device(device, |d| unsafe {
        put(mode, enabled(!d.faults.persistence_off))
    })
}

/// `nvmlDeviceGetEccMode`: enabled now and after the next reboot.
///
/// # Safety
/// `current` and `pending` are null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetEccMode(
    device: nvmlDevice_t,
    current: *mut nvmlEnableState_t,
    pending: *mut nvmlEnableState_t,
) -> nvmlReturn_t {
    with_device(device, |_| {
        if current.is_null() || pending.is_null() {
            return NVML_ERROR_INVALID_ARGUMENT;
        }
        // SAFETY: both checked not null; the caller's out-parameters.
        unsafe {
            put(current, NVML_FEATURE_ENABLED);
            put(pending, NVML_FEATURE_ENABLED)
        }
    })
}

/// `nvmlDeviceGetTotalEccErrors`: no corrected errors; `faults.ecc_uncorrected` uncorrected
/// ones, counted both since the driver loaded (volatile) and over the board's life (aggregate).
///
/// # Safety
/// `count` is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetTotalEccErrors(
    device: nvmlDevice_t,
    error_type: c_uint,
    counter_type: c_uint,
    count: *mut c_ulonglong,
) -> nvmlReturn_t {
    with_device(device, |d| {
        if !matches!(counter_type, NVML_VOLATILE_ECC | NVML_AGGREGATE_ECC) {
            return NVML_ERROR_INVALID_ARGUMENT;
        }
        let errors = match error_type {
            NVML_MEMORY_ERROR_TYPE_CORRECTED => 0,
            NVML_MEMORY_ERROR_TYPE_UNCORRECTED => d.faults.ecc_uncorrected,
            _ => return NVML_ERROR_INVALID_ARGUMENT,
        };
        // SAFETY: the caller's out-parameter.
        unsafe { put(count, errors) }
    })
}

/// The retired pages of `cause` into the caller's arrays, as both versions of
/// `nvmlDeviceGetRetiredPages` do: `*page_count` is the room on entry and the number of pages
/// on return; `INSUFFICIENT_SIZE` when there is not room for all (a count of 0 asks only how
/// many).
///
/// # Safety
/// `page_count` is null or valid for a read and a write; `addresses` and `timestamps` are null
/// or valid for writes of `*page_count` elements.
unsafe fn retired_pages(
    device: nvmlDevice_t,
    cause: c_uint,
    page_count: *mut c_uint,
    addresses: *mut c_ulonglong,
    timestamps: *mut c_ulonglong,
) -> nvmlReturn_t {
    with_device(device, |d| {
        let double_bit = match cause {
            NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR => true,
            NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS => false,
            _ => return NVML_ERROR_INVALID_ARGUMENT,
        };
        if page_count.is_null() {
            return NVML_ERROR_INVALID_ARGUMENT;
        }
        // SAFETY: not null; the caller's in-out parameter.
        let room = unsafe { page_count.read() } as usize;
        let pages = model::retired_pages(d.faults, double_bit);
        // SAFETY: as above.
        unsafe { page_count.write(pages.len() as c_uint) };
        if room < pages.len() {
            return NVML_ERROR_INSUFFICIENT_SIZE;
        }
        if pages.is_empty() {
            return NVML_SUCCESS;
        }
        if addresses.is_null() {
            return NVML_ERROR_INVALID_ARGUMENT;
        }
        for (i, (address, timestamp)) in pages.into_iter().enumerate() {
            // SAFETY: i < pages.len() <= room, the length of the caller's arrays.
            unsafe {
                addresses.add(i).write(address);
                if !timestamps.is_null() {
                    timestamps.add(i).write(timestamp);
                }
            }
        }
        NVML_SUCCESS
    })
}

/// `nvmlDeviceGetRetiredPages`: `faults.retired_pages` pages retired for double-bit ECC errors.
///
/// # Safety
/// `page_count` is null or valid for a read and a write; `addresses` is null or valid for
/// writes of `*page_count` elements.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetRetiredPages(
    device: nvmlDevice_t,
    cause: c_uint,
    page_count: *mut c_uint,
    addresses: *mut c_ulonglong,
) -> nvmlReturn_t {
    // SAFETY: the same contract, without timestamps.
    unsafe { retired_pages(device, cause, page_count, addresses, std::ptr::null_mut()) }
}

/// `nvmlDeviceGetRetiredPages_v2`: the same, with when each page was retired.
///
/// # Safety
/// As [`nvmlDeviceGetRetiredPages`], and `timestamps` as `addresses`.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetRetiredPages_v2(
    device: nvmlDevice_t,
    cause: c_uint,
    page_count: *mut c_uint,
    addresses: *mut c_ulonglong,
    timestamps: *mut c_ulonglong,
) -> nvmlReturn_t {
    if timestamps.is_null() {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    // SAFETY: the caller's contract.
    unsafe { retired_pages(device, cause, page_count, addresses, timestamps) }
}

/// `nvmlDeviceGetRetiredPagesPendingStatus`: the profile's retired pages were retired since the
/// driver loaded, so they wait for a reset (XID 63: "reload the driver to activate").
///
/// # Safety
/// `pending` is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetRetiredPagesPendingStatus(
    device: nvmlDevice_t,
    pending: *mut nvmlEnableState_t,
) -> nvmlReturn_t {
    with_device(device, |d| {
        let on = enabled(model::pages_pending_retirement(d.faults));
        // SAFETY: the caller's out-parameter.
        unsafe { put(pending, on) }
    })
}

/// `nvmlDeviceGetRemappedRows`: with `faults.row_remap_pending`, one row remapped for an
/// uncorrectable error and waiting for a reset; never a failure.
///
/// # Safety
/// The four outputs are null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetRemappedRows(
    device: nvmlDevice_t,
    corr_rows: *mut c_uint,
    unc_rows: *mut c_uint,
    is_pending: *mut c_uint,
    failure_occurred: *mut c_uint,
) -> nvmlReturn_t {
    with_device(device, |d| {
        if corr_rows.is_null()
            || unc_rows.is_null()
            || is_pending.is_null()
            || failure_occurred.is_null()
        {
            return NVML_ERROR_INVALID_ARGUMENT;
        }
        let (corrected, uncorrected, pending, failed) = model::remapped_rows(d.faults);
        // SAFETY: all four checked not null; the caller's out-parameters.
        unsafe {
            put(corr_rows, corrected);
            put(unc_rows, uncorrected);
            put(is_pending, c_uint::from(pending));
            put(failure_occurred, c_uint::from(failed))
        }
    })
}

/// `nvmlSystemGetProcessName`: the name of one of the simulated devices' other processes;
/// `NVML_ERROR_NOT_FOUND` for any other pid (this host runs no such process).
///
/// # Safety
/// `name` is null or valid for writes of `length` bytes.
#[no_mangle]
pub unsafe extern "C" fn nvmlSystemGetProcessName(
    pid: c_uint,
    name: *mut c_char,
    length: c_uint,
) -> nvmlReturn_t {
    let Some((_, profile, _)) = super::initialised() else {
        return super::NVML_ERROR_UNINITIALIZED;
    };
    let found = (0..profile.device.len() as u32)
        .flat_map(|i| model::foreign_processes(i, &profile.device[i as usize], &profile.faults))
        .find(|p| p.pid == pid);
    match found {
        // SAFETY: the caller's buffer.
        Some(p) => unsafe { put_str(name, length, p.name) },
        None => NVML_ERROR_NOT_FOUND,
    }
}
