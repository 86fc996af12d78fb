//! The calling layer (cudarc's `result`): one safe function per C function, looked up in a library
//! that may not export it. `None` means the symbol is absent; `Some(Err(code))` a non-zero status.

use super::dl::Library;
use super::sys;
use std::ffi::{c_char, c_int, c_uint, CStr};

/// What one call gave: `None` if the library does not export the function.
pub type Call<T> = Option<Result<T, sys::status>>;

fn status<T>(code: sys::status, value: T) -> Result<T, sys::status> {
    if code == 0 {
        Ok(value)
    } else {
        Err(code)
    }
}

/// A static C string from a library (an error name), copied.
///
/// # Safety
/// `text` must be null or a NUL-terminated string.
unsafe fn copy(text: *const c_char) -> Option<String> {
    // SAFETY: by the caller's contract.
    (!text.is_null()).then(|| {
        unsafe { CStr::from_ptr(text) }
            .to_string_lossy()
            .into_owned()
    })
}

/// Any `int f(int *out)` function: `cuDriverGetVersion`, `cudaRuntimeGetVersion`, ...
fn int_out(lib: &Library, name: &CStr) -> Call<c_int> {
    // SAFETY: every name passed here is documented by NVIDIA with the IntOut signature.
    let f: sys::IntOut = unsafe { lib.function(name)? };
    let mut value: c_int = 0;
    // SAFETY: `value` is a valid int to write.
    let code = unsafe { f(&mut value) };
    Some(status(code, value))
}

/// Any `status f(status, const char **)` function: the library's own name for a status code.
fn status_name(lib: &Library, name: &CStr, code: sys::status) -> Option<String> {
    // SAFETY: every name passed here is documented by NVIDIA with the StatusName signature.
    let f: sys::StatusName = unsafe { lib.function(name)? };
    let mut text: *const c_char = std::ptr::null();
    // SAFETY: `text` is a valid pointer to write; on failure it stays null.
    let result = unsafe { f(code, &mut text) };
    if result == 0 {
        // SAFETY: a static string or null.
        unsafe { copy(text) }
    } else {
        None
    }
}

/// Any `size_t f(void)` function: `cudnnGetVersion`, `cublasLtGetVersion`, ...
fn size_getter(lib: &Library, name: &CStr) -> Option<usize> {
    // SAFETY: every name passed here is documented by NVIDIA with the SizeGetter signature.
    let f: sys::SizeGetter = unsafe { lib.function(name)? };
    // SAFETY: no arguments; a pure query.
    Some(unsafe { f() })
}

/// Any `const char *f(int code)` name lookup: `cudaGetErrorName`, `nvrtcGetErrorString`, ...
fn name_of(lib: &Library, name: &CStr, code: sys::status) -> Option<String> {
    // SAFETY: every name passed here is documented by NVIDIA with the NameOf signature.
    let f: sys::NameOf = unsafe { lib.function(name)? };
    // SAFETY: the function returns a static string or null, for any code.
    unsafe { copy(f(code)) }
}

/// The major, minor and patch level of a `*GetProperty(libraryPropertyType, int*)` function.
fn properties(lib: &Library, name: &CStr) -> Call<(c_int, c_int, c_int)> {
    // SAFETY: cublasGetProperty and cusparseGetProperty have the GetProperty signature.
    let f: sys::GetProperty = unsafe { lib.function(name)? };
    let mut parts = [0 as c_int; 3];
    for (kind, part) in (0..).zip(parts.iter_mut()) {
        // SAFETY: `part` is a valid int to write; 0, 1, 2 are MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL.
        let code = unsafe { f(kind, part) };
        if code != 0 {
            return Some(Err(code));
        }
    }
    Some(Ok((parts[0], parts[1], parts[2])))
}

/// `cuDriverGetVersion`: the newest CUDA version the driver supports.
pub fn cu_driver_get_version(lib: &Library) -> Call<c_int> {
    int_out(lib, c"cuDriverGetVersion")
}

/// `cuInit(0)`.
pub fn cu_init(lib: &Library) -> Call<()> {
    // SAFETY: cuInit has the CuInit signature.
    let f: sys::CuInit = unsafe { lib.function(c"cuInit")? };
    // SAFETY: flags must be 0.
    Some(status(unsafe { f(0) }, ()))
}

/// `cuDeviceGetCount`; only meaningful after a successful `cuInit`.
pub fn cu_device_get_count(lib: &Library) -> Call<c_int> {
    int_out(lib, c"cuDeviceGetCount")
}

/// `cuGetErrorName`: the driver's own name for a `CUresult`.
pub fn cu_get_error_name(lib: &Library, code: sys::status) -> Option<String> {
    status_name(lib, c"cuGetErrorName", code)
}

/// `cudaRuntimeGetVersion`.
pub fn cuda_runtime_get_version(lib: &Library) -> Call<c_int> {
    int_out(lib, c"cudaRuntimeGetVersion")
}

/// `cudaDriverGetVersion` (0 when no driver could be loaded).
pub fn cuda_driver_get_version(lib: &Library) -> Call<c_int> {
    int_out(lib, c"cudaDriverGetVersion")
}

/// `cudaGetDeviceCount`: loads and initialises the driver.
pub fn cuda_get_device_count(lib: &Library) -> Call<c_int> {
    int_out(lib, c"cudaGetDeviceCount")
}

/// `cudaGetErrorName`.
pub fn cuda_get_error_name(lib: &Library, code: sys::status) -> Option<String> {
    name_of(lib, c"cudaGetErrorName", code)
}

/// `cublasGetProperty` for major, minor and patch level.
pub fn cublas_get_property(lib: &Library) -> Call<(c_int, c_int, c_int)> {
    properties(lib, c"cublasGetProperty")
}

/// `cublasGetCudartVersion`: the CUDA runtime cuBLAS was built with.
pub fn cublas_get_cudart_version(lib: &Library) -> Option<usize> {
    size_getter(lib, c"cublasGetCudartVersion")
}

/// `cublasGetStatusName`.
pub fn cublas_get_status_name(lib: &Library, code: sys::status) -> Option<String> {
    name_of(lib, c"cublasGetStatusName", code)
}

/// `cublasLtGetVersion`.
pub fn cublas_lt_get_version(lib: &Library) -> Option<usize> {
    size_getter(lib, c"cublasLtGetVersion")
}

/// `cublasLtGetCudartVersion`.
pub fn cublas_lt_get_cudart_version(lib: &Library) -> Option<usize> {
    size_getter(lib, c"cublasLtGetCudartVersion")
}

/// `cudnnGetVersion`.
pub fn cudnn_get_version(lib: &Library) -> Option<usize> {
    size_getter(lib, c"cudnnGetVersion")
}

/// `cudnnGetCudartVersion`: the CUDA runtime cuDNN was built with.
pub fn cudnn_get_cudart_version(lib: &Library) -> Option<usize> {
    size_getter(lib, c"cudnnGetCudartVersion")
}

/// `cuptiGetVersion`: the CUPTI API version.
pub fn cupti_get_version(lib: &Library) -> Call<u32> {
    // SAFETY: cuptiGetVersion has the CuptiGetVersion signature.
    let f: sys::CuptiGetVersion = unsafe { lib.function(c"cuptiGetVersion")? };
    let mut version = 0u32;
    // SAFETY: `version` is a valid u32 to write.
    Some(status(unsafe { f(&mut version) }, version))
}

/// `cuptiGetResultString`.
pub fn cupti_get_result_string(lib: &Library, code: sys::status) -> Option<String> {
    status_name(lib, c"cuptiGetResultString", code)
}

/// `nvrtcVersion`: major and minor.
pub fn nvrtc_version(lib: &Library) -> Call<(c_int, c_int)> {
    // SAFETY: nvrtcVersion has the NvrtcVersion signature.
    let f: sys::NvrtcVersion = unsafe { lib.function(c"nvrtcVersion")? };
    let (mut major, mut minor) = (0, 0);
    // SAFETY: both are valid ints to write.
    Some(status(unsafe { f(&mut major, &mut minor) }, (major, minor)))
}

/// `nvrtcGetErrorString`.
pub fn nvrtc_get_error_string(lib: &Library, code: sys::status) -> Option<String> {
    name_of(lib, c"nvrtcGetErrorString", code)
}

/// `nvJitLinkVersion`: major and minor.
pub fn nvjitlink_version(lib: &Library) -> Call<(c_uint, c_uint)> {
    // SAFETY: nvJitLinkVersion has the NvJitLinkVersion signature.
    let f: sys::NvJitLinkVersion = unsafe { lib.function(c"nvJitLinkVersion")? };
    let (mut major, mut minor) = (0, 0);
    // SAFETY: both are valid unsigned ints to write.
    Some(status(unsafe { f(&mut major, &mut minor) }, (major, minor)))
}

/// `cufftGetVersion`.
pub fn cufft_get_version(lib: &Library) -> Call<c_int> {
    int_out(lib, c"cufftGetVersion")
}

/// `curandGetVersion`.
pub fn curand_get_version(lib: &Library) -> Call<c_int> {
    int_out(lib, c"curandGetVersion")
}

/// `ncclGetVersion`: `NCCL_VERSION_CODE` (see [`super::decode::nccl_version`]).
pub fn nccl_get_version(lib: &Library) -> Call<c_int> {
    int_out(lib, c"ncclGetVersion")
}

/// `ncclGetErrorString`: NCCL's text for a result code.
pub fn nccl_get_error_string(lib: &Library, code: sys::status) -> Option<String> {
    name_of(lib, c"ncclGetErrorString", code)
}

/// `cusparseGetProperty` for major, minor and patch level (`cusparseGetVersion` needs a handle).
pub fn cusparse_get_property(lib: &Library) -> Call<(c_int, c_int, c_int)> {
    properties(lib, c"cusparseGetProperty")
}

/// `nvmlInit_v2`.
pub fn nvml_init(lib: &Library) -> Call<()> {
    // SAFETY: nvmlInit_v2 has the NvmlNoArgs signature.
    let f: sys::NvmlNoArgs = unsafe { lib.function(c"nvmlInit_v2")? };
    // SAFETY: no arguments.
    Some(status(unsafe { f() }, ()))
}

/// `nvmlSystemGetDriverVersion`; call only after a successful `nvml_init`.
pub fn nvml_system_get_driver_version(lib: &Library) -> Call<String> {
    // SAFETY: nvmlSystemGetDriverVersion has the NvmlSystemGetDriverVersion signature.
    let f: sys::NvmlSystemGetDriverVersion =
        unsafe { lib.function(c"nvmlSystemGetDriverVersion")? };
    let mut buffer = [0 as c_char; 96];
    // SAFETY: the buffer is writable for its whole length, which is passed.
    let code = unsafe { f(buffer.as_mut_ptr(), buffer.len() as c_uint) };
    let last = buffer.len() - 1;
    buffer[last] = 0;
    // SAFETY: NUL-terminated (forced above).
    let text = unsafe { CStr::from_ptr(buffer.as_ptr()) }
        .to_string_lossy()
        .into_owned();
    Some(status(code, text))
}

/// `nvmlShutdown`.
pub fn nvml_shutdown(lib: &Library) -> Call<()> {
    // SAFETY: nvmlShutdown has the NvmlNoArgs signature.
    let f: sys::NvmlNoArgs = unsafe { lib.function(c"nvmlShutdown")? };
    // SAFETY: no arguments; NVML was initialised.
    Some(status(unsafe { f() }, ()))
}

/// `nvmlErrorString`.
pub fn nvml_error_string(lib: &Library, code: sys::status) -> Option<String> {
    name_of(lib, c"nvmlErrorString", code)
}
