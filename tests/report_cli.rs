//! `stackbench report` over a results directory holding real runs on the fixture toolkits: a
//! quick bench run, the same run as it would read a night later after a driver and cuBLAS
//! upgrade, `check` with and without the fixture driver, a doctor run, and files that are not
//! runs. The HTML page charts each benchmark with its versions and shows each check matrix,
//! self-contained; the Markdown twin has the same tables; Chromium renders the page.

// Tests read the files they make and the checkout's own: std's readers are theirs (clippy.toml).
#![allow(clippy::disallowed_methods)]

mod common;

use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;

/// Runs `stackbench` with the fixture toolkits as the only installations and `args` after.
fn on_fixtures(command: &str, args: &[&str]) -> Output {
    let root = toolkits();
    let mut all = vec![command, "--no-system", "--root", root.to_str().unwrap()];
    all.extend_from_slice(args);
    run_stackbench(&all)
}

/// The results directory, filled once for every test.
fn results() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = common::scratch().join("results");
        std::fs::create_dir_all(&dir).expect("results directory");
        fill(&dir);
        dir
    })
}

fn fill(dir: &Path) {
    let driver = fixture(DRIVER_AMD64);
    let driver = driver.to_str().unwrap();
    let scratch = dir.join("bench-files");
    let bench = on_fixtures(
        "bench",
        &[
            "--quick",
            "--allow-skip",
            "--driver-dir",
            driver,
            "--combination",
            "pip:venv-cu12",
            "--format",
            "json",
            "--results",
            scratch.to_str().unwrap(),
        ],
    );
    assert_eq!(bench.status.code(), Some(0));
    let mut run: Value = serde_json::from_slice(&bench.stdout).expect("bench JSON");
    run["started"] = Value::from("2026-11-01T02:00:00Z");
    write(&dir.join("bench-night-1.json"), &run);
    // The next night: a newer driver and cuBLAS, every sample 10% longer.
    run["started"] = Value::from("2026-11-02T02:00:00Z");
    run["gpu"]["driver_version"] = Value::from("580.65.06");
    for library in run["combinations"][0]["libraries"].as_array_mut().unwrap() {
        if library["component"] == "cublas" {
            library["version"] = Value::from("12.9.9");
        }
    }
    for row in run["benchmarks"].as_array_mut().unwrap() {
        for sample in row["samples_ns"].as_array_mut().unwrap() {
            *sample = Value::from(sample.as_f64().unwrap() * 1.1);
        }
        if let Some(summary) = row["summary"].as_object_mut() {
            for field in ["median_ns", "q1_ns", "q3_ns", "min_ns", "max_ns"] {
                summary[field] = Value::from(summary[field].as_f64().unwrap() * 1.1);
            }
        }
    }
    write(&dir.join("bench-night-2.json"), &run);
    for (name, with_driver) in [
        ("check-with-driver.json", true),
        ("check-no-driver.json", false),
    ] {
        let mut args = vec!["--combination", "pip:venv-cu12", "--target", "sm_90"];
        if with_driver {
            args.extend(["--driver-dir", driver]);
        }
        args.extend(["--format", "json", "-o"]);
        let path = dir.join(name);
        args.push(path.to_str().unwrap());
        on_fixtures("check", &args);
    }
    let doctor = dir.join("doctor.json");
    on_fixtures(
        "doctor",
        &["--format", "json", "-o", doctor.to_str().unwrap()],
    );
    std::fs::write(
        dir.join("truncated.json"),
        r#"{"schema": "stackbench.bench/v1", "sta"#,
    )
    .unwrap();
    let compared = run_stackbench(&[
        "compare",
        dir.join("bench-night-1.json").to_str().unwrap(),
        dir.join("bench-night-2.json").to_str().unwrap(),
        "--format",
        "json",
    ]);
    std::fs::write(dir.join("compared.json"), &compared.stdout).unwrap();
}

fn write(path: &Path, value: &Value) {
    std::fs::write(path, serde_json::to_vec_pretty(value).unwrap()).unwrap();
}

/// `stackbench report` of the results directory in `format`, to a file: its exit status and
/// the page.
fn report(format: &str) -> (Option<i32>, String) {
    let out = tempfile::tempdir().unwrap();
    let page = out.path().join("page");
    let output = run_stackbench(&[
        "report",
        "--results",
        results().to_str().unwrap(),
        "--format",
        format,
        "-o",
        page.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    let text = std::fs::read_to_string(&page)
        .unwrap_or_else(|e| panic!("no page written ({e}); stderr: {stderr}"));
    (output.status.code(), text)
}

/// The HTML page, written once.
fn html() -> &'static str {
    static PAGE: OnceLock<String> = OnceLock::new();
    PAGE.get_or_init(|| {
        let (code, page) = report("html");
        assert_eq!(code, Some(1), "files were passed over");
        page
    })
}

#[test]
fn the_page_charts_each_benchmark_night_by_night_with_its_versions() {
    let page = html();
    assert!(page.starts_with("<!DOCTYPE html>"));
    for chart in [
        "nvrtc_compile/vector_add/sm_90",
        "nvrtc_compile/matmul_tiled/sm_90",
        "load",
    ] {
        assert!(page.contains(&format!("<h4>{chart}</h4>")), "{chart}");
    }
    assert_eq!(page.matches("<svg ").count(), 3);
    // One point per night per chart, each with the versions behind it on hover.
    assert_eq!(page.matches("<circle ").count(), 6);
    assert_eq!(page.matches("<polyline ").count(), 3, "a line per series");
    assert!(page.contains("driver 580.65.06 (CUDA 12.2)"));
    assert!(page.contains("cublas 12.9.9"));
    // The first night's versions are v1, the upgrade's v2, marked on the chart where it came.
    assert_eq!(page.matches(r#"font-weight="bold""#).count(), 6);
    assert!(page.contains("<b>v2</b>: driver 580.65.06"));
    assert!(page.contains("11-01 02:00") && page.contains("11-02 02:00"));
}

#[test]
fn the_page_shows_each_check_run_s_matrix_and_every_run() {
    let page = html();
    assert_eq!(page.matches("<h3>2026-").count(), 2, "two check matrices");
    assert!(
        page.contains(r#"<td class="fail""#),
        "the run without a driver fails"
    );
    assert!(page.contains(r#"<td class="pass""#));
    assert!(page.contains("<code>pip:venv-cu12</code>"));
    assert!(page.contains("<code>driver.library</code>"));
    for kind in ["<td>bench</td>", "<td>check</td>", "<td>doctor</td>"] {
        assert!(page.contains(kind), "{kind}");
    }
    assert!(page.contains("5 runs (2 bench, 2 check, 1 doctor)"));
}

#[test]
fn the_page_is_self_contained_and_names_the_files_it_passed_over() {
    let page = html();
    assert!(!page.contains("<script"));
    assert!(!page.contains("src="));
    assert!(!page.contains("<link"));
    let outside: Vec<&str> = page
        .match_indices("http")
        .map(|(at, _)| &page[at..(at + 40).min(page.len())])
        .filter(|s| !s.starts_with("http://www.w3.org/2000/svg"))
        .collect();
    assert!(outside.is_empty(), "{outside:?}");
    assert!(page.contains("truncated.json: not JSON"));
    assert!(page
        .contains("compared.json: a stackbench.compare/v1 file, made from runs, not a run itself"));
}

#[test]
fn the_markdown_twin_has_the_same_tables_without_the_charts() {
    let (code, page) = report("markdown");
    assert_eq!(code, Some(1));
    assert!(!page.contains("<svg"));
    assert!(page.contains("### `nvrtc_compile/vector_add/sm_90`"));
    assert!(page.contains("| run | `pip:venv-cu12` |"));
    let nights: Vec<&str> = page
        .lines()
        .filter(|l| l.starts_with("| 2026-11-0") && l.contains(" ms ("))
        .collect();
    assert_eq!(
        nights.len(),
        6,
        "two nights in each of three tables: {nights:?}"
    );
    assert!(page.contains("| 2026-11-02T02:00:00Z | bench | "));
    assert!(page.contains("- v2: driver 580.65.06 (CUDA 12.2)"));
    assert!(page.contains("| driver | `driver.library` | **FAIL** |"));
    assert!(page.contains("- passed over: "));
}

#[test]
fn the_json_form_is_schema_tagged_and_marks_where_versions_changed() {
    let (_, page) = report("json");
    let history: Value = serde_json::from_str(&page).unwrap();
    assert_eq!(history["schema"], "stackbench.history/v1");
    assert_eq!(history["runs"].as_array().unwrap().len(), 5);
    assert_eq!(history["passed_over"].as_array().unwrap().len(), 2);
    for chart in history["charts"].as_array().unwrap() {
        let points = chart["series"][0]["points"].as_array().unwrap();
        let changed: Vec<bool> = points
            .iter()
            .map(|p| p["versions_changed"].as_bool().unwrap())
            .collect();
        assert_eq!(changed, [true, true], "{chart}");
        let ratio =
            points[1]["median_ns"].as_f64().unwrap() / points[0]["median_ns"].as_f64().unwrap();
        assert!((ratio - 1.1).abs() < 1e-9, "{chart}");
    }
}

#[test]
fn no_runs_is_a_clear_error_with_exit_2() {
    let empty = tempfile::tempdir().unwrap();
    std::fs::write(empty.path().join("empty.json"), "").unwrap();
    let output = run_stackbench(&["report", "--results", empty.path().to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("no run to report"), "{stderr}");
    assert!(stderr.contains("1 file(s) passed over"), "{stderr}");
    let missing = run_stackbench(&["report", "--results", "/nonexistent/results"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("cannot read the results directory"));
}

#[test]
fn a_directory_given_as_a_path_is_read_as_its_results() {
    let page = |args: &[&str]| {
        let mut all = vec!["report", "--format", "json"];
        all.extend_from_slice(args);
        let output = run_stackbench(&all);
        let mut page: Value = serde_json::from_slice(&output.stdout).unwrap();
        page.as_object_mut().unwrap().remove("generated");
        (output.status.code(), page)
    };
    let dir = results().to_str().unwrap();
    let (code, given) = page(&[dir]);
    assert_eq!(code, Some(1), "the same files are passed over");
    assert!(!given["runs"].as_array().unwrap().is_empty());
    assert_eq!((code, given.clone()), page(&["--results", dir]));
    // A directory and a file of it: the file is one run, read once.
    let night = results().join("bench-night-1.json");
    assert_eq!(page(&[dir, night.to_str().unwrap()]).1, given);
    let empty = tempfile::tempdir().unwrap();
    let output = run_stackbench(&["report", empty.path().to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("the 1 path(s) given held no readable"),
        "{stderr}"
    );
}

/// A night on the simulated GPU beside a real night: its figures are charted as a series of
/// their own, labelled "(simulated)", never as a point on the real run's line; its points, run
/// and check matrix are marked, and the headline says how many runs were simulated.
#[test]
fn simulated_runs_are_charted_apart_and_marked() {
    let dir = tempfile::tempdir().unwrap();
    let real: Value =
        serde_json::from_slice(&std::fs::read(results().join("bench-night-1.json")).unwrap())
            .unwrap();
    write(&dir.path().join("real.json"), &real);
    let mut simulated = real.clone();
    simulated["started"] = Value::from("2026-11-02T02:00:00Z");
    simulated["simulated"] = Value::from(true);
    for c in simulated["combinations"].as_array_mut().unwrap() {
        c["simulated"] = Value::from(true);
    }
    write(&dir.path().join("simulated.json"), &simulated);
    let mut check: Value =
        serde_json::from_slice(&std::fs::read(results().join("check-with-driver.json")).unwrap())
            .unwrap();
    check["simulated"] = Value::from(true);
    write(&dir.path().join("check-simulated.json"), &check);
    let run = |format: &str| {
        let output = run_stackbench(&["report", dir.path().to_str().unwrap(), "--format", format]);
        assert_eq!(output.status.code(), Some(0), "{output:?}");
        String::from_utf8(output.stdout).unwrap()
    };
    let page: Value = serde_json::from_str(&run("json")).unwrap();
    let runs = page["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 3);
    assert!(runs[0].get("simulated").is_none(), "the real night");
    assert_eq!(runs[1]["simulated"], true);
    assert_eq!(page["matrices"][0]["simulated"], true);
    for chart in page["charts"].as_array().unwrap() {
        let series = chart["series"].as_array().unwrap();
        assert_eq!(series.len(), 2, "real and simulated apart: {chart}");
        assert_eq!(series[0]["label"], "pip:venv-cu12");
        assert_eq!(series[1]["label"], "pip:venv-cu12 (simulated)");
        for point in series[0]["points"].as_array().unwrap() {
            assert!(point.get("simulated").is_none(), "{point}");
        }
        for point in series[1]["points"].as_array().unwrap() {
            assert_eq!(point["simulated"], true, "{point}");
        }
    }
    let markdown = run("markdown");
    assert!(
        markdown.contains("(2 on the SIMULATED GPU: their figures are a model's"),
        "{markdown}"
    );
    assert!(
        markdown.contains("`pip:venv-cu12 (simulated)`"),
        "{markdown}"
    );
    assert!(markdown.contains("*simulated*"), "{markdown}");
    assert!(markdown.contains("(SIMULATED GPU) |"), "{markdown}");
    let html = run("html");
    assert!(html.contains("SIMULATED GPU, not a GPU's figure"));
    assert!(html.contains(r#"fill="white" stroke="#));
}

/// Chromium renders the page headless; the screenshot is kept for a person to look at, and
/// its pixels hold the charts' first colour and the failed checks' red.
#[test]
fn chromium_renders_the_page() {
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let page = out.join("report.html");
    std::fs::write(&page, html()).unwrap();
    let shot = screenshot(&page, &out.join("report.png"));
    let count = |rgb: [u8; 3]| shot.count(|p| p == rgb);
    assert!(
        count([0x00, 0x72, 0xb2]) > 500,
        "the charts' lines and points"
    );
    assert!(count([0xf9, 0xd9, 0xd9]) > 500, "the failed checks' cells");
}
