//! `stackbench doctor` as a user runs it, on the real NVIDIA fixture libraries: each cause code
//! shown on a real broken combination with its evidence and fix, `--no-load`, `--target`,
//! search-path hygiene, shadowing and the report formats.
//!
//! Every run gets an empty environment (PATH, HOME in a temporary directory, LD_LIBRARY_PATH only
//! where the case is about it), so nothing depends on this host's own CUDA set-up.

// Tests read the files they make and the checkout's own: std's readers are theirs (clippy.toml).
#![allow(clippy::disallowed_methods)]

mod common;

use common::*;
use rstest::rstest;
use serde_json::Value;
use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Output;

/// Fixture roots, relative to the fixtures: cuDNN 8.9 for CUDA 12 beside only CUDA 11 cuBLAS,
/// the CUDA 12 and CUDA 11 pip environments, and the 535 driver (amd64 and i386).
const CUDNN8_VENV: &str = "venv-cudnn8-cu12-cublas11";
const CU12_VENV: &str = "venv-cu12";
const CU11_VENV: &str = "venv-cu11";
const DRIVER: &str = "driver-535";

/// One `doctor --format json` run.
struct Run {
    code: i32,
    report: Value,
}

/// `doctor --no-system --root <each root>` plus `args`, in an isolated environment with
/// LD_LIBRARY_PATH set to `ld_library_path` (unset for `None`) and the extra `env`.
fn doctor_output(
    roots: &[PathBuf],
    ld_library_path: Option<&str>,
    env: &[(&str, &str)],
    args: &[&str],
) -> Output {
    let home = tempfile::tempdir().expect("temporary HOME");
    let mut command = isolated_stackbench(home.path());
    command.args(["doctor", "--no-system"]);
    for root in roots {
        command.arg("--root").arg(root);
    }
    command.args(args);
    if let Some(value) = ld_library_path {
        command.env("LD_LIBRARY_PATH", value);
    }
    for (key, value) in env {
        command.env(key, value);
    }
    command.output().expect("run stackbench doctor")
}

/// `doctor ... --format json`, parsed, with the report-wide invariants checked.
fn doctor(roots: &[PathBuf], ld_library_path: Option<&str>, args: &[&str]) -> Run {
    let mut all = args.to_vec();
    all.extend(["--format", "json"]);
    let output = doctor_output(roots, ld_library_path, &[], &all);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "doctor panicked: {stderr}");
    let code = output
        .status
        .code()
        .unwrap_or_else(|| panic!("doctor was killed by a signal; stderr: {stderr}"));
    assert!(
        code == 0 || code == 1,
        "exit status {code}; stderr: {stderr}"
    );
    let report = doctor_report(&output.stdout);
    check_invariants(&report, code);
    Run { code, report }
}

/// What holds for every report: findings ordered errors, warnings, notes; each has a message,
/// a fix and every field; the exit status is 1 exactly when there is an error.
fn check_invariants(report: &Value, code: i32) {
    let findings = report["findings"].as_array().expect("findings array");
    let rank = |f: &Value| match f["severity"].as_str() {
        Some("error") => 0,
        Some("warning") => 1,
        Some("info") => 2,
        other => panic!("unknown severity {other:?} in {f}"),
    };
    for pair in findings.windows(2) {
        assert!(
            rank(&pair[0]) <= rank(&pair[1]),
            "findings out of order: {} before {}",
            pair[0],
            pair[1]
        );
    }
    for f in findings {
        for key in [
            "severity",
            "cause",
            "message",
            "library",
            "path",
            "installation",
            "missing",
            "needed_by",
            "candidates",
            "evidence",
            "fix",
        ] {
            assert!(f.get(key).is_some(), "finding without `{key}`: {f}");
        }
        assert!(
            !text(f, "message").is_empty(),
            "finding without a message: {f}"
        );
        assert!(!text(f, "fix").is_empty(), "finding without a fix: {f}");
    }
    let errors = findings.iter().any(|f| f["severity"] == "error");
    assert_eq!(
        code,
        i32::from(errors),
        "exit status 1 exactly when there is an error; findings:\n{}",
        summary(report)
    );
}

fn roots(relative: &[&str]) -> Vec<PathBuf> {
    relative.iter().map(|r| fixture(r)).collect()
}

fn display(path: &Path) -> String {
    path.display().to_string()
}

/// A string field of a finding; "" for null.
fn text<'a>(finding: &'a Value, key: &str) -> &'a str {
    finding[key].as_str().unwrap_or("")
}

/// One line per finding, for failure messages.
fn summary(report: &Value) -> String {
    report["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|f| {
            format!(
                "  {} {} library={} missing={} needed_by={} installation={}",
                text(f, "severity"),
                text(f, "cause"),
                text(f, "library"),
                text(f, "missing"),
                text(f, "needed_by"),
                text(f, "installation")
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The one finding with `cause` for which `pick` holds.
fn the(report: &Value, cause: &str, pick: impl Fn(&Value) -> bool) -> Value {
    let found: Vec<Value> = findings_of(report, cause)
        .into_iter()
        .filter(|f| pick(f))
        .collect();
    assert_eq!(
        found.len(),
        1,
        "expected exactly one matching `{cause}` finding; findings:\n{}",
        summary(report)
    );
    found.into_iter().next().expect("one")
}

fn has_line(lines: &Value, wanted: &str) -> bool {
    strings(lines).iter().any(|l| l == wanted)
}

fn has_line_containing(lines: &Value, wanted: &str) -> bool {
    strings(lines).iter().any(|l| l.contains(wanted))
}

/// What one API call of a load answered: (status, value).
fn api<'a>(load: &'a Value, function: &str) -> &'a Value {
    load["api"]
        .as_array()
        .expect("api array")
        .iter()
        .find(|c| c["function"] == function)
        .unwrap_or_else(|| panic!("{function} not called in {load}"))
}

/// A library object of the report's inventory, by installation and soname.
fn library<'a>(report: &'a Value, installation: &Path, soname: &str) -> &'a Value {
    report["installations"]
        .as_array()
        .expect("installations array")
        .iter()
        .filter(|i| i["root"] == display(installation).as_str())
        .flat_map(|i| i["libraries"].as_array().into_iter().flatten())
        .find(|l| l["soname"] == soname)
        .unwrap_or_else(|| panic!("no {soname} in {}", installation.display()))
}

fn amd64_driver_dir() -> PathBuf {
    fixture(DRIVER_AMD64)
}

fn i386_driver_dir() -> PathBuf {
    fixture(DRIVER_I386)
}

// 1. A dependency opened at run time, built for another CUDA major than the one reachable.

#[test]
fn cudnn8_for_cuda12_beside_cuda11_cublas_cannot_reach_cublaslt_12() {
    let run = doctor(&roots(&[CUDNN8_VENV, CU12_VENV]), None, &[]);
    let venv = fixture(VENV_CUDNN8);
    let ops_infer = venv.join("nvidia/cudnn/lib/libcudnn_ops_infer.so.8");
    for (missing, cuda11) in [
        ("libcublasLt.so.12", "libcublasLt.so.11"),
        ("libcublas.so.12", "libcublas.so.11"),
    ] {
        let f = &the(&run.report, "missing_runtime_dependency", |f| {
            f["missing"] == missing && f["needed_by"] == "libcudnn_ops_infer.so.8"
        });
        assert_eq!(f["severity"], "error", "{f}");
        assert_eq!(f["library"], "libcudnn_ops_infer.so.8");
        assert_eq!(text(f, "path"), display(&ops_infer));
        assert_eq!(text(f, "installation"), display(&venv));
        let message = text(f, "message");
        assert!(
            message.contains(&format!("opens {missing} at run time and cannot find it")),
            "{message}"
        );
        assert!(
            message.ends_with(&format!("; it finds only CUDA 11's {cuda11}")),
            "{message}"
        );
        // The one CUDA 12 copy on the host, in the other environment.
        assert_eq!(
            strings(&f["candidates"]),
            vec![display(
                &fixture(VENV_CU12).join(format!("nvidia/cublas/lib/{missing}"))
            )]
        );
        assert!(
            text(f, "fix").starts_with("pip install nvidia-cublas-cu12"),
            "{f}"
        );
        assert!(text(f, "fix").contains(&display(&venv)), "{f}");
        // The wheel's own RUNPATH was followed to the CUDA 11 cuBLAS directory.
        let runpath_try = format!(
            "{}/nvidia/cudnn/lib/../../cublas/lib/{missing} via DT_RUNPATH: no such file",
            venv.display()
        );
        assert!(has_line(&f["evidence"], &runpath_try), "{f}");
    }
    // It loads fine (the names are opened at first use) and says it was built for CUDA 12.1.
    let loaded = probe_load(&run.report, "libcudnn_ops_infer.so.8");
    assert_eq!(loaded["outcome"]["kind"], "loaded", "{loaded}");
    assert_eq!(api(loaded, "cudnnGetVersion")["value"], 8902);
    assert_eq!(api(loaded, "cudnnGetCudartVersion")["value"], 12010);
    assert_eq!(run.code, 1);
}

// 2. The 32-bit driver library on the search path.

#[test]
fn a_32_bit_libcuda_alone_on_the_path_is_a_wrong_elf_class_error() {
    let i386 = i386_driver_dir();
    let amd64 = amd64_driver_dir();
    let run = doctor(&roots(&[DRIVER, CU12_VENV]), Some(&display(&i386)), &[]);
    let f = &the(&run.report, "wrong_elf_class", |f| {
        f["library"] == "libcuda.so.1"
    });
    assert_eq!(f["severity"], "error", "{f}");
    assert_eq!(text(f, "path"), display(&i386.join("libcuda.so.1")));
    assert_eq!(f["missing"], "libcuda.so.1");
    assert!(
        text(f, "message").contains("is ELF32, not ELF64 x86_64"),
        "{f}"
    );
    assert_eq!(
        strings(&f["candidates"]),
        vec![display(&amd64.join("libcuda.so.1"))]
    );
    assert!(
        text(f, "fix").contains(&format!("take {} off LD_LIBRARY_PATH", i386.display())),
        "{f}"
    );
    assert!(
        text(f, "fix").contains(&display(&amd64.join("libcuda.so.1"))),
        "{f}"
    );
    assert!(
        has_line(
            &f["evidence"],
            &format!(
                "{} via LD_LIBRARY_PATH: wrong ELF class (ELF32)",
                i386.join("libcuda.so.1").display()
            )
        ),
        "{f}"
    );
    // Nothing usable is reachable, and the fix points at the 64-bit copy.
    let none = &the(&run.report, "no_driver", |_| true);
    assert_eq!(
        strings(&none["candidates"]),
        vec![display(&amd64.join("libcuda.so.1"))]
    );
    assert!(
        text(none, "fix").starts_with(&format!("export LD_LIBRARY_PATH={}", amd64.display())),
        "{none}"
    );
    assert_eq!(run.code, 1);
}

#[test]
fn a_32_bit_libcuda_before_the_64_bit_one_is_only_a_warning() {
    let i386 = i386_driver_dir();
    let amd64 = amd64_driver_dir();
    let path = format!("{}:{}", i386.display(), amd64.display());
    let run = doctor(&roots(&[DRIVER, CU12_VENV]), Some(&path), &[]);
    let f = &the(&run.report, "wrong_elf_class", |f| {
        f["library"] == "libcuda.so.1"
    });
    assert_eq!(f["severity"], "warning", "the loader skips it: {f}");
    assert_eq!(text(f, "path"), display(&i386.join("libcuda.so.1")));
    assert!(
        has_line(
            &f["evidence"],
            &format!(
                "{} via LD_LIBRARY_PATH: found",
                amd64.join("libcuda.so.1").display()
            )
        ),
        "{f}"
    );
    assert!(
        findings_of(&run.report, "no_driver").is_empty(),
        "{}",
        summary(&run.report)
    );
    // The runtime reached the 64-bit driver: it answers for CUDA 12.2.
    let cudart = probe_load(&run.report, "libcudart.so.12");
    assert_eq!(api(cudart, "cudaDriverGetVersion")["value"], 12020);
}

// 3. The driver against the runtimes.

#[test]
fn the_cuda_13_runtime_on_the_535_driver_is_driver_too_old() {
    let amd64 = amd64_driver_dir();
    let run = doctor(&roots(&[CONDA, DRIVER]), Some(&display(&amd64)), &[]);
    let f = &the(&run.report, "driver_too_old", |_| true);
    assert_eq!(f["severity"], "error", "{f}");
    assert_eq!(f["library"], "libcudart");
    assert_eq!(text(f, "installation"), display(&fixture(CONDA)));
    let message = text(f, "message");
    for part in [
        "CUDA 13.0 runtime",
        "needs a driver for CUDA 13.x (>= 580)",
        "driver 535.261.03 supports CUDA 12.2",
        "(error 35)",
    ] {
        assert!(message.contains(part), "`{part}` not in: {message}");
    }
    assert!(
        text(f, "fix").contains("upgrade the NVIDIA driver to 580 or newer"),
        "{f}"
    );
    // The static verdict and the runtime's own answer are one finding.
    assert!(
        has_line_containing(
            &f["evidence"],
            "cudaGetDeviceCount() = 35 (cudaErrorInsufficientDriver"
        ),
        "{f}"
    );
    assert!(
        has_line(
            &f["evidence"],
            &format!(
                "driver loaded: {}",
                amd64.join("libcuda.so.535.261.03").display()
            )
        ),
        "{f}"
    );
    assert!(
        findings_of(&run.report, "no_driver").is_empty(),
        "{}",
        summary(&run.report)
    );
    let driver = probe_load(&run.report, "libcuda.so.535.261.03");
    assert_eq!(api(driver, "cuDriverGetVersion")["value"], 12020);
    assert_eq!(run.code, 1);
}

#[test]
fn the_cuda_12_9_runtime_on_the_535_driver_is_minor_version_compatibility() {
    let amd64 = amd64_driver_dir();
    let run = doctor(&roots(&[TOOLKIT, DRIVER]), Some(&display(&amd64)), &[]);
    let f = &the(&run.report, "minor_version_compatibility", |_| true);
    assert_eq!(f["severity"], "warning", "{f}");
    assert_eq!(f["library"], "libcudart");
    assert_eq!(text(f, "installation"), display(&fixture(TOOLKIT)));
    let message = text(f, "message");
    for part in [
        "CUDA 12.9 runtime",
        "driver 535.261.03 (CUDA 12.2)",
        "cudaErrorUnsupportedPtxVersion (222)",
    ] {
        assert!(message.contains(part), "`{part}` not in: {message}");
    }
    let note = &the(&run.report, "no_device", |_| true);
    assert_eq!(note["severity"], "info", "{note}");
    assert!(
        has_line_containing(
            &note["evidence"],
            "cudaGetDeviceCount() = 100 (cudaErrorNoDevice"
        ),
        "{note}"
    );
    assert!(findings_of(&run.report, "driver_too_old").is_empty());
    assert!(findings_of(&run.report, "no_driver").is_empty());
    // It works, with limits: not an error. The one error a host may have here is that its
    // NVIDIA kernel module is not loaded (this CI machine's: tests/doctor_build.rs).
    let errors: Vec<&Value> = run.report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] == "error")
        .collect();
    assert!(
        errors.iter().all(|f| f["cause"] == "no_kernel_module"),
        "{}",
        summary(&run.report)
    );
}

// 4. No driver at all.

/// On a host with NVIDIA hardware, an error; on one without (a build container, this CI runner),
/// a note saying there is no GPU here, and no error.
#[test]
fn no_driver_at_all_is_one_no_driver_error_with_the_runtimes_answer() {
    let run = doctor(&roots(&[CU12_VENV]), None, &[]);
    let f = &the(&run.report, "no_driver", |_| true);
    assert_eq!(f["severity"], no_driver_severity(), "{f}");
    assert_eq!(f["missing"], "libcuda.so.1");
    assert_eq!(f["needed_by"], "every CUDA program");
    assert_eq!(f["candidates"], serde_json::json!([]), "no copy anywhere");
    match nvidia_hardware_here() {
        true => assert!(text(f, "fix").contains("install the NVIDIA driver"), "{f}"),
        false => {
            assert!(
                text(f, "message").starts_with("no NVIDIA GPU on this host"),
                "{f}"
            );
            assert!(
                text(f, "fix").starts_with("nothing to do on this host"),
                "{f}"
            );
        }
    }
    let cudart = fixture(VENV_CU12).join("nvidia/cuda_runtime/lib/libcudart.so.12");
    assert!(
        has_line(
            &f["evidence"],
            &format!(
                "{} answered cudaGetDeviceCount with 35 (cudaErrorInsufficientDriver)",
                cudart.display()
            )
        ),
        "{f}"
    );
    // The cuDNN engine that links libcuda.so.1 fails to load for the same reason: evidence here,
    // not a finding of its own.
    assert!(
        has_line_containing(
            &f["evidence"],
            "libcudnn_engines_runtime_compiled.so.9 cannot load without it"
        ),
        "{f}"
    );
    assert!(findings_of(&run.report, "driver_too_old").is_empty());
    assert!(findings_of(&run.report, "missing_dependency").is_empty());
    assert_eq!(
        api(
            probe_load(&run.report, "libcudart.so.12"),
            "cudaGetDeviceCount"
        )["status"],
        35
    );
    let code = if nvidia_hardware_here() { 1 } else { 0 };
    assert_eq!(run.code, code);
}

// 5. Static analysis only.

#[test]
fn no_load_loads_nothing_and_keeps_the_static_findings() {
    let both = roots(&[CUDNN8_VENV, CU12_VENV]);
    let live = doctor(&both, None, &[]);
    let run = doctor(&both, None, &["--no-load"]);
    assert_eq!(run.report["loaded"], false);
    assert_eq!(run.report["probes"], serde_json::json!([]));
    assert_eq!(run.report["gpu"]["source"], "none");
    assert!(text(&run.report["gpu"], "note").contains("--no-load"));
    for missing in ["libcublasLt.so.12", "libcublas.so.12"] {
        let pick =
            |f: &Value| f["missing"] == missing && f["needed_by"] == "libcudnn_ops_infer.so.8";
        let static_only = &the(&run.report, "missing_runtime_dependency", pick);
        let with_loading = &the(&live.report, "missing_runtime_dependency", pick);
        assert_eq!(static_only, with_loading);
    }
    for live_only in [
        "load_failed",
        "load_crashed",
        "load_hung",
        "mixed_installations",
        "no_device",
    ] {
        assert!(
            findings_of(&run.report, live_only).is_empty(),
            "{live_only}"
        );
    }
    // The driver is still missing; only the runtime's answer is not there to quote.
    let none = &the(&run.report, "no_driver", |_| true);
    assert!(
        !has_line_containing(&none["evidence"], "cudaGetDeviceCount"),
        "{none}"
    );
    assert_eq!(run.code, 1);
}

// 6. cuDNN for another CUDA major than the runtime beside it.

/// A pip environment with the real CUDA 11.8 runtime and the real cuDNN 9 for CUDA 12.
fn cuda11_runtime_with_cudnn_for_cuda12() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let site = dir
        .path()
        .canonicalize()
        .expect("canonical tempdir")
        .join("lib/python3.11/site-packages");
    let runtime = site.join("nvidia/cuda_runtime/lib");
    let cudnn = site.join("nvidia/cudnn/lib");
    fs::create_dir_all(&runtime).expect("mkdir");
    fs::create_dir_all(&cudnn).expect("mkdir");
    symlink(
        fixture(&format!(
            "{VENV_CU11}/nvidia/cuda_runtime/lib/libcudart.so.11.0"
        )),
        runtime.join("libcudart.so.11.0"),
    )
    .expect("symlink cudart");
    let cudnn12 = fixture(&format!("{VENV_CU12}/nvidia/cudnn/lib"));
    for entry in fs::read_dir(&cudnn12).expect("read cuDNN dir") {
        let entry = entry.expect("entry");
        symlink(entry.path(), cudnn.join(entry.file_name())).expect("symlink cuDNN");
    }
    (dir, site)
}

#[test]
fn cudnn_for_cuda_12_beside_the_cuda_11_runtime_is_a_mismatch() {
    let (dir, site) = cuda11_runtime_with_cudnn_for_cuda12();
    let root = vec![dir.path().to_path_buf()];
    for args in [&[][..], &["--no-load"][..]] {
        let run = doctor(&root, None, args);
        let f = &the(&run.report, "cudnn_cuda_mismatch", |_| true);
        assert_eq!(f["severity"], "error", "{f}");
        assert_eq!(text(f, "installation"), display(&site));
        assert!(text(f, "library").starts_with("libcudnn"), "{f}");
        assert!(
            text(f, "message")
                .contains("was built for CUDA 12, but the CUDA runtime beside it is CUDA 11"),
            "{f}"
        );
        assert!(text(f, "fix").contains("nvidia-cudnn-cu11"), "{f}");
        // Live: cuDNN's own answer; static: the CUDA 12 names it opens.
        let shown = if args.is_empty() {
            has_line(&f["evidence"], "cudnnGetCudartVersion() = 12090")
        } else {
            strings(&f["evidence"])
                .iter()
                .any(|l| l.starts_with("opens ") && l.ends_with(".so.12"))
        };
        assert!(shown, "{args:?}: {f}");
        assert_eq!(run.code, 1);
    }
}

// 7. GPU code against a target GPU.

/// The arch cases below rest on what the fatbins hold (checked against `cuobjdump --list-elf`
/// and `--list-ptx`).
#[test]
fn fixture_fatbins_hold_what_the_target_cases_assume() {
    let run = doctor(&roots(&[CU11_VENV, CU12_VENV]), None, &["--no-load"]);
    let cu11 = fixture(VENV_CU11);
    let cu12 = fixture(VENV_CU12);
    let ops8 = library(&run.report, &cu11, "libcudnn_ops_infer.so.8");
    assert_eq!(
        strings(&ops8["sass"]),
        ["sm_50", "sm_60", "sm_61", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]
    );
    assert_eq!(strings(&ops8["ptx"]), ["compute_90"]);
    let ops9 = library(&run.report, &cu12, "libcudnn_ops.so.9");
    assert_eq!(
        strings(&ops9["sass"]),
        ["sm_75", "sm_80", "sm_90a", "sm_100", "sm_120"]
    );
    assert_eq!(strings(&ops9["ptx"]), ["compute_120f"]);
    let cublas11 = library(&run.report, &cu11, "libcublas.so.11");
    assert_eq!(strings(&cublas11["sass"])[0], "sm_35");
    let cublas12 = library(&run.report, &cu12, "libcublas.so.12");
    assert_eq!(strings(&cublas12["sass"])[0], "sm_50");
    assert!(strings(&cublas12["sass"]).contains(&"sm_120".to_string()));
}

#[rstest]
#[case("sm_90")]
#[case("9.0")]
fn sm_90_has_sass_in_every_fixture_library(#[case] target: &str) {
    let run = doctor(
        &roots(&[CU11_VENV, CU12_VENV]),
        None,
        &["--no-load", "--target", target],
    );
    assert_eq!(run.report["gpu"]["source"], "target");
    assert_eq!(run.report["gpu"]["devices"][0]["compute_capability"], "9.0");
    // cuDNN 9's sm_90a SASS runs on a 9.0 device.
    assert!(
        findings_of(&run.report, "ptx_jit_only").is_empty(),
        "{}",
        summary(&run.report)
    );
    assert!(
        findings_of(&run.report, "no_kernels_for_gpu").is_empty(),
        "{}",
        summary(&run.report)
    );
}

#[test]
fn sm_120_runs_cudnn_8_only_through_the_ptx_jit() {
    let run = doctor(
        &roots(&[CU11_VENV, CU12_VENV]),
        None,
        &["--no-load", "--target", "sm_120"],
    );
    let f = &the(&run.report, "ptx_jit_only", |f| {
        f["library"] == "libcudnn_ops_infer.so.8"
    });
    assert_eq!(f["severity"], "warning");
    assert_eq!(text(f, "installation"), display(&fixture(VENV_CU11)));
    let message = text(f, "message");
    assert!(message.contains("no SASS for sm_120"), "{message}");
    assert!(message.contains("compute_90"), "{message}");
    assert!(message.contains("JIT-compiles"), "{message}");
    // Every CUDA 11 library with GPU code is JIT-only there; no CUDA 12 one is.
    let jit: Vec<String> = findings_of(&run.report, "ptx_jit_only")
        .iter()
        .map(|f| text(f, "installation").to_string())
        .collect();
    assert_eq!(jit.len(), 8, "{}", summary(&run.report));
    assert!(jit.iter().all(|i| *i == display(&fixture(VENV_CU11))));
    assert!(findings_of(&run.report, "no_kernels_for_gpu").is_empty());
}

#[test]
fn sm_35_has_no_kernels_in_cudnn_9_or_cublas_12_but_cublas_11_has_sass() {
    let run = doctor(
        &roots(&[CU11_VENV, CU12_VENV]),
        None,
        &["--no-load", "--target", "sm_35"],
    );
    let f = &the(&run.report, "no_kernels_for_gpu", |f| {
        f["library"] == "libcudnn_ops.so.9"
    });
    assert_eq!(f["severity"], "error");
    let message = text(f, "message");
    assert!(message.contains("no kernels for sm_35"), "{message}");
    assert!(
        message.contains("SASS sm_75 sm_80 sm_90a sm_100 sm_120"),
        "{message}"
    );
    assert!(message.contains("PTX compute_120f"), "{message}");
    assert!(text(f, "fix").contains("sm_35"), "{f}");
    the(&run.report, "no_kernels_for_gpu", |f| {
        f["library"] == "libcublas.so.12"
    });
    the(&run.report, "no_kernels_for_gpu", |f| {
        f["library"] == "libcudnn_ops_infer.so.8"
    });
    for library in ["libcublas.so.11", "libcublasLt.so.11"] {
        assert!(
            findings_of(&run.report, "no_kernels_for_gpu")
                .iter()
                .all(|f| f["library"] != library),
            "{library} has SASS for sm_35:\n{}",
            summary(&run.report)
        );
    }
    assert!(findings_of(&run.report, "ptx_jit_only").is_empty());
    assert_eq!(run.code, 1);
}

/// What the first real GPU host (an H100, CUDA 13) showed wrong: doctor and check called
/// cuFFT and cuFFTW kernel-less on sm_90 while cuFFT's own check passed there. cuFFT keeps its
/// ~24,000 fatbinary containers in `.ldata` (NVIDIA's cuobjdump lists only the one in
/// `.nv_fatbin` too); cuFFTW's only GPU code is one cubin without a kernel. On sm_35, which
/// neither serves, cuFFT still gets the finding: the reading is fixed, not switched off.
#[test]
fn cufft_13_s_kernels_in_ldata_count_and_cufftw_s_kernel_free_cubin_is_no_finding() {
    let venv = build_fixtures().join("venv-cufft-cu13");
    let run = doctor(
        std::slice::from_ref(&venv),
        None,
        &["--no-load", "--target", "sm_90"],
    );
    let all = all_libraries(&run.report);
    let named = |soname: &str| {
        *all.iter()
            .find(|l| l["soname"] == soname)
            .unwrap_or_else(|| panic!("no {soname} in {}", venv.display()))
    };
    let cufft = named("libcufft.so.12");
    assert_eq!(
        strings(&cufft["sass"]),
        ["sm_75", "sm_80", "sm_86", "sm_87", "sm_89", "sm_90", "sm_100", "sm_110", "sm_120"]
    );
    assert_eq!(cufft["kernel_free"], Value::Null, "{cufft}");
    let cufftw = named("libcufftw.so.12");
    assert_eq!(strings(&cufftw["sass"]), ["sm_75"]);
    assert_eq!(cufftw["kernel_free"], true);
    for cause in ["no_kernels_for_gpu", "ptx_jit_only"] {
        assert!(
            findings_of(&run.report, cause).is_empty(),
            "{}",
            summary(&run.report)
        );
    }
    let old = doctor(&[venv], None, &["--no-load", "--target", "sm_35"]);
    let f = the(&old.report, "no_kernels_for_gpu", |_| true);
    assert_eq!(f["library"], "libcufft.so.12", "{}", summary(&old.report));
}

/// A library built for another machine (the aarch64 CUDA runtime, as in Nsight Compute's
/// `target/linux-desktop-t210-a64` on the first real GPU host): glibc answers "No such file or
/// directory" when asked to load it, which doctor reported as a missing dependency. It is
/// listed with its machine and never loaded; its installation's `foreign_architecture` says
/// why (tests/foreign_architecture.rs).
#[test]
fn a_library_of_another_machine_is_listed_and_never_loaded() {
    let venv = build_fixtures().join("venv-aarch64-cu12");
    let run = doctor(std::slice::from_ref(&venv), None, &[]);
    let all = all_libraries(&run.report);
    let cudart = all
        .iter()
        .find(|l| l["soname"] == "libcudart.so.12")
        .unwrap_or_else(|| panic!("no libcudart.so.12 in {}", venv.display()));
    assert_eq!(cudart["machine"], "aarch64");
    // This host has no driver (`no_driver`, for every program): nothing but its machine is
    // said of cudart.
    let about_it: Vec<&Value> = (run.report["findings"].as_array().expect("findings").iter())
        .filter(|f| f["cause"] != "foreign_architecture")
        .filter(|f| f["library"] == "libcudart.so.12" || f["cause"] == "missing_dependency")
        .collect();
    assert!(about_it.is_empty(), "{}", summary(&run.report));
    let loads: Vec<&Value> = (run.report["probes"].as_array().expect("probes").iter())
        .flat_map(|p| p["loads"].as_array().into_iter().flatten())
        .collect();
    assert!(loads.is_empty(), "{loads:#?}");
}

#[rstest]
#[case("nonsense")]
#[case("sm_")]
#[case("99")]
#[case("")]
fn a_bad_target_exits_2_and_says_what_to_give(#[case] target: &str) {
    let output = doctor_output(
        &roots(&[CU12_VENV]),
        None,
        &[],
        &["--no-load", "--target", target],
    );
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty(), "no report on a usage error");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.starts_with(&format!(
            "error: --target {target}: give a GPU architecture such as sm_90"
        )),
        "{stderr}"
    );
}

// 8. Search-path hygiene.

/// A world-writable entry: run as root (as CI runs), the trust rule's error; run as an ordinary
/// user, the hygiene warning (`tests/trust_cli.rs` shows both with trees of other users).
#[test]
fn empty_and_relative_entries_are_warnings_and_a_world_writable_one_an_error_for_root() {
    let open = tempfile::tempdir().expect("temporary directory");
    let open_dir = open.path().canonicalize().expect("canonical");
    fs::set_permissions(&open_dir, fs::Permissions::from_mode(0o777)).expect("chmod 777");
    let value = format!(":/x:lib:{}", open_dir.display());
    let run = doctor(&roots(&[CU12_VENV]), Some(&value), &["--no-load"]);
    let clean = format!("export LD_LIBRARY_PATH=/x:{}", open_dir.display());
    let empty = &the(&run.report, "empty_search_path_entry", |_| true);
    assert!(
        text(empty, "message").contains("current directory"),
        "{empty}"
    );
    assert_eq!(text(empty, "fix"), clean);
    let relative = &the(&run.report, "relative_search_path_entry", |_| true);
    assert!(
        text(relative, "message").contains("`lib` is relative"),
        "{relative}"
    );
    assert_eq!(text(relative, "fix"), clean);
    for f in [empty, relative] {
        assert_eq!(f["severity"], "warning", "{f}");
    }
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let (present, absent, severity, fix) = match root {
        true => (
            "untrusted_search_path",
            "world_writable_search_path",
            "error",
            format!("chmod go-w {}", open_dir.display()),
        ),
        false => (
            "world_writable_search_path",
            "untrusted_search_path",
            "warning",
            format!("chmod o-w {}", open_dir.display()),
        ),
    };
    assert!(findings_of(&run.report, absent).is_empty(), "{absent}");
    let open_entry = &the(&run.report, present, |_| true);
    let message = text(open_entry, "message");
    let expected = match root {
        true => format!(
            "{} on LD_LIBRARY_PATH: {} can be written by every user",
            open_dir.display(),
            open_dir.display()
        ),
        false => format!(
            "{} on LD_LIBRARY_PATH is world-writable",
            open_dir.display()
        ),
    };
    assert!(message.starts_with(&expected), "{open_entry}");
    assert_eq!(text(open_entry, "fix"), fix);
    assert_eq!(open_entry["severity"], severity, "{open_entry}");
    for f in [empty, relative, open_entry] {
        assert!(
            has_line(&f["evidence"], &format!("LD_LIBRARY_PATH={value}")),
            "{f}"
        );
    }
}

#[rstest]
#[case("/x:")]
#[case("/x::/y")]
#[case(":")]
fn every_empty_entry_form_is_seen(#[case] value: &str) {
    let run = doctor(&roots(&[CU12_VENV]), Some(value), &["--no-load"]);
    assert_eq!(
        findings_of(&run.report, "empty_search_path_entry").len(),
        1,
        "{}",
        summary(&run.report)
    );
}

#[test]
fn a_clean_search_path_has_no_hygiene_findings() {
    let clean = tempfile::tempdir().expect("temporary directory");
    fs::set_permissions(clean.path(), fs::Permissions::from_mode(0o755)).expect("chmod 755");
    for value in [display(clean.path()), String::new()] {
        let run = doctor(&roots(&[CU12_VENV]), Some(&value), &["--no-load"]);
        for cause in [
            "empty_search_path_entry",
            "relative_search_path_entry",
            "world_writable_search_path",
        ] {
            assert!(
                findings_of(&run.report, cause).is_empty(),
                "{value:?}: {cause}"
            );
        }
    }
}

// 9. Shadowing.

#[test]
fn the_toolkit_on_ld_library_path_shadows_the_venvs_own_cublaslt() {
    let toolkit_lib = fixture(TOOLKIT_LIB);
    let venv = fixture(VENV_CU12);
    let run = doctor(
        &roots(&[CU12_VENV, TOOLKIT]),
        Some(&display(&toolkit_lib)),
        &[],
    );
    let f = &the(&run.report, "shadowed", |f| {
        f["library"] == "libcudnn_adv.so.9" && f["missing"] == "libcublasLt.so.12"
    });
    assert_eq!(f["severity"], "warning", "{f}");
    assert_eq!(text(f, "installation"), display(&venv));
    assert_eq!(f["needed_by"], "libcudnn_adv.so.9");
    assert!(
        text(f, "message").contains(&format!(
            "gets libcublasLt.so.12 from {} (via LD_LIBRARY_PATH), not its installation's own copy",
            toolkit_lib.join("libcublasLt.so.12").display()
        )),
        "{f}"
    );
    assert_eq!(
        strings(&f["candidates"]),
        vec![display(&venv.join("nvidia/cublas/lib/libcublasLt.so.12"))]
    );
    assert!(
        text(f, "fix").starts_with(&format!(
            "take {} off LD_LIBRARY_PATH",
            toolkit_lib.display()
        )),
        "{f}"
    );
    // The live load shows the same: the venv's cuBLAS mapped the toolkit's cuBLASLt.
    let mixed = &the(&run.report, "mixed_installations", |f| {
        f["library"] == "libcublas.so.12"
    });
    assert_eq!(text(mixed, "installation"), display(&venv));
    assert!(
        has_line(
            &mixed["evidence"],
            &format!(
                "{} from {}",
                toolkit_lib.join("libcublasLt.so.12.9.1.4").display(),
                fixture(TOOLKIT).display()
            )
        ),
        "{mixed}"
    );
    // The host-wide view: a program that brings nothing gets the toolkit's copy.
    let host = &the(&run.report, "shadowed", |f| {
        f["library"] == "libcublasLt.so.12" && f["installation"].is_null()
    });
    assert!(
        has_line_containing(&host["evidence"], "<- loaded"),
        "{host}"
    );
    assert_eq!(strings(&host["candidates"]).len(), 2, "{host}");
}

#[test]
fn without_ld_library_path_each_installation_keeps_its_own_copies() {
    let run = doctor(&roots(&[CU12_VENV, TOOLKIT]), None, &["--no-load"]);
    assert!(
        findings_of(&run.report, "shadowed").is_empty(),
        "{}",
        summary(&run.report)
    );
}

/// Rule bug (harness/diagnose/shadow.rs): the toolkit's and the venv's `libcudnn.so.9` are one
/// file (hard links to one inode, identical bytes), yet the host-wide `shadowed` finding is a
/// warning because the version strings come from different sources (`9.28.0` from the file name,
/// `9.28.0.42` from the wheel's METADATA; `2025.2.1` vs `12.9.79` for libcupti.so.12). Copies of
/// one release should be a note.
#[test]
fn copies_that_are_one_file_are_not_reported_as_different_versions() {
    let toolkit_lib = fixture(TOOLKIT_LIB);
    let venv_copy = fixture(&format!("{VENV_CU12}/nvidia/cudnn/lib/libcudnn.so.9"));
    let toolkit_copy = toolkit_lib.join("libcudnn.so.9");
    assert_eq!(
        fs::read(&venv_copy).expect("read"),
        fs::read(&toolkit_copy).expect("read"),
        "the premise: the two copies are the same bytes"
    );
    let run = doctor(
        &roots(&[CU12_VENV, TOOLKIT]),
        Some(&display(&toolkit_lib)),
        &["--no-load"],
    );
    for soname in ["libcudnn.so.9", "libcupti.so.12"] {
        let f = &the(&run.report, "shadowed", |f| {
            f["library"] == soname && f["installation"].is_null()
        });
        assert_eq!(f["severity"], "info", "identical copies of {soname}: {f}");
    }
}

/// Rule bug (harness/diagnose/deps.rs `fix_for`): venv-cu12 has `nvidia_cuda_runtime_cu12`
/// installed, and libcupti.so.12's run-time name `libcudart.so` (unversioned; no wheel ships it)
/// gets the fix `pip install nvidia-cuda-runtime-cu12`: installing it again changes nothing.
#[test]
fn no_fix_asks_to_install_a_wheel_that_is_already_installed() {
    let run = doctor(&roots(&[CU12_VENV]), None, &["--no-load"]);
    let site = fixture(VENV_CU12);
    let installed: Vec<String> = fs::read_dir(&site)
        .expect("read site-packages")
        .filter_map(|e| {
            let name = e.ok()?.file_name().to_string_lossy().into_owned();
            let project = name
                .strip_suffix(".dist-info")?
                .split('-')
                .next()?
                .to_string();
            Some(project.replace('_', "-").to_lowercase())
        })
        .collect();
    assert!(
        installed.contains(&"nvidia-cuda-runtime-cu12".to_string()),
        "{installed:?}"
    );
    for f in run.report["findings"].as_array().expect("findings") {
        if let Some(package) = text(f, "fix").strip_prefix("pip install ") {
            let package = package.split_whitespace().next().unwrap_or_default();
            assert!(
                !installed.contains(&package.to_lowercase()),
                "the fix installs {package}, which {} already has: {f}",
                site.display()
            );
        }
    }
}

// 10. Formats.

#[test]
fn csv_has_one_row_per_finding_under_a_fixed_header() {
    let both = roots(&[CUDNN8_VENV, CU12_VENV]);
    let json = doctor(&both, None, &["--no-load"]);
    let output = doctor_output(&both, None, &[], &["--no-load", "--format", "csv"]);
    assert_eq!(output.status.code(), Some(1));
    let mut reader = csv::Reader::from_reader(output.stdout.as_slice());
    let header: Vec<String> = reader
        .headers()
        .expect("header")
        .iter()
        .map(String::from)
        .collect();
    assert_eq!(
        header,
        [
            "severity",
            "cause",
            "library",
            "path",
            "installation",
            "missing",
            "needed_by",
            "candidates",
            "message",
            "fix",
            "evidence"
        ]
    );
    let rows: Vec<csv::StringRecord> = reader.records().map(|r| r.expect("row")).collect();
    // One row per failure: a folded finding's rows follow the finding's own.
    let findings: Vec<Value> = json.report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .flat_map(|f| findings_of(&serde_json::json!({ "findings": [f] }), text(f, "cause")))
        .collect();
    assert!(findings.len() > json.report["findings"].as_array().unwrap().len());
    assert_eq!(rows.len(), findings.len());
    for (row, f) in rows.iter().zip(&findings) {
        assert_eq!(&row[0], text(f, "severity"));
        assert_eq!(&row[1], text(f, "cause"));
        assert_eq!(&row[2], text(f, "library"));
        assert_eq!(&row[5], text(f, "missing"));
        assert_eq!(&row[9], text(f, "fix"));
    }
    assert!(rows.iter().any(|r| &r[1] == "missing_runtime_dependency"
        && &r[5] == "libcublasLt.so.12"
        && r[7].contains("venv-cu12")));
}

#[test]
fn markdown_has_a_findings_table() {
    let both = roots(&[CUDNN8_VENV, CU12_VENV]);
    let json = doctor(&both, None, &["--no-load"]);
    let output = doctor_output(&both, None, &[], &["--no-load", "--format", "markdown"]);
    assert_eq!(output.status.code(), Some(1));
    let text_out = String::from_utf8(output.stdout).expect("UTF-8");
    assert!(text_out.starts_with("# stackbench doctor\n"), "{text_out}");
    let table = text_out
        .split("## Findings")
        .nth(1)
        .expect("a Findings section");
    assert!(
        table.contains("| severity | cause | library | what | fix |"),
        "{text_out}"
    );
    assert!(
        table.contains("| error | `missing_runtime_dependency` | libcudnn_ops_infer.so.8 |"),
        "{text_out}"
    );
    for severity in ["error", "warning", "info"] {
        let rows = table
            .lines()
            .take_while(|l| !l.starts_with("## "))
            .filter(|l| l.starts_with(&format!("| {severity} |")))
            .count();
        let expected = json.report["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .filter(|f| f["severity"] == severity)
            .count();
        assert_eq!(rows, expected, "{severity} rows");
    }
}

#[test]
fn terminal_prints_errors_before_warnings_with_their_fixes() {
    let both = roots(&[CUDNN8_VENV, CU12_VENV]);
    let output = doctor_output(&both, None, &[("NO_COLOR", "1")], &["--no-load"]);
    assert_eq!(output.status.code(), Some(1));
    let out = String::from_utf8(output.stdout).expect("UTF-8");
    assert!(!out.contains('\u{1b}'), "NO_COLOR: no escapes\n{out}");
    assert!(out.starts_with("stackbench doctor: "), "{out}");
    let lines: Vec<&str> = out.lines().collect();
    let errors = lines
        .iter()
        .position(|l| *l == "errors")
        .expect("an errors heading");
    // Below errors, warnings say what and what to do; --verbose shows their evidence.
    let warnings = lines
        .iter()
        .position(|l| *l == "warnings  (evidence: -v)")
        .expect("a warnings heading");
    assert!(errors < warnings, "{out}");
    assert!(
        !lines[warnings..]
            .iter()
            .any(|l| l.trim_start().starts_with("seen:")),
        "{out}"
    );
    let fix = lines
        .iter()
        .position(|l| {
            l.trim_start()
                .starts_with("fix: pip install nvidia-cublas-cu12")
        })
        .expect("the cuBLAS fix");
    assert!(errors < fix && fix < warnings, "{out}");
    // The root cause first: no driver at all, where there is NVIDIA hardware; else a note.
    let no_driver = lines
        .iter()
        .position(|l| l.trim_start().starts_with("no_driver "))
        .expect("no_driver");
    match nvidia_hardware_here() {
        true => assert_eq!(no_driver, errors + 1, "{out}"),
        false => assert!(no_driver > warnings, "a note, after the warnings: {out}"),
    }
    // cuBLAS 12's two halves, missed by one library with one fix, are one finding.
    let cublas = errors
        + lines[errors..warnings]
            .iter()
            .position(|l| l.trim_start().starts_with("missing_runtime_dependency"))
            .expect("a missing dependency among the errors");
    let first = lines[cublas];
    assert!(
        first.trim_start().starts_with(
            "missing_runtime_dependency libcudnn_ops_infer.so.8 opens libcublas.so.12"
        ),
        "{out}"
    );
    assert!(
        lines[cublas..fix]
            .iter()
            .any(|l| l.trim_start() == "also missing: libcublasLt.so.12"),
        "{out}"
    );
    // Two evidence lines per finding without --verbose.
    let seen = lines[cublas..fix]
        .iter()
        .filter(|l| l.trim_start().starts_with("seen:"))
        .count();
    assert_eq!(seen, 2, "{out}");
}

#[test]
fn colour_is_for_terminals_or_when_asked() {
    let root = roots(&[CU12_VENV]);
    // Not a terminal: plain.
    let piped = doctor_output(&root, None, &[], &["--no-load"]);
    assert!(!String::from_utf8_lossy(&piped.stdout).contains('\u{1b}'));
    let asked = doctor_output(&root, None, &[], &["--no-load", "--color", "always"]);
    assert!(String::from_utf8_lossy(&asked.stdout).contains("\u{1b}["));
}

#[test]
fn output_file_gets_the_report_and_stdout_stays_empty() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let file = dir.path().join("doctor.json");
    let output = doctor_output(
        &roots(&[CU12_VENV]),
        None,
        &[],
        &[
            "--no-load",
            "--format",
            "json",
            "--output",
            file.to_str().expect("UTF-8 path"),
        ],
    );
    // The missing driver is the run's one error where there is NVIDIA hardware.
    let code = if nvidia_hardware_here() { 1 } else { 0 };
    assert_eq!(output.status.code(), Some(code));
    assert!(output.stdout.is_empty());
    let report = doctor_report(&fs::read(&file).expect("the report file"));
    assert_eq!(findings_of(&report, "no_driver").len(), 1);
}

/// Rule bug (harness/diagnose/load.rs `failed`): with only the i386 libcuda.so.1 on
/// LD_LIBRARY_PATH, cuDNN 9's engine library (DT_NEEDED libcuda.so.1) fails to load with
/// "libcuda.so.1: wrong ELF class: ELFCLASS32". The finding names no `missing` library, offers no
/// candidate and says "use the copy built for this machine's word size", which reads as if
/// libcudnn_engines_runtime_compiled.so.9 were the 32-bit file. The loader's message names the
/// wrong-class file; it is the missing dependency, and the 64-bit copy is the candidate.
#[test]
fn a_dependency_of_the_wrong_class_is_named_as_the_missing_library() {
    let i386 = i386_driver_dir();
    let amd64 = amd64_driver_dir();
    let run = doctor(&roots(&[DRIVER, CU12_VENV]), Some(&display(&i386)), &[]);
    for f in findings_of(&run.report, "wrong_elf_class") {
        assert_eq!(f["missing"], "libcuda.so.1", "{f}");
        assert!(
            strings(&f["candidates"]).contains(&display(&amd64.join("libcuda.so.1"))),
            "{f}"
        );
    }
}

/// On a GPU host (driver installed, a device present): NVML sees the device, the driver is
/// found, and no runtime on the host's own search path is told there is no device.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn doctor_on_a_gpu_host_sees_the_device_and_the_driver() {
    let output = assert_cmd::Command::new(stackbench_bin())
        .args(["doctor", "--format", "json"])
        .output()
        .expect("doctor runs");
    let report = doctor_report(&output.stdout);
    assert_eq!(report["gpu"]["source"], "nvml", "{}", report["gpu"]);
    let devices = report["gpu"]["devices"].as_array().expect("devices");
    assert!(
        !devices.is_empty(),
        "NVML found no device: {}",
        report["gpu"]
    );
    assert!(
        findings_of(&report, "no_driver").is_empty(),
        "{}",
        summary(&report)
    );
    assert!(
        findings_of(&report, "no_device").is_empty(),
        "{}",
        summary(&report)
    );
}

/// `cargo run -- doctor` (the README's main command) puts the target directory and the Rust
/// toolchain on LD_LIBRARY_PATH; the report leaves them out and says so.
#[test]
fn under_cargo_run_the_search_path_cargo_added_is_left_out() {
    let bin = stackbench_bin();
    let exe_dir = bin.parent().unwrap().display().to_string();
    let toolchain = "/nonexistent/rustup/toolchains/stable-x86_64-unknown-linux-gnu";
    let user = fixture(TOOLKIT_LIB).display().to_string();
    let search = format!(
        "{exe_dir}:{exe_dir}/deps:{toolchain}/lib/rustlib/x86_64-unknown-linux-gnu/lib:{toolchain}/lib:{user}"
    );
    let env = [
        ("CARGO", format!("{toolchain}/bin/cargo")),
        ("CARGO_MANIFEST_DIR", "/nonexistent/stackbench".to_owned()),
    ];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let roots = roots(&[VENV_CU12]);
    let json = doctor_output(
        &roots,
        Some(&search),
        &env,
        &["--no-load", "--format", "json"],
    );
    let report = doctor_report(&json.stdout);
    let dropped = strings(&report["cargo_search_path"]);
    assert_eq!(dropped.len(), 4, "{dropped:?}");
    assert!(
        dropped.iter().all(|d| !d.contains("cuda-12.9")),
        "{dropped:?}"
    );
    let findings = report["findings"].to_string();
    assert!(!findings.contains(&exe_dir), "{findings}");
    assert!(!findings.contains(toolchain), "{findings}");
    let terminal = doctor_output(&roots, Some(&search), &env, &["--no-load"]);
    let text = String::from_utf8_lossy(&terminal.stdout);
    assert!(
        text.lines()
            .nth(1)
            .is_some_and(|l| l.starts_with("Run by cargo: left out of LD_LIBRARY_PATH")),
        "{text}"
    );
}

/// The terminal report as a host with the NVIDIA kernel module loaded prints it. On a host
/// without one (this CI machine) the first error says so, `no_kernel_module` (tests/doctor_build.rs
/// tests it); the rest of the report is the same either way.
fn as_with_the_kernel_module(out: &str) -> String {
    let lines: Vec<&str> = out.lines().collect();
    let Some(start) = lines
        .iter()
        .position(|l| l.starts_with("  no_kernel_module "))
    else {
        return out.to_owned();
    };
    let end = lines[start + 1..]
        .iter()
        .position(|l| !l.starts_with("    "))
        .map_or(lines.len(), |n| start + 1 + n);
    let (count, rest) = lines[0]
        .strip_prefix("stackbench doctor: ")
        .and_then(|r| r.split_once(' '))
        .expect("the headline");
    let count: usize = count.parse().expect("an error count");
    let rest = rest
        .trim_start_matches("errors")
        .trim_start_matches("error");
    let headline = match count - 1 {
        0 => format!("stackbench doctor: no errors{rest}"),
        1 => format!("stackbench doctor: 1 error{rest}"),
        n => format!("stackbench doctor: {n} errors{rest}"),
    };
    let kept = std::iter::once(headline.as_str())
        .chain(lines[1..start].iter().copied())
        .chain(lines[end..].iter().copied());
    kept.map(|l| format!("{l}\n")).collect()
}

/// The report a new user gets on a pip environment with cuDNN 8 for CUDA 12 beside CUDA 11's
/// cuBLAS, on a host with a driver: one screen (under 40 lines at 100 columns, for a checkout
/// at a path of 21 characters), the cuBLAS 12 finding first among the errors.
#[test]
fn the_broken_cudnn_report_fits_on_one_screen_with_cublas_12_first() {
    let output = doctor_output(
        &roots(&[CUDNN8_VENV]),
        Some(&display(&amd64_driver_dir())),
        &[("NO_COLOR", "1")],
        &["--target", "sm_90"],
    );
    assert_eq!(output.status.code(), Some(1));
    let out = String::from_utf8(output.stdout).expect("UTF-8");
    let checkout = display(&toolkits());
    let out = out.replace(&checkout, "/home/user/stackbench/.toolkits");
    let screen_lines = screen_lines(&out);
    assert!(
        screen_lines < 40,
        "{screen_lines} lines at 100 columns:\n{out}"
    );
    let out = as_with_the_kernel_module(&out);
    let lines: Vec<&str> = out.lines().collect();
    let errors = lines.iter().position(|l| *l == "errors").expect("errors");
    assert!(
        lines[errors + 1].trim_start().starts_with(
            "missing_runtime_dependency libcudnn_ops_infer.so.8 opens libcublas.so.12"
        ),
        "{out}"
    );
    insta::assert_snapshot!("broken_cudnn_terminal", out);
}

/// `--verbose` shows every evidence line and each installation's library table.
#[test]
fn verbose_shows_all_evidence_and_the_library_tables() {
    let args = |verbose: bool| {
        let mut args = vec!["--target", "sm_90", "--no-load"];
        if verbose {
            args.push("--verbose");
        }
        let output = doctor_output(&roots(&[CUDNN8_VENV]), None, &[("NO_COLOR", "1")], &args);
        String::from_utf8(output.stdout).expect("UTF-8")
    };
    let (short, long) = (args(false), args(true));
    let seen = |out: &str| {
        out.lines()
            .filter(|l| l.trim_start().starts_with("seen:"))
            .count()
    };
    assert!(short.contains("more: -v)"), "{short}");
    assert!(!long.contains("more: -v)"), "{long}");
    assert!(seen(&long) > seen(&short) + 10, "{long}");
    assert!(!short.contains("opens at run time:"), "{short}");
    assert!(
        long.contains("opens at run time: libcublas.so.12"),
        "{long}"
    );
}

/// A copy of the real CUDA 12 runtime and CUPTI wheels' environment (their files, METADATA and
/// RECORD), the runtime's wheel damaged: its library deleted, a header shortened, and a header
/// changed in place at its size; with its site-packages.
fn damaged_runtime_venv() -> (tempfile::TempDir, PathBuf) {
    let source = fixture(VENV_CU12);
    let dir = tempfile::tempdir().expect("temporary directory");
    let site = dir.path().join("lib/python3.11/site-packages");
    let copy = |relative: &Path| {
        let (from, to) = (source.join(relative), site.join(relative));
        fs::create_dir_all(to.parent().unwrap()).unwrap();
        fs::copy(&from, &to).unwrap_or_else(|e| panic!("{}: {e}", from.display()));
    };
    for wheel in ["nvidia_cuda_runtime_cu12-", "nvidia_cuda_cupti_cu12-"] {
        let dist_info = fs::read_dir(&source)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .find(|n| n.to_string_lossy().starts_with(wheel))
            .unwrap_or_else(|| panic!("no {wheel}*.dist-info"));
        let record = fs::read_to_string(source.join(&dist_info).join("RECORD")).unwrap();
        for file in record.lines().filter_map(|l| l.split(',').next()) {
            if source.join(file).is_file() {
                copy(Path::new(file));
            }
        }
    }
    let runtime = site.join("nvidia/cuda_runtime");
    fs::remove_file(runtime.join("lib/libcudart.so.12")).unwrap();
    fs::write(runtime.join("include/cuComplex.h"), "/* cut short */\n").unwrap();
    let same_size = runtime.join("include/builtin_types.h");
    let mut bytes = fs::read(&same_size).unwrap();
    bytes[0] ^= 0x20;
    fs::write(&same_size, bytes).unwrap();
    (dir, site)
}

#[test]
fn a_damaged_wheel_is_named_with_its_reinstall_and_hashes_only_when_asked() {
    let (_dir, venv) = damaged_runtime_venv();
    let run = doctor(std::slice::from_ref(&venv), None, &["--no-load"]);
    let f = &the(&run.report, "damaged_installation", |_| true);
    assert_eq!(f["severity"], "error", "a library is gone: {f}");
    assert_eq!(f["library"], "libcudart.so.12");
    let message = text(f, "message");
    assert!(
        message
            == "nvidia-cuda-runtime-cu12 12.9.79 is damaged: 1 of its libraries is missing and 1 other file is changed",
        "{message}"
    );
    assert!(
        text(f, "fix").starts_with(
            "pip install --force-reinstall --no-deps nvidia-cuda-runtime-cu12==12.9.79"
        ),
        "{f}"
    );
    let evidence = strings(&f["evidence"]);
    let runtime = venv.join("nvidia/cuda_runtime");
    assert!(
        evidence.contains(&format!(
            "{}: in RECORD, missing",
            runtime.join("lib/libcudart.so.12").display()
        )),
        "{evidence:?}"
    );
    let header = runtime.join("include/cuComplex.h");
    assert!(
        evidence
            .iter()
            .any(|e| e.starts_with(&format!("{}: 16 bytes, RECORD says", header.display()))),
        "{evidence:?}"
    );
    assert!(
        !evidence.iter().any(|e| e.contains("builtin_types.h")),
        "{evidence:?}"
    );

    let hashed = doctor(&[venv], None, &["--no-load", "--verify-hashes"]);
    let f = &the(&hashed.report, "damaged_installation", |_| true);
    assert!(
        strings(&f["evidence"]).contains(&format!(
            "{}: SHA-256 differs from RECORD's",
            runtime.join("include/builtin_types.h").display()
        )),
        "{f}"
    );
    assert!(
        text(f, "message").ends_with("is missing and 2 other files are changed"),
        "{f}"
    );
}

#[test]
fn an_intact_wheel_environment_is_not_damaged_even_with_hashes_checked() {
    let run = doctor(
        &roots(&[CU12_VENV]),
        None,
        &["--no-load", "--verify-hashes"],
    );
    assert!(
        findings_of(&run.report, "damaged_installation").is_empty(),
        "{}",
        summary(&run.report)
    );
}

/// The five libraries of the cuDNN 8.9.2 wheel for CUDA 12 that [`cudnn_venv_missing_five`]
/// takes away: only `libcudnn.so.8` and `libcudnn_ops_infer.so.8` stay.
const GONE: [&str; 5] = [
    "libcudnn_adv_infer.so.8",
    "libcudnn_adv_train.so.8",
    "libcudnn_cnn_infer.so.8",
    "libcudnn_cnn_train.so.8",
    "libcudnn_ops_train.so.8",
];

/// A pip environment of the real cuDNN 8.9.2 wheel for CUDA 12 beside CUDA 11's cuBLAS wheel:
/// every file their RECORDs list, from the fixture (hard links, where the file system allows,
/// as the libraries are 1.8 GB), with their dist-info's METADATA and RECORD, but the five
/// [`GONE`] libraries; with its site-packages.
fn cudnn_venv_missing_five() -> (tempfile::TempDir, PathBuf) {
    let source = fixture(VENV_CUDNN8);
    let dir = tempfile::tempdir().expect("temporary directory");
    let site = dir.path().join("lib/python3.11/site-packages");
    let dist_infos: Vec<PathBuf> = fs::read_dir(&source)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "dist-info"))
        .collect();
    assert_eq!(dist_infos.len(), 2, "cuDNN's and cuBLAS's: {dist_infos:?}");
    for dist_info in dist_infos {
        let record = fs::read_to_string(dist_info.join("RECORD")).unwrap();
        for file in record.lines().filter_map(|l| l.split(',').next()) {
            let (from, to) = (source.join(file), site.join(file));
            if !from.is_file() || GONE.iter().any(|gone| file.ends_with(&format!("/{gone}"))) {
                continue;
            }
            fs::create_dir_all(to.parent().unwrap()).unwrap();
            if fs::hard_link(&from, &to).is_err() {
                fs::copy(&from, &to).unwrap_or_else(|e| panic!("{}: {e}", from.display()));
            }
        }
    }
    let left: Vec<String> = fs::read_dir(site.join("nvidia/cudnn/lib"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".so"))
        .collect();
    assert_eq!(left.len(), 2, "{left:?}");
    (dir, site)
}

/// On a host with no driver, a cuDNN wheel that lost five of its libraries is one finding, the
/// reinstall of that wheel, which holds what libcudnn.so.8 says of each; beside it the one
/// thing a reinstall does not mend, cuBLAS 12; and the report fits on one screen.
#[test]
fn a_cudnn_wheel_missing_libraries_is_one_damaged_wheel_after_no_driver() {
    let (dir, venv) = cudnn_venv_missing_five();
    let run = doctor(std::slice::from_ref(&venv), None, &[]);
    let findings = run.report["findings"].as_array().unwrap();
    let errors: Vec<&Value> = findings
        .iter()
        .filter(|f| f["severity"] == "error")
        .collect();
    let causes: Vec<&str> = errors.iter().map(|f| text(f, "cause")).collect();
    // Root cause first: the driver (where there is NVIDIA hardware: else a note), then the
    // wheel whose damage explains what it folds in.
    let mut expected = vec!["damaged_installation", "missing_runtime_dependency"];
    if nvidia_hardware_here() {
        expected.insert(0, "no_driver");
    }
    assert_eq!(causes, expected, "{}", summary(&run.report));

    let damaged = errors[expected.len() - 2];
    assert_eq!(
        text(damaged, "message"),
        "nvidia-cudnn-cu12 8.9.2.26 is damaged: 5 of its libraries are missing"
    );
    assert_eq!(
        text(damaged, "fix"),
        format!(
            "pip install --force-reinstall --no-deps nvidia-cudnn-cu12==8.9.2.26   (into the environment of {})",
            venv.display()
        )
    );
    for gone in GONE {
        let path = venv.join("nvidia/cudnn/lib").join(gone);
        assert!(
            has_line(
                &damaged["evidence"],
                &format!("{}: in RECORD, missing", path.display())
            ),
            "{damaged}"
        );
    }
    // What libcudnn.so.8 says of each, folded in.
    let folded: Vec<(&str, &str)> = damaged["also"]
        .as_array()
        .expect("folded findings")
        .iter()
        .map(|a| (text(a, "needed_by"), text(a, "missing")))
        .collect();
    assert_eq!(
        folded,
        GONE.map(|gone| ("libcudnn.so.8", gone)),
        "{damaged}"
    );
    // No finding of its own for any of them.
    for f in findings {
        assert!(
            !GONE.contains(&text(f, "missing")),
            "{f}\n{}",
            summary(&run.report)
        );
    }

    let cublas = errors[1..]
        .iter()
        .find(|f| f["cause"] == "missing_runtime_dependency")
        .unwrap();
    assert_eq!(cublas["missing"], "libcublas.so.12");
    assert_eq!(cublas["needed_by"], "libcudnn_ops_infer.so.8");
    assert!(
        text(cublas, "fix").starts_with("pip install nvidia-cublas-cu12   "),
        "{cublas}"
    );

    // At a path as long as a project's venv, under 40 lines at 100 columns.
    let output = doctor_output(std::slice::from_ref(&venv), None, &[("NO_COLOR", "1")], &[]);
    assert_eq!(output.status.code(), Some(1));
    let out = String::from_utf8(output.stdout)
        .expect("UTF-8")
        .replace(&display(dir.path()), "/home/user/project/.venv");
    let screen_lines = screen_lines(&out);
    assert!(
        screen_lines < 40,
        "{screen_lines} lines at 100 columns:\n{out}"
    );
    // Where the host has NVIDIA hardware, the missing driver is the first error.
    match nvidia_hardware_here() {
        true => insta::assert_snapshot!("damaged_cudnn_no_driver_gpu_host_terminal", out),
        false => insta::assert_snapshot!("damaged_cudnn_no_driver_terminal", out),
    }
}

/// (cause, missing) of every finding, folded ones included, about the library `file`.
fn causes_for(report: &Value, file: &str) -> Vec<(String, String)> {
    let causes: std::collections::BTreeSet<String> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| text(f, "cause").to_string())
        .collect();
    let mut found: Vec<(String, String)> = causes
        .iter()
        .flat_map(|cause| findings_of(report, cause))
        .filter(|f| f["library"] == file)
        .map(|f| {
            (
                text(&f, "cause").to_string(),
                text(&f, "missing").to_string(),
            )
        })
        .collect();
    found.sort();
    found
}

#[test]
fn program_on_a_library_says_what_doctor_says_of_it() {
    let venv = fixture(VENV_CUDNN8);
    let ops_infer = venv.join("nvidia/cudnn/lib/libcudnn_ops_infer.so.8");
    let host = doctor(&roots(&[CUDNN8_VENV]), None, &["--no-load"]);
    let program = doctor(
        &roots(&[CUDNN8_VENV]),
        None,
        &["--no-load", "--program", ops_infer.to_str().unwrap()],
    );
    let said = causes_for(&host.report, "libcudnn_ops_infer.so.8");
    assert!(!said.is_empty());
    assert_eq!(causes_for(&program.report, "libcudnn_ops_infer.so.8"), said);
    // Only what concerns the program: nothing about libraries it never gets.
    assert!(
        causes_for(&program.report, "libcublasLt.so.11").is_empty(),
        "{}",
        summary(&program.report)
    );
    let libraries = program.report["program"]["libraries"].as_array().unwrap();
    let get = |name: &str| {
        libraries
            .iter()
            .find(|l| l["name"] == name)
            .unwrap_or_else(|| panic!("{name} in {libraries:?}"))
    };
    assert_eq!(get("libcublas.so.12")["how"], "opens");
    assert!(get("libcublas.so.12")["found"].is_null());
    assert_eq!(get("libc.so.6")["how"], "needed");
    assert_eq!(
        program.report["program"]["installation"],
        display(&venv).as_str()
    );
}

/// A C program the test compiles, linked against the CUDA 12 runtime wheel's libcudart.so.12:
/// with a RUNPATH into the wheel it gets that file; without, `missing_dependency`.
#[test]
fn program_on_an_executable_follows_its_runpath() {
    let lib = fixture(VENV_CU12).join("nvidia/cuda_runtime/lib");
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("main.c");
    fs::write(&source, "int cudaGetDeviceCount(int *);\nint main(void) { int n; return cudaGetDeviceCount(&n); }\n").unwrap();
    let build = |name: &str, runpath: bool| {
        let out = dir.path().join(name);
        let mut cc = std::process::Command::new("cc");
        cc.arg(&source)
            .arg("-o")
            .arg(&out)
            .arg(format!("{}/libcudart.so.12", lib.display()));
        if runpath {
            cc.arg(format!("-Wl,--enable-new-dtags,-rpath,{}", lib.display()));
        }
        let status = cc.status().expect("cc");
        assert!(status.success());
        out
    };
    let (linked, bare) = (build("with-runpath", true), build("bare", false));
    let run = |exe: &Path| {
        doctor(
            &roots(&[CU12_VENV]),
            None,
            &["--no-load", "--program", exe.to_str().unwrap()],
        )
    };

    let good = run(&linked);
    let cudart = &good.report["program"]["libraries"][0];
    assert_eq!(cudart["name"], "libcudart.so.12");
    assert_eq!(cudart["via"], "DT_RUNPATH");
    assert_eq!(text(cudart, "found"), display(&lib.join("libcudart.so.12")));
    assert_eq!(
        cudart["installation"],
        display(&fixture(VENV_CU12)).as_str()
    );
    assert!(
        findings_of(&good.report, "missing_dependency").is_empty(),
        "{}",
        summary(&good.report)
    );

    let bad = run(&bare);
    assert!(bad.report["program"]["libraries"][0]["found"].is_null());
    let f = &the(&bad.report, "missing_dependency", |f| {
        f["missing"] == "libcudart.so.12"
    });
    assert_eq!(f["library"], "bare");
    assert!(
        text(f, "fix").contains(&display(&lib)),
        "a copy is there: {f}"
    );
}

/// The lines `out` takes on a terminal 100 columns wide, long lines wrapping.
fn screen_lines(out: &str) -> usize {
    out.lines()
        .map(|l| l.chars().count().div_ceil(100).max(1))
        .sum()
}

/// A damaged wheel's finding names the framework in its environment that depends on it, read
/// from a real torch wheel's `torch/version.py`.
#[test]
fn a_damaged_wheel_names_the_framework_that_needs_it() {
    let (_dir, venv) = damaged_runtime_venv();
    let torch = common::build_fixtures().join("venv-torch/lib/python3.11/site-packages/torch");
    fs::create_dir_all(venv.join("torch")).unwrap();
    fs::copy(torch.join("version.py"), venv.join("torch/version.py")).unwrap();
    let run = doctor(std::slice::from_ref(&venv), None, &["--no-load"]);
    let f = &the(&run.report, "damaged_installation", |_| true);
    assert!(
        text(f, "message").ends_with("(torch 2.9.1+cu128 in this environment depends on it)"),
        "{f}"
    );
}
