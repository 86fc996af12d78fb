//! Every exporter's output for one hand-built `stackbench check` report, kept as insta
//! snapshots, and the JUnit XML validated against the Jenkins xUnit plugin's `junit-10.xsd`
//! (tests/data/) and read back with `xmllint`, which these tests need (Debian's
//! `libxml2-utils`; ci/test installs it): without it they fail, they never skip.
//!
//! The report is fixed (host, GPU, paths, versions, durations), so the snapshots change only
//! when an exporter does. Three combinations on a Tesla T4 with the 535 driver:
//! - `pip:venv-cu11` passes nearly everything: BF16 GEMM is skipped (the T4 is compute
//!   capability 7.5) and CUPTI warns that another profiler holds the GPU;
//! - `conda:cu13` has a runtime too new for the driver: `driver.version` fails, so do the
//!   runtime's calls and the kernel launches, and the checks after them skip in a chain;
//! - `toolkit:cuda-12.9` runs by minor version compatibility (a warning) with its cuBLASLt
//!   mapped from `/usr/lib/x86_64-linux-gnu`, outside the combination.
//!
//! Every combination warns that persistence mode is off: a host's problem, listed once.
//! Review a change with `INSTA_UPDATE=always cargo test --release --test check_report_snapshots`
//! and a diff of `tests/snapshots/`.

// Tests read the files they make and the checkout's own: std's readers are theirs (clippy.toml).
#![allow(clippy::disallowed_methods)]

use serde_json::json;
use stackbench::check::spec::SPECS;
use stackbench::gpu::{Gpu, GpuInfo};
use stackbench::model::{HostInfo, Layout};
use stackbench::report::exporter;
use stackbench::report::format::Format;
use stackbench::schema::check::*;
use stackbench::tags::CHECK_SCHEMA;
use std::collections::BTreeMap;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const CU11: &str = "pip:venv-cu11";
const CU13: &str = "conda:cu13";
const TOOLKIT: &str = "toolkit:cuda-12.9";

const NO_CUFFT: &str = "no cuFFT in this combination (libcufft.so.*)";
const NO_CURAND: &str = "no cuRAND in this combination (libcurand.so.*)";
const PERSISTENCE: &str = "persistence mode off on device 0: each process's first CUDA call pays \
                           driver initialisation; enable it with `nvidia-smi -pm 1` or run \
                           nvidia-persistenced";
const NO_BF16: &str = "BF16 GEMM needs compute capability 8.0 or newer; this GPU is 7.5";
const NO_FP8: &str =
    "FP8 GEMM needs compute capability 8.9 or newer (FP8 tensor cores); this GPU is 7.5";
/// Holds a double quote, `>` and `;`: what the escaping of every format must keep intact.
const DRIVER_TOO_OLD: &str = "driver supports CUDA 12.2, runtime is 13.0: \
    cudaErrorInsufficientDriver (35), \"CUDA driver version is insufficient for CUDA runtime \
    version\"; upgrade the driver to one for CUDA 13.x (>= 580), or use a CUDA 12.x runtime";
const PTX_TOO_NEW: &str = "cuModuleLoadData: CUDA_ERROR_UNSUPPORTED_PTX_VERSION (222): the \
                           provided PTX was compiled with an unsupported toolchain.";

/// The checks of a node's run: every spec but those across nodes only.
fn node_specs() -> impl Iterator<Item = &'static stackbench::check::spec::Spec> {
    (SPECS.iter()).filter(|spec| !stackbench::check::ACROSS_NODES_ONLY.contains(&spec.id))
}

/// A combination's check results in the spec's order: `pass` with the check's title unless
/// `ends` names the check, with durations that differ per check.
fn checks(ends: &[(&str, Status, &str)]) -> Vec<CheckResult> {
    node_specs()
        .enumerate()
        .map(|(index, spec)| {
            let (status, reason) = ends
                .iter()
                .find(|(id, _, _)| *id == spec.id)
                .map_or((Status::Pass, spec.title), |(_, s, r)| (*s, *r));
            let duration_ms = match status {
                Status::Skip => 0.0,
                _ => (index * 37 % 290) as f64 + 0.125,
            };
            CheckResult {
                id: spec.id.into(),
                library: spec.library.into(),
                status,
                reason: reason.into(),
                duration_ms,
                details: BTreeMap::new(),
                device: None,
            }
        })
        .collect()
}

/// Adds a detail to check `id`.
fn detail(checks: &mut [CheckResult], id: &str, key: &str, value: serde_json::Value) {
    let check = checks
        .iter_mut()
        .find(|c| c.id == id)
        .expect("a known check");
    check.details.insert(key.into(), value);
}

/// A library of a combination, found at `dir/name`, mapped from `real` (relative to `dir`
/// unless absolute); `inside` says whether `real` lies in the combination.
fn library(component: &str, name: &str, version: &str, dir: &str, real: &str) -> LibraryUse {
    let mapped = Path::new(dir).join(real);
    LibraryUse {
        component: component.into(),
        name: name.into(),
        version: Some(version.into()),
        resolved: Some(Path::new(dir).join(name)),
        inside: mapped.starts_with(dir),
        mapped: Some(mapped),
    }
}

/// A library only seen mapped, a dependency of another.
fn dependency(component: &str, name: &str, version: &str, file: &str) -> LibraryUse {
    LibraryUse {
        component: component.into(),
        name: name.into(),
        version: Some(version.into()),
        resolved: None,
        mapped: Some(file.into()),
        inside: true,
    }
}

fn driver() -> DriverUse {
    DriverUse {
        path: "/usr/lib/x86_64-linux-gnu/libcuda.so.1".into(),
        real_path: "/usr/lib/x86_64-linux-gnu/libcuda.so.535.261.03".into(),
        version: Some("535.261.03".into()),
        kernel_module: None,
    }
}

fn venv_cu11() -> CombinationReport {
    let site = "/opt/venv-cu11/lib/python3.11/site-packages/nvidia";
    let lib = |package: &str| format!("{site}/{package}/lib");
    let mut checks = checks(&[
        ("driver.health", Status::Warn, PERSISTENCE),
        ("cublas.gemm_bf16", Status::Skip, NO_BF16),
        ("cublasLt.matmul_fp8", Status::Skip, NO_FP8),
        (
            "cupti.activity",
            Status::Warn,
            "another profiler holds the GPU's profiling hardware (DCGM profiling metrics, or \
             Nsight Compute in another process): cuptiActivityEnable returned \
             CUPTI_ERROR_HARDWARE_BUSY (39); pause it (dcgmi profile --pause) or wait for it to \
             finish, then rerun",
        ),
        ("cufft.load", Status::Skip, NO_CUFFT),
        (
            "cufft.c2c",
            Status::Skip,
            "needs cufft.load, which was skipped: no cuFFT in this combination (libcufft.so.*)",
        ),
        ("curand.load", Status::Skip, NO_CURAND),
        (
            "curand.generate",
            Status::Skip,
            "needs curand.load, which was skipped: no cuRAND in this combination (libcurand.so.*)",
        ),
    ]);
    detail(
        &mut checks,
        "driver.library",
        "driver_version",
        json!("535.261.03"),
    );
    detail(&mut checks, "cudart.load", "version", json!("11.8"));
    detail(
        &mut checks,
        "cublas.sgemm",
        "relative_error",
        json!(2.384185791015625e-7),
    );
    CombinationReport {
        name: CU11.into(),
        origin: Origin::Installation,
        root: Some("/opt/venv-cu11/lib/python3.11/site-packages".into()),
        layout: Some(Layout::Pip),
        cuda_version: Some("11.8".into()),
        search_path: [lib("cuda_runtime"), lib("cublas"), lib("cudnn")].join(":"),
        driver: Some(driver()),
        libraries: vec![
            library(
                "cudart",
                "libcudart.so.11.0",
                "11.8.89",
                &lib("cuda_runtime"),
                "libcudart.so.11.0",
            ),
            library(
                "nvrtc",
                "libnvrtc.so.11.2",
                "11.8",
                &lib("cuda_nvrtc"),
                "libnvrtc.so.11.2",
            ),
            library(
                "cublas",
                "libcublas.so.11",
                "11.11.3",
                &lib("cublas"),
                "libcublas.so.11",
            ),
            library(
                "cublasLt",
                "libcublasLt.so.11",
                "11.11.3",
                &lib("cublas"),
                "libcublasLt.so.11",
            ),
            library(
                "cudnn",
                "libcudnn.so.8",
                "8.9.6",
                &lib("cudnn"),
                "libcudnn.so.8",
            ),
            library(
                "cupti",
                "libcupti.so.11.8",
                "API version 18",
                &lib("cuda_cupti"),
                "libcupti.so.11.8",
            ),
            dependency(
                "cudnn_ops_infer",
                "libcudnn_ops_infer.so.8",
                "8.9.6",
                &format!("{}/libcudnn_ops_infer.so.8", lib("cudnn")),
            ),
        ],
        checks,
        duration_ms: 9812.375,
        simulated: false,
        loaded_as: None,
        environment: Vec::new(),
        left_out: Vec::new(),
    }
}

fn conda_cu13() -> CombinationReport {
    let lib = "/opt/conda/envs/cu13/lib";
    let mut checks = checks(&[
        ("driver.health", Status::Warn, PERSISTENCE),
        ("driver.version", Status::Fail, DRIVER_TOO_OLD),
        (
            "cudart.memcpy",
            Status::Fail,
            "cudaSetDevice: cudaErrorInsufficientDriver (35): CUDA driver version is \
             insufficient for CUDA runtime version",
        ),
        ("nvrtc.launch_vector_add", Status::Fail, PTX_TOO_NEW),
        ("nvrtc.launch_matmul", Status::Fail, PTX_TOO_NEW),
        (
            "cublas.load",
            Status::Skip,
            "no cuBLAS in this combination (libcublas.so.*)",
        ),
        (
            "cublas.handle",
            Status::Skip,
            "needs cublas.load, which was skipped: no cuBLAS in this combination \
             (libcublas.so.*)",
        ),
        (
            "cublas.sgemm",
            Status::Skip,
            "needs cublas.handle; cublas.load was skipped: no cuBLAS in this combination \
             (libcublas.so.*)",
        ),
        (
            "cublas.gemm_fp16",
            Status::Skip,
            "needs cublas.handle; cublas.load was skipped: no cuBLAS in this combination \
             (libcublas.so.*)",
        ),
        (
            "cublas.gemm_bf16",
            Status::Skip,
            "needs cublas.handle; cublas.load was skipped: no cuBLAS in this combination \
             (libcublas.so.*)",
        ),
        (
            "cublasLt.load",
            Status::Skip,
            "no cuBLASLt in this combination (libcublasLt.so.*)",
        ),
        (
            "cublasLt.handle",
            Status::Skip,
            "needs cublasLt.load, which was skipped: no cuBLASLt in this combination \
             (libcublasLt.so.*)",
        ),
        (
            "cublasLt.matmul",
            Status::Skip,
            "needs cublasLt.handle; cublasLt.load was skipped: no cuBLASLt in this \
             combination (libcublasLt.so.*)",
        ),
        (
            "cublasLt.matmul_fp8",
            Status::Skip,
            "needs cublasLt.handle; cublasLt.load was skipped: no cuBLASLt in this \
             combination (libcublasLt.so.*)",
        ),
        (
            "cudnn.handle",
            Status::Fail,
            "cudnnCreate: CUDNN_STATUS_NOT_INITIALIZED (1001): cuDNN could not initialise the \
             CUDA runtime",
        ),
        (
            "cudnn.conv_forward",
            Status::Skip,
            "needs cudnn.handle, which failed: cudnnCreate: CUDNN_STATUS_NOT_INITIALIZED \
             (1001): cuDNN could not initialise the CUDA runtime",
        ),
        (
            "cupti.activity",
            Status::Skip,
            "needs nvrtc.launch_vector_add, which failed: cuModuleLoadData: \
             CUDA_ERROR_UNSUPPORTED_PTX_VERSION (222): the provided PTX was compiled with an \
             unsupported toolchain.",
        ),
        ("cufft.load", Status::Skip, NO_CUFFT),
        (
            "cufft.c2c",
            Status::Skip,
            "needs cufft.load, which was skipped: no cuFFT in this combination (libcufft.so.*)",
        ),
        ("curand.load", Status::Skip, NO_CURAND),
        (
            "curand.generate",
            Status::Skip,
            "needs curand.load, which was skipped: no cuRAND in this combination (libcurand.so.*)",
        ),
    ]);
    detail(&mut checks, "driver.version", "driver_cuda", json!("12.2"));
    detail(&mut checks, "driver.version", "runtime_cuda", json!("13.0"));
    CombinationReport {
        name: CU13.into(),
        origin: Origin::Installation,
        root: Some("/opt/conda/envs/cu13".into()),
        layout: Some(Layout::Conda),
        cuda_version: Some("13.0".into()),
        search_path: lib.into(),
        driver: Some(driver()),
        libraries: vec![
            library(
                "cudart",
                "libcudart.so.13",
                "13.0",
                lib,
                "libcudart.so.13.0.96",
            ),
            library(
                "nvrtc",
                "libnvrtc.so.13",
                "13.0",
                lib,
                "libnvrtc.so.13.0.88",
            ),
            library(
                "cudnn",
                "libcudnn.so.9",
                "9.28.0",
                lib,
                "libcudnn.so.9.28.0",
            ),
            library(
                "cupti",
                "libcupti.so.13",
                "API version 130001",
                lib,
                "libcupti.so.2025.3.1",
            ),
            dependency(
                "cudnn_graph",
                "libcudnn_graph.so.9",
                "9.28.0",
                &format!("{lib}/libcudnn_graph.so.9.28.0"),
            ),
        ],
        checks,
        duration_ms: 7420.5,
        simulated: false,
        loaded_as: None,
        environment: Vec::new(),
        left_out: Vec::new(),
    }
}

fn toolkit_12_9() -> CombinationReport {
    let lib = "/usr/local/cuda-12.9/targets/x86_64-linux/lib";
    let shadow = "/usr/lib/x86_64-linux-gnu/libcublasLt.so.12.0.1.189";
    let checks = checks(&[
        ("driver.health", Status::Warn, PERSISTENCE),
        (
            "driver.version",
            Status::Warn,
            "driver supports CUDA 12.2, runtime is 12.9: runs by minor version compatibility; \
             features new in 12.9 may fail with cudaErrorCallRequiresNewerDriver (36), and PTX \
             from this toolkit's NVRTC may not JIT-compile (cudaErrorUnsupportedPtxVersion, \
             222); upgrade the driver to one for CUDA 12.9",
        ),
        ("cublas.gemm_bf16", Status::Skip, NO_BF16),
        ("cublasLt.matmul_fp8", Status::Skip, NO_FP8),
        (
            "cudnn.load",
            Status::Skip,
            "no cuDNN in this combination (libcudnn.so.*)",
        ),
        (
            "cudnn.versions",
            Status::Skip,
            "needs cudnn.load, which was skipped: no cuDNN in this combination (libcudnn.so.*)",
        ),
        (
            "cudnn.handle",
            Status::Skip,
            "needs cudnn.load, which was skipped: no cuDNN in this combination (libcudnn.so.*)",
        ),
        (
            "cudnn.conv_forward",
            Status::Skip,
            "needs cudnn.handle; cudnn.load was skipped: no cuDNN in this combination \
             (libcudnn.so.*)",
        ),
        (
            "combination.isolated",
            Status::Warn,
            "one library came from outside the combination (libcublasLt.so.12 from \
             /usr/lib/x86_64-linux-gnu/libcublasLt.so.12.0.1.189): another installation \
             shadows it; a program of this combination mixes installations",
        ),
    ]);
    CombinationReport {
        name: TOOLKIT.into(),
        origin: Origin::Installation,
        root: Some("/usr/local/cuda-12.9".into()),
        layout: Some(Layout::Toolkit),
        cuda_version: Some("12.9".into()),
        search_path: format!("/usr/lib/x86_64-linux-gnu:{lib}"),
        driver: Some(driver()),
        libraries: vec![
            library(
                "cudart",
                "libcudart.so.12",
                "12.9.79",
                lib,
                "libcudart.so.12.9.79",
            ),
            library(
                "nvrtc",
                "libnvrtc.so.12",
                "12.9",
                lib,
                "libnvrtc.so.12.9.86",
            ),
            library(
                "cublas",
                "libcublas.so.12",
                "12.9.1",
                lib,
                "libcublas.so.12.9.1.4",
            ),
            library("cublasLt", "libcublasLt.so.12", "12.0.1", lib, shadow),
            library(
                "cupti",
                "libcupti.so.12",
                "API version 28",
                lib,
                "libcupti.so.2025.2.1",
            ),
            library(
                "cufft",
                "libcufft.so.11",
                "11.4.1",
                lib,
                "libcufft.so.11.4.1.4",
            ),
            library(
                "curand",
                "libcurand.so.10",
                "10.3.10",
                lib,
                "libcurand.so.10.3.10.19",
            ),
        ],
        checks,
        duration_ms: 11250.0,
        simulated: false,
        loaded_as: None,
        environment: Vec::new(),
        left_out: Vec::new(),
    }
}

fn report() -> CheckReport {
    CheckReport {
        schema: CHECK_SCHEMA.into(),
        started: "2026-03-02T14:05:09Z".into(),
        host: HostInfo {
            hostname: "gpu-host-01".into(),
            os: "linux".into(),
            arch: "x86_64".into(),
            stackbench_version: "0.1.0".into(),
            boot_id: None,
        },
        gpu: GpuInfo {
            source: "nvml".into(),
            devices: vec![Gpu {
                index: 0,
                name: "Tesla T4".into(),
                compute_capability: "7.5".into(),
                uuid: Some("GPU-5f3e2a1c-8b7d-4e6f-9a0b-1c2d3e4f5a6b".into()),
                pci_bus_id: None,
                memory_bytes: Some(16_106_127_360),
                memory_clock_mhz: None,
            }],
            driver_version: Some("535.261.03".into()),
            note: None,
        },
        target: None,
        driver_dir: None,
        simulated: false,
        load_untrusted: false,
        combinations: vec![venv_cu11(), conda_cu13(), toolkit_12_9()],
        node: None,
        baseline: None,
    }
}

fn render_report(report: &CheckReport, format: Format, color: bool) -> String {
    let bytes = exporter(format, color)
        .check(report)
        .expect("the report renders");
    String::from_utf8(bytes).expect("reports are UTF-8")
}

fn render(format: Format, color: bool) -> String {
    render_report(&report(), format, color)
}

/// `text` without its SGR colour sequences.
fn without_colour(text: &str) -> String {
    let mut plain = String::new();
    let mut rest = text;
    while let Some(at) = rest.find('\x1b') {
        plain.push_str(&rest[..at]);
        let end = rest[at..].find('m').expect("an SGR sequence ends in m");
        rest = &rest[at + end + 1..];
    }
    plain.push_str(rest);
    plain
}

#[test]
fn the_fixture_has_every_status_and_a_library_from_outside() {
    let report = report();
    let [pass, warn, skip, fail] = report.counts();
    assert!(pass > 0 && warn > 0 && skip > 0 && fail > 0);
    assert!(report
        .combinations
        .iter()
        .flat_map(|c| &c.libraries)
        .any(|l| !l.inside));
    for combination in &report.combinations {
        assert_eq!(
            combination.checks.len(),
            node_specs().count(),
            "{}",
            combination.name
        );
    }
}

#[test]
fn terminal() {
    let text = render(Format::Terminal, false);
    assert!(!text.contains('\x1b'));
    assert!(text.starts_with(
        "stackbench check: 3 combinations, 88 passed, 6 warnings, 27 skipped, 5 failed\n"
    ));
    for line in text.lines() {
        assert!(line.chars().count() <= 100, "too wide: {line}");
    }
    insta::assert_snapshot!("terminal", text);
}

#[test]
fn terminal_color() {
    let text = render(Format::Terminal, true);
    assert!(text.contains("\x1b["));
    // The colour codes are the only difference from the plain report.
    assert_eq!(without_colour(&text), render(Format::Terminal, false));
    // Escapes shown as text, so the snapshot file stays readable.
    insta::assert_snapshot!("terminal_color", text.replace('\x1b', "\\e"));
}

#[test]
fn terminal_numbers_columns_whose_names_do_not_fit() {
    let mut report = report();
    for (n, combination) in report.combinations.iter_mut().enumerate() {
        combination.name = format!("pip:venv-cudnn8-cu12-cublas11-number-{n}");
    }
    report.target = Some("sm_75".into());
    let text = render_report(&report, Format::Terminal, false);
    assert!(
        text.contains("kernel driver 535.261.03; --target sm_75\n"),
        "{text}"
    );
    assert!(
        text.contains("\n  [1] pip:venv-cudnn8-cu12-cublas11-number-0\n"),
        "{text}"
    );
    assert!(
        text.contains("\ncheck                       [1]   [2]   [3]\n"),
        "{text}"
    );
    assert!(
        text.contains("\n  driver.version            PASS  FAIL  WARN\n"),
        "{text}"
    );
}

#[test]
fn csv() {
    let text = render(Format::Csv, false);
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let rows = reader.records().count();
    assert_eq!(rows, 3 * node_specs().count());
    insta::assert_snapshot!("csv", text);
}

#[test]
fn markdown() {
    insta::assert_snapshot!("markdown", render(Format::Markdown, false));
}

#[test]
fn json() {
    insta::assert_snapshot!("json", render(Format::Json, false));
}

#[test]
fn json_round_trips() {
    let text = render(Format::Json, false);
    let back: CheckReport = serde_json::from_str(&text).expect("the JSON reads back");
    assert_eq!(back, report());
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(value["schema"], CHECK_SCHEMA);
}

#[test]
fn junit() {
    insta::assert_snapshot!("junit", render(Format::Junit, false));
}

#[test]
fn color_changes_only_the_terminal_report() {
    for format in [Format::Json, Format::Csv, Format::Markdown, Format::Junit] {
        assert_eq!(render(format, true), render(format, false), "{format:?}");
    }
}

/// `xmllint` with `args`; a failure that says how to install it when it is missing.
fn xmllint(args: &[&str]) -> Output {
    match Command::new("xmllint").args(args).output() {
        Ok(output) => output,
        Err(e) if e.kind() == ErrorKind::NotFound => panic!(
            "xmllint is not installed, and the JUnit report must be checked with it: install \
             Debian's libxml2-utils (apt-get install libxml2-utils; ci/test does)"
        ),
        Err(e) => panic!("cannot run xmllint: {e}"),
    }
}

/// The JUnit report of `report`, written to a temporary file.
fn junit_file(report: &CheckReport) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("check.xml");
    std::fs::write(&path, render_report(report, Format::Junit, false)).expect("write the XML");
    (dir, path)
}

/// What XPath `expression` gives for `file`, as text.
fn xpath(file: &Path, expression: &str) -> String {
    let output = xmllint(&["--xpath", expression, file.to_str().expect("UTF-8 path")]);
    assert!(
        output.status.success(),
        "xmllint --xpath {expression}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout)
        .expect("UTF-8")
        .trim()
        .to_string()
}

#[test]
fn junit_is_valid_against_the_jenkins_junit_schema() {
    let schema = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/junit-10.xsd");
    // With the library's real names too: what a run on this host would write.
    let mut odd = report();
    odd.combinations[0].name = "config:a&b <\"weird\">".into();
    odd.combinations[0].checks[0].reason = "tab\there, line\nthere, bell \u{7}".into();
    odd.host.hostname = String::new();
    for report in [report(), odd] {
        let (_dir, file) = junit_file(&report);
        let output = xmllint(&[
            "--noout",
            "--schema",
            schema.to_str().expect("UTF-8 path"),
            file.to_str().expect("UTF-8 path"),
        ]);
        assert!(
            output.status.success(),
            "the JUnit report does not validate against {}:\n{}\n{}",
            schema.display(),
            String::from_utf8_lossy(&output.stderr),
            std::fs::read_to_string(&file).unwrap_or_default()
        );
    }
}

#[test]
fn junit_reads_back_with_the_report_s_counts_and_reasons() {
    let report = report();
    let (_dir, file) = junit_file(&report);
    let count = |expression: String| xpath(&file, &format!("count({expression})"));
    assert_eq!(count("/testsuites/testsuite".into()), "3");
    let [_, _, _, failures] = report.counts();
    assert_eq!(
        xpath(&file, "string(/testsuites/@failures)"),
        failures.to_string()
    );
    for combination in &report.combinations {
        let suite = format!("/testsuites/testsuite[@name='{}']", combination.name);
        let of = |status: Status| {
            combination
                .checks
                .iter()
                .filter(|c| c.status == status)
                .count()
                .to_string()
        };
        assert_eq!(
            count(format!("{suite}/testcase")),
            node_specs().count().to_string()
        );
        assert_eq!(count(format!("{suite}/testcase/failure")), of(Status::Fail));
        assert_eq!(count(format!("{suite}/testcase/skipped")), of(Status::Skip));
        assert_eq!(
            count(format!("{suite}/testcase/system-out")),
            of(Status::Warn)
        );
        assert_eq!(
            xpath(&file, &format!("string({suite}/@failures)")),
            of(Status::Fail)
        );
        assert_eq!(
            xpath(&file, &format!("string({suite}/@skipped)")),
            of(Status::Skip)
        );
        assert_eq!(
            count(format!(
                "{suite}/properties/property[starts-with(@name, 'library.')]"
            )),
            (3 * combination.libraries.len()).to_string()
        );
    }
    // The reason comes back exactly, quotes and `>` included.
    let driver_version = "/testsuites/testsuite[@name='conda:cu13']\
                          /testcase[@name='driver.version']/failure";
    assert_eq!(
        xpath(&file, &format!("string({driver_version}/@message)")),
        DRIVER_TOO_OLD
    );
    assert_eq!(
        xpath(&file, &format!("string({driver_version})")),
        DRIVER_TOO_OLD
    );
    assert_eq!(
        xpath(
            &file,
            "string(/testsuites/testsuite[@name='pip:venv-cu11']/@timestamp)"
        ),
        "2026-03-02T14:05:09"
    );
}

/// The toolkit `ci/sim` lays out (the real NVRTC 12.9 and runtime beside the simulated
/// driver) as a run on the simulated GPU reports it: the driver says it is simulated, NVRTC
/// compiles PTX for the device newer than it, the launches run from that PTX, and the libraries
/// the simulator does not provide yet are skipped.
fn simulated_toolkit() -> CombinationReport {
    let lib = "/tmp/stackbench-sim/toolkit/lib64";
    let driver = "/tmp/stackbench-sim/driver/libcuda.so.1";
    let ptx = |file: &str, kib: &str| {
        format!(
            "compiled {file} to PTX for compute_121: the device (sm_150) is newer than this \
             NVRTC; the driver JIT-compiles it ({kib} KiB of PTX)"
        )
    };
    let (vector_add, matmul) = (ptx("vector_add.cu", "1.4"), ptx("matmul_tiled.cu", "9.9"));
    let absent = |name: &str, file: &str| format!("no {name} in this combination ({file})");
    let (no_cublas, no_cublas_lt, no_cudnn, no_cupti) = (
        absent("cuBLAS", "libcublas.so.*"),
        absent("cuBLASLt", "libcublasLt.so.*"),
        absent("cuDNN", "libcudnn.so.*"),
        absent("CUPTI", "libcupti.so.*"),
    );
    let after = |need: &str, why: &str| format!("needs {need}, which was skipped: {why}");
    let skipped: Vec<(&str, String)> = vec![
        ("cublas.load", no_cublas.clone()),
        ("cublas.handle", after("cublas.load", &no_cublas)),
        ("cublas.sgemm", after("cublas.handle", &no_cublas)),
        ("cublas.gemm_fp16", after("cublas.handle", &no_cublas)),
        ("cublas.gemm_bf16", after("cublas.handle", &no_cublas)),
        ("cublasLt.load", no_cublas_lt.clone()),
        ("cublasLt.handle", after("cublasLt.load", &no_cublas_lt)),
        ("cublasLt.matmul", after("cublasLt.handle", &no_cublas_lt)),
        (
            "cublasLt.matmul_fp8",
            after("cublasLt.handle", &no_cublas_lt),
        ),
        ("cudnn.load", no_cudnn.clone()),
        ("cudnn.versions", after("cudnn.load", &no_cudnn)),
        ("cudnn.handle", after("cudnn.load", &no_cudnn)),
        ("cudnn.conv_forward", after("cudnn.handle", &no_cudnn)),
        ("cupti.load", no_cupti.clone()),
        ("cupti.activity", after("cupti.load", &no_cupti)),
        ("cufft.load", NO_CUFFT.into()),
        ("cufft.c2c", after("cufft.load", NO_CUFFT)),
        ("curand.load", NO_CURAND.into()),
        ("curand.generate", after("curand.load", NO_CURAND)),
    ];
    let driver_library = format!(
        "libcuda.so.1 of unknown version (supports CUDA 13.0) from {driver}: stackbench's \
         SIMULATED driver (tests/simgpu), not a GPU's"
    );
    let mut ends: Vec<(&str, Status, &str)> = vec![
        ("driver.library", Status::Pass, &driver_library),
        (
            "driver.version",
            Status::Pass,
            "driver supports CUDA 13.0, runtime is 12.9",
        ),
        (
            "driver.devices",
            Status::Pass,
            "1 device(s); using 0: stackbench simulated GPU (H100-like), \
             GPU-51a7ed00-0000-4000-8000-000000000000, compute capability 15.0, 80.0 GiB",
        ),
        ("nvrtc.compile_vector_add", Status::Pass, &vector_add),
        ("nvrtc.compile_matmul", Status::Pass, &matmul),
        (
            "nvrtc.launch_vector_add",
            Status::Pass,
            "vector add of 1 Mi floats from PTX for compute_121, JIT-compiled by the driver, \
             matches the CPU: max relative error 0 (tolerance 1e-6)",
        ),
        (
            "nvrtc.launch_matmul",
            Status::Pass,
            "200x152 by 152x136 tiled matmul from PTX for compute_121, JIT-compiled by the \
             driver, matches the CPU: max relative error 1.2e-7 (tolerance 1e-5)",
        ),
        (
            "coverage.kernels",
            Status::Warn,
            "no SASS for sm_150 in vector_add.cu (NVRTC's PTX compute_121), matmul_tiled.cu \
             (NVRTC's PTX compute_121): the driver JIT-compiles their PTX at first use (slow, \
             and only if the driver understands that PTX version)",
        ),
    ];
    ends.extend(
        skipped
            .iter()
            .map(|(id, why)| (*id, Status::Skip, why.as_str())),
    );
    let mut checks = checks(&ends);
    detail(&mut checks, "driver.library", "simulated", json!(true));
    CombinationReport {
        name: "toolkit:sim".into(),
        origin: Origin::Installation,
        root: Some("/tmp/stackbench-sim/toolkit".into()),
        layout: Some(Layout::Toolkit),
        cuda_version: Some("12.9".into()),
        search_path: lib.into(),
        driver: Some(DriverUse {
            path: driver.into(),
            real_path: driver.into(),
            version: None,
            kernel_module: None,
        }),
        libraries: vec![
            library(
                "cudart",
                "libcudart.so.12",
                "12.9.79",
                lib,
                "libcudart.so.12.9.79",
            ),
            library(
                "nvrtc",
                "libnvrtc.so.12",
                "12.9",
                lib,
                "libnvrtc.so.12.9.86",
            ),
        ],
        checks,
        duration_ms: 2125.0,
        simulated: true,
        loaded_as: None,
        environment: Vec::new(),
        left_out: Vec::new(),
    }
}

/// A check run on the simulated GPU (`ci/sim`'s driver and toolkit).
fn simulated_report() -> CheckReport {
    CheckReport {
        gpu: GpuInfo {
            source: "nvml".into(),
            devices: vec![Gpu {
                index: 0,
                name: "stackbench simulated GPU (H100-like)".into(),
                compute_capability: "15.0".into(),
                uuid: Some("GPU-51a7ed00-0000-4000-8000-000000000000".into()),
                pci_bus_id: None,
                memory_bytes: Some(80 << 30),
                memory_clock_mhz: None,
            }],
            driver_version: Some("580.95.05".into()),
            note: None,
        },
        driver_dir: Some("/tmp/stackbench-sim/driver".into()),
        simulated: true,
        load_untrusted: false,
        combinations: vec![simulated_toolkit()],
        node: None,
        ..report()
    }
}

#[test]
fn simulated_terminal() {
    let text = render_report(&simulated_report(), Format::Terminal, false);
    let first: Vec<&str> = text.lines().take(2).collect();
    assert!(first[1].starts_with("SIMULATED GPU: "), "{first:?}");
    for line in text.lines() {
        assert!(line.chars().count() <= 100, "too wide: {line}");
    }
    insta::assert_snapshot!("simulated_terminal", text);
}

#[test]
fn simulated_markdown() {
    let text = render_report(&simulated_report(), Format::Markdown, false);
    assert!(
        text.lines()
            .nth(2)
            .unwrap()
            .starts_with("> **SIMULATED GPU**: "),
        "{text}"
    );
    insta::assert_snapshot!("simulated_markdown", text);
}

#[test]
fn simulated_runs_say_so_in_json_and_junit_and_real_ones_keep_their_shape() {
    let report = simulated_report();
    let json: serde_json::Value =
        serde_json::from_str(&render_report(&report, Format::Json, false)).unwrap();
    assert_eq!(json["simulated"], true);
    assert_eq!(json["combinations"][0]["simulated"], true);
    let real: serde_json::Value = serde_json::from_str(&render(Format::Json, false)).unwrap();
    assert!(real.get("simulated").is_none(), "absent on a real run");
    assert!(real["combinations"][0].get("simulated").is_none());
    let (_dir, file) = junit_file(&report);
    assert_eq!(
        xpath(&file, "string(/testsuites/@name)"),
        "stackbench check (SIMULATED GPU)"
    );
    assert_eq!(
        xpath(
            &file,
            "string(/testsuites/testsuite/properties/property[@name='simulated']/@value)"
        ),
        "true"
    );
    let schema = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/junit-10.xsd");
    let output = xmllint(&[
        "--noout",
        "--schema",
        schema.to_str().expect("UTF-8 path"),
        file.to_str().expect("UTF-8 path"),
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
