//! `stackbench bench` as a user runs it, on the real NVIDIA fixture libraries with Debian's 535
//! driver library as the driver. Without a GPU, NVRTC still compiles both kernels for sm_90 in
//! every toolkit and every combination's libraries load: those CPU-side figures are measured;
//! every GPU benchmark is listed as skipped with `cuInit`'s own reason and no GPU figure is
//! written; the run exits 1 unless `--allow-skip`.
//!
//! Every run gets an empty environment (PATH, HOME in a temporary directory).

// Tests read the files they make and the checkout's own: std's readers are theirs (clippy.toml).
#![allow(clippy::disallowed_methods)]

mod common;

use common::*;
use serde_json::Value;
use stackbench::bench::model::BenchReport;
use std::path::Path;
use std::process::Output;
use std::sync::OnceLock;

const ALL: [&str; 5] = [
    "pip:venv-cu11",
    "pip:venv-cu12",
    "toolkit:cuda-12.9",
    "conda:cu13",
    NCCL_ONLY,
];

/// CUDA 13's NCCL beside CUDA 12's runtime: no NVRTC to compile with.
const NCCL_ONLY: &str = "pip:venv-nccl-cu13-cu12";

/// The combinations with NCCL, whose GPU benchmarks include its four collectives.
const WITH_NCCL: [&str; 3] = ["pip:venv-cu12", "conda:cu13", NCCL_ONLY];

/// `stackbench bench` over the fixtures against the 535 driver, with `args` after.
fn fixture_bench(args: &[&str]) -> Output {
    let home = tempfile::tempdir().expect("temporary HOME");
    let (root, driver) = (toolkits(), fixture(DRIVER_AMD64));
    isolated_stackbench(home.path())
        .args(["bench", "--no-system", "--root"])
        .arg(root)
        .arg("--driver-dir")
        .arg(driver)
        .args(args)
        .output()
        .expect("run stackbench bench")
}

/// The report on standard output, checked against the schema tag and read back.
fn report(output: &Output) -> Value {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "bench panicked: {stderr}");
    let value: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("bench's stdout is not JSON ({e}); stderr: {stderr}"));
    assert_eq!(value["schema"], "stackbench.bench/v1");
    if let Err(e) = serde_json::from_value::<BenchReport>(value.clone()) {
        panic!("bench's JSON does not read back as a BenchReport: {e}");
    }
    value
}

/// The whole quick suite over every fixture combination, run once for the tests that read it:
/// its exit status, its report, and the results directory it wrote into.
fn quick_run() -> &'static (i32, Value, tempfile::TempDir) {
    static RUN: OnceLock<(i32, Value, tempfile::TempDir)> = OnceLock::new();
    RUN.get_or_init(|| {
        // In this binary's scratch (a static is never dropped: a temporary directory would stay).
        let results = tempfile::tempdir_in(scratch()).expect("results directory");
        let output = fixture_bench(&[
            "--quick",
            "--allow-skip",
            "--format",
            "json",
            "--results",
            results.path().to_str().expect("UTF-8 temporary path"),
        ]);
        let code = output.status.code().expect("exit status");
        (code, report(&output), results)
    })
}

fn rows<'a>(report: &'a Value, benchmark: &str) -> Vec<&'a Value> {
    report["benchmarks"]
        .as_array()
        .expect("benchmarks")
        .iter()
        .filter(|b| b["benchmark"] == benchmark)
        .collect()
}

#[test]
fn every_toolkit_compiles_both_kernels_for_sm_90_and_its_libraries_load() {
    let (code, report, _) = quick_run();
    assert_eq!(*code, 0, "--allow-skip: skipped GPU work is not a failure");
    assert_eq!(report["target"], "sm_90");
    let names: Vec<&str> = report["combinations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    for name in ALL {
        assert!(names.contains(&name), "{name} in {names:?}");
    }
    let compile = rows(report, "nvrtc_compile");
    assert_eq!(
        compile.len(),
        2 * names.len(),
        "two kernels per combination"
    );
    for row in compile.iter().filter(|r| r["combination"] == NCCL_ONLY) {
        assert_eq!(row["status"], "skipped", "{row}");
        assert!(
            row["reason"].as_str().unwrap().contains("no NVRTC"),
            "{row}"
        );
    }
    let measured = compile.iter().filter(|r| r["combination"] != NCCL_ONLY);
    for row in measured.chain(rows(report, "load").iter()) {
        assert_eq!(row["status"], "measured", "{row}");
        assert_eq!(row["side"], "cpu");
        let samples = row["samples_ns"].as_array().unwrap();
        assert!(!samples.is_empty(), "{}", row["id"]);
        let summary = &row["summary"];
        let median = summary["median_ns"].as_f64().unwrap();
        assert!(median > 0.0 && median >= summary["min_ns"].as_f64().unwrap());
        assert!(["noise", "time_limit"].contains(&row["stopped_by"].as_str().unwrap()));
    }
    let ids: Vec<&str> = compile.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert!(
        ids.contains(&"nvrtc_compile/pip:venv-cu11/matmul_tiled/sm_90"),
        "{ids:?}"
    );
    assert!(
        ids.contains(&"nvrtc_compile/conda:cu13/vector_add/sm_90"),
        "{ids:?}"
    );
    assert_eq!(rows(report, "load").len(), names.len());
}

#[test]
fn without_a_gpu_every_gpu_benchmark_is_skipped_with_cuinit_s_reason_and_no_figure() {
    let (_, report, _) = quick_run();
    let gpu_rows: Vec<&Value> = report["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["side"] == "gpu")
        .collect();
    // Per combination: the copy, vector add at 64 Mi, five cuBLAS precisions (FP8 among them)
    // and the tiled kernel; with NCCL, its four collectives at the six --quick sizes too.
    assert_eq!(gpu_rows.len(), 8 * ALL.len() + 4 * 6 * WITH_NCCL.len());
    for row in gpu_rows {
        assert_eq!(row["status"], "skipped", "{row}");
        let reason = row["reason"].as_str().unwrap();
        assert!(reason.starts_with("no GPU: "), "{reason}");
        assert!(reason.contains("CUDA_ERROR_NO_DEVICE"), "{reason}");
        assert_eq!(row["samples_ns"].as_array().unwrap().len(), 0);
        for field in ["summary", "throughput", "pct_of_peak", "telemetry", "cupti"] {
            assert!(row[field].is_null(), "{} has a {field}", row["id"]);
        }
    }
    for combination in report["combinations"].as_array().unwrap() {
        assert!(combination["peaks"]["copy_gbps"].is_null());
        assert_eq!(combination["peaks"]["gemm_tflops"], serde_json::json!({}));
        assert!(combination["gpu_unavailable"]
            .as_str()
            .unwrap()
            .contains("CUDA_ERROR_NO_DEVICE"));
    }
}

#[test]
fn the_run_is_written_as_json_csv_and_markdown_named_by_host_gpu_and_date() {
    let (_, report, results) = quick_run();
    let files: Vec<String> = std::fs::read_dir(results.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let day = &report["started"].as_str().unwrap()[..10];
    let json = files
        .iter()
        .find(|f| f.ends_with(&format!("-nogpu-{day}.json")) && f.starts_with("bench-"))
        .unwrap_or_else(|| panic!("no bench-<host>-nogpu-<date>.json in {files:?}"));
    let written: Value =
        serde_json::from_slice(&std::fs::read(results.path().join(json)).unwrap()).unwrap();
    assert_eq!(&written, report, "the file is the report on stdout");
    let stem = json.trim_end_matches(".json");
    let mut csv = csv::Reader::from_path(results.path().join(format!("{stem}.csv"))).unwrap();
    let records: Vec<csv::StringRecord> = csv.records().collect::<Result<_, _>>().unwrap();
    let rows = records.len();
    let benchmarks = report["benchmarks"].as_array().unwrap().len();
    assert_eq!(rows, benchmarks, "a row per benchmark");
    let markdown = std::fs::read_to_string(results.path().join(format!("{stem}.md"))).unwrap();
    assert!(markdown.contains("nvrtc_compile"), "{markdown}");
    assert_eq!(files.len(), 3, "{files:?}");
}

/// `bench` of one combination into `results`.
fn one_combination(results: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "--quick",
        "--combination",
        "pip:venv-cu12",
        "--format",
        "json",
        "--results",
        results.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    fixture_bench(&args)
}

/// For a device newer than every architecture NVRTC knows (`--target sm_150`, the simulated
/// GPU's), the compile benchmarks build what `nvrtc.compile_*` builds: PTX for NVRTC's newest
/// architecture, and each row says so.
#[test]
fn compile_benchmarks_build_ptx_for_a_target_newer_than_nvrtc() {
    let results = tempfile::tempdir().unwrap();
    let output = one_combination(results.path(), &["--target", "sm_150", "--allow-skip"]);
    let report = report(&output);
    assert_eq!(report["target"], "sm_150");
    let compile = rows(&report, "nvrtc_compile");
    assert_eq!(compile.len(), 2);
    for row in compile {
        assert_eq!(row["status"], "measured", "{row}");
        assert_eq!(
            row["reason"],
            "compiled to PTX for compute_121: the target (sm_150) is newer than this NVRTC; \
             the driver JIT-compiles it",
            "{row}"
        );
    }
}

#[test]
fn skipped_gpu_work_exits_1_and_a_second_run_does_not_overwrite_the_first() {
    let results = tempfile::tempdir().unwrap();
    let first = one_combination(results.path(), &[]);
    assert_eq!(
        first.status.code(),
        Some(1),
        "a nightly that lost its GPU goes red"
    );
    let report = report(&first);
    assert_eq!(report["combinations"].as_array().unwrap().len(), 1);
    let second = one_combination(results.path(), &[]);
    assert_eq!(second.status.code(), Some(1));
    let mut files: Vec<String> = std::fs::read_dir(results.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(files.len(), 6, "two runs, three files each: {files:?}");
    assert!(files.iter().any(|f| f.ends_with("-2.json")), "{files:?}");
}

#[test]
fn bad_arguments_exit_2_with_what_to_do() {
    let results = tempfile::tempdir().unwrap();
    let not_a_dir = results.path().join("file");
    std::fs::write(&not_a_dir, "").unwrap();
    for (args, says) in [
        (
            vec!["--format", "junit"],
            "JUnit reports check's results only",
        ),
        (vec!["--combination", "nope"], "no such combination"),
        (vec!["--target", "sm_x"], "give a GPU architecture"),
        (vec!["--timeout", "0"], "--timeout 0"),
        (
            vec![
                "--quick",
                "--combination",
                "pip:venv-cu12",
                "--results",
                not_a_dir.to_str().unwrap(),
            ],
            "cannot create the results directory",
        ),
    ] {
        let output = fixture_bench(&args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}

/// A user combination of CUDA 12.9's real runtime and NVRTC with a cuBLAS built here that
/// crashes or hangs when asked its version: the combination's compile benchmarks are still
/// measured (a fresh worker set up again without the bad library), its load time fails naming
/// what happened, and the run goes on and exits 1.
#[rstest::rstest]
#[case::crash("raise(SIGSEGV); return 0;", &[], "killed by SIGSEGV; its last words: about to fail")]
#[case::hang("for (;;) pause(); return 0;", &["--timeout", "2"], "no answer within 2 s")]
fn a_library_that_crashes_or_hangs_costs_only_what_needs_it(
    #[case] body: &str,
    #[case] extra: &[&str],
    #[case] reason: &str,
) {
    let dir = tempfile::tempdir().unwrap();
    let faulty = faulty_cublas(dir.path(), body);
    let lib = |name: &str| fixture(&format!("{VENV_CU12}/nvidia/{name}/lib"));
    let dirs = [lib("cuda_runtime"), lib("cuda_nvrtc"), faulty];
    let config = combination_config(dir.path(), "faulty", &dirs);
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let home = tempfile::tempdir().unwrap();
    let output = isolated_stackbench(home.path())
        .args([
            "bench",
            "--quick",
            "--no-system",
            "--format",
            "json",
            "--root",
        ])
        .arg(&empty)
        .arg("--config")
        .arg(&config)
        .arg("--driver-dir")
        .arg(fixture(DRIVER_AMD64))
        .arg("--results")
        .arg(dir.path())
        .args(extra)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let report = report(&output);
    let row = |id: &str| {
        report["benchmarks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["id"] == id)
            .unwrap_or_else(|| panic!("no {id}"))
            .clone()
    };
    for kernel in ["vector_add", "matmul_tiled"] {
        let compile = row(&format!("nvrtc_compile/faulty/{kernel}/sm_90"));
        assert_eq!(compile["status"], "measured", "{compile}");
    }
    let load = row("load/faulty");
    assert_eq!(load["status"], "failed", "{load}");
    let why = load["reason"].as_str().unwrap();
    assert!(why.starts_with("cublas.load did not pass (fail)"), "{why}");
    assert!(why.contains(reason), "{why}");
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn every_gpu_benchmark_is_measured_verified_and_set_against_the_card_s_ceilings() {
    let results = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let output = isolated_stackbench(home.path())
        .args(["bench", "--quick", "--format", "json", "--results"])
        .arg(results.path())
        .output()
        .unwrap();
    let report = report(&output);
    let mut problems = Vec::new();
    for row in report["benchmarks"].as_array().unwrap() {
        let id = row["id"].as_str().unwrap();
        // NCCL's collectives on a one-GPU host: skipped as meaningless, and exit 0 regardless.
        if row["status"] == "skipped" && row["inapplicable"] == true {
            continue;
        }
        if row["status"] != "measured" {
            problems.push(format!("{id}: {} {}", row["status"], row["reason"]));
            continue;
        }
        if row["side"] != "gpu" {
            continue;
        }
        assert!(row["throughput"]["value"].as_f64().unwrap() > 0.0, "{id}");
        assert!(row["telemetry"]["readings"].as_u64().unwrap() > 0, "{id}");
        if row["benchmark"] != "copy" {
            assert_eq!(row["verified"]["passed"], true, "{id}");
            // The card's share for every row; the share of the run's ceiling for all but
            // the cuBLAS GEMMs that are that ceiling.
            assert!(row["pct_of_spec"].as_f64().unwrap() > 0.0, "{id}");
            if row["parameters"]["implementation"] != "cublas" {
                assert!(row["pct_of_peak"].as_f64().unwrap() > 0.0, "{id}");
            }
        }
        if row["parameters"]["implementation"] == "cublas" || row["benchmark"] == "vector_add" {
            let ratio = row["cupti"]["event_over_cupti"].as_f64();
            assert!(
                ratio.is_some_and(|r| r > 0.5 && r < 2.0),
                "{id}: {}",
                row["cupti"]
            );
        }
    }
    for combination in report["combinations"].as_array().unwrap() {
        assert!(combination["peaks"]["copy_gbps"].as_f64().unwrap() > 100.0);
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert_eq!(output.status.code(), Some(0));
}
