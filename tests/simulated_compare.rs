//! `compare` and `report` on simulated GPU runs (tests/simgpu, laid out by `ci/sim`), which vary
//! between processes and boots as cards do (the profile pins no seed): a device 25% slower
//! (`slowdown = 1.25`) is `slower` on every GPU row at `--repeat 3` and fails the comparison,
//! two runs of the same profile on different boots are never called `slower` or `faster` on a
//! GPU row; a driver 8% slower, with three runs of history on each side, each run on a boot of
//! its own, is `slower` on at least 80% of the rows and no pair of one driver's runs is `slower`
//! or `faster`; `report` draws the GPU charts of simulated runs, labelled simulated; check runs
//! on the real 535 driver library and on the simulator's 580 compare with the driver change as
//! their headline.
//!
//! The simulator's time is a model, so its GPU rows are the same in any load; the CPU rows
//! (NVRTC compile, library load) are the host's and are left to tests/compare_repeated.rs.

// Tests read the files they make and the checkout's own: std's readers are theirs (clippy.toml).
#![allow(clippy::disallowed_methods)]

mod common;

use common::{isolated_stackbench, on_simulator, simulator, stdout_json};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex};

/// A device whose name does not say it is simulated (so only the labelling can), each process
/// 1.5% apart, each boot 1% (the default), no seed.
const UNKIND: &str = "[[device]]\nname = \"Model H\"\nrun_sigma = 0.015\n";

/// `bench --quick --repeat REPEAT` of the GPU rows whose time is the model's (copy, vector add,
/// cuBLAS) on the simulator's boot `boot` with the profile `toml`, its files in `dir`, and, with
/// `kernel_boot`, as if on a kernel boot of that id ([`common::on_simulator_booted`]); the JSON
/// result file it wrote. The NVRTC matmul is left out: its 1024³ tiled kernel runs through the
/// simulator's PTX interpreter, three quarters of a run's time here, and its row is compared
/// as the others are. At most two run at once ([`turn`]).
fn bench(dir: &Path, toml: &str, repeat: &str, boot: &str, kernel_boot: Option<&str>) -> PathBuf {
    let command = [
        "bench",
        "--quick",
        "--repeat",
        repeat,
        "--allow-skip",
        "--filter",
        "copy/",
        "--filter",
        "vector_add/",
        "--filter",
        "cublas/",
    ];
    let mut stackbench = match kernel_boot {
        Some(id) => common::on_simulator_booted(dir, toml, &command, id),
        None => on_simulator(dir, toml, &command),
    };
    let _turn = turn();
    let output = stackbench
        .env("STACKBENCH_SIM_BOOT", boot)
        .arg("--results")
        .arg(dir)
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

/// A place among the simulator runs of this binary, at most two at once: a quick copy row holds
/// about 4 GB of simulated device memory, and eight runs at once met the OOM killer.
fn turn() -> Turn {
    let mut running = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
    while *running >= 2 {
        running = FREED.wait(running).unwrap_or_else(|e| e.into_inner());
    }
    *running += 1;
    Turn
}

static RUNNING: Mutex<usize> = Mutex::new(0);
static FREED: Condvar = Condvar::new();

/// A place taken by [`turn`], given back when dropped.
struct Turn;

impl Drop for Turn {
    fn drop(&mut self) {
        *RUNNING.lock().unwrap_or_else(|e| e.into_inner()) -= 1;
        FREED.notify_one();
    }
}

/// `stackbench compare OLD NEW --format json --results HISTORY`: its exit status and report.
fn compare(home: &Path, old: &Path, new: &Path, history: &Path) -> (Option<i32>, Value) {
    let output = isolated_stackbench(home)
        .args(["compare", "--format", "json"])
        .arg(old)
        .arg(new)
        .arg("--results")
        .arg(history)
        .output()
        .expect("run stackbench compare");
    (output.status.code(), stdout_json(&output))
}

/// The GPU rows measured in both runs: copy, vector add and the cuBLAS matmuls.
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
    assert!(rows.len() >= 6, "copy, vector add, 4 matmuls: {report}");
    rows
}

#[test]
fn a_slower_simulated_gpu_is_slower_on_every_gpu_row_and_the_same_one_never_is() {
    let home = tempfile::tempdir().expect("temporary directory");
    // A run takes about 17 s a repetition here, so the three run side by side: their GPU
    // figures are the model's, whatever the load. The slower device is a change the
    // statistics-level tests show is called at `--repeat 3` (harness/compare/power.rs has 15%
    // at `--repeat 5`: 99.5% of pairs).
    let slower = format!("{UNKIND}slowdown = 1.25\n");
    let (base, again, slow) = std::thread::scope(|s| {
        let run = |name: &str, toml: &str, boot: &'static str| {
            let dir = home.path().join(name);
            let toml = toml.to_owned();
            s.spawn(move || bench(&dir, &toml, "3", boot, None))
        };
        let (base, again, slow) = (
            run("base", UNKIND, "1"),
            run("again", UNKIND, "2"),
            run("slow", &slower, "3"),
        );
        let done = |h: std::thread::ScopedJoinHandle<'_, PathBuf>| h.join().expect("a bench run");
        (done(base), done(again), done(slow))
    });
    let (_, report) = compare(home.path(), &base, &again, &home.path().join("no-history"));
    let ratios: Vec<f64> = gpu_rows(&report)
        .iter()
        .map(|row| row["ratio"]["ratio"].as_f64().expect("a ratio"))
        .collect();
    assert!(
        ratios.iter().all(|r| *r != 1.0),
        "two runs without a pinned seed differ: {ratios:?}"
    );
    for row in gpu_rows(&report) {
        let verdict = row["verdict"].as_str().unwrap_or_default();
        assert!(verdict != "slower" && verdict != "faster", "{row}");
    }

    let (code, report) = compare(home.path(), &base, &slow, &home.path().join("no-history"));
    for row in gpu_rows(&report) {
        assert_eq!(row["verdict"], "slower", "{row}");
    }
    assert_eq!(code, Some(1), "{report}");

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
    // The device is named "Model H": only the labelling says these runs are simulated.
    assert!(
        html.contains("SIMULATED GPU"),
        "the simulated runs are not labelled"
    );
}

#[test]
fn a_driver_8_percent_slower_with_three_runs_of_history_a_side_is_slower_on_most_rows() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: each run's own kernel boot id is a bind mount, which needs root");
        return;
    }
    let home = tempfile::tempdir().expect("temporary directory");
    let history = home.path().join("history");
    std::fs::create_dir_all(&history).expect("the history directory");
    let upgraded = format!("{UNKIND}driver_version = \"590.44.01\"\nslowdown = 1.08\n");
    // Four runs a driver, each on a boot of its own (the simulator's draws and the kernel's
    // boot id), two at a time: started together, runs share their start second.
    let runs: Vec<(usize, PathBuf)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let (side, toml) = if i < 4 {
                    (0, UNKIND)
                } else {
                    (1, upgraded.as_str())
                };
                let dir = home.path().join(format!("run{i}"));
                let toml = toml.to_owned();
                s.spawn(move || {
                    let boot = format!("{}", 10 + i);
                    let kernel_boot = format!("00000000-0000-4000-8000-{:012}", i);
                    (side, bench(&dir, &toml, "3", &boot, Some(&kernel_boot)))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a bench run"))
            .collect()
    });
    for (i, (_, run)) in runs.iter().enumerate() {
        std::fs::copy(run, history.join(format!("run{i}.json"))).expect("copy into the history");
    }
    let side = |which: usize| -> Vec<&PathBuf> {
        runs.iter()
            .filter(|(s, _)| *s == which)
            .map(|(_, p)| p)
            .collect()
    };
    let (old, new) = (side(0), side(1));

    let (_, report) = compare(home.path(), old[0], new[0], &history);
    let rows = gpu_rows(&report);
    let verdicts: Vec<&str> = rows
        .iter()
        .map(|r| r["verdict"].as_str().unwrap_or(""))
        .collect();
    for row in &rows {
        assert_eq!(row["environment_runs"], serde_json::json!([4, 4]), "{row}");
    }
    let slower = verdicts.iter().filter(|v| **v == "slower").count();
    assert!(slower * 10 >= rows.len() * 8, "{verdicts:?}");

    // Every pair of runs of one driver, each on its own boot: never slower or faster.
    for runs in [&old, &new] {
        for (i, a) in runs.iter().enumerate() {
            for b in &runs[i + 1..] {
                let (_, report) = compare(home.path(), a, b, &history);
                for row in gpu_rows(&report) {
                    let verdict = row["verdict"].as_str().unwrap_or_default();
                    assert!(verdict != "slower" && verdict != "faster", "{row}");
                }
            }
        }
    }
}

/// `check --format json` of the simulated toolkit with libcuda.so.1 from `driver_dir`, written
/// to `file`.
fn check(home: &Path, driver_dir: &Path, file: &Path) {
    let sim = simulator();
    let output = isolated_stackbench(home)
        .args(["check", "--no-system", "--format", "json", "--root"])
        .arg(&sim.toolkit_dir)
        .arg("--driver-dir")
        .arg(driver_dir)
        .output()
        .expect("run stackbench check");
    std::fs::write(file, &output.stdout).expect("write the check report");
}

/// `stackbench compare OLD NEW` of runs on no GPU and on the simulated one, `args` added.
fn compare_drivers(home: &Path, old: &Path, new: &Path, args: &[&str]) -> std::process::Output {
    isolated_stackbench(home)
        .args(["compare", "--allow-different-gpus"])
        .args(args)
        .arg(old)
        .arg(new)
        .output()
        .expect("run stackbench compare")
}

#[test]
fn compare_of_check_runs_on_two_drivers_headlines_the_driver_change() {
    let home = tempfile::tempdir().expect("temporary directory");
    let (real, simulated) = (home.path().join("535.json"), home.path().join("580.json"));
    // The real 535.261.03 driver library (no GPU here), then the simulator's 580.95.05.
    check(home.path(), &common::fixture(common::DRIVER_AMD64), &real);
    check(home.path(), &simulator().driver_dir, &simulated);

    let output = compare_drivers(home.path(), &real, &simulated, &[]);
    let headline = String::from_utf8_lossy(&output.stdout);
    let first = headline.lines().next().unwrap_or_default();
    assert!(
        first.contains("driver 535.261.03 -> 580.95.05"),
        "{headline}"
    );

    // Back the other way, what fails only on the new side names the driver change.
    let output = compare_drivers(home.path(), &simulated, &real, &["--format", "json"]);
    let report = stdout_json(&output);
    assert_eq!(report["upgrade"]["old"], "580.95.05", "{report}");
    assert_eq!(report["upgrade"]["new"], "535.261.03", "{report}");
    let regressions = report["regressions"].as_array().expect("regressions");
    assert!(!regressions.is_empty(), "{report}");
    for regression in regressions {
        let text = regression.as_str().unwrap_or_default();
        assert!(
            text.contains("after the driver 580.95.05 -> 535.261.03"),
            "{text}"
        );
    }
    assert_eq!(output.status.code(), Some(1));
}
