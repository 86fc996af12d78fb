//! `stackbench bench`'s NCCL benchmarks on a simulated HGX-like node of eight GPUs (tests/simgpu's
//! `[node] gpus = 8, nvswitch = true`, its NCCL laid out by `ci/sim`): one pass over all eight
//! GPUs per combination, each collective's bus bandwidth at the largest size within 5% of the
//! profile's model, nccl-tests' table in every view; `compare` calls a node with one slow link
//! `slower` on the NCCL rows, and two runs of the healthy node never.
//!
//! The model is computed here from the profile's numbers and the formula tests/simgpu documents
//! for its NCCL (never by calling the simulator): a collective of `S` bytes over `n` GPUs takes
//! `8 µs + factor x S / bus`, `factor` nccl-tests' bus factor, `bus` the ring's slowest link
//! (`nvlinks_per_gpu x nvlink_gbs`, divided by a `slow_link` factor on it).
//!
//! To stay within seconds, every run is `--quick --repeat 1`; the two compared with the slow
//! node `--filter` the largest size of each collective.

// Tests read the files they make and the checkout's own: std's readers are theirs (clippy.toml).
#![allow(clippy::disallowed_methods)]

mod common;

use common::{on_simulator, stdout_json};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;

/// The simulated node: eight GPUs on NVSwitches, 18 links of 25 GB/s each (the defaults).
const HEALTHY: &str = "[node]\ngpus = 8\nnvswitch = true\n";
/// The same node with the link between GPUs 2 and 5 taking 1.5 times as long.
const SLOW_LINK: &str =
    "[node]\ngpus = 8\nnvswitch = true\n\n[faults]\nslow_link = [[2, 5, 1.5]]\n";
/// The profile's bus: 18 NVLinks x 25 GB/s, bytes per second.
const BUS: f64 = 18.0 * 25e9;
const SLOWDOWN: f64 = 1.5;
/// The simulated NCCL's fixed cost per collective, seconds.
const LATENCY: f64 = 8e-6;
/// The largest size on a simulated GPU: 16 MiB.
const LARGEST: u64 = 16 << 20;
const COLLECTIVES: [&str; 4] = ["all_reduce", "all_gather", "reduce_scatter", "broadcast"];

/// nccl-tests' bus factor of `collective` over eight GPUs, worked by hand from the summary of
/// nccl-tests' `doc/PERFORMANCE.md` (github.com/NVIDIA/nccl-tests): all-reduce 2(n-1)/n =
/// 14/8, all-gather and reduce-scatter (n-1)/n = 7/8, broadcast 1.
fn bus_factor(collective: &str) -> f64 {
    match collective {
        "all_reduce" => 1.75,
        "all_gather" | "reduce_scatter" => 0.875,
        "broadcast" => 1.0,
        other => panic!("no bus factor for {other}"),
    }
}

/// The model's busbw of `collective` at `size` bytes on a ring whose slowest link moves `bus`
/// bytes a second, GB/s: nccl-tests' busbw is what the slowest link carries over the time.
fn model_busbw(collective: &str, size: u64, bus: f64) -> f64 {
    let bus_bytes = bus_factor(collective) * size as f64;
    bus_bytes / (LATENCY + bus_bytes / bus) / 1e9
}

/// `bench --quick --repeat 1` on the node `toml`, its files and home in `dir`, of the NCCL
/// benchmarks `filters` keep, in `format`: the output and the JSON file it wrote.
fn bench(dir: &Path, toml: &str, filters: &[String], format: &str) -> (Output, PathBuf) {
    let mut command = on_simulator(dir, toml, &["bench", "--quick", "--repeat", "1"]);
    for filter in filters {
        command.args(["--filter", filter]);
    }
    let output = (command.args(["--format", format, "--results"]).arg(dir))
        .output()
        .expect("run stackbench bench");
    let file = (std::fs::read_dir(dir).expect("the results"))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            p.extension().is_some_and(|e| e == "json")
                && (p.file_name()).is_some_and(|n| n.to_string_lossy().starts_with("bench-"))
        })
        .unwrap_or_else(|| {
            panic!(
                "no JSON result: {}",
                String::from_utf8_lossy(&output.stderr)
            )
        });
    (output, file)
}

/// The runs, made once, side by side (the simulator's figures are its model's, whatever the
/// load): the healthy node's whole sweep (terminal output), then the largest sizes of the
/// healthy node again and of the node with a slow link (JSON).
struct Runs {
    dirs: [tempfile::TempDir; 3],
    sweep: (Output, PathBuf),
    healthy: (Output, PathBuf),
    slow: (Output, PathBuf),
}

fn runs() -> &'static Runs {
    static RUNS: std::sync::OnceLock<Runs> = std::sync::OnceLock::new();
    RUNS.get_or_init(|| {
        // In this binary's scratch (a static is never dropped: a temporary directory would stay).
        let dirs = [(); 3].map(|_| tempfile::tempdir_in(common::scratch()).expect("a directory"));
        let largest: Vec<String> = (COLLECTIVES.iter())
            .map(|c| format!("/{c}/{LARGEST}"))
            .collect();
        let sweep = ["nccl".to_owned()];
        let plans = [
            (HEALTHY, &sweep[..], "terminal"),
            (HEALTHY, &largest[..], "json"),
            (SLOW_LINK, &largest[..], "json"),
        ];
        let [sweep, healthy, slow] = std::thread::scope(|s| {
            let runs = (plans.iter().zip(&dirs))
                .map(|((toml, filters, format), dir)| {
                    s.spawn(move || bench(dir.path(), toml, filters, format))
                })
                .collect::<Vec<_>>();
            let mut done = runs.into_iter().map(|h| h.join().expect("a bench run"));
            [(); 3].map(|_| done.next().expect("three runs"))
        });
        Runs {
            dirs,
            sweep,
            healthy,
            slow,
        }
    })
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("the JSON file")).expect("JSON")
}

/// A bench report's or a comparison's NCCL rows.
fn nccl_rows(report: &Value) -> Vec<&Value> {
    (report["benchmarks"].as_array().expect("benchmarks").iter())
        .filter(|b| b["id"].as_str().is_some_and(|id| id.starts_with("nccl/")))
        .collect()
}

/// The busbw of `collective` at the largest size in `report`, GB/s.
fn busbw_at_largest(report: &Value, collective: &str) -> f64 {
    let id = format!("nccl/toolkit:cuda-sim/{collective}/{LARGEST}");
    let row = (nccl_rows(report).into_iter())
        .find(|r| r["id"] == id.as_str())
        .unwrap_or_else(|| panic!("no {id}: {report}"));
    assert_eq!(row["status"], "measured", "{row}");
    row["nccl"]["busbw_gbps"].as_f64().expect("a busbw")
}

#[test]
fn every_collective_s_busbw_at_the_largest_size_is_within_5_percent_of_the_model() {
    let runs = runs();
    let (output, file) = &runs.sweep;
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report = read_json(file);
    let rows = nccl_rows(&report);
    assert_eq!(
        rows.len(),
        4 * 5,
        "four collectives at five sizes: {report}"
    );
    for row in &rows {
        assert_eq!(row["status"], "measured", "{row}");
        assert!(row.get("device").is_none(), "a node-wide row: {row}");
        let nccl = &row["nccl"];
        assert_eq!(nccl["devices"], serde_json::json!([0, 1, 2, 3, 4, 5, 6, 7]));
        assert_eq!(row["verified"]["passed"], true, "{row}");
        // algbw = size / time, busbw = algbw x the bus factor, as nccl-tests has them.
        let size = row["parameters"]["size"].as_f64().unwrap();
        let median = row["summary"]["median_ns"].as_f64().unwrap();
        let algbw = nccl["algbw_gbps"].as_f64().unwrap();
        assert!(
            (algbw - size / median).abs() <= 1e-9 * algbw.max(1.0),
            "{row}"
        );
        let collective = row["parameters"]["implementation"].as_str().unwrap();
        let busbw = nccl["busbw_gbps"].as_f64().unwrap();
        assert!((busbw - algbw * bus_factor(collective)).abs() <= 1e-9 * busbw.max(1.0));
    }
    for (reports, bus) in [(&report, BUS), (&read_json(&runs.slow.1), BUS / SLOWDOWN)] {
        for collective in COLLECTIVES {
            let busbw = busbw_at_largest(reports, collective);
            let model = model_busbw(collective, LARGEST, bus);
            let off = busbw / model - 1.0;
            eprintln!("{collective} at {LARGEST} B, bus {bus:e} B/s: busbw {busbw:.1} GB/s, model {model:.1} GB/s ({:+.2}%)", 100.0 * off);
            assert!(
                off.abs() < 0.05,
                "{collective}: {busbw} GB/s against the model's {model}"
            );
        }
    }
}

#[test]
fn every_view_holds_nccl_tests_table() {
    let (output, file) = &runs().sweep;
    let terminal = String::from_utf8_lossy(&output.stdout);
    assert!(
        terminal.contains("NCCL over 8 GPUs (0, 1, 2, 3, 4, 5, 6, 7), as nccl-tests prints it"),
        "{terminal}"
    );
    let header = [
        "size (B)",
        "count (elements)",
        "type",
        "redop",
        "root",
        "time (us)",
    ];
    let line = (terminal.lines())
        .find(|l| l.contains("collective") && l.contains("busbw (GB/s)"))
        .unwrap_or_else(|| panic!("no NCCL table: {terminal}"));
    assert!(header.iter().all(|h| line.contains(h)), "{line}");
    let cells = |l: &str| l.split_whitespace().map(str::to_owned).collect::<Vec<_>>();
    let all_reduce = (terminal.lines().map(cells))
        .find(|c| c.len() > 6 && c[0] == "all_reduce" && c[1] == LARGEST.to_string())
        .unwrap_or_else(|| panic!("no all_reduce row: {terminal}"));
    assert_eq!(all_reduce[2..6], ["4194304", "float", "sum", "-1"]);
    let broadcast = (terminal.lines().map(cells))
        .find(|c| c.len() > 6 && c[0] == "broadcast" && c[1] == "8")
        .unwrap_or_else(|| panic!("no broadcast row: {terminal}"));
    assert_eq!(broadcast[2..6], ["2", "float", "none", "0"]);
    let markdown = std::fs::read_to_string(file.with_extension("md")).expect("the Markdown file");
    assert!(
        markdown.contains("## NCCL: `toolkit:cuda-sim`"),
        "{markdown}"
    );
    assert!(
        markdown.contains("| collective | size (B) | count (elements) | type | redop | root | time (us) | algbw (GB/s) | busbw (GB/s) |"),
        "{markdown}"
    );
    assert!(markdown.contains("| all_gather | 16777216 | 4194304 | float | none | -1 |"));
    let csv = std::fs::read_to_string(file.with_extension("csv")).expect("the CSV file");
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let at = |name: &str| header.iter().position(|h| *h == name).expect(name);
    let rows: Vec<Vec<&str>> = lines
        .map(|l| l.split(',').collect())
        .filter(|r: &Vec<&str>| r[at("benchmark")] == "nccl")
        .collect();
    assert_eq!(rows.len(), 20, "{csv}");
    for row in rows {
        assert_eq!(row[at("nccl_gpus")], "8");
        let busbw: f64 = row[at("busbw_gbps")].parse().expect("a busbw");
        let algbw: f64 = row[at("algbw_gbps")].parse().expect("an algbw");
        assert!(busbw >= algbw * 0.875 - 1e-9, "{row:?}");
    }
}

/// `compare OLD NEW --format json`, with no history, in `home`.
fn compare(home: &Path, old: &Path, new: &Path) -> (Output, Value) {
    let output = common::isolated_stackbench(home)
        .args(["compare", "--format", "json"])
        .arg(old)
        .arg(new)
        .arg("--results")
        .arg(home.join("no-history"))
        .output()
        .expect("run stackbench compare");
    let report = stdout_json(&output);
    (output, report)
}

#[test]
fn a_slow_link_makes_compare_call_the_nccl_rows_slower_with_their_busbw() {
    let runs = runs();
    let (output, report) = compare(runs.dirs[2].path(), &runs.healthy.1, &runs.slow.1);
    assert_eq!(output.status.code(), Some(1), "{report}");
    let rows = nccl_rows(&report);
    assert_eq!(rows.len(), 4, "{report}");
    for row in rows {
        assert_eq!(row["verdict"], "slower", "{row}");
        let (old, new) = (
            row["old_busbw_gbps"].as_f64(),
            row["new_busbw_gbps"].as_f64(),
        );
        assert!(new.unwrap() < old.unwrap() * 0.8, "{row}");
    }
    let regressions: Vec<&str> = (report["regressions"].as_array().unwrap().iter())
        .filter_map(Value::as_str)
        .collect();
    for collective in COLLECTIVES {
        let named = format!("nccl/toolkit:cuda-sim/{collective}/{LARGEST}: slower (+");
        let found = regressions.iter().find(|r| r.starts_with(&named));
        let found = found.unwrap_or_else(|| panic!("{named}: {regressions:?}"));
        assert!(
            found.contains("; busbw ") && found.ends_with(" GB/s)"),
            "{found}"
        );
    }
}

#[test]
fn two_runs_of_the_healthy_node_are_never_slower_or_faster() {
    let runs = runs();
    let (sweep, healthy) = (&runs.sweep.1, &runs.healthy.1);
    for (old, new) in [(sweep, healthy), (healthy, sweep)] {
        let (output, report) = compare(runs.dirs[1].path(), old, new);
        let rows = nccl_rows(&report);
        let judged: Vec<&&Value> = rows.iter().filter(|r| r["ratio"].is_object()).collect();
        assert_eq!(judged.len(), 4, "the largest sizes, in both: {report}");
        for row in rows {
            assert!(
                row["verdict"] != "slower" && row["verdict"] != "faster",
                "{row}"
            );
        }
        assert_eq!(output.status.code(), Some(0), "{report}");
    }
}

#[test]
fn on_one_gpu_the_collectives_are_skipped_saying_why_and_nothing_is_timed() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let filters = ["nccl/".to_owned()];
    let (output, file) = bench(dir.path(), "[node]\ngpus = 1\n", &filters, "json");
    let report: Value =
        serde_json::from_slice(&std::fs::read(&file).expect("the JSON")).expect("the JSON parses");
    let rows = report["benchmarks"].as_array().expect("the rows");
    assert!(
        !rows.is_empty(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    for row in rows {
        assert_eq!(row["status"], "skipped", "{row}");
        let why = row["reason"].as_str().unwrap_or_default();
        assert!(why.contains("one GPU selected"), "{row}");
        assert_eq!(row["inapplicable"], true, "{row}");
    }
    // Nothing is missing on a one-GPU host, so its skips are no reason for exit 1 (the first
    // real H100 run exited 1 on them).
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
