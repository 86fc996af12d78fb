//! The GPU workloads: inputs allocated and filled with random data (never zeros), the output of
//! one run verified against the CPU's float64 result, then a function that enqueues one run on
//! the benchmark's stream.
//!
//! Large outputs are verified on a spread sample of their elements ([`sample_indices`]): the
//! reference of one matmul element costs `size` multiply-adds on the CPU, of all of them `size³`.

use super::stream::Stream;
use crate::bench::model::{Verification, BITS};
use crate::bench::protocol::{Implementation, Workload};
use crate::check::worker::cublas::kept_handle;
use crate::check::worker::device::{DeviceBuffer, Plain};
use crate::check::worker::fp8::{self, Fp8Gemm, Shape};
use crate::check::worker::nvrtc::{self, Loaded};
use crate::check::worker::outcome::{Call, Outcome};
use crate::check::worker::session::Session;
use crate::e4m3;
use crate::kernels::{self, Kernel};
use crate::tolerance::{self, Precision};
use cudarc::cublas::result as blas;
use cudarc::cublas::sys::{
    cublasComputeType_t, cublasGemmAlgo_t, cublasHandle_t, cublasOperation_t, cudaDataType,
};
use cudarc::driver::result as cu;
use std::ffi::c_void;

/// The most output elements compared with the CPU.
const VERIFIED_ELEMENTS: usize = 1 << 16;

/// A workload ready to run: it owns its device memory.
pub trait Run {
    /// Enqueues one run on `stream`.
    fn enqueue(&self, stream: &Stream) -> Result<(), Outcome>;
}

/// Up to `max` indices spread over `0..len`, first and last included, in order.
pub fn sample_indices(len: usize, max: usize) -> Vec<usize> {
    if len <= max {
        return (0..len).collect();
    }
    let step = (len - 1) as f64 / (max - 1) as f64;
    (0..max)
        .map(|i| (i as f64 * step).round() as usize)
        .collect()
}

/// The verification record of a comparison of `compared` elements.
fn verification(got: &[f64], want: &[f64], precision: Precision) -> Result<Verification, Outcome> {
    let comparison =
        tolerance::compare(got, want, precision).map_err(|e| Outcome::fail(e.to_string()))?;
    Ok(Verification {
        passed: comparison.passed(),
        precision: precision.id().to_owned(),
        max_relative_error: comparison.relative_error,
        tolerance: comparison.tolerance,
        compared: got.len(),
    })
}

/// Runs `run` once on `stream`, waits for it, and reads its `output` back.
fn run_once<T: Plain>(
    run: &dyn Run,
    output: &DeviceBuffer<T>,
    stream: &Stream,
) -> Result<Vec<T>, Outcome> {
    run.enqueue(stream)?;
    stream.synchronize()?;
    output.read()
}

/// Verifies an element-wise output of `len` elements in FP32 on a spread sample: `got(i)`
/// against `want(i)`.
fn check_elements(
    len: usize,
    got: impl Fn(usize) -> f64,
    want: impl Fn(usize) -> f64,
) -> Result<Verification, Outcome> {
    let at = sample_indices(len, VERIFIED_ELEMENTS);
    let got: Vec<f64> = at.iter().map(|&i| got(i)).collect();
    let want: Vec<f64> = at.iter().map(|&i| want(i)).collect();
    verification(&got, &want, Precision::F32)
}

/// Verifies the row-major `n x n` product of `a` and `b` (elements widened by `back`), whose
/// element `i` is `c(i)`, on a spread sample of its elements, at `precision`.
fn check_product<T: Copy>(
    c: impl Fn(usize) -> f64,
    a: &[T],
    b: &[T],
    n: usize,
    back: impl Fn(T) -> f64,
    precision: Precision,
) -> Result<Verification, Outcome> {
    let at = sample_indices(n * n, VERIFIED_ELEMENTS / 64);
    let got: Vec<f64> = at.iter().map(|&i| c(i)).collect();
    let want = matmul_sample(a, b, n, &at, back);
    verification(&got, &want, precision)
}

/// Allocates `workload`'s memory, runs it once on `stream` and verifies the output.
pub fn prepare(
    s: &Session,
    workload: &Workload,
    stream: &Stream,
) -> Result<(Box<dyn Run>, Verification), Outcome> {
    match *workload {
        Workload::VectorAdd { elements } => vector_add(s, elements as usize, stream),
        Workload::Copy { bytes } => copy(bytes as usize, stream),
        Workload::Matmul {
            implementation: Implementation::Nvrtc,
            size,
            ..
        } => tiled_matmul(s, size as usize, stream),
        Workload::Matmul {
            implementation: Implementation::Cublas,
            precision,
            size,
        } => {
            let handle = kept_handle(s)?;
            let n = size as usize;
            match precision {
                Precision::F32 | Precision::Tf32 => {
                    gemm(handle, n, precision, |x| x, f64::from, stream)
                }
                Precision::F16 => gemm(
                    handle,
                    n,
                    precision,
                    half::f16::from_f32,
                    |x| f64::from(x.to_f32()),
                    stream,
                ),
                Precision::Bf16 => gemm(
                    handle,
                    n,
                    precision,
                    half::bf16::from_f32,
                    |x| f64::from(x.to_f32()),
                    stream,
                ),
                Precision::Fp8 => fp8_gemm(s, n, stream),
            }
        }
        Workload::Compile { .. } => Err(Outcome::fail("compilation runs on the CPU")),
        Workload::Collective { .. } => Err(Outcome::fail(
            "an NCCL collective runs on every rank's stream, not the benchmark's",
        )),
    }
}

/// The NVRTC vector add over `n` floats.
struct VectorAdd {
    loaded: Loaded,
    a: DeviceBuffer<f32>,
    b: DeviceBuffer<f32>,
    c: DeviceBuffer<f32>,
    n: usize,
}

impl Run for VectorAdd {
    fn enqueue(&self, stream: &Stream) -> Result<(), Outcome> {
        let (mut pa, mut pb, mut pc, mut len) =
            (self.a.ptr(), self.b.ptr(), self.c.ptr(), self.n as u64);
        let mut args: [*mut c_void; 4] = [
            (&mut pa as *mut u64).cast(),
            (&mut pb as *mut u64).cast(),
            (&mut pc as *mut u64).cast(),
            (&mut len as *mut u64).cast(),
        ];
        // SAFETY: (const float*, const float*, float*, unsigned long long) as the source declares;
        // the buffers hold n floats each and live as long as `self`, which the caller keeps
        // until the stream has run the launch; parameters are copied at the launch.
        unsafe {
            nvrtc::launch_on(
                self.loaded.function,
                kernels::vector_add_shape(self.n),
                &mut args,
                stream.raw(),
            )
        }
    }
}

fn vector_add(
    s: &Session,
    n: usize,
    stream: &Stream,
) -> Result<(Box<dyn Run>, Verification), Outcome> {
    let (a, b) = (kernels::random_f32(n, 11), kernels::random_f32(n, 12));
    let run = VectorAdd {
        loaded: nvrtc::load(s, Kernel::VectorAdd)?,
        a: DeviceBuffer::from_slice(&a)?,
        b: DeviceBuffer::from_slice(&b)?,
        c: DeviceBuffer::alloc(n)?,
        n,
    };
    let c = run_once(&run, &run.c, stream)?;
    let verified = check_elements(
        n,
        |i| f64::from(c[i]),
        |i| f64::from(a[i]) + f64::from(b[i]),
    )?;
    Ok((Box::new(run), verified))
}

/// A device-to-device copy of `bytes`.
struct DeviceCopy {
    source: DeviceBuffer<u32>,
    target: DeviceBuffer<u32>,
    bytes: usize,
}

impl Run for DeviceCopy {
    fn enqueue(&self, stream: &Stream) -> Result<(), Outcome> {
        // SAFETY: both buffers hold `bytes` and live as long as `self`.
        unsafe {
            cu::memcpy_dtod_async(
                self.target.ptr(),
                self.source.ptr(),
                self.bytes,
                stream.raw(),
            )
        }
        .call("cuMemcpyDtoDAsync")
    }
}

fn copy(bytes: usize, stream: &Stream) -> Result<(Box<dyn Run>, Verification), Outcome> {
    let words = bytes / 4;
    let data: Vec<u32> = kernels::random_f32(words, 13)
        .into_iter()
        .map(f32::to_bits)
        .collect();
    let run = DeviceCopy {
        source: DeviceBuffer::from_slice(&data)?,
        target: DeviceBuffer::alloc(words)?,
        bytes: words * 4,
    };
    let copied = run_once(&run, &run.target, stream)?;
    Ok((Box::new(run), check_bits(&copied, &data)))
}

/// A copy's verification: every word, bit for bit.
fn check_bits(copied: &[u32], source: &[u32]) -> Verification {
    let differing = copied.iter().zip(source).filter(|(a, b)| a != b).count()
        + copied.len().abs_diff(source.len());
    let compared = source.len().max(copied.len());
    Verification {
        passed: differing == 0,
        precision: BITS.to_owned(),
        max_relative_error: differing as f64 / compared.max(1) as f64,
        tolerance: 0.0,
        compared,
    }
}

/// The reference of the sampled elements of the row-major `n x n` product of `a` and `b`,
/// each element widened by `back` as it is used (a widened copy of an 8192² input would take
/// 512 MiB).
fn matmul_sample<T: Copy>(
    a: &[T],
    b: &[T],
    n: usize,
    at: &[usize],
    back: impl Fn(T) -> f64,
) -> Vec<f64> {
    at.iter()
        .map(|&index| {
            let (row, col) = (index / n, index % n);
            (0..n)
                .map(|p| back(a[row * n + p]) * back(b[p * n + col]))
                .sum()
        })
        .collect()
}

/// The NVRTC tiled matmul, f32, `n x n`.
struct TiledMatmul {
    loaded: Loaded,
    a: DeviceBuffer<f32>,
    b: DeviceBuffer<f32>,
    c: DeviceBuffer<f32>,
    n: usize,
}

impl Run for TiledMatmul {
    fn enqueue(&self, stream: &Stream) -> Result<(), Outcome> {
        let (mut pa, mut pb, mut pc) = (self.a.ptr(), self.b.ptr(), self.c.ptr());
        let side = self.n as i32;
        let (mut m, mut n, mut k) = (side, side, side);
        let mut args: [*mut c_void; 6] = [
            (&mut pa as *mut u64).cast(),
            (&mut pb as *mut u64).cast(),
            (&mut pc as *mut u64).cast(),
            (&mut m as *mut i32).cast(),
            (&mut n as *mut i32).cast(),
            (&mut k as *mut i32).cast(),
        ];
        // SAFETY: (const float*, const float*, float*, int, int, int) as the source declares; the
        // buffers hold n*n floats each and live as long as `self`.
        unsafe {
            nvrtc::launch_on(
                self.loaded.function,
                kernels::matmul_shape(self.n, self.n),
                &mut args,
                stream.raw(),
            )
        }
    }
}

fn tiled_matmul(
    s: &Session,
    n: usize,
    stream: &Stream,
) -> Result<(Box<dyn Run>, Verification), Outcome> {
    let (a, b) = (
        kernels::random_f32(n * n, 14),
        kernels::random_f32(n * n, 15),
    );
    let run = TiledMatmul {
        loaded: nvrtc::load(s, Kernel::TiledMatmul)?,
        a: DeviceBuffer::from_slice(&a)?,
        b: DeviceBuffer::from_slice(&b)?,
        c: DeviceBuffer::alloc(n * n)?,
        n,
    };
    let c = run_once(&run, &run.c, stream)?;
    let verified = check_product(|i| f64::from(c[i]), &a, &b, n, f64::from, Precision::F32)?;
    Ok((Box::new(run), verified))
}

/// A cuBLAS GEMM, `n x n` by `n x n`, with FP32 accumulation and scaling.
struct Gemm<T: Plain> {
    handle: cublasHandle_t,
    precision: Precision,
    a: DeviceBuffer<T>,
    b: DeviceBuffer<T>,
    c: DeviceBuffer<T>,
    n: usize,
}

impl<T: Plain> Run for Gemm<T> {
    /// cuBLAS enqueues on the stream its handle was given when the workload was prepared: the
    /// benchmark's own, which every caller passes.
    fn enqueue(&self, _stream: &Stream) -> Result<(), Outcome> {
        let n = self.n as i32;
        let (alpha, beta) = (1.0f32, 0.0f32);
        let (op, data, compute) = (
            cublasOperation_t::CUBLAS_OP_N,
            data_type(self.precision),
            compute_type(self.precision),
        );
        if self.precision == Precision::F32 {
            // SAFETY: column-major Cᵀ = Bᵀ Aᵀ (the row-major C = A B) over n x n buffers of f32
            // alive as long as `self`; alpha and beta on the host.
            return unsafe {
                blas::sgemm(
                    self.handle,
                    op,
                    op,
                    n,
                    n,
                    n,
                    &alpha,
                    self.b.as_ptr().cast(),
                    n,
                    self.a.as_ptr().cast(),
                    n,
                    &beta,
                    self.c.as_ptr().cast(),
                    n,
                )
            }
            .call("cublasSgemm");
        }
        // SAFETY: as above, elements of the declared type; alpha and beta are f32 as
        // CUBLAS_COMPUTE_32F(_FAST_TF32) requires.
        unsafe {
            blas::gemm_ex(
                self.handle,
                op,
                op,
                n,
                n,
                n,
                (&alpha as *const f32).cast(),
                self.b.as_ptr() as *const c_void,
                data,
                n,
                self.a.as_ptr() as *const c_void,
                data,
                n,
                (&beta as *const f32).cast(),
                self.c.as_ptr().cast(),
                data,
                n,
                compute,
                cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
            )
        }
        .call("cublasGemmEx")
    }
}

/// The element type of a precision's operands.
fn data_type(precision: Precision) -> cudaDataType {
    match precision {
        Precision::F32 | Precision::Tf32 => cudaDataType::CUDA_R_32F,
        Precision::F16 => cudaDataType::CUDA_R_16F,
        Precision::Bf16 => cudaDataType::CUDA_R_16BF,
        Precision::Fp8 => cudaDataType::CUDA_R_8F_E4M3,
    }
}

/// The compute type: FP32 accumulation, TF32 tensor-core multiplication for TF32.
fn compute_type(precision: Precision) -> cublasComputeType_t {
    match precision {
        Precision::Tf32 => cublasComputeType_t::CUBLAS_COMPUTE_32F_FAST_TF32,
        _ => cublasComputeType_t::CUBLAS_COMPUTE_32F,
    }
}

fn gemm<T: Plain + 'static>(
    handle: cublasHandle_t,
    n: usize,
    precision: Precision,
    to: impl Fn(f32) -> T,
    back: impl Fn(T) -> f64,
    stream: &Stream,
) -> Result<(Box<dyn Run>, Verification), Outcome> {
    let a: Vec<T> = kernels::random_f32(n * n, 16)
        .into_iter()
        .map(&to)
        .collect();
    let b: Vec<T> = kernels::random_f32(n * n, 17)
        .into_iter()
        .map(&to)
        .collect();
    // Once per workload: every run goes to the benchmark's stream (the handle is the worker's,
    // and the stream lives as long as the worker).
    // SAFETY: a live handle and stream of this context.
    unsafe { blas::set_stream(handle, stream.raw() as _) }.call("cublasSetStream")?;
    let run = Gemm {
        handle,
        precision,
        a: DeviceBuffer::from_slice(&a)?,
        b: DeviceBuffer::from_slice(&b)?,
        c: DeviceBuffer::alloc(n * n)?,
        n,
    };
    let c = run_once(&run, &run.c, stream)?;
    let verified = check_product(|i| back(c[i]), &a, &b, n, &back, precision)?;
    Ok((Box::new(run), verified))
}

/// The scale of both FP8 inputs: they hold 64 times their value, so a scale that cuBLASLt
/// ignores or applies once too often is off by 64 or more.
const FP8_SCALE: f32 = 1.0 / 64.0;

/// An FP8 GEMM through cuBLASLt, `n x n` by `n x n`, E4M3 inputs scaled by [`FP8_SCALE`], BF16
/// output; `bt` is `B` transposed, as cuBLASLt's FP8 kernels take it.
struct Fp8Run {
    gemm: Fp8Gemm,
    a: DeviceBuffer<u8>,
    bt: DeviceBuffer<u8>,
    c: DeviceBuffer<half::bf16>,
}

impl Run for Fp8Run {
    fn enqueue(&self, stream: &Stream) -> Result<(), Outcome> {
        self.gemm
            .enqueue(&self.a, &self.bt, &self.c, stream.raw() as _)
    }
}

fn fp8_gemm(
    s: &Session,
    n: usize,
    stream: &Stream,
) -> Result<(Box<dyn Run>, Verification), Outcome> {
    if let Some(why) = fp8::unsupported(s)? {
        return Err(Outcome::fail(why));
    }
    let a = fp8::random_e4m3(n * n, 18, FP8_SCALE);
    let b = fp8::random_e4m3(n * n, 19, FP8_SCALE);
    let shape = Shape {
        m: n,
        n,
        k: n,
        lda: n,
        ldbt: n,
        ldc: n,
    };
    let run = Fp8Run {
        gemm: Fp8Gemm::plan(s, shape, FP8_SCALE, FP8_SCALE)?,
        a: DeviceBuffer::from_slice(&a)?,
        bt: DeviceBuffer::from_slice(&fp8::transposed(&b, n, n))?,
        c: DeviceBuffer::alloc(n * n)?,
    };
    let c = run_once(&run, &run.c, stream)?;
    let back = |x: u8| f64::from(e4m3::decode(x)) * f64::from(FP8_SCALE);
    let verified = check_product(
        |i| f64::from(c[i].to_f32()),
        &a,
        &b,
        n,
        back,
        Precision::Fp8,
    )?;
    Ok((Box::new(run), verified))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_spread_over_the_whole_output() {
        assert_eq!(sample_indices(3, 10), vec![0, 1, 2]);
        let at = sample_indices(1000, 5);
        assert_eq!(at, vec![0, 250, 500, 749, 999]);
        assert!(sample_indices(1 << 28, VERIFIED_ELEMENTS).len() == VERIFIED_ELEMENTS);
    }

    #[test]
    fn a_copy_verifies_bit_for_bit() {
        let source: Vec<u32> = kernels::random_f32(1000, 3)
            .into_iter()
            .map(f32::to_bits)
            .collect();
        assert!(check_bits(&source, &source).passed);
        // One ulp off in one word: a float tolerance would pass it, a copy must not.
        let mut copied = source.clone();
        copied[500] ^= 1;
        let v = check_bits(&copied, &source);
        assert!(!v.passed);
        assert_eq!(v.compared, 1000);
        assert_eq!(
            v.failure(),
            "the copy differs from its source in 1 of 1000 words"
        );
        // The payload of a NaN differs as much as any other bits.
        let (mut nan, quiet) = (source.clone(), f32::NAN.to_bits());
        nan[0] = quiet;
        let mut other = nan.clone();
        other[0] = quiet | 1;
        assert!(!check_bits(&other, &nan).passed);
    }

    #[test]
    fn sampled_references_are_the_full_products_elements() {
        let n = 5;
        let a: Vec<f64> = kernels::random_f32(n * n, 1)
            .into_iter()
            .map(f64::from)
            .collect();
        let b: Vec<f64> = kernels::random_f32(n * n, 2)
            .into_iter()
            .map(f64::from)
            .collect();
        let full = kernels::matmul_reference(&a, &b, n, n, n);
        let at = [0, 7, 24];
        let sample = matmul_sample(&a, &b, n, &at, |x| x);
        for (value, &index) in sample.iter().zip(&at) {
            assert!((value - full[index]).abs() < 1e-12);
        }
    }
}
