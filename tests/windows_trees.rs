//! Windows CUDA trees read on Linux, with NVIDIA's real win_amd64 wheels (`ci/fetch-windows-toolkits`):
//! each DLL's machine, imports, run-time loads, versions and GPU code; `doctor`'s error-126 and
//! error-193 findings; Python 3.8's PATH that no longer counts; damaged DLLs; and Windows
//! cuBLAS and cuDNN DLLs set beside their Linux builds of the same version.

// Tests read the files they make and the checkout's own: std's readers are theirs (clippy.toml).
#![allow(clippy::disallowed_methods)]

mod common;

use common::*;
use rstest::rstest;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// `scan --format json` of both Windows trees, once.
fn scan() -> &'static Value {
    static SCAN: OnceLock<Value> = OnceLock::new();
    SCAN.get_or_init(|| {
        let root = windows_toolkits();
        let output = run_stackbench(&[
            "scan",
            "--no-system",
            "--root",
            root.to_str().unwrap(),
            "--format",
            "json",
        ]);
        stdout_json(&output)
    })
}

/// The scanned library `file` of the installation whose root ends with `root`.
fn library(root: &str, file: &str) -> &'static Value {
    scan()["installations"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["root"].as_str().unwrap().ends_with(root))
        .flat_map(|i| i["libraries"].as_array().unwrap())
        .find(|l| l["path"].as_str().unwrap().ends_with(&format!("/{file}")))
        .unwrap_or_else(|| panic!("{file} not scanned in {root}"))
}

#[rstest]
#[case::runtime("cudart64_110.dll", "machine", "x86_64")]
#[case::runtime_class("cudart64_110.dll", "class", "PE32+")]
#[case::runtime_release("cudart64_110.dll", "version", "11.8.89")]
#[case::runtime_resource("cudart64_110.dll", "product_version", "6,14,11,11080")]
#[case::runtime_32("cudart32_110.dll", "machine", "i386")]
#[case::runtime_32_class("cudart32_110.dll", "class", "PE32")]
#[case::cupti("cupti64_2022.3.0.dll", "version", "2022.3.0.0")]
#[case::cupti_resource("cupti64_2022.3.0.dll", "product_version", "2022.3.0.0 Build (0)")]
#[case::cublas("cublas64_11.dll", "version", "11.11.3.6")]
#[case::cudnn("cudnn_cnn_infer64_8.dll", "version", "8.9.4.25")]
#[case::cudnn_file("cudnn_cnn_infer64_8.dll", "file_version", "8.9.4.25")]
#[case::cudnn_name("cudnn_cnn_infer64_8.dll", "name", "cudnn_cnn_infer")]
fn each_dll_s_facts_are_read(#[case] file: &str, #[case] field: &str, #[case] expected: &str) {
    let dll = library(WIN_VENV, file);
    let value = match field {
        "class" | "product_version" | "file_version" => &dll["pe"][field],
        _ => &dll[field],
    };
    assert_eq!(value, expected, "{file}: {field}");
}

#[rstest]
#[case::cnn_imports("cudnn_cnn_infer64_8.dll", "needed", "cudnn_ops_infer64_8.dll")]
#[case::cnn_loads_zlib("cudnn_cnn_infer64_8.dll", "dlopen_deps", "zlibwapi.dll")]
#[case::ops_loads_cublas("cudnn_ops_infer64_8.dll", "dlopen_deps", "cublas64_11.dll")]
#[case::ops_loads_cublaslt("cudnn_ops_infer64_8.dll", "dlopen_deps", "cublasLt64_11.dll")]
#[case::cublas_imports_lt("cublas64_11.dll", "needed", "cublasLt64_11.dll")]
#[case::cudnn_sass("cudnn_cnn_infer64_8.dll", "sass", "sm_90")]
#[case::cudnn_ptx("cudnn_cnn_infer64_8.dll", "ptx", "compute_90")]
#[case::cublaslt_sass("cublasLt64_11.dll", "sass", "sm_80")]
fn each_dll_s_lists_hold_what_it_needs_and_carries(
    #[case] file: &str,
    #[case] field: &str,
    #[case] item: &str,
) {
    let list = strings(&library(WIN_VENV, file)[field]);
    assert!(list.iter().any(|s| s == item), "{file} {field}: {list:?}");
}

#[test]
fn a_windows_cublas_carries_the_gpu_code_of_its_linux_build() {
    let windows = library(WIN_VENV, "cublasLt64_11.dll");
    let linux_path = fixture(&format!("{VENV_CU11}/nvidia/cublas/lib/libcublasLt.so.11"));
    let output = run_stackbench(&[
        "scan",
        "--no-system",
        "--root",
        linux_path.parent().unwrap().to_str().unwrap(),
        "--format",
        "json",
    ]);
    let scan = stdout_json(&output);
    let linux = scan["installations"][0]["libraries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["name"] == "cublasLt")
        .expect("libcublasLt.so.11");
    assert_eq!(linux["version"], windows["version"], "the same release");
    assert!(!strings(&windows["sass"]).is_empty());
    assert_eq!(strings(&windows["sass"]), strings(&linux["sass"]));
    assert_eq!(strings(&windows["ptx"]), strings(&linux["ptx"]));
}

/// cuDNN 8.9.4.25, the one cuDNN 8 release on PyPI for both Windows and Linux: the same SASS
/// in every library of both builds, and the same PTX except in cnn_infer and cnn_train, whose
/// Windows builds carry PTX for compute 8.0 and 8.6 where the Linux ones carry compute 5.2 (as
/// cuobjdump lists them for cnn_infer: 22 PTX entries each for sm_80 and sm_86 in the DLL's
/// `.nv_fatb`, one for sm_52 in the `.so`). `cudnn64_8.dll`, the dispatcher, carries none.
#[rstest]
#[case::adv_infer("_adv_infer", &["compute_90"], &["compute_90"])]
#[case::adv_train("_adv_train", &["compute_90"], &["compute_90"])]
#[case::cnn_infer("_cnn_infer", &["compute_80", "compute_86", "compute_90"], &["compute_52", "compute_90"])]
#[case::cnn_train("_cnn_train", &["compute_80", "compute_86", "compute_90"], &["compute_52", "compute_90"])]
#[case::ops_infer("_ops_infer", &["compute_90"], &["compute_90"])]
#[case::ops_train("_ops_train", &["compute_90"], &["compute_90"])]
fn a_windows_cudnn_carries_the_sass_of_its_linux_build(
    #[case] part: &str,
    #[case] windows_ptx: &[&str],
    #[case] linux_ptx: &[&str],
) {
    let windows = library(WIN_VENV, &format!("cudnn{part}64_8.dll"));
    assert_eq!(windows["version"], "8.9.4.25");
    let twin = windows_toolkits()
        .join("linux-twin")
        .join(format!("libcudnn{part}.so.8"));
    let linux = stackbench::elf::read_path(&twin).expect("the Linux build reads");
    let sass = strings(&windows["sass"]);
    assert_eq!(sass.len(), 8, "{sass:?}");
    assert_eq!(sass, linux.sass);
    assert_eq!(strings(&windows["ptx"]), windows_ptx);
    assert_eq!(linux.ptx, linux_ptx);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

    /// cuDNN's dispatcher DLL with bytes of its headers, tables and resources changed reads
    /// the same, or fails the same, from a file (its parts, or the whole file again when they
    /// do not suffice) as from its bytes.
    #[test]
    fn a_changed_dll_reads_the_same_from_its_file_as_from_its_bytes(
        changes in proptest::collection::vec((0usize..288_296, proptest::prelude::any::<u8>()), 1..8),
        headers in proptest::collection::vec((0usize..1024, proptest::prelude::any::<u8>()), 0..4),
    ) {
        let real = windows_toolkits().join(WIN_VENV).join("nvidia/cudnn/bin/cudnn64_8.dll");
        let mut bytes = std::fs::read(real).unwrap();
        for (at, value) in changes.into_iter().chain(headers) {
            let len = bytes.len();
            bytes[at % len] = value;
        }
        let mut file = tempfile::NamedTempFile::new().unwrap();
        std::io::Write::write_all(&mut file, &bytes).unwrap();
        let from_file = stackbench::pe::read_path(file.path()).map_err(|e| e.to_string());
        let from_bytes = stackbench::pe::read_bytes(&bytes).map_err(|e| e.to_string());
        proptest::prop_assert_eq!(from_file, from_bytes);
    }
}

#[test]
fn the_toolkit_layout_reads_its_version_json() {
    let installation = scan()["installations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["root"].as_str().unwrap().ends_with(WIN_TOOLKIT))
        .expect("the toolkit tree");
    assert_eq!(installation["layout"], "toolkit");
    assert_eq!(installation["cuda_version"], "11.8");
    let cupti = library(WIN_TOOLKIT, "cupti64_2022.3.0.dll");
    assert!(cupti["path"]
        .as_str()
        .unwrap()
        .contains("extras/CUPTI/lib64"));
    assert_eq!(
        library(WIN_TOOLKIT, "cudart64_110.dll")["version"],
        "11.8.89"
    );
}

/// `doctor --no-system --format json` of `root` with `extra` arguments.
fn doctor(root: &Path, extra: &[&str]) -> (Option<i32>, Value) {
    let mut args = vec![
        "doctor",
        "--no-system",
        "--root",
        root.to_str().unwrap(),
        "--format",
        "json",
    ];
    args.extend_from_slice(extra);
    let output = run_stackbench(&args);
    (output.status.code(), doctor_report(&output.stdout))
}

fn findings(report: &Value, cause: &str, library: &str) -> Vec<Value> {
    findings_of(report, cause)
        .into_iter()
        .filter(|f| f["library"] == library)
        .collect()
}

#[test]
fn doctor_names_zlibwapi_missing_for_cudnn_s_convolutions_with_the_fix() {
    let (code, report) = doctor(&windows_toolkits().join(WIN_VENV), &[]);
    assert_eq!(code, Some(1));
    let zlib = findings(
        &report,
        "missing_runtime_dependency",
        "cudnn_cnn_infer64_8.dll",
    );
    assert_eq!(zlib.len(), 1, "{zlib:?}");
    let zlib = &zlib[0];
    assert_eq!(zlib["severity"], "error");
    assert_eq!(zlib["missing"], "zlibwapi.dll");
    assert!(zlib["message"].as_str().unwrap().contains("Error code 126"));
    let fix = zlib["fix"].as_str().unwrap();
    assert!(
        fix.contains("put zlibwapi.dll") && fix.contains("cuDNN 9"),
        "{fix}"
    );
    // cuBLAS is in its own wheel's bin/, which PyTorch and TensorFlow add: found.
    assert!(findings(
        &report,
        "missing_runtime_dependency",
        "cudnn_ops_infer64_8.dll"
    )
    .iter()
    .all(|f| f["missing"] == "zlibwapi.dll"));
    let notes = findings_of(&report, "windows_static");
    assert_eq!(notes.len(), 1);
    assert!(notes[0]["message"]
        .as_str()
        .unwrap()
        .contains("read, not loaded"));
    assert!(
        findings_of(&report, "no_driver").is_empty(),
        "not this host's driver"
    );
}

#[test]
fn doctor_reports_the_32_bit_runtime_as_error_193_for_64_bit_programs() {
    let (_, report) = doctor(&windows_toolkits().join(WIN_VENV), &[]);
    let found = findings(&report, "wrong_machine", "cudart32_110.dll");
    assert_eq!(found.len(), 1);
    let message = found[0]["message"].as_str().unwrap();
    assert!(
        message.contains("32-bit") && message.contains("error 193"),
        "{message}"
    );
    assert!(findings(&report, "wrong_machine", "cudart64_110.dll").is_empty());
}

#[test]
fn cudnn_for_cuda_11_beside_cuda_12_s_cublas_is_a_mismatch() {
    let (code, report) = doctor(&windows_toolkits().join(WIN_VENV_BROKEN), &[]);
    assert_eq!(code, Some(1));
    let found = findings(&report, "cudnn_cuda_mismatch", "cudnn_ops_infer64_8.dll");
    let missing: Vec<&str> = found
        .iter()
        .map(|f| f["missing"].as_str().unwrap())
        .collect();
    assert_eq!(
        missing,
        ["cublas64_11.dll", "cublasLt64_11.dll"],
        "{found:?}"
    );
    let first = &found[0];
    assert!(first["message"]
        .as_str()
        .unwrap()
        .contains("built for CUDA 11"));
    assert!(first["candidates"][0]
        .as_str()
        .unwrap()
        .ends_with("nvidia/cublas/bin/cublas64_12.dll"));
    let fix = first["fix"].as_str().unwrap();
    assert!(
        fix.contains("nvidia-cudnn-cu12") && fix.contains("nvidia-cublas-cu11"),
        "{fix}"
    );
}

/// `to` as a hard link to `from`, or a copy where the kernel refuses the link (another user's
/// file under `protected_hardlinks`, another file system).
fn link_or_copy(from: &Path, to: &Path) {
    if std::fs::hard_link(from, to).is_err() {
        std::fs::copy(from, to).unwrap();
    }
}

/// A pip tree holding only cuDNN's wheel (real DLLs, hard-linked) and a Windows `PATH`.
fn cudnn_only_venv(dir: &Path) -> PathBuf {
    let site = dir.join("venv/Lib/site-packages");
    let bin = site.join("nvidia/cudnn/bin");
    std::fs::create_dir_all(&bin).unwrap();
    let from = windows_toolkits().join(WIN_VENV).join("nvidia/cudnn/bin");
    for file in ["cudnn64_8.dll", "cudnn_ops_infer64_8.dll"] {
        link_or_copy(&from.join(file), &bin.join(file));
    }
    site
}

#[test]
fn a_dll_only_on_path_is_not_found_by_python_and_add_dll_directory_finds_it() {
    let dir = tempfile::tempdir().unwrap();
    let site = cudnn_only_venv(dir.path());
    let cublas = windows_toolkits().join(WIN_VENV).join("nvidia/cublas/bin");
    let cublas = cublas.to_str().unwrap();
    let (_, missing) = doctor(&site, &[]);
    let lost = findings(
        &missing,
        "missing_runtime_dependency",
        "cudnn_ops_infer64_8.dll",
    );
    assert!(
        lost.iter().any(|f| f["missing"] == "cublasLt64_11.dll"),
        "{lost:?}"
    );

    let (_, on_path) = doctor(&site, &["--windows-path", &format!("C:\\Windows;{cublas}")]);
    let trapped = findings(
        &on_path,
        "python_dll_search_path",
        "cudnn_ops_infer64_8.dll",
    );
    assert_eq!(
        trapped.len(),
        2,
        "cublas64_11.dll and cublasLt64_11.dll: {trapped:?}"
    );
    let fix = trapped[0]["fix"].as_str().unwrap();
    assert!(
        fix.contains("os.add_dll_directory") && fix.contains(cublas),
        "{fix}"
    );

    let (_, added) = doctor(&site, &["--dll-directory", cublas]);
    assert!(findings_of(&added, "python_dll_search_path").is_empty());
    assert!(findings(
        &added,
        "missing_runtime_dependency",
        "cudnn_ops_infer64_8.dll"
    )
    .iter()
    .all(|f| !f["missing"].as_str().unwrap().starts_with("cublas")));
}

#[test]
fn a_32_bit_zlib_in_the_search_is_error_193() {
    let dir = tempfile::tempdir().unwrap();
    let site = cudnn_only_venv(dir.path());
    // A 32-bit DLL where cuDNN looks for zlibwapi.dll: the classic x86 zlib download.
    let zlib = dir.path().join("zlib32");
    std::fs::create_dir_all(&zlib).unwrap();
    let runtime32 = windows_toolkits()
        .join(WIN_VENV)
        .join("nvidia/cuda_runtime/bin/cudart32_110.dll");
    link_or_copy(&runtime32, &zlib.join("zlibwapi.dll"));
    let (_, report) = doctor(&site, &["--dll-directory", zlib.to_str().unwrap()]);
    let wrong = findings(&report, "wrong_machine", "cudnn64_8.dll");
    assert_eq!(wrong.len(), 1, "{wrong:?}");
    assert_eq!(wrong[0]["missing"], "zlibwapi.dll");
    assert!(wrong[0]["message"].as_str().unwrap().contains("error 193"));
}

#[test]
fn a_damaged_dll_is_a_problem_of_its_own_and_the_rest_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("cudnn/bin");
    std::fs::create_dir_all(&bin).unwrap();
    let real = windows_toolkits()
        .join(WIN_VENV)
        .join("nvidia/cudnn/bin/cudnn64_8.dll");
    let bytes = std::fs::read(&real).unwrap();
    std::fs::write(bin.join("cudnn64_8.dll"), &bytes[..600]).unwrap();
    std::fs::write(bin.join("cudnn_ops_infer64_8.dll"), b"not a DLL at all").unwrap();
    // Cut in the middle: whole headers, sections that end beyond the file.
    let big = std::fs::read(real.with_file_name("cudnn_adv_infer64_8.dll")).unwrap();
    std::fs::write(bin.join("cudnn_adv_infer64_8.dll"), &big[..2 << 20]).unwrap();
    link_or_copy(
        &windows_toolkits()
            .join(WIN_VENV)
            .join("nvidia/cuda_runtime/bin/cudart64_110.dll"),
        &bin.join("cudart64_110.dll"),
    );
    let output = run_stackbench(&[
        "scan",
        "--no-system",
        "--root",
        dir.path().to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert_eq!(output.status.code(), Some(1));
    let report = stdout_json(&output);
    let problems: Vec<String> = all_problems(&report)
        .iter()
        .map(|p| format!("{} {}", p["kind"], p["message"]))
        .collect();
    assert!(
        problems.iter().any(|p| p.contains("\"not_pe\"")),
        "{problems:?}"
    );
    assert!(
        problems
            .iter()
            .any(|p| p.contains("\"truncated\"") || p.contains("\"malformed_pe\"")),
        "{problems:?}"
    );
    assert!(
        problems
            .iter()
            .any(|p| p.contains("\"truncated\"") && p.contains("ends at byte")),
        "{problems:?}"
    );
    let runtime = all_libraries(&report)
        .into_iter()
        .find(|l| l["name"] == "cudart")
        .expect("the intact DLL is read");
    assert_eq!(runtime["machine"], "x86_64");
}
