//! `stackbench compare` on real runs over the fixture toolkits: a run compared with itself is
//! never `slower` or `faster` (and `same` only where its interval fits the threshold); a second
//! run of the same build is matched row for row (no verdict asserted: nothing here may depend
//! on how busy the machine is; `compare_repeated` holds the A/A test of interleaved
//! repetitions); the same run with every sample three times as long is
//! `slower` and exits 1; `check` with the fixture driver against `check` without one is a
//! conformance regression, its environment showing the driver that went; doctor runs of two
//! trees show the libraries that went; bad input exits 2 saying why. And `stackbench merge`
//! of one real run as five nodes, one of them slow, and of check runs, one node without its
//! driver: the outliers come first and exit 1.

// Tests read the files they make and the checkout's own: std's readers are theirs (clippy.toml).
#![allow(clippy::disallowed_methods)]

mod common;

use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;

/// A real quick bench run of one fixture combination (its CPU-side figures), as a file.
fn bench_run() -> &'static PathBuf {
    static RUN: OnceLock<PathBuf> = OnceLock::new();
    RUN.get_or_init(|| fresh_bench_run("bench-run.json"))
}

/// A new quick bench run of one fixture combination, written to `name`.
fn fresh_bench_run(name: &str) -> PathBuf {
    // One repetition: a side's interval is then the noise floor's, which no load on this
    // machine moves (three repetitions under load can differ by more than threefold).
    let output = fixture_bench("1");
    let path = scratch().join(name);
    std::fs::write(&path, &output.stdout).unwrap();
    path
}

/// A run compared with itself: the same figures, but the interval still carries the variation
/// between runs (the stated default floor, with no history), so no row is `slower` or `faster`,
/// and `same` only where the whole interval fits within the threshold.
#[test]
fn a_run_compared_with_itself_is_never_slower_or_faster() {
    let run = bench_run();
    let empty = scratch().join("no-history");
    std::fs::create_dir_all(&empty).unwrap();
    let output = compare_json(run, run, &["--results", empty.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0));
    let report = stdout_json(&output);
    assert_eq!(report["schema"], "stackbench.compare/v1");
    assert_eq!(report["kind"], "bench");
    let rows = report["benchmarks"].as_array().unwrap();
    assert_eq!(rows.len(), 3, "two compile rows and the load row: {rows:?}");
    for row in rows {
        let ratio = &row["ratio"];
        assert_eq!(ratio["ratio"], 1.0, "{row}");
        let (low, high) = (
            ratio["low"].as_f64().unwrap(),
            ratio["high"].as_f64().unwrap(),
        );
        assert!(low < 1.0 && high > 1.0, "{row}");
        let within = low >= 0.98 && high <= 1.02;
        let expected = if within { "same" } else { "unclear" };
        assert_eq!(row["verdict"], expected, "{row}");
        assert_eq!(row["old_repetitions"], 1, "the run repeats once: {row}");
    }
    assert_eq!(report["environment"], serde_json::json!([]));
}

/// Two runs of the same build, minutes apart, are matched row for row with nothing changed in
/// their environment. Their verdicts are not asserted: a neighbour's load that lasts through the
/// whole of one run and not the other is a real slowdown of that run, which the verdict rightly
/// shows (`compare_repeated` holds the A/A test of interleaved repetitions, which a load falls
/// on alike).
#[test]
fn two_runs_of_the_same_build_are_matched_row_for_row() {
    let first = bench_run();
    let second = fresh_bench_run("bench-run-again.json");
    let output = compare_json(first, &second, &[]);
    let report = stdout_json(&output);
    let rows = report["benchmarks"].as_array().unwrap();
    assert_eq!(rows.len(), 3, "two compile rows and the load row: {rows:?}");
    for row in rows {
        let ratio = row["ratio"]["ratio"].as_f64().unwrap();
        assert!(ratio.is_finite() && ratio > 0.0, "{row}");
        assert_eq!(row["old_status"], "measured", "{row}");
        assert_eq!(row["new_status"], "measured", "{row}");
    }
    assert_eq!(report["environment"], serde_json::json!([]));
}

/// The real run with every sample of a row at the row's median times `factor`: a run whose
/// rows have no spread of their own, so that a verdict on it does not hang on how busy this
/// machine was while it measured (a compile's samples on two busy cores can spread more than
/// threefold, and then a threefold change is rightly `unclear`).
fn steady(run: &Value, factor: f64) -> Value {
    let mut steady = run.clone();
    for row in steady["benchmarks"].as_array_mut().unwrap() {
        let Some(median) = row["summary"]["median_ns"].as_f64() else {
            continue;
        };
        if let Some(samples) = row["samples_ns"].as_array_mut() {
            samples
                .iter_mut()
                .for_each(|s| *s = Value::from(median * factor));
        }
    }
    steady
}

/// `run` written into the scratch directory as `name`.
fn written(run: &Value, name: &str) -> PathBuf {
    let path = scratch().join(name);
    std::fs::write(&path, serde_json::to_vec(run).unwrap()).unwrap();
    path
}

#[test]
fn the_same_run_three_times_as_slow_is_slower_and_exits_1() {
    let real: Value = serde_json::from_slice(&std::fs::read(bench_run()).unwrap()).unwrap();
    let run = &written(&steady(&real, 1.0), "bench-steady.json");
    let mut slowed = steady(&real, 3.0);
    slowed["host"]["stackbench_version"] = Value::from("0.0.9");
    let slow = written(&slowed, "bench-slow.json");
    let output = compare_json(run, &slow, &[]);
    assert_eq!(output.status.code(), Some(1));
    let report = stdout_json(&output);
    for row in report["benchmarks"].as_array().unwrap() {
        assert_eq!(row["verdict"], "slower", "{row}");
        let ratio = row["ratio"]["ratio"].as_f64().unwrap();
        assert!((ratio - 3.0).abs() < 1e-6, "{row}");
    }
    assert_eq!(report["regressions"].as_array().unwrap().len(), 3);
    let change = &report["environment"][0];
    assert_eq!(change["what"], "stackbench", "{change}");
    // The other way round it is faster, which is no regression.
    assert_eq!(compare_json(&slow, run, &[]).status.code(), Some(0));
}

/// The real run as the simulated GPU would have made it, three times as slow: a simulated GPU
/// is another GPU (the same-GPU rule refuses it without --allow-different-gpus), and compared
/// anyway its rows say they set a simulated figure against a real one, the headline and the
/// environment say which run was simulated, and nothing counts as a regression.
#[test]
fn a_simulated_run_against_a_real_one_says_so_and_is_never_a_regression() {
    let real: Value = serde_json::from_slice(&std::fs::read(bench_run()).unwrap()).unwrap();
    let run = &written(&steady(&real, 1.0), "bench-steady-real.json");
    let mut simulated = steady(&real, 3.0);
    simulated["simulated"] = Value::from(true);
    simulated["gpu"]["devices"] = serde_json::json!([{"index": 0, "name": "stackbench simulated GPU (H100-like)", "compute_capability": "15.0"}]);
    for c in simulated["combinations"].as_array_mut().unwrap() {
        c["simulated"] = Value::from(true);
    }
    let path = written(&simulated, "bench-simulated.json");
    let refused = compare_json(run, &path, &[]);
    assert_eq!(refused.status.code(), Some(2));
    let output = compare_json(run, &path, &["--allow-different-gpus"]);
    assert_eq!(output.status.code(), Some(0), "not a regression");
    let report = stdout_json(&output);
    assert_eq!(report["new"]["simulated"], true);
    assert!(report["old"].get("simulated").is_none());
    let headline_note = "old ran on a real GPU, new on the SIMULATED GPU";
    let change = &report["environment"][0];
    assert_eq!(change["what"], "ran on", "{change}");
    assert_eq!(
        change["new"],
        "SIMULATED GPU (stackbench's simulated driver)"
    );
    let rows = report["benchmarks"].as_array().unwrap();
    assert!(!rows.is_empty());
    for row in rows {
        assert_eq!(row["verdict"], "slower", "{row}");
        assert_eq!(row["simulated_vs_real"], true, "{row}");
    }
    assert_eq!(report["regressions"], serde_json::json!([]));
    let terminal = stackbench_alone(&[
        "compare",
        run.to_str().unwrap(),
        path.to_str().unwrap(),
        "--allow-different-gpus",
    ]);
    let text = String::from_utf8_lossy(&terminal.stdout);
    let first = text.lines().next().unwrap();
    assert!(first.contains(headline_note), "{text}");
    assert!(
        text.contains("slower (simulated vs real: not a regression)"),
        "{text}"
    );
    assert!(text.contains("(SIMULATED GPU)"), "{text}");
}

/// `check` of CUDA 12.9's wheels, with the fixture driver or with none, as a file.
fn check_run(with_driver: bool, name: &str) -> PathBuf {
    let root = toolkits();
    let driver = fixture(DRIVER_AMD64);
    let mut args = vec![
        "check",
        "--no-system",
        "--root",
        root.to_str().unwrap(),
        "--combination",
        "pip:venv-cu12",
        "--target",
        "sm_90",
        "--format",
        "json",
    ];
    if with_driver {
        args.extend(["--driver-dir", driver.to_str().unwrap()]);
    }
    let output = stackbench_alone(&args);
    let path = scratch().join(name);
    std::fs::write(&path, &output.stdout).unwrap();
    path
}

#[test]
fn losing_the_driver_is_a_conformance_regression() {
    let driver = fixture(DRIVER_AMD64);
    let with = check_run(true, "check-with-driver.json");
    let without = check_run(false, "check-without-driver.json");
    let output = compare_json(&with, &without, &[]);
    assert_eq!(output.status.code(), Some(1));
    let report = stdout_json(&output);
    let rows = report["checks"].as_array().unwrap();
    let library = rows
        .iter()
        .find(|r| r["id"] == "driver.library")
        .expect("driver.library changed");
    assert_eq!(library["change"], "regression", "{library}");
    assert_eq!(
        (
            library["old_status"].as_str(),
            library["new_status"].as_str()
        ),
        (Some("pass"), Some("fail"))
    );
    assert!(report["regressions"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r == "pip:venv-cu12 driver.library: fails now"));
    // The environment says where the driver went: --driver-dir, and the file the combination
    // used, on both sides.
    let changes = report["environment"].as_array().unwrap();
    let changed = |what: &str| {
        changes
            .iter()
            .find(|c| c["what"] == what)
            .unwrap_or_else(|| panic!("no {what} change in {changes:?}"))
    };
    let dir = changed("driver directory (--driver-dir)");
    assert_eq!(dir["old"], driver.to_str().unwrap(), "{dir}");
    assert_eq!(dir["new"], Value::Null, "{dir}");
    let file = changed("pip:venv-cu12 driver library path");
    assert!(
        file["old"].as_str().unwrap().contains("libcuda.so.535"),
        "{file}"
    );
    assert_eq!(file["new"], Value::Null, "{file}");
    let version = changed("pip:venv-cu12 driver library version");
    assert_eq!(version["old"], "535.261.03", "{version}");
    // Getting the driver back fixes it, and that is no regression.
    let back = stdout_json(&compare_json(&without, &with, &[]));
    let fixed = back["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == "driver.library")
        .unwrap();
    assert_eq!(fixed["change"], "fixed");
    assert_eq!(back["regressions"], serde_json::json!([]));
    // Markdown, for a pull request or the step summary.
    let markdown = stackbench_alone(&[
        "compare",
        with.to_str().unwrap(),
        without.to_str().unwrap(),
        "--format",
        "markdown",
    ]);
    let csv = stackbench_alone(&[
        "compare",
        with.to_str().unwrap(),
        without.to_str().unwrap(),
        "--format",
        "csv",
    ]);
    let mut reader = csv::Reader::from_reader(csv.stdout.as_slice());
    let records: Vec<csv::StringRecord> = reader.records().collect::<Result<_, _>>().unwrap();
    let changes = report["environment"].as_array().unwrap().len();
    assert_eq!(
        records.len(),
        changes + rows.len(),
        "a row per change and per check"
    );
    assert!(records
        .iter()
        .any(|r| &r[0] == "check" && &r[4] == "regression"));
    let terminal =
        stackbench_alone(&["compare", with.to_str().unwrap(), without.to_str().unwrap()]);
    let shown = String::from_utf8_lossy(&terminal.stdout);
    assert!(
        shown.contains("driver.library: regression (pass → fail)"),
        "{shown}"
    );
    assert!(!shown.contains("environment unchanged"), "{shown}");
    assert!(
        shown.contains("pip:venv-cu12 driver library version"),
        "{shown}"
    );
    let text = String::from_utf8_lossy(&markdown.stdout);
    assert!(
        text.contains("| `pip:venv-cu12` | driver.library | regression | pass → fail |"),
        "{text}"
    );
}

#[test]
fn doctor_runs_show_the_libraries_that_went() {
    let root = toolkits();
    let doctor = |dir: &Path, name: &str| {
        let output = stackbench_alone(&[
            "doctor",
            "--no-load",
            "--no-system",
            "--root",
            dir.to_str().unwrap(),
            "--format",
            "json",
        ]);
        let path = scratch().join(name);
        std::fs::write(&path, &output.stdout).unwrap();
        path
    };
    let tree = scratch().join("venv");
    copy_tree(&root.join("venv-cu12"), &tree);
    let whole = doctor(&tree, "doctor-whole.json");
    std::fs::remove_dir_all(tree.join("lib/python3.11/site-packages/nvidia/cudnn")).unwrap();
    let part = doctor(&tree, "doctor-part.json");
    let output = compare_json(&whole, &part, &["--fail-on", "library"]);
    let report = stdout_json(&output);
    let gone: Vec<&str> = report["libraries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["change"] == "disappeared")
        .map(|i| i["what"].as_str().unwrap())
        .collect();
    assert!(!gone.is_empty());
    assert!(gone.iter().all(|w| w.starts_with("cudnn")), "{gone:?}");
    assert_eq!(output.status.code(), Some(1), "--fail-on library");
}

/// Copies a tree of files and symbolic links (as links).
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let (source, target) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type().unwrap();
        if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&source).unwrap(), &target).unwrap();
        } else if kind.is_dir() {
            copy_tree(&source, &target);
        } else {
            std::fs::hard_link(&source, &target)
                .or_else(|_| std::fs::copy(&source, &target).map(drop))
                .unwrap();
        }
    }
}

#[test]
fn bad_input_exits_2_naming_the_file_and_what_to_do() {
    let run = bench_run();
    let truncated = scratch().join("truncated.json");
    let text = std::fs::read(run).unwrap();
    std::fs::write(&truncated, &text[..text.len() / 2]).unwrap();
    let empty = scratch().join("empty.json");
    std::fs::write(&empty, "").unwrap();
    let other = scratch().join("other.json");
    std::fs::write(&other, r#"{"benchmarks": []}"#).unwrap();
    let mut on_h100: Value = serde_json::from_slice(&text).unwrap();
    on_h100["gpu"]["devices"] = serde_json::json!([{"index": 0, "name": "another GPU (test data)", "compute_capability": "9.0"}]);
    let elsewhere = scratch().join("elsewhere.json");
    std::fs::write(&elsewhere, serde_json::to_vec(&on_h100).unwrap()).unwrap();
    let check = check_run(true, "check-for-kinds.json");
    for (new, says) in [
        (&truncated, "not JSON"),
        (&empty, "the file is empty"),
        (&other, "no \"schema\" tag"),
        (&check, "is a bench result and"),
        (&elsewhere, "--allow-different-gpus"),
        (&scratch().join("missing.json"), "cannot read it"),
    ] {
        let output = compare_json(run, new, &[]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{}: {stderr}", new.display());
        assert!(stderr.contains(says), "{}: {stderr}", new.display());
        assert!(!stderr.contains("panicked"));
    }
    let allowed = compare_json(run, &elsewhere, &["--allow-different-gpus"]);
    assert_eq!(allowed.status.code(), Some(0));
    let gpu = &stdout_json(&allowed)["environment"][0];
    assert_eq!(gpu["what"], "GPU");
    let bad = compare_json(run, run, &["--threshold", "0"]);
    assert_eq!(bad.status.code(), Some(2));
}

/// The real bench run as the run of node `name`, its samples scaled by `factor`.
fn node_run(name: &str, factor: f64) -> PathBuf {
    let mut run: Value = serde_json::from_slice(&std::fs::read(bench_run()).unwrap()).unwrap();
    run["host"]["hostname"] = Value::from(name);
    for row in run["benchmarks"].as_array_mut().unwrap() {
        if let Some(summary) = row["summary"].as_object_mut() {
            for key in ["median_ns", "q1_ns", "q3_ns", "min_ns", "max_ns"] {
                let scaled = summary[key].as_f64().unwrap() * factor;
                summary.insert(key.to_owned(), Value::from(scaled));
            }
        }
    }
    let path = scratch().join(format!("{name}.json"));
    std::fs::write(&path, serde_json::to_vec(&run).unwrap()).unwrap();
    path
}

fn merge(files: &[&Path], format: &str) -> Output {
    let mut args = vec!["merge", "--format", format];
    args.extend(files.iter().map(|f| f.to_str().unwrap()));
    stackbench_alone(&args)
}

#[test]
fn merge_lists_the_node_beyond_the_fleet_s_spread_first() {
    let nodes: Vec<PathBuf> = [
        ("node-1", 1.0),
        ("node-2", 1.01),
        ("node-3", 0.99),
        ("node-4", 1.3),
        ("node-5", 1.005),
    ]
    .iter()
    .map(|(name, factor)| node_run(name, *factor))
    .collect();
    let files: Vec<&Path> = nodes.iter().map(PathBuf::as_path).collect();
    let output = merge(&files, "json");
    assert_eq!(output.status.code(), Some(1), "an outlier exits 1");
    let report = stdout_json(&output);
    assert_eq!(report["schema"], "stackbench.merge/v1");
    let rows = report["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 5 * 3, "three measured benchmarks per node");
    for (at, row) in rows.iter().enumerate() {
        let outlier = row["node"] == "node-4";
        assert_eq!(row["outlier"], outlier, "{row}");
        assert_eq!(at < 3, outlier, "outliers first");
    }
    assert!(report["outliers"][0]
        .as_str()
        .unwrap()
        .starts_with("node-4 "));
    // Without the slow node, no outlier.
    let calm = merge(&[files[0], files[1], files[2]], "markdown");
    assert_eq!(calm.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&calm.stdout).contains("No outlier."));
}

#[test]
fn merge_lists_a_node_whose_checks_fail_and_refuses_mixed_files() {
    let as_node = |path: PathBuf, name: &str| {
        let mut run: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        run["host"]["hostname"] = Value::from(name);
        std::fs::write(&path, serde_json::to_vec(&run).unwrap()).unwrap();
        path
    };
    let healthy = as_node(check_run(true, "check-node-a.json"), "node-a");
    let broken = as_node(check_run(false, "check-node-b.json"), "node-b");
    let output = merge(&[&healthy, &broken], "json");
    let report = stdout_json(&output);
    assert_eq!(output.status.code(), Some(1));
    let rows = report["rows"].as_array().unwrap();
    // Without a GPU both nodes fail cuInit; node-b fails from its driver library on.
    assert!(rows.iter().all(|r| r["outlier"] == true), "{rows:?}");
    let b = rows.iter().find(|r| r["node"] == "node-b").unwrap();
    let failed: Vec<&str> = b["failed_checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert!(failed.contains(&"driver.library"), "{failed:?}");
    let mixed = merge(&[&healthy, bench_run()], "json");
    assert_eq!(mixed.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&mixed.stderr).contains("merge the same command's results"));
    // One node is a fleet of one: its table and a note; its failing checks still count.
    let one = merge(&[&healthy], "json");
    assert_eq!(one.status.code(), Some(1));
    let one = stdout_json(&one);
    assert_eq!(one["nodes"].as_array().unwrap().len(), 1);
    assert!(one["notes"][0].as_str().unwrap().starts_with("one node: "));
}

#[test]
fn latest_compares_the_two_newest_runs_of_a_kind_in_the_results_directory() {
    let dir = scratch().join("latest");
    std::fs::create_dir_all(&dir).unwrap();
    let run: Value = serde_json::from_slice(&std::fs::read(bench_run()).unwrap()).unwrap();
    let write = |name: &str, started: &str, factor: f64| {
        let mut copy = run.clone();
        copy["started"] = Value::from(started);
        // Each file is a run of its own (a copy of one file would be one run).
        copy["run_id"] = Value::from(name);
        for row in copy["benchmarks"].as_array_mut().unwrap() {
            if let Some(samples) = row["samples_ns"].as_array_mut() {
                for s in samples.iter_mut() {
                    *s = Value::from(s.as_f64().unwrap() * factor);
                }
            }
        }
        std::fs::write(dir.join(name), serde_json::to_vec(&copy).unwrap()).unwrap();
    };
    // Names sort against their start times: the newest two are picked by time, not name.
    write("a-newest.json", "2026-03-01T00:00:00Z", 3.0);
    let latest = |dir: &Path| {
        stackbench_alone(&[
            "compare",
            "--latest",
            "bench",
            "--results",
            dir.to_str().unwrap(),
            "--format",
            "json",
        ])
    };
    std::fs::write(dir.join("junk.json"), "{").unwrap();
    std::fs::copy(check_run(true, "check-latest.json"), dir.join("check.json")).unwrap();
    let too_few = latest(&dir);
    assert_eq!(too_few.status.code(), Some(2), "one bench run is not two");
    assert!(String::from_utf8_lossy(&too_few.stderr).contains("two are needed"));
    write("b-oldest.json", "2026-01-01T00:00:00Z", 1.0);
    write("c-middle.json", "2026-02-01T00:00:00Z", 1.0);
    let output = latest(&dir);
    let report = stdout_json(&output);
    assert!(report["old"]["path"]
        .as_str()
        .unwrap()
        .ends_with("c-middle.json"));
    assert!(report["new"]["path"]
        .as_str()
        .unwrap()
        .ends_with("a-newest.json"));
    assert_eq!(output.status.code(), Some(1), "three times as slow");
    let nothing = stackbench_alone(&["compare"]);
    assert_eq!(nothing.status.code(), Some(2));
}
