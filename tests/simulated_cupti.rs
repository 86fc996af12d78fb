//! CUPTI on the simulated GPU, end to end: `check`'s `cupti.activity` reads the kernel records
//! of the vector add it launched, with the model's duration; `bench` sets each GPU row's CUDA
//! event time against the CUPTI records of the same launches; and another profiler holding
//! CUPTI (`cupti_busy`) is a warning naming it, with the run going on and the bench saying why
//! its cross-check is absent.

mod common;

use common::{bench_rows, check_result, run_simulated};
use serde_json::Value;

/// The default profile's memory bandwidth, bytes per second, and the model's fixed cost of a
/// launch, seconds.
const BANDWIDTH: f64 = 3350e9;
const LAUNCH_LATENCY: f64 = 2e-6;

/// What the profile's noise (0.5%) may move a duration by, and more.
const CLOSE: f64 = 0.05;

/// The default device without its variation between processes and boots or its clock ramp, so
/// that a duration is the model's: these tests check CUPTI's records against the model.
const STEADY: &str = "[[device]]\nrun_sigma = 0.0\nboot_sigma = 0.0\nramp_ms = 0.0\n";

/// `stackbench <command> --format json` on the simulator with the `[faults]` lines `faults`;
/// the exit status and the report.
fn run(command: &[&str], faults: &str) -> (Option<i32>, Value) {
    let (code, report, _) = traced(command, faults);
    (code, report)
}

/// [`run`], and the simulator's trace of CUPTI's calls (one JSON object a call).
fn traced(command: &[&str], faults: &str) -> (Option<i32>, Value, Vec<Value>) {
    let run = run_simulated(command, &format!("{STEADY}\n[faults]\n{faults}\n"));
    let calls = (run.trace.into_iter())
        .filter(|call| call["library"] == "cupti")
        .collect();
    (run.code, run.report, calls)
}

/// Every check of the report's one combination.
fn checks(report: &Value) -> &Vec<Value> {
    report["combinations"][0]["checks"]
        .as_array()
        .expect("checks")
}

/// Whether `got` is within [`CLOSE`] of `want`.
fn close(got: f64, want: f64) -> bool {
    (got / want - 1.0).abs() < CLOSE
}

#[test]
fn check_reads_the_kernel_records_of_the_vector_add_it_launched() {
    let (_, report, calls) = traced(&["check", "--timeout", "60"], "");
    let activity = check_result(&report, "cupti.activity");
    assert_eq!(activity["status"], "pass", "{activity}");
    // Kernel activity was enabled, and every record the simulator wrote was read.
    let call = |name: &str| {
        (calls.iter())
            .find(|c| c["call"] == name)
            .unwrap_or_else(|| panic!("no {name} in {calls:?}"))
    };
    let enable = call("cuptiActivityEnable");
    assert_eq!(
        (&enable["kind"], &enable["status"]),
        (&10.into(), &0.into())
    );
    let flush = call("cuptiActivityFlushAll");
    assert_eq!(flush["records"], activity["details"]["records"], "{flush}");
    assert_eq!(flush["dropped"], 0, "{flush}");
    let details = &activity["details"];
    assert_eq!(details["kernel"], "vector_add", "{activity}");
    // 1 Mi floats: two read and one written at the profile's bandwidth, and the launch's cost.
    let model = (LAUNCH_LATENCY + 12.0 * f64::from(1 << 20) / BANDWIDTH) * 1e9;
    let ns = details["duration_ns"].as_f64().expect("a duration");
    assert!(close(ns, model), "{ns} ns; the model says {model} ns");
    assert_eq!(details["device_id"], 0, "{activity}");
    assert_eq!(details["cupti_api_version"], 130_001, "{activity}");
    assert!(details["correlation_id"].as_u64() > Some(0), "{activity}");
    assert!(details["kernel_records"].as_u64() >= Some(1), "{activity}");
}

#[test]
fn with_cupti_held_by_another_profiler_the_activity_check_warns_naming_it() {
    let (code, report) = run(&["check", "--timeout", "60"], "cupti_busy = true");
    let activity = check_result(&report, "cupti.activity");
    let reason = activity["reason"].as_str().unwrap_or_default();
    assert_eq!(activity["status"], "warn", "{activity}");
    assert!(
        reason.starts_with("another profiler holds CUPTI (Nsight Systems"),
        "{reason}"
    );
    assert!(
        reason.contains("CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED (39)"),
        "{reason}"
    );
    // The run goes on past it, and the warning alone fails nothing.
    let after = (checks(&report).iter())
        .skip_while(|c| c["id"] != "cupti.activity")
        .skip(1)
        .count();
    assert!(after > 0, "no check ran after cupti.activity");
    let failed = checks(&report).iter().any(|c| c["status"] == "fail");
    assert_eq!(code, Some(i32::from(failed)), "{report}");
}

#[test]
fn bench_sets_the_event_times_against_the_cupti_records_of_the_same_launches() {
    let (_, report) = run(&["bench", "--quick", "--allow-skip"], "");
    let add = bench_rows(&report, "vector_add");
    assert_eq!(add.len(), 1);
    let gemms: Vec<_> = (bench_rows(&report, "matmul").into_iter())
        .filter(|r| r["status"] == "measured")
        .collect();
    for row in add.iter().chain(&gemms) {
        assert_eq!(row["status"], "measured", "{row}");
        let cupti = &row["cupti"];
        let ratio = cupti["event_over_cupti"].as_f64().expect("a ratio");
        assert!((ratio - 1.0).abs() < 0.03, "{}: {ratio}", row["id"]);
        assert!(cupti["launches"].as_u64() >= Some(1), "{row}");
    }
    // The quick size, 64 Mi floats: the records' own duration is the model's.
    let model = (LAUNCH_LATENCY + 12.0 * f64::from(1 << 26) / BANDWIDTH) * 1e9;
    let ns = add[0]["cupti"]["kernel_ns"].as_f64().expect("kernel time");
    assert!(close(ns, model), "{ns} ns; the model says {model} ns");
}

#[test]
fn with_cupti_held_by_another_profiler_bench_says_why_its_cross_check_is_absent() {
    let (_, report) = run(&["bench", "--quick", "--allow-skip"], "cupti_busy = true");
    let add = bench_rows(&report, "vector_add");
    assert_eq!(add[0]["status"], "measured", "{}", add[0]);
    assert!(add[0]["cupti"].is_null(), "{}", add[0]);
    let reason = add[0]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("CUPTI cross-check: another profiler holds CUPTI"),
        "{reason}"
    );
}
