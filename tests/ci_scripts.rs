//! The scripts under `ci/`, which CI does not otherwise run end to end: every bash script parses
//! (`bash -n`) and passes shellcheck where shellcheck is installed; every Python script compiles,
//! is executable and says how to run it; `ci/torch-compare.py` runs for real on small files
//! (within the tolerance, beyond it either way, nothing to compare, a file of the wrong schema);
//! and `ci/torch-matmul.py` runs on a stand-in for PyTorch (a virtual GPU clock, no GPU needed),
//! writing what `ci/torch-compare.py` reads. The nightly workflow and the Kubernetes Job parse as
//! YAML with what they promise (a self-hosted GPU runner; one GPU per pod, a results volume), and
//! their shell steps parse.

use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BASH: &str = "#!/usr/bin/env bash";
const PYTHON: &str = "#!/usr/bin/env python3";
const BENCH_SCHEMA: &str = "stackbench.bench/v1";
const TORCH_SCHEMA: &str = "stackbench.torch-matmul/v1";

fn ci() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("ci")
}

/// The files under `ci/` whose first line is `shebang`, sorted.
fn scripts(shebang: &str) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(ci())
        .expect("ci/ is readable")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| {
            std::fs::read_to_string(p)
                .is_ok_and(|text| text.lines().next().is_some_and(|l| l.trim_end() == shebang))
        })
        .collect();
    found.sort();
    found
}

fn names(paths: &[PathBuf]) -> Vec<String> {
    paths
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect()
}

fn run(program: &str, args: &[&str]) -> Output {
    Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn every_bash_script_parses_and_passes_shellcheck_where_it_is_installed() {
    let bash = scripts(BASH);
    let found = names(&bash);
    for expected in ["fetch-toolkits", "gpu-pack", "gpu-run", "test"] {
        assert!(
            found.iter().any(|n| n == expected),
            "{expected} in {found:?}"
        );
    }
    let shellcheck = Command::new("shellcheck")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !shellcheck {
        eprintln!("shellcheck is not installed: only `bash -n` ran on {found:?}");
    }
    for script in &bash {
        let path = script.to_str().unwrap();
        let parsed = run("bash", &["-n", path]);
        assert!(
            parsed.status.success(),
            "bash -n {path}: {}",
            text(&parsed.stderr)
        );
        if shellcheck {
            let checked = run("shellcheck", &[path]);
            assert!(
                checked.status.success(),
                "shellcheck {path}:\n{}{}",
                text(&checked.stdout),
                text(&checked.stderr)
            );
        }
    }
}

#[test]
fn every_python_script_compiles_is_executable_and_says_how_to_run_it() {
    let mut python: Vec<PathBuf> = std::fs::read_dir(ci())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "py"))
        .collect();
    python.sort();
    let found = names(&python);
    for expected in ["torch-compare.py", "torch-matmul.py"] {
        assert!(
            found.iter().any(|n| n == expected),
            "{expected} in {found:?}"
        );
    }
    assert_eq!(
        names(&scripts(PYTHON)),
        found,
        "each starts with `{PYTHON}`"
    );
    // compile() checks what ast.parse does and more (a misplaced return, say) and writes nothing.
    let check = "import ast, sys\n\
                 source = open(sys.argv[1], encoding='utf-8').read()\n\
                 compile(source, sys.argv[1], 'exec')\n\
                 sys.exit(0 if ast.get_docstring(ast.parse(source)) else 'no docstring')";
    for script in &python {
        let path = script.to_str().unwrap();
        let compiled = run("python3", &["-B", "-c", check, path]);
        assert!(
            compiled.status.success(),
            "{path}: {}",
            text(&compiled.stderr)
        );
        let mode = std::fs::metadata(script).unwrap().permissions().mode();
        assert_ne!(mode & 0o111, 0, "{path} is executable");
    }
}

// ---- ci/torch-compare.py ---------------------------------------------------------------------------

/// A measured cuBLAS batch matmul row of a bench report.
fn matmul_row(combination: &str, precision: &str, size: u64, tflops: f64) -> Value {
    json!({
        "id": format!("matmul/{combination}/cublas/{precision}/{size}/batch"),
        "combination": combination, "benchmark": "matmul", "side": "gpu", "status": "measured",
        "parameters": {"size": size, "precision": precision, "implementation": "cublas", "mode": "batch"},
        "samples_ns": [1.0, 1.0],
        "summary": {"median_ns": 1.0, "q1_ns": 1.0, "q3_ns": 1.0, "min_ns": 1.0, "max_ns": 1.0, "noise": 0.001},
        "throughput": {"value": tflops, "unit": "TFLOP/s"},
        "stopped_by": "noise"
    })
}

/// A bench report with `rows`, and rows that must never be compared: cold mode, the NVRTC
/// kernel, a skipped row, another benchmark.
fn bench_file(dir: &Path, name: &str, rows: Vec<Value>) -> PathBuf {
    let mut benchmarks = rows;
    let mut cold = matmul_row("pip:venv-cu12", "bf16", 8192, 1.0);
    cold["parameters"]["mode"] = json!("cold");
    let mut nvrtc = matmul_row("pip:venv-cu12", "bf16", 8192, 1.0);
    nvrtc["parameters"]["implementation"] = json!("nvrtc");
    let mut skipped = matmul_row("pip:venv-cu12", "bf16", 8192, 1.0);
    skipped["status"] = json!("skipped");
    skipped["throughput"] = Value::Null;
    let mut copy = matmul_row("pip:venv-cu12", "bf16", 8192, 1.0);
    copy["benchmark"] = json!("copy");
    benchmarks.extend([cold, nvrtc, skipped, copy]);
    let bench = json!({
        "schema": BENCH_SCHEMA,
        "gpu": {"source": "nvml", "devices": [{"index": 0, "name": "NVIDIA H100 80GB HBM3",
                "compute_capability": "9.0"}], "driver_version": "580.95.05", "note": null},
        "benchmarks": benchmarks
    });
    let path = dir.join(name);
    std::fs::write(&path, bench.to_string()).unwrap();
    path
}

/// A torch-matmul file with bf16 8192 at 800 TFLOP/s, f16 8192 at 700 and a failed f32 8192.
fn torch_file(dir: &Path, schema: &str) -> PathBuf {
    let result = |precision: &str, tflops: f64| {
        json!({"precision": precision, "size": 8192, "mode": "batch", "status": "measured",
               "samples_ns": [1.0, 1.0], "median_ns": 2.0 * 8192f64.powi(3) / tflops / 1e3,
               "noise": 0.001, "tflops": tflops, "stopped_by": "noise"})
    };
    let torch = json!({
        "schema": schema, "torch_version": "2.9.0+cu130", "cuda_version": "13.0",
        "cublas_version": "13.0.0", "gpu": {"name": "NVIDIA H100 80GB HBM3"},
        "results": [
            result("bf16", 800.0),
            result("f16", 700.0),
            {"precision": "f32", "size": 8192, "status": "failed", "reason": "CUDA out of memory"}
        ]
    });
    let path = dir.join(format!("torch-{}.json", schema.replace('/', "-")));
    std::fs::write(&path, torch.to_string()).unwrap();
    path
}

fn compare(bench: &Path, torch: &Path, extra: &[&str]) -> Output {
    let script = ci().join("torch-compare.py");
    let mut args = vec![
        "-B",
        script.to_str().unwrap(),
        bench.to_str().unwrap(),
        torch.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    run("python3", &args)
}

#[test]
fn compare_passes_within_the_tolerance_and_prints_the_table() {
    let dir = tempfile::tempdir().unwrap();
    let bench = bench_file(
        dir.path(),
        "bench.json",
        vec![
            matmul_row("pip:venv-cu12", "bf16", 8192, 784.0),
            matmul_row("toolkit:cuda-12.9", "f16", 8192, 714.0),
            // No torch figure for this one: noted, not failed.
            matmul_row("pip:venv-cu12", "tf32", 8192, 400.0),
        ],
    );
    let out = dir.path().join("compare.json");
    let output = compare(
        &bench,
        &torch_file(dir.path(), TORCH_SCHEMA),
        &["--json", out.to_str().unwrap()],
    );
    let stdout = text(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}{}",
        text(&output.stderr)
    );
    for line in [
        "| combination | precision | size | stackbench TFLOP/s | torch TFLOP/s | difference % | within 3% |",
        "| `pip:venv-cu12` | bf16 | 8192 | 784.0 | 800.0 | -2.0% | yes |",
        "| `toolkit:cuda-12.9` | f16 | 8192 | 714.0 | 700.0 | +2.0% | yes |",
        "2 of 2 within 3%.",
        "- `pip:venv-cu12` tf32 8192: no torch figure",
        "- torch f32 8192: failed (CUDA out of memory)",
    ] {
        assert!(stdout.lines().any(|l| l == line), "{line:?} in:\n{stdout}");
    }
    let written: Value = serde_json::from_slice(&std::fs::read(out).unwrap()).unwrap();
    assert_eq!(written["schema"], "stackbench.torch-compare/v1");
    assert_eq!(written["verdict"], "within");
    let rows = written["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "only cuBLAS batch rows match: {rows:?}");
    assert_eq!(rows[0]["within_tolerance"], true);
    assert_eq!(written["unmatched"].as_array().unwrap().len(), 1);
}

#[test]
fn compare_fails_when_off_by_more_than_the_tolerance() {
    let dir = tempfile::tempdir().unwrap();
    let torch = torch_file(dir.path(), TORCH_SCHEMA);
    // 5% slower and 5% faster than torch's 800 both fail; a wider tolerance passes them.
    for (tflops, shown) in [(760.0, "-5.0%"), (840.0, "+5.0%")] {
        let bench = bench_file(
            dir.path(),
            &format!("bench-{tflops}.json"),
            vec![matmul_row("pip:venv-cu12", "bf16", 8192, tflops)],
        );
        let output = compare(&bench, &torch, &[]);
        let stdout = text(&output.stdout);
        assert_eq!(output.status.code(), Some(1), "{tflops}: {stdout}");
        let row =
            format!("| `pip:venv-cu12` | bf16 | 8192 | {tflops:.1} | 800.0 | {shown} | **no** |");
        assert!(stdout.contains(&row), "{row} in:\n{stdout}");
        assert!(text(&output.stderr).contains("is beyond 3%"));
        let wider = compare(&bench, &torch, &["--tolerance", "6"]);
        assert_eq!(wider.status.code(), Some(0), "{}", text(&wider.stdout));
    }
}

#[test]
fn compare_fails_when_nothing_matches() {
    let dir = tempfile::tempdir().unwrap();
    let bench = bench_file(
        dir.path(),
        "bench.json",
        vec![matmul_row("pip:venv-cu12", "bf16", 4096, 700.0)],
    );
    let output = compare(&bench, &torch_file(dir.path(), TORCH_SCHEMA), &[]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stdout).contains("Nothing matched"),
        "{}",
        text(&output.stdout)
    );
}

#[test]
fn compare_refuses_unreadable_input_and_files_of_another_schema_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let bench = bench_file(
        dir.path(),
        "bench.json",
        vec![matmul_row("pip:venv-cu12", "bf16", 8192, 800.0)],
    );
    let torch = torch_file(dir.path(), TORCH_SCHEMA);
    let wrong = torch_file(dir.path(), "stackbench.check/v1");
    let not_json = dir.path().join("not.json");
    std::fs::write(&not_json, "{ half").unwrap();
    let missing = dir.path().join("missing.json");
    let cases: [(&Path, &Path, &str); 5] = [
        (
            &bench,
            &wrong,
            "schema is 'stackbench.check/v1', expected 'stackbench.torch-matmul/v1'",
        ),
        (&torch, &torch, "expected 'stackbench.bench/v1'"),
        (&bench, &not_json, "not JSON"),
        (&missing, &torch, "cannot read it"),
        (&bench, &bench, "expected 'stackbench.torch-matmul/v1'"),
    ];
    for (b, t, says) in cases {
        let output = compare(b, t, &[]);
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{b:?} {t:?}: {stderr}");
        assert!(stderr.contains(says), "{says:?} in {stderr}");
    }
}

// ---- ci/torch-matmul.py on a stand-in for PyTorch ----------------------------------------------------

/// Just what ci/torch-matmul.py calls, on a virtual GPU clock: each launch advances it by its
/// work at 100 TFLOP/s (f16's samples alternate 5% either side, so f16 never gets quiet; a gate,
/// torch.cuda._sleep, starts each sample), and a side over 50000 runs out of memory.
const STAND_IN_TORCH: &str = r#"
import contextlib, os, types

__version__ = "0.0+stand-in"
version = types.SimpleNamespace(cuda="13.0")
float32, float16, bfloat16 = "torch.float32", "torch.float16", "torch.bfloat16"
_clock = {"ns": 0.0, "gates": 0}


class Tensor:
    def __init__(self, n, dtype):
        self.n, self.dtype = n, dtype


def device(*args):
    return args


class Generator:
    def __init__(self, device=None):
        pass

    def manual_seed(self, seed):
        return self


def randn(n, m, dtype=float32, device=None, generator=None):
    if n > 50000:
        raise cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate a lot")
    return Tensor(n, dtype)


empty = randn


def matmul(a, b, out=None):
    ns = 2.0 * a.n ** 3 / 100e3
    if a.dtype == float16:
        ns *= 1.05 if _clock["gates"] % 2 else 0.95
    _clock["ns"] += ns
    return out


class _Matmul:
    allow_tf32 = False
    allow_fp16_reduced_precision_reduction = True
    allow_bf16_reduced_precision_reduction = True


backends = types.SimpleNamespace(
    cuda=types.SimpleNamespace(matmul=_Matmul(), preferred_blas_library=lambda: "Cublas"))
_C = types.SimpleNamespace(_cuda_getCompiledVersion=lambda: 13000)


def get_float32_matmul_precision():
    return "high" if backends.cuda.matmul.allow_tf32 else "highest"


class _Stream:
    def __init__(self, device=None):
        pass

    def synchronize(self):
        pass


class _Event:
    def __init__(self, enable_timing=False):
        self.ns = None

    def record(self, stream=None):
        self.ns = _clock["ns"]

    def synchronize(self):
        pass

    def elapsed_time(self, end):
        return (end.ns - self.ns) / 1e6


def _sleep(cycles):
    _clock["gates"] += 1
    _clock["ns"] += cycles


cuda = types.SimpleNamespace(
    OutOfMemoryError=type("OutOfMemoryError", (RuntimeError,), {}),
    is_available=lambda: "STAND_IN_NO_GPU" not in os.environ,
    Stream=_Stream,
    Event=_Event,
    stream=lambda s: contextlib.nullcontext(),
    set_device=lambda index: None,
    empty_cache=lambda: None,
    get_device_properties=lambda index: types.SimpleNamespace(
        name="Stand-in GPU", major=9, minor=0, multi_processor_count=132, total_memory=80 << 30),
    _sleep=_sleep,
)
"#;

/// ci/torch-matmul.py with `args`, importing the stand-in PyTorch written under `dir`.
fn torch_matmul_on_the_stand_in(dir: &Path, args: &[&str], no_gpu: bool) -> Output {
    let package = dir.join("stand-in").join("torch");
    std::fs::create_dir_all(&package).unwrap();
    std::fs::write(package.join("__init__.py"), STAND_IN_TORCH).unwrap();
    let mut command = Command::new("python3");
    command
        .arg("-B")
        .arg(ci().join("torch-matmul.py"))
        .args(args)
        .env("PYTHONPATH", dir.join("stand-in"));
    if no_gpu {
        command.env("STAND_IN_NO_GPU", "1");
    } else {
        command.env_remove("STAND_IN_NO_GPU");
    }
    command.output().expect("run python3")
}

#[test]
fn torch_matmul_times_until_quiet_or_the_time_limit_and_writes_what_compare_reads() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("results").join("torch.json");
    let output = torch_matmul_on_the_stand_in(
        dir.path(),
        &[
            "--sizes",
            "64",
            "60000",
            "--precisions",
            "bf16",
            "f16",
            "--time-limit",
            "0.8",
            "--output",
            out.to_str().unwrap(),
        ],
        false,
    );
    let stderr = text(&output.stderr);
    // The side of 60000 ran out of memory: recorded as failed, the others still measured.
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(output.stdout.is_empty(), "the JSON went to --output");
    let report: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(report["schema"], TORCH_SCHEMA);
    assert_eq!(report["torch_version"], "0.0+stand-in");
    assert_eq!(report["cuda_version"], "13.0");
    assert_eq!(report["gpu"]["name"], "Stand-in GPU");
    assert_eq!(report["stop_rule"]["max_noise"], 0.005);
    let results = report["results"].as_array().unwrap();
    let find = |precision: &str, size: u64| {
        results
            .iter()
            .find(|r| r["precision"] == precision && r["size"] == size)
            .unwrap_or_else(|| panic!("{precision} {size} in {results:?}"))
    };
    assert_eq!(results.len(), 4);

    let quiet = find("bf16", 64);
    assert_eq!(quiet["status"], "measured", "{quiet}");
    assert_eq!(quiet["mode"], "batch");
    assert_eq!(quiet["stopped_by"], "noise");
    assert_eq!(quiet["launch_gate"], "sleep");
    assert!(quiet["samples_ns"].as_array().unwrap().len() >= 10);
    let tflops = quiet["tflops"].as_f64().unwrap();
    assert!((tflops - 100.0).abs() < 0.01, "{tflops}");
    let median = quiet["median_ns"].as_f64().unwrap();
    assert!(
        (median - 2.0 * 64f64.powi(3) / 100e3).abs() < 1e-3,
        "{median}"
    );
    assert!(
        quiet["sampling_s"].as_f64().unwrap() >= 0.5,
        "at least 0.5 s"
    );

    let noisy = find("f16", 64);
    assert_eq!(noisy["stopped_by"], "time_limit", "{noisy}");
    assert!(noisy["noise"].as_f64().unwrap() > 0.04);

    let failed = find("bf16", 60000);
    assert_eq!(failed["status"], "failed");
    assert!(failed["reason"].as_str().unwrap().contains("out of memory"));
    assert!(
        stderr.contains("bf16  60000: failed: CUDA out of memory"),
        "{stderr}"
    );

    let bench = bench_file(
        dir.path(),
        "bench.json",
        vec![matmul_row("pip:venv-cu12", "bf16", 64, 99.0)],
    );
    let compared = compare(&bench, &out, &[]);
    let stdout = text(&compared.stdout);
    assert_eq!(
        compared.status.code(),
        Some(0),
        "{stdout}{}",
        text(&compared.stderr)
    );
    assert!(
        stdout.contains("| `pip:venv-cu12` | bf16 | 64 | 99.0 | 100.0 | -1.0% | yes |"),
        "{stdout}"
    );
}

#[test]
fn torch_matmul_exits_2_saying_why_without_cuda_or_without_pytorch() {
    let dir = tempfile::tempdir().unwrap();
    let no_gpu = torch_matmul_on_the_stand_in(dir.path(), &["--quick"], true);
    assert_eq!(no_gpu.status.code(), Some(2));
    let stderr = text(&no_gpu.stderr);
    assert!(stderr.contains("CUDA is unavailable"), "{stderr}");
    assert!(no_gpu.stdout.is_empty());

    // -I -S: no site-packages, so no PyTorch, whatever this machine has installed.
    let script = ci().join("torch-matmul.py");
    let no_torch = run(
        "python3",
        &["-I", "-S", "-B", script.to_str().unwrap(), "--quick"],
    );
    assert_eq!(no_torch.status.code(), Some(2));
    let stderr = text(&no_torch.stderr);
    assert!(stderr.contains("PyTorch is not importable"), "{stderr}");
    assert!(stderr.contains("/opt/torch/.venv/bin/python3"), "{stderr}");

    let bad = torch_matmul_on_the_stand_in(dir.path(), &["--precisions", "fp8"], false);
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad.stderr));
}

/// A YAML file under `ci/`, parsed.
fn yaml(name: &str) -> serde_yaml::Value {
    let text = std::fs::read_to_string(ci().join(name)).expect("the file is there");
    serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{name} is not YAML: {e}"))
}

/// `script` parses as `shell` (`bash -n`, `sh -n`).
fn parses_as(shell: &str, script: &str, what: &str) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("script");
    std::fs::write(&file, script).unwrap();
    let parsed = run(shell, &["-n", file.to_str().unwrap()]);
    assert!(parsed.status.success(), "{what}: {}", text(&parsed.stderr));
}

#[test]
fn the_nightly_workflow_checks_benches_compares_and_keeps_its_results_on_a_gpu_runner() {
    let workflow = yaml("github-nightly.yml");
    assert!(workflow["on"]["schedule"][0]["cron"].as_str().is_some());
    let job = &workflow["jobs"]["gpu"];
    let labels: Vec<&str> = job["runs-on"]
        .as_sequence()
        .unwrap()
        .iter()
        .filter_map(|l| l.as_str())
        .collect();
    assert!(
        labels.contains(&"self-hosted") && labels.contains(&"gpu"),
        "{labels:?}"
    );
    let steps = job["steps"].as_sequence().unwrap();
    let runs: Vec<&str> = steps.iter().filter_map(|s| s["run"].as_str()).collect();
    for run in &runs {
        parses_as("bash", run, run);
    }
    let all = runs.join("\n");
    for needed in [
        "stackbench check --format junit",
        "stackbench bench",
        "stackbench compare baseline/bench.json",
        "GITHUB_STEP_SUMMARY",
    ] {
        assert!(all.contains(needed), "the workflow runs {needed}");
    }
    let uses: Vec<&str> = steps.iter().filter_map(|s| s["uses"].as_str()).collect();
    for action in [
        "actions/upload-artifact",
        "action-junit-report",
        "actions/cache/save",
    ] {
        assert!(
            uses.iter().any(|u| u.contains(action)),
            "{uses:?} lacks {action}"
        );
    }
}

#[test]
fn the_kubernetes_job_asks_for_one_gpu_per_pod_and_writes_to_a_volume() {
    let job = yaml("k8s-bench-job.yaml");
    assert_eq!(job["kind"], "Job");
    let pod = &job["spec"]["template"]["spec"];
    let container = &pod["containers"][0];
    assert_eq!(container["resources"]["limits"]["nvidia.com/gpu"], 1);
    assert_eq!(container["volumeMounts"][0]["mountPath"], "/results");
    assert_eq!(
        pod["volumes"][0]["name"],
        container["volumeMounts"][0]["name"]
    );
    assert!(pod["volumes"][0]["persistentVolumeClaim"]["claimName"]
        .as_str()
        .is_some());
    let script = container["args"][0].as_str().unwrap();
    parses_as("sh", script, "the pod's script");
    assert!(script.contains("stackbench bench --results \"/results/$NODE_NAME\""));
}

#[test]
fn the_slurm_script_runs_one_task_per_node_then_merges() {
    let script = std::fs::read_to_string(ci().join("slurm-bench.sbatch")).unwrap();
    assert!(script.contains("#SBATCH --ntasks-per-node=1"));
    assert!(script.contains("#SBATCH --gres=gpu:1"));
    assert!(script.contains("srun"));
    assert!(script.contains("merge \"$RESULTS\"/*/bench-*.json"));
}
