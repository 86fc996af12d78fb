//! The history store and the fleet verdict (issue 52's Done-when): a generated fleet of 1,000
//! nodes × 90 nights whose truth is known goes into the store through ingest's own code; the
//! fleet verdict finds the driver's 1.5% on the copy and nothing else, names exactly the three
//! broken nodes, and a fleet without a change gives no `slower` or `faster`. The store reads
//! back in DuckDB as it is, holds each run once however often it is ingested, and is under a
//! tenth of the JSON's size for the same runs.

// Tests read the files they make and the checkout's own: std's readers are theirs (clippy.toml).
#![allow(clippy::disallowed_methods)]

mod common;

use common::fleet::{self, Spec};
use common::{isolated_stackbench, stdout_json};
use serde_json::Value;
use stackbench::store::{Columns, Store};
use std::path::Path;

/// `compare --fleet driver=570.* driver=580.* --store STORE --format json`: exit status, report.
fn fleet_verdict(home: &Path, store: &Path) -> (Option<i32>, Value) {
    let output = isolated_stackbench(home)
        .args([
            "compare",
            "--fleet",
            "driver=570.*",
            "driver=580.*",
            "--format",
            "json",
        ])
        .arg("--store")
        .arg(store)
        .output()
        .expect("run stackbench compare --fleet");
    (output.status.code(), stdout_json(&output))
}

/// The verdict of each row, by id.
fn verdicts(report: &Value) -> Vec<(String, String)> {
    report["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| {
            (
                r["id"].as_str().unwrap_or_default().to_owned(),
                r["verdict"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

#[test]
fn the_fleet_verdict_finds_the_driver_s_cost_on_the_copy_alone_and_names_the_broken_nodes() {
    let home = tempfile::tempdir().expect("temporary directory");
    let store = home.path().join("store");
    let spec = Spec::issue();
    let added = fleet::generate(&spec, &Store::at(&store));
    assert_eq!(added, spec.nodes * spec.nights);

    let (code, report) = fleet_verdict(home.path(), &store);
    assert_eq!(code, Some(1), "a slower row and broken nodes are findings");
    let verdicts = verdicts(&report);
    assert!(verdicts.len() >= 5, "{verdicts:?}");
    for (id, verdict) in &verdicts {
        if id.starts_with("copy/") {
            assert_eq!(verdict, "slower", "{id}: {report}");
        } else {
            assert!(verdict != "slower" && verdict != "faster", "{id} {verdict}");
        }
    }
    let copy = &report["rows"][0];
    let ratio = copy["ratio"]["ratio"].as_f64().expect("a ratio");
    assert!((ratio - 1.015).abs() < 0.002, "{copy}");
    assert_eq!(report["new"]["nodes"], 300, "{}", report["new"]);
    assert_eq!(report["old"]["nodes"], 1000, "{}", report["old"]);

    let mut named: Vec<&str> = report["outliers"]
        .as_array()
        .expect("outliers")
        .iter()
        .map(|o| o["host"].as_str().unwrap_or_default())
        .collect();
    named.sort_unstable();
    named.dedup();
    let broken: Vec<String> = spec.broken.iter().map(|&n| Spec::host(n)).collect();
    assert_eq!(named, broken, "{}", report["outliers"]);
    // dcgm-exporter's labels: the GPU's index and its PCI bus id as the exporter writes it.
    assert_eq!(report["outliers"][0]["pci_bus_id"], "00000000:1B:00.0");
    assert_eq!(report["outliers"][0]["gpu"], 0);
}

#[test]
fn the_report_of_a_store_draws_each_night_of_the_fleet_a_line_per_driver() {
    let home = tempfile::tempdir().expect("temporary directory");
    let store = home.path().join("store");
    let spec = Spec::issue();
    fleet::generate(&spec, &Store::at(&store));
    let report = |format: &str, select: Option<&str>| {
        let mut command = isolated_stackbench(home.path());
        command
            .args(["report", "--format", format, "--store"])
            .arg(&store);
        if let Some(select) = select {
            command.args(["--select", select]);
        }
        let output = command.output().expect("run stackbench report --store");
        assert!(output.status.success(), "{output:?}");
        output.stdout
    };
    let history: Value = serde_json::from_slice(&report("json", None)).expect("JSON");
    let nights = history["runs"].as_array().expect("runs");
    assert_eq!(nights.len(), spec.nights);
    assert_eq!(nights[0]["when"], "2026-08-01");
    assert_eq!(nights[0]["hostname"], "1000 nodes");
    let copy = history["charts"]
        .as_array()
        .expect("charts")
        .iter()
        .find(|c| {
            c["benchmark"]
                .as_str()
                .is_some_and(|b| b.starts_with("copy/"))
        })
        .expect("a copy chart");
    let lines = copy["series"].as_array().expect("series");
    assert_eq!(lines.len(), 2, "{copy}");
    let old = &lines[0]["points"];
    let new = &lines[1]["points"];
    assert_eq!(old.as_array().map(Vec::len), Some(spec.nights));
    assert_eq!(
        new.as_array().map(Vec::len),
        Some(spec.nights - spec.change_night)
    );
    assert_eq!(new[0]["run"], spec.change_night);
    let shift = new[0]["median_ns"].as_f64().unwrap() / old[0]["median_ns"].as_f64().unwrap();
    assert!((shift - 1.015).abs() < 0.002, "{shift}");

    let page = String::from_utf8(report("html", None)).expect("HTML");
    assert!(page.contains("<svg") && page.contains("driver 580.95.05"));
    // A selector narrows the nights to what it takes.
    let history: Value =
        serde_json::from_slice(&report("json", Some("driver=580.*"))).expect("JSON");
    assert_eq!(
        history["runs"].as_array().map(Vec::len),
        Some(spec.nights - spec.change_night)
    );
}

#[test]
fn a_fleet_without_a_change_gives_no_slower_or_faster() {
    let home = tempfile::tempdir().expect("temporary directory");
    let store = home.path().join("store");
    let spec = Spec {
        nodes: 200,
        nights: 30,
        change_night: 20,
        copy_cost: 0.0,
        broken: Vec::new(),
        ..Spec::issue()
    };
    fleet::generate(&spec, &Store::at(&store));
    let (code, report) = fleet_verdict(home.path(), &store);
    for (id, verdict) in verdicts(&report) {
        assert!(verdict != "slower" && verdict != "faster", "{id} {verdict}");
    }
    assert_eq!(report["outliers"], serde_json::json!([]), "{report}");
    assert_eq!(code, Some(0), "{report}");
}

#[test]
fn ingest_holds_each_run_once_and_duckdb_reads_the_store_as_it_is() {
    let home = tempfile::tempdir().expect("temporary directory");
    let store = home.path().join("store");
    let results = Path::new(env!("CARGO_MANIFEST_DIR")).join("results");
    let ingest = || {
        let output = isolated_stackbench(home.path())
            .arg("ingest")
            .arg(&results)
            .arg("--store")
            .arg(&store)
            .args(["--format", "json"])
            .output()
            .expect("run stackbench ingest");
        stdout_json(&output)
    };
    let first = ingest();
    // Four bench runs, three check runs and the H200's doctor run are committed; the H100s'
    // doctor runs (written before doctor kept its start time), the comparisons of torch and the
    // like are passed over with their reasons.
    assert_eq!(first["added"], 8, "{first}");
    assert!(first["passed_over"]
        .as_array()
        .is_some_and(|p| !p.is_empty()));
    let again = ingest();
    assert_eq!(again["added"], 0, "{again}");
    assert_eq!(again["already_stored"], 8, "{again}");

    let rows = Store::at(&store)
        .read(Columns::All)
        .expect("read the store");
    let copy: Vec<f64> = rows
        .iter()
        .filter(|r| r.row_id == "copy/toolkit:cuda-13.0/driver/1073741824/batch")
        .filter_map(|r| r.figure)
        .collect();
    assert_eq!(copy.len(), 4);

    let python = common::ci_tool_venv_python();
    let query = format!(
        "import duckdb, sys\n\
         rows = duckdb.sql(\"SELECT count(*), count(DISTINCT run_id), \
         sum(figure) FILTER (WHERE row_id = 'copy/toolkit:cuda-13.0/driver/1073741824/batch'), \
         count(DISTINCT date), sum(len(samples)) \
         FROM read_parquet('{}/**/*.parquet', hive_partitioning = true)\").fetchall()\n\
         print(*rows[0])\n",
        store.display()
    );
    let output = std::process::Command::new(python)
        .args(["-c", &query])
        .output()
        .expect("run DuckDB");
    assert!(output.status.success(), "{output:?}");
    let answer = String::from_utf8_lossy(&output.stdout);
    let fields: Vec<&str> = answer.split_whitespace().collect();
    let samples: usize = rows.iter().map(|r| r.samples.len()).sum();
    let days: std::collections::BTreeSet<String> = rows
        .iter()
        .map(|r| stackbench::store::day(r.started_us))
        .collect();
    assert_eq!(fields[0], rows.len().to_string(), "{answer}");
    assert_eq!(fields[1], "8", "{answer}");
    let sum: f64 = fields[2].parse().expect("a sum");
    assert!(
        (sum - copy.iter().sum::<f64>()).abs() < 1e-6 * sum,
        "{answer}"
    );
    assert_eq!(fields[3], days.len().to_string(), "{answer}");
    assert_eq!(fields[4], samples.to_string(), "{answer}");
}

#[test]
fn the_store_is_under_a_tenth_of_the_json_of_the_same_runs() {
    let home = tempfile::tempdir().expect("temporary directory");
    let store = Store::at(&home.path().join("store"));
    // Full runs: the committed H100 runs, each as 40 nodes' runs (own ids, hosts, boots).
    let mut json_bytes = 0;
    let mut runs = Vec::new();
    for file in [
        "results/bench-vm-h100-2026-11-26.json",
        "results/bench-vm-h100-2026-11-27.json",
        "results/bench-vm-h100-2026-11-27-2.json",
    ] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
        let text = std::fs::read_to_string(path).expect("a committed run");
        let run: stackbench::bench::model::BenchReport =
            serde_json::from_str(&text).expect("a bench run");
        for n in 0..40 {
            let mut copy = run.clone();
            copy.run_id = Some(format!("{file}-{n}"));
            copy.host.hostname = Spec::host(n);
            json_bytes += serde_json::to_vec_pretty(&copy).expect("JSON").len();
            runs.push(stackbench::compare::load::Run::Bench(copy));
        }
    }
    stackbench::store::ingest::add(&store, &runs).expect("ingest");
    let store_bytes: u64 = store
        .files()
        .expect("the store's files")
        .iter()
        .map(|f| std::fs::metadata(f).expect("a file").len())
        .sum();
    let ratio = json_bytes as f64 / store_bytes as f64;
    eprintln!("120 full runs: JSON {json_bytes} bytes, store {store_bytes} bytes: {ratio:.1}x");
    assert!(ratio > 10.0, "JSON {json_bytes}, store {store_bytes}");
}

#[test]
fn a_doctor_run_is_a_row_for_the_run_and_one_per_finding() {
    let home = tempfile::tempdir().expect("temporary directory");
    let store = home.path().join("store");
    let committed =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("results/doctor-h100-2026-11-27.json");
    let mut run: Value =
        serde_json::from_str(&std::fs::read_to_string(&committed).unwrap()).unwrap();
    let ingest = |file: &Path| {
        let output = isolated_stackbench(home.path())
            .arg("ingest")
            .arg(file)
            .arg("--store")
            .arg(&store)
            .args(["--format", "json"])
            .output()
            .expect("run stackbench ingest");
        (output.status.code(), stdout_json(&output))
    };
    // The committed run has no start time: it cannot be placed in time, and says so.
    let (code, report) = ingest(&committed);
    assert_eq!(code, Some(1));
    let why = report["passed_over"][0]["reason"].as_str().unwrap();
    assert!(why.contains("without a start time"), "{why}");

    run["started"] = "2026-11-28T02:00:00Z".into();
    let file = home.path().join("doctor.json");
    std::fs::write(&file, serde_json::to_vec(&run).unwrap()).unwrap();
    let (code, report) = ingest(&file);
    assert_eq!(code, Some(0), "{report}");
    assert_eq!(report["added"], 1);
    let rows = Store::at(&store)
        .read(Columns::All)
        .expect("read the store");
    let findings = run["findings"].as_array().unwrap();
    let folded: usize = (findings.iter())
        .map(|f| f["also"].as_array().map_or(0, Vec::len))
        .sum();
    assert_eq!(rows.len(), 1 + findings.len() + folded);
    assert!(rows
        .iter()
        .all(|r| r.command == "doctor" && r.figure.is_none()));
    let whole = rows
        .iter()
        .find(|r| r.kind == "doctor")
        .expect("the run's row");
    assert_eq!(whole.status, "warning", "the worst of its findings");
    assert_eq!(
        whole.driver.as_deref(),
        run["gpu"]["driver_version"].as_str()
    );
    let shadowed = rows.iter().filter(|r| r.kind == "shadowed").count();
    let expected = (findings.iter())
        .filter(|f| f["cause"] == "shadowed")
        .map(|f| 1 + f["also"].as_array().map_or(0, Vec::len))
        .sum::<usize>();
    assert_eq!(shadowed, expected);
    assert!(shadowed > 0);
}
