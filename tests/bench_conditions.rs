//! `bench` reads each GPU's state before and after it measures (tests/simgpu's NVML, laid out
//! by `ci/sim`): a GPU with other compute processes on it (`other_processes = 2`) is refused,
//! exit 2, naming both processes, and nothing is written; `--allow-busy` measures it and every
//! row records the two processes; `compare` calls a busy night against a clean one slower but
//! measured disturbed, which is no regression (exit 0) unless `--fail-on disturbed`; two clean
//! nights are never flagged; a bench file of schema minor 2, which read no GPU state, still
//! compares.
//!
//! Only the simulated GPU's FP32 cuBLAS GEMM of 1024 is run (`--filter` its id): its time is the
//! model's, not the host's, so no verdict here depends on how busy the machine is, and it takes
//! the simulator about a second a run, where the 64 Mi-float vector add took tens of seconds.

// Tests read the files they make and the checkout's own: std's readers are theirs (clippy.toml).
#![allow(clippy::disallowed_methods)]

mod common;

use common::{isolated_stackbench, on_simulator, stdout_json};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Two compute processes of other users on the device.
const BUSY: &str = "[faults]\nother_processes = 2\n";

/// The one benchmark run: the simulated GPU's FP32 cuBLAS GEMM of 1024.
const GEMM: &str = "matmul/toolkit:cuda-sim/cublas/f32/1024/batch";

/// The pids and names the simulator gives them.
const PROCESSES: [(u64, &str); 2] = [(48213, "python3"), (48220, "pt_main_thread")];

/// `bench --quick --repeat 3` of the simulated GEMM with `toml`, its files in `dir`, with
/// `extra` arguments: the command's output.
fn bench(dir: &Path, toml: &str, extra: &[&str]) -> std::process::Output {
    on_simulator(
        dir,
        toml,
        &["bench", "--quick", "--repeat", "3", "--filter", GEMM],
    )
    .args(extra)
    .arg("--results")
    .arg(dir.join("results"))
    .output()
    .expect("run stackbench bench")
}

/// The JSON result file a run in `dir` wrote.
fn result_file(dir: &Path) -> PathBuf {
    std::fs::read_dir(dir.join("results"))
        .expect("the results directory")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|e| e == "json"))
        .expect("a JSON result file")
}

/// A run of `toml` (with `--allow-busy`), made once per test process and shared.
fn night(cell: &'static OnceLock<PathBuf>, name: &str, toml: &str) -> &'static Path {
    cell.get_or_init(|| {
        let dir = common::scratch().join(name);
        let _ = std::fs::remove_dir_all(&dir);
        let output = bench(&dir, toml, &["--allow-busy"]);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        result_file(&dir)
    })
}

fn busy_night() -> &'static Path {
    static NIGHT: OnceLock<PathBuf> = OnceLock::new();
    night(&NIGHT, "conditions-busy", BUSY)
}

fn clean_night() -> &'static Path {
    static NIGHT: OnceLock<PathBuf> = OnceLock::new();
    night(&NIGHT, "conditions-clean", "")
}

fn second_clean_night() -> &'static Path {
    static NIGHT: OnceLock<PathBuf> = OnceLock::new();
    night(&NIGHT, "conditions-clean-2", "")
}

fn read(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).expect("the result file")).expect("JSON")
}

/// `compare OLD NEW --format json` with `extra` arguments and no history: exit status, report.
fn compare(old: &Path, new: &Path, extra: &[&str]) -> (Option<i32>, Value) {
    let home = common::scratch().join("conditions-compare");
    let output = isolated_stackbench(&home)
        .args(["compare", "--format", "json"])
        .arg(old)
        .arg(new)
        .arg("--results")
        .arg(home.join("no-history"))
        .args(extra)
        .output()
        .expect("run stackbench compare");
    (output.status.code(), stdout_json(&output))
}

/// The compared row of the simulated GPU's GEMM.
fn gemm(report: &Value) -> &Value {
    report["benchmarks"]
        .as_array()
        .expect("benchmarks")
        .iter()
        .find(|r| r["id"] == GEMM)
        .expect("the GEMM row")
}

#[test]
fn a_busy_gpu_is_refused_naming_both_processes_and_nothing_is_written() {
    let dir = common::scratch().join("conditions-refused");
    let _ = std::fs::remove_dir_all(&dir);
    let output = bench(&dir, BUSY, &[]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("error: GPU 0 is in use by 2 other processes: pid 48213 python3 ("),
        "{stderr}"
    );
    assert!(stderr.contains("pid 48220 pt_main_thread ("), "{stderr}");
    assert!(stderr.contains("give --allow-busy"), "{stderr}");
    assert!(
        !stderr.contains("bench: toolkit:"),
        "nothing was measured: {stderr}"
    );
    assert!(
        !dir.join("results").exists(),
        "no result files: {:?}",
        std::fs::read_dir(dir.join("results")).map(|d| d.count())
    );
}

#[test]
fn with_allow_busy_every_row_records_the_two_processes_before_and_after() {
    let report = read(busy_night());
    assert_eq!(report["schema_minor"], 9);
    assert_eq!(report["allow_busy"], true);
    let rows = report["benchmarks"].as_array().unwrap();
    assert!(!rows.is_empty());
    for row in rows {
        let conditions = row["conditions"].as_array().unwrap_or_else(|| {
            panic!("{} has no conditions", row["id"]);
        });
        assert_eq!(conditions.len(), 1, "{}", row["id"]);
        for moment in ["before", "after"] {
            let processes = conditions[0][moment]["processes"].as_array().unwrap();
            let seen: Vec<(u64, &str)> = processes
                .iter()
                .map(|p| (p["pid"].as_u64().unwrap(), p["name"].as_str().unwrap()))
                .collect();
            assert_eq!(seen, PROCESSES, "{} {moment}", row["id"]);
            assert!(processes
                .iter()
                .all(|p| p["used_memory_bytes"].as_u64().unwrap() >= 1 << 30));
        }
    }
    let csv = std::fs::read_to_string(busy_night().with_extension("csv")).unwrap();
    let mut lines = csv.lines();
    assert!(lines.next().unwrap().ends_with(",conditions"));
    for line in lines {
        assert!(
            line.contains("busy: 2 other processes (pid 48213 python3 ("),
            "{line}"
        );
    }
    let markdown = std::fs::read_to_string(busy_night().with_extension("md")).unwrap();
    assert!(
        markdown.contains("GPU state (measured with --allow-busy): GPU 0: busy: 2 other processes"),
        "{markdown}"
    );
}

#[test]
fn a_busy_night_against_a_clean_one_is_slower_but_disturbed_and_no_regression() {
    let (status, report) = compare(clean_night(), busy_night(), &[]);
    let row = gemm(&report);
    assert_eq!(row["verdict"], "slower", "{row:#}");
    let disturbed = row["disturbed"].as_str().unwrap_or_default();
    assert!(
        disturbed.starts_with("new run: busy: 2 other processes (pid 48213 python3 ("),
        "{row:#}"
    );
    assert_eq!(report["regressions"], serde_json::json!([]), "{report:#}");
    assert_eq!(status, Some(0));
    // Asked for, the disturbed slower row counts.
    let fail_on = ["--fail-on", "slower", "--fail-on", "disturbed"];
    let (status, report) = compare(clean_night(), busy_night(), &fail_on);
    assert_eq!(status, Some(1), "{report:#}");
    let regressions = report["regressions"].as_array().unwrap();
    assert!(
        regressions
            .iter()
            .any(|r| r.as_str().unwrap().starts_with("matmul/")
                && r.as_str().unwrap().contains(": slower (+")),
        "{regressions:?}"
    );
}

#[test]
fn two_clean_nights_are_never_flagged_busy() {
    let (status, report) = compare(clean_night(), second_clean_night(), &[]);
    assert_eq!(status, Some(0), "{report:#}");
    for row in report["benchmarks"].as_array().unwrap() {
        assert!(row.get("disturbed").is_none(), "{row:#}");
        assert!(
            !matches!(row["verdict"].as_str(), Some("slower" | "faster")),
            "{row:#}"
        );
    }
    for row in read(clean_night())["benchmarks"].as_array().unwrap() {
        let state = &row["conditions"][0];
        assert_eq!(state["before"]["processes"], serde_json::json!([]));
        assert_eq!(state["after"]["processes"], serde_json::json!([]));
        assert_eq!(state["before"]["persistence_mode"], true);
    }
}

#[test]
fn a_bench_file_of_schema_minor_2_still_compares() {
    let mut old = read(clean_night());
    old["schema_minor"] = 2.into();
    old.as_object_mut().unwrap().remove("allow_busy");
    for row in old["benchmarks"].as_array_mut().unwrap() {
        row.as_object_mut().unwrap().remove("conditions");
    }
    let dir = common::scratch().join("conditions-minor-2");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bench-minor-2.json");
    std::fs::write(&path, serde_json::to_vec(&old).unwrap()).unwrap();
    let (status, report) = compare(&path, busy_night(), &[]);
    assert_eq!(status, Some(0), "{report:#}");
    let row = gemm(&report);
    assert_eq!(row["verdict"], "slower", "{row:#}");
    assert!(
        row["disturbed"]
            .as_str()
            .unwrap()
            .starts_with("new run: busy"),
        "{row:#}"
    );
    let (status, report) = compare(&path, clean_night(), &[]);
    assert_eq!(status, Some(0), "{report:#}");
    assert!(gemm(&report).get("disturbed").is_none());
}
