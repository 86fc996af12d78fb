//! `check --quick`, the node health check, on the simulated GPU (tests/simgpu): a healthy node
//! runs only the quick checks (on every GPU, no library sweep, no node measurement) and exits
//! 0; a GPU fault a scheduler must drain for exits 1 with one line naming the GPU and the
//! cause; a software clock limit does not; no driver exits 2 saying so.

mod common;

use common::{isolated_stackbench, on_simulator, run_simulated, simulator};
use rstest::rstest;
use serde_json::Value;
use std::collections::BTreeSet;

/// The checks quick runs, in order, on the first GPU.
const QUICK: [&str; 8] = [
    "driver.library",
    "driver.init",
    "driver.devices",
    "driver.nvml",
    "nvrtc.load",
    "nvrtc.compile_vector_add",
    "nvrtc.launch_vector_add",
    "driver.health",
];

/// A node of `gpus` simulated GPUs with `faults` (TOML lines).
fn node(gpus: u32, faults: &str) -> String {
    format!("[node]\ngpus = {gpus}\n[faults]\n{faults}\n")
}

/// `(id, GPU index)` of every check of a report's one combination.
fn ran(report: &Value) -> Vec<(String, Option<u64>)> {
    report["combinations"][0]["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .map(|c| {
            let id = c["id"].as_str().unwrap_or_default().to_owned();
            (id, c["device"]["index"].as_u64())
        })
        .collect()
}

/// `check --quick` in the terminal format: its exit status and its standard output.
fn quick_line(toml: &str) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let output = on_simulator(dir.path(), toml, &["check", "--quick"])
        .output()
        .expect("run stackbench");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    (output.status.code(), stdout)
}

#[test]
fn a_healthy_node_runs_only_the_quick_checks_on_every_gpu_and_exits_0() {
    let quick = run_simulated(&["check", "--quick"], &node(2, ""));
    assert_eq!(quick.code, Some(0), "{}", quick.report);
    let mut expected: Vec<(String, Option<u64>)> = QUICK
        .iter()
        .map(|id| {
            let per_device = ["driver.devices", "nvrtc.launch_vector_add"].contains(id);
            ((*id).to_owned(), per_device.then_some(0))
        })
        .collect();
    expected.push(("driver.devices".into(), Some(1)));
    expected.push(("nvrtc.launch_vector_add".into(), Some(1)));
    assert_eq!(ran(&quick.report), expected);
    let checks = quick.report["combinations"][0]["checks"]
        .as_array()
        .expect("checks");
    for check in checks {
        assert_eq!(check["status"], "pass", "{check}");
    }
    assert!(
        quick.report.get("node").is_none(),
        "quick measured the node"
    );
    assert!(
        quick.trace.is_empty(),
        "quick called libraries: {:?}",
        quick.trace
    );
    // The full check on the same node runs the library sweeps and measures the node besides.
    let full = run_simulated(&["check"], &node(2, ""));
    assert_eq!(full.code, Some(0), "{}", full.report);
    let full_ids: BTreeSet<String> = ran(&full.report).into_iter().map(|(id, _)| id).collect();
    let quick_ids: BTreeSet<String> = QUICK.iter().map(|id| (*id).to_owned()).collect();
    assert!(quick_ids.is_subset(&full_ids));
    for sweep in [
        "cublas.sgemm",
        "cudnn.conv_forward",
        "nccl.all_reduce",
        "coverage.kernels",
    ] {
        assert!(full_ids.contains(sweep), "the full check ran no {sweep}");
    }
    assert!(full.report["node"].is_object());
    assert!(full.trace.iter().any(|call| call["library"] == "cublas"));
    // The terminal format is the verdict's one line.
    let (code, line) = quick_line(&node(2, ""));
    assert_eq!(code, Some(0));
    assert_eq!(line.lines().count(), 1, "{line}");
    assert!(
        line.starts_with(
            "healthy: 2 GPUs (stackbench simulated GPU (H100-like)), 10 checks passed in "
        ),
        "{line}"
    );
}

#[rstest]
#[case::ecc(
    "ecc_uncorrected = 3",
    "3 uncorrected ECC error(s) since the driver loaded (driver.health)"
)]
#[case::remap("row_remap_pending = true", "row remapping pending (driver.health)")]
#[case::pages("retired_pages = 2", "pages pending retirement (driver.health)")]
#[case::hw_slowdown(
    "throttle = [\"hw_slowdown\", \"sw_power_cap\"]",
    "clocks cut by HW slowdown (driver.health)"
)]
#[case::power_brake(
    "throttle = [\"hw_power_brake\"]",
    "clocks cut by power brake (driver.health)"
)]
#[case::wrong_results(
    "wrong_results = \"vector_add\"",
    "nvrtc.launch_vector_add failed: vector add of 1 Mi floats"
)]
fn a_faulty_gpu_exits_1_with_a_line_naming_the_gpu_and_the_cause(
    #[case] fault: &str,
    #[case] cause: &str,
) {
    let toml = node(1, fault);
    let (code, line) = quick_line(&toml);
    assert_eq!(code, Some(1), "{line}");
    assert_eq!(line.lines().count(), 1, "{line}");
    let report = run_simulated(&["check", "--quick"], &toml).report;
    let uuid = report["combinations"][0]["checks"][2]["details"]["devices"][0]["uuid"]
        .as_str()
        .expect("driver.devices lists the GPU's UUID")
        .to_owned();
    let expected = format!("unhealthy: GPU 0 ({uuid}): {cause}");
    assert!(line.starts_with(&expected), "{line}\nwanted {expected}");
}

#[test]
fn software_clock_limits_are_not_faults() {
    let (code, line) = quick_line(&node(1, "throttle = [\"sw_power_cap\", \"sw_thermal\"]"));
    assert_eq!(code, Some(0), "{line}");
    assert!(line.starts_with("healthy: 1 GPU"), "{line}");
}

#[test]
fn without_a_driver_quick_exits_2_saying_what_is_missing() {
    let home = tempfile::tempdir().expect("temporary HOME");
    let output = isolated_stackbench(home.path())
        .args(["check", "--quick", "--no-system", "--root"])
        .arg(&simulator().toolkit_dir)
        .output()
        .expect("run stackbench");
    let line = String::from_utf8_lossy(&output.stdout);
    if common::host_has_a_driver() {
        // A GPU host (the nightly GPU runner): the loader finds the host's own driver, and
        // quick checks the host's GPUs with it; a GPU runner is healthy or says why not.
        assert_eq!(output.status.code(), Some(0), "{line}");
        assert!(line.starts_with("healthy: "), "{line}");
        assert!(!line.contains("SIMULATED"), "the host's own GPUs: {line}");
    } else {
        assert_eq!(output.status.code(), Some(2), "{line}");
        assert!(
            line.starts_with(
                "could not run: driver.library: no libcuda.so.1: NVIDIA driver not installed"
            ),
            "{line}"
        );
    }
}
