//! The convolution forward pass through cuDNN's legacy API: the output shape
//! (`cudnnGetConvolution2dForwardOutputDim`), the algorithm queries and workspace size
//! (implicit GEMM only, which needs none), and `cudnnConvolutionForward`, put on the handle's
//! stream and computed there by [`super::conv::forward`] on FP32 data.
//!
//! Shapes that disagree (channels, the output descriptor) are `CUDNN_STATUS_BAD_PARAM`; data
//! other than FP32 and other algorithms are `CUDNN_STATUS_NOT_SUPPORTED`. The profile's
//! `wrong_results = "conv"` flips the top mantissa bit of the first, middle and last outputs.

use super::conv::{self, Geometry};
use super::descriptors::{self, DATA_FLOAT};
use super::handle::handle;
use super::objects::{Convolution, Filter, Tensor};
use super::status::{self, guarded, put, Failure, Status};
use crate::clock::Peak;
use crate::driver::errors::Code;
use crate::driver::library::{self, DeviceMemory, Work};
use crate::trace;
use std::ffi::{c_int, c_void};

/// `CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM`: the one algorithm simulated.
const IMPLICIT_GEMM: c_int = 0;
/// `CUDNN_CONVOLUTION_FWD_ALGO_COUNT`.
const ALGO_COUNT: c_int = 8;
/// `CUDNN_DETERMINISTIC`.
const DETERMINISTIC: c_int = 1;
/// The kernel's name, as cuDNN's implicit GEMM convolution is launched.
const KERNEL: &str = "implicit_convolve_sgemm";

/// The geometry of `x * w` under `c`, checked: the channels agree and the filter fits.
fn geometry(x: &Tensor, w: &Filter, c: &Convolution) -> Result<Geometry, Failure> {
    let g = Geometry {
        input: x.dims,
        filter: w.dims,
        pad: c.pad,
        stride: c.stride,
        dilation: c.dilation,
        mode: c.mode,
    };
    if x.dims[1] != w.dims[1] {
        return Err(Failure::bad(format!(
            "the input has {} channels, the filter {}",
            x.dims[1], w.dims[1]
        )));
    }
    if g.output().is_none() {
        return Err(Failure::bad(format!(
            "the filter {:?} dilated by {:?} does not fit the input {:?} padded by {:?}",
            w.dims, c.dilation, x.dims, c.pad
        )));
    }
    Ok(g)
}

/// The descriptors of one forward pass, read and checked against each other.
struct Problem {
    x: Tensor,
    w: Filter,
    y: Tensor,
    conv: Convolution,
    geometry: Geometry,
}

impl Problem {
    /// Reads the four descriptors; the output descriptor must have the output's shape.
    fn read(
        x: *mut c_void,
        w: *mut c_void,
        c: *mut c_void,
        y: *mut c_void,
    ) -> Result<Problem, Failure> {
        let (x, w, conv, y) = (
            descriptors::tensor(x)?,
            descriptors::filter(w)?,
            descriptors::convolution(c)?,
            descriptors::tensor(y)?,
        );
        let geometry = geometry(&x, &w, &conv)?;
        let out = geometry.output().unwrap_or_default();
        if y.dims != out {
            return Err(Failure::new(
                status::BAD_PARAM,
                format!(
                    "the output descriptor is {:?}, the convolution gives {:?}",
                    y.dims, out
                ),
            ));
        }
        Ok(Problem {
            x,
            w,
            y,
            conv,
            geometry,
        })
    }

    /// FP32 data and arithmetic only.
    fn supported(&self) -> Result<(), Failure> {
        let types = [
            self.x.data_type,
            self.w.data_type,
            self.y.data_type,
            self.conv.compute_type,
        ];
        if types.iter().all(|&t| t == DATA_FLOAT) {
            Ok(())
        } else {
            Err(Failure::unsupported(format!(
                "data types {types:?} (x, w, y, compute): the simulator computes FP32 (CUDNN_DATA_FLOAT) only"
            )))
        }
    }
}

/// An algorithm argument: implicit GEMM, else `NOT_SUPPORTED` (or `BAD_PARAM` if no algorithm).
fn algorithm(algo: c_int) -> Result<(), Failure> {
    match algo {
        IMPLICIT_GEMM => Ok(()),
        a if (0..ALGO_COUNT).contains(&a) => Err(Failure::unsupported(format!(
            "algorithm {a}: the simulator implements CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM only"
        ))),
        a => Err(Failure::bad(format!(
            "{a} is not a cudnnConvolutionFwdAlgo_t"
        ))),
    }
}

/// `cudnnGetConvolution2dForwardOutputDim(convDesc, inputTensorDesc, filterDesc, &n, &c, &h,
/// &w)`.
///
/// # Safety
/// Each out-pointer must be valid for writing one `int`.
#[no_mangle]
pub unsafe extern "C" fn cudnnGetConvolution2dForwardOutputDim(
    conv: *mut c_void,
    input: *mut c_void,
    filter: *mut c_void,
    n: *mut c_int,
    c: *mut c_int,
    h: *mut c_int,
    w: *mut c_int,
) -> Status {
    guarded("cudnnGetConvolution2dForwardOutputDim", || {
        let g = geometry(
            &descriptors::tensor(input)?,
            &descriptors::filter(filter)?,
            &descriptors::convolution(conv)?,
        )?;
        let out = g.output().unwrap_or_default();
        for (ptr, value) in [n, c, h, w].into_iter().zip(out) {
            let value =
                c_int::try_from(value).map_err(|_| Failure::bad("the output is too large"))?;
            // SAFETY: by the caller's contract.
            unsafe { put(ptr, value, "an output dimension")? };
        }
        Ok(())
    })
}

/// `cudnnGetConvolutionForwardWorkspaceSize(handle, xDesc, wDesc, convDesc, yDesc, algo,
/// &sizeInBytes)`: implicit GEMM needs none.
///
/// # Safety
/// `size` must be valid for writing one `size_t`.
#[no_mangle]
pub unsafe extern "C" fn cudnnGetConvolutionForwardWorkspaceSize(
    raw: *mut c_void,
    x: *mut c_void,
    w: *mut c_void,
    c: *mut c_void,
    y: *mut c_void,
    algo: c_int,
    size: *mut usize,
) -> Status {
    guarded("cudnnGetConvolutionForwardWorkspaceSize", || {
        handle(raw)?;
        Problem::read(x, w, c, y)?;
        algorithm(algo)?;
        // SAFETY: by the caller's contract.
        unsafe { put(size, 0, "sizeInBytes") }
    })
}

/// `cudnnGetConvolutionForwardAlgorithmMaxCount(handle, &count)`.
///
/// # Safety
/// `count` must be valid for writing one `int`.
#[no_mangle]
pub unsafe extern "C" fn cudnnGetConvolutionForwardAlgorithmMaxCount(
    raw: *mut c_void,
    count: *mut c_int,
) -> Status {
    guarded("cudnnGetConvolutionForwardAlgorithmMaxCount", || {
        handle(raw)?;
        // SAFETY: by the caller's contract.
        unsafe { put(count, ALGO_COUNT, "count") }
    })
}

/// `cudnnConvolutionFwdAlgoPerf_t` (cuDNN 9's `cudnn_cnn.h`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct AlgoPerf {
    /// `cudnnConvolutionFwdAlgo_t`.
    pub algo: c_int,
    /// Whether it can run this problem.
    pub status: Status,
    /// Milliseconds measured (-1: not measured).
    pub time: f32,
    /// Workspace bytes it needs.
    pub memory: usize,
    /// `cudnnDeterminism_t`.
    pub determinism: c_int,
    /// `cudnnMathType_t`.
    pub math_type: c_int,
    /// Zero.
    pub reserved: [c_int; 3],
}

/// `cudnnGetConvolutionForwardAlgorithm_v7(handle, xDesc, wDesc, convDesc, yDesc,
/// requestedAlgoCount, &returnedAlgoCount, perfResults)`: the heuristic's one answer, implicit
/// GEMM, with no workspace (its time is not measured: -1).
///
/// # Safety
/// `returned` must be valid for one `int`, `results` for `requested` records.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn cudnnGetConvolutionForwardAlgorithm_v7(
    raw: *mut c_void,
    x: *mut c_void,
    w: *mut c_void,
    c: *mut c_void,
    y: *mut c_void,
    requested: c_int,
    returned: *mut c_int,
    results: *mut AlgoPerf,
) -> Status {
    guarded("cudnnGetConvolutionForwardAlgorithm_v7", || {
        handle(raw)?;
        let problem = Problem::read(x, w, c, y)?;
        if requested < 1 {
            return Err(Failure::bad(format!("requestedAlgoCount {requested}")));
        }
        let record = AlgoPerf {
            algo: IMPLICIT_GEMM,
            status: status::SUCCESS,
            time: -1.0,
            memory: 0,
            determinism: DETERMINISTIC,
            math_type: problem.conv.math_type,
            reserved: [0; 3],
        };
        // SAFETY: by the caller's contract, `results` holds at least one record.
        unsafe { put(results, record, "perfResults")? };
        // SAFETY: by the caller's contract.
        unsafe { put(returned, 1, "returnedAlgoCount") }
    })
}

/// The offset, in elements, one past the last element of a tensor of `dims` and `strides`.
fn span(dims: [usize; 4], strides: [usize; 4]) -> usize {
    1 + dims
        .iter()
        .zip(strides)
        .map(|(d, s)| (d - 1) * s)
        .sum::<usize>()
}

/// The element offsets of a tensor, in NCHW order.
fn offsets(dims: [usize; 4], strides: [usize; 4]) -> impl Iterator<Item = usize> {
    let [n, c, h, w] = dims;
    (0..n).flat_map(move |a| {
        (0..c).flat_map(move |b| {
            (0..h).flat_map(move |i| {
                (0..w)
                    .map(move |j| a * strides[0] + b * strides[1] + i * strides[2] + j * strides[3])
            })
        })
    })
}

/// Floats from little-endian bytes.
fn floats(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

/// The computation as it runs on the stream: read x, w (and y where beta is not 0), convolve,
/// scale, perturb if the profile says so, write y.
struct Pass {
    problem: Problem,
    x: u64,
    w: u64,
    y: u64,
    alpha: f32,
    beta: f32,
}

impl Pass {
    fn run(self, memory: &mut DeviceMemory<'_>) -> Result<(), Code> {
        let p = &self.problem;
        let x_all = floats(&memory.read(self.x, 4 * span(p.x.dims, p.x.strides))?);
        let x: Vec<f32> = offsets(p.x.dims, p.x.strides).map(|o| x_all[o]).collect();
        let w = floats(&memory.read(self.w, 4 * p.w.dims.iter().product::<usize>())?);
        let y_len = span(p.y.dims, p.y.strides);
        let mut y_all = floats(&memory.read(self.y, 4 * y_len)?);
        let mut result = conv::forward(&p.geometry, &x, &w);
        let fault = memory.faults().wrong_results.as_str();
        if !fault.is_empty() && KERNEL.contains(fault) && !result.is_empty() {
            let last = result.len() - 1;
            for i in [0, last / 2, last] {
                result[i] = f32::from_bits(result[i].to_bits() ^ (1 << 22));
            }
        }
        for (o, value) in offsets(p.y.dims, p.y.strides).zip(result) {
            let old = if self.beta == 0.0 {
                0.0
            } else {
                self.beta * y_all[o]
            };
            y_all[o] = self.alpha * value + old;
        }
        let bytes: Vec<u8> = y_all.iter().flat_map(|v| v.to_le_bytes()).collect();
        memory.write(self.y, &bytes)
    }
}

/// Reads a host `float` scaling factor.
///
/// # Safety
/// `ptr`, when not null, must point to one `float`.
unsafe fn scale(ptr: *const c_void, what: &str) -> Result<f32, Failure> {
    if ptr.is_null() {
        return Err(Failure::new(
            status::BAD_PARAM_NULL_POINTER,
            format!("{what} is NULL"),
        ));
    }
    // SAFETY: not null; one float by the caller's contract (FP32 data takes float factors).
    Ok(unsafe { ptr.cast::<f32>().read_unaligned() })
}

/// `cudnnConvolutionForward(handle, alpha, xDesc, x, wDesc, w, convDesc, algo, workSpace,
/// workSpaceSizeInBytes, beta, yDesc, y)`: `y = alpha (x * w) + beta y`, on the handle's stream.
///
/// # Safety
/// `alpha` and `beta` must point to one `float` each; `x`, `w` and `y` are device addresses
/// (checked when the work runs, as a kernel's accesses are).
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn cudnnConvolutionForward(
    raw: *mut c_void,
    alpha: *const c_void,
    x_desc: *mut c_void,
    x: *const c_void,
    w_desc: *mut c_void,
    w: *const c_void,
    conv_desc: *mut c_void,
    algo: c_int,
    _workspace: *mut c_void,
    _workspace_bytes: usize,
    beta: *const c_void,
    y_desc: *mut c_void,
    y: *mut c_void,
) -> Status {
    guarded("cudnnConvolutionForward", || {
        let handle = handle(raw)?;
        let problem = Problem::read(x_desc, w_desc, conv_desc, y_desc)?;
        algorithm(algo)?;
        problem.supported()?;
        if x.is_null() || w.is_null() || y.is_null() {
            return Err(Failure::new(
                status::BAD_PARAM_NULL_POINTER,
                "x, w or y is NULL",
            ));
        }
        // SAFETY: by the caller's contract.
        let (alpha, beta) = unsafe { (scale(alpha, "alpha")?, scale(beta, "beta")?) };
        let g = problem.geometry;
        trace::record(
            "cudnn",
            "cudnnConvolutionForward",
            &[
                ("input", format!("{:?}", g.input).into()),
                ("filter", format!("{:?}", g.filter).into()),
                ("pad", format!("{:?}", g.pad).into()),
                ("stride", format!("{:?}", g.stride).into()),
                ("dilation", format!("{:?}", g.dilation).into()),
                ("mode", format!("{:?}", g.mode).into()),
                ("output", format!("{:?}", problem.y.dims).into()),
                ("alpha", alpha.into()),
                ("beta", beta.into()),
            ],
        );
        let elements = |d: [usize; 4]| d.iter().product::<usize>() as u64;
        let y_reads = if beta == 0.0 { 1 } else { 2 };
        let bytes =
            4 * (elements(g.input) + elements(g.filter) + y_reads * elements(problem.y.dims));
        let pass = Pass {
            problem,
            x: x as u64,
            w: w as u64,
            y: y as u64,
            alpha,
            beta,
        };
        let work = Work {
            name: KERNEL.to_owned(),
            bytes,
            flops: g.flops(),
            peak: Peak::Fp32,
            body: Box::new(move |memory| pass.run(memory)),
        };
        library::enqueue(handle.stream as *mut c_void, work).map_err(|code| {
            Failure::new(
                status::EXECUTION_FAILED_CUDA_DRIVER,
                format!(
                    "the driver refused the convolution's work: CUresult {}",
                    code.0
                ),
            )
        })
    })
}
