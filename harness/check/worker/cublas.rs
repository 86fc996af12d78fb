//! The cuBLAS and cuBLASLt checks: create the handles, then GEMMs in FP32, FP16 and BF16 (FP32
//! accumulation) verified against the CPU with each precision's tolerance.
//!
//! Calls, through cudarc's `result` layer: `cublasCreate_v2`, `cublasSgemm_v2`, `cublasGemmEx`
//! (`CUBLAS_COMPUTE_32F`, `CUBLAS_GEMM_DEFAULT`), `cublasLtCreate`, `cublasLtMatmulDescCreate`,
//! `cublasLtMatrixLayoutCreate`, `cublasLtMatmulPreference*`, `cublasLtMatmulAlgoGetHeuristic`,
//! `cublasLtMatmul`. All exist with this ABI from cuBLAS 11.0 on, and the status codes of
//! cuBLAS 11, 12 and 13 are the ones cudarc's enum knows.
//!
//! cuBLAS is column-major; a row-major `C = A B` is computed as the column-major `Cᵀ = Bᵀ Aᵀ`,
//! which needs no transposition: the row-major buffers already are `Aᵀ` and `Bᵀ`.
//!
//! The shape and the layout leave no argument interchangeable: `m`, `n` and `k` all differ, and
//! each matrix's rows are padded to a pitch (its leading dimension) that differs from the other
//! two and from every dimension, with padding that is NaN, so a GEMM that swaps two arguments,
//! transposes an operand or reads past a row fails (or is refused) instead of passing by
//! symmetry.

use super::device::{synchronize, DeviceBuffer, Plain};
use super::outcome::{status_error, verify, Call, Checked, Finish, Outcome};
use super::session::Session;
use crate::check::protocol::Component;
use crate::compat::ComputeCapability;
use crate::kernels;
use crate::tolerance::Precision;
use cudarc::cublas::result as blas;
use cudarc::cublas::sys::{
    cublasComputeType_t, cublasGemmAlgo_t, cublasHandle_t, cublasOperation_t, cublasStatus_t,
    cudaDataType,
};
use cudarc::cublaslt::result as lt;
use cudarc::cublaslt::sys as ltsys;
use std::ffi::c_void;

/// The GEMM shape: `m x k` by `k x n`, not multiples of the tile sizes cuBLAS favours.
const M: usize = 96;
const N: usize = 80;
const K: usize = 112;

/// The row pitches (leading dimensions, in elements) of the row-major `A` (`M x K`), `B`
/// (`K x N`) and `C` (`M x N`): each past its row, all distinct from one another and from
/// `M`, `N` and `K`.
const LDA: usize = K + 4;
const LDB: usize = N + 8;
const LDC: usize = N + 24;
const _: () = assert!(LDA >= K && LDB >= N && LDC >= N);

/// The cuBLASLt workspace: what its heuristics may plan with.
const LT_WORKSPACE: usize = 4 << 20;

/// What a cuBLAS status means, from NVIDIA's cuBLAS documentation (`cublasStatus_t`).
fn meaning(status: cublasStatus_t) -> Option<&'static str> {
    use cublasStatus_t::*;
    Some(match status {
        CUBLAS_STATUS_NOT_INITIALIZED => {
            "the cuBLAS library was not initialized: usually no GPU, no driver, or the CUDA \
             runtime could not start"
        }
        CUBLAS_STATUS_ALLOC_FAILED => "resource allocation failed inside cuBLAS",
        CUBLAS_STATUS_INVALID_VALUE => "an unsupported value or parameter was passed",
        CUBLAS_STATUS_ARCH_MISMATCH => "the GPU lacks a feature this function needs",
        CUBLAS_STATUS_MAPPING_ERROR => "an access to GPU memory space failed",
        CUBLAS_STATUS_EXECUTION_FAILED => "the GPU program failed to execute",
        CUBLAS_STATUS_INTERNAL_ERROR => "an internal cuBLAS operation failed",
        CUBLAS_STATUS_NOT_SUPPORTED => "the functionality requested is not supported",
        CUBLAS_STATUS_LICENSE_ERROR => "the functionality requested requires a licence",
        CUBLAS_STATUS_SUCCESS => return None,
    })
}

status_error!(blas::CublasError, meaning);
// cuBLASLt's statuses are cuBLAS's, in an enum of its own binding.
status_error!(lt::CublasError, |s| meaning(as_cublas_status(s)));

/// cuBLASLt's status as cuBLAS's: the two bindings declare the same C enum.
fn as_cublas_status(status: ltsys::cublasStatus_t) -> cublasStatus_t {
    use cublasStatus_t::*;
    [
        CUBLAS_STATUS_SUCCESS,
        CUBLAS_STATUS_NOT_INITIALIZED,
        CUBLAS_STATUS_ALLOC_FAILED,
        CUBLAS_STATUS_INVALID_VALUE,
        CUBLAS_STATUS_ARCH_MISMATCH,
        CUBLAS_STATUS_MAPPING_ERROR,
        CUBLAS_STATUS_EXECUTION_FAILED,
        CUBLAS_STATUS_INTERNAL_ERROR,
        CUBLAS_STATUS_NOT_SUPPORTED,
        CUBLAS_STATUS_LICENSE_ERROR,
    ]
    .into_iter()
    .find(|s| *s as u32 == status as u32)
    .unwrap_or(CUBLAS_STATUS_INTERNAL_ERROR)
}

/// The cuBLAS handle `cublas.handle` created, for the GEMM checks.
struct Handle(cublasHandle_t);

/// The cuBLASLt handle `cublasLt.handle` created.
struct LtHandle(ltsys::cublasLtHandle_t);

/// `cublas.handle`.
pub fn handle(s: &mut Session) -> Checked {
    s.library(Component::Cublas).map_err(Outcome::fail)?;
    let handle = blas::create_handle().call("cublasCreate")?;
    s.keep(Handle(handle));
    Ok(Outcome::pass("cublasCreate succeeded"))
}

/// `cublasLt.handle`.
pub fn lt_handle(s: &mut Session) -> Checked {
    s.library(Component::CublasLt).map_err(Outcome::fail)?;
    let handle = lt::create_handle().call("cublasLtCreate")?;
    s.keep(LtHandle(handle));
    Ok(Outcome::pass("cublasLtCreate succeeded"))
}

/// A GEMM's inputs in the element type it runs on, and the f64 reference of their product.
struct Problem<T> {
    a: Vec<T>,
    b: Vec<T>,
    want: Vec<f64>,
}

/// Random inputs rounded to `T` (so the reference multiplies what the GPU multiplies).
fn problem<T: Copy>(to: impl Fn(f32) -> T, back: impl Fn(T) -> f64) -> Problem<T> {
    let a: Vec<T> = kernels::random_f32(M * K, 5).into_iter().map(&to).collect();
    let b: Vec<T> = kernels::random_f32(K * N, 6).into_iter().map(&to).collect();
    let wide = |v: &[T]| v.iter().map(|x| back(*x)).collect::<Vec<f64>>();
    let want = kernels::matmul_reference(&wide(&a), &wide(&b), M, N, K);
    Problem { a, b, want }
}

/// The verdict on a GEMM's result.
fn judged(what: &str, got: Vec<f64>, want: &[f64], precision: Precision) -> Checked {
    verify(&format!("{what} {M}x{K} by {K}x{N}"), &got, want, precision)
        .finish(|o| o.detail("precision", precision.name()))
}

/// A problem's inputs on the device, and room for the `M x N` result, each at its pitch.
type Buffers<T> = (DeviceBuffer<T>, DeviceBuffer<T>, DeviceBuffer<T>);

/// The row-major `rows x cols` matrix `packed` with its rows `pitch` elements apart, the
/// padding `fill`.
pub(super) fn pitched<T: Copy>(packed: &[T], cols: usize, pitch: usize, fill: T) -> Vec<T> {
    packed
        .chunks(cols)
        .flat_map(|row| {
            row.iter()
                .copied()
                .chain(std::iter::repeat_n(fill, pitch - cols))
        })
        .collect()
}

/// The `cols` leading elements of each `pitch`-long row of `padded`.
fn unpitched<T: Copy>(padded: &[T], cols: usize, pitch: usize) -> Vec<T> {
    padded
        .chunks(pitch)
        .flat_map(|row| row[..cols].iter().copied())
        .collect()
}

/// Uploads a problem at the pitches, NaN (`nan`) in every padding element.
fn upload<T: Plain>(p: &Problem<T>, nan: T) -> Result<Buffers<T>, Outcome> {
    Ok((
        DeviceBuffer::from_slice(&pitched(&p.a, K, LDA, nan))?,
        DeviceBuffer::from_slice(&pitched(&p.b, N, LDB, nan))?,
        DeviceBuffer::from_slice(&[nan; M * LDC])?,
    ))
}

/// The `M x N` result read back from its pitch.
fn result<T: Plain>(dc: &DeviceBuffer<T>) -> Result<Vec<T>, Outcome> {
    Ok(unpitched(&dc.read()?, N, LDC))
}

/// The handle `cublas.handle` kept.
pub(crate) fn kept_handle(s: &Session) -> Result<cublasHandle_t, Outcome> {
    s.kept::<Handle>()
        .map(|h| h.0)
        .ok_or_else(|| Outcome::fail("no cuBLAS handle (cublas.handle did not pass)"))
}

/// `cublas.sgemm`.
pub fn sgemm(s: &mut Session) -> Checked {
    let handle = kept_handle(s)?;
    let p = problem(|x| x, f64::from);
    let (da, db, dc) = upload(&p, f32::NAN)?;
    let (alpha, beta) = (1.0f32, 0.0f32);
    // SAFETY: column-major Cᵀ (n x m) = Bᵀ (n x k) Aᵀ (k x m) over buffers of those shapes at
    // their pitches, alive until the read below (which waits for the GEMM); alpha and beta on
    // the host.
    unsafe {
        blas::sgemm(
            handle,
            cublasOperation_t::CUBLAS_OP_N,
            cublasOperation_t::CUBLAS_OP_N,
            N as i32,
            M as i32,
            K as i32,
            &alpha,
            db.as_ptr(),
            LDB as i32,
            da.as_ptr(),
            LDA as i32,
            &beta,
            dc.as_ptr(),
            LDC as i32,
        )
    }
    .call("cublasSgemm")?;
    synchronize()?;
    let got = result(&dc)?.into_iter().map(f64::from).collect();
    judged("SGEMM", got, &p.want, Precision::F32)
}

/// `cublas.gemm_fp16`: FP16 inputs and output, FP32 accumulation (compute capability 5.3+).
pub fn gemm_fp16(s: &mut Session) -> Checked {
    half_gemm(
        s,
        ComputeCapability::new(5, 3),
        cudaDataType::CUDA_R_16F,
        Precision::F16,
        half::f16::from_f32,
        |x: half::f16| f64::from(x.to_f32()),
    )
}

/// `cublas.gemm_bf16`: BF16 inputs and output, FP32 accumulation (compute capability 8.0+).
pub fn gemm_bf16(s: &mut Session) -> Checked {
    half_gemm(
        s,
        ComputeCapability::new(8, 0),
        cudaDataType::CUDA_R_16BF,
        Precision::Bf16,
        half::bf16::from_f32,
        |x: half::bf16| f64::from(x.to_f32()),
    )
}

/// `cublasGemmEx` on 16-bit inputs and output with FP32 accumulation and scaling.
fn half_gemm<T: Plain>(
    s: &mut Session,
    minimum: ComputeCapability,
    data: cudaDataType,
    precision: Precision,
    to: impl Fn(f32) -> T,
    back: impl Fn(T) -> f64 + Copy,
) -> Checked {
    let cc = s.gpu()?.cc;
    let what = format!("{} GEMM", precision.name().to_uppercase());
    if cc < minimum {
        return Ok(Outcome::skip(format!(
            "{what} needs compute capability {minimum} or newer; this GPU is {cc}"
        )));
    }
    let handle = kept_handle(s)?;
    let p = problem(&to, back);
    let (da, db, dc) = upload(&p, to(f32::NAN))?;
    let (alpha, beta) = (1.0f32, 0.0f32);
    // SAFETY: as in sgemm, with 16-bit elements of the declared type; alpha and beta are f32 as
    // CUBLAS_COMPUTE_32F requires.
    unsafe {
        blas::gemm_ex(
            handle,
            cublasOperation_t::CUBLAS_OP_N,
            cublasOperation_t::CUBLAS_OP_N,
            N as i32,
            M as i32,
            K as i32,
            (&alpha as *const f32).cast(),
            db.as_ptr() as *const c_void,
            data,
            LDB as i32,
            da.as_ptr() as *const c_void,
            data,
            LDA as i32,
            (&beta as *const f32).cast(),
            dc.as_ptr().cast(),
            data,
            LDC as i32,
            cublasComputeType_t::CUBLAS_COMPUTE_32F,
            cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
        )
    }
    .call("cublasGemmEx")?;
    synchronize()?;
    let got = result(&dc)?.into_iter().map(back).collect();
    judged(&what, got, &p.want, precision)
}

/// Destroys a cuBLASLt descriptor when dropped.
struct Destroy<F: FnMut()>(F);

impl<F: FnMut()> Drop for Destroy<F> {
    fn drop(&mut self) {
        (self.0)()
    }
}

/// The handle `cublasLt.handle` kept.
pub(crate) fn kept_lt_handle(s: &Session) -> Result<ltsys::cublasLtHandle_t, Outcome> {
    s.kept::<LtHandle>()
        .map(|h| h.0)
        .ok_or_else(|| Outcome::fail("no cuBLASLt handle (cublasLt.handle did not pass)"))
}

/// What cuBLASLt's heuristic picks for the matmul `desc` over the `layouts` (A, B, C, D; live
/// descriptors), allowed `workspace` bytes: its best algorithm and the workspace it needs.
pub(super) fn lt_heuristic(
    handle: ltsys::cublasLtHandle_t,
    desc: ltsys::cublasLtMatmulDesc_t,
    [a, b, c, d]: [ltsys::cublasLtMatrixLayout_t; 4],
    workspace: usize,
) -> Result<ltsys::cublasLtMatmulHeuristicResult_t, Outcome> {
    let pref = lt::create_matmul_pref().call("cublasLtMatmulPreferenceCreate")?;
    // SAFETY: created above, destroyed once, after its last use below.
    let _pref = Destroy(|| unsafe {
        let _ = lt::destroy_matmul_pref(pref);
    });
    let limit = workspace as u64;
    // SAFETY: the attribute takes a uint64_t, passed by address with its size.
    unsafe {
        lt::set_matmul_pref_attribute(
            pref,
            ltsys::cublasLtMatmulPreferenceAttributes_t::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
            (&limit as *const u64).cast(),
            std::mem::size_of::<u64>(),
        )
    }
    .call("cublasLtMatmulPreferenceSetAttribute")?;
    // SAFETY: every descriptor is live (the caller's contract) and so is the preference.
    unsafe { lt::get_matmul_algo_heuristic(handle, desc, a, b, c, d, pref) }
        .call("cublasLtMatmulAlgoGetHeuristic")
}

/// `cublasLt.matmul`: FP32 `cublasLtMatmul` with the algorithm its heuristic picks.
pub fn lt_matmul(s: &mut Session) -> Checked {
    let handle = kept_lt_handle(s)?;
    let p = problem(|x| x, f64::from);
    let (da, db, dc) = upload(&p, f32::NAN)?;
    let workspace = DeviceBuffer::<u8>::alloc(LT_WORKSPACE)?;
    let f32_type = ltsys::cudaDataType::CUDA_R_32F;
    let desc = lt::create_matmul_desc(ltsys::cublasComputeType_t::CUBLAS_COMPUTE_32F, f32_type)
        .call("cublasLtMatmulDescCreate")?;
    // SAFETY: each descriptor is destroyed once, after its last use below.
    let _desc = Destroy(|| unsafe {
        let _ = lt::destroy_matmul_desc(desc);
    });
    let layout = |rows: usize, cols: usize, ld: usize| {
        lt::create_matrix_layout(f32_type, rows as u64, cols as u64, ld as i64)
            .call("cublasLtMatrixLayoutCreate")
    };
    // Column-major: Bᵀ is n x k, Aᵀ is k x m, Cᵀ and Dᵀ are n x m, each at its pitch.
    let (lb, la, lc) = (layout(N, K, LDB)?, layout(K, M, LDA)?, layout(N, M, LDC)?);
    // SAFETY: as above.
    let _layouts = Destroy(|| unsafe {
        for l in [lb, la, lc] {
            let _ = lt::destroy_matrix_layout(l);
        }
    });
    // C and D share a layout.
    let heuristic = lt_heuristic(handle, desc, [lb, la, lc, lc], LT_WORKSPACE)?;
    let (alpha, beta) = (1.0f32, 0.0f32);
    // SAFETY: D = alpha Bᵀ Aᵀ + beta C over buffers of the layouts' sizes, in place (C = D),
    // with the workspace the preference allowed; the read below waits for it.
    unsafe {
        lt::matmul(
            handle,
            desc,
            (&alpha as *const f32).cast(),
            (&beta as *const f32).cast(),
            db.as_ptr() as *const c_void,
            lb,
            da.as_ptr() as *const c_void,
            la,
            dc.as_ptr() as *const c_void,
            lc,
            dc.as_ptr().cast(),
            lc,
            &heuristic.algo,
            workspace.as_ptr().cast(),
            LT_WORKSPACE,
            std::ptr::null_mut(),
        )
    }
    .call("cublasLtMatmul")?;
    synchronize()?;
    let got = result(&dc)?.into_iter().map(f64::from).collect();
    judged("cublasLtMatmul FP32", got, &p.want, Precision::F32)
        .finish(|o| o.detail("workspace_bytes", heuristic.workspaceSize))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::worker::outcome::LibraryError;

    #[test]
    fn statuses_have_meanings_and_map_between_bindings() {
        assert!(meaning(cublasStatus_t::CUBLAS_STATUS_NOT_INITIALIZED)
            .unwrap()
            .contains("not initialized"));
        assert_eq!(meaning(cublasStatus_t::CUBLAS_STATUS_SUCCESS), None);
        assert_eq!(
            as_cublas_status(ltsys::cublasStatus_t::CUBLAS_STATUS_NOT_SUPPORTED),
            cublasStatus_t::CUBLAS_STATUS_NOT_SUPPORTED
        );
        let error = blas::CublasError(cublasStatus_t::CUBLAS_STATUS_ARCH_MISMATCH);
        assert_eq!(
            error.describe(),
            "CUBLAS_STATUS_ARCH_MISMATCH (8): the GPU lacks a feature this function needs"
        );
    }

    #[test]
    fn pitches_are_distinct_and_padding_round_trips() {
        let all = [M, N, K, LDA, LDB, LDC];
        for (i, x) in all.iter().enumerate() {
            assert!(all[..i].iter().all(|y| y != x), "{all:?}");
        }
        let packed = [1, 2, 3, 4, 5, 6];
        let padded = pitched(&packed, 3, 5, 0);
        assert_eq!(padded, [1, 2, 3, 0, 0, 4, 5, 6, 0, 0]);
        assert_eq!(unpitched(&padded, 3, 5), packed);
    }

    #[test]
    fn rounded_problems_multiply_what_the_gpu_multiplies() {
        let p = problem(half::bf16::from_f32, |x: half::bf16| f64::from(x.to_f32()));
        assert_eq!(p.a.len(), M * K);
        assert_eq!(p.want.len(), M * N);
        let first: f64 = (0..K)
            .map(|i| f64::from(p.a[i].to_f32()) * f64::from(p.b[i * N].to_f32()))
            .sum();
        assert!((p.want[0] - first).abs() < 1e-12);
    }
}
