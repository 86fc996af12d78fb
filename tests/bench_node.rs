//! `stackbench bench` on a simulated node of four GPUs (tests/simgpu's `[node] gpus = 4`, laid
//! out by `ci/sim`): every GPU gets the GPU benchmarks in turn, each result keyed by the GPU its
//! worker saw (ordinal, UUID, PCI bus id), the CPU-side benchmarks run once; a healthy node
//! claims nothing, and a GPU made 15% slower (`[faults] slow_device`) is the one `slow_device`
//! names, with its ratio, and the run exits 1. `compare` of the two runs matches each GPU with
//! itself and names the slow one's regression with its GPU.
//!
//! To stay within seconds, each run is `--quick --repeat 1` and `--filter`s two cuBLAS matmuls
//! (the smallest size on a simulated device) and the library load time.

// Tests read the files they make and the checkout's own: std's readers are theirs (clippy.toml).
#![allow(clippy::disallowed_methods)]

mod common;

use common::{isolated_stackbench, on_simulator, stdout_json};
use serde_json::Value;
use stackbench::gpu::normal_bus_id;
use std::path::{Path, PathBuf};
use std::process::Output;

const GPUS: u64 = 4;
const HEALTHY: &str = "[node]\ngpus = 4\n";
const SLOW: &str = "[node]\ngpus = 4\n\n[faults]\nslow_device = [[2, 1.15]]\n";

/// `bench --quick --repeat 1` of two cuBLAS matmuls and the load time on the node `toml`, its
/// files and home in `dir`: the output, and the JSON file it wrote.
fn bench(dir: &Path, toml: &str) -> (Output, PathBuf) {
    let output = on_simulator(dir, toml, &["bench", "--quick", "--repeat", "1"])
        .args(["--filter", "cublas/f16/", "--filter", "cublas/bf16/"])
        .args(["--filter", "load/", "--format", "json", "--results"])
        .arg(dir)
        .output()
        .expect("run stackbench bench");
    let file = (std::fs::read_dir(dir).expect("the results"))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            p.extension().is_some_and(|e| e == "json")
                && p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("bench-"))
        })
        .expect("a JSON result file");
    (output, file)
}

/// The GPU rows of a report.
fn gpu_rows(report: &Value) -> Vec<&Value> {
    (report["benchmarks"].as_array().expect("benchmarks").iter())
        .filter(|b| b["side"] == "gpu")
        .collect()
}

/// The two runs, made once (side by side: the simulator's GPU figures are its model's, whatever
/// the load) for every test here: each one's directory, output and JSON file.
fn runs() -> &'static [(tempfile::TempDir, Output, PathBuf); 2] {
    static RUNS: std::sync::OnceLock<[(tempfile::TempDir, Output, PathBuf); 2]> =
        std::sync::OnceLock::new();
    RUNS.get_or_init(|| {
        // In this binary's scratch (a static is never dropped: a temporary directory would stay).
        let dirs = [(); 2].map(|_| tempfile::tempdir_in(common::scratch()).expect("a directory"));
        let [(a, a_file), (b, b_file)] = std::thread::scope(|s| {
            let runs = [HEALTHY, SLOW]
                .iter()
                .zip(&dirs)
                .map(|(toml, dir)| s.spawn(move || bench(dir.path(), toml)))
                .collect::<Vec<_>>();
            let mut done = runs.into_iter().map(|h| h.join().expect("a bench run"));
            [done.next().unwrap(), done.next().unwrap()]
        });
        let [healthy, slow] = dirs;
        [(healthy, a, a_file), (slow, b, b_file)]
    })
}

#[test]
fn a_healthy_node_is_measured_on_every_gpu_keyed_by_device_and_claims_nothing() {
    let (_, output, file) = &runs()[0];
    let report = stdout_json(output);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(report.get("findings").is_none(), "{}", report["findings"]);
    assert_eq!(report["schema_minor"], 9);
    let listed = report["gpu"]["devices"].as_array().expect("NVML's GPUs");
    assert_eq!(listed.len() as u64, GPUS);
    let rows = gpu_rows(&report);
    assert_eq!(rows.len() as u64, 2 * GPUS, "two matmuls on each GPU");
    for row in &rows {
        assert_eq!(row["status"], "measured", "{row}");
        let device = &row["device"];
        let index = device["index"].as_u64().expect("a device index");
        // The key is what the worker saw, and it is the GPU NVML lists under that ordinal.
        let nvml = &listed[index as usize];
        assert_eq!(device["uuid"], nvml["uuid"], "{row}");
        let bus = |v: &Value| v.as_str().and_then(normal_bus_id);
        assert!(bus(&device["pci_bus_id"]).is_some(), "{row}");
        assert_eq!(
            bus(&device["pci_bus_id"]),
            bus(&nvml["pci_bus_id"]),
            "{row}"
        );
    }
    for index in 0..GPUS {
        let on: Vec<&&Value> = rows
            .iter()
            .filter(|r| r["device"]["index"] == index)
            .collect();
        assert_eq!(on.len(), 2, "GPU {index}");
    }
    // The CPU-side benchmark ran once, on no GPU in particular.
    let loads: Vec<&Value> = (report["benchmarks"].as_array().unwrap().iter())
        .filter(|b| b["benchmark"] == "load")
        .collect();
    assert_eq!(loads.len(), 1);
    assert!(loads[0].get("device").is_none(), "{}", loads[0]);
    // The CSV keys its rows by device at the end of each row, the Markdown sets GPUs side by side.
    let csv = std::fs::read_to_string(file.with_extension("csv")).expect("the CSV file");
    let header = csv.lines().next().unwrap();
    assert!(
        header.contains(",device,device_uuid,device_pci_bus_id,"),
        "{header}"
    );
    let markdown = std::fs::read_to_string(file.with_extension("md")).expect("the Markdown file");
    assert!(
        markdown.contains("| benchmark | size | variant | GPU 0 | GPU 1 | GPU 2 | GPU 3 |"),
        "{markdown}"
    );
    let marked = (markdown.lines()).filter(|l| l.starts_with("| matmul |") && l.contains("**"));
    assert_eq!(marked.count(), 0, "nothing marked: {markdown}");
}

#[test]
fn a_gpu_fifteen_percent_slower_is_the_one_slow_device_names_and_the_run_exits_1() {
    let (_, output, file) = &runs()[1];
    let report = stdout_json(output);
    assert_eq!(
        output.status.code(),
        Some(1),
        "a slow_device finding exits 1"
    );
    let findings = report["findings"].as_array().expect("findings");
    assert_eq!(findings.len(), 1, "{findings:?}");
    let finding = &findings[0];
    assert_eq!(finding["code"], "slow_device");
    assert_eq!(finding["device"]["index"], 2);
    assert_eq!(
        finding["device"]["uuid"],
        report["gpu"]["devices"][2]["uuid"]
    );
    assert!(finding["device"]["pci_bus_id"].is_string(), "{finding}");
    let slow = finding["benchmarks"].as_array().expect("its benchmarks");
    assert_eq!(slow.len(), 2, "both matmuls: {finding}");
    for b in slow {
        let ratio = b["ratio"].as_f64().unwrap();
        assert!((1.10..1.21).contains(&ratio), "near 1.15: {b}");
    }
    assert!(
        finding["fix"].as_str().unwrap().contains("-i 2"),
        "{finding}"
    );
    let markdown = std::fs::read_to_string(file.with_extension("md")).expect("the Markdown file");
    assert!(markdown.contains("**slow_device**"), "{markdown}");
    let marked = (markdown.lines())
        .filter(|l| l.starts_with("| matmul |") && l.contains(" TFLOP/s**"))
        .count();
    assert_eq!(marked, 2, "GPU 2's two cells in bold: {markdown}");
}

#[test]
fn compare_matches_each_gpu_with_itself_and_names_the_slow_one() {
    let [(home, _, healthy), (_, _, slow)] = runs();
    let output = isolated_stackbench(home.path())
        .args(["compare", "--format", "json"])
        .arg(healthy)
        .arg(slow)
        .arg("--results")
        .arg(home.path().join("no-history"))
        .output()
        .expect("run stackbench compare");
    let report = stdout_json(&output);
    let rows = gpu_rows_of_compare(&report);
    assert_eq!(rows.len() as u64, 2 * GPUS, "each GPU's two rows: {report}");
    for row in &rows {
        let index = row["device"]["index"].as_u64().expect("a device");
        let ratio = row["ratio"]["ratio"]
            .as_f64()
            .expect("matched and measured");
        if index == 2 {
            assert!(ratio > 1.10, "{row}");
        } else {
            assert!((0.95..1.05).contains(&ratio), "{row}");
        }
    }
    // The GPU rows' regressions are GPU 2's, named with it (the load time is the busy host's).
    let regressions: Vec<&str> = (report["regressions"].as_array().unwrap().iter())
        .filter_map(Value::as_str)
        .filter(|r| r.starts_with("matmul/"))
        .collect();
    assert!(!regressions.is_empty(), "{report}");
    for text in regressions {
        assert!(text.contains(" on GPU 2 (GPU-"), "{text}");
    }
}

/// A comparison's rows of the GPU benchmarks.
fn gpu_rows_of_compare(report: &Value) -> Vec<&Value> {
    (report["benchmarks"].as_array().expect("benchmarks").iter())
        .filter(|b| b["id"].as_str().is_some_and(|id| id.starts_with("matmul/")))
        .collect()
}
