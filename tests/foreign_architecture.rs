//! Libraries of another machine, on the real aarch64 (Grace) builds of CUDA 12.9's runtime and
//! NVRTC wheels: a venv made on a GH200 node and used on this x86_64 one is one
//! `foreign_architecture` error naming both machines, its evidence and its fix, in every format;
//! and no library doctor leaves out goes unsaid.
#![cfg(target_arch = "x86_64")]

mod common;

use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The aarch64 venv's site-packages.
fn aarch64_venv() -> PathBuf {
    build_fixtures().join("venv-aarch64-cu12/lib/python3.11/site-packages")
}

/// `stackbench doctor --no-system --root ROOT...` with `args`: its exit status and output.
fn doctor(roots: &[&Path], args: &[&str]) -> (Option<i32>, String) {
    let mut all = vec!["doctor", "--no-system"];
    for root in roots {
        all.extend(["--root", root.to_str().expect("a UTF-8 fixture path")]);
    }
    all.extend(args);
    let output = run_stackbench(&all);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

fn doctor_json(roots: &[&Path]) -> (Option<i32>, Value) {
    let (code, out) = doctor(roots, &["--format", "json"]);
    (code, doctor_report(out.as_bytes()))
}

fn texts(value: &Value) -> Vec<&str> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

#[test]
fn a_venv_of_aarch64_wheels_is_one_error_naming_both_machines_its_evidence_and_the_fix() {
    let venv = aarch64_venv();
    let (code, report) = doctor_json(&[&venv]);
    assert_eq!(code, Some(1), "{report:#}");
    let found = findings_of(&report, "foreign_architecture");
    // One finding for the whole installation, not one per library.
    let [f] = found.as_slice() else {
        panic!("{found:#?}")
    };
    assert_eq!(f["severity"], "error");
    assert_eq!(f["installation"], venv.display().to_string());
    let message = f["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            "its 3 libraries are built for aarch64 and this host is x86_64: no program here can load them"
        ),
        "{message}"
    );
    assert!(
        message.contains("'libcudart.so.12: cannot open shared object file'"),
        "{message}"
    );
    let fix = f["fix"].as_str().unwrap();
    assert!(
        fix.contains("made on aarch64") && fix.contains("`pip install`"),
        "{fix}"
    );
    assert!(fix.contains("the x86_64 wheels"), "{fix}");
    let evidence = texts(&f["evidence"]);
    let cudart = venv.join("nvidia/cuda_runtime/lib/libcudart.so.12");
    assert!(
        evidence.contains(&format!("{}: ELF64 aarch64", cudart.display()).as_str()),
        "{evidence:#?}"
    );
    assert!(
        evidence.contains(
            &"nvidia_cuda_runtime_cu12-12.9.79.dist-info/WHEEL: Tag: py3-none-manylinux2014_aarch64"
        ),
        "{evidence:#?}"
    );
    // Nothing else is an error: the loader's other rules pass over another machine's files.
    let errors: Vec<&Value> = (report["findings"].as_array().unwrap().iter())
        .filter(|f| f["severity"] == "error")
        .collect();
    assert_eq!(errors.len(), 1, "{errors:#?}");
    // Each library is listed as left out, with its machine.
    let skipped: Vec<&Value> = (report["probes"].as_array().unwrap().iter())
        .flat_map(|p| p["skipped"].as_array().into_iter().flatten())
        .collect();
    assert_eq!(skipped.len(), 3, "{skipped:#?}");
    for s in skipped {
        assert_eq!(s["reason"]["kind"], "foreign_architecture", "{s}");
        assert_eq!(s["reason"]["machine"], "aarch64", "{s}");
    }
}

#[test]
fn every_format_names_it_and_scan_counts_it_among_its_problems() {
    let venv = aarch64_venv();
    for format in ["terminal", "markdown", "csv", "openmetrics"] {
        let (code, out) = doctor(&[&venv], &["--format", format]);
        assert_eq!(code, Some(1), "{format}");
        assert!(out.contains("foreign_architecture"), "{format}: {out}");
    }
    let output = run_stackbench(&[
        "scan",
        "--no-system",
        "--root",
        venv.to_str().unwrap(),
        "--format",
        "json",
    ]);
    let scan = stdout_json(&output);
    let problems: Vec<&Value> = all_problems(&scan)
        .into_iter()
        .filter(|p| p["kind"] == "foreign_architecture")
        .collect();
    let [problem] = problems.as_slice() else {
        panic!("{problems:#?}")
    };
    assert_eq!(problem["path"], venv.display().to_string());
}

#[test]
fn an_installation_that_mixes_machines_names_the_odd_library_only() {
    let dir = tempfile::tempdir().unwrap();
    let mixed = dir.path().join("lib");
    std::fs::create_dir(&mixed).unwrap();
    std::fs::copy(real_cudart(), mixed.join("libcudart.so.12")).unwrap();
    let nvrtc = aarch64_venv().join("nvidia/cuda_nvrtc/lib/libnvrtc.so.12");
    std::fs::copy(nvrtc, mixed.join("libnvrtc.so.12")).unwrap();
    let (code, report) = doctor_json(&[&mixed]);
    assert_eq!(code, Some(1), "{report:#}");
    let found = findings_of(&report, "foreign_architecture");
    let [f] = found.as_slice() else {
        panic!("{found:#?}")
    };
    assert_eq!(f["library"], "libnvrtc.so.12", "{f:#}");
    let message = f["message"].as_str().unwrap();
    assert!(
        message.starts_with("libnvrtc.so.12 is built for aarch64 among its x86_64 libraries"),
        "{message}"
    );
    assert!(
        f["fix"].as_str().unwrap().starts_with("reinstall here"),
        "{f:#}"
    );
}

/// Every library of every fixture is either given to a worker or listed as left out with its
/// reason, and every one left out is named by a finding: none goes unsaid. The x86_64
/// fixtures have no foreign_architecture finding.
#[test]
fn no_library_doctor_leaves_out_goes_unsaid() {
    let relative = [
        VENV_CU11,
        VENV_CU12,
        VENV_CUDNN8,
        VENV_NCCL_CU13,
        TOOLKIT,
        CONDA,
        "driver-535",
    ];
    let mut roots: Vec<PathBuf> = relative.iter().map(|r| fixture(r)).collect();
    // A toolkit's link stub beside its runtime, as `lib64/stubs/libcuda.so` is.
    let dir = tempfile::tempdir().unwrap();
    let stubs = dir.path().join("cuda-12.9/lib64/stubs");
    std::fs::create_dir_all(&stubs).unwrap();
    std::fs::copy(real_cudart(), stubs.join("../libcudart.so.12")).unwrap();
    let libcuda = fixture(DRIVER_AMD64).join("libcuda.so.1");
    std::fs::copy(libcuda, stubs.join("libcuda.so")).unwrap();
    roots.push(dir.path().join("cuda-12.9"));
    roots.push(aarch64_venv());
    let refs: Vec<&Path> = roots.iter().map(PathBuf::as_path).collect();
    let (_, report) = doctor_json(&refs);
    let findings = report["findings"].as_array().unwrap();
    let probes = report["probes"].as_array().unwrap();
    let mut reasons = std::collections::BTreeSet::new();
    for installation in report["installations"].as_array().unwrap() {
        let root = &installation["root"];
        let probe = (probes.iter().find(|p| p["root"] == *root))
            .unwrap_or_else(|| panic!("no probe of {root}"));
        let loaded: Vec<&str> = (probe["loads"].as_array().into_iter().flatten())
            .filter_map(|l| l["path"].as_str())
            .collect();
        for library in installation["libraries"].as_array().unwrap() {
            let path = library["path"].as_str().unwrap();
            if loaded.contains(&library["real_path"].as_str().unwrap()) {
                continue;
            }
            let skipped = (probe["skipped"].as_array().into_iter().flatten())
                .find(|s| s["path"] == path)
                .unwrap_or_else(|| panic!("{path} neither loaded nor listed as left out"));
            reasons.insert(skipped["reason"]["kind"].as_str().unwrap().to_owned());
            let named = findings.iter().any(|f| {
                f["path"] == path || texts(&f["evidence"]).iter().any(|e| e.starts_with(path))
            });
            assert!(
                named,
                "{path}, left out ({}), is in no finding",
                skipped["reason"]
            );
        }
        let host_machine = installation["libraries"][0]["machine"] != "aarch64";
        let foreign = findings
            .iter()
            .any(|f| f["cause"] == "foreign_architecture" && f["installation"] == *root);
        assert_eq!(foreign, !host_machine, "{root}");
    }
    // Each reason the fixtures hold was seen: a stub, a 32-bit libcuda, another machine.
    for kind in ["stub", "other_class", "foreign_architecture"] {
        assert!(reasons.contains(kind), "no {kind} among {reasons:?}");
    }
}
