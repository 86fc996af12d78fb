//! The scripts under `ci/` that CI itself does not run end to end: every bash script parses
//! (`bash -n`) and passes shellcheck where it is installed; every Python script parses; and
//! `ci/torch-compare.py` runs for real on small files: within the tolerance, beyond it, and on
//! a file of the wrong schema.

use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn ci() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("ci")
}

/// The scripts under `ci/` whose first line names `interpreter`.
fn scripts(interpreter: &str) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(ci())
        .expect("ci/ is readable")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| {
            std::fs::read_to_string(p)
                .is_ok_and(|text| text.lines().next().is_some_and(|l| l.contains(interpreter)))
        })
        .collect();
    found.sort();
    found
}

fn run(program: &str, args: &[&str]) -> Output {
    Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"))
}

#[test]
fn every_bash_script_parses_and_passes_shellcheck() {
    let bash = scripts("bash");
    assert!(bash.len() >= 4, "{bash:?}");
    let shellcheck = Command::new("shellcheck").arg("--version").output().is_ok();
    if !shellcheck {
        eprintln!("shellcheck is not installed: only `bash -n` ran");
    }
    for script in &bash {
        let path = script.to_str().unwrap();
        let parsed = run("bash", &["-n", path]);
        assert!(
            parsed.status.success(),
            "{path}: {}",
            String::from_utf8_lossy(&parsed.stderr)
        );
        if shellcheck {
            let checked = run("shellcheck", &[path]);
            assert!(
                checked.status.success(),
                "{path}: {}",
                String::from_utf8_lossy(&checked.stdout)
            );
        }
    }
}

#[test]
fn every_python_script_parses() {
    let python = scripts("python3");
    assert_eq!(python.len(), 2, "{python:?}");
    for script in &python {
        let path = script.to_str().unwrap();
        let parsed = run(
            "python3",
            &[
                "-c",
                "import ast, sys; ast.parse(open(sys.argv[1]).read())",
                path,
            ],
        );
        assert!(
            parsed.status.success(),
            "{path}: {}",
            String::from_utf8_lossy(&parsed.stderr)
        );
    }
}

/// A bench file with one measured cuBLAS bf16 8192 batch row at `tflops`, and rows that must
/// not match (cold mode, the NVRTC kernel, a skipped one).
fn bench_file(dir: &Path, tflops: f64) -> PathBuf {
    let row = |implementation: &str, mode: &str, status: &str, value: f64| {
        json!({
            "id": "x", "combination": "pip:venv-cu12", "benchmark": "matmul", "status": status,
            "parameters": {"size": 8192, "precision": "bf16", "implementation": implementation, "mode": mode},
            "throughput": {"value": value, "unit": "TFLOP/s"}
        })
    };
    let bench = json!({
        "schema": "stackbench.bench/v1",
        "benchmarks": [
            row("cublas", "batch", "measured", tflops),
            row("cublas", "cold", "measured", 1.0),
            row("nvrtc", "batch", "measured", 1.0),
            row("cublas", "batch", "skipped", 1.0),
        ]
    });
    let path = dir.join(format!("bench-{tflops}.json"));
    std::fs::write(&path, bench.to_string()).unwrap();
    path
}

fn torch_file(dir: &Path, schema: &str) -> PathBuf {
    let torch = json!({
        "schema": schema, "gpu": "test data", "torch_version": "0", "cuda_version": "0",
        "results": [{"precision": "bf16", "size": 8192, "tflops": 100.0}]
    });
    let path = dir.join(format!("torch-{}.json", schema.replace('/', "-")));
    std::fs::write(&path, torch.to_string()).unwrap();
    path
}

fn compare(bench: &Path, torch: &Path, extra: &[&str]) -> Output {
    let script = ci().join("torch-compare.py");
    let mut args = vec![
        script.to_str().unwrap(),
        bench.to_str().unwrap(),
        torch.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    run("python3", &args)
}

#[test]
fn compare_passes_within_the_tolerance_and_writes_json() {
    let dir = tempfile::tempdir().unwrap();
    let torch = torch_file(dir.path(), "stackbench.torch-matmul/v1");
    let out = dir.path().join("compare.json");
    let output = compare(
        &bench_file(dir.path(), 98.0),
        &torch,
        &["--json", out.to_str().unwrap()],
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("| `pip:venv-cu12` | bf16 | 8192 | 98.0 | 100.0 | -2.0% | yes |"),
        "{stdout}"
    );
    let written: serde_json::Value = serde_json::from_slice(&std::fs::read(out).unwrap()).unwrap();
    assert_eq!(
        written["rows"].as_array().unwrap().len(),
        1,
        "only the cuBLAS batch row matches"
    );
}

#[test]
fn compare_fails_when_off_by_more_than_the_tolerance() {
    let dir = tempfile::tempdir().unwrap();
    let torch = torch_file(dir.path(), "stackbench.torch-matmul/v1");
    for tflops in [95.0, 105.0] {
        let output = compare(&bench_file(dir.path(), tflops), &torch, &[]);
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert_eq!(output.status.code(), Some(1), "{tflops}: {stdout}");
        assert!(stdout.contains("**no**"), "{stdout}");
    }
}

#[test]
fn compare_refuses_a_file_of_another_schema() {
    let dir = tempfile::tempdir().unwrap();
    let wrong = torch_file(dir.path(), "stackbench.check/v1");
    let output = compare(&bench_file(dir.path(), 100.0), &wrong, &[]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("expected 'stackbench.torch-matmul/v1'"),
        "{stderr}"
    );
    let missing = compare(&dir.path().join("nope.json"), &wrong, &[]);
    assert_eq!(missing.status.code(), Some(2));
}
