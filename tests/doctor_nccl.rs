//! NCCL in `stackbench doctor`, on the real NCCL wheels of the fixtures (`ci/fetch-toolkits`):
//! `nvidia-nccl-cu12` 2.27.5 in the CUDA 12 venv, `nvidia-nccl-cu13` 2.27.7 in the CUDA 13 conda
//! environment and beside CUDA 12's runtime in `venv-nccl-cu13-cu12`.
//!
//! What the libraries say of themselves was read with `strings` first: CUDA 12's holds
//! `NCCL version 2.27.5+cuda12.9` (and `NCCL version 2.27.5 compiled with CUDA 12.9`) in its
//! `.rodata`, CUDA 13's `NCCL version 2.27.7+cuda13.0`; `ncclGetVersion` answers 22705 and 22707.

mod common;

use common::*;
use serde_json::Value;
use std::path::Path;

/// `doctor --no-system --root <root> --format json [args]`, with LD_LIBRARY_PATH set to the
/// 535 driver's directory or unset; the report and the exit status.
fn doctor(root: &str, with_driver: bool, args: &[&str]) -> (Value, i32) {
    let home = tempfile::tempdir().expect("temporary HOME");
    let mut command = isolated_stackbench(home.path());
    command
        .args([
            "doctor",
            "--no-system",
            "--format",
            "json",
            "--target",
            "sm_90",
            "--root",
        ])
        .arg(fixture(root))
        .args(args);
    if with_driver {
        command.env("LD_LIBRARY_PATH", fixture(DRIVER_AMD64));
    }
    let output = command.output().expect("run stackbench doctor");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "doctor panicked: {stderr}");
    let code = output.status.code().expect("an exit status");
    (doctor_report(&output.stdout), code)
}

/// The one `libnccl.so.2` of the report's inventory.
fn nccl(report: &Value) -> &Value {
    let found: Vec<&Value> = all_libraries(report)
        .into_iter()
        .filter(|l| l["name"] == "nccl")
        .collect();
    assert_eq!(found.len(), 1, "{found:?}");
    found[0]
}

/// The one `nccl_cuda_mismatch` finding.
fn mismatch(report: &Value) -> Value {
    let found = findings_of(report, "nccl_cuda_mismatch");
    assert_eq!(found.len(), 1, "{:#}", report["findings"]);
    found.into_iter().next().expect("one")
}

fn contains_all(text: &str, parts: &[&str]) {
    for part in parts {
        assert!(text.contains(part), "`{part}` not in: {text}");
    }
}

#[test]
fn the_cuda_12_venvs_nccl_has_its_version_and_cuda_loaded_or_not() {
    for (args, loaded) in [(&[][..], true), (&["--no-load"][..], false)] {
        let (report, _) = doctor(VENV_CU12, false, args);
        let library = nccl(&report);
        assert_eq!(library["version"], "2.27.5", "{library}");
        assert_eq!(library["built_for"]["cuda"], "12.9", "{library}");
        assert_eq!(library["built_for"]["version"], "2.27.5");
        assert_eq!(library["built_for"]["said"], "NCCL version 2.27.5+cuda12.9");
        // Built for the runtime beside it, and no driver to judge: nothing to say.
        assert!(findings_of(&report, "nccl_cuda_mismatch").is_empty());
        if loaded {
            let load = probe_load(&report, "libnccl.so.2");
            let call = &load["api"][0];
            assert_eq!(call["function"], "ncclGetVersion", "{load}");
            assert_eq!(
                (call["status"].as_i64(), call["value"].as_i64()),
                (Some(0), Some(22705))
            );
            assert_eq!(call["text"], "2.27.5");
        } else {
            assert!(report["probes"].as_array().unwrap().is_empty());
        }
    }
}

#[test]
fn the_terminal_lists_nccl_with_the_cuda_it_was_built_for() {
    let home = tempfile::tempdir().expect("temporary HOME");
    let root = fixture(VENV_CU12);
    let run = |verbose: bool| {
        let mut command = isolated_stackbench(home.path());
        command
            .env("NO_COLOR", "1")
            .args(["doctor", "--no-system", "--no-load", "--root"])
            .arg(&root);
        if verbose {
            command.arg("-v");
        }
        let output = command.output().expect("run stackbench doctor");
        String::from_utf8(output.stdout).expect("UTF-8")
    };
    let brief = run(false).split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        brief.contains("2.27.5: nccl (built for CUDA 12.9)"),
        "{brief}"
    );
    let verbose = run(true);
    assert!(
        verbose.contains("      built for CUDA 12.9: \"NCCL version 2.27.5+cuda12.9\""),
        "{verbose}"
    );
}

#[test]
fn cuda_13s_nccl_beside_cuda_12s_runtime_is_explained_with_its_fix() {
    let (report, code) = doctor(VENV_NCCL_CU13, true, &[]);
    let f = mismatch(&report);
    assert_eq!(f["severity"], "error", "{f}");
    assert_eq!(f["library"], "libnccl.so.2");
    assert_eq!(f["installation"], display(&fixture(VENV_NCCL_CU13)));
    contains_all(
        f["message"].as_str().unwrap(),
        &[
            "NCCL 2.27.7",
            "was built for CUDA 13.0, a newer major than the CUDA 12.9 runtime beside it",
            "needs a driver for CUDA 13.x (>= 580)",
        ],
    );
    let evidence = strings(&f["evidence"]);
    for line in [
        "libnccl.so.2 says \"NCCL version 2.27.7+cuda13.0\"",
        "ncclGetVersion() = 22707 (2.27.7)",
        "CUDA runtime beside it: CUDA 12.9",
        "driver 535.261.03: CUDA 12.2",
    ] {
        assert!(
            evidence.iter().any(|l| l == line),
            "{line:?} not in {evidence:?}"
        );
    }
    assert_eq!(
        f["fix"],
        format!(
            "pip uninstall -y nvidia-nccl-cu13 && pip install nvidia-nccl-cu12   (into the environment of {})",
            display(&fixture(VENV_NCCL_CU13))
        )
    );
    assert_eq!(code, 1);
}

#[test]
fn cuda_13s_nccl_on_the_535_driver_comes_after_the_driver_and_says_so_without_loading() {
    for args in [&[][..], &["--no-load"][..]] {
        let (report, _) = doctor(CONDA, true, args);
        let library = nccl(&report);
        assert_eq!(
            (
                library["version"].as_str(),
                library["built_for"]["cuda"].as_str()
            ),
            (Some("2.27.7"), Some("13.0")),
            "{library}"
        );
        let f = mismatch(&report);
        assert_eq!(f["severity"], "error", "{f}");
        contains_all(
            f["message"].as_str().unwrap(),
            &[
                "NCCL 2.27.7",
                "was built for CUDA 13.0 and brings its own CUDA 13.0 runtime",
                "driver 535.261.03 supports CUDA 12.2",
                "cudaErrorInsufficientDriver (35)",
            ],
        );
        // The CUDA 13 runtime beside it needs the same driver: the upgrade is the one fix.
        assert_eq!(f["fix"], "upgrade the NVIDIA driver to 580 or newer");
        // Root cause first: the driver too old for the runtime, then NCCL.
        let causes: Vec<&str> = report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["cause"].as_str().unwrap())
            .collect();
        let at = |cause: &str| causes.iter().position(|c| *c == cause);
        assert!(
            at("driver_too_old") < at("nccl_cuda_mismatch"),
            "{causes:?}"
        );
    }
}

#[test]
fn the_markdown_report_shows_the_cuda_and_the_finding() {
    let home = tempfile::tempdir().expect("temporary HOME");
    let output = isolated_stackbench(home.path())
        .args([
            "doctor",
            "--no-system",
            "--no-load",
            "--format",
            "markdown",
            "--root",
        ])
        .arg(fixture(CONDA))
        .env("LD_LIBRARY_PATH", fixture(DRIVER_AMD64))
        .output()
        .expect("run stackbench doctor");
    let markdown = String::from_utf8(output.stdout).expect("UTF-8");
    assert!(
        markdown.contains("| nccl | 2.27.7 (built for CUDA 13.0) | libnccl.so.2 |"),
        "{markdown}"
    );
    assert!(
        markdown.contains("| error | `nccl_cuda_mismatch` | libnccl.so.2 | NCCL 2.27.7 in "),
        "{markdown}"
    );
}

#[test]
fn the_cuda_13_nccl_is_one_file_where_it_is_installed_twice() {
    // The CUDA 13 wheel is extracted once and hard-linked into the conda environment and the
    // mismatched venv: the fixture pays for its 211 MB once.
    use std::os::unix::fs::MetadataExt;
    let conda = fixture(&format!("{CONDA}/lib/libnccl.so.2.27.7"));
    let venv = fixture(&format!("{VENV_NCCL_CU13}/nvidia/nccl/lib/libnccl.so.2"));
    let (a, b) = (conda.metadata().unwrap(), venv.metadata().unwrap());
    assert_eq!((a.dev(), a.ino()), (b.dev(), b.ino()));
}

fn display(path: &Path) -> String {
    path.display().to_string()
}
