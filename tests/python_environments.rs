//! A host whose only CUDA libraries are wheels in a venv kept where GPU hosts keep them,
//! `/opt/<name>/.venv`, eight directories above the runtime library: the system scan (no
//! `--root`) finds it by its `pyvenv.cfg`, and `check` forms a combination from it.
//!
//! The host is a temporary directory the scan treats as `/` (`--sysroot`, `Host::sysroot`),
//! holding that venv and nothing else; its wheel is the real `nvidia-cuda-runtime-cu12` 12.9.79
//! of the fixtures, copied: its `libcudart.so.12` and its `dist-info`. And where no CUDA runtime
//! is found, `check` and `bench` say so on their first line, with what to do.

// Tests read the files they make and the checkout's own: std's readers are theirs (clippy.toml).
#![allow(clippy::disallowed_methods)]

mod common;

use common::*;
use stackbench::check::protocol::Component;
use stackbench::check::Selection;
use stackbench::discover::{Host, Options};
use std::path::{Path, PathBuf};

/// The venv's site-packages, below the root.
const SITE: &str = "opt/torch/.venv/lib/python3.12/site-packages";
const WHEEL: &str = "nvidia_cuda_runtime_cu12-12.9.79.dist-info";

/// A root holding `/opt/torch/.venv` with the CUDA 12 runtime wheel in it, and nothing else.
fn host_with_a_venv_under_opt() -> tempfile::TempDir {
    let root = tempfile::tempdir().expect("temporary root");
    let site = root.path().join(SITE);
    let lib = site.join("nvidia/cuda_runtime/lib");
    std::fs::create_dir_all(&lib).unwrap();
    std::fs::create_dir_all(site.join(WHEEL)).unwrap();
    std::fs::copy(real_cudart(), lib.join("libcudart.so.12")).unwrap();
    for file in ["METADATA", "RECORD"] {
        let from = fixture(&format!("{VENV_CU12}/{WHEEL}/{file}"));
        std::fs::copy(from, site.join(WHEEL).join(file)).unwrap();
    }
    std::fs::write(
        root.path().join("opt/torch/.venv/pyvenv.cfg"),
        "home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.12.3\n",
    )
    .unwrap();
    root
}

fn system() -> Options {
    Options {
        roots: Vec::new(),
        system: true,
    }
}

#[test]
fn the_system_scan_lists_a_venv_kept_under_opt() {
    let root = host_with_a_venv_under_opt();
    let output = run_stackbench(&[
        "scan",
        "--sysroot",
        root.path().to_str().unwrap(),
        "--format",
        "json",
    ]);
    let report = stdout_json(&output);
    assert_eq!(output.status.code(), Some(0), "{report}");
    let site = root.path().canonicalize().unwrap().join(SITE);
    let installations = report["installations"].as_array().unwrap();
    assert_eq!(installations.len(), 1, "{installations:#?}");
    let venv = &installations[0];
    assert_eq!(venv["root"], site.to_str().unwrap());
    assert_eq!(venv["layout"], "pip");
    assert!(
        strings(&venv["sources"]).contains(&"python".to_owned()),
        "{venv}"
    );
    assert_eq!(venv["cuda_version"], "12.9", "{venv}");
    let searched: Vec<&str> = report["searched"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["path"].as_str())
        .collect();
    assert!(
        searched
            .iter()
            .all(|p| Path::new(p).starts_with(root.path().canonicalize().unwrap())),
        "a place outside the root was searched: {searched:?}"
    );
}

#[test]
fn a_sysroot_that_is_not_a_directory_is_refused_with_what_to_do() {
    let output = run_stackbench(&["scan", "--sysroot", "/nonexistent/root"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.starts_with("error: --sysroot /nonexistent/root: ")
            && stderr.contains("give the directory that stands for /"),
        "{stderr}"
    );
}

#[test]
fn check_forms_a_combination_from_it() {
    let root = host_with_a_venv_under_opt();
    let host = Host {
        sysroot: root.path().to_path_buf(),
        ..Host::default()
    };
    let selected = Selection::of(system())
        .resolve(&host, &stackbench_bin())
        .expect("a combination");
    let names: Vec<&str> = selected
        .combinations
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(names, ["pip:torch"]);
    let cudart: Vec<&PathBuf> = selected.combinations[0]
        .components
        .iter()
        .filter(|c| c.component == Component::Cudart)
        .map(|c| &c.path)
        .collect();
    assert_eq!(
        cudart,
        [&root
            .path()
            .join(SITE)
            .join("nvidia/cuda_runtime/lib/libcudart.so.12")]
    );
}

/// `check` and `bench` (which stops before it writes any result) on a root with nothing in it.
#[rstest::rstest]
#[case::check("check")]
#[case::bench("bench")]
fn without_a_cuda_runtime_the_first_line_says_so_and_what_to_do(#[case] command: &str) {
    let empty = tempfile::tempdir().unwrap();
    let empty = empty.path().to_str().unwrap();
    let output = run_stackbench(&[command, "--no-system", "--root", empty]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    let first = stderr.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("error: no CUDA runtime found") && first.contains("--root DIR"),
        "{stderr}"
    );
}
