//! cuDNN's versions (`cudnnGetVersion`: 9.13.0 is 91300; built for CUDA 13.0) and its handle:
//! `cudnnCreate` needs the calling thread's current CUDA context (none:
//! `CUDNN_STATUS_NOT_INITIALIZED`) and takes device memory for the handle, as cuDNN's does
//! (none to be had: `CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED`, so the profile's
//! `out_of_memory_above_mib` reaches it); `cudnnSetStream` picks the stream its work goes on.

use super::objects::{self, Handle, Object};
use super::status::{self, guarded, put, Failure, Status};
use crate::driver::{self, library};
use std::ffi::{c_int, c_void};

/// `CUDNN_VERSION` of cuDNN 9.13.0: `major * 10000 + minor * 100 + patch`.
pub const VERSION: usize = 91300;
/// `CUDART_VERSION` cuDNN was built with: CUDA 13.0.
pub const CUDART_VERSION: usize = 13000;
/// The device memory a handle keeps for itself.
pub const SCRATCH_BYTES: usize = 1 << 20;

/// `size_t cudnnGetVersion(void)`.
#[no_mangle]
pub extern "C" fn cudnnGetVersion() -> usize {
    VERSION
}

/// `size_t cudnnGetCudartVersion(void)`.
#[no_mangle]
pub extern "C" fn cudnnGetCudartVersion() -> usize {
    CUDART_VERSION
}

/// `cudnnGetProperty(libraryPropertyType type, int *value)`: `MAJOR_VERSION` (0),
/// `MINOR_VERSION` (1), `PATCH_LEVEL` (2).
///
/// # Safety
/// `value` must be valid for writing one `int`.
#[no_mangle]
pub unsafe extern "C" fn cudnnGetProperty(kind: c_int, value: *mut c_int) -> Status {
    guarded("cudnnGetProperty", || {
        let answer = match kind {
            0 => VERSION / 10000,
            1 => VERSION / 100 % 100,
            2 => VERSION % 100,
            other => {
                return Err(Failure::bad(format!(
                    "{other} is not a libraryPropertyType"
                )))
            }
        };
        // SAFETY: by the caller's contract; the parts are below 100.
        unsafe { put(value, answer as c_int, "value") }
    })
}

/// The handle at `raw`.
pub fn handle(raw: *mut c_void) -> Result<Handle, Failure> {
    objects::read(raw, "cudnnHandle_t", |o| match o {
        Object::Handle(h) => Some(*h),
        _ => None,
    })
}

/// `cudnnCreate(cudnnHandle_t *handle)`.
///
/// # Safety
/// `out` must be valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn cudnnCreate(out: *mut *mut c_void) -> Status {
    guarded("cudnnCreate", || {
        if out.is_null() {
            return Err(Failure::bad("the handle pointer is NULL"));
        }
        library::current().map_err(|code| {
            Failure::new(
                status::NOT_INITIALIZED,
                format!(
                    "no CUDA context is current on this thread (driver error {})",
                    code.0
                ),
            )
        })?;
        let mut scratch = 0u64;
        // SAFETY: a valid out-pointer.
        let code = unsafe { driver::cuMemAlloc_v2(&mut scratch, SCRATCH_BYTES) };
        if code != 0 {
            return Err(Failure::new(
                status::DEVICE_ALLOCATION_FAILED,
                format!(
                    "cuMemAlloc of the handle's {SCRATCH_BYTES} bytes failed with CUresult {code}"
                ),
            ));
        }
        let raw = objects::insert(Object::Handle(Handle { stream: 0, scratch }));
        // SAFETY: not null, valid for one pointer by the caller's contract.
        unsafe { put(out, raw, "the handle pointer") }
    })
}

/// `cudnnDestroy(cudnnHandle_t)`: frees the handle's device memory.
#[no_mangle]
pub extern "C" fn cudnnDestroy(raw: *mut c_void) -> Status {
    guarded("cudnnDestroy", || {
        let object = objects::remove(raw, "cudnnHandle_t", |o| matches!(o, Object::Handle(_)))?;
        if let Object::Handle(handle) = object {
            // The context may be gone already; the handle is destroyed regardless.
            driver::cuMemFree_v2(handle.scratch);
        }
        Ok(())
    })
}

/// `cudnnSetStream(handle, stream)`.
#[no_mangle]
pub extern "C" fn cudnnSetStream(raw: *mut c_void, stream: *mut c_void) -> Status {
    guarded("cudnnSetStream", || {
        let handle = Handle {
            stream: stream as usize,
            ..handle(raw)?
        };
        objects::set(raw, "cudnnHandle_t", Object::Handle(handle))
    })
}

/// `cudnnGetStream(handle, &stream)`.
///
/// # Safety
/// `stream` must be valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn cudnnGetStream(raw: *mut c_void, stream: *mut *mut c_void) -> Status {
    guarded("cudnnGetStream", || {
        let handle = handle(raw)?;
        // SAFETY: by the caller's contract.
        unsafe { put(stream, handle.stream as *mut c_void, "stream") }
    })
}
