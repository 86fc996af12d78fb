//! FP8 GEMMs through cuBLASLt: E4M3 inputs, each with a scale, FP32 accumulation and a BF16
//! output, as NVIDIA's `LtFp8Matmul` sample sets them up. The check `cublasLt.matmul_fp8` and
//! the benchmark `matmul/<combination>/cublas/fp8/...` both run a [`Fp8Gemm`].
//!
//! cuBLASLt's FP8 kernels take only the "TN" form: the first operand transposed, the second
//! not, `CUBLAS_COMPUTE_32F` with FP32 scales, leading dimensions of 16-byte multiples. Each
//! scale has an allocation of its own and `D` is written out of place (`C` NULL, `beta` 0), as
//! NVIDIA's sample and PyTorch's `scaled_gemm` call it: cuBLASLt 13.1 on an H200 (2026-11-29)
//! answered `CUBLAS_STATUS_NOT_SUPPORTED` from `cublasLtMatmul`, after its heuristic had
//! answered, to the same GEMM done in place with `B`'s scale 4 bytes into one buffer. The
//! row-major `C = A B` (`A` `m x k`, `B` `k x n`) is the column-major `Cᵀ = Bᵀ Aᵀ`: the first
//! operand is `B` stored transposed (`n` rows of `k`: the column-major `k x n` that `T`
//! turns into `Bᵀ`), the second `A` as it is (the column-major `k x m` `Aᵀ`).
//!
//! Calls: `cublasLtMatmulDescCreate`, `cublasLtMatmulDescSetAttribute` (`TRANSA`, `TRANSB`,
//! `A_SCALE_POINTER`, `B_SCALE_POINTER`), `cublasLtMatrixLayoutCreate`,
//! `cublasLtMatmulPreference*`, `cublasLtMatmulAlgoGetHeuristic`, `cublasLtMatmul`,
//! `cublasLtGetVersion`.

use super::cublas::{kept_lt_handle, lt_heuristic, pitched};
use super::device::{synchronize, DeviceBuffer};
use super::outcome::{verify, Call, Checked, Finish, Outcome};
use super::session::Session;
use crate::compat::ComputeCapability;
use crate::e4m3;
use crate::kernels;
use crate::tolerance::Precision;
use cudarc::cublas::sys::cublasOperation_t;
use cudarc::cublaslt::result as lt;
use cudarc::cublaslt::sys as ltsys;
use ltsys::{cublasLtMatmulDescAttributes_t as Attribute, cudaDataType};
use std::ffi::c_void;

/// The first compute capability with FP8 tensor cores (Ada; Hopper is 9.0).
const FP8_MINIMUM: ComputeCapability = ComputeCapability::new(8, 9);

/// Hopper, whose FP8 matmuls came first.
const HOPPER: ComputeCapability = ComputeCapability::new(9, 0);

/// The first cuBLASLt with FP8 matmuls, on Hopper: cuBLAS 11.11, of CUDA 11.8
/// (`cublasLtGetVersion`'s `major * 10000 + minor * 100 + patch`).
const FP8_CUBLASLT: usize = 11_11_00;

/// The first cuBLASLt with FP8 matmuls for Ada (sm_89): cuBLAS 12.1, of CUDA 12.1, whose
/// release notes add them; before it the heuristic finds no FP8 kernel for Ada.
const FP8_CUBLASLT_ADA: usize = 12_01_00;

/// The workspace cuBLASLt may plan with: 32 MiB, what NVIDIA recommends for Hopper.
const WORKSPACE: usize = 32 << 20;

/// Why this GPU or this cuBLASLt cannot run an FP8 GEMM, if it cannot.
pub fn unsupported(s: &Session) -> Result<Option<String>, Outcome> {
    let cc = s.gpu()?.cc;
    let version = if cc < FP8_MINIMUM {
        0
    } else {
        // SAFETY: a size_t f(void); cuBLASLt is loaded (its handle was created).
        unsafe { ltsys::cublasLtGetVersion() }
    };
    Ok(without_fp8(cc, version))
}

/// Why a GPU of `cc` with cuBLASLt `version` has no FP8 GEMM, if it has none.
fn without_fp8(cc: ComputeCapability, version: usize) -> Option<String> {
    let dotted = |v: usize| format!("{}.{}.{}", v / 10_000, v / 100 % 100, v % 100);
    if cc < FP8_MINIMUM {
        Some(format!(
            "FP8 GEMM needs compute capability {FP8_MINIMUM} or newer (FP8 tensor cores); this \
             GPU is {cc}"
        ))
    } else if version < FP8_CUBLASLT {
        Some(format!(
            "FP8 GEMM needs cuBLASLt 11.11 (CUDA 11.8) or newer; this one is {}",
            dotted(version)
        ))
    } else if cc < HOPPER && version < FP8_CUBLASLT_ADA {
        Some(format!(
            "FP8 GEMM on compute capability {cc} (Ada) needs cuBLASLt 12.1 (CUDA 12.1) or newer; \
             this one is {}, whose FP8 kernels are Hopper's only",
            dotted(version)
        ))
    } else {
        None
    }
}

/// One FP8 GEMM's shape: the row-major `m x k` by `k x n` product, with the row pitches (in
/// elements) of `A`, of `B` stored transposed, and of `C`.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub lda: usize,
    pub ldbt: usize,
    pub ldc: usize,
}

/// A planned FP8 GEMM: its descriptors, the algorithm cuBLASLt's heuristic chose, the
/// workspace, and the two scales in device memory, each in an allocation of its own.
pub struct Fp8Gemm {
    handle: ltsys::cublasLtHandle_t,
    desc: ltsys::cublasLtMatmulDesc_t,
    /// The first operand (`B` transposed), the second (`A`), `C` and `D`.
    layouts: [ltsys::cublasLtMatrixLayout_t; 4],
    algo: ltsys::cublasLtMatmulAlgo_t,
    workspace: DeviceBuffer<u8>,
    /// `A`'s scale and `B`'s.
    scales: [DeviceBuffer<f32>; 2],
}

impl Drop for Fp8Gemm {
    fn drop(&mut self) {
        // SAFETY: each descriptor was created by `plan` and is destroyed once, here.
        unsafe {
            for layout in self.layouts {
                let _ = lt::destroy_matrix_layout(layout);
            }
            let _ = lt::destroy_matmul_desc(self.desc);
        }
    }
}

/// What cuBLASLt's heuristic answers when it has no kernel for a matmul.
const NOT_SUPPORTED: &str = "CUBLAS_STATUS_NOT_SUPPORTED";

impl Fp8Gemm {
    /// Plans the GEMM of `shape` with `A` scaled by `scale_a` and `B` by `scale_b`.
    pub fn plan(s: &Session, shape: Shape, scale_a: f32, scale_b: f32) -> Result<Fp8Gemm, Outcome> {
        let handle = kept_lt_handle(s)?;
        let scales = [
            DeviceBuffer::from_slice(&[scale_a])?,
            DeviceBuffer::from_slice(&[scale_b])?,
        ];
        let desc = lt::create_matmul_desc(
            ltsys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
            cudaDataType::CUDA_R_32F,
        )
        .call("cublasLtMatmulDescCreate")?;
        let layout = |data, rows: usize, cols: usize, ld: usize| {
            lt::create_matrix_layout(data, rows as u64, cols as u64, ld as i64)
                .call("cublasLtMatrixLayoutCreate")
        };
        let e4m3 = cudaDataType::CUDA_R_8F_E4M3;
        // From here the descriptors are the plan's, destroyed when it drops, whatever fails.
        let mut gemm = Fp8Gemm {
            handle,
            desc,
            layouts: [std::ptr::null_mut(); 4],
            algo: ltsys::cublasLtMatmulAlgo_t { data: [0; 8] },
            workspace: DeviceBuffer::alloc(WORKSPACE)?,
            scales,
        };
        gemm.layouts[0] = layout(e4m3, shape.k, shape.n, shape.ldbt)?;
        gemm.layouts[1] = layout(e4m3, shape.k, shape.m, shape.lda)?;
        gemm.layouts[2] = layout(cudaDataType::CUDA_R_16BF, shape.n, shape.m, shape.ldc)?;
        gemm.layouts[3] = layout(cudaDataType::CUDA_R_16BF, shape.n, shape.m, shape.ldc)?;
        // The first operand is Bᵀ: its scale is B's.
        let first_scale = gemm.scales[1].ptr();
        let second_scale = gemm.scales[0].ptr();
        gemm.set(
            Attribute::CUBLASLT_MATMUL_DESC_TRANSA,
            cublasOperation_t::CUBLAS_OP_T,
        )?;
        gemm.set(
            Attribute::CUBLASLT_MATMUL_DESC_TRANSB,
            cublasOperation_t::CUBLAS_OP_N,
        )?;
        gemm.set(Attribute::CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, first_scale)?;
        gemm.set(
            Attribute::CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
            second_scale,
        )?;
        gemm.algo = match lt_heuristic(handle, desc, gemm.layouts, WORKSPACE) {
            Ok(heuristic) => heuristic.algo,
            Err(refused) if refused.details.get("error_name") == Some(&NOT_SUPPORTED.into()) => {
                return Err(Outcome::skip(
                    "this cuBLASLt has no FP8 kernel for this GPU: its heuristic answered \
                     CUBLAS_STATUS_NOT_SUPPORTED for an E4M3 matmul the GPU's compute \
                     capability allows (Ada needs cuBLASLt 12.1 or newer); a newer CUDA \
                     toolkit or wheel runs it",
                )
                .details_from(&refused.details))
            }
            Err(failed) => return Err(failed),
        };
        Ok(gemm)
    }

    /// Sets a matmul descriptor attribute to `value`, passed by address with its size.
    fn set<T>(&self, attribute: Attribute, value: T) -> Result<(), Outcome> {
        // SAFETY: a live descriptor; `value` lives through the call, and each attribute set
        // here takes a value of exactly this type (an int-sized enum, or a device pointer).
        unsafe {
            lt::set_matmul_desc_attribute(
                self.desc,
                attribute,
                (&value as *const T).cast(),
                std::mem::size_of::<T>(),
            )
        }
        .call("cublasLtMatmulDescSetAttribute")
    }

    /// Enqueues `D = scale_a scale_b (A B)` on `stream` (NULL: the legacy default stream):
    /// `bt` is `B` transposed, `d` the BF16 output; buffers at the plan's shape and pitches.
    pub fn enqueue(
        &self,
        a: &DeviceBuffer<u8>,
        bt: &DeviceBuffer<u8>,
        d: &DeviceBuffer<half::bf16>,
        stream: ltsys::cudaStream_t,
    ) -> Result<(), Outcome> {
        let (alpha, beta) = (1.0f32, 0.0f32);
        let [first, second, c, d_layout] = self.layouts;
        // SAFETY: D = alpha op(Bᵀ stored) op(A stored) over buffers of the layouts' sizes, C
        // NULL (beta 0: not read), alpha and beta f32 on the host, the workspace the preference
        // allowed; the buffers outlive the GEMM (the caller waits on `stream` before dropping).
        unsafe {
            lt::matmul(
                self.handle,
                self.desc,
                (&alpha as *const f32).cast(),
                (&beta as *const f32).cast(),
                bt.as_ptr() as *const c_void,
                first,
                a.as_ptr() as *const c_void,
                second,
                std::ptr::null(),
                c,
                d.as_ptr().cast(),
                d_layout,
                &self.algo,
                self.workspace.as_ptr().cast(),
                WORKSPACE,
                stream,
            )
        }
        .call("cublasLtMatmul")
    }
}

/// The check's shape: `m`, `n` and `k` distinct multiples of 16, and pitches (16-byte
/// multiples, as FP8 requires) that differ from one another and from every dimension, so
/// that swapped or transposed operands fail.
const CHECK: Shape = Shape {
    m: 96,
    n: 80,
    k: 112,
    lda: 128,
    ldbt: 144,
    ldc: 104,
};

/// The check's scales: inputs are encoded at 64 and 32 times their value and scaled back by
/// cuBLASLt, so a scale ignored or applied twice is off by a factor of 32 or more.
const SCALE_A: f32 = 1.0 / 64.0;
const SCALE_B: f32 = 1.0 / 32.0;

/// The row-major `rows x cols` matrix `m` transposed.
pub fn transposed<T: Copy>(m: &[T], rows: usize, cols: usize) -> Vec<T> {
    (0..cols)
        .flat_map(|c| (0..rows).map(move |r| m[r * cols + c]))
        .collect()
}

/// Random E4M3 inputs: `[-1, 1)` at `1 / scale` times their value.
pub fn random_e4m3(len: usize, seed: u64, scale: f32) -> Vec<u8> {
    kernels::random_f32(len, seed)
        .into_iter()
        .map(|x| e4m3::encode(x / scale))
        .collect()
}

/// `cublasLt.matmul_fp8`.
pub fn check(s: &mut Session) -> Checked {
    if let Some(why) = unsupported(s)? {
        return Ok(Outcome::skip(why));
    }
    let Shape {
        m,
        n,
        k,
        lda,
        ldbt,
        ldc,
    } = CHECK;
    let a = random_e4m3(m * k, 21, SCALE_A);
    let b = random_e4m3(k * n, 22, SCALE_B);
    let widen = |v: &[u8], scale: f32| -> Vec<f64> {
        v.iter()
            .map(|x| f64::from(e4m3::decode(*x)) * f64::from(scale))
            .collect()
    };
    let want = kernels::matmul_reference(&widen(&a, SCALE_A), &widen(&b, SCALE_B), m, n, k);
    let nan = e4m3::encode(f32::NAN);
    let da = DeviceBuffer::from_slice(&pitched(&a, k, lda, nan))?;
    let dbt = DeviceBuffer::from_slice(&pitched(&transposed(&b, k, n), k, ldbt, nan))?;
    let dc = DeviceBuffer::from_slice(&vec![half::bf16::NAN; m * ldc])?;
    let gemm = Fp8Gemm::plan(s, CHECK, SCALE_A, SCALE_B)?;
    gemm.enqueue(&da, &dbt, &dc, std::ptr::null_mut())?;
    synchronize()?;
    let got: Vec<f64> = dc
        .read()?
        .chunks(ldc)
        .flat_map(|row| row[..n].iter().map(|x| f64::from(x.to_f32())))
        .collect();
    let what =
        format!("cublasLtMatmul FP8 (E4M3, scales {SCALE_A} and {SCALE_B}) {m}x{k} by {k}x{n}");
    verify(&what, &got, &want, Precision::Fp8).finish(|o| {
        o.detail("precision", "fp8 e4m3, bf16 output")
            .detail("workspace_bytes", WORKSPACE as u64)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ada_needs_cublaslt_12_1_for_fp8_and_hopper_11_11() {
        let (ampere, ada, hopper) = (
            ComputeCapability::new(8, 0),
            ComputeCapability::new(8, 9),
            ComputeCapability::new(9, 0),
        );
        assert!(without_fp8(ampere, 12_09_01).is_some_and(|w| w.contains("8.9 or newer")));
        assert_eq!(without_fp8(hopper, 11_11_03), None);
        assert!(without_fp8(hopper, 11_10_03).is_some_and(|w| w.contains("11.11")));
        // CUDA 11.8 to 12.0 on Ada: Hopper's kernels only.
        for version in [11_11_03, 12_00_02] {
            let why = without_fp8(ada, version).expect("no FP8 for Ada");
            assert!(why.contains("needs cuBLASLt 12.1"), "{why}");
        }
        assert_eq!(without_fp8(ada, 12_01_00), None);
    }

    #[test]
    fn the_check_shape_leaves_nothing_interchangeable_and_fits_fp8() {
        let Shape {
            m,
            n,
            k,
            lda,
            ldbt,
            ldc,
        } = CHECK;
        let all = [m, n, k, lda, ldbt, ldc];
        for (i, x) in all.iter().enumerate() {
            assert!(all[..i].iter().all(|y| y != x), "{all:?}");
        }
        assert!(lda >= k && ldbt >= k && ldc >= n);
        assert!([m, n, k, lda, ldbt].iter().all(|x| x % 16 == 0));
        assert_eq!(
            ldc * 2 % 16,
            0,
            "the BF16 output's rows are 16-byte multiples"
        );
    }

    #[test]
    fn transposing_swaps_rows_and_columns() {
        // [1 2 3; 4 5 6] -> [1 4; 2 5; 3 6]
        assert_eq!(transposed(&[1, 2, 3, 4, 5, 6], 2, 3), [1, 4, 2, 5, 3, 6]);
    }

    #[test]
    fn random_inputs_use_the_format_s_range_and_scale_back() {
        let a = random_e4m3(4096, 21, SCALE_A);
        let largest = a.iter().map(|x| e4m3::decode(*x).abs()).fold(0.0, f32::max);
        assert!((48.0..=64.0).contains(&largest), "{largest}");
        let x = kernels::random_f32(1, 21)[0];
        let back = e4m3::decode(a[0]) * SCALE_A;
        assert!((back - x).abs() <= x.abs() / 16.0, "{back} vs {x}");
    }
}
