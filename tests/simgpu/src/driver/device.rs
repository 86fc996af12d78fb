//! `cuInit`, the driver's version and the devices: count, name, UUID, memory, PCI bus id and
//! attributes, each from the profile (name, UUID and PCI address as [`crate::state`] gives them
//! to NVML too).

use super::attributes;
use super::entry::{call, enter, offline};
use super::errors::{CUresult, Code};
use super::memop::Memops;
use super::{Gpu, Inner};
use crate::clock::Clock;
use crate::profile::Profile;
use crate::state::{pci, uuid, Sim};
use std::ffi::{c_char, c_int, c_uint};
use std::sync::Once;

impl Inner {
    /// The devices and faults of `profile`, ready for use.
    fn initialize(&mut self, profile: &Profile) {
        self.gpus = (profile.device.iter().enumerate())
            .map(|(index, device)| Gpu {
                profile: device.clone(),
                retained: 0,
                clock: Clock::new(device, index, &profile.faults),
                sticky: None,
                deferred: None,
                memo: None,
                memops: Memops::default(),
                used: 0,
            })
            .collect();
        self.profile = profile.clone();
        self.initialized = true;
    }

    /// The index of device ordinal `dev` (`CUDA_ERROR_INVALID_DEVICE` if there is none).
    pub(super) fn device(&self, dev: c_int) -> Result<usize, Code> {
        usize::try_from(dev)
            .ok()
            .filter(|d| *d < self.gpus.len())
            .ok_or(Code::INVALID_DEVICE)
    }

    /// A device's memory size, bytes.
    pub(super) fn total_memory(&self, gpu: usize) -> u64 {
        self.gpus[gpu].profile.memory_gib << 30
    }
}

/// The profile, or `CUDA_ERROR_NO_DEVICE` with why on standard error (once): a simulator whose
/// profile cannot be read has no device.
fn profile(sim: &Sim) -> Result<&Profile, Code> {
    static SAID: Once = Once::new();
    sim.profile.as_ref().map_err(|why| {
        SAID.call_once(|| eprintln!("stackbench simulated GPU: {why}"));
        Code::NO_DEVICE
    })
}

/// Writes `value` through `out`, or `CUDA_ERROR_INVALID_VALUE` for a null pointer.
///
/// # Safety
/// `out` must be null or valid for a write of `T`.
pub(super) unsafe fn put<T>(out: *mut T, value: T) -> Result<(), Code> {
    if out.is_null() {
        return Err(Code::INVALID_VALUE);
    }
    // SAFETY: non-null and writable by the caller's contract.
    unsafe { out.write(value) };
    Ok(())
}

/// `cuInit`: flags must be 0, and the process must see its own `/proc`: in a PID namespace that
/// reads the node's (`unshare --pid --fork` without `--mount-proc`), a real driver (580.159.04
/// on an H200) fails with `CUDA_ERROR_OPERATING_SYSTEM`, and so does this one.
#[no_mangle]
pub extern "C" fn cuInit(flags: c_uint) -> CUresult {
    call(|sim| {
        if flags != 0 {
            return Err(Code::INVALID_VALUE);
        }
        if !own_proc() {
            return Err(Code::OPERATING_SYSTEM);
        }
        let profile = profile(sim)?;
        let mut inner = sim.driver.lock();
        if !inner.initialized {
            inner.initialize(profile);
        }
        Ok(())
    })
}

/// Whether `/proc/self` is this process as `getpid` numbers it (a `/proc` of its PID namespace).
fn own_proc() -> bool {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let listed = stat
        .split(' ')
        .next()
        .and_then(|pid| pid.parse::<u32>().ok());
    listed == Some(std::process::id())
}

/// `cuDriverGetVersion`: the profile's `cuda_version` as 1000 x major + 10 x minor.
///
/// # Safety
/// `version` must be null or valid for an int write.
#[no_mangle]
pub unsafe extern "C" fn cuDriverGetVersion(version: *mut c_int) -> CUresult {
    offline(|sim| {
        let api = profile(sim)?.device[0].driver_api_version();
        // SAFETY: the caller's contract.
        unsafe { put(version, api) }
    })
}

/// `cuDeviceGetCount`.
///
/// # Safety
/// `count` must be null or valid for an int write.
#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetCount(count: *mut c_int) -> CUresult {
    call(|sim| {
        let devices = enter(sim)?.gpus.len() as c_int;
        // SAFETY: the caller's contract.
        unsafe { put(count, devices) }
    })
}

/// `cuDeviceGet`: the device of ordinal `ordinal` (a `CUdevice` is its ordinal).
///
/// # Safety
/// `device` must be null or valid for an int write.
#[no_mangle]
pub unsafe extern "C" fn cuDeviceGet(device: *mut c_int, ordinal: c_int) -> CUresult {
    call(|sim| {
        enter(sim)?.device(ordinal)?;
        // SAFETY: the caller's contract.
        unsafe { put(device, ordinal) }
    })
}

/// `cuDeviceGetName`: the profile's name, cut to `len - 1` bytes and NUL-terminated.
///
/// # Safety
/// `name` must be null or valid for `len` bytes of writes.
#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetName(name: *mut c_char, len: c_int, dev: c_int) -> CUresult {
    call(|sim| {
        let inner = enter(sim)?;
        let gpu = inner.device(dev)?;
        let capacity = usize::try_from(len).unwrap_or(0);
        if name.is_null() || capacity == 0 {
            return Err(Code::INVALID_VALUE);
        }
        let text = inner.gpus[gpu].profile.name.as_bytes();
        let n = text.len().min(capacity - 1);
        // SAFETY: `name` holds `len` bytes by the caller's contract; n + 1 <= len.
        unsafe {
            std::ptr::copy_nonoverlapping(text.as_ptr(), name.cast::<u8>(), n);
            name.add(n).write(0);
        }
        Ok(())
    })
}

/// `cuDeviceGetUuid_v2`: 16 bytes, the UUID NVML reports too.
///
/// # Safety
/// `out` must be null or valid for 16 bytes of writes.
#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetUuid_v2(out: *mut [u8; 16], dev: c_int) -> CUresult {
    call(|sim| {
        let inner = enter(sim)?;
        let gpu = inner.device(dev)?;
        // SAFETY: the caller's contract.
        unsafe { put(out, uuid(gpu, &inner.gpus[gpu].profile)) }
    })
}

/// `cuDeviceGetUuid`: the same as `_v2` (which differs only for MIG instances, which this
/// device has none of).
///
/// # Safety
/// `out` must be null or valid for 16 bytes of writes.
#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetUuid(out: *mut [u8; 16], dev: c_int) -> CUresult {
    // SAFETY: the caller's contract, passed on.
    unsafe { cuDeviceGetUuid_v2(out, dev) }
}

/// `cuDeviceTotalMem_v2`: the profile's `memory_gib`.
///
/// # Safety
/// `bytes` must be null or valid for a `size_t` write.
#[no_mangle]
pub unsafe extern "C" fn cuDeviceTotalMem_v2(bytes: *mut usize, dev: c_int) -> CUresult {
    call(|sim| {
        let inner = enter(sim)?;
        let gpu = inner.device(dev)?;
        // SAFETY: the caller's contract.
        unsafe { put(bytes, inner.total_memory(gpu) as usize) }
    })
}

/// `cuDeviceGetAttribute`.
///
/// # Safety
/// `value` must be null or valid for an int write.
#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetAttribute(
    value: *mut c_int,
    attribute: c_int,
    dev: c_int,
) -> CUresult {
    call(|sim| {
        let inner = enter(sim)?;
        let gpu = inner.device(dev)?;
        let numa = crate::node::numa(&inner.profile, gpu);
        let answer = attributes::value(&inner.gpus[gpu].profile, gpu, numa, attribute)
            .ok_or(Code::INVALID_VALUE)?;
        // SAFETY: the caller's contract.
        unsafe { put(value, answer) }
    })
}

/// `cuDeviceGetPCIBusId`: `0000:17:00.0`, cut to `len - 1` bytes and NUL-terminated.
///
/// # Safety
/// `bus_id` must be null or valid for `len` bytes of writes.
#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetPCIBusId(
    bus_id: *mut c_char,
    len: c_int,
    dev: c_int,
) -> CUresult {
    call(|sim| {
        let gpu = enter(sim)?.device(dev)?;
        let text = pci(gpu).bus_id();
        let capacity = usize::try_from(len).unwrap_or(0);
        if bus_id.is_null() || capacity == 0 {
            return Err(Code::INVALID_VALUE);
        }
        let n = text.len().min(capacity - 1);
        // SAFETY: `bus_id` holds `len` bytes by the caller's contract; n + 1 <= len.
        unsafe {
            std::ptr::copy_nonoverlapping(text.as_ptr(), bus_id.cast::<u8>(), n);
            bus_id.add(n).write(0);
        }
        Ok(())
    })
}
