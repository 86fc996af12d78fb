//! cuDNN 9's statuses (`cudnnStatus_t` in cuDNN 9's `cudnn_graph.h`: a category in the thousands
//! plus a specific error), `cudnnGetErrorString`, the thread's last error for
//! `cudnnGetLastErrorString`, and the guard every exported function runs in: a failure is a
//! status with its words remembered, a panic is `CUDNN_STATUS_INTERNAL_ERROR`, never an unwind.

use std::cell::RefCell;
use std::ffi::{c_char, c_int, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// `cudnnStatus_t` as the C ABI returns it.
pub type Status = c_int;

/// `CUDNN_STATUS_SUCCESS`.
pub const SUCCESS: Status = 0;
/// `CUDNN_STATUS_NOT_INITIALIZED`: no usable GPU or context.
pub const NOT_INITIALIZED: Status = 1001;
/// `CUDNN_STATUS_BAD_PARAM`.
pub const BAD_PARAM: Status = 2000;
/// `CUDNN_STATUS_BAD_PARAM_NULL_POINTER`.
pub const BAD_PARAM_NULL_POINTER: Status = 2002;
/// `CUDNN_STATUS_NOT_SUPPORTED`.
pub const NOT_SUPPORTED: Status = 3000;
/// `CUDNN_STATUS_INTERNAL_ERROR`.
pub const INTERNAL_ERROR: Status = 4000;
/// `CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED`: cuDNN 9's code for device memory it
/// could not allocate (cuDNN 8's `CUDNN_STATUS_ALLOC_FAILED`).
pub const DEVICE_ALLOCATION_FAILED: Status = 4004;
/// `CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER`: the driver refused the work.
pub const EXECUTION_FAILED_CUDA_DRIVER: Status = 5001;

/// The C name of every status this library returns, as `cudnnGetErrorString` gives it.
fn name(status: Status) -> &'static CStr {
    match status {
        SUCCESS => c"CUDNN_STATUS_SUCCESS",
        NOT_INITIALIZED => c"CUDNN_STATUS_NOT_INITIALIZED",
        BAD_PARAM => c"CUDNN_STATUS_BAD_PARAM",
        BAD_PARAM_NULL_POINTER => c"CUDNN_STATUS_BAD_PARAM_NULL_POINTER",
        NOT_SUPPORTED => c"CUDNN_STATUS_NOT_SUPPORTED",
        INTERNAL_ERROR => c"CUDNN_STATUS_INTERNAL_ERROR",
        DEVICE_ALLOCATION_FAILED => c"CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED",
        EXECUTION_FAILED_CUDA_DRIVER => c"CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER",
        _ => c"CUDNN_UNKNOWN_STATUS",
    }
}

/// A failed call: its status and why, in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub status: Status,
    pub message: String,
}

impl Failure {
    /// A failure with `status`, saying `message`.
    pub fn new(status: Status, message: impl Into<String>) -> Failure {
        Failure {
            status,
            message: message.into(),
        }
    }

    /// `CUDNN_STATUS_BAD_PARAM`, saying `message`.
    pub fn bad(message: impl Into<String>) -> Failure {
        Failure::new(BAD_PARAM, message)
    }

    /// `CUDNN_STATUS_NOT_SUPPORTED`, saying `message`.
    pub fn unsupported(message: impl Into<String>) -> Failure {
        Failure::new(NOT_SUPPORTED, message)
    }
}

thread_local! {
    /// The calling thread's last error, until `cudnnGetLastErrorString` reads it.
    static LAST_ERROR: RefCell<String> = const { RefCell::new(String::new()) };
}

/// Runs exported function `call`: its status, the failure's words kept for the thread.
pub fn guarded(call: &str, body: impl FnOnce() -> Result<(), Failure>) -> Status {
    let failure = match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => return SUCCESS,
        Ok(Err(failure)) => failure,
        Err(_) => Failure::new(INTERNAL_ERROR, "the simulator failed internally"),
    };
    let text = format!(
        "{}: {} ({})",
        call,
        failure.message,
        name(failure.status).to_string_lossy()
    );
    LAST_ERROR.with(|last| *last.borrow_mut() = text);
    failure.status
}

/// Writes `value` through the caller's out-pointer `out`.
///
/// # Safety
/// `out`, when not null, must be valid for writing one `T`.
pub unsafe fn put<T>(out: *mut T, value: T, what: &str) -> Result<(), Failure> {
    if out.is_null() {
        return Err(Failure::new(
            BAD_PARAM_NULL_POINTER,
            format!("{what} is NULL"),
        ));
    }
    // SAFETY: not null, and valid for one `T` by the caller's contract.
    unsafe { out.write(value) };
    Ok(())
}

/// `const char *cudnnGetErrorString(cudnnStatus_t status)`: the status's C name.
#[no_mangle]
pub extern "C" fn cudnnGetErrorString(status: Status) -> *const c_char {
    name(status).as_ptr()
}

/// `void cudnnGetLastErrorString(char *message, size_t max_size)`: the thread's last error,
/// NUL-terminated and cut to `max_size` bytes; reading it clears it, as cuDNN documents.
///
/// # Safety
/// `message`, when not null, must be valid for writing `max_size` bytes.
#[no_mangle]
pub unsafe extern "C" fn cudnnGetLastErrorString(message: *mut c_char, max_size: usize) {
    if message.is_null() || max_size == 0 {
        return;
    }
    let text = LAST_ERROR.with(|last| std::mem::take(&mut *last.borrow_mut()));
    let len = text.len().min(max_size - 1);
    // SAFETY: `message` holds `max_size` bytes by the caller's contract; `len < max_size`.
    unsafe {
        std::ptr::copy_nonoverlapping(text.as_ptr().cast::<c_char>(), message, len);
        message.add(len).write(0);
    }
}
