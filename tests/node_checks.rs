//! `check` on a simulated node of several GPUs (tests/simgpu's `[node]` profile): every GPU
//! checked and keyed, the copy matrices measured within 5% of the simulator's model and
//! verified, and each fault a real node shows caught by its finding, root cause first (a copy
//! that arrives changed among them, NCCL's collectives over it failing too); a
//! healthy node, a PCIe-only node and a single GPU are told nothing.

// Tests read the files they make and the checkout's own: std's readers are theirs (clippy.toml).
#![allow(clippy::disallowed_methods)]

mod common;

use common::run_simulated;
use serde_json::Value;

/// An HGX-like node of `gpus` H100-like GPUs over NVSwitch, half on each NUMA node, with
/// `faults` (TOML lines).
fn hgx(gpus: u32, faults: &str) -> String {
    let numa: Vec<String> = (0..gpus)
        .map(|i| (2 * i / gpus.max(1)).to_string())
        .collect();
    format!(
        "[[device]]\nname = \"stackbench simulated GPU (H100-like)\"\n\
         [node]\ngpus = {gpus}\nnvswitch = true\nnvlinks_per_gpu = 18\nnvlink_gbs = 25.0\n\
         pcie_gbs = 55.0\nnuma_node = [{}]\n[faults]\n{faults}\n",
        numa.join(", ")
    )
}

/// `check --format json` on the profile; its exit status and the report's node.
fn check(toml: &str) -> (Option<i32>, Value, Value) {
    let run = run_simulated(&["check", "--timeout", "120"], toml);
    let node = run.report["node"].clone();
    assert!(node.is_object(), "no node in {}", run.report);
    (run.code, run.report, node)
}

/// The node's findings' causes, in order.
fn causes(node: &Value) -> Vec<String> {
    node["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| f["cause"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// The finding of `cause`, whole.
fn finding<'a>(node: &'a Value, cause: &str) -> &'a Value {
    node["findings"]
        .as_array()
        .and_then(|all| all.iter().find(|f| f["cause"] == cause))
        .unwrap_or_else(|| panic!("no {cause} in {}", node["findings"]))
}

/// The copy of `engine` from `src` to `dst` (`null`: the host).
fn copy<'a>(node: &'a Value, engine: &str, src: Value, dst: Value, both: bool) -> &'a Value {
    node["copies"]
        .as_array()
        .and_then(|all| {
            all.iter().find(|c| {
                c["engine"] == engine
                    && c["src"] == src
                    && c["dst"] == dst
                    && c["both_ways"] == both
            })
        })
        .unwrap_or_else(|| panic!("no {engine} copy {src} -> {dst}"))
}

/// The simulator's model of a copy's rate (tests/simgpu/src/driver/peer.rs and clock.rs):
/// a fixed cost of `latency` seconds, then `bytes` at `gbs`.
fn modelled(bytes: f64, latency: f64, gbs: f64) -> f64 {
    bytes / (latency + bytes / (gbs * 1e9)) / 1e9
}

fn assert_within_5_percent(measured: &Value, model: f64, what: &str) {
    let gbs = measured["gbs"]
        .as_f64()
        .unwrap_or_else(|| panic!("{what}: {measured}"));
    assert!(
        (gbs / model - 1.0).abs() < 0.05,
        "{what}: {gbs:.1} GB/s, the model {model:.1}"
    );
    assert_eq!(measured["verified"], true, "{what}: {measured}");
}

#[test]
fn a_healthy_8_gpu_node_is_checked_on_every_gpu_its_copies_match_the_model_and_nothing_is_claimed()
{
    let (code, report, node) = check(&hgx(8, ""));
    assert_eq!(causes(&node), Vec::<String>::new(), "{}", node["findings"]);
    assert_eq!(code, Some(0));
    assert_eq!(node["devices"].as_array().map(Vec::len), Some(8));
    assert_eq!(node["pairs"].as_array().map(Vec::len), Some(28));
    // Every GPU ran the per-device checks, keyed by index, UUID and bus id.
    let launches: Vec<&Value> = report["combinations"][0]["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .filter(|c| c["id"] == "nvrtc.launch_vector_add")
        .collect();
    assert_eq!(launches.len(), 8);
    for (index, launch) in launches.iter().enumerate() {
        assert_eq!(launch["status"], "pass", "{launch}");
        assert_eq!(launch["device"]["index"], index as u64);
        assert!(launch["device"]["uuid"]
            .as_str()
            .is_some_and(|u| u.starts_with("GPU-")));
        assert!(launch["device"]["pci_bus_id"].as_str().is_some());
    }
    let bytes = node["copy_bytes"].as_f64().expect("copy_bytes");
    let host = modelled(bytes, 1e-6, 55.0);
    let nvlink = modelled(bytes, 1e-6, 18.0 * 25.0);
    for d in 0..8u64 {
        assert_within_5_percent(copy(&node, "ce", Value::Null, d.into(), false), host, "H2D");
        assert_within_5_percent(copy(&node, "ce", d.into(), Value::Null, false), host, "D2H");
        assert_within_5_percent(
            copy(&node, "ce", Value::Null, d.into(), true),
            host,
            "H2D both",
        );
        for p in (0..8u64).filter(|p| *p != d) {
            let what = format!("CE {d} -> {p}");
            assert_within_5_percent(copy(&node, "ce", d.into(), p.into(), false), nvlink, &what);
            assert_within_5_percent(copy(&node, "ce", d.into(), p.into(), true), nvlink, &what);
            let sm = copy(&node, "sm", d.into(), p.into(), false);
            assert_eq!(sm["verified"], true, "SM {d} -> {p}: {sm}");
            assert_eq!(sm["peak_gbs"], 450.0);
        }
    }
}

#[test]
fn five_faults_of_an_8_gpu_node_each_give_their_finding_naming_the_right_gpus() {
    let (code, _, node) = check(&hgx(
        8,
        "nvlink_down = [[3, 7]]\npeer_access_denied = [[1, 2]]\nslow_device = [[5, 1.15]]\nslow_link = [[0, 4, 1.4]]",
    ));
    assert_eq!(code, Some(1));
    assert_eq!(
        causes(&node),
        [
            "nvlink_inactive",
            "peer_access_denied",
            "slow_device",
            "p2p_degraded",
            // NCCL, too, staged through the host between GPUs 1 and 2: after its cause.
            "nccl_transport_fallback"
        ]
    );
    let text = |cause: &str| finding(&node, cause).to_string();
    assert!(
        text("nvlink_inactive").contains("GPU 3 (")
            && text("nvlink_inactive").contains("inactive link(s) 7")
    );
    assert!(text("nvlink_inactive").contains("17 of 18"));
    let denied = text("peer_access_denied");
    assert!(
        denied.contains("GPU 1 (") && denied.contains("GPU 2 ("),
        "{denied}"
    );
    assert!(denied.contains("1 pair(s)"), "{denied}");
    let slow = text("slow_device");
    assert!(slow.contains("GPU 5 ("), "{slow}");
    // 15% slower, give or take the model's noise.
    let percent: f64 = finding(&node, "slow_device")["message"]
        .as_str()
        .and_then(|m| m.split("% slower").next()?.rsplit(' ').next()?.parse().ok())
        .expect("a percentage");
    assert!((12.0..=18.0).contains(&percent), "{slow}");
    let degraded = text("p2p_degraded");
    assert!(
        degraded.contains("GPU 0 (") && degraded.contains("GPU 4 ("),
        "{degraded}"
    );
    // The denied pair still copies, through the host, and verified.
    assert_eq!(
        copy(&node, "ce", 1.into(), 2.into(), false)["verified"],
        true
    );
}

/// A route that flips bits (the simulator's `corrupt_copy = [[0, 1]]`: bit 2 of byte 1000 and
/// of every 4096th after it): every copy from GPU 0 to GPU 1, by copy engine and by SM stores,
/// one way and both, fails verification at byte 1000, and one finding, first, names both GPUs;
/// the other way and the host's copies verify; NCCL's collectives, whose output on GPU 1 holds
/// GPU 0's data, fail theirs; `check --devices all` exits 1.
#[test]
fn copies_that_arrive_changed_fail_the_check_naming_both_gpus_and_the_first_byte() {
    let run = run_simulated(
        &["check", "--devices", "all", "--timeout", "120"],
        &hgx(2, "corrupt_copy = [[0, 1]]"),
    );
    let (report, node) = (&run.report, &run.report["node"]);
    assert_eq!(run.code, Some(1));
    assert_eq!(causes(node), ["copy_corrupted"], "{}", node["findings"]);
    let corrupted = finding(node, "copy_corrupted");
    let message = corrupted["message"].as_str().unwrap_or_default();
    assert_eq!(corrupted["severity"], "error");
    assert!(
        message.starts_with("data copied from GPU 0 (")
            && message.contains(" to GPU 1 (")
            && message.contains("first at byte offset 1000"),
        "{corrupted}"
    );
    assert_eq!(corrupted["evidence"].as_array().map(Vec::len), Some(4));
    for engine in ["ce", "sm"] {
        for both in [false, true] {
            let there = copy(node, engine, 0.into(), 1.into(), both);
            assert_eq!(there["verified"], false, "{there}");
            assert_eq!(there["first_wrong_byte"], 1000, "{there}");
            assert!(there["gbs"].is_f64(), "measured all the same: {there}");
            let back = copy(node, engine, 1.into(), 0.into(), both);
            assert_eq!(back["verified"], true, "{back}");
            assert!(back.get("first_wrong_byte").is_none(), "{back}");
        }
    }
    for d in 0..2u64 {
        assert_eq!(
            copy(node, "ce", Value::Null, d.into(), false)["verified"],
            true
        );
        assert_eq!(
            copy(node, "ce", d.into(), Value::Null, false)["verified"],
            true
        );
    }
    for id in [
        "nccl.all_reduce",
        "nccl.all_gather",
        "nccl.reduce_scatter",
        "nccl.broadcast",
    ] {
        let result = common::check_result(report, id);
        assert_eq!(result["status"], "fail", "{result}");
        let reason = result["reason"].as_str().unwrap_or_default();
        assert!(reason.contains("GPU 1 (rank 1)"), "{result}");
    }
}

#[test]
fn a_fabric_that_is_not_ready_comes_before_the_peer_access_it_denies() {
    let (code, _, node) = check(&hgx(8, "fabric_state = \"insufficient_resources\""));
    assert_eq!(code, Some(1));
    assert_eq!(
        causes(&node),
        [
            "fabric_not_ready",
            "peer_access_denied",
            "nccl_transport_fallback"
        ]
    );
    let fabric = finding(&node, "fabric_not_ready").to_string();
    assert!(
        fabric.contains("8 of 8") && fabric.contains("NVML_ERROR_INSUFFICIENT_RESOURCES"),
        "{fabric}"
    );
    let denied = finding(&node, "peer_access_denied").to_string();
    assert!(
        denied.contains("28 pair(s)") && denied.contains("fabric_not_ready"),
        "{denied}"
    );
}

#[test]
fn a_pcie_only_node_of_4_gpus_and_a_single_gpu_are_told_nothing_of_nvlink() {
    let pcie = "[[device]]\nname = \"stackbench simulated GPU (H100-like)\"\n[node]\ngpus = 4\nnvswitch = false\npcie_gbs = 25.0\nnuma_node = [0, 0, 1, 1]\n";
    let (code, _, node) = check(pcie);
    assert_eq!(causes(&node), Vec::<String>::new(), "{}", node["findings"]);
    assert_eq!(code, Some(0));
    for device in node["devices"].as_array().expect("devices") {
        assert_eq!(device["nvlinks"], serde_json::json!([]), "{device}");
    }
    assert_eq!(node["pairs"][0]["nvml"]["nvlink"], "not_supported");
    let (code, _, node) = check(&hgx(1, "slow_device = [[0, 1.5]]"));
    assert_eq!(causes(&node), Vec::<String>::new(), "{}", node["findings"]);
    assert_eq!(code, Some(0));
    assert_eq!(node["pairs"], serde_json::json!([]));
}

#[test]
fn the_report_page_draws_the_node_s_copy_matrix_as_a_heat_map_chromium_renders() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let run = run_simulated(
        &["check", "--timeout", "120"],
        &hgx(
            8,
            "peer_access_denied = [[1, 2]]\nslow_link = [[0, 4, 1.4]]",
        ),
    );
    std::fs::write(dir.path().join("check.json"), run.report.to_string()).unwrap();
    let page = dir.path().join("report.html");
    let output = common::run_stackbench(&[
        "report",
        &dir.path().display().to_string(),
        "--format",
        "html",
        "--output",
        &page.display().to_string(),
    ]);
    assert!(output.status.success(), "{output:?}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("Copy-engine copies between GPUs, one way, GB/s (SIMULATED)"));
    assert!(html.contains("title=\"GPU 1 to GPU 2: "), "{html}");
    assert!(html.contains("<code>peer_access_denied</code>"));
    let out = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let shot = common::screenshot(&page, &out.join("node-heat-map.png"));
    // The healthy pairs' green (hsl(120, 70%, 75%)) and the denied pair's red.
    let green = shot.count(|[r, g, b]| g > 220 && r < 160 && b < 160 && r.abs_diff(b) < 8);
    let red = shot.count(|[r, g, b]| r > 220 && g < 170 && b < 170);
    assert!(green > 2000, "green pixels: {green}");
    assert!(red > 200, "red pixels: {red}");
}
