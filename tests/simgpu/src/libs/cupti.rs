//! The simulated CUPTI of CUDA 13.0 (`libcupti.so.13`, API version 130001): the Activity API
//! calls stackbench makes, at NVIDIA's C ABI. Kernel records are `CUpti_ActivityKernel10`
//! ([`record`]), written for every kernel and library kernel the simulated device completes
//! while a kernel kind is enabled, with their start and end on the model timeline, so the
//! durations CUPTI reports and those CUDA events measure come from the same simulated device
//! by different paths ([`activity`]). Statuses and their names are [`result`]'s.
//!
//! `cuptiSubscribe` and `cuptiUnsubscribe` keep CUPTI's one-subscriber rule; the Callback API
//! itself (`cuptiEnableCallback`, ...) is not provided, so a subscriber's callback is never
//! called. A panic never crosses the C ABI: it is `CUPTI_ERROR_UNKNOWN`.

pub mod activity;
pub mod record;
pub mod result;

use crate::state::sim;
use crate::trace;
use activity::{BufferCompleted, BufferRequested};
use result::{CUptiResult, Error};
use std::ffi::{c_char, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// `CUPTI_API_VERSION` of CUDA 13.0's CUPTI.
pub const API_VERSION: u32 = 130_001;

/// Runs one call; a panic is `CUPTI_ERROR_UNKNOWN`, never an unwind across the C ABI.
fn guarded(body: impl FnOnce() -> Result<(), Error>) -> CUptiResult {
    catch_unwind(AssertUnwindSafe(body)).map_or(Error::UNKNOWN.0, result::status)
}

/// Writes `value` to `out`, or `CUPTI_ERROR_INVALID_PARAMETER` for a null `out`.
///
/// # Safety
/// `out` must be null or valid for writing a `T`.
unsafe fn put<T>(out: *mut T, value: T) -> Result<(), Error> {
    if out.is_null() {
        return Err(Error::INVALID_PARAMETER);
    }
    // SAFETY: not null, and valid by the caller's contract.
    unsafe { out.write(value) };
    Ok(())
}

/// `cuptiGetVersion`: the API version, 130001 for CUDA 13.0.
///
/// # Safety
/// `version` must be null or valid for writing.
#[no_mangle]
pub unsafe extern "C" fn cuptiGetVersion(version: *mut u32) -> CUptiResult {
    // SAFETY: by the caller's contract.
    guarded(|| unsafe { put(version, API_VERSION) })
}

/// Writes the static string `text` gives for `code` to `out`; an unknown code is
/// `CUPTI_ERROR_INVALID_PARAMETER`, `out` then holding `"<unknown>"`.
///
/// # Safety
/// `out` must be null or valid for writing a pointer.
unsafe fn describe(
    code: CUptiResult,
    out: *mut *const c_char,
    text: fn(CUptiResult) -> Option<&'static str>,
) -> CUptiResult {
    guarded(|| {
        let found = text(code);
        let string = found.unwrap_or("<unknown>\0");
        // SAFETY: by the caller's contract; every string here is NUL-terminated and static.
        unsafe { put(out, string.as_ptr().cast::<c_char>()) }?;
        found.map(drop).ok_or(Error::INVALID_PARAMETER)
    })
}

/// `cuptiGetResultString`: the code's name (`CUPTI_ERROR_INVALID_KIND`).
///
/// # Safety
/// `text` must be null or valid for writing a pointer.
#[no_mangle]
pub unsafe extern "C" fn cuptiGetResultString(
    code: CUptiResult,
    text: *mut *const c_char,
) -> CUptiResult {
    // SAFETY: by the caller's contract.
    unsafe { describe(code, text, result::name) }
}

/// `cuptiGetErrorMessage` (CUDA 12.2 on): what the code means.
///
/// # Safety
/// `text` must be null or valid for writing a pointer.
#[no_mangle]
pub unsafe extern "C" fn cuptiGetErrorMessage(
    code: CUptiResult,
    text: *mut *const c_char,
) -> CUptiResult {
    // SAFETY: by the caller's contract.
    unsafe { describe(code, text, result::message) }
}

/// `cuptiActivityRegisterCallbacks`: the client's buffer callbacks (both needed).
#[no_mangle]
pub extern "C" fn cuptiActivityRegisterCallbacks(
    requested: Option<BufferRequested>,
    completed: Option<BufferCompleted>,
) -> CUptiResult {
    guarded(|| activity::register(sim(), requested, completed))
}

/// `cuptiActivityEnable`: `CUPTI_ACTIVITY_KIND_KERNEL` or `CONCURRENT_KERNEL` (one of them);
/// other kinds are not recorded here (`CUPTI_ERROR_NOT_SUPPORTED`). Traced with its answer.
#[no_mangle]
pub extern "C" fn cuptiActivityEnable(kind: u32) -> CUptiResult {
    let status = guarded(|| activity::enable(sim(), kind));
    trace::record(
        "cupti",
        "cuptiActivityEnable",
        &[("kind", kind.into()), ("status", status.into())],
    );
    status
}

/// `cuptiActivityDisable`.
#[no_mangle]
pub extern "C" fn cuptiActivityDisable(kind: u32) -> CUptiResult {
    guarded(|| activity::disable(sim(), kind))
}

/// `cuptiActivityFlushAll`: every record into the client's buffers, handed back before it
/// returns (all are complete, so the flag changes nothing). Traced with the records written.
#[no_mangle]
pub extern "C" fn cuptiActivityFlushAll(_flag: u32) -> CUptiResult {
    guarded(|| activity::flush(sim()))
}

/// `cuptiActivityGetNextRecord`.
///
/// # Safety
/// `buffer` must hold `valid` bytes this CUPTI wrote; `record` must be null or valid for
/// reading and writing a pointer that is null or a record of this buffer.
#[no_mangle]
pub unsafe extern "C" fn cuptiActivityGetNextRecord(
    buffer: *mut u8,
    valid: usize,
    record: *mut *mut u8,
) -> CUptiResult {
    guarded(|| {
        if buffer.is_null() || record.is_null() {
            return Err(Error::INVALID_PARAMETER);
        }
        // SAFETY: `record` is valid by the caller's contract.
        let previous = unsafe { *record };
        // SAFETY: by the caller's contract.
        let next = unsafe { record::next(buffer, valid, previous) }?;
        // SAFETY: as above.
        unsafe { *record = next };
        Ok(())
    })
}

/// `cuptiActivityGetNumDroppedRecords`: records that found no buffer (any context, stream).
///
/// # Safety
/// `dropped` must be null or valid for writing.
#[no_mangle]
pub unsafe extern "C" fn cuptiActivityGetNumDroppedRecords(
    _context: *mut c_void,
    _stream_id: u32,
    dropped: *mut usize,
) -> CUptiResult {
    // SAFETY: by the caller's contract.
    guarded(|| unsafe { put(dropped, activity::dropped(sim())) })
}

/// `cuptiSubscribe`: the one subscriber, or `CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED`
/// while another holds CUPTI. The handle is opaque; the callback is never called.
///
/// # Safety
/// `subscriber` must be null or valid for writing a pointer.
#[no_mangle]
pub unsafe extern "C" fn cuptiSubscribe(
    subscriber: *mut *mut c_void,
    _callback: Option<unsafe extern "C" fn(*mut c_void, u32, u32, *const c_void)>,
    _userdata: *mut c_void,
) -> CUptiResult {
    guarded(|| {
        if subscriber.is_null() {
            return Err(Error::INVALID_PARAMETER);
        }
        activity::subscribe(sim())?;
        // SAFETY: not null, and valid by the caller's contract.
        unsafe { put(subscriber, SUBSCRIBER.as_ptr().cast_mut().cast()) }
    })
}

/// The handle `cuptiSubscribe` gives.
static SUBSCRIBER: [u8; 1] = [0];

/// `cuptiUnsubscribe`.
#[no_mangle]
pub extern "C" fn cuptiUnsubscribe(subscriber: *mut c_void) -> CUptiResult {
    guarded(|| {
        if !std::ptr::eq(subscriber.cast_const().cast(), SUBSCRIBER.as_ptr()) {
            return Err(Error::INVALID_PARAMETER);
        }
        activity::unsubscribe(sim())
    })
}
