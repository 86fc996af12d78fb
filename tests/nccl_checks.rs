//! `check`'s NCCL checks on a simulated node (tests/simgpu's libnccl.so.2): every collective
//! verified on all eight GPUs, NCCL's transports read from its INFO lines, a fallback to host
//! memory between linked GPUs named with its likely cause, a wrong result and a hang caught
//! and named, a single GPU told nothing.

mod common;

use common::{check_result, on_simulator, run_simulated, stdout_json};
use serde_json::Value;

/// An HGX-like node of `gpus` GPUs over NVSwitch with `faults` (TOML lines).
fn hgx(gpus: u32, faults: &str) -> String {
    format!(
        "[[device]]\nname = \"stackbench simulated GPU (H100-like)\"\n\
         [node]\ngpus = {gpus}\nnvswitch = true\nnvlinks_per_gpu = 18\nnvlink_gbs = 25.0\n\
         pcie_gbs = 55.0\n[faults]\n{faults}\n"
    )
}

const COLLECTIVES: [&str; 4] = [
    "nccl.all_reduce",
    "nccl.all_gather",
    "nccl.reduce_scatter",
    "nccl.broadcast",
];

/// The node's findings' causes, in order.
fn causes(report: &Value) -> Vec<String> {
    report["node"]["findings"]
        .as_array()
        .map(|all| {
            all.iter()
                .map(|f| f["cause"].as_str().unwrap_or_default().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn finding<'a>(report: &'a Value, cause: &str) -> &'a Value {
    report["node"]["findings"]
        .as_array()
        .and_then(|all| all.iter().find(|f| f["cause"] == cause))
        .unwrap_or_else(|| panic!("no {cause} in {}", report["node"]["findings"]))
}

fn status(report: &Value, id: &str) -> String {
    check_result(report, id)["status"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn every_collective_is_verified_on_all_eight_gpus_over_p2p() {
    let run = run_simulated(&["check", "--timeout", "120"], &hgx(8, ""));
    let report = &run.report;
    assert_eq!(
        status(report, "nccl.load"),
        "pass",
        "{}",
        check_result(report, "nccl.load")
    );
    assert_eq!(
        check_result(report, "nccl.init")["details"]["devices"],
        serde_json::json!([0, 1, 2, 3, 4, 5, 6, 7])
    );
    for id in COLLECTIVES {
        let result = check_result(report, id);
        assert_eq!(result["status"], "pass", "{result}");
        // nccl-tests' rounding: all-gather and reduce-scatter need a float per rank.
        let smallest = if id.ends_with("gather") || id.ends_with("scatter") {
            32
        } else {
            8
        };
        assert_eq!(
            result["details"]["sizes_bytes"],
            serde_json::json!([smallest, 512, 32768, 1048576]),
            "{id}: {result}"
        );
    }
    let transport = check_result(report, "nccl.transport");
    assert_eq!(transport["status"], "pass", "{transport}");
    let edges = transport["details"]["nccl_log"]["edges"]
        .as_array()
        .expect("edges");
    assert!(edges.len() >= 8, "a ring of 8 has 8 edges: {transport}");
    assert!(edges.iter().all(|e| e["transport"] == "p2p"), "{transport}");
    assert!(!causes(report).contains(&"nccl_transport_fallback".to_owned()));
    assert_eq!(run.code, Some(0), "{}", report["node"]["findings"]);
}

#[test]
fn peer_access_denied_makes_nccl_fall_back_to_shm_and_is_named_as_its_cause() {
    let run = run_simulated(
        &["check", "--timeout", "120"],
        &hgx(4, "peer_access_denied = [[1, 2]]"),
    );
    let report = &run.report;
    for id in COLLECTIVES {
        assert_eq!(status(report, id), "pass", "{}", check_result(report, id));
    }
    assert_eq!(status(report, "nccl.transport"), "warn");
    let order = causes(report);
    let denied = order.iter().position(|c| c == "peer_access_denied");
    let fallback = order.iter().position(|c| c == "nccl_transport_fallback");
    assert!(
        denied.is_some() && fallback > denied,
        "root cause first: {order:?}"
    );
    let found = finding(report, "nccl_transport_fallback");
    let message = found["message"].as_str().unwrap_or_default();
    assert!(message.contains("via SHM"), "{message}");
    assert!(message.contains("peer_access_denied"), "{message}");
    assert!(
        found["evidence"][0]
            .as_str()
            .unwrap_or_default()
            .contains("NCCL says"),
        "{found}"
    );
    assert_eq!(run.code, Some(1));
}

#[test]
fn nccl_p2p_disable_in_the_environment_is_named_with_its_fix() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let output = on_simulator(dir.path(), &hgx(2, ""), &["check", "--timeout", "120"])
        .env("NCCL_P2P_DISABLE", "1")
        .args(["--format", "json"])
        .output()
        .expect("run stackbench");
    let report = stdout_json(&output);
    let found = finding(&report, "nccl_transport_fallback");
    assert!(
        found["fix"]
            .as_str()
            .unwrap_or_default()
            .contains("unset NCCL_P2P_DISABLE"),
        "{found}"
    );
    assert!(
        found["evidence"]
            .as_array()
            .expect("evidence")
            .iter()
            .any(|e| e
                .as_str()
                .unwrap_or_default()
                .contains("NCCL_P2P_DISABLE set by environment")),
        "{found}"
    );
}

#[test]
fn a_wrong_all_reduce_fails_its_check_alone() {
    let run = run_simulated(
        &["check", "--timeout", "120"],
        &hgx(4, "wrong_results = \"ncclAllReduce\""),
    );
    let report = &run.report;
    let result = check_result(report, "nccl.all_reduce");
    assert_eq!(result["status"], "fail", "{result}");
    assert!(
        result["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("elements wrong"),
        "{result}"
    );
    for id in &COLLECTIVES[1..] {
        assert_eq!(status(report, id), "pass", "{}", check_result(report, id));
    }
    assert_eq!(run.code, Some(1));
}

#[test]
fn a_hung_collective_is_stopped_at_the_timeout_and_named() {
    let run = run_simulated(
        &["check", "--timeout", "10"],
        &hgx(2, "nccl_hang = \"all_gather\""),
    );
    let report = &run.report;
    let hung = check_result(report, "nccl.all_gather");
    assert_eq!(hung["status"], "fail", "{hung}");
    assert!(
        hung["reason"].as_str().unwrap_or_default().contains("10 s"),
        "the hang is named with its bound: {hung}"
    );
    // The checks after it run in a fresh worker, its needs restored.
    assert_eq!(status(report, "nccl.reduce_scatter"), "pass");
    assert_eq!(status(report, "nccl.broadcast"), "pass");
}

#[test]
fn one_gpu_needs_no_transport() {
    let run = run_simulated(&["check", "--timeout", "120"], &hgx(1, ""));
    let transport = check_result(&run.report, "nccl.transport");
    assert_eq!(transport["status"], "pass", "{transport}");
    assert!(transport["reason"]
        .as_str()
        .unwrap_or_default()
        .contains("one GPU"));
    assert_eq!(status(&run.report, "nccl.all_reduce"), "pass");
}
