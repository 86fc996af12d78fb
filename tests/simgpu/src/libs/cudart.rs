//! The simulated CUDA runtime (`libcudart.so.13`): the calls stackbench makes through it
//! (versions, device count and selection, `cudaMalloc`, `cudaMemcpy`, `cudaMemset`, `cudaFree`,
//! synchronisation, error names), on the simulated driver's exported `cu*` functions, with the
//! `cudaError_t` codes NVIDIA documents.
//!
//! As NVIDIA's runtime, it refuses a driver older than the CUDA it was built for:
//! `cudaErrorInsufficientDriver` (35) from every call that needs the driver when
//! `cuDriverGetVersion` answers less than 13000. A call that needs a device and finds no
//! current context retains the primary context of the thread's device (0 unless
//! `cudaSetDevice` chose another) and makes it current, as the runtime's lazy initialisation
//! does.

use crate::driver::{self, CUresult};
use std::cell::Cell;
use std::ffi::{c_char, c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// `CUDART_VERSION` of the toolkit this runtime stands for: CUDA 13.0.
pub const RUNTIME_VERSION: c_int = 13000;

/// A `cudaError_t`.
pub type CudaError = c_int;

/// The `cudaError_t` codes this runtime answers, with `cudaGetErrorName`'s and
/// `cudaGetErrorString`'s texts (NUL-terminated, as they are handed out).
const ERRORS: [(CudaError, &str, &str); 15] = [
    (0, "cudaSuccess\0", "no error\0"),
    (1, "cudaErrorInvalidValue\0", "invalid argument\0"),
    (2, "cudaErrorMemoryAllocation\0", "out of memory\0"),
    (
        3,
        "cudaErrorInitializationError\0",
        "initialization error\0",
    ),
    (
        21,
        "cudaErrorInvalidMemcpyDirection\0",
        "invalid copy direction for memcpy\0",
    ),
    (
        35,
        "cudaErrorInsufficientDriver\0",
        "CUDA driver version is insufficient for CUDA runtime version\0",
    ),
    (
        100,
        "cudaErrorNoDevice\0",
        "no CUDA-capable device is detected\0",
    ),
    (101, "cudaErrorInvalidDevice\0", "invalid device ordinal\0"),
    (
        201,
        "cudaErrorDeviceUninitialized\0",
        "invalid device context\0",
    ),
    (
        400,
        "cudaErrorInvalidResourceHandle\0",
        "invalid resource handle\0",
    ),
    (
        700,
        "cudaErrorIllegalAddress\0",
        "an illegal memory access was encountered\0",
    ),
    (
        719,
        "cudaErrorLaunchFailure\0",
        "unspecified launch failure\0",
    ),
    (801, "cudaErrorNotSupported\0", "operation not supported\0"),
    (999, "cudaErrorUnknown\0", "unknown error\0"),
    (
        46,
        "cudaErrorDevicesUnavailable\0",
        "CUDA-capable device(s) is/are busy or unavailable\0",
    ),
];

/// What `cudaGetErrorName` and `cudaGetErrorString` answer for a code they do not know.
const UNRECOGNIZED: &str = "unrecognized error code\0";

/// `cudaErrorInvalidValue`.
const INVALID_VALUE: CudaError = 1;
/// `cudaErrorInvalidMemcpyDirection`.
const INVALID_DIRECTION: CudaError = 21;
/// `cudaErrorInsufficientDriver`.
pub const INSUFFICIENT_DRIVER: CudaError = 35;
/// `cudaErrorInvalidDevice`.
const INVALID_DEVICE: CudaError = 101;
/// `cudaErrorUnknown`.
const UNKNOWN: CudaError = 999;

thread_local! {
    /// The device `cudaSetDevice` chose for this thread.
    static DEVICE: Cell<c_int> = const { Cell::new(0) };
    /// The last error a call of this thread returned (`cudaGetLastError`).
    static LAST: Cell<CudaError> = const { Cell::new(0) };
}

/// The runtime's error for a driver status: the codes both APIs share keep their number
/// (`CUDA_ERROR_OUT_OF_MEMORY` is `cudaErrorMemoryAllocation`, both 2), others are
/// `cudaErrorUnknown`.
pub fn from_driver(code: CUresult) -> CudaError {
    match code {
        0 | 1 | 2 | 3 | 46 | 100 | 101 | 201 | 400 | 700 | 719 | 801 => code,
        _ => UNKNOWN,
    }
}

/// A driver status as a runtime `Result`.
fn driver(code: CUresult) -> Result<(), CudaError> {
    match from_driver(code) {
        0 => Ok(()),
        error => Err(error),
    }
}

/// Runs one runtime call: a panic is `cudaErrorUnknown`, never an unwind across the C ABI, and
/// a failure is remembered for `cudaGetLastError`.
fn guarded(body: impl FnOnce() -> Result<(), CudaError>) -> CudaError {
    let code = match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => 0,
        Ok(Err(code)) => code,
        Err(_) => UNKNOWN,
    };
    if code != 0 {
        LAST.with(|l| l.set(code));
    }
    code
}

/// Writes `value` to `out`, which must not be null.
///
/// # Safety
/// `out` must be null or valid for a write of `T`.
unsafe fn put<T>(out: *mut T, value: T) -> Result<(), CudaError> {
    if out.is_null() {
        return Err(INVALID_VALUE);
    }
    // SAFETY: non-null, writable by the caller's contract.
    unsafe { out.write(value) };
    Ok(())
}

/// The runtime's start: a driver of CUDA 13.0 or newer, initialised.
fn initialize() -> Result<(), CudaError> {
    let mut version = 0;
    // SAFETY: a valid int to write.
    let known = unsafe { driver::cuDriverGetVersion(&mut version) };
    if known != 0 || version < RUNTIME_VERSION {
        return Err(INSUFFICIENT_DRIVER);
    }
    driver(driver::cuInit(0))
}

/// Makes sure the calling thread has a current context: the one it has, else the primary
/// context of its device, retained and made current. Shared with the simulated libraries, whose
/// handles come up on the runtime's context as NVIDIA's do.
pub fn context() -> Result<(), CudaError> {
    initialize()?;
    let mut current: *mut c_void = std::ptr::null_mut();
    // SAFETY: a valid pointer to write.
    driver(unsafe { driver::cuCtxGetCurrent(&mut current) })?;
    if current.is_null() {
        use_device(DEVICE.with(Cell::get))?;
    }
    Ok(())
}

/// Retains device `ordinal`'s primary context and makes it the thread's current one.
fn use_device(ordinal: c_int) -> Result<(), CudaError> {
    let mut count = 0;
    // SAFETY: a valid int to write.
    driver(unsafe { driver::cuDeviceGetCount(&mut count) })?;
    if !(0..count).contains(&ordinal) {
        return Err(INVALID_DEVICE);
    }
    let mut ctx: *mut c_void = std::ptr::null_mut();
    // SAFETY: a valid pointer to write; the device exists. The retain is never released: the
    // runtime keeps its primary contexts until the process ends.
    driver(unsafe { driver::cuDevicePrimaryCtxRetain(&mut ctx, ordinal) })?;
    driver(driver::cuCtxSetCurrent(ctx))?;
    DEVICE.with(|d| d.set(ordinal));
    Ok(())
}

/// `cudaRuntimeGetVersion`: 13000, without touching the driver.
///
/// # Safety
/// `version` must be null or valid for an int write.
#[no_mangle]
pub unsafe extern "C" fn cudaRuntimeGetVersion(version: *mut c_int) -> CudaError {
    // SAFETY: the caller's contract.
    guarded(|| unsafe { put(version, RUNTIME_VERSION) })
}

/// `cudaDriverGetVersion`: the driver's CUDA version, whatever it is (0 without a driver).
///
/// # Safety
/// `version` must be null or valid for an int write.
#[no_mangle]
pub unsafe extern "C" fn cudaDriverGetVersion(version: *mut c_int) -> CudaError {
    guarded(|| {
        let mut found = 0;
        // SAFETY: a valid int to write.
        if unsafe { driver::cuDriverGetVersion(&mut found) } != 0 {
            found = 0;
        }
        // SAFETY: the caller's contract.
        unsafe { put(version, found) }
    })
}

/// `cudaGetDeviceCount`.
///
/// # Safety
/// `count` must be null or valid for an int write.
#[no_mangle]
pub unsafe extern "C" fn cudaGetDeviceCount(count: *mut c_int) -> CudaError {
    guarded(|| {
        initialize()?;
        let mut found = 0;
        // SAFETY: a valid int to write.
        driver(unsafe { driver::cuDeviceGetCount(&mut found) })?;
        // SAFETY: the caller's contract.
        unsafe { put(count, found) }
    })
}

/// `cudaSetDevice`: device `ordinal`'s primary context, current on the calling thread.
#[no_mangle]
pub extern "C" fn cudaSetDevice(ordinal: c_int) -> CudaError {
    guarded(|| {
        initialize()?;
        use_device(ordinal)
    })
}

/// `cudaGetDevice`: the device of the thread's current context.
///
/// # Safety
/// `device` must be null or valid for an int write.
#[no_mangle]
pub unsafe extern "C" fn cudaGetDevice(device: *mut c_int) -> CudaError {
    guarded(|| {
        context()?;
        let mut found = 0;
        // SAFETY: a valid int to write.
        driver(unsafe { driver::cuCtxGetDevice(&mut found) })?;
        // SAFETY: the caller's contract.
        unsafe { put(device, found) }
    })
}

/// `cudaMalloc`: `size` bytes of device memory (a size of 0 gives NULL, as the runtime does).
///
/// # Safety
/// `ptr` must be null or valid for a pointer write.
#[no_mangle]
pub unsafe extern "C" fn cudaMalloc(ptr: *mut *mut c_void, size: usize) -> CudaError {
    guarded(|| {
        if ptr.is_null() {
            return Err(INVALID_VALUE);
        }
        context()?;
        let mut address = 0u64;
        if size > 0 {
            // SAFETY: a valid u64 to write.
            driver(unsafe { driver::cuMemAlloc_v2(&mut address, size) })?;
        }
        // SAFETY: the caller's contract; checked non-null above.
        unsafe { put(ptr, address as *mut c_void) }
    })
}

/// `cudaFree`: NULL is a no-op that initialises the runtime.
#[no_mangle]
pub extern "C" fn cudaFree(ptr: *mut c_void) -> CudaError {
    guarded(|| {
        context()?;
        if ptr.is_null() {
            return Ok(());
        }
        driver(driver::cuMemFree_v2(ptr as u64))
    })
}

/// `cudaMemGetInfo`.
///
/// # Safety
/// `free` and `total` must be null or valid for a `size_t` write.
#[no_mangle]
pub unsafe extern "C" fn cudaMemGetInfo(free: *mut usize, total: *mut usize) -> CudaError {
    guarded(|| {
        context()?;
        // SAFETY: the caller's contract.
        driver(unsafe { driver::cuMemGetInfo_v2(free, total) })
    })
}

/// `cudaMemcpyKind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    HostToHost,
    HostToDevice,
    DeviceToHost,
    DeviceToDevice,
}

impl Direction {
    /// The direction of `kind` (`cudaMemcpyDefault`, 4, is refused: the simulated driver gives
    /// device memory addresses no unified address space maps).
    fn of(kind: c_int) -> Result<Direction, CudaError> {
        match kind {
            0 => Ok(Direction::HostToHost),
            1 => Ok(Direction::HostToDevice),
            2 => Ok(Direction::DeviceToHost),
            3 => Ok(Direction::DeviceToDevice),
            _ => Err(INVALID_DIRECTION),
        }
    }
}

/// `cudaMemcpy`: synchronous, in the direction `kind` names.
///
/// # Safety
/// Host pointers must be valid for `count` bytes in the direction copied.
#[no_mangle]
pub unsafe extern "C" fn cudaMemcpy(
    dst: *mut c_void,
    src: *const c_void,
    count: usize,
    kind: c_int,
) -> CudaError {
    guarded(|| {
        let direction = Direction::of(kind)?;
        context()?;
        if count == 0 {
            return Ok(());
        }
        match direction {
            Direction::HostToHost => {
                if dst.is_null() || src.is_null() {
                    return Err(INVALID_VALUE);
                }
                // SAFETY: both valid for `count` bytes by the caller's contract; `copy` allows
                // overlap.
                unsafe { std::ptr::copy(src.cast::<u8>(), dst.cast::<u8>(), count) };
                Ok(())
            }
            // SAFETY: the caller's contract; the driver checks the device side.
            Direction::HostToDevice => {
                driver(unsafe { driver::cuMemcpyHtoD_v2(dst as u64, src, count) })
            }
            // SAFETY: as above.
            Direction::DeviceToHost => {
                driver(unsafe { driver::cuMemcpyDtoH_v2(dst, src as u64, count) })
            }
            Direction::DeviceToDevice => {
                driver(driver::cuMemcpyDtoD_v2(dst as u64, src as u64, count))
            }
        }
    })
}

/// `cudaMemset`: `count` bytes at `ptr` set to the low byte of `value`.
#[no_mangle]
pub extern "C" fn cudaMemset(ptr: *mut c_void, value: c_int, count: usize) -> CudaError {
    guarded(|| {
        context()?;
        driver(driver::cuMemsetD8_v2(ptr as u64, value as u8, count))
    })
}

/// `cudaDeviceSynchronize`.
#[no_mangle]
pub extern "C" fn cudaDeviceSynchronize() -> CudaError {
    guarded(|| {
        context()?;
        driver(driver::cuCtxSynchronize())
    })
}

/// `cudaGetLastError`: the last error of the thread's calls, which it resets.
#[no_mangle]
pub extern "C" fn cudaGetLastError() -> CudaError {
    LAST.with(|l| l.replace(0))
}

/// `cudaPeekAtLastError`: as `cudaGetLastError`, without resetting it.
#[no_mangle]
pub extern "C" fn cudaPeekAtLastError() -> CudaError {
    LAST.with(Cell::get)
}

/// `(name, description)` of `error`.
fn texts(error: CudaError) -> (&'static str, &'static str) {
    ERRORS
        .iter()
        .find(|(code, _, _)| *code == error)
        .map_or((UNRECOGNIZED, UNRECOGNIZED), |(_, name, text)| (name, text))
}

/// `cudaGetErrorName`: `"cudaErrorInsufficientDriver"` for 35.
#[no_mangle]
pub extern "C" fn cudaGetErrorName(error: CudaError) -> *const c_char {
    texts(error).0.as_ptr().cast()
}

/// `cudaGetErrorString`: the error's description.
#[no_mangle]
pub extern "C" fn cudaGetErrorString(error: CudaError) -> *const c_char {
    texts(error).1.as_ptr().cast()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_text_is_nul_terminated_and_codes_are_unique() {
        for (i, (code, name, text)) in ERRORS.iter().enumerate() {
            assert!(name.ends_with('\0') && text.ends_with('\0'), "{code}");
            assert!(ERRORS[..i].iter().all(|(other, _, _)| other != code));
        }
        assert_eq!(texts(35).0, "cudaErrorInsufficientDriver\0");
        assert_eq!(texts(12345).0, UNRECOGNIZED);
    }

    #[test]
    fn driver_codes_keep_their_number_where_the_runtime_shares_it() {
        assert_eq!(from_driver(2), 2);
        assert_eq!(from_driver(700), 700);
        assert_eq!(from_driver(222), UNKNOWN);
        assert_eq!(Direction::of(4), Err(INVALID_DIRECTION));
    }
}
