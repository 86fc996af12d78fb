//! `cufftResult` (cuFFT 12's `cufft.h`) and the guard every exported function runs in: a panic
//! is `CUFFT_INTERNAL_ERROR`, never an unwind across the C ABI.

use std::ffi::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// `cufftResult` as the C ABI returns it.
pub type Result = c_int;

/// `CUFFT_SUCCESS`.
pub const SUCCESS: Result = 0;
/// `CUFFT_INVALID_PLAN`.
pub const INVALID_PLAN: Result = 1;
/// `CUFFT_ALLOC_FAILED`.
pub const ALLOC_FAILED: Result = 2;
/// `CUFFT_INVALID_TYPE`.
pub const INVALID_TYPE: Result = 3;
/// `CUFFT_INVALID_VALUE`.
pub const INVALID_VALUE: Result = 4;
/// `CUFFT_INTERNAL_ERROR`.
pub const INTERNAL_ERROR: Result = 5;
/// `CUFFT_EXEC_FAILED`.
pub const EXEC_FAILED: Result = 6;
/// `CUFFT_SETUP_FAILED`: no usable GPU or context.
pub const SETUP_FAILED: Result = 7;
/// `CUFFT_INVALID_SIZE`.
pub const INVALID_SIZE: Result = 8;
/// `CUFFT_NOT_SUPPORTED`.
pub const NOT_SUPPORTED: Result = 16;

/// Runs one exported function: its result, `CUFFT_INTERNAL_ERROR` if it panicked.
pub fn guarded(body: impl FnOnce() -> std::result::Result<(), Result>) -> Result {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => SUCCESS,
        Ok(Err(code)) => code,
        Err(_) => INTERNAL_ERROR,
    }
}

/// Writes `value` through the caller's out-pointer (NULL: `CUFFT_INVALID_VALUE`).
///
/// # Safety
/// `out`, when not null, must be valid for writing one `T`.
pub unsafe fn put<T>(out: *mut T, value: T) -> std::result::Result<(), Result> {
    if out.is_null() {
        return Err(INVALID_VALUE);
    }
    // SAFETY: not null, valid for one `T` by the caller's contract.
    unsafe { out.write(value) };
    Ok(())
}
