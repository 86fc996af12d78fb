//! `stackbench doctor -- COMMAND`: real programs run under the loader's trace, on the fixture
//! libraries: Python's ctypes loading cuDNN 8 for CUDA 12 beside CUDA 11's cuBLAS and asking for
//! a runtime that is not on its path; the CUDA 13 runtime asking the 535 driver for devices; a C
//! program the test compiles that links libcudart.so.12 and dlopens cuBLAS.

mod common;

use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// `doctor --no-system --root <each> --format json --quiet -- command`, with LD_LIBRARY_PATH
/// set to `ld_library_path` when given; its exit status and report.
fn doctor_run(roots: &[PathBuf], ld_library_path: Option<&Path>, command: &[&str]) -> (i32, Value) {
    let home = tempfile::tempdir().unwrap();
    let mut doctor = isolated_stackbench(home.path());
    doctor.args([
        "doctor",
        "--no-system",
        "--format",
        "json",
        "--quiet",
        "--target",
        "sm_90",
    ]);
    for root in roots {
        doctor.arg("--root").arg(root);
    }
    if let Some(dir) = ld_library_path {
        doctor.env("LD_LIBRARY_PATH", dir);
    }
    let output = doctor
        .arg("--")
        .args(command)
        .output()
        .expect("run stackbench");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    (
        output.status.code().expect("an exit status"),
        doctor_report(&output.stdout),
    )
}

/// The command's entry for the library asked for as `name`.
fn asked<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["command"]["libraries"]
        .as_array()
        .expect("the command's libraries")
        .iter()
        .find(|l| l["name"] == name)
        .unwrap_or_else(|| panic!("{name} not asked for: {}", report["command"]))
}

fn display(path: &Path) -> String {
    path.display().to_string()
}

#[test]
fn python_loading_cudnn8_for_cuda12_and_a_runtime_not_on_its_path() {
    let cudnn8 = fixture(VENV_CUDNN8);
    let ops_infer = cudnn8.join("nvidia/cudnn/lib/libcudnn_ops_infer.so.8");
    let script = format!(
        "import ctypes; ctypes.CDLL('{}'); ctypes.CDLL('libcudart.so.12')",
        ops_infer.display()
    );
    let (code, report) = doctor_run(
        &[cudnn8.clone(), fixture(VENV_CU12)],
        None,
        &["python3", "-c", &script],
    );
    assert_eq!(code, 1, "the findings hold errors");
    let run = &report["command"];
    assert_eq!(
        run["exit_status"], 1,
        "Python's own status is reported: {run}"
    );
    assert!(
        strings(&run["error_lines"])
            .iter()
            .any(|l| l.contains("libcudart.so.12: cannot open shared object file")),
        "{run}"
    );
    // cuDNN, opened by its path, came from the venv; the runtime was found nowhere.
    let cudnn = asked(&report, &display(&ops_infer));
    assert_eq!(cudnn["found"], display(&ops_infer).as_str());
    assert_eq!(cudnn["installation"], display(&cudnn8).as_str());
    assert!(asked(&report, "libcudart.so.12")["found"].is_null());
    // The doctor's findings for exactly those libraries: cuDNN's missing cuBLAS 12, and the
    // runtime, whose copy is in the other venv.
    let cublas = findings_of(&report, "missing_runtime_dependency");
    assert!(
        cublas.iter().any(|f| f["library"] == "libcudnn_ops_infer.so.8"
            && f["missing"] == "libcublas.so.12"),
        "{cublas:?}"
    );
    assert!(
        cublas
            .iter()
            .all(|f| f["library"] == "libcudnn_ops_infer.so.8"),
        "nothing about libraries it never loaded: {cublas:?}"
    );
    let runtime = findings_of(&report, "missing_dependency");
    let runtime = runtime
        .iter()
        .find(|f| f["missing"] == "libcudart.so.12")
        .expect("the runtime it did not get");
    let copy = fixture(VENV_CU12).join("nvidia/cuda_runtime/lib/libcudart.so.12");
    assert_eq!(strings(&runtime["candidates"]), [display(&copy)]);
    assert!(runtime["fix"]
        .as_str()
        .unwrap()
        .starts_with("export LD_LIBRARY_PATH="));
}

#[test]
fn the_cuda_13_runtime_asking_the_535_driver_for_devices() {
    let conda = fixture(CONDA);
    let driver = fixture(DRIVER_AMD64);
    let script = format!(
        "import ctypes; rt = ctypes.CDLL('{}/lib/libcudart.so.13'); n = ctypes.c_int(); \
         print('cudaGetDeviceCount returned', rt.cudaGetDeviceCount(ctypes.byref(n)))",
        conda.display()
    );
    let (code, report) = doctor_run(
        std::slice::from_ref(&conda),
        Some(&driver),
        &["python3", "-c", &script],
    );
    assert_eq!(code, 1);
    assert_eq!(
        report["command"]["exit_status"], 0,
        "the program itself succeeded"
    );
    let libcuda = asked(&report, "libcuda.so.1");
    assert_eq!(
        libcuda["found"],
        display(&driver.join("libcuda.so.1")).as_str()
    );
    let runtime = asked(&report, &format!("{}/lib/libcudart.so.13", conda.display()));
    assert_eq!(runtime["installation"], display(&conda).as_str());
    let too_old = findings_of(&report, "driver_too_old");
    assert_eq!(too_old.len(), 1, "{}", report["findings"]);
    assert!(
        too_old[0]["message"].as_str().unwrap().contains("535"),
        "{}",
        too_old[0]
    );
}

#[test]
fn a_c_program_linking_the_runtime_and_opening_cublas() {
    let runtime = fixture(VENV_CU12).join("nvidia/cuda_runtime/lib");
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("main.c");
    std::fs::write(
        &source,
        "#include <dlfcn.h>\n#include <stdio.h>\nint cudaRuntimeGetVersion(int *);\n\
         int main(void) {\n  int v = 0;\n  cudaRuntimeGetVersion(&v);\n  printf(\"runtime %d\\n\", v);\n\
         void *cublas = dlopen(\"libcublas.so.12\", RTLD_NOW);\n\
         if (!cublas) { fprintf(stderr, \"%s\\n\", dlerror()); return 2; }\n  return 0;\n}\n",
    )
    .unwrap();
    let program = dir.path().join("main");
    let status = std::process::Command::new("cc")
        .arg(&source)
        .arg("-o")
        .arg(&program)
        .arg(runtime.join("libcudart.so.12"))
        .arg(format!(
            "-Wl,--enable-new-dtags,-rpath,{}",
            runtime.display()
        ))
        .arg("-ldl")
        .status()
        .expect("cc");
    assert!(status.success());
    let (code, report) = doctor_run(&[fixture(VENV_CU12)], None, &[program.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert_eq!(report["command"]["exit_status"], 2, "{}", report["command"]);
    let cudart = asked(&report, "libcudart.so.12");
    assert_eq!(
        cudart["found"],
        display(&runtime.join("libcudart.so.12")).as_str()
    );
    assert_eq!(
        cudart["installation"],
        display(&fixture(VENV_CU12)).as_str()
    );
    assert!(asked(&report, "libcublas.so.12")["found"].is_null());
    assert!(
        strings(&report["command"]["error_lines"])
            .iter()
            .any(|l| l.contains("libcublas.so.12: cannot open shared object file")),
        "{}",
        report["command"]
    );
    let missing = findings_of(&report, "missing_dependency");
    let cublas = missing
        .iter()
        .find(|f| f["missing"] == "libcublas.so.12")
        .expect("cuBLAS, asked for and not found");
    assert!(
        cublas["fix"]
            .as_str()
            .unwrap()
            .contains(&display(&fixture(VENV_CU12).join("nvidia/cublas/lib"))),
        "{cublas}"
    );
}
