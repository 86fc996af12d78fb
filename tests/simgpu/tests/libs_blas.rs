//! The simulated cudart, cuBLAS and cuBLASLt through their exported functions, each test on a
//! host of its own: the GEMM reference against a naive triple loop on non-square, transposed,
//! padded shapes; TF32 rounding only where the compute type or math mode asks for it; argument
//! validation with cuBLAS's statuses; cuBLASLt's FP8 matmul (E4M3 inputs, scales, BF16 and E4M3
//! outputs) against the tests' own decoding and f64 sums, and what it refuses; the model time
//! at the precision's peak; the faults; the trace; and the runtime's version rules.

mod driver_support;

use driver_support::{alloc, context, download, elapsed, event, host, ok, stream, upload, QUIET};
use stackbench_simgpu::clock::LAUNCH_LATENCY;
use stackbench_simgpu::driver::*;
use stackbench_simgpu::libs::cublas::gemm::product;
use stackbench_simgpu::libs::cublas::*;
use stackbench_simgpu::libs::cublaslt::*;
use stackbench_simgpu::libs::cudart::*;
use std::ffi::{c_int, c_void, CStr};
use std::ptr::null_mut;

/// `CUBLAS_OP_N`, `CUBLAS_OP_T`.
const N: c_int = 0;
const T: c_int = 1;
/// `cudaDataType`s.
const R_32F: c_int = 0;
const R_16F: c_int = 2;
const R_16BF: c_int = 14;
/// `cublasComputeType_t`s.
const COMPUTE_32F: c_int = 68;
const COMPUTE_32F_PEDANTIC: c_int = 69;
const COMPUTE_32F_FAST_TF32: c_int = 77;
const COMPUTE_16F: c_int = 64;
/// `CUBLAS_GEMM_DEFAULT`.
const ALGO: c_int = -1;

/// A cuBLAS status's name.
fn status(code: c_int) -> String {
    // SAFETY: the library's static, NUL-terminated name.
    unsafe { CStr::from_ptr(cublasGetStatusName(code)) }
        .to_string_lossy()
        .into_owned()
}

#[track_caller]
fn blas_ok(code: c_int) {
    assert_eq!(status(code), "CUBLAS_STATUS_SUCCESS");
}

/// A cuBLAS handle on the current context.
fn handle() -> *mut c_void {
    let mut h = null_mut();
    // SAFETY: a valid out-pointer.
    blas_ok(unsafe { cublasCreate_v2(&mut h) });
    h
}

/// Deterministic values in [-1, 1) with few mantissa bits (exact in every format).
fn values(len: usize, seed: u32) -> Vec<f32> {
    (0..len as u32)
        .map(|i| ((i.wrapping_mul(37).wrapping_add(seed * 11) % 64) as f32 - 32.0) / 32.0)
        .collect()
}

/// The naive column-major `D = alpha op(A) op(B) + beta C` in f64, over padded storage: the
/// elements of `c` between columns unchanged.
#[allow(clippy::too_many_arguments)]
fn naive(
    (ta, tb): (bool, bool),
    (m, n, k): (usize, usize, usize),
    alpha: f64,
    a: &[f32],
    lda: usize,
    b: &[f32],
    ldb: usize,
    beta: f64,
    c: &[f32],
    ldc: usize,
) -> Vec<f64> {
    let mut out: Vec<f64> = c.iter().map(|&x| f64::from(x)).collect();
    for j in 0..n {
        for i in 0..m {
            let mut sum = 0.0;
            for p in 0..k {
                let x = if ta { a[p + i * lda] } else { a[i + p * lda] };
                let y = if tb { b[j + p * ldb] } else { b[p + j * ldb] };
                sum += f64::from(x) * f64::from(y);
            }
            out[i + j * ldc] = alpha * sum + beta * f64::from(c[i + j * ldc]);
        }
    }
    out
}

/// Asserts `got` within 1e-5 (relative to the largest magnitude) of `want`.
#[track_caller]
fn close(got: &[f32], want: &[f64]) {
    assert_eq!(got.len(), want.len());
    let scale = want.iter().fold(1.0f64, |s, w| s.max(w.abs()));
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (f64::from(*g) - w).abs() <= 1e-5 * scale,
            "element {i}: {g} against {w}"
        );
    }
}

/// `(rows, cols)` of an operand as stored.
fn stored(transposed: bool, rows: usize, cols: usize) -> (usize, usize) {
    if transposed {
        (cols, rows)
    } else {
        (rows, cols)
    }
}

#[test]
fn the_reference_agrees_with_a_naive_triple_loop_on_non_square_transposed_shapes() {
    let (m, n, k) = (5, 7, 3);
    for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
        let (ra, ca) = stored(ta, m, k);
        let (rb, cb) = stored(tb, k, n);
        let (lda, ldb) = (ra + 2, rb + 3);
        let a = values(lda * ca, 1);
        let b = values(ldb * cb, 2);
        let got = product(ta, tb, m, n, k, 1.5, &a, lda, &b, ldb).unwrap();
        let want = naive(
            (ta, tb),
            (m, n, k),
            1.5,
            &a,
            lda,
            &b,
            ldb,
            0.0,
            &vec![0.0; m * n],
            m,
        );
        close(&got, &want);
    }
}

#[test]
fn sgemm_computes_column_major_with_leading_dimensions_transposes_and_beta() {
    context(QUIET);
    let h = handle();
    let (m, n, k) = (6, 4, 9);
    for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
        let (ra, ca) = stored(ta, m, k);
        let (rb, cb) = stored(tb, k, n);
        let (lda, ldb, ldc) = (ra + 1, rb + 2, m + 3);
        let (a, b, c) = (values(lda * ca, 3), values(ldb * cb, 4), values(ldc * n, 5));
        let (da, db, dc) = (upload(&a), upload(&b), upload(&c));
        let (alpha, beta) = (0.75f32, -0.5f32);
        let op = |t: bool| if t { T } else { N };
        // SAFETY: scalars on the host; device buffers of the padded sizes.
        blas_ok(unsafe {
            cublasSgemm_v2(
                h,
                op(ta),
                op(tb),
                m as c_int,
                n as c_int,
                k as c_int,
                &alpha,
                da as *const f32,
                lda as c_int,
                db as *const f32,
                ldb as c_int,
                &beta,
                dc as *mut f32,
                ldc as c_int,
            )
        });
        ok(cuCtxSynchronize());
        // The padding rows between C's columns keep their values.
        let want = naive((ta, tb), (m, n, k), 0.75, &a, lda, &b, ldb, -0.5, &c, ldc);
        close(&download(dc, ldc * n), &want);
    }
    blas_ok(cublasDestroy_v2(h));
}

/// `cublasGemmEx` of `m x k` by `k x n`, no transposes, tight leading dimensions.
#[allow(clippy::too_many_arguments)]
fn gemm_ex(
    h: *mut c_void,
    (m, n, k): (usize, usize, usize),
    a: u64,
    b: u64,
    c: u64,
    types: (c_int, c_int),
    compute: c_int,
) -> c_int {
    let (alpha, beta) = (1.0f32, 0.0f32);
    // SAFETY: scalars on the host; device buffers of the sizes given.
    unsafe {
        cublasGemmEx(
            h,
            N,
            N,
            m as c_int,
            n as c_int,
            k as c_int,
            (&alpha as *const f32).cast(),
            a as *const c_void,
            types.0,
            m as c_int,
            b as *const c_void,
            types.0,
            k as c_int,
            (&beta as *const f32).cast(),
            c as *mut c_void,
            types.1,
            m as c_int,
            compute,
            ALGO,
        )
    }
}

/// A device copy of raw bytes.
fn upload_bytes(bytes: &[u8]) -> u64 {
    let ptr = alloc(bytes.len());
    // SAFETY: the allocation holds exactly the slice's bytes.
    ok(unsafe { cuMemcpyHtoD_v2(ptr, bytes.as_ptr().cast(), bytes.len()) });
    ptr
}

#[test]
fn sixteen_bit_gemms_widen_their_inputs_exactly_and_round_their_output() {
    context(QUIET);
    let h = handle();
    let (m, n, k) = (3, 5, 4);
    let (a, b) = (values(m * k, 6), values(k * n, 7));
    let want = naive(
        (false, false),
        (m, n, k),
        1.0,
        &a,
        m,
        &b,
        k,
        0.0,
        &vec![0.0; m * n],
        m,
    );
    let f16 = |v: &[f32]| -> Vec<u8> {
        v.iter()
            .flat_map(|x| half::f16::from_f32(*x).to_le_bytes())
            .collect()
    };
    let bf16 = |v: &[f32]| -> Vec<u8> {
        v.iter()
            .flat_map(|x| half::bf16::from_f32(*x).to_le_bytes())
            .collect()
    };
    for (kind, bytes) in [(R_16F, f16 as fn(&[f32]) -> Vec<u8>), (R_16BF, bf16)] {
        let (da, db) = (upload_bytes(&bytes(&a)), upload_bytes(&bytes(&b)));
        let dc = alloc(m * n * 4);
        blas_ok(gemm_ex(
            h,
            (m, n, k),
            da,
            db,
            dc,
            (kind, R_32F),
            COMPUTE_32F,
        ));
        ok(cuCtxSynchronize());
        // The inputs have few bits: every product and sum is exact.
        let got = download(dc, m * n);
        assert_eq!(got, want.iter().map(|&w| w as f32).collect::<Vec<_>>());
        let dh = alloc(m * n * 2);
        blas_ok(gemm_ex(h, (m, n, k), da, db, dh, (kind, kind), COMPUTE_32F));
        ok(cuCtxSynchronize());
        let mut raw = vec![0u8; m * n * 2];
        // SAFETY: `raw` holds the output's bytes.
        ok(unsafe { cuMemcpyDtoH_v2(raw.as_mut_ptr().cast(), dh, raw.len()) });
        let widened: Vec<f32> = raw
            .chunks_exact(2)
            .map(|b| match kind {
                R_16F => half::f16::from_le_bytes([b[0], b[1]]).to_f32(),
                _ => half::bf16::from_le_bytes([b[0], b[1]]).to_f32(),
            })
            .collect();
        // The 16-bit output is the FP32 result rounded to its format.
        let rounded: Vec<f32> = got
            .iter()
            .map(|&g| match kind {
                R_16F => half::f16::from_f32(g).to_f32(),
                _ => half::bf16::from_f32(g).to_f32(),
            })
            .collect();
        assert_eq!(widened, rounded);
    }
}

/// One FP32 `1 x 1 x 1` product `x * 1` under `compute` (via `cublasGemmEx`).
fn single(h: *mut c_void, x: f32, compute: c_int) -> f32 {
    let (a, b, c) = (upload(&[x]), upload(&[1.0]), alloc(4));
    blas_ok(gemm_ex(h, (1, 1, 1), a, b, c, (R_32F, R_32F), compute));
    ok(cuCtxSynchronize());
    download(c, 1)[0]
}

#[test]
fn tf32_rounds_the_inputs_only_where_the_compute_type_or_math_mode_asks() {
    context(QUIET);
    let h = handle();
    // 1 + 2^-12 needs 12 mantissa bits: TF32 keeps 10, and rounds it to 1.
    let x = 1.0 + 1.0 / 4096.0;
    assert_eq!(single(h, x, COMPUTE_32F), x);
    assert_eq!(single(h, x, COMPUTE_32F_FAST_TF32), 1.0);
    // Ties go to even: 1 + 3 x 2^-11 lies halfway between 1 + 2^-10 and 1 + 2^-9.
    let tie = 1.0 + 3.0 / 2048.0;
    assert_eq!(single(h, tie, COMPUTE_32F_FAST_TF32), 1.0 + 1.0 / 512.0);
    // The TF32 math mode lets CUBLAS_COMPUTE_32F use TF32, never the pedantic type.
    blas_ok(cublasSetMathMode(h, 3));
    assert_eq!(single(h, x, COMPUTE_32F), 1.0);
    assert_eq!(single(h, x, COMPUTE_32F_PEDANTIC), x);
    let mut mode = 0;
    // SAFETY: a valid out-pointer.
    blas_ok(unsafe { cublasGetMathMode(h, &mut mode) });
    assert_eq!(mode, 3);
}

#[test]
fn arguments_are_validated_as_cublas_validates_them() {
    context(QUIET);
    let h = handle();
    let (a, b, c) = (alloc(4096), alloc(4096), alloc(4096));
    let (alpha, beta) = (1.0f32, 0.0f32);
    let sgemm =
        |h: *mut c_void, ops: (c_int, c_int), mnk: (c_int, c_int, c_int), ld: [c_int; 3]| {
            // SAFETY: scalars on the host; the buffers hold 1024 floats, more than any valid call
            // below reads.
            unsafe {
                cublasSgemm_v2(
                    h,
                    ops.0,
                    ops.1,
                    mnk.0,
                    mnk.1,
                    mnk.2,
                    &alpha,
                    a as *const f32,
                    ld[0],
                    b as *const f32,
                    ld[1],
                    &beta,
                    c as *mut f32,
                    ld[2],
                )
            }
        };
    let (m, n, k) = (8, 6, 10);
    blas_ok(sgemm(h, (N, N), (m, n, k), [8, 10, 8]));
    // lda below m (A not transposed), below k (transposed); ldb below k; ldc below m.
    for (ops, ld) in [
        ((N, N), [7, 10, 8]),
        ((T, N), [8, 10, 8]),
        ((N, N), [8, 9, 8]),
        ((N, T), [8, 5, 8]),
        ((N, N), [8, 10, 7]),
    ] {
        assert_eq!(
            status(sgemm(h, ops, (m, n, k), ld)),
            "CUBLAS_STATUS_INVALID_VALUE",
            "{ops:?} {ld:?}"
        );
    }
    assert_eq!(
        status(sgemm(h, (N, N), (-1, n, k), [8, 10, 8])),
        "CUBLAS_STATUS_INVALID_VALUE"
    );
    assert_eq!(
        status(sgemm(h, (N, 3), (m, n, k), [8, 10, 8])),
        "CUBLAS_STATUS_INVALID_VALUE"
    );
    // A handle that is not one.
    assert_eq!(
        status(sgemm(0x1234 as *mut c_void, (N, N), (m, n, k), [8, 10, 8])),
        "CUBLAS_STATUS_NOT_INITIALIZED"
    );
    // FP16 inputs with a BF16 output, and the FP16 compute type, are not provided.
    assert_eq!(
        status(gemm_ex(h, (4, 4, 4), a, b, c, (R_16F, R_16BF), COMPUTE_32F)),
        "CUBLAS_STATUS_NOT_SUPPORTED"
    );
    assert_eq!(
        status(gemm_ex(h, (4, 4, 4), a, b, c, (R_16F, R_16F), COMPUTE_16F)),
        "CUBLAS_STATUS_NOT_SUPPORTED"
    );
    // An empty product is no work, and succeeds.
    blas_ok(sgemm(h, (N, N), (0, n, k), [1, 10, 1]));
    blas_ok(cublasDestroy_v2(h));
    assert_eq!(status(cublasDestroy_v2(h)), "CUBLAS_STATUS_NOT_INITIALIZED");
}

#[test]
fn a_gemm_on_a_stream_takes_2mnk_at_its_precision_s_peak() {
    context(
        "[[device]]\nmemory_gib = 1\nmemory_bandwidth_gbs = 1000\nfp32_tflops = 10\n\
         tf32_tflops = 80\nnoise = 0.0\nrun_sigma = 0.0\nboot_sigma = 0.0\nramp_ms = 0.0\n",
    );
    let h = handle();
    let s = stream();
    blas_ok(cublasSetStream_v2(h, s));
    let (m, n, k) = (64, 48, 80);
    let (a, b, c) = (alloc(m * k * 4), alloc(k * n * 4), alloc(m * n * 4));
    let time = |compute: c_int| {
        let (start, stop) = (event(), event());
        ok(cuEventRecord(start, s));
        let (alpha, beta) = (1.0f32, 0.0f32);
        // SAFETY: as in gemm_ex, on the handle's stream.
        blas_ok(unsafe {
            cublasGemmEx(
                h,
                N,
                N,
                m as c_int,
                n as c_int,
                k as c_int,
                (&alpha as *const f32).cast(),
                a as *const c_void,
                R_32F,
                m as c_int,
                b as *const c_void,
                R_32F,
                k as c_int,
                (&beta as *const f32).cast(),
                c as *mut c_void,
                R_32F,
                m as c_int,
                compute,
                ALGO,
            )
        });
        ok(cuEventRecord(stop, s));
        ok(cuEventSynchronize(stop));
        f64::from(elapsed(start, stop)) * 1e-3
    };
    let flops = 2.0 * (m * n * k) as f64;
    let bytes = 4.0 * (m * k + k * n + m * n) as f64;
    for (compute, peak) in [(COMPUTE_32F, 10e12), (COMPUTE_32F_FAST_TF32, 80e12)] {
        let want = LAUNCH_LATENCY + (flops / peak).max(bytes / 1000e9);
        let got = time(compute);
        assert!(
            (got / want - 1.0).abs() < 1e-3,
            "{compute}: {got} s against {want} s"
        );
    }
}

#[test]
fn wrong_results_perturbs_a_few_gemm_outputs_far_beyond_any_tolerance() {
    context(&format!("{QUIET}\n[faults]\nwrong_results = \"gemm\"\n"));
    let h = handle();
    let (m, n, k) = (7, 5, 3);
    let (a, b) = (values(m * k, 8), values(k * n, 9));
    let (da, db, dc) = (upload(&a), upload(&b), alloc(m * n * 4));
    blas_ok(gemm_ex(
        h,
        (m, n, k),
        da,
        db,
        dc,
        (R_32F, R_32F),
        COMPUTE_32F,
    ));
    ok(cuCtxSynchronize());
    let got = download(dc, m * n);
    let want = naive(
        (false, false),
        (m, n, k),
        1.0,
        &a,
        m,
        &b,
        k,
        0.0,
        &vec![0.0; m * n],
        m,
    );
    let wrong: Vec<usize> = (0..m * n)
        .filter(|&i| (f64::from(got[i]) - want[i]).abs() > 0.4 * (want[i].abs() + 1.0))
        .collect();
    assert_eq!(wrong, vec![0, m * n / 2, m * n - 1], "{got:?}");
}

#[test]
fn a_repeated_gemm_is_recomputed_once_an_input_changes() {
    context(QUIET);
    let h = handle();
    let (m, n, k) = (4, 3, 2);
    let (a, b) = (values(m * k, 10), values(k * n, 11));
    let (da, db, dc) = (upload(&a), upload(&b), alloc(m * n * 4));
    let zero = vec![0.0; m * n];
    for _ in 0..2 {
        blas_ok(gemm_ex(
            h,
            (m, n, k),
            da,
            db,
            dc,
            (R_32F, R_32F),
            COMPUTE_32F,
        ));
    }
    ok(cuCtxSynchronize());
    let first = naive((false, false), (m, n, k), 1.0, &a, m, &b, k, 0.0, &zero, m);
    close(&download(dc, m * n), &first);
    // New A: the same call now gives the new product.
    let a2 = values(m * k, 12);
    // SAFETY: the allocation holds m*k floats.
    ok(unsafe { cuMemcpyHtoD_v2(da, a2.as_ptr().cast(), m * k * 4) });
    blas_ok(gemm_ex(
        h,
        (m, n, k),
        da,
        db,
        dc,
        (R_32F, R_32F),
        COMPUTE_32F,
    ));
    ok(cuCtxSynchronize());
    let second = naive((false, false), (m, n, k), 1.0, &a2, m, &b, k, 0.0, &zero, m);
    close(&download(dc, m * n), &second);
    // Its output overwritten: recomputed too.
    ok(cuMemsetD8_v2(dc, 0, m * n * 4));
    blas_ok(gemm_ex(
        h,
        (m, n, k),
        da,
        db,
        dc,
        (R_32F, R_32F),
        COMPUTE_32F,
    ));
    ok(cuCtxSynchronize());
    close(&download(dc, m * n), &second);
}

#[test]
fn a_handle_whose_workspace_does_not_fit_is_alloc_failed() {
    context(&format!("{QUIET}\n[faults]\nout_of_memory_above_mib = 2\n"));
    let mut h = null_mut();
    // SAFETY: a valid out-pointer.
    let code = unsafe { cublasCreate_v2(&mut h) };
    assert_eq!(status(code), "CUBLAS_STATUS_ALLOC_FAILED");
}

/// A cuBLASLt object from a create call.
fn lt<F: FnOnce(*mut *mut c_void) -> c_int>(create: F) -> *mut c_void {
    let mut object = null_mut();
    blas_ok(create(&mut object));
    object
}

#[test]
fn lt_matmul_computes_what_its_layouts_and_transposes_describe() {
    context(QUIET);
    let (m, n, k) = (5, 4, 6);
    // Aᵀ stored k x m with a padded leading dimension, B stored n x k (transposed).
    let (lda, ldb, ldc) = (k + 1, n + 2, m);
    let (a, b) = (values(lda * m, 13), values(ldb * k, 14));
    let (da, db, dc) = (upload(&a), upload(&b), alloc(m * n * 4));
    // SAFETY: valid out-pointers.
    let handle = lt(|p| unsafe { cublasLtCreate(p) });
    // SAFETY: as above.
    let desc = lt(|p| unsafe { cublasLtMatmulDescCreate(p, COMPUTE_32F, R_32F) });
    for attribute in [3, 4] {
        // SAFETY: a 4-byte attribute passed with its size.
        blas_ok(unsafe {
            cublasLtMatmulDescSetAttribute(desc, attribute, (&T as *const c_int).cast(), 4)
        });
    }
    let layout =
        |rows: usize, cols: usize, ld: usize| {
            // SAFETY: a valid out-pointer.
            lt(|p| unsafe {
                cublasLtMatrixLayoutCreate(p, R_32F, rows as u64, cols as u64, ld as i64)
            })
        };
    let (la, lb, lc) = (layout(k, m, lda), layout(n, k, ldb), layout(m, n, ldc));
    // SAFETY: a valid out-pointer.
    let pref = lt(|p| unsafe { cublasLtMatmulPreferenceCreate(p) });
    let mut result = std::mem::MaybeUninit::<HeuristicResult>::uninit();
    let mut count = 0;
    // SAFETY: live objects and room for one result.
    blas_ok(unsafe {
        cublasLtMatmulAlgoGetHeuristic(
            handle,
            desc,
            la,
            lb,
            lc,
            lc,
            pref,
            1,
            result.as_mut_ptr(),
            &mut count,
        )
    });
    assert_eq!(count, 1);
    // SAFETY: written by the heuristic, which succeeded.
    let result = unsafe { result.assume_init() };
    let (alpha, beta) = (2.0f32, 0.0f32);
    // SAFETY: the heuristic's algorithm over buffers of the layouts' sizes.
    blas_ok(unsafe {
        cublasLtMatmul(
            handle,
            desc,
            (&alpha as *const f32).cast(),
            da as *const c_void,
            la,
            db as *const c_void,
            lb,
            (&beta as *const f32).cast(),
            dc as *const c_void,
            lc,
            dc as *mut c_void,
            lc,
            &result.algo,
            null_mut(),
            0,
            null_mut(),
        )
    });
    ok(cuCtxSynchronize());
    let want = naive(
        (true, true),
        (m, n, k),
        2.0,
        &a,
        lda,
        &b,
        ldb,
        0.0,
        &vec![0.0; m * n],
        m,
    );
    close(&download(dc, m * n), &want);
    // B's layout as if it were not transposed disagrees with the descriptor.
    let wrong = layout(k, n, k);
    // SAFETY: as above.
    let code = unsafe {
        cublasLtMatmulAlgoGetHeuristic(
            handle,
            desc,
            la,
            wrong,
            lc,
            lc,
            pref,
            1,
            &mut result.clone(),
            &mut count,
        )
    };
    assert_eq!(status(code), "CUBLAS_STATUS_INVALID_VALUE");
    for l in [la, lb, lc, wrong] {
        blas_ok(cublasLtMatrixLayoutDestroy(l));
    }
    blas_ok(cublasLtMatmulPreferenceDestroy(pref));
    blas_ok(cublasLtMatmulDescDestroy(desc));
    blas_ok(cublasLtDestroy(handle));
}

#[test]
fn the_versions_are_cublas_13_1_0_and_cuda_13_0() {
    host(QUIET);
    let mut v = 0;
    // SAFETY: valid out-pointers.
    blas_ok(unsafe { cublasGetProperty(0, &mut v) });
    assert_eq!(v, 13);
    // SAFETY: as above.
    blas_ok(unsafe { cublasGetProperty(1, &mut v) });
    assert_eq!(v, 1);
    // SAFETY: as above.
    blas_ok(unsafe { cublasGetVersion_v2(null_mut(), &mut v) });
    assert_eq!(v, 130100);
    assert_eq!(cublasLtGetVersion(), 130100);
    assert_eq!(cublasGetCudartVersion(), 13000);
    // SAFETY: as above.
    assert_eq!(unsafe { cudaRuntimeGetVersion(&mut v) }, 0);
    assert_eq!(v, 13000);
}

/// A runtime error's name.
fn runtime_name(code: c_int) -> String {
    // SAFETY: the runtime's static, NUL-terminated name.
    unsafe { CStr::from_ptr(cudaGetErrorName(code)) }
        .to_string_lossy()
        .into_owned()
}

#[test]
fn the_runtime_refuses_a_driver_older_than_cuda_13_0() {
    host("[[device]]\ncuda_version = \"12.0\"\n");
    let (mut count, mut version) = (-1, 0);
    // SAFETY: valid out-pointers.
    let code = unsafe { cudaGetDeviceCount(&mut count) };
    assert_eq!(
        (code, runtime_name(code).as_str()),
        (35, "cudaErrorInsufficientDriver")
    );
    // SAFETY: as above.
    assert_eq!(unsafe { cudaDriverGetVersion(&mut version) }, 0);
    assert_eq!(version, 12000);
    assert_eq!(cudaGetLastError(), 35);
    assert_eq!(cudaGetLastError(), 0);
    // SAFETY: a NUL-terminated static text.
    let text = unsafe { CStr::from_ptr(cudaGetErrorString(35)) };
    assert!(text.to_string_lossy().contains("insufficient"));
}

#[test]
fn the_runtime_sets_the_device_and_copies_through_the_driver() {
    host("[[device]]\nmemory_gib = 1\n\n[[device]]\nmemory_gib = 1\n");
    let mut count = 0;
    // SAFETY: a valid out-pointer.
    assert_eq!(unsafe { cudaGetDeviceCount(&mut count) }, 0);
    assert_eq!(count, 2);
    assert_eq!(runtime_name(cudaSetDevice(2)), "cudaErrorInvalidDevice");
    assert_eq!(cudaSetDevice(1), 0);
    let mut device = -1;
    // SAFETY: a valid out-pointer.
    assert_eq!(unsafe { cudaGetDevice(&mut device) }, 0);
    assert_eq!(device, 1);
    let sent: Vec<u8> = (0..4096u32).map(|i| (i * 7) as u8).collect();
    let mut ptr = null_mut();
    // SAFETY: valid pointers and sizes; kinds 1 (to device) and 2 (to host).
    unsafe {
        assert_eq!(cudaMalloc(&mut ptr, sent.len()), 0);
        assert_eq!(cudaMemcpy(ptr, sent.as_ptr().cast(), sent.len(), 1), 0);
        let mut back = vec![0u8; sent.len()];
        assert_eq!(cudaMemcpy(back.as_mut_ptr().cast(), ptr, back.len(), 2), 0);
        assert_eq!(back, sent);
        assert_eq!(cudaMemset(ptr, 0xab, 16), 0);
        assert_eq!(cudaMemcpy(back.as_mut_ptr().cast(), ptr, 16, 2), 0);
        assert_eq!(&back[..16], &[0xab; 16]);
        assert_eq!(
            runtime_name(cudaMemcpy(back.as_mut_ptr().cast(), ptr, 16, 7)),
            "cudaErrorInvalidMemcpyDirection"
        );
    }
    assert_eq!(cudaDeviceSynchronize(), 0);
    assert_eq!(cudaFree(ptr), 0);
    assert_eq!(runtime_name(cudaFree(ptr)), "cudaErrorInvalidValue");
}

#[test]
fn each_gemm_call_appends_its_arguments_to_the_trace() {
    let dir = std::env::temp_dir().join(format!("simgpu-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("trace.jsonl");
    // Other tests of this process may trace too: this one's calls are told apart by m.
    std::env::set_var(stackbench_simgpu::trace::TRACE_VAR, &path);
    context(QUIET);
    let h = handle();
    let (m, n, k) = (37, 3, 2);
    let (a, b, c) = (alloc(m * k * 4), alloc(k * n * 4), alloc(m * n * 4));
    blas_ok(gemm_ex(
        h,
        (m, n, k),
        a,
        b,
        c,
        (R_32F, R_32F),
        COMPUTE_32F_FAST_TF32,
    ));
    let code = gemm_ex(h, (m, n, k), a, b, c, (R_16F, R_16BF), COMPUTE_32F);
    assert_eq!(status(code), "CUBLAS_STATUS_NOT_SUPPORTED");
    // An FP8 matmul names its formats.
    // SAFETY: a valid out-pointer.
    let handle = lt(|p| unsafe { cublasLtCreate(p) });
    let desc = matmul_desc(COMPUTE_32F, R_32F, (T, N));
    let lc = layout(R_16BF, m, n, 40);
    let layouts = [
        layout(R_8F_E4M3, 16, m, 16),
        layout(R_8F_E4M3, 16, n, 16),
        lc,
        lc,
    ];
    let (fa, fb, fd) = (alloc(16 * m), alloc(16 * n), alloc(40 * n * 2));
    blas_ok(lt_matmul(
        handle,
        desc,
        layouts,
        (1.0, 0.0),
        [fa, fb, 0, fd],
    ));
    ok(cuCtxSynchronize());
    let text = std::fs::read_to_string(&path).unwrap();
    let ours: Vec<&str> = text.lines().filter(|l| l.contains("\"m\":37,")).collect();
    assert_eq!(ours.len(), 3, "{text}");
    assert_eq!(
        ours[0],
        "{\"library\":\"cublas\",\"call\":\"cublasGemmEx\",\"m\":37,\"n\":3,\"k\":2,\
         \"lda\":37,\"ldb\":2,\"ldc\":37,\"transa\":\"CUBLAS_OP_N\",\"transb\":\"CUBLAS_OP_N\",\
         \"atype\":\"CUDA_R_32F\",\"btype\":\"CUDA_R_32F\",\"ctype\":\"CUDA_R_32F\",\
         \"compute_type\":\"CUBLAS_COMPUTE_32F_FAST_TF32\",\"alpha\":1.0,\"beta\":0.0,\
         \"math_mode\":0,\"status\":\"CUBLAS_STATUS_SUCCESS\"}"
    );
    assert!(
        ours[1].ends_with("\"status\":\"CUBLAS_STATUS_NOT_SUPPORTED\"}"),
        "{}",
        ours[1]
    );
    assert_eq!(
        ours[2],
        "{\"library\":\"cublasLt\",\"call\":\"cublasLtMatmul\",\"m\":37,\"n\":3,\"k\":16,\
         \"lda\":16,\"ldb\":16,\"ldc\":40,\"ldd\":40,\"transa\":\"CUBLAS_OP_T\",\
         \"transb\":\"CUBLAS_OP_N\",\"atype\":\"CUDA_R_8F_E4M3\",\"btype\":\"CUDA_R_8F_E4M3\",\
         \"ctype\":\"CUDA_R_16BF\",\"dtype\":\"CUDA_R_16BF\",\"compute_type\":\"CUBLAS_COMPUTE_32F\",\
         \"status\":\"CUBLAS_STATUS_SUCCESS\"}"
    );
}

/// `CUDA_R_8F_E4M3`.
const R_8F_E4M3: c_int = 28;
/// cuBLASLt's matmul descriptor attributes: the transposes, then the FP8 scale pointers.
const TRANSA: c_int = 3;
const TRANSB: c_int = 4;
const A_SCALE: c_int = 17;
const B_SCALE: c_int = 18;
const C_SCALE: c_int = 19;
const D_SCALE: c_int = 20;
const AMAX_D: c_int = 21;

/// Sets attribute `attribute` of matmul descriptor `desc` to `value`, passed with its size.
fn set<T>(desc: *mut c_void, attribute: c_int, value: T) -> c_int {
    // SAFETY: `value` lives through the call and is passed with its size.
    unsafe {
        cublasLtMatmulDescSetAttribute(
            desc,
            attribute,
            (&value as *const T).cast(),
            std::mem::size_of::<T>(),
        )
    }
}

/// A matmul descriptor of compute type `compute` and scale type `scale`, transposes `ops`.
fn matmul_desc(compute: c_int, scale: c_int, (transa, transb): (c_int, c_int)) -> *mut c_void {
    // SAFETY: a valid out-pointer.
    let desc = lt(|p| unsafe { cublasLtMatmulDescCreate(p, compute, scale) });
    blas_ok(set(desc, TRANSA, transa));
    blas_ok(set(desc, TRANSB, transb));
    desc
}

/// A column-major `rows x cols` layout of `element`s, leading dimension `ld`.
fn layout(element: c_int, rows: usize, cols: usize, ld: usize) -> *mut c_void {
    // SAFETY: a valid out-pointer.
    lt(|p| unsafe { cublasLtMatrixLayoutCreate(p, element, rows as u64, cols as u64, ld as i64) })
}

/// The layouts of a packed FP8 "TN" matmul: `A` stored `k x m` and `B` `k x n`, both E4M3,
/// and one `m x n` layout of `output` for `C` and `D`.
fn fp8_tn_layouts(output: c_int, (m, n, k): (usize, usize, usize)) -> [*mut c_void; 4] {
    let lc = layout(output, m, n, m);
    [
        layout(R_8F_E4M3, k, m, k),
        layout(R_8F_E4M3, k, n, k),
        lc,
        lc,
    ]
}

/// The heuristic's status name and result count for `desc` over layouts `[A, B, C, D]`, with
/// a preference of 32 MiB of workspace, as NVIDIA's FP8 sample asks.
fn heuristic(handle: *mut c_void, desc: *mut c_void, l: [*mut c_void; 4]) -> (String, c_int) {
    // SAFETY: a valid out-pointer.
    let pref = lt(|p| unsafe { cublasLtMatmulPreferenceCreate(p) });
    let limit = 32u64 << 20;
    // SAFETY: the attribute takes a uint64_t, passed with its size.
    blas_ok(unsafe {
        cublasLtMatmulPreferenceSetAttribute(pref, 1, (&limit as *const u64).cast(), 8)
    });
    let mut result = std::mem::MaybeUninit::<HeuristicResult>::uninit();
    let mut count = -1;
    // SAFETY: live objects and room for one result.
    let code = unsafe {
        cublasLtMatmulAlgoGetHeuristic(
            handle,
            desc,
            l[0],
            l[1],
            l[2],
            l[3],
            pref,
            1,
            result.as_mut_ptr(),
            &mut count,
        )
    };
    blas_ok(cublasLtMatmulPreferenceDestroy(pref));
    (status(code), count)
}

/// `cublasLtMatmul` of `desc` over layouts `[A, B, C, D]` and device matrices `[A, B, C, D]`,
/// alpha and beta f32 on the host, no algorithm named, on the null stream.
fn lt_matmul(
    handle: *mut c_void,
    desc: *mut c_void,
    l: [*mut c_void; 4],
    (alpha, beta): (f32, f32),
    m: [u64; 4],
) -> c_int {
    // SAFETY: scalars on the host; the matrices are device addresses the driver checks.
    unsafe {
        cublasLtMatmul(
            handle,
            desc,
            (&alpha as *const f32).cast(),
            m[0] as *const c_void,
            l[0],
            m[1] as *const c_void,
            l[1],
            (&beta as *const f32).cast(),
            m[2] as *const c_void,
            l[2],
            m[3] as *mut c_void,
            l[3],
            std::ptr::null(),
            null_mut(),
            0,
            null_mut(),
        )
    }
}

/// `len` bytes read back from device memory.
fn download_bytes(ptr: u64, len: usize) -> Vec<u8> {
    let mut out = vec![0u8; len];
    // SAFETY: `out` holds `len` bytes.
    ok(unsafe { cuMemcpyDtoH_v2(out.as_mut_ptr().cast(), ptr, len) });
    out
}

/// An E4M3 byte's value from its bit fields, another way than the simulator's table: `(1 +
/// m/8) 2^(e-7)`, or `m/8 2^-6` for exponent field 0.
fn e4m3_value(byte: u8) -> f64 {
    let sign = if byte & 0x80 == 0 { 1.0 } else { -1.0 };
    let (e, m) = (i32::from(byte >> 3 & 0xf), f64::from(byte & 0x7));
    assert!(e != 15 || m != 7.0, "{byte:#x} is NaN");
    sign * if e == 0 {
        m / 8.0 * 2f64.powi(-6)
    } else {
        (1.0 + m / 8.0) * 2f64.powi(e - 7)
    }
}

/// The finite E4M3 byte nearest `x`, found by trying every one; of two as near, the even.
fn e4m3_nearest(x: f64) -> u8 {
    (0..=255u8)
        .filter(|b| b & 0x7f != 0x7f)
        .min_by(|p, q| {
            let distance = |b: &u8| (e4m3_value(*b) - x).abs();
            (distance(p).total_cmp(&distance(q))).then((p & 1).cmp(&(q & 1)))
        })
        .unwrap()
}

/// `len` finite E4M3 bytes, deterministic, of both signs, every mantissa and exponent fields
/// in `exponents`.
fn e4m3_bytes(len: usize, seed: u32, exponents: std::ops::RangeInclusive<u8>) -> Vec<u8> {
    let mut state = seed;
    let span = u32::from(exponents.end() - exponents.start()) + 1;
    (0..len)
        .map(|_| loop {
            state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            let e = exponents.start() + ((state >> 8) % span) as u8;
            let sign = (state >> 31) as u8;
            let byte = (sign << 7) | (e << 3) | ((state >> 16) as u8 & 0x7);
            if byte & 0x7f != 0x7f {
                break byte;
            }
        })
        .collect()
}

/// `values` in column-major storage of leading dimension `ld`, every element between columns
/// `pad`.
fn pitched<T: Copy>(values: &[T], rows: usize, ld: usize, pad: T) -> Vec<T> {
    values
        .chunks(rows)
        .flat_map(|column| {
            column
                .iter()
                .copied()
                .chain(std::iter::repeat_n(pad, ld - rows))
        })
        .collect()
}

/// The BF16 values of little-endian bytes.
fn bf16s(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(2)
        .map(|b| half::bf16::from_le_bytes([b[0], b[1]]).to_f32())
        .collect()
}

/// One f32 in device memory.
fn device_f32(x: f32) -> u64 {
    upload(&[x])
}

/// `op(A) op(B)` in f64 of the TN FP8 matmul: `A` stored `k x m`, `B` `k x n`, tight; and the
/// sum of the terms' magnitudes of each element.
fn tn_product(a: &[u8], b: &[u8], (m, n, k): (usize, usize, usize)) -> (Vec<f64>, Vec<f64>) {
    let (mut sums, mut magnitudes) = (vec![0.0; m * n], vec![0.0; m * n]);
    for j in 0..n {
        for i in 0..m {
            for p in 0..k {
                let term = e4m3_value(a[p + i * k]) * e4m3_value(b[p + j * k]);
                sums[i + j * m] += term;
                magnitudes[i + j * m] += term.abs();
            }
        }
    }
    (sums, magnitudes)
}

#[test]
fn an_fp8_matmul_applies_its_scales_to_e4m3_inputs_and_rounds_to_bf16() {
    context(QUIET);
    // The LtFp8Matmul sample's form: A stored k x m and transposed, B k x n, C = D in BF16.
    let (m, n, k) = (48, 32, 64);
    let (lda, ldb, ldc) = (80, 96, 56);
    let (a_scale, b_scale) = (1.0f32 / 64.0, 1.0f32 / 32.0);
    // Every finite E4M3 value may occur, subnormals and 448 included; NaN lies between columns.
    let (a, b) = (e4m3_bytes(k * m, 1, 0..=15), e4m3_bytes(k * n, 2, 0..=15));
    let da = upload_bytes(&pitched(&a, k, lda, 0x7f));
    let db = upload_bytes(&pitched(&b, k, ldb, 0x7f));
    let sentinel = half::bf16::from_f32(-7.0).to_le_bytes();
    let dd = upload_bytes(&vec![sentinel; ldc * n].concat());
    let (sa, sb) = (device_f32(a_scale), device_f32(b_scale));
    // SAFETY: a valid out-pointer.
    let handle = lt(|p| unsafe { cublasLtCreate(p) });
    let desc = matmul_desc(COMPUTE_32F, R_32F, (T, N));
    blas_ok(set(desc, A_SCALE, sa));
    blas_ok(set(desc, B_SCALE, sb));
    let lc = layout(R_16BF, m, n, ldc);
    let layouts = [
        layout(R_8F_E4M3, k, m, lda),
        layout(R_8F_E4M3, k, n, ldb),
        lc,
        lc,
    ];
    assert_eq!(
        heuristic(handle, desc, layouts),
        ("CUBLAS_STATUS_SUCCESS".into(), 1)
    );
    blas_ok(lt_matmul(
        handle,
        desc,
        layouts,
        (1.0, 0.0),
        [da, db, 0, dd],
    ));
    ok(cuCtxSynchronize());
    let got = bf16s(&download_bytes(dd, ldc * n * 2));
    let (sums, magnitudes) = tn_product(&a, &b, (m, n, k));
    let scale = f64::from(a_scale) * f64::from(b_scale);
    for j in 0..n {
        for i in 0..m {
            let want = scale * sums[i + j * m];
            // Half a BF16 ulp of rounding, and FP32 accumulation's error over k terms.
            let tolerance = want.abs() / 256.0 + k as f64 * scale * magnitudes[i + j * m] / 8e6;
            let g = f64::from(got[i + j * ldc]);
            assert!(
                (g - want).abs() <= tolerance,
                "D[{i}, {j}]: {g} against {want}"
            );
        }
        // The rows between D's columns keep what they held.
        assert!(
            got[j * ldc + m..(j + 1) * ldc].iter().all(|&x| x == -7.0),
            "column {j}"
        );
    }
    // The scales matter: unscaled, most elements would be 2048 times too large.
    let large = (0..m * n)
        .filter(|&e| (scale * sums[e]).abs() > 1.0)
        .count();
    assert!(large > m * n / 2, "{large}");
}

#[test]
fn a_null_fp8_scale_pointer_is_a_scale_of_one() {
    context(QUIET);
    let (m, n, k) = (16, 32, 16);
    // Subnormals included: every value is a multiple of 2^-9 below 1, so with k = 16 every sum
    // is exact in FP32, and D is the product itself.
    let (a, b) = (e4m3_bytes(k * m, 3, 0..=6), e4m3_bytes(k * n, 4, 0..=6));
    let (da, db, dd) = (upload_bytes(&a), upload_bytes(&b), alloc(m * n * 4));
    // SAFETY: a valid out-pointer.
    let handle = lt(|p| unsafe { cublasLtCreate(p) });
    let desc = matmul_desc(COMPUTE_32F, R_32F, (T, N));
    // A's scale set, then set back to NULL; B's never set.
    blas_ok(set(desc, A_SCALE, device_f32(8.0)));
    blas_ok(set(desc, A_SCALE, 0u64));
    let layouts = fp8_tn_layouts(R_32F, (m, n, k));
    blas_ok(lt_matmul(
        handle,
        desc,
        layouts,
        (1.0, 0.0),
        [da, db, 0, dd],
    ));
    ok(cuCtxSynchronize());
    let want: Vec<f32> = tn_product(&a, &b, (m, n, k))
        .0
        .iter()
        .map(|&x| x as f32)
        .collect();
    assert_eq!(download(dd, m * n), want);
}

#[test]
fn an_fp8_output_is_scaled_saturated_and_its_amax_written() {
    context(QUIET);
    let (m, n, k) = (32, 16, 32);
    let (a, b) = (e4m3_bytes(k * m, 5, 5..=10), e4m3_bytes(k * n, 6, 5..=10));
    let c: Vec<f32> = values(m * n, 15).iter().map(|x| 4.0 * x).collect();
    let c_bytes: Vec<u8> = c
        .iter()
        .flat_map(|x| half::bf16::from_f32(*x).to_le_bytes())
        .collect();
    let (da, db, dc) = (upload_bytes(&a), upload_bytes(&b), upload_bytes(&c_bytes));
    let dd = alloc(m * n);
    let amax = alloc(4);
    // SAFETY: a valid out-pointer.
    let handle = lt(|p| unsafe { cublasLtCreate(p) });
    let desc = matmul_desc(COMPUTE_32F, R_32F, (T, N));
    let (a_scale, b_scale, c_scale, d_scale) = (2.0, 0.25, 2.0, 4.0);
    blas_ok(set(desc, A_SCALE, device_f32(a_scale as f32)));
    blas_ok(set(desc, B_SCALE, device_f32(b_scale as f32)));
    blas_ok(set(desc, C_SCALE, device_f32(c_scale as f32)));
    blas_ok(set(desc, D_SCALE, device_f32(d_scale as f32)));
    blas_ok(set(desc, AMAX_D, amax));
    let layouts = [
        layout(R_8F_E4M3, k, m, k),
        layout(R_8F_E4M3, k, n, k),
        layout(R_16BF, m, n, m),
        layout(R_8F_E4M3, m, n, m),
    ];
    assert_eq!(
        heuristic(handle, desc, layouts),
        ("CUBLAS_STATUS_SUCCESS".into(), 1)
    );
    blas_ok(lt_matmul(
        handle,
        desc,
        layouts,
        (1.0, 1.0),
        [da, db, dc, dd],
    ));
    ok(cuCtxSynchronize());
    // Every value below is exact in FP32: only the E4M3 rounding of D differs from f64.
    let sums = tn_product(&a, &b, (m, n, k)).0;
    let before: Vec<f64> = (0..m * n)
        .map(|e| a_scale * b_scale * sums[e] + c_scale * f64::from(c[e]))
        .collect();
    let want: Vec<u8> = before.iter().map(|x| e4m3_nearest(d_scale * x)).collect();
    assert_eq!(download_bytes(dd, m * n), want);
    let saturated = want.iter().filter(|&&b| b & 0x7f == 0x7e).count();
    assert!(saturated > 0 && saturated < m * n / 2, "{saturated}");
    let largest = before.iter().fold(0.0f64, |x, y| x.max(y.abs()));
    assert_eq!(f64::from(download(amax, 1)[0]), largest);
}

#[test]
fn the_fp8_matmul_takes_only_what_cublaslt_takes_on_ada_and_hopper() {
    context(QUIET);
    let (m, n, k) = (32, 48, 64);
    let (da, db, dd) = (alloc(k * m), alloc(k * n), alloc(m * n * 2));
    // SAFETY: a valid out-pointer.
    let handle = lt(|p| unsafe { cublasLtCreate(p) });
    let tn = matmul_desc(COMPUTE_32F, R_32F, (T, N));
    let (la, lb) = (layout(R_8F_E4M3, k, m, k), layout(R_8F_E4M3, k, n, k));
    let lc = layout(R_16BF, m, n, m);
    let refused = |what: &str, desc, layouts| {
        assert_eq!(
            heuristic(handle, desc, layouts),
            ("CUBLAS_STATUS_NOT_SUPPORTED".into(), 0),
            "{what}"
        );
        let code = lt_matmul(handle, desc, layouts, (1.0, 0.0), [da, db, 0, dd]);
        assert_eq!(status(code), "CUBLAS_STATUS_NOT_SUPPORTED", "{what}");
    };
    assert_eq!(
        heuristic(handle, tn, [la, lb, lc, lc]).0,
        "CUBLAS_STATUS_SUCCESS"
    );
    // NN, with A stored m x k as NN has it; NT, TT.
    let nn = matmul_desc(COMPUTE_32F, R_32F, (N, N));
    refused("NN", nn, [layout(R_8F_E4M3, m, k, m), lb, lc, lc]);
    let nt = matmul_desc(COMPUTE_32F, R_32F, (N, T));
    refused(
        "NT",
        nt,
        [
            layout(R_8F_E4M3, m, k, m),
            layout(R_8F_E4M3, n, k, n),
            lc,
            lc,
        ],
    );
    let tt = matmul_desc(COMPUTE_32F, R_32F, (T, T));
    refused("TT", tt, [la, layout(R_8F_E4M3, n, k, n), lc, lc]);
    // Leading dimensions off 16 bytes: lda, ldb, ldc of BF16 (72 bytes).
    refused("lda", tn, [layout(R_8F_E4M3, k, m, k + 8), lb, lc, lc]);
    refused("ldb", tn, [la, layout(R_8F_E4M3, k, n, k + 1), lc, lc]);
    let odd_c = layout(R_16BF, m, n, m + 4);
    refused("ldc", tn, [la, lb, odd_c, odd_c]);
    // Other compute types, a non-f32 scale type.
    for (compute, scale) in [
        (COMPUTE_32F_FAST_TF32, R_32F),
        (COMPUTE_32F_PEDANTIC, R_32F),
        (COMPUTE_32F, R_16F),
    ] {
        let desc = matmul_desc(compute, scale, (T, N));
        refused(&format!("{compute} {scale}"), desc, [la, lb, lc, lc]);
    }
    // B in BF16; C in BF16 with D in FP32; an E4M3 C.
    refused("B in BF16", tn, [la, layout(R_16BF, k, n, k), lc, lc]);
    refused("D in FP32", tn, [la, lb, lc, layout(R_32F, m, n, m)]);
    let e4m3_c = layout(R_8F_E4M3, m, n, m);
    refused("C in E4M3", tn, [la, lb, e4m3_c, e4m3_c]);
    // Addresses off alignment (A off 16 bytes; a scale 4 bytes into its buffer, as a second
    // scale beside the first), or D in place: none has a kernel. The same matmul answers.
    let fp8_matmul = |desc, addresses| {
        status(lt_matmul(
            handle,
            desc,
            [la, lb, lc, lc],
            (1.0, 0.0),
            addresses,
        ))
    };
    assert_eq!(
        fp8_matmul(tn, [da + 8, db, 0, dd]),
        "CUBLAS_STATUS_NOT_SUPPORTED"
    );
    assert_eq!(
        fp8_matmul(tn, [da, db, dd, dd]),
        "CUBLAS_STATUS_NOT_SUPPORTED"
    );
    assert_eq!(fp8_matmul(tn, [da, db, 0, dd]), "CUBLAS_STATUS_SUCCESS");
    let scales = alloc(16);
    let scaled = matmul_desc(COMPUTE_32F, R_32F, (T, N));
    blas_ok(set(scaled, A_SCALE, scales + 4));
    assert_eq!(
        fp8_matmul(scaled, [da, db, 0, dd]),
        "CUBLAS_STATUS_NOT_SUPPORTED"
    );
    blas_ok(set(scaled, A_SCALE, scales));
    assert_eq!(fp8_matmul(scaled, [da, db, 0, dd]), "CUBLAS_STATUS_SUCCESS");
    // A scale pointer is 8 bytes; a scale on a matmul that takes none is invalid.
    assert_eq!(
        status(set(scaled, B_SCALE, 0u32)),
        "CUBLAS_STATUS_INVALID_VALUE"
    );
    let fp32 = matmul_desc(COMPUTE_32F, R_32F, (N, N));
    blas_ok(set(fp32, A_SCALE, scales));
    let (l32a, l32b, l32c) = (
        layout(R_32F, m, k, m),
        layout(R_32F, k, n, k),
        layout(R_32F, m, n, m),
    );
    assert_eq!(
        heuristic(handle, fp32, [l32a, l32b, l32c, l32c]).0,
        "CUBLAS_STATUS_INVALID_VALUE"
    );
    ok(cuCtxSynchronize());
}

#[test]
fn a_scale_outside_device_memory_faults_the_context_as_an_operand_would() {
    context(QUIET);
    let (m, n, k) = (16, 16, 16);
    let (da, db, dd) = (alloc(k * m), alloc(k * n), alloc(m * n * 2));
    // SAFETY: a valid out-pointer.
    let handle = lt(|p| unsafe { cublasLtCreate(p) });
    let desc = matmul_desc(COMPUTE_32F, R_32F, (T, N));
    let freed = alloc(4);
    ok(cuMemFree_v2(freed));
    blas_ok(set(desc, B_SCALE, freed));
    let layouts = fp8_tn_layouts(R_16BF, (m, n, k));
    blas_ok(lt_matmul(
        handle,
        desc,
        layouts,
        (1.0, 0.0),
        [da, db, 0, dd],
    ));
    assert_eq!(
        driver_support::name(cuCtxSynchronize()),
        "CUDA_ERROR_ILLEGAL_ADDRESS"
    );
}

#[test]
fn a_device_older_than_ada_has_no_fp8_matmul_and_keeps_its_fp32_one() {
    context(&format!("{QUIET}compute_capability = \"8.0\"\n"));
    let (m, n, k) = (16, 16, 16);
    let (da, db, dd) = (alloc(k * m), alloc(k * n), alloc(m * n * 4));
    // SAFETY: a valid out-pointer.
    let handle = lt(|p| unsafe { cublasLtCreate(p) });
    let fp8 = matmul_desc(COMPUTE_32F, R_32F, (T, N));
    let layouts = fp8_tn_layouts(R_16BF, (m, n, k));
    assert_eq!(
        heuristic(handle, fp8, layouts),
        ("CUBLAS_STATUS_NOT_SUPPORTED".into(), 0)
    );
    let code = lt_matmul(handle, fp8, layouts, (1.0, 0.0), [da, db, 0, dd]);
    assert_eq!(status(code), "CUBLAS_STATUS_NOT_SUPPORTED");
    // FP32 runs, and computes.
    let (a, b) = (values(m * k, 16), values(k * n, 17));
    let (fa, fb) = (upload(&a), upload(&b));
    let fp32 = matmul_desc(COMPUTE_32F, R_32F, (N, N));
    let l = layout(R_32F, m, n, m);
    assert_eq!(
        heuristic(handle, fp32, [l, l, l, l]),
        ("CUBLAS_STATUS_SUCCESS".into(), 1)
    );
    blas_ok(lt_matmul(
        handle,
        fp32,
        [l, l, l, l],
        (1.0, 0.0),
        [fa, fb, dd, dd],
    ));
    ok(cuCtxSynchronize());
    let zero = vec![0.0; m * n];
    let want = naive((false, false), (m, n, k), 1.0, &a, m, &b, k, 0.0, &zero, m);
    close(&download(dd, m * n), &want);
    // Ada, 8.9, is the first with FP8.
    context(&format!("{QUIET}compute_capability = \"8.9\"\n"));
    assert_eq!(heuristic(handle, fp8, layouts).0, "CUBLAS_STATUS_SUCCESS");
}

#[test]
fn an_fp8_matmul_takes_2mnk_at_the_fp8_peak() {
    context(
        "[[device]]\nmemory_gib = 1\nmemory_bandwidth_gbs = 1000\nbf16_tflops = 10\n\
         fp8_tflops = 50\nnoise = 0.0\nrun_sigma = 0.0\nboot_sigma = 0.0\nramp_ms = 0.0\n",
    );
    let (m, n, k) = (256, 192, 320);
    let (da, db, dd) = (alloc(k * m), alloc(k * n), alloc(m * n * 2));
    // SAFETY: a valid out-pointer.
    let handle = lt(|p| unsafe { cublasLtCreate(p) });
    let desc = matmul_desc(COMPUTE_32F, R_32F, (T, N));
    let layouts = fp8_tn_layouts(R_16BF, (m, n, k));
    let (start, stop) = (event(), event());
    ok(cuEventRecord(start, null_mut()));
    blas_ok(lt_matmul(
        handle,
        desc,
        layouts,
        (1.0, 0.0),
        [da, db, 0, dd],
    ));
    ok(cuEventRecord(stop, null_mut()));
    ok(cuEventSynchronize(stop));
    let got = f64::from(elapsed(start, stop)) * 1e-3;
    let flops = 2.0 * (m * n * k) as f64;
    let bytes = (m * k + k * n + 2 * m * n) as f64;
    let want = LAUNCH_LATENCY + (flops / 50e12).max(bytes / 1000e9);
    assert!(flops / 50e12 > bytes / 1000e9, "compute bound");
    assert!((got / want - 1.0).abs() < 1e-3, "{got} s against {want} s");
}

#[test]
fn a_repeated_fp8_matmul_is_recomputed_once_its_scale_changes() {
    context(QUIET);
    let (m, n, k) = (16, 16, 32);
    let (a, b) = (e4m3_bytes(k * m, 7, 2..=6), e4m3_bytes(k * n, 8, 2..=6));
    let (da, db, dd) = (upload_bytes(&a), upload_bytes(&b), alloc(m * n * 4));
    let scale = device_f32(1.0);
    // SAFETY: a valid out-pointer.
    let handle = lt(|p| unsafe { cublasLtCreate(p) });
    let desc = matmul_desc(COMPUTE_32F, R_32F, (T, N));
    blas_ok(set(desc, A_SCALE, scale));
    let layouts = fp8_tn_layouts(R_32F, (m, n, k));
    // Every value a multiple of 2^-8 below 1, k = 32: each sum is exact in FP32.
    let product: Vec<f32> = (tn_product(&a, &b, (m, n, k)).0)
        .iter()
        .map(|&x| x as f32)
        .collect();
    blas_ok(lt_matmul(
        handle,
        desc,
        layouts,
        (1.0, 0.0),
        [da, db, 0, dd],
    ));
    ok(cuCtxSynchronize());
    assert_eq!(download(dd, m * n), product);
    // The same call, A's scale now 0.5 in device memory: the product halves.
    // SAFETY: the allocation holds one f32.
    ok(unsafe { cuMemcpyHtoD_v2(scale, (&0.5f32 as *const f32).cast(), 4) });
    blas_ok(lt_matmul(
        handle,
        desc,
        layouts,
        (1.0, 0.0),
        [da, db, 0, dd],
    ));
    ok(cuCtxSynchronize());
    let halved: Vec<f32> = product.iter().map(|x| x / 2.0).collect();
    assert_eq!(download(dd, m * n), halved);
}
