//! `check` and `bench` through the simulated CUDA runtime, cuBLAS and cuBLASLt (tests/simgpu,
//! laid out by `ci/sim`): the checks pass against the simulator's own GEMM reference, the
//! simulator's trace shows the arguments stackbench gave (shapes, leading dimensions,
//! transposes, compute types), the bench's GEMM rows run at the profile's peaks, verified, and
//! `wrong_results = "gemm"` fails every GEMM check and leaves the GEMM rows failed and untimed.
//! FP8 runs through cuBLASLt in the "TN" form with its scales, and a card without FP8
//! (compute capability 8.0) skips it in `check` and `bench` with the reason.

mod common;

use common::{bench_row, check_status, run_simulated, SimulatedRun};
use serde_json::Value;
use std::sync::{Mutex, PoisonError};

/// One bench of this file at a time: each holds device memory, the simulator's reference and
/// the bench's own copies of its GEMMs.
static ONE_BENCH: Mutex<()> = Mutex::new(());

/// The checks of the runtime and the two BLAS libraries.
const BLAS_CHECKS: [&str; 11] = [
    "cudart.load",
    "cudart.memcpy",
    "cublas.load",
    "cublas.handle",
    "cublas.sgemm",
    "cublas.gemm_fp16",
    "cublas.gemm_bf16",
    "cublasLt.load",
    "cublasLt.handle",
    "cublasLt.matmul",
    "cublasLt.matmul_fp8",
];

/// The profile's peaks (the default device), TFLOP/s, and the bytes per element of a GEMM's
/// three matrices together (FP8: E4M3 in, BF16 out), by the bench's precision ids.
const PEAKS: [(&str, f64, f64); 5] = [
    ("f32", 67.0, 12.0),
    ("tf32", 495.0, 12.0),
    ("f16", 989.0, 6.0),
    ("bf16", 989.0, 6.0),
    ("fp8", 1979.0, 4.0),
];

/// The profile's memory bandwidth (the default device), GB/s.
const BANDWIDTH_GBS: f64 = 3350.0;

/// `stackbench <command> --format json` on the simulator with the profile `toml`, one bench
/// at a time.
fn run(command: &[&str], toml: &str) -> SimulatedRun {
    let _one =
        (command[0] == "bench").then(|| ONE_BENCH.lock().unwrap_or_else(PoisonError::into_inner));
    run_simulated(command, toml)
}

/// `check` with the profile `toml`.
fn check(toml: &str) -> SimulatedRun {
    run(&["check", "--timeout", "120"], toml)
}

/// The trace's calls named `call`.
fn calls<'a>(trace: &'a [Value], call: &str) -> Vec<&'a Value> {
    trace.iter().filter(|t| t["call"] == call).collect()
}

/// The fields of a traced GEMM that say how it was called.
fn arguments(t: &Value) -> Vec<String> {
    [
        "m",
        "n",
        "k",
        "lda",
        "ldb",
        "ldc",
        "transa",
        "transb",
        "atype",
        "ctype",
        "compute_type",
        "status",
    ]
    .iter()
    .map(|f| format!("{f}={}", t[*f]))
    .collect()
}

#[test]
fn check_passes_the_runtime_cublas_and_cublaslt_with_every_gemm_argument_distinct() {
    let run = check("");
    for id in BLAS_CHECKS {
        assert_eq!(
            check_status(&run.report, id).0,
            "pass",
            "{id}: {:?}",
            check_status(&run.report, id)
        );
    }
    // Row-major C = A B as column-major Cᵀ = Bᵀ Aᵀ: m = N (80), n = M (96), k = K (112), and
    // each leading dimension the pitch of its own matrix: Bᵀ 88, Aᵀ 116, Cᵀ 104.
    let expected = |call: &str, atype: &str, ctype: &str, compute: &str| -> Vec<String> {
        let mut fields: Vec<String> = [
            "m=80",
            "n=96",
            "k=112",
            "lda=88",
            "ldb=116",
            "ldc=104",
            "transa=\"CUBLAS_OP_N\"",
            "transb=\"CUBLAS_OP_N\"",
        ]
        .map(String::from)
        .to_vec();
        fields.extend([
            format!("atype=\"{atype}\""),
            format!("ctype=\"{ctype}\""),
            format!("compute_type=\"{compute}\""),
            "status=\"CUBLAS_STATUS_SUCCESS\"".to_owned(),
            call.to_owned(),
        ]);
        fields
    };
    let traced = |t: &Value| {
        let mut fields = arguments(t);
        fields.push(t["call"].as_str().unwrap_or_default().to_owned());
        fields
    };
    let sgemm = calls(&run.trace, "cublasSgemm_v2");
    assert_eq!(sgemm.len(), 1, "{:?}", run.trace);
    assert_eq!(
        traced(sgemm[0]),
        expected(
            "cublasSgemm_v2",
            "CUDA_R_32F",
            "CUDA_R_32F",
            "CUBLAS_COMPUTE_32F"
        )
    );
    let gemm_ex: Vec<Vec<String>> = calls(&run.trace, "cublasGemmEx")
        .into_iter()
        .map(traced)
        .collect();
    assert_eq!(
        gemm_ex,
        [
            expected(
                "cublasGemmEx",
                "CUDA_R_16F",
                "CUDA_R_16F",
                "CUBLAS_COMPUTE_32F"
            ),
            expected(
                "cublasGemmEx",
                "CUDA_R_16BF",
                "CUDA_R_16BF",
                "CUBLAS_COMPUTE_32F"
            ),
        ]
    );
    let lt = calls(&run.trace, "cublasLtMatmul");
    assert_eq!(lt.len(), 2, "FP32 and FP8: {:?}", run.trace);
    assert_eq!(
        traced(lt[0]),
        expected(
            "cublasLtMatmul",
            "CUDA_R_32F",
            "CUDA_R_32F",
            "CUBLAS_COMPUTE_32F"
        )
    );
    assert_eq!(lt[0]["ldd"], 104);
    // FP8 in the "TN" form: the first operand is B stored transposed (80 rows of 112 at a
    // pitch of 144), transposed by the call; the second A as it is (pitch 128); BF16 out.
    let fp8: Vec<String> = [
        "m=80",
        "n=96",
        "k=112",
        "lda=144",
        "ldb=128",
        "ldc=104",
        "transa=\"CUBLAS_OP_T\"",
        "transb=\"CUBLAS_OP_N\"",
        "atype=\"CUDA_R_8F_E4M3\"",
        "ctype=\"CUDA_R_16BF\"",
        "compute_type=\"CUBLAS_COMPUTE_32F\"",
        "status=\"CUBLAS_STATUS_SUCCESS\"",
        "cublasLtMatmul",
    ]
    .map(String::from)
    .to_vec();
    assert_eq!(traced(lt[1]), fp8);
}

/// A card of compute capability 8.0: no FP8 tensor cores.
const AMPERE: &str = "[[device]]\ncompute_capability = \"8.0\"\n";

#[test]
fn a_card_without_fp8_skips_the_fp8_gemm_with_the_reason_and_runs_the_rest() {
    let run = check(AMPERE);
    let (s, why) = check_status(&run.report, "cublasLt.matmul_fp8");
    assert_eq!(s, "skip", "{why}");
    assert_eq!(
        why,
        "FP8 GEMM needs compute capability 8.9 or newer (FP8 tensor cores); this GPU is 8.0"
    );
    assert_eq!(check_status(&run.report, "cublasLt.matmul").0, "pass");
    // Asked before the card was: no FP8 call reached cuBLASLt.
    let fp8_calls = calls(&run.trace, "cublasLtMatmul")
        .into_iter()
        .filter(|t| t["atype"] == "CUDA_R_8F_E4M3")
        .count();
    assert_eq!(fp8_calls, 0, "{:?}", run.trace);
    let bench = quick_bench(&["cublas/fp8"], AMPERE);
    let r = row(&bench.report, "cublas", "fp8");
    assert_eq!(r["status"], "skipped", "{r}");
    let why = r["reason"].as_str().unwrap_or_default();
    assert!(
        why.contains("cublasLt.matmul_fp8") && why.contains("compute capability 8.9"),
        "{why}"
    );
}

#[test]
fn a_cublaslt_without_fp8_kernels_for_the_card_skips_the_fp8_gemm_and_says_why() {
    // A card whose compute capability has FP8 tensor cores, with a cuBLASLt whose heuristic
    // has no FP8 kernel for it (Ada with CUDA 11.8-12.0's cuBLASLt).
    let refuses = "[faults]\nno_fp8_kernels = true\n";
    let run = check(refuses);
    let (s, why) = check_status(&run.report, "cublasLt.matmul_fp8");
    assert_eq!(s, "skip", "{why}");
    assert!(
        why.contains("no FP8 kernel for this GPU") && why.contains("CUBLAS_STATUS_NOT_SUPPORTED"),
        "{why}"
    );
    assert_eq!(check_status(&run.report, "cublasLt.matmul").0, "pass");
    assert_eq!(run.code, Some(0), "a skip is no failure");
    let bench = quick_bench(&["cublas/fp8"], refuses);
    let r = row(&bench.report, "cublas", "fp8");
    assert_eq!(r["status"], "skipped", "{r}");
    let why = r["reason"].as_str().unwrap_or_default();
    assert!(
        why.contains("cublasLt.matmul_fp8") && why.contains("no FP8 kernel"),
        "{why}"
    );
}

/// `bench --quick --repeat 1 --allow-skip` with the profile `toml`, narrowed to the
/// benchmarks whose ids hold one of `filters` (all of them when none).
fn quick_bench(filters: &[&str], toml: &str) -> SimulatedRun {
    let mut args = vec!["bench", "--quick", "--repeat", "1", "--allow-skip"];
    for filter in filters {
        args.extend(["--filter", filter]);
    }
    run(&args, toml)
}

#[test]
fn wrong_gemm_results_fail_every_gemm_check_with_the_error_against_the_tolerance() {
    let run = check("[faults]\nwrong_results = \"gemm\"\n");
    for id in [
        "cublas.sgemm",
        "cublas.gemm_fp16",
        "cublas.gemm_bf16",
        "cublasLt.matmul",
        "cublasLt.matmul_fp8",
    ] {
        let (s, why) = check_status(&run.report, id);
        assert_eq!(s, "fail", "{id}: {why}");
        assert!(
            why.contains("differs from the CPU: relative error") && why.contains("tolerance"),
            "{id}: {why}"
        );
    }
    // The runtime's copy is no GEMM: untouched.
    assert_eq!(check_status(&run.report, "cudart.memcpy").0, "pass");
    assert_eq!(run.code, Some(1));
}

#[test]
fn the_runtime_refuses_a_driver_older_than_cuda_13_0() {
    let run = check("[[device]]\ncuda_version = \"12.0\"\n");
    let (s, why) = check_status(&run.report, "cudart.memcpy");
    assert_eq!(s, "fail", "{why}");
    assert!(why.contains("cudaErrorInsufficientDriver (35)"), "{why}");
}

/// The bench's row of `benchmark` with `implementation` and `precision`.
fn row<'a>(report: &'a Value, implementation: &str, precision: &str) -> &'a Value {
    report["benchmarks"]
        .as_array()
        .expect("benchmarks")
        .iter()
        .find(|r| {
            r["benchmark"] == "matmul"
                && r["parameters"]["implementation"] == implementation
                && r["parameters"]["precision"] == precision
        })
        .unwrap_or_else(|| panic!("no matmul {implementation} {precision} row"))
}

#[test]
fn bench_times_every_cublas_precision_at_the_profile_s_peak_with_the_compute_type_it_names() {
    let run = quick_bench(&[], "");
    assert_eq!(run.report["simulated"], true);
    // Each precision reached cuBLAS as the call it names: SGEMM for FP32, FP32 data under the
    // fast TF32 compute type for TF32, 16-bit data with FP32 accumulation for FP16 and BF16.
    let mut seen: Vec<(String, String, String)> = run
        .trace
        .iter()
        .filter(|t| t["library"] == "cublas" && t["status"] == "CUBLAS_STATUS_SUCCESS")
        .map(|t| {
            (
                t["call"].as_str().unwrap_or_default().to_owned(),
                t["atype"].as_str().unwrap_or_default().to_owned(),
                t["compute_type"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    seen.sort();
    seen.dedup();
    let want = |call: &str, atype: &str, compute: &str| {
        (call.to_owned(), atype.to_owned(), compute.to_owned())
    };
    assert_eq!(
        seen,
        [
            want("cublasGemmEx", "CUDA_R_16BF", "CUBLAS_COMPUTE_32F"),
            want("cublasGemmEx", "CUDA_R_16F", "CUBLAS_COMPUTE_32F"),
            want("cublasGemmEx", "CUDA_R_32F", "CUBLAS_COMPUTE_32F_FAST_TF32"),
            want("cublasSgemm_v2", "CUDA_R_32F", "CUBLAS_COMPUTE_32F"),
        ]
    );
    // FP8 went through cuBLASLt, E4M3 in, BF16 out.
    let fp8: Vec<&Value> = calls(&run.trace, "cublasLtMatmul")
        .into_iter()
        .filter(|t| t["status"] == "CUBLAS_STATUS_SUCCESS")
        .collect();
    assert!(!fp8.is_empty());
    assert!(
        fp8.iter()
            .all(|t| t["atype"] == "CUDA_R_8F_E4M3" && t["ctype"] == "CUDA_R_16BF"),
        "{fp8:?}"
    );
    for (precision, peak, bytes) in PEAKS {
        let r = row(&run.report, "cublas", precision);
        assert_eq!(r["status"], "measured", "{r}");
        assert_eq!(r["verified"]["passed"], true, "{r}");
        let size = r["parameters"]["size"].as_f64().expect("a size");
        // The model, a roofline: 2 n³ at the peak or the three matrices at the bandwidth,
        // whichever takes longer (FP8's 1024³ is memory-bound), plus the launch latency.
        let compute_s = 2.0 * size.powi(3) / (peak * 1e12);
        let memory_s = bytes * size.powi(2) / (BANDWIDTH_GBS * 1e9);
        let model_s = compute_s.max(memory_s) + 2e-6;
        let model = 2.0 * size.powi(3) / model_s / 1e12;
        let rate = r["throughput"]["value"].as_f64().expect("a rate");
        assert!(
            (rate / model - 1.0).abs() < 0.05,
            "{precision}: {rate} against {model}"
        );
        // One size each: every cuBLAS row is its precision's ceiling, and has no share of it.
        assert!(r["pct_of_peak"].is_null(), "{r}");
    }
    // On a simulated device --quick's matmuls are 1024³, within the interpreter's reach: the
    // NVRTC kernel is measured and verified too.
    let tiled = row(&run.report, "nvrtc", "f32");
    assert_eq!(tiled["parameters"]["size"], 1024, "{tiled}");
    assert_eq!(tiled["status"], "measured", "{tiled}");
    assert_eq!(tiled["verified"]["passed"], true, "{tiled}");
}

#[test]
fn bench_leaves_wrong_gemms_failed_and_untimed() {
    // The cuBLAS GEMMs the fault names, and the vector add it leaves alone.
    let run = quick_bench(
        &["cublas/", "vector_add/"],
        "[faults]\nwrong_results = \"gemm\"\n",
    );
    for (precision, _, _) in PEAKS {
        let r = row(&run.report, "cublas", precision);
        assert_eq!(r["status"], "failed", "{r}");
        assert_eq!(r["verified"]["passed"], false, "{r}");
        let why = r["reason"].as_str().unwrap_or_default();
        assert!(
            why.contains("relative error") && why.contains("not timed"),
            "{why}"
        );
        assert!(r["throughput"].is_null() && r["summary"].is_null(), "{r}");
    }
    // The vector add is no GEMM: timed as ever.
    let add = bench_row(&run.report, "vector_add");
    assert_eq!(add["status"], "measured", "{add}");
}
