//! `probe::run_with` on the real fixture libraries (`ci/fetch-toolkits`) and on small libraries built
//! here that crash, hang or cannot bind. No GPU needed: the values asserted are what the real
//! libraries answer on a machine with the 535 driver's libcuda but no NVIDIA device.

// Tests read the files they make and the checkout's own: std's readers are theirs (clippy.toml).
#![allow(clippy::disallowed_methods)]

mod common;
use common::fixture;

use rstest::rstest;
use stackbench::probe::{self, ApiCall, LoadOutcome, LoadReport, LoadStage, ProbeRequest};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const SP: &str = "lib/python3.11/site-packages/nvidia";
const DRIVER: &str = "driver-535/amd64/usr/lib/x86_64-linux-gnu/nvidia/current";
const DRIVER_I386: &str = "driver-535/i386/usr/lib/i386-linux-gnu/nvidia/current";

fn driver_dir() -> PathBuf {
    fixture(DRIVER)
}

fn worker() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_stackbench"))
}

fn probe_with_driver(libraries: Vec<PathBuf>) -> Vec<LoadReport> {
    let request = ProbeRequest {
        ld_library_path: Some(driver_dir().display().to_string()),
        ..ProbeRequest::new(libraries)
    };
    probe::run_with(&request, worker())
}

fn call<'a>(report: &'a LoadReport, function: &str) -> &'a ApiCall {
    report
        .api
        .iter()
        .find(|c| c.function == function)
        .unwrap_or_else(|| panic!("{function} not called: {report:#?}"))
}

fn answered(report: &LoadReport, function: &str, value: i64, text: &str) {
    let got = call(report, function);
    assert_eq!(got.value, Some(value), "{got:?}");
    assert_eq!(got.text.as_deref(), Some(text), "{got:?}");
    assert!(matches!(got.status, None | Some(0)), "{got:?}");
}

fn failed_with(report: &LoadReport, function: &str, status: i64, name: &str) {
    let got = call(report, function);
    assert_eq!(got.status, Some(status), "{got:?}");
    assert_eq!(got.value, None, "{got:?}");
    assert_eq!(got.text.as_deref(), Some(name), "{got:?}");
}

fn assert_loaded(report: &LoadReport) {
    assert_eq!(report.outcome, LoadOutcome::Loaded, "{report:#?}");
}

fn trail_has(report: &LoadReport, line: &str) -> bool {
    report.search_trail.iter().any(|l| l.starts_with(line))
}

#[test]
fn cudart_12_9_with_driver_535_finds_no_device() {
    let reports = probe_with_driver(vec![fixture(&format!(
        "venv-cu12/{SP}/cuda_runtime/lib/libcudart.so.12"
    ))]);
    let report = &reports[0];
    assert_loaded(report);
    answered(report, "cudaRuntimeGetVersion", 12090, "12.9");
    answered(report, "cudaDriverGetVersion", 12020, "12.2");
    failed_with(report, "cudaGetDeviceCount", 100, "cudaErrorNoDevice");
    // libcudart opens the driver's libcuda during its API calls, then unloads it again.
    let libcuda = std::fs::canonicalize(driver_dir().join("libcuda.so.1")).unwrap();
    let object = report
        .loaded
        .iter()
        .find(|o| o.path == libcuda)
        .unwrap_or_else(|| panic!("535 libcuda not among {:#?}", report.loaded));
    assert_eq!(object.stage, LoadStage::ApiCall);
    assert!(object.unloaded);
    assert!(
        trail_has(report, "find library=libcuda.so.1 [0]; searching"),
        "{:#?}",
        report.search_trail
    );
    assert!(
        trail_has(
            report,
            &format!("trying file={}/libcuda.so.1", driver_dir().display())
        ),
        "{:#?}",
        report.search_trail
    );
    // The requested file itself, by its soname and real path.
    assert_eq!(report.loaded[0].name, "libcudart.so.12");
    assert_eq!(report.loaded[0].stage, LoadStage::Dlopen);
}

#[test]
fn cudart_13_on_driver_535_is_insufficient() {
    let reports = probe_with_driver(vec![fixture("conda/envs/cu13/lib/libcudart.so.13")]);
    let report = &reports[0];
    assert_loaded(report);
    answered(report, "cudaRuntimeGetVersion", 13000, "13.0");
    answered(report, "cudaDriverGetVersion", 12020, "12.2");
    failed_with(
        report,
        "cudaGetDeviceCount",
        35,
        "cudaErrorInsufficientDriver",
    );
    // The conda name is a symlink chain; the loader mapped the versioned file.
    assert_eq!(report.loaded[0].name, "libcudart.so.13");
    assert!(report.loaded[0]
        .path
        .ends_with("targets/x86_64-linux/lib/libcudart.so.13.0.96"));
}

#[test]
fn cudart_11_8_fails_even_its_runtime_version_without_a_device() {
    let reports = probe_with_driver(vec![fixture(&format!(
        "venv-cu11/{SP}/cuda_runtime/lib/libcudart.so.11.0"
    ))]);
    let report = &reports[0];
    assert_loaded(report);
    // CUDA 11.8's cudaRuntimeGetVersion initialises the driver, and fails with it.
    failed_with(report, "cudaRuntimeGetVersion", 100, "cudaErrorNoDevice");
    answered(report, "cudaDriverGetVersion", 12020, "12.2");
    failed_with(report, "cudaGetDeviceCount", 100, "cudaErrorNoDevice");
}

#[test]
fn libcuda_535_amd64_loads_and_i386_has_the_wrong_class() {
    let request = ProbeRequest::new([
        fixture(&format!("{DRIVER_I386}/libcuda.so.1")),
        fixture(&format!("{DRIVER}/libcuda.so.1")),
    ]);
    let reports = probe::run_with(&request, worker());
    match &reports[0].outcome {
        LoadOutcome::Failed { error } => {
            assert!(error.contains("wrong ELF class: ELFCLASS32"), "{error}")
        }
        other => panic!("i386 libcuda: {other:?}"),
    }
    assert!(reports[0].api.is_empty());
    let amd64 = &reports[1];
    assert_loaded(amd64);
    answered(amd64, "cuDriverGetVersion", 12020, "12.2");
    failed_with(amd64, "cuInit", 100, "CUDA_ERROR_NO_DEVICE");
    assert!(
        amd64.api.iter().all(|c| c.function != "cuDeviceGetCount"),
        "{:?}",
        amd64.api
    );
    assert_eq!(amd64.loaded[0].name, "libcuda.so.1");
    assert!(amd64.loaded[0].path.ends_with("libcuda.so.535.261.03"));
}

#[test]
fn nvml_535_without_a_driver() {
    let reports = probe_with_driver(vec![fixture(&format!("{DRIVER}/libnvidia-ml.so.1"))]);
    assert_loaded(&reports[0]);
    failed_with(&reports[0], "nvmlInit_v2", 9, "Driver Not Loaded");
    assert_eq!(reports[0].api.len(), 1, "{:?}", reports[0].api);
}

/// Each library's own version API, as the real libraries answer it.
#[rstest]
#[case::cudnn_8_9_cu11(&format!("venv-cu11/{SP}/cudnn/lib/libcudnn_ops_infer.so.8"), "cudnnGetVersion", 8906, "8.9.6")]
#[case::cudnn_8_9_cu11_cudart(&format!("venv-cu11/{SP}/cudnn/lib/libcudnn_ops_infer.so.8"), "cudnnGetCudartVersion", 11080, "11.8")]
#[case::cudnn_8_9_2_cu12(&format!("venv-cudnn8-cu12-cublas11/{SP}/cudnn/lib/libcudnn_cnn_infer.so.8"), "cudnnGetVersion", 8902, "8.9.2")]
#[case::cudnn_8_9_2_cu12_cudart(&format!("venv-cudnn8-cu12-cublas11/{SP}/cudnn/lib/libcudnn_cnn_infer.so.8"), "cudnnGetCudartVersion", 12010, "12.1")]
#[case::cudnn_9_cu12(&format!("venv-cu12/{SP}/cudnn/lib/libcudnn.so.9"), "cudnnGetVersion", 92800, "9.28.0")]
#[case::cudnn_9_cu12_cudart(&format!("venv-cu12/{SP}/cudnn/lib/libcudnn.so.9"), "cudnnGetCudartVersion", 12090, "12.9")]
#[case::cudnn_9_cu13(&"conda/envs/cu13/lib/libcudnn_graph.so.9".to_owned(), "cudnnGetVersion", 92800, "9.28.0")]
#[case::cudnn_9_cu13_cudart(&"conda/envs/cu13/lib/libcudnn_graph.so.9".to_owned(), "cudnnGetCudartVersion", 13050, "13.5")]
#[case::cublas_11(&format!("venv-cu11/{SP}/cublas/lib/libcublas.so.11"), "cublasGetProperty", 111103, "11.11.3")]
#[case::cublas_11_cudart(&format!("venv-cu11/{SP}/cublas/lib/libcublas.so.11"), "cublasGetCudartVersion", 11080, "11.8")]
#[case::cublaslt_11(&format!("venv-cu11/{SP}/cublas/lib/libcublasLt.so.11"), "cublasLtGetVersion", 111103, "11.11.3")]
#[case::cublas_12(&format!("venv-cu12/{SP}/cublas/lib/libcublas.so.12"), "cublasGetProperty", 120901, "12.9.1")]
#[case::cublas_12_cudart(&format!("venv-cu12/{SP}/cublas/lib/libcublas.so.12"), "cublasGetCudartVersion", 12080, "12.8")]
#[case::cublaslt_12(&"usr/local/cuda-12.9/lib64/libcublasLt.so".to_owned(), "cublasLtGetVersion", 120901, "12.9.1")]
#[case::nvrtc_11(&format!("venv-cu11/{SP}/cuda_nvrtc/lib/libnvrtc.so.11.2"), "nvrtcVersion", 11080, "11.8")]
#[case::nvrtc_12(&format!("venv-cu12/{SP}/cuda_nvrtc/lib/libnvrtc.so.12"), "nvrtcVersion", 12090, "12.9")]
#[case::nvrtc_12_alt(&format!("venv-cu12/{SP}/cuda_nvrtc/lib/libnvrtc.alt.so.12"), "nvrtcVersion", 12090, "12.9")]
#[case::nvrtc_13(&"conda/envs/cu13/lib/libnvrtc.so.13".to_owned(), "nvrtcVersion", 13000, "13.0")]
fn version_apis(
    #[case] library: &str,
    #[case] function: &str,
    #[case] value: i64,
    #[case] text: &str,
) {
    let reports = probe_with_driver(vec![fixture(library)]);
    assert_loaded(&reports[0]);
    answered(&reports[0], function, value, text);
}

/// CUPTI's API version is a plain number.
#[rstest]
#[case::cupti_11_8(&format!("venv-cu11/{SP}/cuda_cupti/lib/libcupti.so.11.8"), 18)]
#[case::cupti_12_9(&format!("venv-cu12/{SP}/cuda_cupti/lib/libcupti.so.12"), 28)]
#[case::cupti_13_0(&"conda/envs/cu13/lib/libcupti.so.13".to_owned(), 130001)]
fn cupti_versions(#[case] library: &str, #[case] version: i64) {
    let reports = probe_with_driver(vec![fixture(library)]);
    assert_loaded(&reports[0]);
    let got = call(&reports[0], "cuptiGetVersion");
    assert_eq!((got.status, got.value), (Some(0), Some(version)), "{got:?}");
}

/// Builds `source` into `dir/name` with `cc -shared -fPIC`.
fn build(dir: &Path, name: &str, source: &str) -> PathBuf {
    let c = dir.join(format!("{name}.c"));
    std::fs::write(&c, source).unwrap();
    let out = dir.join(name);
    let status = Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&out)
        .arg(&c)
        .status()
        .expect("cc runs (a C compiler is needed to build the test libraries)");
    assert!(status.success(), "cc failed for {name}");
    out
}

#[test]
fn crash_hang_and_unbound_symbol_cost_no_other_results() {
    let dir = tempfile::tempdir().unwrap();
    let crash = build(
        dir.path(),
        "libcrash.so",
        r#"#include <signal.h>
#include <stdio.h>
__attribute__((constructor)) static void boom(void) {
    printf("crash constructor says hello\n");
    fflush(stdout);
    raise(SIGSEGV);
}
"#,
    );
    let hang = build(
        dir.path(),
        "libhang.so",
        r#"#include <unistd.h>
__attribute__((constructor)) static void stall(void) { for (;;) pause(); }
"#,
    );
    let unbound = build(
        dir.path(),
        "libunbound.so",
        "extern void nope(void);\nvoid f(void) { nope(); }\n",
    );
    let good = fixture(&format!("venv-cu12/{SP}/cuda_runtime/lib/libcudart.so.12"));
    let request = ProbeRequest {
        ld_library_path: Some(driver_dir().display().to_string()),
        timeout: Duration::from_secs(1),
        ..ProbeRequest::new([crash.clone(), hang.clone(), unbound.clone(), good.clone()])
    };
    let started = Instant::now();
    let reports = probe::run_with(&request, worker());
    let elapsed = started.elapsed();
    assert_eq!(reports.len(), 4);
    assert_eq!(
        reports.iter().map(|r| r.path.clone()).collect::<Vec<_>>(),
        [crash.clone(), hang, unbound, good]
    );

    assert_eq!(
        reports[0].outcome,
        LoadOutcome::Crashed {
            signal: Some(11),
            signal_name: Some("SIGSEGV".into()),
            exit_code: None
        }
    );
    // The trail and what the constructor printed (on stdout!) are kept, outside the protocol.
    assert!(
        trail_has(&reports[0], &format!("calling init: {}", crash.display())),
        "{:#?}",
        reports[0].search_trail
    );
    assert_eq!(reports[0].messages, ["crash constructor says hello"]);

    match reports[1].outcome {
        LoadOutcome::TimedOut { after_ms } => {
            assert!(after_ms >= 1000, "{after_ms}")
        }
        ref other => panic!("hang: {other:?}"),
    }
    match &reports[2].outcome {
        LoadOutcome::Failed { error } => {
            assert!(error.contains("undefined symbol: nope"), "{error}")
        }
        other => panic!("unbound: {other:?}"),
    }
    assert_loaded(&reports[3]);
    answered(&reports[3], "cudaRuntimeGetVersion", 12090, "12.9");
    failed_with(&reports[3], "cudaGetDeviceCount", 100, "cudaErrorNoDevice");
    // The hang waits forever, so any bound proves the 1 s timeout; this one holds on a loaded
    // 2-core machine too.
    assert!(elapsed < Duration::from_secs(60), "{elapsed:?}");
}

#[test]
fn a_missing_dependency_shows_in_the_search_trail() {
    // libcublas.so.12 alone: its RUNPATH $ORIGIN no longer holds libcublasLt.so.12.
    let dir = tempfile::tempdir().unwrap();
    let lone = dir.path().join("libcublas.so.12");
    std::os::unix::fs::symlink(
        fixture(&format!("venv-cu12/{SP}/cublas/lib/libcublas.so.12")),
        &lone,
    )
    .unwrap();
    let reports = probe::run_with(&ProbeRequest::new([lone]), worker());
    let report = &reports[0];
    match &report.outcome {
        LoadOutcome::Failed { error } => assert!(
            error.contains("libcublasLt.so.12: cannot open shared object file"),
            "{error}"
        ),
        other => panic!("{other:?}"),
    }
    assert!(
        trail_has(report, "find library=libcublasLt.so.12 [0]; searching"),
        "{:#?}",
        report.search_trail
    );
    assert!(
        trail_has(
            report,
            &format!("trying file={}/libcublasLt.so.12", dir.path().display())
        ),
        "{:#?}",
        report.search_trail
    );
}

#[test]
fn the_environments_path_is_searched_as_given() {
    // An empty directory, an empty entry (the current directory), then the driver: the loader
    // tries all three, in that order.
    let empty = tempfile::tempdir().unwrap();
    let request = ProbeRequest {
        ld_library_path: Some(format!(
            "{}::{}",
            empty.path().display(),
            driver_dir().display()
        )),
        ..ProbeRequest::new([fixture("conda/envs/cu13/lib/libcudart.so.13")])
    };
    let reports = probe::run_with(&request, worker());
    let trail = &reports[0].search_trail;
    let position = |line: &str| {
        trail
            .iter()
            .position(|l| l == line)
            .unwrap_or_else(|| panic!("no {line:?} in {trail:#?}"))
    };
    let ours = position(&format!(
        "trying file={}/libcuda.so.1",
        empty.path().display()
    ));
    let current = position("trying file=libcuda.so.1");
    let driver = position(&format!(
        "trying file={}/libcuda.so.1",
        driver_dir().display()
    ));
    assert!(ours < current && current < driver, "{trail:#?}");
    failed_with(
        &reports[0],
        "cudaGetDeviceCount",
        35,
        "cudaErrorInsufficientDriver",
    );
}

#[test]
fn isolated_libraries_each_show_everything_they_map() {
    let cudart = fixture(&format!("venv-cu12/{SP}/cuda_runtime/lib/libcudart.so.12"));
    let shared = probe_with_driver(vec![cudart.clone(), cudart.clone()]);
    assert!(!shared[0].loaded.is_empty());
    assert!(
        shared[1].loaded.is_empty(),
        "already mapped: {:#?}",
        shared[1].loaded
    );
    let request = ProbeRequest {
        ld_library_path: Some(driver_dir().display().to_string()),
        isolate: true,
        ..ProbeRequest::new([cudart.clone(), cudart])
    };
    let isolated = probe::run_with(&request, worker());
    assert_eq!(isolated[0].loaded, isolated[1].loaded);
}

#[test]
fn the_whole_cu12_venv_in_one_request() {
    let root = fixture(&format!("venv-cu12/{SP}"));
    let mut libraries: Vec<PathBuf> = Vec::new();
    for package in std::fs::read_dir(&root).unwrap() {
        let lib = package.unwrap().path().join("lib");
        let Ok(entries) = std::fs::read_dir(&lib) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            if path.file_name().unwrap().to_string_lossy().contains(".so") {
                libraries.push(path);
            }
        }
    }
    libraries.sort();
    assert!(libraries.len() >= 20, "{libraries:?}");
    let started = Instant::now();
    let reports = probe_with_driver(libraries.clone());
    let elapsed = started.elapsed();
    eprintln!(
        "probe::run_with: {} libraries of venv-cu12 in {elapsed:?} ({:?} each); worker-side sum {} ms",
        libraries.len(),
        elapsed / libraries.len() as u32,
        reports.iter().map(|r| r.millis).sum::<u64>()
    );
    for report in &reports {
        assert_loaded(report);
    }
    let versions: usize = reports.iter().map(|r| r.api.len()).sum();
    assert!(versions >= 20, "{versions}");
}
