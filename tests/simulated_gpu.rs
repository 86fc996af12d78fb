//! `check` and `bench` on the simulated GPU (tests/simgpu, laid out by `ci/sim`): their whole GPU
//! path runs (the driver, NVRTC's PTX for a device newer than it, launches verified, CUDA events,
//! NVML), the run says it is simulated, and each fault the simulator can show gives the finding
//! a real host gives, while the run goes on.

mod common;

use common::{bench_row, check_result, check_status, on_simulator, run_simulated};
use rstest::rstest;
use serde_json::Value;

/// A quick bench of the copy and the vector add alone: the matmuls (the NVRTC one runs through
/// the simulator's PTX interpreter, three quarters of a quick run's time) are
/// tests/simulated_blas.rs's.
const COPY_AND_VECTOR_ADD: &[&str] = &[
    "bench",
    "--quick",
    "--allow-skip",
    "--filter",
    "copy/",
    "--filter",
    "vector_add/",
];

/// A profile of one default device with `faults` (TOML lines of the `[faults]` table).
fn faulty(faults: &str) -> String {
    format!("[faults]\n{faults}\n")
}

/// `stackbench <command> --format json` on the simulator with the profile `faults`; the exit
/// status and the report.
fn run(command: &[&str], faults: &str) -> (Option<i32>, Value) {
    run_profile(command, &faulty(faults))
}

/// `stackbench <command> --format json` on the simulator with the profile `toml`.
fn run_profile(command: &[&str], toml: &str) -> (Option<i32>, Value) {
    let run = run_simulated(command, toml);
    (run.code, run.report)
}

/// `check` on the simulator with `faults`, each check allowed `timeout` seconds.
fn check(faults: &str, timeout: &str) -> (Option<i32>, Value) {
    run(&["check", "--timeout", timeout], faults)
}

#[test]
fn check_passes_every_check_of_the_simulated_combination() {
    let (code, report) = check("", "60");
    assert_eq!(report["simulated"], true);
    let checks = report["combinations"][0]["checks"]
        .as_array()
        .expect("checks");
    // The driver, NVRTC, NVML and every simulated library of the CUDA 13.0 toolkit.
    for id in [
        "driver.init",
        "driver.health",
        "nvrtc.launch_vector_add",
        "nvrtc.launch_matmul",
        "cudart.memcpy",
        "cublas.sgemm",
        "cublasLt.matmul",
        "cudnn.conv_forward",
        "cupti.activity",
        "cufft.c2c",
        "curand.generate",
    ] {
        assert!(checks.iter().any(|c| c["id"] == id), "no check {id}");
    }
    for c in checks {
        let id = c["id"].as_str().unwrap_or_default();
        let expected = if id == "coverage.kernels" {
            "warn"
        } else {
            "pass"
        };
        assert_eq!(c["status"], expected, "{id}: {}", c["reason"]);
    }
    // The device (15.0) is newer than NVRTC 13.0: PTX, JIT-compiled by the driver.
    let launch = check_result(&report, "nvrtc.launch_vector_add");
    assert_eq!(launch["details"]["image"], "ptx", "{launch}");
    assert!(check_status(&report, "coverage.kernels").1.contains("PTX"));
    assert_eq!(code, Some(0), "{report}");
}

#[test]
fn the_simulated_run_s_junit_report_is_valid() {
    let dir = tempfile::tempdir().expect("temporary directory");
    // A name that does not say it is simulated: only the labelling can.
    let output = on_simulator(dir.path(), "[[device]]\nname = \"Model H\"\n", &["check"])
        .args(["--format", "junit"])
        .output()
        .expect("run stackbench");
    assert_eq!(output.status.code(), Some(0));
    let file = dir.path().join("check.xml");
    std::fs::write(&file, &output.stdout).expect("write the report");
    let schema = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/junit-10.xsd");
    let lint = std::process::Command::new("xmllint")
        .arg("--noout")
        .arg("--schema")
        .arg(&schema)
        .arg(&file)
        .output()
        .expect("xmllint (Debian's libxml2-utils; ci/test installs it)");
    assert!(
        lint.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&lint.stderr),
        String::from_utf8_lossy(&output.stdout)
    );
    let xml = String::from_utf8_lossy(&output.stdout);
    assert!(xml.contains("cublas.sgemm"), "{xml}");
    assert!(
        xml.contains("<testsuites name=\"stackbench check (SIMULATED GPU)\""),
        "the run is labelled: {xml}"
    );
    assert!(
        xml.contains("<property name=\"simulated\" value=\"true\"/>"),
        "each combination is labelled: {xml}"
    );
}

#[test]
fn bench_measures_copy_and_vector_add_at_the_simulated_device_s_rates() {
    let (_, report) = run(COPY_AND_VECTOR_ADD, "");
    assert_eq!(report["simulated"], true);
    let row = |benchmark: &str| bench_row(&report, benchmark);
    // The profile's 3350 GB/s, less each run's modelled fixed cost, moved by the noise and by
    // this process's and boot's draws (1% each by default: 8% is over five of their deviations).
    for benchmark in ["copy", "vector_add"] {
        let r = row(benchmark);
        assert_eq!(r["status"], "measured", "{r}");
        let rate = r["throughput"]["value"].as_f64().expect("a rate");
        assert!(
            (rate / 3350.0 - 1.0).abs() < 0.08,
            "{benchmark}: {rate} GB/s"
        );
        assert!(r["telemetry"]["readings"].as_u64() > Some(0), "{r}");
    }
    let add = row("vector_add");
    assert_eq!(add["verified"]["passed"], true, "{add}");
    assert!(add["pct_of_peak"].as_f64().is_some(), "{add}");
    assert_eq!(row("copy")["verified"]["precision"], "bits");
}

#[rstest]
#[case::ecc("ecc_uncorrected = 2", "driver.health", "warn", "uncorrected ECC")]
#[case::retired_pages("retired_pages = 3", "driver.health", "warn", "retire")]
#[case::row_remap("row_remap_pending = true", "driver.health", "warn", "row remapping")]
#[case::launch_error(
    "launch_error = \"vector_add\"",
    "nvrtc.launch_vector_add",
    "fail",
    "CUDA_ERROR_ILLEGAL_ADDRESS"
)]
#[case::wrong_results(
    "wrong_results = \"vector_add\"",
    "nvrtc.launch_vector_add",
    "fail",
    "relative error"
)]
#[case::out_of_memory(
    "out_of_memory_above_mib = 8",
    "nvrtc.launch_vector_add",
    "fail",
    "CUDA_ERROR_OUT_OF_MEMORY"
)]
#[case::lost("lost_after_calls = 10", "driver.health", "fail", "GPU_IS_LOST")]
fn each_fault_gives_the_finding_a_real_host_gives(
    #[case] fault: &str,
    #[case] id: &str,
    #[case] expected: &str,
    #[case] named: &str,
) {
    let (code, report) = check(fault, "60");
    let (s, why) = check_status(&report, id);
    assert_eq!(s, expected, "{id}: {why}");
    assert!(why.contains(named), "{id}: {why}");
    assert_eq!(code, Some(if expected == "fail" { 1 } else { 0 }));
}

#[test]
fn a_hung_kernel_is_cut_off_by_the_timeout_and_the_run_goes_on() {
    let (code, report) = check("kernel_hang = \"vector_add\"", "3");
    let (s, why) = check_status(&report, "nvrtc.launch_vector_add");
    assert_eq!(s, "fail", "{why}");
    assert!(why.contains("no answer within 3 s"), "{why}");
    // A fresh worker carries on with the checks after it.
    assert_eq!(check_status(&report, "nvrtc.launch_matmul").0, "pass");
    assert_eq!(code, Some(1));
}

#[test]
fn a_throttled_gpu_is_slower_and_marks_the_samples_taken_under_it() {
    let (_, report) = run(COPY_AND_VECTOR_ADD, "throttle = [\"hw_slowdown\"]");
    let add = bench_row(&report, "vector_add");
    // HW slowdown halves the SM clock, and the kernel takes twice as long: about half the
    // profile's 3350 GB/s (the copy, on the copy engine, is not held back).
    let rate = add["throughput"]["value"].as_f64().expect("a rate");
    assert!((rate / 1675.0 - 1.0).abs() < 0.08, "{rate} GB/s: {add}");
    let copy = bench_row(&report, "copy")["throughput"]["value"]
        .as_f64()
        .expect("a rate");
    assert!((copy / 3350.0 - 1.0).abs() < 0.08, "{copy} GB/s");
    let telemetry = &add["telemetry"];
    let reasons = telemetry["throttle_reasons"].to_string();
    assert!(reasons.to_lowercase().contains("slowdown"), "{telemetry}");
    assert!(
        !telemetry["throttled_samples"]
            .as_array()
            .expect("indices")
            .is_empty(),
        "{telemetry}"
    );
}

#[test]
fn the_telemetry_reads_the_device_the_benchmarks_ran_on() {
    // Two GPUs told apart by their clocks; the benchmarks run on the second.
    let two = "[[device]]\nsm_clock_mhz = 1980\n\n[[device]]\nsm_clock_mhz = 1410\n";
    let on_second = [COPY_AND_VECTOR_ADD, &["--device", "1"]].concat();
    let (_, report) = run_profile(&on_second, two);
    let add = bench_row(&report, "vector_add");
    assert_eq!(add["status"], "measured", "{add}");
    assert_eq!(add["telemetry"]["sm_clock_mhz_max"], 1410, "{add}");
}

#[test]
fn ptx_newer_than_the_driver_s_jit_is_explained() {
    // CUDA 13.0's NVRTC writes PTX ISA 9.0; a driver of CUDA 12.0 JIT-compiles up to 8.0.
    let old_driver = "[[device]]\ncuda_version = \"12.0\"\n";
    let (code, report) = run_profile(&["check", "--timeout", "60"], old_driver);
    let (s, why) = check_status(&report, "nvrtc.launch_vector_add");
    assert_eq!(s, "fail", "{why}");
    assert!(
        why.contains("CUDA_ERROR_UNSUPPORTED_PTX_VERSION (222)"),
        "{why}"
    );
    assert!(why.contains("newer than this driver"), "{why}");
    assert_eq!(code, Some(1));
}
