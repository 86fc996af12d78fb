//! `stackbench::elf` against real CUDA libraries: fatbinary listings compared with NVIDIA's
//! `cuobjdump`, and facts about dynamic sections, symbol versions and run-time names checked
//! with `readelf` and `strings` on the same files.
//!
//! The libraries come from the fixture toolkits built by `ci/fetch-toolkits`
//! (`$STACKBENCH_TOOLKITS`, or `.toolkits/` in the repository). Missing fixtures fail the tests.

// Tests read the files they make and the checkout's own: std's readers are theirs (clippy.toml).
#![allow(clippy::disallowed_methods)]

mod common;
use common::fixture;

use rstest::rstest;
use stackbench::elf::{self, fatbin, ElfInfo};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const CU11: &str = "venv-cu11/lib/python3.11/site-packages/nvidia";
const CU12: &str = "venv-cu12/lib/python3.11/site-packages/nvidia";
const CUDNN8_CU12: &str = "venv-cudnn8-cu12-cublas11/lib/python3.11/site-packages/nvidia";
const CONDA_CU13: &str = "conda/envs/cu13/lib";
const DRIVER_AMD64: &str = "driver-535/amd64/usr/lib/x86_64-linux-gnu/nvidia/current";
const DRIVER_I386: &str = "driver-535/i386/usr/lib/i386-linux-gnu/nvidia/current";

fn read(relative: &str) -> ElfInfo {
    let path = fixture(relative);
    elf::read_path(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// What `cuobjdump --list-elf` or `--list-ptx` printed, and whether it finished.
struct Listing {
    /// Target name (`sm_90a`, `compute_120f`) -> number of entries.
    counts: BTreeMap<String, usize>,
    /// Target names in the order listed.
    order: Vec<String>,
    success: bool,
    stderr: String,
}

fn cuobjdump(flag: &str, lib: &Path) -> Listing {
    let tool = fixture("tools/cuobjdump");
    let out = Command::new(&tool)
        .arg(flag)
        .arg(lib)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", tool.display()));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let order = parse_listing(&stdout);
    let mut counts = BTreeMap::new();
    for name in &order {
        *counts.entry(name.clone()).or_insert(0) += 1;
    }
    Listing {
        counts,
        order,
        success: out.status.success(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Target names from `cuobjdump --list-elf/--list-ptx` lines such as
/// `ELF file    1: libcudnn_ops_infer.so.1.sm_50.cubin` (SASS `sm_50`) and
/// `PTX file    3: libcudnn_ops.so.3.sm_120f.ptx` (PTX, named `compute_120f` here).
fn parse_listing(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .filter_map(|line| {
            let (head, file) = line.split_once(": ")?;
            let target = |suffix: &str| file.strip_suffix(suffix)?.rsplit('.').next();
            if head.starts_with("ELF file") {
                target(".cubin").map(str::to_owned)
            } else if head.starts_with("PTX file") {
                target(".ptx")?
                    .strip_prefix("sm_")
                    .map(|a| format!("compute_{a}"))
            } else {
                None
            }
        })
        .collect()
}

/// Our entries of one kind, by target name, and in file order.
fn ours(lib: &Path, kind: fatbin::EntryKind) -> (BTreeMap<String, usize>, Vec<String>) {
    let scan = fatbin::scan_file(lib).unwrap_or_else(|e| panic!("{}: {e}", lib.display()));
    assert_eq!(scan.error, None, "{}", lib.display());
    let order: Vec<String> = scan
        .entries
        .iter()
        .filter(|e| e.kind == kind)
        .filter_map(fatbin::FatbinEntry::target_name)
        .collect();
    let mut counts = BTreeMap::new();
    for name in &order {
        *counts.entry(name.clone()).or_insert(0) += 1;
    }
    (counts, order)
}

#[test]
fn parses_cuobjdump_lines() {
    let out = "ELF file    1: libcudnn_ops_infer.so.1.sm_50.cubin\n\
               ELF file 1375: libcublasLt.so.1375.sm_90a.cubin\n\
               PTX file    2: libcudnn_ops.so.2.sm_120f.ptx\n\
               cuobjdump info    : File 'x' does not contain device code\n";
    assert_eq!(parse_listing(out), ["sm_50", "sm_90a", "compute_120f"]);
}

/// SASS and PTX targets, with the number of entries of each, equal cuobjdump's.
#[rstest]
#[case::cudnn8_cu11_ops_infer(format!("{CU11}/cudnn/lib/libcudnn_ops_infer.so.8"))]
#[case::cudnn8_cu11_cnn_infer(format!("{CU11}/cudnn/lib/libcudnn_cnn_infer.so.8"))]
#[case::cudnn9_cu12_engines_precompiled(format!("{CU12}/cudnn/lib/libcudnn_engines_precompiled.so.9"))]
#[case::cublaslt12(format!("{CU12}/cublas/lib/libcublasLt.so.12"))]
#[case::cudnn9_cu13_tensor_ir(format!("{CONDA_CU13}/libcudnn_engines_tensor_ir.so.9"))]
fn fatbin_matches_cuobjdump(#[case] relative: String) {
    let lib = fixture(&relative);
    let info = read(&relative);
    for (flag, kind, listed) in [
        ("--list-elf", fatbin::EntryKind::Sass, &info.sass),
        ("--list-ptx", fatbin::EntryKind::Ptx, &info.ptx),
    ] {
        let theirs = cuobjdump(flag, &lib);
        assert!(theirs.success, "cuobjdump {flag} failed: {}", theirs.stderr);
        assert!(!theirs.counts.is_empty() || flag == "--list-ptx");
        let (counts, _) = ours(&lib, kind);
        assert_eq!(counts, theirs.counts, "{flag} {relative}");
        let names: Vec<&String> = theirs.counts.keys().collect();
        let mut ours_sorted: Vec<&String> = listed.iter().collect();
        ours_sorted.sort();
        assert_eq!(ours_sorted, names, "{flag} {relative}: ElfInfo targets");
        assert_eq!(info.fatbin_problem, None);
    }
}

/// cuobjdump 13.5 refuses cuBLAS 11 (it carries sm_35 SASS); we still list it. The entry
/// headers' architectures were checked against the cubins' own `EF_CUDA_SM` flags.
#[test]
fn cublas11_lists_sm35_that_cuobjdump_refuses() {
    let relative = format!("{CU11}/cublas/lib/libcublasLt.so.11");
    let lib = fixture(&relative);
    let theirs = cuobjdump("--list-elf", &lib);
    assert!(
        !theirs.success && theirs.stderr.contains("sm_35"),
        "{}",
        theirs.stderr
    );
    let info = read(&relative);
    assert_eq!(
        info.sass,
        ["sm_35", "sm_50", "sm_60", "sm_61", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]
    );
    assert_eq!(info.ptx, ["compute_90"]);
    assert_eq!(info.fatbin_problem, None);
}

/// cuobjdump 13.5 stops with "Invalid ELF" at the sm_90 cubin of cuDNN 8.9.2 for CUDA 12, so
/// it shows only sm_50-sm_86. What it lists before stopping is exactly our first entries;
/// the headers go on with sm_90 SASS in every container.
#[test]
fn cudnn8_cu12_goes_on_where_cuobjdump_stops() {
    let relative = format!("{CUDNN8_CU12}/cudnn/lib/libcudnn_ops_infer.so.8");
    let lib = fixture(&relative);
    let theirs = cuobjdump("--list-elf", &lib);
    assert!(
        !theirs.success && theirs.stderr.contains("Invalid ELF"),
        "{}",
        theirs.stderr
    );
    let (_, order) = ours(&lib, fatbin::EntryKind::Sass);
    assert!(!theirs.order.is_empty());
    assert_eq!(order[..theirs.order.len()], theirs.order[..]);
    let info = read(&relative);
    assert_eq!(
        info.sass,
        ["sm_50", "sm_60", "sm_61", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]
    );
    assert_eq!(info.ptx, ["compute_90"]);
}

#[test]
fn cudnn8_cu11_ops_infer_facts() {
    let info = read(&format!("{CU11}/cudnn/lib/libcudnn_ops_infer.so.8"));
    assert_eq!(
        (info.class.as_str(), info.machine.as_str()),
        ("ELF64", "x86_64")
    );
    assert_eq!(info.soname.as_deref(), Some("libcudnn_ops_infer.so.8"));
    assert_eq!(
        info.runpath,
        [
            "$ORIGIN",
            "$ORIGIN/../../cublas/lib",
            "$ORIGIN/../../nvrtc/lib"
        ]
    );
    assert!(info.rpath.is_empty());
    assert!(info.needed.contains(&"libstdc++.so.6".to_owned()));
    // Opened at run time, never in DT_NEEDED (`strings` shows the same names; the format
    // string `libnvrtc.so.%d.%d` is not a name).
    assert_eq!(
        info.dlopen_names,
        [
            "libcublas.so.11",
            "libcublasLt.so.11",
            "libcuda.so",
            "libcuda.so.1",
            "libnvrtc.so"
        ]
    );
    assert!(info.needed.iter().all(|n| !info.dlopen_names.contains(n)));
}

#[rstest]
#[case::amd64(DRIVER_AMD64, "ELF64", "x86_64")]
#[case::i386(DRIVER_I386, "ELF32", "i386")]
fn driver_libcuda_class_and_machine(#[case] dir: &str, #[case] class: &str, #[case] machine: &str) {
    let info = read(&format!("{dir}/libcuda.so.1"));
    assert_eq!(
        (info.class.as_str(), info.machine.as_str()),
        (class, machine)
    );
    assert_eq!(info.soname.as_deref(), Some("libcuda.so.1"));
    assert!(info.needed.contains(&"libc.so.6".to_owned()));
    assert!(info.version_needs.iter().any(|n| n.file == "libc.so.6"));
    assert!(info
        .dlopen_names
        .contains(&"libnvidia-ptxjitcompiler.so.1".to_owned()));
}

#[test]
fn cudart12_symbol_versions() {
    let info = read(&format!("{CU12}/cuda_runtime/lib/libcudart.so.12"));
    assert_eq!(info.soname.as_deref(), Some("libcudart.so.12"));
    // The base entry (the soname itself) is left out; the version named like it stays.
    assert_eq!(info.version_defs, ["libcudart.so.12"]);
    let needs = |file: &str| {
        info.version_needs
            .iter()
            .find(|n| n.file == file)
            .map(|n| n.versions.clone())
            .unwrap_or_else(|| panic!("no VERNEED for {file}: {:?}", info.version_needs))
    };
    assert_eq!(
        needs("libc.so.6"),
        [
            "GLIBC_2.14",
            "GLIBC_2.3",
            "GLIBC_2.17",
            "GLIBC_2.3.2",
            "GLIBC_2.3.3",
            "GLIBC_2.2.5"
        ]
    );
    assert_eq!(needs("libdl.so.2"), ["GLIBC_2.3.4", "GLIBC_2.2.5"]);
}

/// Every shared object in the fixture tree reads without error.
#[test]
fn every_fixture_library_reads() {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                walk(&path, out);
            } else if kind.is_file()
                && path
                    .file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.contains(".so"))
            {
                out.push(path);
            }
        }
    }
    let root = fixture(".");
    let mut libs = Vec::new();
    walk(&root, &mut libs);
    assert!(
        libs.len() > 20,
        "only {} libraries under {}",
        libs.len(),
        root.display()
    );
    for lib in libs {
        if let Err(e) = elf::read_path(&lib) {
            panic!("{}: {e}", lib.display());
        }
    }
}
