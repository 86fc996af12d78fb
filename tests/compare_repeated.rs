//! `bench --repeat` and `compare` on repeated runs, over the fixture toolkits (CPU-side rows):
//! one real run of six repetitions split by parity into two runs of three (an A/A pair that saw
//! the same machine, load and all, repetition by repetition) is never `slower` or `faster`,
//! either way round; a file of the schema before repetitions (minor 0) still compares, as one
//! repetition held to the noise floor; a floor is learned from earlier runs under `--results`,
//! the compared files left out; samples that do not add up to their repetitions exit 2; and
//! `compare --calibrate` tallies every pair of A/A runs.

// Tests read the files they make and the checkout's own: std's readers are theirs (clippy.toml).
#![allow(clippy::disallowed_methods)]

mod common;

use common::*;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::OnceLock;

/// An empty results directory: no history, so the stated default floors apply.
fn no_history() -> PathBuf {
    let dir = scratch().join("no-history");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// One real quick bench run of one fixture combination with six repetitions, as JSON.
fn six_repetitions() -> &'static Value {
    static RUN: OnceLock<Value> = OnceLock::new();
    RUN.get_or_init(|| {
        let output = fixture_bench("6");
        stdout_json(&output)
    })
}

/// `run` with only the repetitions `keep` (0-based) of each benchmark, written to `name`.
fn with_repetitions(run: &Value, keep: &[usize], name: &str) -> PathBuf {
    let mut part = run.clone();
    part["repeat"] = Value::from(keep.len());
    part["run_id"] = Value::from(name);
    for row in part["benchmarks"].as_array_mut().unwrap() {
        let repetitions = row["repetitions"].as_array().unwrap().clone();
        let samples = row["samples_ns"].as_array().unwrap().clone();
        let mut at = 0;
        let (mut kept_samples, mut kept) = (Vec::new(), Vec::new());
        for (i, repetition) in repetitions.iter().enumerate() {
            let count = repetition["samples"].as_u64().unwrap() as usize;
            if keep.contains(&i) {
                kept_samples.extend_from_slice(&samples[at..at + count]);
                kept.push(repetition.clone());
            }
            at += count;
        }
        row["samples_ns"] = Value::from(kept_samples);
        row["repetitions"] = Value::from(kept);
    }
    let path = scratch().join(name);
    std::fs::write(&path, serde_json::to_vec(&part).unwrap()).unwrap();
    path
}

#[test]
fn a_repeated_run_keeps_each_repetition_apart() {
    let run = six_repetitions();
    assert_eq!(run["schema"], "stackbench.bench/v1");
    assert_eq!(run["schema_minor"], 9);
    assert_eq!(run["repeat"], 6);
    let measured: Vec<&Value> = run["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["status"] == "measured")
        .collect();
    assert_eq!(measured.len(), 3, "two compile rows and the load row");
    for row in measured {
        let repetitions = row["repetitions"].as_array().unwrap();
        assert_eq!(repetitions.len(), 6, "{row}");
        let counted: u64 = repetitions
            .iter()
            .map(|r| r["samples"].as_u64().unwrap())
            .sum();
        assert_eq!(
            counted as usize,
            row["samples_ns"].as_array().unwrap().len()
        );
        for r in repetitions {
            assert_eq!(r["status"], "measured", "{r}");
            assert!(r["median_ns"].as_f64().unwrap() > 0.0, "{r}");
        }
    }
}

/// The A/A comparison that holds under any load: repetitions 1, 3, 5 against 2, 4, 6 of one
/// run. A load that came and went fell on both alike; neither way round is a row `slower` or
/// `faster` (whether it is `same` depends on how busy the machine was, so it is not asserted).
#[test]
fn interleaved_repetitions_of_one_run_are_never_slower_or_faster() {
    let run = six_repetitions();
    let odd = with_repetitions(run, &[0, 2, 4], "odd.json");
    let even = with_repetitions(run, &[1, 3, 5], "even.json");
    let history = no_history();
    for (old, new) in [(&odd, &even), (&even, &odd)] {
        let output = compare_json(old, new, &["--results", history.to_str().unwrap()]);
        let report = stdout_json(&output);
        let rows = report["benchmarks"].as_array().unwrap();
        assert_eq!(rows.len(), 3, "{rows:?}");
        for row in rows {
            assert!(
                row["verdict"] != "slower" && row["verdict"] != "faster",
                "{row}"
            );
            assert_eq!(row["old_repetitions"], 3, "{row}");
            assert_eq!(row["new_repetitions"], 3, "{row}");
            assert_eq!(row["floor"]["source"], "default", "{row}");
            if row["verdict"] == "unclear" {
                // It says what would settle it: more repetitions, history or a threshold.
                let why = row["why"].as_str().unwrap();
                assert!(
                    why.contains("--repeat") || why.contains("--calibrate"),
                    "{row}"
                );
            }
        }
        assert_eq!(output.status.code(), Some(0), "{report}");
    }
}

/// A file written before repetitions were kept apart: no `schema_minor`, `repeat` or
/// `repetitions`, all samples in one list.
fn as_minor_0(run: &Value, name: &str) -> PathBuf {
    let mut old = run.clone();
    let object = old.as_object_mut().unwrap();
    object.remove("schema_minor");
    object.remove("run_id");
    object.remove("repeat");
    for row in old["benchmarks"].as_array_mut().unwrap() {
        row.as_object_mut().unwrap().remove("repetitions");
    }
    let path = scratch().join(name);
    std::fs::write(&path, serde_json::to_vec(&old).unwrap()).unwrap();
    path
}

#[test]
fn a_file_of_the_schema_before_repetitions_compares_as_one_repetition() {
    let run = six_repetitions();
    let old = as_minor_0(
        &serde_json::from_slice(&std::fs::read(with_repetitions(run, &[0], "first.json")).unwrap())
            .unwrap(),
        "minor-0.json",
    );
    let text = std::fs::read_to_string(&old).unwrap();
    assert!(!text.contains("repetitions") && !text.contains("schema_minor"));
    let new = with_repetitions(run, &[1, 2, 3], "three.json");
    let history = no_history();
    let output = compare_json(&old, &new, &["--results", history.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0));
    let report = stdout_json(&output);
    for row in report["benchmarks"].as_array().unwrap() {
        assert_eq!(row["old_repetitions"], 1, "{row}");
        assert_eq!(row["new_repetitions"], 3, "{row}");
        assert!(
            row["verdict"] != "slower" && row["verdict"] != "faster",
            "{row}"
        );
        if row["verdict"] == "unclear" {
            let why = row["why"].as_str().unwrap();
            assert!(
                why.starts_with("too few repetitions (old 1, new 3)"),
                "{why}"
            );
        }
    }
    // The terminal says which floor held the interval.
    let terminal = stackbench_alone(&[
        "compare",
        old.to_str().unwrap(),
        new.to_str().unwrap(),
        "--results",
        history.to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&terminal.stdout);
    assert!(text.contains("1 vs 3"), "{text}");
    assert!(text.contains("noise floor stated default"), "{text}");
}

#[test]
fn the_noise_floor_is_learned_from_earlier_runs_leaving_out_the_compared_ones() {
    let run = six_repetitions();
    let dir = scratch().join("history");
    std::fs::create_dir_all(&dir).unwrap();
    // Three earlier runs of the same build, a minute apart, far enough apart (a neighbour's
    // load came and went between them) that their spread shows beyond their repetitions'.
    for (at, factor) in [(1, 1.0), (2, 1.5), (3, 0.6)] {
        let mut earlier = run.clone();
        earlier["started"] = Value::from(format!("2026-01-01T00:0{at}:00Z"));
        // A run of its own, not a copy of the compared one.
        earlier["run_id"] = Value::from(format!("earlier-{at}"));
        for row in earlier["benchmarks"].as_array_mut().unwrap() {
            for s in row["samples_ns"].as_array_mut().unwrap().iter_mut() {
                *s = Value::from(s.as_f64().unwrap() * factor);
            }
            for r in row["repetitions"].as_array_mut().unwrap().iter_mut() {
                if let Some(m) = r["median_ns"].as_f64() {
                    r["median_ns"] = Value::from(m * factor);
                }
            }
        }
        std::fs::write(
            dir.join(format!("earlier-{at}.json")),
            serde_json::to_vec(&earlier).unwrap(),
        )
        .unwrap();
    }
    // The compared runs lie in the same directory: they are not their own history.
    let old = dir.join("old.json");
    let new = dir.join("new.json");
    std::fs::copy(with_repetitions(run, &[0, 2, 4], "h-old.json"), &old).unwrap();
    std::fs::copy(with_repetitions(run, &[1, 3, 5], "h-new.json"), &new).unwrap();
    let output = compare_json(&old, &new, &["--results", dir.to_str().unwrap()]);
    let report = stdout_json(&output);
    for row in report["benchmarks"].as_array().unwrap() {
        assert_eq!(row["floor"]["source"], "history", "{row}");
        assert_eq!(row["floor"]["runs"], 3, "{row}");
        assert!(
            row["floor"]["between_runs"].as_f64().unwrap() > 0.0,
            "{row}"
        );
    }
}

#[test]
fn samples_that_do_not_add_up_to_their_repetitions_exit_2_naming_the_row() {
    let run = six_repetitions();
    let mut edited = run.clone();
    let row = &mut edited["benchmarks"].as_array_mut().unwrap()[0];
    let id = row["id"].as_str().unwrap().to_owned();
    row["samples_ns"].as_array_mut().unwrap().pop();
    let path = scratch().join("edited.json");
    std::fs::write(&path, serde_json::to_vec(&edited).unwrap()).unwrap();
    let whole = with_repetitions(run, &[0, 1, 2, 3, 4, 5], "whole.json");
    let output = compare_json(&whole, &path, &[]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("{id}: its repetitions hold")),
        "{stderr}"
    );
    let zero = stackbench_alone(&["bench", "--quick", "--repeat", "0"]);
    assert_eq!(zero.status.code(), Some(2));
}

#[test]
fn calibrate_tallies_every_pair_of_a_a_runs() {
    let run = six_repetitions();
    let files: Vec<PathBuf> = (0..3)
        .map(|i| with_repetitions(run, &[i, i + 3], &format!("aa-{i}.json")))
        .collect();
    let mut args = vec!["compare", "--format", "json", "--calibrate"];
    args.extend(files.iter().map(|f| f.to_str().unwrap()));
    let output = stackbench_alone(&args);
    let report = stdout_json(&output);
    assert_eq!(report["schema"], "stackbench.calibration/v1");
    assert_eq!(report["pairs"], 3);
    let rows = report["benchmarks"].as_array().unwrap();
    assert_eq!(rows.len(), 3, "{rows:?}");
    for row in rows {
        assert_eq!(row["pairs"], 3, "{row}");
        let tallied: u64 = ["slower", "faster", "same", "unclear"]
            .iter()
            .map(|k| row[k].as_u64().unwrap())
            .sum();
        assert_eq!(tallied, 3, "{row}");
        assert_eq!(row["slower"], 0, "{row}");
        assert_eq!(row["faster"], 0, "{row}");
        assert!(row["detectable"].as_f64().unwrap() > 0.0, "{row}");
    }
    assert_eq!(output.status.code(), Some(0), "no false verdict");
    let one = stackbench_alone(&["compare", "--calibrate", files[0].to_str().unwrap()]);
    assert_eq!(one.status.code(), Some(2), "one run is no pair");
}
