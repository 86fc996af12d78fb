//! Raw C signatures of the version APIs the worker calls (the `sys` layer, as in cudarc).
//!
//! Every status is a plain `c_int` and every size a `usize`, never a Rust enum: a library may return
//! a code this build has never heard of, and an enum holding it would be undefined behaviour.
//! Functions are only ever reached through `dlsym` on a handle; none is linked.
#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_int, c_uint};

/// `CUresult`, `cudaError_t`, `cublasStatus_t`, `nvrtcResult`, ...: a C enum, read as its `int`.
pub type status = c_int;

/// `CUresult cuDriverGetVersion(int *driverVersion)`; also the shape of `cudaRuntimeGetVersion`,
/// `cudaDriverGetVersion`, `cudaGetDeviceCount`, `cuDeviceGetCount`, `cufftGetVersion` and
/// `curandGetVersion`: one `int` written, a status returned.
///
/// # Safety
/// `out` must be valid for writing one `c_int`; the symbol must really have this signature.
pub type IntOut = unsafe extern "C" fn(out: *mut c_int) -> status;

/// `CUresult cuInit(unsigned int Flags)`.
///
/// # Safety
/// The symbol must really have this signature. Initialises the driver: may start threads.
pub type CuInit = unsafe extern "C" fn(flags: c_uint) -> status;

/// `CUresult cuGetErrorName(CUresult error, const char **pStr)`; also
/// `CUptiResult cuptiGetResultString(CUptiResult result, const char **str)`.
///
/// # Safety
/// `name` must be valid for writing one pointer; the string it receives is static (or null).
pub type StatusName = unsafe extern "C" fn(code: status, name: *mut *const c_char) -> status;

/// `const char *cudaGetErrorName(cudaError_t error)`; also `cublasGetStatusName(cublasStatus_t)`,
/// `nvrtcGetErrorString(nvrtcResult)`, `nvmlErrorString(nvmlReturn_t)` and
/// `ncclGetErrorString(ncclResult_t)`.
///
/// # Safety
/// The symbol must really have this signature. The string returned is static (or null).
pub type NameOf = unsafe extern "C" fn(code: status) -> *const c_char;

/// `cublasStatus_t cublasGetProperty(libraryPropertyType type, int *value)`; also
/// `cusparseGetProperty`. `type`: 0 major, 1 minor, 2 patch level.
///
/// # Safety
/// `value` must be valid for writing one `c_int`.
pub type GetProperty = unsafe extern "C" fn(kind: c_int, value: *mut c_int) -> status;

/// `size_t cublasLtGetVersion(void)`; also `cublasLtGetCudartVersion`, `cublasGetCudartVersion`,
/// `cudnnGetVersion` and `cudnnGetCudartVersion`.
///
/// # Safety
/// The symbol must really have this signature.
pub type SizeGetter = unsafe extern "C" fn() -> usize;

/// `CUptiResult cuptiGetVersion(uint32_t *version)`.
///
/// # Safety
/// `version` must be valid for writing one `u32`.
pub type CuptiGetVersion = unsafe extern "C" fn(version: *mut u32) -> status;

/// `nvrtcResult nvrtcVersion(int *major, int *minor)`.
///
/// # Safety
/// `major` and `minor` must each be valid for writing one `c_int`.
pub type NvrtcVersion = unsafe extern "C" fn(major: *mut c_int, minor: *mut c_int) -> status;

/// `nvJitLinkResult nvJitLinkVersion(unsigned int *major, unsigned int *minor)`.
///
/// # Safety
/// `major` and `minor` must each be valid for writing one `c_uint`.
pub type NvJitLinkVersion = unsafe extern "C" fn(major: *mut c_uint, minor: *mut c_uint) -> status;

/// `nvmlReturn_t nvmlInit_v2(void)`; also `nvmlShutdown(void)`.
///
/// # Safety
/// The symbol must really have this signature. `nvmlInit_v2` may start threads.
pub type NvmlNoArgs = unsafe extern "C" fn() -> status;

/// `nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length)`.
///
/// # Safety
/// `version` must be valid for writing `length` bytes; NVML must have been initialised.
pub type NvmlSystemGetDriverVersion =
    unsafe extern "C" fn(version: *mut c_char, length: c_uint) -> status;
