//! Tensor, filter and convolution descriptors: `cudnnCreate*Descriptor`, the 4-D and 2-D
//! setters with cuDNN's argument order and checks, and `cudnnDestroy*Descriptor`.
//! Enum values are those of cuDNN 9's `cudnn_graph.h` (`cudnnDataType_t`,
//! `cudnnTensorFormat_t`, `cudnnMathType_t`) and `cudnn_cnn.h` (`cudnnConvolutionMode_t`),
//! unchanged from cuDNN 8.

use super::conv::Mode;
use super::objects::{self, Convolution, Filter, Object, Tensor};
use super::status::{guarded, put, Failure, Status};
use std::ffi::{c_int, c_void};

/// `CUDNN_DATA_FLOAT`.
pub const DATA_FLOAT: c_int = 0;
/// The last `cudnnDataType_t` cuDNN 9 defines (`CUDNN_DATA_COMPLEX_FP64`).
const LAST_DATA_TYPE: c_int = 21;
/// `CUDNN_TENSOR_NCHW`.
const NCHW: c_int = 0;
/// `CUDNN_TENSOR_NHWC`.
const NHWC: c_int = 1;
/// `CUDNN_TENSOR_NCHW_VECT_C`.
const NCHW_VECT_C: c_int = 2;
/// The last `cudnnMathType_t` (`CUDNN_FMA_MATH`).
const LAST_MATH_TYPE: c_int = 3;

/// A data type argument: one cuDNN defines, else `BAD_PARAM`.
fn data_type(value: c_int) -> Result<i32, Failure> {
    if (0..=LAST_DATA_TYPE).contains(&value) {
        Ok(value)
    } else {
        Err(Failure::bad(format!("{value} is not a cudnnDataType_t")))
    }
}

/// Positive `int` dimensions as sizes, else `BAD_PARAM` naming `what`.
fn dims(values: [c_int; 4], what: &str) -> Result<[usize; 4], Failure> {
    let mut out = [0; 4];
    for (slot, value) in out.iter_mut().zip(values) {
        *slot = usize::try_from(value)
            .ok()
            .filter(|&v| v > 0)
            .ok_or_else(|| {
                Failure::bad(format!(
                    "{what} {values:?}: every dimension must be positive"
                ))
            })?;
    }
    Ok(out)
}

/// Creates an unset descriptor of `object`'s kind behind `out`.
///
/// # Safety
/// `out`, when not null, must be valid for writing one pointer.
unsafe fn create(out: *mut *mut c_void, object: Object) -> Result<(), Failure> {
    if out.is_null() {
        return Err(Failure::bad("the descriptor pointer is NULL"));
    }
    // SAFETY: not null, valid for one pointer by the caller's contract.
    unsafe { put(out, objects::insert(object), "the descriptor pointer") }
}

/// `cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t *)`.
///
/// # Safety
/// `desc` must be valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn cudnnCreateTensorDescriptor(desc: *mut *mut c_void) -> Status {
    // SAFETY: by the caller's contract.
    guarded("cudnnCreateTensorDescriptor", || unsafe {
        create(desc, Object::Tensor(None))
    })
}

/// `cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t *)`.
///
/// # Safety
/// `desc` must be valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn cudnnCreateFilterDescriptor(desc: *mut *mut c_void) -> Status {
    // SAFETY: by the caller's contract.
    guarded("cudnnCreateFilterDescriptor", || unsafe {
        create(desc, Object::Filter(None))
    })
}

/// `cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t *)`.
///
/// # Safety
/// `desc` must be valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn cudnnCreateConvolutionDescriptor(desc: *mut *mut c_void) -> Status {
    // SAFETY: by the caller's contract.
    guarded("cudnnCreateConvolutionDescriptor", || unsafe {
        create(desc, Object::Convolution(None))
    })
}

/// `cudnnSetTensor4dDescriptor(desc, format, dataType, n, c, h, w)`: packed strides of NCHW or
/// NHWC.
#[no_mangle]
pub extern "C" fn cudnnSetTensor4dDescriptor(
    desc: *mut c_void,
    format: c_int,
    data_type_value: c_int,
    n: c_int,
    c: c_int,
    h: c_int,
    w: c_int,
) -> Status {
    guarded("cudnnSetTensor4dDescriptor", || {
        let data_type = data_type(data_type_value)?;
        let [n, c, h, w] = dims([n, c, h, w], "tensor")?;
        let strides = match format {
            NCHW => [c * h * w, h * w, w, 1],
            NHWC => [h * w * c, 1, w * c, c],
            NCHW_VECT_C => return Err(Failure::unsupported("CUDNN_TENSOR_NCHW_VECT_C tensors")),
            other => {
                return Err(Failure::bad(format!(
                    "{other} is not a cudnnTensorFormat_t"
                )))
            }
        };
        let tensor = Tensor {
            data_type,
            dims: [n, c, h, w],
            strides,
        };
        objects::set(desc, "tensor descriptor", Object::Tensor(Some(tensor)))
    })
}

/// `cudnnSetTensor4dDescriptorEx(desc, dataType, n, c, h, w, nStride, cStride, hStride,
/// wStride)`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cudnnSetTensor4dDescriptorEx(
    desc: *mut c_void,
    data_type_value: c_int,
    n: c_int,
    c: c_int,
    h: c_int,
    w: c_int,
    n_stride: c_int,
    c_stride: c_int,
    h_stride: c_int,
    w_stride: c_int,
) -> Status {
    guarded("cudnnSetTensor4dDescriptorEx", || {
        let tensor = Tensor {
            data_type: data_type(data_type_value)?,
            dims: dims([n, c, h, w], "tensor")?,
            strides: dims([n_stride, c_stride, h_stride, w_stride], "strides")?,
        };
        objects::set(desc, "tensor descriptor", Object::Tensor(Some(tensor)))
    })
}

/// `cudnnSetFilter4dDescriptor(desc, dataType, format, k, c, h, w)`: type before format, the
/// other way round from the tensor's. KCRS (`CUDNN_TENSOR_NCHW`) only.
#[no_mangle]
pub extern "C" fn cudnnSetFilter4dDescriptor(
    desc: *mut c_void,
    data_type_value: c_int,
    format: c_int,
    k: c_int,
    c: c_int,
    h: c_int,
    w: c_int,
) -> Status {
    guarded("cudnnSetFilter4dDescriptor", || {
        let data_type = data_type(data_type_value)?;
        let dims = dims([k, c, h, w], "filter")?;
        match format {
            NCHW => {}
            NHWC | NCHW_VECT_C => {
                return Err(Failure::unsupported(
                    "filters in a layout other than KCRS (CUDNN_TENSOR_NCHW)",
                ))
            }
            other => {
                return Err(Failure::bad(format!(
                    "{other} is not a cudnnTensorFormat_t"
                )))
            }
        }
        objects::set(
            desc,
            "filter descriptor",
            Object::Filter(Some(Filter { data_type, dims })),
        )
    })
}

/// `cudnnSetConvolution2dDescriptor(desc, pad_h, pad_w, u, v, dilation_h, dilation_w, mode,
/// computeType)`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cudnnSetConvolution2dDescriptor(
    desc: *mut c_void,
    pad_h: c_int,
    pad_w: c_int,
    u: c_int,
    v: c_int,
    dilation_h: c_int,
    dilation_w: c_int,
    mode: c_int,
    compute_type: c_int,
) -> Status {
    guarded("cudnnSetConvolution2dDescriptor", || {
        let size = |value: c_int, least: usize, what: &str| {
            usize::try_from(value)
                .ok()
                .filter(|&v| v >= least)
                .ok_or_else(|| Failure::bad(format!("{what} {value} is out of range")))
        };
        let mode = match mode {
            0 => Mode::Convolution,
            1 => Mode::CrossCorrelation,
            other => {
                return Err(Failure::bad(format!(
                    "{other} is not a cudnnConvolutionMode_t"
                )))
            }
        };
        let convolution = Convolution {
            pad: [size(pad_h, 0, "pad_h")?, size(pad_w, 0, "pad_w")?],
            stride: [size(u, 1, "u")?, size(v, 1, "v")?],
            dilation: [
                size(dilation_h, 1, "dilation_h")?,
                size(dilation_w, 1, "dilation_w")?,
            ],
            mode,
            compute_type: data_type(compute_type)?,
            math_type: 0,
        };
        objects::set(
            desc,
            "convolution descriptor",
            Object::Convolution(Some(convolution)),
        )
    })
}

/// `cudnnSetConvolutionMathType(desc, mathType)`.
#[no_mangle]
pub extern "C" fn cudnnSetConvolutionMathType(desc: *mut c_void, math_type: c_int) -> Status {
    guarded("cudnnSetConvolutionMathType", || {
        if !(0..=LAST_MATH_TYPE).contains(&math_type) {
            return Err(Failure::bad(format!(
                "{math_type} is not a cudnnMathType_t"
            )));
        }
        let mut convolution = convolution(desc)?;
        convolution.math_type = math_type;
        objects::set(
            desc,
            "convolution descriptor",
            Object::Convolution(Some(convolution)),
        )
    })
}

/// The set tensor descriptor at `desc`.
pub fn tensor(desc: *mut c_void) -> Result<Tensor, Failure> {
    objects::read(desc, "set tensor descriptor", |o| match o {
        Object::Tensor(t) => *t,
        _ => None,
    })
}

/// The set filter descriptor at `desc`.
pub fn filter(desc: *mut c_void) -> Result<Filter, Failure> {
    objects::read(desc, "set filter descriptor", |o| match o {
        Object::Filter(f) => *f,
        _ => None,
    })
}

/// The set convolution descriptor at `desc`.
pub fn convolution(desc: *mut c_void) -> Result<Convolution, Failure> {
    objects::read(desc, "set convolution descriptor", |o| match o {
        Object::Convolution(c) => *c,
        _ => None,
    })
}

/// `cudnnDestroyTensorDescriptor`.
#[no_mangle]
pub extern "C" fn cudnnDestroyTensorDescriptor(desc: *mut c_void) -> Status {
    guarded("cudnnDestroyTensorDescriptor", || {
        objects::remove(desc, "tensor descriptor", |o| {
            matches!(o, Object::Tensor(_))
        })
        .map(drop)
    })
}

/// `cudnnDestroyFilterDescriptor`.
#[no_mangle]
pub extern "C" fn cudnnDestroyFilterDescriptor(desc: *mut c_void) -> Status {
    guarded("cudnnDestroyFilterDescriptor", || {
        objects::remove(desc, "filter descriptor", |o| {
            matches!(o, Object::Filter(_))
        })
        .map(drop)
    })
}

/// `cudnnDestroyConvolutionDescriptor`.
#[no_mangle]
pub extern "C" fn cudnnDestroyConvolutionDescriptor(desc: *mut c_void) -> Status {
    guarded("cudnnDestroyConvolutionDescriptor", || {
        objects::remove(desc, "convolution descriptor", |o| {
            matches!(o, Object::Convolution(_))
        })
        .map(drop)
    })
}
