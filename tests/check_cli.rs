//! `stackbench check` as a user runs it, on the real NVIDIA fixture libraries with Debian's 535
//! driver library as the driver: without a GPU, `cuInit` answers "no device", the CUDA 13
//! combination's runtime is too new for the driver, NVRTC compiles for `--target sm_90` in every
//! combination, and every GPU check says exactly why it did not run. Also: selection, bad
//! arguments, a 32-bit or stub driver, and libraries built here that crash or hang the worker.
//!
//! Every run gets an empty environment (PATH, HOME in a temporary directory), so nothing depends
//! on this host's own CUDA set-up.

mod common;

use common::*;
use rstest::rstest;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;

/// The fixture combinations, as `check` names them.
const CU11: &str = "pip:venv-cu11";
const CU12: &str = "pip:venv-cu12";
const TOOLKIT: &str = "toolkit:cuda-12.9";
const CU13: &str = "conda:cu13";
/// CUDA 13's NCCL beside CUDA 12's runtime.
const NCCL_CU13: &str = "pip:venv-nccl-cu13-cu12";
const ALL: [&str; 5] = [CU11, CU12, TOOLKIT, CU13, NCCL_CU13];

/// `stackbench check` in an isolated environment with `args`.
fn check_output(args: &[&str]) -> Output {
    let home = tempfile::tempdir().expect("temporary HOME");
    isolated_stackbench(home.path())
        .arg("check")
        .args(args)
        // A run that never ends is killed, and its empty report fails the test, rather than
        // the test waiting forever.
        .timeout(std::time::Duration::from_secs(600))
        .output()
        .expect("run stackbench check")
}

/// A check report's JSON from standard output: the schema tag, and that it reads back as
/// stackbench's own `CheckReport`.
fn check_report(output: &Output) -> Value {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "check panicked: {stderr}");
    let value: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "check's stdout is not JSON ({e}); stderr: {stderr}; stdout: {}",
            String::from_utf8_lossy(&output.stdout)
        )
    });
    assert_eq!(value["schema"], "stackbench.check/v1");
    if let Err(e) = serde_json::from_value::<stackbench::schema::check::CheckReport>(value.clone())
    {
        panic!("check's JSON does not read back as a CheckReport: {e}");
    }
    value
}

fn driver_dir() -> PathBuf {
    fixture(DRIVER_AMD64)
}

/// `check` of the whole fixture tree against the 535 driver for `--target sm_90`, in `format`.
fn fixture_check(format: &str) -> Output {
    let (root, driver) = (toolkits(), driver_dir());
    check_output(&[
        "--no-system",
        "--root",
        root.to_str().unwrap(),
        "--driver-dir",
        driver.to_str().unwrap(),
        "--target",
        "sm_90",
        "--format",
        format,
    ])
}

/// [`fixture_check`] as JSON, run once for every test.
fn fixture_run() -> &'static (i32, Value) {
    static RUN: OnceLock<(i32, Value)> = OnceLock::new();
    RUN.get_or_init(|| {
        let output = fixture_check("json");
        (
            output.status.code().expect("exit status"),
            check_report(&output),
        )
    })
}

fn combination<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["combinations"]
        .as_array()
        .expect("combinations")
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no combination {name} in {}", names(report).join(", ")))
}

fn names(report: &Value) -> Vec<String> {
    report["combinations"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| c["name"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// The result of check `id` in a combination.
fn result<'a>(combination: &'a Value, id: &str) -> &'a Value {
    combination["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no check {id} in {}", combination["name"]))
}

#[test]
fn one_combination_per_installation_with_a_runtime_and_failures_exit_1() {
    let (code, report) = fixture_run();
    let mut found = names(report);
    found.sort();
    let mut want: Vec<String> = ALL.iter().map(|s| s.to_string()).collect();
    want.sort();
    assert_eq!(
        found, want,
        "the broken venv has no runtime and the driver is not a toolkit"
    );
    assert_eq!(*code, 1, "cuInit fails without a GPU");
    assert_eq!(report["target"], "sm_90");
    let driver = report["driver_dir"].as_str().unwrap();
    assert!(driver.ends_with("nvidia/current"), "{driver}");
    for name in ALL {
        let c = combination(report, name);
        for check in c["checks"].as_array().unwrap() {
            assert!(
                !check["reason"].as_str().unwrap_or_default().is_empty(),
                "{name} {}: every result has a reason",
                check["id"]
            );
        }
        assert_eq!(
            c["checks"].as_array().unwrap().len(),
            stackbench::check::spec::SPECS.len() - stackbench::check::ACROSS_NODES_ONLY.len(),
            "{name}: every check has a result"
        );
    }
}

/// (combination, check, status, a piece of the reason).
#[rstest]
#[case::driver_loads(
    CU12,
    "driver.library",
    "pass",
    "libcuda.so.1 535.261.03 (supports CUDA 12.2)"
)]
#[case::no_device(CU12, "driver.init", "fail", "cuInit: CUDA_ERROR_NO_DEVICE (100)")]
#[case::no_device_cu11(CU11, "driver.init", "fail", "CUDA_ERROR_NO_DEVICE")]
#[case::devices_need_init(
    CU12,
    "driver.devices",
    "skip",
    "needs driver.init, which failed: cuInit: CUDA_ERROR_NO_DEVICE"
)]
#[case::nvml_without_kernel_module(CU12, "driver.nvml", "fail", "")]
#[case::cu13_driver_too_old(
    CU13,
    "driver.version",
    "fail",
    "driver supports CUDA 12.2, runtime is 13.0"
)]
#[case::cu12_minor_version(CU12, "driver.version", "warn", "minor version compatibility")]
#[case::toolkit_minor_version(TOOLKIT, "driver.version", "warn", "runtime is 12.9")]
#[case::cu11_supported(
    CU11,
    "driver.version",
    "pass",
    "driver supports CUDA 12.2, runtime is 11.8"
)]
#[case::cu11_runtime_version_from_package(
    CU11,
    "cudart.load",
    "pass",
    "11.8.89 (the package's version; cudaRuntimeGetVersion: cudaErrorNoDevice (100))"
)]
#[case::cu13_runtime(CU13, "cudart.load", "pass", "libcudart.so.13 13.0")]
#[case::memcpy_needs_a_device(
    CU11,
    "cudart.memcpy",
    "skip",
    "needs driver.devices; driver.init failed"
)]
#[case::nvrtc11(CU11, "nvrtc.compile_vector_add", "pass", "for sm_90")]
#[case::nvrtc12(CU12, "nvrtc.compile_matmul", "pass", "for sm_90")]
#[case::nvrtc_toolkit(TOOLKIT, "nvrtc.compile_vector_add", "pass", "for sm_90")]
#[case::nvrtc13(CU13, "nvrtc.compile_matmul", "pass", "for sm_90")]
#[case::launch_needs_a_device(CU13, "nvrtc.launch_vector_add", "skip", "needs driver.devices")]
#[case::cublas11(CU11, "cublas.load", "pass", "libcublas.so.11 11.11.3")]
#[case::cublas12(TOOLKIT, "cublasLt.load", "pass", "libcublasLt.so.12 12.9.1")]
#[case::no_cublas_in_conda(CU13, "cublas.load", "skip", "no cuBLAS in this combination")]
#[case::sgemm_chain(
    CU13,
    "cublas.sgemm",
    "skip",
    "needs cublas.handle; cublas.load was skipped: no cuBLAS"
)]
#[case::cudnn8(CU11, "cudnn.load", "pass", "libcudnn.so.8 8.9.6")]
#[case::cudnn9(CU12, "cudnn.load", "pass", "libcudnn.so.9 9.28.0")]
#[case::cudnn8_matches_cuda11(CU11, "cudnn.versions", "pass", "")]
#[case::cudnn9_matches_cuda12(CU12, "cudnn.versions", "pass", "")]
#[case::cudnn9_matches_cuda13(CU13, "cudnn.versions", "pass", "")]
#[case::conv_needs_a_handle(CU12, "cudnn.conv_forward", "skip", "needs cudnn.handle")]
#[case::cupti11(CU11, "cupti.load", "pass", "libcupti.so.11.8")]
#[case::cupti_needs_a_launch(CU12, "cupti.activity", "skip", "needs nvrtc.launch_vector_add")]
#[case::no_cufft(CU12, "cufft.load", "skip", "no cuFFT in this combination")]
#[case::coverage_cu11(CU11, "coverage.kernels", "pass", "have SASS for sm_90")]
#[case::coverage_cu12(CU12, "coverage.kernels", "pass", "have SASS for sm_90")]
#[case::isolated(
    TOOLKIT,
    "combination.isolated",
    "pass",
    "came from the combination's own directories"
)]
fn fixture_results(
    #[case] name: &str,
    #[case] id: &str,
    #[case] status: &str,
    #[case] reason: &str,
) {
    let (_, report) = fixture_run();
    let got = result(combination(report, name), id);
    assert_eq!(got["status"], status, "{name} {id}: {got}");
    let text = got["reason"].as_str().unwrap();
    assert!(
        text.contains(reason),
        "{name} {id}: {text:?} lacks {reason:?}"
    );
}

#[test]
fn every_library_is_recorded_with_the_file_it_was_mapped_from() {
    let (_, report) = fixture_run();
    let cu11 = combination(report, CU11);
    let libraries = cu11["libraries"].as_array().unwrap();
    let cublas = libraries
        .iter()
        .find(|l| l["component"] == "cublas")
        .expect("cuBLAS in venv-cu11");
    let mapped = cublas["mapped"].as_str().expect("cuBLAS was mapped");
    assert!(
        mapped
            .ends_with("venv-cu11/lib/python3.11/site-packages/nvidia/cublas/lib/libcublas.so.11"),
        "{mapped}"
    );
    assert_eq!(cublas["inside"], true);
    assert_eq!(cublas["version"], "11.11.3");
    // A dependency nobody asked for by name: cuBLAS's own cuBLASLt, mapped with it.
    assert!(
        libraries.iter().any(|l| l["component"] == "cublasLt"),
        "{libraries:?}"
    );
    assert_eq!(cu11["cuda_version"], "11.8");
    assert_eq!(combination(report, CU13)["cuda_version"], "13.0");
    let driver = &cu11["driver"];
    assert_eq!(driver["version"], "535.261.03");
}

#[test]
fn junit_has_a_suite_per_combination_and_a_case_per_check() {
    let output = fixture_check("junit");
    assert_eq!(output.status.code(), Some(1));
    let xml = String::from_utf8(output.stdout).expect("UTF-8");
    assert!(xml.starts_with("<?xml"), "{xml}");
    assert_eq!(xml.matches("<testsuite ").count(), ALL.len(), "{xml}");
    assert_eq!(
        xml.matches("<testcase ").count(),
        ALL.len()
            * (stackbench::check::spec::SPECS.len() - stackbench::check::ACROSS_NODES_ONLY.len())
    );
    for name in ALL {
        assert!(xml.contains(&format!("name=\"{name}\"")), "{name}");
    }
    assert!(xml.contains("CUDA_ERROR_NO_DEVICE"));
}

#[test]
fn combination_selects_and_an_unknown_name_is_a_usage_error() {
    let (root, driver) = (toolkits(), driver_dir());
    let base = [
        "--no-system",
        "--root",
        root.to_str().unwrap(),
        "--driver-dir",
        driver.to_str().unwrap(),
        "--format",
        "json",
    ];
    let one = check_output(&[&base[..], &["--combination", CU11]].concat());
    let report = check_report(&one);
    assert_eq!(names(&report), [CU11]);
    // Without --target or a device, nothing can be compiled: said, not silently passed.
    let compile = result(combination(&report, CU11), "nvrtc.compile_vector_add");
    assert_eq!(compile["status"], "skip");
    assert!(compile["reason"].as_str().unwrap().contains("--target"));

    let unknown = check_output(&[&base[..], &["--combination", "pip:nope"]].concat());
    assert_eq!(unknown.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&unknown.stderr);
    assert!(
        stderr.contains("--combination pip:nope: no such combination") && stderr.contains(CU12),
        "{stderr}"
    );
}

#[test]
fn bad_arguments_exit_2_with_what_to_do() {
    let missing = check_output(&["--driver-dir", "/nonexistent/driver"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no libcuda.so.1 there"));
    let empty = tempfile::tempdir().unwrap();
    let nothing = check_output(&["--no-system", "--root", empty.path().to_str().unwrap()]);
    assert_eq!(nothing.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&nothing.stderr).starts_with("error: no CUDA runtime found"),
        "{}",
        String::from_utf8_lossy(&nothing.stderr)
    );
    let target = check_output(&["--target", "sm_ninety"]);
    assert_eq!(target.status.code(), Some(2));
}

/// `check --combination pip:venv-cu12` against the driver directory `dir`, as JSON.
fn venv_cu12_with_driver(dir: &Path) -> Value {
    let root = fixture("venv-cu12");
    let output = check_output(&[
        "--no-system",
        "--root",
        root.to_str().unwrap(),
        "--driver-dir",
        dir.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert_eq!(output.status.code(), Some(1));
    check_report(&output)
}

/// `check` of `root` against the 535 driver for `--target target`, as JSON.
fn fixture_for_target(root: &str, target: &str) -> Value {
    let (root, driver) = (fixture(root), driver_dir());
    let output = check_output(&[
        "--no-system",
        "--root",
        root.to_str().unwrap(),
        "--driver-dir",
        driver.to_str().unwrap(),
        "--target",
        target,
        "--format",
        "json",
    ]);
    check_report(&output)
}

/// A device newer than every architecture the real NVRTCs know (`sm_150`, the simulated GPU's):
/// NVRTC compiles PTX for its newest architecture, which the driver JIT-compiles at load, as it
/// does for a real GPU newer than its toolkit; `coverage.kernels` names that path.
#[rstest]
#[case::nvrtc_11_8("venv-cu11", CU11, "compute_90")]
#[case::nvrtc_12_9("venv-cu12", CU12, "compute_121")]
fn a_target_newer_than_nvrtc_compiles_ptx_for_the_driver_to_jit(
    #[case] root: &str,
    #[case] name: &str,
    #[case] ptx: &str,
) {
    let report = fixture_for_target(root, "sm_150");
    let c = combination(&report, name);
    for (id, source) in [
        ("nvrtc.compile_vector_add", "vector_add.cu"),
        ("nvrtc.compile_matmul", "matmul_tiled.cu"),
    ] {
        let compiled = result(c, id);
        assert_eq!(compiled["status"], "pass", "{compiled}");
        assert_eq!(
            compiled["reason"]
                .as_str()
                .unwrap()
                .rsplit_once(" (")
                .unwrap()
                .0,
            format!(
                "compiled {source} to PTX for {ptx}: the target (sm_150) is newer than this \
                 NVRTC; the driver JIT-compiles it"
            ),
            "{compiled}"
        );
        let details = &compiled["details"];
        assert_eq!(details["image"], "ptx");
        assert_eq!(details["arch"], ptx);
        assert_eq!(details["device_arch"], "sm_150");
        assert!(details["ptx_bytes"].as_u64().unwrap() > 100, "{details}");
    }
    let coverage = result(c, "coverage.kernels");
    assert_eq!(coverage["status"], "warn", "{coverage}");
    assert!(
        coverage["reason"].as_str().unwrap().contains(&format!(
            "vector_add.cu (NVRTC's PTX {ptx}), matmul_tiled.cu (NVRTC's PTX {ptx})"
        )),
        "{coverage}"
    );
}

/// An architecture older than every one NVRTC knows still fails, saying which it knows; one
/// it does not know between two it does compiles SASS of the older minor that runs on it.
#[test]
fn a_target_older_than_nvrtc_fails_and_an_unknown_minor_gets_sass_that_runs() {
    let old = fixture_for_target("venv-cu12", "sm_35");
    let compiled = result(combination(&old, CU12), "nvrtc.compile_vector_add");
    assert_eq!(compiled["status"], "fail");
    assert!(
        compiled["reason"]
            .as_str()
            .unwrap()
            .starts_with("this NVRTC cannot generate code for sm_35 (it knows sm_50 to sm_121"),
        "{compiled}"
    );
    let minor = fixture_for_target("venv-cu12", "sm_88");
    let compiled = result(combination(&minor, CU12), "nvrtc.compile_vector_add");
    assert_eq!(compiled["status"], "pass", "{compiled}");
    assert_eq!(compiled["details"]["image"], "cubin");
    assert_eq!(compiled["details"]["arch"], "sm_87");
    assert!(
        compiled["reason"]
            .as_str()
            .unwrap()
            .ends_with("this NVRTC cannot build SASS for sm_88; SASS for sm_87 runs on compute capability 8.8 (same major, newer minor)"),
        "{compiled}"
    );
}

#[test]
fn a_32_bit_driver_is_the_wrong_elf_class() {
    let report = venv_cu12_with_driver(&fixture(DRIVER_I386));
    let library = result(combination(&report, CU12), "driver.library");
    assert_eq!(library["status"], "fail");
    let reason = library["reason"].as_str().unwrap();
    assert!(
        reason.contains("wrong ELF class") && reason.contains("ELF32"),
        "{reason}"
    );
    let init = result(combination(&report, CU12), "driver.init");
    assert_eq!(init["status"], "skip");
    assert!(init["reason"]
        .as_str()
        .unwrap()
        .contains("needs driver.library"));
}

#[test]
fn a_stub_driver_is_named_as_one() {
    let dir = tempfile::tempdir().unwrap();
    let stubs = dir.path().join("stubs");
    std::fs::create_dir(&stubs).unwrap();
    std::os::unix::fs::symlink(
        driver_dir().join("libcuda.so.1"),
        stubs.join("libcuda.so.1"),
    )
    .unwrap();
    let report = venv_cu12_with_driver(&stubs);
    let library = result(combination(&report, CU12), "driver.library");
    assert_eq!(library["status"], "fail");
    assert!(
        library["reason"]
            .as_str()
            .unwrap()
            .contains("link-time stub"),
        "{library}"
    );
}

#[test]
fn without_a_driver_every_gpu_check_says_why() {
    let root = fixture("venv-cu12");
    let output = check_output(&[
        "--no-system",
        "--root",
        root.to_str().unwrap(),
        "--format",
        "json",
    ]);
    let report = check_report(&output);
    let library = result(combination(&report, CU12), "driver.library");
    // The host's own driver is what a program would get without --driver-dir.
    if host_has_a_driver() {
        assert_eq!(library["status"], "pass", "{library}");
    } else {
        assert_eq!(library["status"], "fail");
        assert!(
            library["reason"]
                .as_str()
                .unwrap()
                .starts_with("no libcuda.so.1: NVIDIA driver not installed"),
            "{library}"
        );
        let memcpy = result(combination(&report, CU12), "cudart.memcpy");
        assert_eq!(memcpy["status"], "skip");
        assert!(memcpy["reason"]
            .as_str()
            .unwrap()
            .contains("driver.library failed: no libcuda.so.1"));
    }
}

/// A `libcuda.so.1` built here that exports `stackbenchSimulated` as the simulated driver does
/// (and `cuDriverGetVersion`, and a `cuInit` that finds no device): `driver.library` says it is
/// simulated, and the whole report is marked so, in JSON and in the terminal's first lines. A
/// real driver (the 535 fixture) never is.
#[test]
fn a_driver_that_says_it_is_simulated_marks_the_run() {
    let dir = tempfile::tempdir().unwrap();
    build_library(
        dir.path(),
        "libcuda.so.1",
        "libcuda.so.1",
        "int stackbenchSimulated(void) { return 1; }\n\
         int cuDriverGetVersion(int *version) { *version = 13000; return 0; }\n\
         int cuInit(unsigned int flags) { return 100; }\n",
    );
    let root = fixture("venv-cu12");
    let run = |format: &str| {
        check_output(&[
            "--no-system",
            "--root",
            root.to_str().unwrap(),
            "--driver-dir",
            dir.path().to_str().unwrap(),
            "--target",
            "sm_90",
            "--format",
            format,
        ])
    };
    let report = check_report(&run("json"));
    assert_eq!(report["simulated"], true);
    let c = combination(&report, CU12);
    assert_eq!(c["simulated"], true);
    let library = result(c, "driver.library");
    assert_eq!(library["status"], "pass", "{library}");
    assert_eq!(library["details"]["simulated"], true);
    assert!(
        library["reason"]
            .as_str()
            .unwrap()
            .ends_with("stackbench's SIMULATED driver (tests/simgpu), not a GPU's"),
        "{library}"
    );
    let terminal = String::from_utf8(run("terminal").stdout).unwrap();
    assert!(
        terminal
            .lines()
            .nth(1)
            .unwrap()
            .starts_with("SIMULATED GPU: "),
        "{terminal}"
    );
    let (_, real) = fixture_run();
    assert!(real.get("simulated").is_none(), "the 535 driver is real");
    assert!(result(combination(real, CU12), "driver.library")["details"]
        .get("simulated")
        .is_none());
}

/// A driver built here that supports CUDA 12.2 and shows one device of compute capability 15.0,
/// whose JIT refuses every PTX with `CUDA_ERROR_UNSUPPORTED_PTX_VERSION` (222), as a 535 driver
/// refuses PTX from NVRTC 12.9, its JIT error log saying why as ptxas does: NVRTC compiles PTX
/// for the device newer than it, and the launch says the PTX is newer than the driver's JIT,
/// what to do, and what the JIT wrote.
#[test]
fn ptx_newer_than_the_driver_s_jit_is_explained() {
    let dir = tempfile::tempdir().unwrap();
    build_library(
        dir.path(),
        "libcuda.so.1",
        "libcuda.so.1",
        r#"#include <stddef.h>
#include <string.h>
int cuDriverGetVersion(int *v) { *v = 12020; return 0; }
int cuInit(unsigned int flags) { return 0; }
int cuDeviceGetCount(int *count) { *count = 1; return 0; }
int cuDeviceGet(int *device, int ordinal) { *device = 0; return 0; }
int cuDeviceGetName(char *name, int len, int device) {
    strncpy(name, "a GPU newer than its toolkit", len); return 0; }
int cuDeviceGetUuid(char *uuid, int device) { memset(uuid, 7, 16); return 0; }
int cuDeviceGetUuid_v2(char *uuid, int device) { memset(uuid, 7, 16); return 0; }
int cuDeviceGetAttribute(int *value, int attribute, int device) {
    *value = attribute == 75 ? 15 : attribute == 76 ? 0 : 1 << 20; return 0; }
int cuDeviceTotalMem_v2(size_t *bytes, int device) { *bytes = (size_t)1 << 34; return 0; }
static int context;
int cuDevicePrimaryCtxRetain(void **ctx, int device) { *ctx = &context; return 0; }
int cuCtxSetCurrent(void *ctx) { return 0; }
int cuModuleLoadData(void **module, const void *image) { return 222; }
/* CU_JIT_ERROR_LOG_BUFFER (5) and its size (6): the log, and the bytes written, given back. */
int cuModuleLoadDataEx(void **module, const void *image, unsigned n, int *options, void **values) {
    const char *log = "ptxas application ptx input, line 5; fatal   : Unsupported .version 9.0; current version is '8.2'";
    char *buffer = NULL; size_t size = 0; unsigned i, at = 0;
    for (i = 0; i < n; i++) {
        if (options[i] == 5) buffer = values[i];
        if (options[i] == 6) { size = (size_t)values[i]; at = i; }
    }
    if (buffer && size) {
        strncpy(buffer, log, size - 1); buffer[size - 1] = 0;
        values[at] = (void *)strlen(buffer);
    }
    return 222;
}
/* NVRTC asks the driver it finds loaded for its export tables: CUDA_ERROR_NOT_FOUND. */
int cuGetExportTable(const void **table, const void *id) { return 500; }
int cuGetErrorName(int error, const char **name) {
    *name = error == 222 ? "CUDA_ERROR_UNSUPPORTED_PTX_VERSION" : "CUDA_ERROR_UNKNOWN"; return 0; }
int cuGetErrorString(int error, const char **text) {
    *text = "the provided PTX was compiled with an unsupported toolchain."; return 0; }
"#,
    );
    let root = fixture("venv-cu12");
    let output = check_output(&[
        "--no-system",
        "--root",
        root.to_str().unwrap(),
        "--driver-dir",
        dir.path().to_str().unwrap(),
        "--format",
        "json",
    ]);
    let report = check_report(&output);
    let c = combination(&report, CU12);
    let devices = result(c, "driver.devices");
    assert_eq!(devices["status"], "pass", "{devices}");
    let compiled = result(c, "nvrtc.compile_vector_add");
    assert_eq!(compiled["status"], "pass", "{compiled}");
    assert!(
        compiled["reason"].as_str().unwrap().starts_with(
            "compiled vector_add.cu to PTX for compute_121: the device (sm_150) is newer than \
             this NVRTC; the driver JIT-compiles it"
        ),
        "{compiled}"
    );
    let launch = result(c, "nvrtc.launch_vector_add");
    assert_eq!(launch["status"], "fail", "{launch}");
    assert_eq!(
        launch["reason"],
        "cuModuleLoadDataEx (ptx for compute_121): CUDA_ERROR_UNSUPPORTED_PTX_VERSION (222): the \
         PTX from NVRTC 12.9 is newer than this driver's JIT (driver supports CUDA 12.2): use a \
         toolkit no newer than the driver, or upgrade the driver; JIT log: ptxas application ptx \
         input, line 5; fatal   : Unsupported .version 9.0; current version is '8.2'",
        "{launch}"
    );
    assert_eq!(
        launch["details"]["jit_log"],
        "ptxas application ptx input, line 5; fatal   : Unsupported .version 9.0; current \
         version is '8.2'"
    );
    assert_eq!(launch["details"]["image"], "ptx");
    assert_eq!(launch["details"]["error_code"], 222);
}

/// A hang that writes the check worker's own `start` event for the check it hangs in to every
/// descriptor it inherited, five times a second: it moves no deadline.
const START_FLOOD: &str = r#"char line[] = "{\"event\":\"start\",\"id\":\"cublas.load\"}\n";
    for (;;) { for (int fd = 1; fd < 64; fd++) (void)!write(fd, line, sizeof line - 1); usleep(200000); }
    return 0;"#;

/// A user combination of CUDA 12.9's real runtime, NVRTC and cuDNN with a cuBLAS built here that
/// crashes or hangs when asked its version: the bad library costs only its own checks, and the
/// fresh worker after it sets up again what later checks need (cudnn.versions needs the
/// runtime's version, read by cudart.load in the first worker).
#[rstest]
#[case::crash("raise(SIGSEGV); return 0;", &[], "the worker died during this check: killed by SIGSEGV")]
#[case::hang("for (;;) pause(); return 0;", &["--timeout", "2"], "no answer within 2 s")]
#[case::start_flood(START_FLOOD, &["--timeout", "2"], "no answer within 2 s")]
fn a_library_that_crashes_or_hangs_costs_only_its_check(
    #[case] body: &str,
    #[case] extra: &[&str],
    #[case] reason: &str,
) {
    let dir = tempfile::tempdir().unwrap();
    let faulty = faulty_cublas(dir.path(), body);
    let lib = |name: &str| fixture(&format!("{VENV_CU12}/nvidia/{name}/lib"));
    let dirs = [lib("cuda_runtime"), lib("cuda_nvrtc"), lib("cudnn"), faulty];
    let config = combination_config(dir.path(), "faulty", &dirs);
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let output = check_output(
        &[
            &[
                "--no-system",
                "--root",
                empty.to_str().unwrap(),
                "--config",
                config.to_str().unwrap(),
                "--driver-dir",
                driver_dir().to_str().unwrap(),
                "--target",
                "sm_90",
                "--format",
                "json",
            ][..],
            extra,
        ]
        .concat(),
    );
    let report = check_report(&output);
    let c = combination(&report, "faulty");
    assert_eq!(c["origin"], "config");
    let load = result(c, "cublas.load");
    assert_eq!(load["status"], "fail", "{load}");
    let text = load["reason"].as_str().unwrap();
    assert!(text.contains(reason), "{load}");
    if extra.contains(&"--timeout") {
        // Timed from the worker's own start: a start the library repeats restarts no clock,
        // so the check ran its whole timeout, however busy the machine.
        assert!(load["duration_ms"].as_f64() >= Some(2000.0), "{load}");
    }
    if body.contains("SIGSEGV") {
        assert!(text.contains("its last words: about to fail"), "{load}");
    }
    assert_eq!(result(c, "cublas.handle")["status"], "skip");
    // Fresh workers carried on after the crash or hang, with the runtime set up again.
    let versions = result(c, "cudnn.versions");
    assert_eq!(versions["status"], "pass", "{versions}");
    assert_eq!(result(c, "nvrtc.compile_matmul")["status"], "pass");
    assert_eq!(result(c, "cudart.load")["status"], "pass");
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn every_check_passes_on_a_healthy_gpu_host() {
    let output = check_output(&["--format", "json"]);
    let report = check_report(&output);
    assert!(
        report["gpu"]["devices"]
            .as_array()
            .is_some_and(|d| !d.is_empty()),
        "NVML sees a GPU: {}",
        report["gpu"]
    );
    let mut failures = Vec::new();
    for c in report["combinations"].as_array().unwrap() {
        for check in c["checks"].as_array().unwrap() {
            let reason = check["reason"].as_str().unwrap_or_default();
            let status = check["status"].as_str().unwrap_or_default();
            // Skips are allowed only for libraries a combination does not have.
            let absent = reason.contains("in this combination (lib");
            if status == "fail" || (status == "skip" && !absent) {
                failures.push(format!("{} {} {status}: {reason}", c["name"], check["id"]));
            }
        }
        for id in [
            "driver.init",
            "driver.devices",
            "cudart.memcpy",
            "nvrtc.launch_vector_add",
            "nvrtc.launch_matmul",
        ] {
            assert_eq!(result(c, id)["status"], "pass", "{} {id}", c["name"]);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(output.status.code(), Some(0));
}
