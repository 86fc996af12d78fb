//! `doctor --sysroot` on a root file system laid out as NVIDIA's CUDA runtime container image
//! (`nvidia/cuda:12.9.1-runtime-ubuntu24.04`, as `docker export` unpacks it), built by
//! `common::image` from the fixture packages, with and without the files the NVIDIA Container
//! Toolkit injects into a running container. The image's environment (`docker inspect`'s
//! `Config.Env`) is given as the process's own.

// Tests read the files they make and the checkout's own: std's readers are theirs (clippy.toml).
#![allow(clippy::disallowed_methods)]

mod common;

use common::image::{runtime_image, IMAGE_ENV};
use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// `doctor --sysroot` on the image, with the image's environment, as JSON.
fn doctor(root: &Path) -> (Option<i32>, Value) {
    let home = tempfile::tempdir().unwrap();
    let output = isolated_stackbench(home.path())
        .envs(IMAGE_ENV.iter().copied())
        .args(["doctor", "--sysroot"])
        .arg(root)
        .args(["--format", "json"])
        .output()
        .expect("run stackbench");
    (output.status.code(), stdout_json(&output))
}

/// The findings as `(severity, cause)`.
fn causes(report: &Value) -> Vec<(String, String)> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["severity"].as_str().unwrap().to_owned(),
                f["cause"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[test]
fn a_running_cuda_runtime_container_reports_its_toolkit_and_nothing_wrong() {
    let image = runtime_image(true);
    let root: PathBuf = image.path().canonicalize().unwrap();
    // Traced: not one file outside the image is opened or looked for.
    let traced = traced_doctor_sysroot(&root, IMAGE_ENV);
    let (code, report) = (traced.code, &traced.report);
    assert!(
        traced.outside.is_empty(),
        "read outside the image: {:#?}\n{}",
        traced.outside,
        traced.trace
    );
    let installations = report["installations"].as_array().unwrap();
    let toolkit = installations
        .iter()
        .find(|i| i["root"] == root.join("usr/local/cuda-12.9").to_str().unwrap())
        .unwrap_or_else(|| {
            panic!("no CUDA installation at /usr/local/cuda-12.9: {installations:#?}")
        });
    assert_eq!(toolkit["layout"], "toolkit", "{toolkit:#}");
    assert!(
        toolkit["cuda_version"]
            .as_str()
            .unwrap()
            .starts_with("12.9"),
        "{toolkit:#}"
    );
    let components: Vec<&str> = toolkit["libraries"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|l| l["name"].as_str())
        .collect();
    for wanted in ["cudart", "cublas", "cublasLt", "nvrtc"] {
        assert!(components.contains(&wanted), "{components:?}");
    }
    // The injected driver is the one the loader takes; CUDA 12.9 on driver 535 (CUDA 12.2) is
    // minor-version compatibility, a warning; no error.
    assert_eq!(
        report["driver_files"]["libcuda"][0]["real"],
        "/usr/lib/x86_64-linux-gnu/libcuda.so.535.261.03"
    );
    let found = causes(report);
    assert!(
        found.iter().all(|(severity, _)| severity != "error"),
        "{:#}",
        report["findings"]
    );
    assert_eq!(code, Some(0), "{found:?}");
    for place in report["searched"].as_array().unwrap() {
        let path = Path::new(place["path"].as_str().unwrap());
        assert!(
            path.starts_with(&root),
            "searched outside the image: {place}"
        );
    }
}

#[test]
fn the_exported_image_without_the_toolkit_s_files_expects_the_driver_at_run_time() {
    let image = runtime_image(false);
    let (code, report) = doctor(&image.path().canonicalize().unwrap());
    let found = causes(&report);
    assert!(
        found.contains(&("info".into(), "no_driver".into())),
        "{found:?}"
    );
    assert!(
        found.iter().all(|(severity, _)| severity != "error"),
        "{:#}",
        report["findings"]
    );
    assert_eq!(code, Some(0), "{found:?}");
}
