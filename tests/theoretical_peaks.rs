//! Every GPU figure against what the card can do: `bench` on a simulated card that no table
//! names (compute capability 9.0, 100 SMs at 1500 MHz, memory 5120 bits at 1600 MHz) states
//! the theoretical peaks Hopper's rates give it, sets each figure against them, and leaves no
//! cuBLAS row at 100% of a ceiling it is itself; on an architecture without known rates it
//! says so and guesses nothing.

// Tests read the files they make and the checkout's own: std's readers are theirs (clippy.toml).
#![allow(clippy::disallowed_methods)]

mod common;

use common::{bench_rows, run_simulated};

/// The held-out card: its achieved rates (the simulator's model) below its theoretical ones.
const HELD_OUT: &str = r#"
[[device]]
name = "stackbench held-out card"
compute_capability = "9.0"
multiprocessors = 100
sm_clock_mhz = 1500
memory_clock_mhz = 1600
memory_bus_bits = 5120
memory_bandwidth_gbs = 1800.0
fp32_tflops = 33.0
tf32_tflops = 240.0
fp16_tflops = 470.0
bf16_tflops = 470.0
fp8_tflops = 940.0
seed = 7
"#;

/// `bench --quick` of the copy and the cuBLAS GEMMs (the simulator runs no SASS, and NVRTC
/// compiles SASS for a 9.0 card).
fn bench(toml: &str) -> serde_json::Value {
    let args = [
        "bench", "--quick", "--filter", "copy/", "--filter", "cublas/",
    ];
    run_simulated(&args, toml).report
}

#[test]
fn a_card_no_table_names_is_set_against_its_sms_clock_and_architecture() {
    let report = bench(HELD_OUT);
    let spec = &report["combinations"][0]["spec"];
    let tflops = |precision: &str| spec["tflops"][precision].as_f64().unwrap_or(f64::NAN);
    assert_eq!(spec["tflops"]["f32"], 38.4, "{spec}");
    // Tensor peaks at the maximum scaled as H100 SXM5's datasheet scales it: 1386 of 1500 MHz.
    assert!((tflops("bf16") - 567.7056).abs() < 1e-6, "{spec}");
    assert!((tflops("fp8") - 1135.4112).abs() < 1e-6, "{spec}");
    assert_eq!(spec["memory_gbps"], 2048.0, "{spec}");
    let basis = spec["basis"].as_str().unwrap();
    assert!(
        basis.starts_with("Hopper (sm_90): 100 SMs at 1500 MHz"),
        "{basis}"
    );
    let gemms = bench_rows(&report, "matmul");
    assert_eq!(gemms.len(), 5, "f32, tf32, f16, bf16, fp8");
    for row in gemms {
        assert_eq!(row["status"], "measured", "{row}");
        // The run's ceiling is this row itself: no share of it.
        assert!(row["pct_of_peak"].is_null(), "{row}");
        let precision = row["parameters"]["precision"].as_str().unwrap();
        let rate = row["throughput"]["value"].as_f64().unwrap();
        let peak = spec["tflops"][precision].as_f64().unwrap();
        let share = row["pct_of_spec"].as_f64().unwrap();
        assert!((share - 100.0 * rate / peak).abs() < 1e-9, "{row}");
        assert!(share > 0.0 && share < 100.0, "{precision}: {share}%");
    }
    let copy = &bench_rows(&report, "copy")[0];
    let share = copy["pct_of_spec"].as_f64().unwrap();
    // 1800 GB/s modelled of 2048 in theory: 88%, less the copy's latency.
    assert!(share > 80.0 && share < 88.0, "copy at {share}% of spec");
}

#[test]
fn an_architecture_without_known_rates_has_no_compute_peak_and_says_why() {
    // The default simulated device: compute capability 15.0.
    let report = bench("");
    let spec = &report["combinations"][0]["spec"];
    assert_eq!(
        spec["missing"], "no theoretical peak: unknown architecture (compute capability 15.0)",
        "{spec}"
    );
    assert!(spec["tflops"].is_null(), "{spec}");
    for row in bench_rows(&report, "matmul") {
        assert!(row["pct_of_spec"].is_null(), "{row}");
    }
    // The memory's peak is the driver's bus and clock, whatever the architecture.
    assert!(bench_rows(&report, "copy")[0]["pct_of_spec"]
        .as_f64()
        .is_some());
}

/// The real runs of GPU model `model` (`h100`, `h200`: as `ci/gpu-run` names it) committed under
/// `results/`, by their JSON files.
fn committed_runs(model: &str) -> Vec<std::path::PathBuf> {
    let results = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("results");
    let mut runs: Vec<_> = std::fs::read_dir(results)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.starts_with("bench-")
                && name.contains(&format!("-{model}-"))
                && name.ends_with(".json")
        })
        .collect();
    runs.sort();
    runs
}

/// A committed run rendered again by `bench --from`, as JSON.
fn rendered_again(run: &std::path::Path) -> serde_json::Value {
    let output = std::process::Command::new(common::stackbench_bin())
        .args(["bench", "--format", "json", "--from"])
        .arg(run)
        .output()
        .unwrap();
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("{}: {e}", run.display()))
}

#[test]
fn the_committed_h100_runs_read_against_the_h100_s_datasheet_and_no_cublas_row_is_its_own_ceiling()
{
    let runs = committed_runs("h100");
    assert!(!runs.is_empty());
    for run in runs {
        let report = rendered_again(&run);
        for combination in report["combinations"].as_array().unwrap() {
            let spec = &combination["spec"];
            assert_eq!(spec["tflops"]["bf16"].as_f64().map(f64::round), Some(989.0));
            let basis = spec["basis"].as_str().unwrap();
            assert!(basis.contains("H100 SXM5 datasheet"), "{basis}");
        }
        for row in bench_rows(&report, "matmul") {
            if row["parameters"]["implementation"] == "cublas" {
                assert!(row["pct_of_peak"].is_null(), "{row}");
                let share = row["pct_of_spec"].as_f64().unwrap();
                assert!(share > 50.0 && share < 100.0, "{}: {share}%", run.display());
            }
        }
        // And the committed Markdown beside it says so: no cuBLAS row at 100%.
        let markdown = std::fs::read_to_string(run.with_extension("md")).unwrap();
        for line in markdown.lines().filter(|l| l.contains("| cublas ")) {
            assert!(!line.contains("| 100.0% |"), "{}: {line}", run.display());
            assert!(line.contains("% |"), "{line}");
        }
    }
}

#[test]
fn the_committed_h200_run_reads_against_the_h200_s_datasheet() {
    let runs = committed_runs("h200");
    assert!(!runs.is_empty());
    for run in runs {
        let report = rendered_again(&run);
        for combination in report["combinations"].as_array().unwrap() {
            let spec = &combination["spec"];
            let basis = spec["basis"].as_str().unwrap();
            assert!(basis.contains("H200 SXM datasheet"), "{basis}");
            // HBM3e: 4.8 TB/s against the H100 SXM5's 3.35; the same tensor cores.
            assert_eq!(
                spec["memory_gbps"].as_f64().map(f64::round),
                Some(4800.0),
                "{spec}"
            );
            assert_eq!(spec["tflops"]["bf16"].as_f64().map(f64::round), Some(989.0));
        }
    }
}

/// The committed H100 runs measured at schema minor 3 (no clocks, no SM clock telemetry) and
/// were rendered again by `bench --from` for their theoretical peaks: they say minor 3 and when
/// and by which stackbench they were rendered again, and rendering one again keeps its minor.
#[test]
fn a_run_rendered_again_keeps_the_minor_it_was_measured_at_and_says_so() {
    for run in committed_runs("h100") {
        let saved: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&run).unwrap()).unwrap();
        assert_eq!(saved["schema_minor"], 3, "{}", run.display());
        let measured_clocks = (saved["benchmarks"].as_array().unwrap().iter())
            .any(|row| !row["telemetry"]["sm_clock_mhz_mean"].is_null());
        assert!(!measured_clocks, "{}", run.display());
        let by = saved["rerendered"]["by"].as_str().unwrap_or_default();
        assert!(by.starts_with("stackbench 0."), "{}: {by:?}", run.display());
        let again = rendered_again(&run);
        assert_eq!(again["schema_minor"], 3, "{}", run.display());
        assert!(again["rerendered"]["at"].is_string(), "{}", run.display());
        assert!(again["clocks_locked"].is_null());
    }
}

/// The report page's rooflines for the committed H100 runs, drawn by Chromium: the newest run's
/// kernels under the H100 SXM5's memory and compute roofs. The screenshot is kept under the
/// target's temporary directory for a person to look at.
#[test]
fn the_report_draws_the_h100_s_roofline_and_chromium_renders_it() {
    let runs = committed_runs("h100");
    let mut args = vec!["report".to_owned(), "--format".into(), "html".into()];
    args.extend(runs.iter().map(|p| p.display().to_string()));
    let output = std::process::Command::new(common::stackbench_bin())
        .args(&args)
        .output()
        .unwrap();
    let page = String::from_utf8(output.stdout).unwrap();
    let start = page
        .find(r#"<h2 id="rooflines">"#)
        .expect("a rooflines section");
    let end = start + page[start..].find(r#"<h2 id="checks">"#).unwrap();
    let section = &page[start..end];
    assert_eq!(
        section.matches("<svg ").count(),
        1,
        "one GPU model: one roofline"
    );
    assert!(section.contains(r#"aria-label="roofline of NVIDIA H100 80GB HBM3""#));
    assert!(
        section.contains("<title>memory: 3350 GB/s</title>"),
        "{section}"
    );
    assert!(
        section.contains("<title>f16, bf16: 989.4 TFLOP/s</title>"),
        "{section}"
    );
    // Every measured GEMM and vector add of the newest run, two combinations of five GEMMs and
    // one vector add, each under its roof.
    assert_eq!(section.matches(r#"<circle class="kernel""#).count(), 12);
    assert!(section.contains("matmul/cublas/bf16/8192/batch (pip:torch): "));
    assert!(section.contains("% of the bf16 roof"));
    let head = &page[..page.find("<body>").unwrap() + "<body>".len()];
    let out = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let html = out.join("roofline.html");
    std::fs::write(&html, format!("{head}\n{section}</body></html>\n")).unwrap();
    let shot = common::screenshot(&html, &out.join("roofline.png"));
    // The BF16 roof and points, and the memory roof (their colours, give or take the edges'
    // antialiasing).
    let near = |rgb: [u8; 3]| move |p: [u8; 3]| (0..3).all(|i| p[i].abs_diff(rgb[i]) < 24);
    assert!(shot.count(near([0xd5, 0x5e, 0x00])) > 300, "the bf16 roof");
    assert!(
        shot.count(near([0x22, 0x22, 0x22])) > 300,
        "the memory roof"
    );
}
