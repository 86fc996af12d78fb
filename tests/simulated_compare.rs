//! `compare` and `report` on simulated GPU runs (tests/simgpu, laid out by `ci/sim`): a device
//! 10% slower (`slowdown = 1.10`) is `slower` on every GPU row and fails the comparison, two runs
//! of the same profile are never called `slower` or `faster` on a GPU row, and `report` draws
//! the GPU charts of simulated runs, labelled simulated.
//!
//! The simulator's time is a model, so its GPU rows are the same in any load; the CPU rows
//! (NVRTC compile, library load) are the host's and are left to tests/compare_repeated.rs.

mod common;

use common::{isolated_stackbench, simulator, stdout_json};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// `bench --quick --repeat 1` on the simulator with the profile `toml`, its files in `dir`; the
/// JSON result file it wrote.
fn bench(dir: &Path, toml: &str) -> PathBuf {
    let sim = simulator();
    std::fs::create_dir_all(dir).expect("the run's directory");
    let profile = dir.join("profile.toml");
    std::fs::write(&profile, toml).expect("write the profile");
    let output = isolated_stackbench(dir)
        .env("STACKBENCH_SIM_PROFILE", &profile)
        .current_dir(dir)
        .args([
            "bench",
            "--quick",
            "--repeat",
            "1",
            "--allow-skip",
            "--no-system",
        ])
        .arg("--results")
        .arg(dir)
        .arg("--root")
        .arg(&sim.toolkit_dir)
        .arg("--driver-dir")
        .arg(&sim.driver_dir)
        .output()
        .expect("run stackbench bench");
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let json = std::fs::read_dir(dir)
        .expect("the results")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|e| e == "json"))
        .expect("a JSON result file");
    json
}

/// `stackbench compare OLD NEW --format json`: its exit status and report.
fn compare(home: &Path, old: &Path, new: &Path) -> (Option<i32>, Value) {
    let output = isolated_stackbench(home)
        .args(["compare", "--format", "json"])
        .arg(old)
        .arg(new)
        .arg("--results")
        .arg(home.join("no-history"))
        .output()
        .expect("run stackbench compare");
    (output.status.code(), stdout_json(&output))
}

/// The GPU rows measured in both runs: copy, vector add and the matmuls.
fn gpu_rows(report: &Value) -> Vec<&Value> {
    let rows: Vec<&Value> = report["benchmarks"]
        .as_array()
        .expect("benchmarks")
        .iter()
        .filter(|r| {
            let id = r["id"].as_str().unwrap_or_default();
            ["copy/", "vector_add/", "matmul/"]
                .iter()
                .any(|p| id.starts_with(p))
        })
        .collect();
    assert!(rows.len() >= 7, "copy, vector add, 5 matmuls: {report}");
    rows
}

#[test]
fn a_slower_simulated_gpu_is_slower_on_every_gpu_row_and_the_same_one_never_is() {
    let home = tempfile::tempdir().expect("temporary directory");
    let base = bench(&home.path().join("base"), "");
    let again = bench(&home.path().join("again"), "");
    let slow = bench(&home.path().join("slow"), "[[device]]\nslowdown = 1.10\n");

    let (code, report) = compare(home.path(), &base, &slow);
    for row in gpu_rows(&report) {
        assert_eq!(row["verdict"], "slower", "{row}");
    }
    assert_eq!(code, Some(1), "{report}");

    let (_, report) = compare(home.path(), &base, &again);
    for row in gpu_rows(&report) {
        let verdict = row["verdict"].as_str().unwrap_or_default();
        assert!(verdict != "slower" && verdict != "faster", "{row}");
    }

    let page = home.path().join("report.html");
    let output = isolated_stackbench(home.path())
        .arg("report")
        .args([&base, &again, &slow])
        .arg("--output")
        .arg(&page)
        .output()
        .expect("run stackbench report");
    assert!(output.status.success(), "{output:?}");
    let html = std::fs::read_to_string(&page).expect("the report page");
    for chart in ["copy", "vector_add", "matmul"] {
        assert!(html.contains(chart), "no {chart} chart");
    }
    assert!(html.contains("<svg"), "no charts drawn");
    assert!(
        html.contains("simulated"),
        "the simulated runs are not labelled"
    );
}
