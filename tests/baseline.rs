//! Baselines (issue 52, item 4): `stackbench baseline` learns what a fleet expects of a node from
//! the store, and `merge --baseline` and `check --baseline` hold a node to it. A generated
//! fleet whose truth is known gives the bench rows (a node 8% slow on every row among healthy
//! ones); the committed H100 check run gives real copies, in GB/s, where more is better.

// Tests read the files they make and the checkout's own: std's readers are theirs (clippy.toml).
#![allow(clippy::disallowed_methods)]

mod common;

use common::fleet::{self, Spec};
use common::isolated_stackbench;
use serde_json::Value;
use stackbench::compare::load::Run;
use stackbench::store::Store;
use std::path::{Path, PathBuf};

/// The committed H100 check run, with its node probe's four copies.
const CHECK_RUN: &str = "results/check-h100-2026-11-27.json";

/// `stackbench ARGS` in `home`: exit status and standard output.
fn stackbench(home: &Path, args: &[&str]) -> (Option<i32>, Vec<u8>) {
    let output = isolated_stackbench(home)
        .args(args)
        .output()
        .expect("run stackbench");
    assert!(
        output.status.code().is_some_and(|c| c < 2),
        "stackbench {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.code(), output.stdout)
}

/// `stackbench baseline --store STORE [--select SEL] --format json -o FILE`: the file's JSON.
fn baseline(home: &Path, store: &Path, select: Option<&str>) -> (PathBuf, Value) {
    let file = home.join("baseline.json");
    let mut args = vec!["baseline", "--store", store.to_str().unwrap()];
    if let Some(select) = select {
        args.extend(["--select", select]);
    }
    args.extend(["--format", "json", "-o", file.to_str().unwrap()]);
    let (code, _) = stackbench(home, &args);
    assert_eq!(code, Some(0));
    let text = std::fs::read_to_string(&file).expect("the baseline file");
    (file, serde_json::from_str(&text).expect("JSON"))
}

/// The judged rows of a report's `baseline`, by host: (id, standing, slowdown).
fn judged(report: &Value, host: &str) -> Vec<(String, String, f64)> {
    report["baseline"]["rows"]
        .as_array()
        .expect("judged rows")
        .iter()
        .filter(|r| r["host"] == host)
        .map(|r| {
            (
                r["id"].as_str().unwrap_or_default().to_owned(),
                r["standing"].as_str().unwrap_or_default().to_owned(),
                r["slowdown"].as_f64().unwrap_or(f64::NAN),
            )
        })
        .collect()
}

#[test]
fn a_node_slower_than_its_fleet_s_baseline_is_named_and_its_healthy_peers_are_within() {
    let home = tempfile::tempdir().expect("temporary directory");
    let store = home.path().join("store");
    let spec = Spec {
        nodes: 60,
        nights: 4,
        change_night: 2,
        broken: vec![17],
        ..Spec::issue()
    };
    fleet::generate(&spec, &Store::at(&store));
    let (file, learned) = baseline(home.path(), &store, Some("driver=570.*"));
    let entries = learned["entries"].as_array().expect("entries");
    assert_eq!(entries.len(), 6, "one per benchmark of the generated runs");
    for entry in entries {
        assert_eq!(entry["nodes"], 60, "{entry}");
        assert_eq!(entry["driver"], fleet::OLD_DRIVER);
        let (low, high) = (
            entry["low"].as_f64().unwrap(),
            entry["high"].as_f64().unwrap(),
        );
        let expected = entry["expected"].as_f64().unwrap();
        assert!(low < expected && expected < high, "{entry}");
        // The 8% slow node does not move the median node or the robust spread.
        assert!(entry["spread"].as_f64().unwrap() < 0.002, "{entry}");
    }

    // Night 3's runs of a healthy node, the broken one and one on the new driver, as files.
    let base = fleet::base(spec.samples);
    let offsets = fleet::offsets(&spec);
    let write = |n: usize| {
        let path = home.path().join(format!("node-{n}.json"));
        let run = fleet::run(&spec, &base, &offsets, n, 3);
        std::fs::write(&path, serde_json::to_vec(&run).unwrap()).unwrap();
        path.to_str().unwrap().to_owned()
    };
    let (healthy, broken, upgraded) = (write(5), write(17), write(0));
    let file = file.to_str().unwrap();
    let (code, stdout) = stackbench(
        home.path(),
        &[
            "merge",
            &healthy,
            &broken,
            &upgraded,
            "--baseline",
            file,
            "--format",
            "json",
        ],
    );
    assert_eq!(code, Some(1), "a node slower than its fleet is an outlier");
    let report: Value = serde_json::from_slice(&stdout).expect("JSON");
    let broken_rows = judged(&report, "node-0017");
    assert_eq!(broken_rows.len(), 6);
    for (id, standing, slowdown) in &broken_rows {
        assert_eq!(standing, "slower", "{id}");
        assert!((slowdown - 1.08).abs() < 0.01, "{id}: {slowdown}");
    }
    let healthy_rows = judged(&report, "node-0005");
    assert_eq!(healthy_rows.len(), 6);
    assert!(
        healthy_rows.iter().all(|r| r.1 == "within"),
        "{healthy_rows:?}"
    );
    // The node on driver 580 is not held to driver 570's figures: it is named unjudged.
    assert!(judged(&report, "node-0000").is_empty());
    let unjudged = report["baseline"]["unjudged"].as_array().expect("unjudged");
    assert_eq!(unjudged.len(), 6);
    let why = unjudged[0]["why"].as_str().unwrap();
    assert!(
        why.contains("only with driver 570.195.03, not 580.95.05"),
        "{why}"
    );
    let outliers: Vec<&str> = (report["outliers"].as_array().unwrap().iter())
        .filter_map(Value::as_str)
        .collect();
    assert!(
        outliers
            .iter()
            .any(|o| o.starts_with("node-0017 GPU 0 (00000000:1B:00.0) ")),
        "{outliers:?}"
    );
    assert!(!outliers.iter().any(|o| o.contains("node-0005")));

    // OpenMetrics carries each row's ratio with dcgm-exporter's labels, to join its series.
    let (_, text) = stackbench(
        home.path(),
        &[
            "merge",
            &broken,
            "--baseline",
            file,
            "--format",
            "openmetrics",
        ],
    );
    let text = String::from_utf8(text).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with("stackbench_baseline_ratio{") && l.contains("copy/"))
        .expect("a baseline ratio of the copy");
    assert!(line.contains(r#"Hostname="node-0017""#), "{line}");
    assert!(line.contains(r#"gpu="0""#), "{line}");
    assert!(line.contains(r#"pci_bus_id="00000000:1B:00.0""#), "{line}");
    let value: f64 = line.rsplit(' ').next().unwrap().parse().unwrap();
    assert!((value - 1.08).abs() < 0.01, "{line}");
    assert!(text.contains("stackbench_baseline_slower{"));

    // One healthy node alone is a fleet of one, held to the baseline: exit 0.
    let (code, stdout) = stackbench(
        home.path(),
        &["merge", &healthy, "--baseline", file, "--format", "json"],
    );
    assert_eq!(code, Some(0));
    let report: Value = serde_json::from_slice(&stdout).unwrap();
    assert_eq!(
        report["notes"][0],
        stackbench::merge::ONE_NODE_BASELINE_NOTE
    );
}

/// The committed check run with its host renamed and its copies' bandwidths scaled.
fn check_run(host: &str, started: &str, scale: impl Fn(&Value) -> f64) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(CHECK_RUN);
    let mut run: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    run["host"]["hostname"] = host.into();
    run["started"] = started.into();
    for copy in run["node"]["copies"].as_array_mut().unwrap() {
        let gbs = copy["gbs"].as_f64().unwrap() * scale(copy);
        copy["gbs"] = gbs.into();
    }
    run
}

#[test]
fn check_holds_a_node_s_copies_to_its_fleet_where_more_bandwidth_is_better() {
    let home = tempfile::tempdir().expect("temporary directory");
    let store = Store::at(&home.path().join("store"));
    let runs: Vec<Run> = [0.997, 1.0, 1.002, 0.999, 1.001, 1.003]
        .iter()
        .enumerate()
        .map(|(n, factor)| {
            let run = check_run(&format!("gpu-{n}"), "2026-11-27T19:05:37Z", |_| *factor);
            Run::Check(serde_json::from_value(run).unwrap())
        })
        .collect();
    stackbench::store::ingest::add(&store, &runs).expect("ingest");
    let (file, learned) = baseline(home.path(), store.dir(), None);
    let kinds: Vec<&str> = (learned["entries"].as_array().unwrap().iter())
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "node/copy/ce/d2h",
            "node/copy/ce/d2h/both",
            "node/copy/ce/h2d",
            "node/copy/ce/h2d/both"
        ]
    );
    assert_eq!(learned["entries"][0]["unit"], "GB/s");

    let file = file.to_str().unwrap();
    let judge = |run: &Value| {
        let path = home.path().join("node.json");
        std::fs::write(&path, serde_json::to_vec(run).unwrap()).unwrap();
        let (code, stdout) = stackbench(
            home.path(),
            &[
                "check",
                "--from",
                path.to_str().unwrap(),
                "--baseline",
                file,
                "--format",
                "json",
            ],
        );
        (
            code,
            serde_json::from_slice::<Value>(&stdout).expect("JSON"),
        )
    };
    let (code, report) = judge(&check_run("node", "2026-11-28T02:00:00Z", |_| 1.0));
    assert_eq!(code, Some(0), "{}", report["baseline"]);
    let rows = judged(&report, "node");
    assert_eq!(rows.len(), 4);
    assert!(rows.iter().all(|r| r.1 == "within"), "{rows:?}");

    // 10% less bandwidth host to device: slower by 1/0.9, and a failure of the check run.
    let slow_h2d = |copy: &Value| {
        let h2d = copy["src"].is_null() && copy["both_ways"] == false;
        if h2d {
            0.9
        } else {
            1.0
        }
    };
    let (code, report) = judge(&check_run("node", "2026-11-28T02:00:00Z", slow_h2d));
    assert_eq!(code, Some(1));
    let rows = judged(&report, "node");
    let slower: Vec<_> = rows.iter().filter(|r| r.1 == "slower").collect();
    assert_eq!(slower.len(), 1, "{rows:?}");
    assert_eq!(slower[0].0, "node/copy/ce/host-0");
    assert!((slower[0].2 - 1.0 / 0.9).abs() < 0.01, "{rows:?}");
    let row = &report["baseline"]["rows"][0];
    assert_eq!(row["pci_bus_id"], "00000000:00:06.0");
    assert_eq!(row["gpu"], 0);
}
