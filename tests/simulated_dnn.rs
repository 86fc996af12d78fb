//! `check` on the simulated GPU (tests/simgpu, laid out by `ci/sim`) through its cuDNN 9, cuFFT
//! and cuRAND: the checks pass against the simulator's own references, the simulator's trace
//! shows the convolution stackbench asked of cuDNN (every dimension distinct, so an argument
//! mix-up cannot hide behind symmetry), and `wrong_results = "conv"` fails the convolution check
//! with its measured error while the run goes on.

mod common;

use common::{check_status, on_simulator, simulator_trace, stdout_json};
use serde_json::Value;
use std::path::Path;

/// `stackbench check --format json` on the simulator with the `[faults]` lines `faults`,
/// tracing the simulated libraries' calls into `dir`; the exit status and report.
fn check(dir: &Path, faults: &str) -> (Option<i32>, Value) {
    let output = on_simulator(dir, &format!("[faults]\n{faults}\n"), &["check"])
        .args(["--timeout", "60", "--format", "json"])
        .output()
        .expect("run stackbench");
    (output.status.code(), stdout_json(&output))
}

/// The trace's lines for `library`'s `call`.
fn traced(dir: &Path, library: &str, call: &str) -> Vec<Value> {
    (simulator_trace(dir).into_iter())
        .filter(|v| v["library"] == library && v["call"] == call)
        .collect()
}

const CHECKS: [&str; 8] = [
    "cudnn.load",
    "cudnn.versions",
    "cudnn.handle",
    "cudnn.conv_forward",
    "cufft.load",
    "cufft.c2c",
    "curand.load",
    "curand.generate",
];

#[test]
fn check_passes_cudnn_cufft_and_curand_giving_cudnn_every_dimension_apart() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let (_, report) = check(dir.path(), "");
    assert_eq!(report["simulated"], true);
    for id in CHECKS {
        let (s, why) = check_status(&report, id);
        assert_eq!(s, "pass", "{id}: {why}");
    }
    assert_eq!(
        check_status(&report, "cudnn.versions").1,
        "cuDNN 9.13.0 for CUDA 13.0, runtime 13.0"
    );
    let (_, conv) = check_status(&report, "cudnn.conv_forward");
    assert!(
        conv.starts_with("2x3x11x8 * 6x3x5x4 convolution matches the CPU"),
        "{conv}"
    );
    let (_, uniform) = check_status(&report, "curand.generate");
    assert!(
        uniform.starts_with("1 Mi uniform floats in (0, 1]"),
        "{uniform}"
    );
    // What cuDNN was given, as the simulator traced it.
    let calls = traced(dir.path(), "cudnn", "cudnnConvolutionForward");
    assert_eq!(calls.len(), 1, "{calls:?}");
    let call = &calls[0];
    // N, C, H, W of the input; K, C, R, S of the filter: none equal, so no swap goes unseen.
    assert_eq!(call["input"], "[2, 3, 11, 8]");
    assert_eq!(call["filter"], "[6, 3, 5, 4]");
    assert_eq!(call["pad"], "[1, 1]");
    assert_eq!(call["stride"], "[1, 1]");
    assert_eq!(call["dilation"], "[1, 1]");
    assert_eq!(call["mode"], "CrossCorrelation");
    assert_eq!(call["output"], "[2, 6, 9, 7]");
    assert_eq!(call["alpha"], 1.0);
    assert_eq!(call["beta"], 0.0);
}

#[test]
fn a_wrong_convolution_fails_its_check_with_the_measured_error_and_the_run_goes_on() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let (code, report) = check(dir.path(), r#"wrong_results = "conv""#);
    let (s, why) = check_status(&report, "cudnn.conv_forward");
    assert_eq!(s, "fail", "{why}");
    assert!(
        why.starts_with("2x3x11x8 * 6x3x5x4 convolution differs from the CPU: relative error "),
        "{why}"
    );
    assert!(why.contains("tolerance 1e-4"), "{why}");
    // The checks after it still ran, and passed.
    for id in ["cufft.c2c", "curand.generate"] {
        let (s, why) = check_status(&report, id);
        assert_eq!(s, "pass", "{id}: {why}");
    }
    assert_ne!(code, Some(0), "{report}");
}
