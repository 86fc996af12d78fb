//! cuDNN's legacy C API as raw signatures (the `sys` layer, as in cudarc), for the cuDNN builds
//! whose status codes cudarc's enum does not know: cuDNN 8 (0..14), and any cuDNN newer than the
//! one whose header cudarc's enum was checked against.
//!
//! Every status is a plain `c_int` and every enum argument a `c_int` (C enums are `int`-sized
//! in the x86-64 and aarch64 Linux ABIs), never a Rust enum. Functions are reached through
//! `dlsym` on the combination's `libcudnn.so.N` (which forwards to its sub-libraries); none is
//! linked. The signatures and enum values below are the same in cuDNN 8.9's
//! `cudnn_ops_infer.h`/`cudnn_cnn_infer.h` and cuDNN 9's `cudnn_graph.h`/`cudnn_ops.h`/
//! `cudnn_cnn.h`.

use crate::check::worker::symbols::find;
use crate::probe::dl::Library;
use std::ffi::{c_char, c_int, c_void, CStr};

/// `cudnnStatus_t`, read as its `int`.
pub type RawStatus = c_int;

/// `cudnnHandle_t`, `cudnnTensorDescriptor_t`, `cudnnFilterDescriptor_t`,
/// `cudnnConvolutionDescriptor_t`: pointers to opaque structs.
pub type Raw = *mut c_void;

/// `CUDNN_TENSOR_NCHW` (`cudnnTensorFormat_t`): 0 in cuDNN 8 and 9.
pub const TENSOR_NCHW: c_int = 0;
/// `CUDNN_DATA_FLOAT` (`cudnnDataType_t`): 0 in cuDNN 8 and 9.
pub const DATA_FLOAT: c_int = 0;
/// `CUDNN_CROSS_CORRELATION` (`cudnnConvolutionMode_t`): 1 in cuDNN 8 and 9.
pub const CROSS_CORRELATION: c_int = 1;
/// `CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM` (`cudnnConvolutionFwdAlgo_t`): 0 in cuDNN 8 and 9.
pub const FWD_ALGO_IMPLICIT_GEMM: c_int = 0;
/// `CUDNN_FMA_MATH` (`cudnnMathType_t`): 3 in cuDNN 8 and 9 (new in cuDNN 8.0).
pub const FMA_MATH: c_int = 3;

/// `cudnnCreate(cudnnHandle_t *)`; also the shape of `cudnnCreateTensorDescriptor`,
/// `cudnnCreateFilterDescriptor` and `cudnnCreateConvolutionDescriptor`.
///
/// # Safety
/// `out` must be valid for writing one pointer.
pub type Create = unsafe extern "C" fn(out: *mut Raw) -> RawStatus;

/// `cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t)`; also `cudnnDestroyFilterDescriptor`
/// and `cudnnDestroyConvolutionDescriptor`.
///
/// # Safety
/// `object` must be live and of the kind the function destroys; it is freed.
pub type Destroy = unsafe extern "C" fn(object: Raw) -> RawStatus;

/// `cudnnSetTensor4dDescriptor(desc, format, dataType, n, c, h, w)`.
///
/// # Safety
/// `desc` must be a live tensor descriptor.
pub type SetTensor4d = unsafe extern "C" fn(
    desc: Raw,
    format: c_int,
    data_type: c_int,
    n: c_int,
    c: c_int,
    h: c_int,
    w: c_int,
) -> RawStatus;

/// `cudnnSetFilter4dDescriptor(desc, dataType, format, k, c, h, w)` (note: type before format,
/// the other way round from the tensor's).
///
/// # Safety
/// `desc` must be a live filter descriptor.
pub type SetFilter4d = unsafe extern "C" fn(
    desc: Raw,
    data_type: c_int,
    format: c_int,
    k: c_int,
    c: c_int,
    h: c_int,
    w: c_int,
) -> RawStatus;

/// `cudnnSetConvolution2dDescriptor(desc, pad_h, pad_w, u, v, dilation_h, dilation_w, mode,
/// computeType)`.
///
/// # Safety
/// `desc` must be a live convolution descriptor.
pub type SetConvolution2d = unsafe extern "C" fn(
    desc: Raw,
    pad_h: c_int,
    pad_w: c_int,
    u: c_int,
    v: c_int,
    dilation_h: c_int,
    dilation_w: c_int,
    mode: c_int,
    compute_type: c_int,
) -> RawStatus;

/// `cudnnSetConvolutionMathType(desc, mathType)`.
///
/// # Safety
/// `desc` must be a live convolution descriptor.
pub type SetMathType = unsafe extern "C" fn(desc: Raw, math_type: c_int) -> RawStatus;

/// `cudnnGetConvolution2dForwardOutputDim(convDesc, inputTensorDesc, filterDesc, &n, &c, &h,
/// &w)`.
///
/// # Safety
/// The descriptors must be live and set; each out pointer valid for one `c_int`.
pub type OutputDim = unsafe extern "C" fn(
    conv: Raw,
    input: Raw,
    filter: Raw,
    n: *mut c_int,
    c: *mut c_int,
    h: *mut c_int,
    w: *mut c_int,
) -> RawStatus;

/// `cudnnGetConvolutionForwardWorkspaceSize(handle, xDesc, wDesc, convDesc, yDesc, algo,
/// &sizeInBytes)`.
///
/// # Safety
/// The handle and descriptors must be live and set; `size` valid for one `size_t`.
pub type WorkspaceSize = unsafe extern "C" fn(
    handle: Raw,
    x: Raw,
    w: Raw,
    conv: Raw,
    y: Raw,
    algo: c_int,
    size: *mut usize,
) -> RawStatus;

/// `cudnnConvolutionForward(handle, alpha, xDesc, x, wDesc, w, convDesc, algo, workSpace,
/// workSpaceSizeInBytes, beta, yDesc, y)`.
///
/// # Safety
/// The handle and descriptors must be live and set; `x`, `w`, `y` and `workspace` device
/// memory of the sizes the descriptors and `workspace_size` say; `alpha` and `beta` host
/// pointers to one `float` each (FP32 data).
pub type ConvolutionForward = unsafe extern "C" fn(
    handle: Raw,
    alpha: *const c_void,
    x_desc: Raw,
    x: *const c_void,
    w_desc: Raw,
    w: *const c_void,
    conv: Raw,
    algo: c_int,
    workspace: *mut c_void,
    workspace_size: usize,
    beta: *const c_void,
    y_desc: Raw,
    y: *mut c_void,
) -> RawStatus;

/// `const char *cudnnGetErrorString(cudnnStatus_t)`: a static string for any code.
///
/// # Safety
/// The symbol must really have this signature.
pub type GetErrorString = unsafe extern "C" fn(status: RawStatus) -> *const c_char;

/// `void cudnnGetLastErrorString(char *message, size_t max_size)` (cuDNN 9.0 and later): the
/// thread's last error in words, NUL-terminated within `max_size`.
///
/// # Safety
/// `message` must be valid for writing `max_size` bytes.
pub type GetLastErrorString = unsafe extern "C" fn(message: *mut c_char, max_size: usize);

/// The functions the convolution check calls, looked up in one cuDNN library.
#[derive(Clone, Copy)]
pub struct Api {
    pub create: Create,
    pub create_tensor: Create,
    pub set_tensor: SetTensor4d,
    pub destroy_tensor: Destroy,
    pub create_filter: Create,
    pub set_filter: SetFilter4d,
    pub destroy_filter: Destroy,
    pub create_convolution: Create,
    pub set_convolution: SetConvolution2d,
    pub set_math_type: SetMathType,
    pub destroy_convolution: Destroy,
    pub output_dim: OutputDim,
    pub workspace_size: WorkspaceSize,
    pub forward: ConvolutionForward,
    /// Every cuDNN has it; `None` only for a library that is not cuDNN.
    pub error_string: Option<GetErrorString>,
    /// cuDNN 9.0 and later.
    pub last_error_string: Option<GetLastErrorString>,
}

impl Api {
    /// Looks every function up in `lib`; `Err` names the first one it does not export.
    pub fn load(lib: &Library) -> Result<Api, &'static CStr> {
        // SAFETY: each name is looked up as the type this module declares for it, from the
        // prototypes in NVIDIA's cuDNN 8.9 and 9.x headers (quoted on each type).
        unsafe {
            Ok(Api {
                create: find(lib, c"cudnnCreate")?,
                create_tensor: find(lib, c"cudnnCreateTensorDescriptor")?,
                set_tensor: find(lib, c"cudnnSetTensor4dDescriptor")?,
                destroy_tensor: find(lib, c"cudnnDestroyTensorDescriptor")?,
                create_filter: find(lib, c"cudnnCreateFilterDescriptor")?,
                set_filter: find(lib, c"cudnnSetFilter4dDescriptor")?,
                destroy_filter: find(lib, c"cudnnDestroyFilterDescriptor")?,
                create_convolution: find(lib, c"cudnnCreateConvolutionDescriptor")?,
                set_convolution: find(lib, c"cudnnSetConvolution2dDescriptor")?,
                set_math_type: find(lib, c"cudnnSetConvolutionMathType")?,
                destroy_convolution: find(lib, c"cudnnDestroyConvolutionDescriptor")?,
                output_dim: find(lib, c"cudnnGetConvolution2dForwardOutputDim")?,
                workspace_size: find(lib, c"cudnnGetConvolutionForwardWorkspaceSize")?,
                forward: find(lib, c"cudnnConvolutionForward")?,
                error_string: lib.function(c"cudnnGetErrorString"),
                last_error_string: lib.function(c"cudnnGetLastErrorString"),
            })
        }
    }
}
