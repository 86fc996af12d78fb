//! `--format openmetrics` as a node's health check runs it: `doctor` on a fixture tree, `check`
//! and `bench` on the simulated GPU (two GPUs of one model; `check` with vector_add's results
//! wrong on each), and `merge` of a fleet's check files and of the committed H100 bench runs.
//! Each text passes `promtool check metrics` (from `.ci-tools`: missing, the test fails) without
//! a lint problem, holds the series a fleet's alerts read with their values, and shares no series
//! with the node's other files (node_exporter's textfile collector refuses a series two files
//! give); `-o` writes it atomically.

// Tests read the files they make and the checkout's own: std's readers are theirs (clippy.toml).
#![allow(clippy::disallowed_methods)]

mod common;

use common::*;
use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// Two simulated GPUs of one model, whose vector adds come out wrong.
const TWO_GPUS_WRONG_VECTOR_ADD: &str =
    "[[device]]\n\n[[device]]\n\n[faults]\nwrong_results = \"vector_add\"\n";

/// Two simulated GPUs of one model.
const TWO_GPUS: &str = "[[device]]\n\n[[device]]\n";

/// The simulated GPU's model, as NVML names it.
const SIMULATED_MODEL: &str = "model_name=\"stackbench simulated GPU (H100-like)\"";

/// `promtool check metrics` on `text`: it exits 0 and says nothing (each lint problem is a line).
fn promtool(text: &str) {
    let mut child = Command::new(ci_tool("promtool"))
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run promtool");
    let mut stdin = child.stdin.take().expect("promtool's stdin");
    stdin.write_all(text.as_bytes()).expect("feed promtool");
    drop(stdin);
    let out = child.wait_with_output().expect("promtool's output");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && said.is_empty(),
        "promtool check metrics ({}): {said}\n{text}",
        out.status
    );
}

/// Each sample's series (name and labels), in the order of the text.
fn series(text: &str) -> Vec<&str> {
    (text.lines())
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.rsplit_once(' ').expect("a value").0)
        .collect()
}

/// The value of the one sample of family `name` that holds every label of `labels`.
fn value(text: &str, name: &str, labels: &[&str]) -> f64 {
    let found: Vec<&str> = (text.lines())
        .filter(|l| l.starts_with(&format!("{name}{{")))
        .filter(|l| labels.iter().all(|label| l.contains(label)))
        .collect();
    assert_eq!(found.len(), 1, "{name} {labels:?}: {found:#?}\n{text}");
    let (_, value) = found[0].rsplit_once(' ').expect("a value");
    value.parse().expect("a number")
}

/// How many samples of family `name` hold every label of `labels`.
fn count(text: &str, name: &str, labels: &[&str]) -> usize {
    (text.lines())
        .filter(|l| l.starts_with(&format!("{name}{{")))
        .filter(|l| labels.iter().all(|label| l.contains(label)))
        .count()
}

/// The file `-o` wrote, after checking that it was the only file written: no temporary file
/// is left beside it.
fn written(dir: &Path, file: &str) -> String {
    let names: Vec<String> = std::fs::read_dir(dir)
        .expect("the output directory")
        .map(|e| {
            e.expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|n| n.ends_with(".prom") || n.ends_with(".tmp"))
        .collect();
    assert_eq!(names, [file], "{}", dir.display());
    std::fs::read_to_string(dir.join(file)).expect("the .prom file")
}

/// `stackbench doctor --format openmetrics -o doctor.prom` on cuDNN 8 for CUDA 12 beside CUDA
/// 11's cuBLAS, with `--target sm_90`.
fn doctor() -> &'static str {
    static TEXT: OnceLock<String> = OnceLock::new();
    TEXT.get_or_init(|| {
        let dir = tempfile::tempdir().expect("temporary directory");
        let root = toolkits().join("venv-cudnn8-cu12-cublas11");
        let file = dir.path().join("doctor.prom");
        let output = stackbench_alone(&[
            "doctor",
            "--no-system",
            "--root",
            root.to_str().unwrap(),
            "--target",
            "sm_90",
            "--format",
            "openmetrics",
            "-o",
            file.to_str().unwrap(),
        ]);
        assert_eq!(output.status.code(), Some(1), "{output:?}");
        written(dir.path(), "doctor.prom")
    })
}

/// A check on two simulated GPUs whose vector adds come out wrong, as metrics (`-o`) and as
/// JSON, which a fleet's merge reads.
struct CheckRun {
    metrics: String,
    json: PathBuf,
}

fn check() -> &'static CheckRun {
    static RUN: OnceLock<CheckRun> = OnceLock::new();
    RUN.get_or_init(|| {
        let dir = scratch().join("check");
        std::fs::create_dir_all(dir.join("out")).expect("the output directory");
        let metrics = on_simulator(
            &dir,
            TWO_GPUS_WRONG_VECTOR_ADD,
            &["check", "--format", "openmetrics", "-o", "out/check.prom"],
        )
        .output()
        .expect("run check");
        assert_eq!(metrics.status.code(), Some(1), "{metrics:?}");
        let json = on_simulator(
            &dir,
            TWO_GPUS_WRONG_VECTOR_ADD,
            &["check", "--format", "json", "-o", "check.json"],
        )
        .output()
        .expect("run check");
        assert_eq!(json.status.code(), Some(1), "{json:?}");
        CheckRun {
            metrics: written(&dir.join("out"), "check.prom"),
            json: dir.join("check.json"),
        }
    })
}

/// `bench --format openmetrics` on two simulated GPUs: the copy, the vector add and cuBLAS's
/// FP32 GEMM, quick, once.
fn bench() -> &'static str {
    static TEXT: OnceLock<String> = OnceLock::new();
    TEXT.get_or_init(|| {
        let dir = scratch().join("bench");
        let output = on_simulator(
            &dir,
            TWO_GPUS,
            &[
                "bench",
                "--quick",
                "--repeat",
                "1",
                "--filter",
                "copy/",
                "--filter",
                "vector_add/",
                "--filter",
                "cublas/f32/",
                "--allow-skip",
                "--results",
                "results",
                "--format",
                "openmetrics",
            ],
        )
        .output()
        .expect("run bench");
        assert_eq!(output.status.code(), Some(0), "{output:?}");
        String::from_utf8(output.stdout).expect("UTF-8")
    })
}

/// `stackbench merge --format openmetrics FILES`: its exit status and text.
fn merge(files: &[PathBuf]) -> (Option<i32>, String) {
    let mut args = vec!["merge", "--format", "openmetrics"];
    args.extend(files.iter().map(|f| f.to_str().unwrap()));
    let output = run_stackbench(&args);
    let text = String::from_utf8(output.stdout).expect("UTF-8");
    (output.status.code(), text)
}

#[test]
fn doctor_counts_its_findings_by_severity_and_cause_in_a_prom_file() {
    let text = doctor();
    promtool(text);
    assert!(text.ends_with("\n# EOF\n"), "{text}");
    assert_eq!(
        value(text, "stackbench_run_info", &["command=\"doctor\""]),
        1.0
    );
    let errors = ["severity=\"error\""];
    assert_eq!(value(text, "stackbench_doctor_findings", &errors), 1.0);
    let missing = ["cause=\"missing_runtime_dependency\"", "severity=\"error\""];
    assert_eq!(
        value(text, "stackbench_doctor_cause_findings", &missing),
        1.0
    );
    let libraries = value(text, "stackbench_doctor_libraries", &["Hostname="]);
    assert_eq!(libraries, 10.0);
}

#[test]
fn check_says_which_check_failed_on_which_gpu() {
    let text = &check().metrics;
    promtool(text);
    let run = ["command=\"check\"", "simulated=\"true\""];
    assert_eq!(value(text, "stackbench_run_info", &run), 1.0);
    for gpu in ["gpu=\"0\"", "gpu=\"1\""] {
        assert_eq!(
            value(
                text,
                "stackbench_gpu_info",
                &[gpu, SIMULATED_MODEL, "UUID=\"GPU-"]
            ),
            1.0
        );
        let launch = [
            "check=\"nvrtc.launch_vector_add\"",
            gpu,
            "simulated=\"true\"",
        ];
        let status = |s: &str| {
            let status = format!("status=\"{s}\"");
            let labels = [&launch[..], &[status.as_str()]].concat();
            value(text, "stackbench_check_status", &labels)
        };
        assert_eq!(
            (
                status("fail"),
                status("pass"),
                status("warn"),
                status("skip")
            ),
            (1.0, 0.0, 0.0, 0.0)
        );
    }
    let init = ["check=\"driver.init\"", "status=\"pass\""];
    assert_eq!(value(text, "stackbench_check_status", &init), 1.0);
    let failed = ["combination=\"toolkit:cuda-sim\"", "status=\"fail\""];
    assert_eq!(value(text, "stackbench_check_results", &failed), 2.0);
    let cublas = ["library=\"cublas\"", "command=\"check\""];
    assert_eq!(value(text, "stackbench_library_info", &cublas), 1.0);
}

#[test]
fn bench_gives_each_gpu_s_rates_in_base_units_and_shares_of_peak() {
    let text = bench();
    promtool(text);
    for gpu in ["gpu=\"0\"", "gpu=\"1\""] {
        let copy = [
            "benchmark=\"copy\"",
            gpu,
            SIMULATED_MODEL,
            "simulated=\"true\"",
        ];
        let measured = [&copy[..], &["status=\"measured\""]].concat();
        assert_eq!(value(text, "stackbench_bench_status", &measured), 1.0);
        let bytes = value(text, "stackbench_bench_bytes_per_second", &copy);
        assert!((1e12..1e13).contains(&bytes), "{bytes} B/s");
        let seconds = value(text, "stackbench_bench_median_seconds", &copy);
        assert!((1e-6..1.0).contains(&seconds), "{seconds} s");
        let add = ["benchmark=\"vector_add\"", gpu];
        let share = value(text, "stackbench_bench_theoretical_peak_ratio", &add);
        // The simulator's noise can carry a figure a little past its profile's peak.
        assert!(
            share > 0.5 && share < 1.1,
            "{share} of the theoretical peak"
        );
        let gemm = ["benchmark=\"matmul\"", "precision=\"f32\"", gpu];
        let flops = value(text, "stackbench_bench_flop_per_second", &gemm);
        assert!((1e12..1e15).contains(&flops), "{flops} FLOP/s");
    }
    let failed = ["status=\"failed\""];
    assert_eq!(value(text, "stackbench_bench_results", &failed), 0.0);
}

#[test]
fn a_node_s_doctor_check_and_bench_files_share_no_series() {
    let mut seen = HashSet::new();
    for text in [doctor(), &check().metrics, bench()] {
        for series in series(text) {
            assert!(seen.insert(series), "{series} twice");
        }
    }
}

#[test]
fn merge_of_a_fleet_s_checks_names_each_node_s_failures() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let files: Vec<PathBuf> = ["node1", "node2"]
        .iter()
        .map(|node| {
            let file = dir.path().join(node).join("check.json");
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::copy(&check().json, &file).expect("copy the check run");
            file
        })
        .collect();
    let (code, text) = merge(&files);
    assert_eq!(code, Some(1), "{text}");
    promtool(&text);
    for node in ["(node1)", "(node2)"] {
        let row = [
            node,
            "combination=\"toolkit:cuda-sim\"",
            "simulated=\"true\"",
        ];
        assert_eq!(value(&text, "stackbench_merge_failed_checks", &row), 2.0);
        assert_eq!(value(&text, "stackbench_merge_outlier", &row), 1.0);
        assert_eq!(value(&text, "stackbench_merge_node_info", &[node]), 1.0);
    }
    let run = ["command=\"merge\"", "kind=\"check\"", "simulated=\"true\""];
    assert_eq!(value(&text, "stackbench_run_info", &run), 1.0);
}

#[test]
fn merge_of_three_h100_runs_in_one_directory_gives_each_its_own_series() {
    let results = Path::new(env!("CARGO_MANIFEST_DIR")).join("results");
    let files: Vec<PathBuf> = [
        "bench-vm-h100-2026-11-26.json",
        "bench-vm-h100-2026-11-27.json",
        "bench-vm-h100-2026-11-27-2.json",
    ]
    .iter()
    .map(|f| results.join(f))
    .collect();
    let (code, text) = merge(&files);
    assert_eq!(code, Some(1), "one outlier: {text}");
    promtool(&text);
    let compile = [
        "Hostname=\"vm (bench-vm-h100-2026-11-27.json)\"",
        "id=\"nvrtc_compile/toolkit:cuda-13.0/matmul_tiled/sm_90\"",
        "simulated=\"false\"",
    ];
    assert_eq!(value(&text, "stackbench_merge_outlier", &compile), 1.0);
    let ratio = value(&text, "stackbench_merge_fleet_ratio", &compile);
    assert!((ratio - 1.553).abs() < 0.001, "{ratio}");
    let copy = ["id=\"copy/pip:torch/driver/1073741824/batch\""];
    assert_eq!(count(&text, "stackbench_merge_median_seconds", &copy), 3);
    let h100 = ["model_name=\"NVIDIA H100 80GB HBM3\""];
    assert_eq!(count(&text, "stackbench_merge_node_info", &h100), 3);
}

#[test]
fn scan_and_compare_refuse_the_format_and_say_what_to_use() {
    let root = toolkits().join("venv-cu12");
    let scan = run_stackbench(&[
        "scan",
        "--no-system",
        "--root",
        root.to_str().unwrap(),
        "--format",
        "openmetrics",
    ]);
    let results = Path::new(env!("CARGO_MANIFEST_DIR")).join("results");
    let compare = run_stackbench(&[
        "compare",
        results
            .join("bench-vm-h100-2026-11-26.json")
            .to_str()
            .unwrap(),
        results
            .join("bench-vm-h100-2026-11-27.json")
            .to_str()
            .unwrap(),
        "--format",
        "openmetrics",
    ]);
    for (output, report) in [(scan, "scan"), (compare, "compare")] {
        assert_eq!(output.status.code(), Some(2), "{output:?}");
        let said = String::from_utf8_lossy(&output.stderr);
        let refused =
            format!("--format openmetrics is not available for {report} reports; use json");
        assert!(said.contains(&refused), "{said}");
        assert!(output.stdout.is_empty(), "{output:?}");
    }
}
