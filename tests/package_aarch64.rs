//! The aarch64 package (`ci/package aarch64`, which `ci/test` runs) for Grace nodes, run here
//! under Debian's qemu-user (`qemu-user-static`) with the aarch64 C library as its loader's
//! prefix (`libc6-arm64-cross`, `libstdc++6-arm64-cross`): it says it is aarch64 and needs
//! glibc 2.28; doctor on the real aarch64 CUDA wheels is healthy, and on an x86_64 venv names
//! `foreign_architecture`. Where binfmt_misc starts aarch64 binaries through qemu
//! (`ci/binfmt-aarch64`), its workers start and load the wheels; where it does not, a worker
//! that cannot start is an error on every library, never "no errors". Missing packages fail the
//! tests, saying what to install.
#![cfg(target_arch = "x86_64")]
// Tests read the files they make: std's readers are theirs (clippy.toml).
#![allow(clippy::disallowed_methods)]

mod common;

use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const RELEASE: &str = env!("CARGO_PKG_VERSION");
/// The aarch64 C library's root, qemu's `-L` (`QEMU_LD_PREFIX`).
const PREFIX: &str = "/usr/aarch64-linux-gnu";
const QEMU: &str = "/usr/bin/qemu-aarch64-static";

/// The aarch64 tarball's binary, unpacked into `dir`.
fn packaged_binary(dir: &Path) -> PathBuf {
    let name = format!("stackbench-{RELEASE}-aarch64-unknown-linux-gnu");
    let tarball = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target/dist")
        .join(format!("{name}.tar.gz"));
    assert!(
        tarball.is_file(),
        "{} is missing: run ci/package aarch64 (ci/test does)",
        tarball.display()
    );
    for needed in [QEMU, &format!("{PREFIX}/lib/ld-linux-aarch64.so.1")] {
        assert!(
            Path::new(needed).exists(),
            "{needed} is missing: apt-get install qemu-user-static libc6-arm64-cross libstdc++6-arm64-cross (ci/test does)"
        );
    }
    let status = Command::new("tar")
        .arg("-xzf")
        .arg(&tarball)
        .arg("-C")
        .arg(dir)
        .status()
        .expect("tar runs");
    assert!(status.success());
    dir.join(name).join("stackbench")
}

/// Whether the kernel starts aarch64 binaries through qemu (`ci/binfmt-aarch64`).
fn binfmt() -> bool {
    std::fs::read_to_string("/proc/sys/fs/binfmt_misc/qemu-aarch64")
        .is_ok_and(|entry| entry.starts_with("enabled"))
}

/// `binary ARGS` under qemu, with nothing of this host's environment but a PATH and a HOME:
/// through binfmt_misc where it is registered (its workers then start the same way), else
/// through qemu directly.
fn under_qemu(binary: &Path, home: &Path, args: &[&str]) -> Output {
    let mut command = if binfmt() {
        Command::new(binary)
    } else {
        let mut qemu = Command::new(QEMU);
        qemu.args(["-L", PREFIX]).arg(binary);
        qemu
    };
    command
        .args(args)
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", home)
        .env("QEMU_LD_PREFIX", PREFIX)
        .output()
        .expect("qemu runs")
}

fn json(output: &Output) -> Value {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {stderr}"))
}

fn causes(report: &Value, severity: &str) -> Vec<String> {
    (report["findings"].as_array().into_iter().flatten())
        .filter(|f| f["severity"] == severity)
        .map(|f| f["cause"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn the_aarch64_package_says_aarch64_and_glibc_2_28() {
    let dir = tempfile::tempdir().unwrap();
    let binary = packaged_binary(dir.path());
    let output = under_qemu(&binary, dir.path(), &["--version"]);
    assert!(output.status.success(), "{output:?}");
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.contains("\ntarget: aarch64-unknown-linux-gnu\n"),
        "{text}"
    );
    assert!(text.contains("\nglibc: 2.28 or newer"), "{text}");
}

#[test]
fn doctor_on_the_aarch64_wheels_under_qemu_is_healthy_where_its_workers_start() {
    let dir = tempfile::tempdir().unwrap();
    let binary = packaged_binary(dir.path());
    let venv = build_fixtures().join("venv-aarch64-cu12/lib/python3.11/site-packages");
    let root = venv.to_str().unwrap();
    let args = ["doctor", "--no-system", "--root", root, "--format", "json"];
    // Read without loading, the venv is what an aarch64 host wants: no error.
    let mut read_only = args.to_vec();
    read_only.push("--no-load");
    let output = under_qemu(&binary, dir.path(), &read_only);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let report = json(&output);
    assert_eq!(causes(&report, "error"), Vec::<String>::new(), "{report:#}");
    let output = under_qemu(&binary, dir.path(), &args);
    let report = json(&output);
    let loads: Vec<&Value> = (report["probes"].as_array().into_iter().flatten())
        .flat_map(|p| p["loads"].as_array().into_iter().flatten())
        .collect();
    assert_eq!(loads.len(), 3, "{report:#}");
    if binfmt() {
        assert_eq!(output.status.code(), Some(0), "{report:#}");
        for load in &loads {
            assert_eq!(load["outcome"]["kind"], "loaded", "{load:#}");
        }
        let cudart = (loads.iter())
            .find(|l| l["path"].as_str().unwrap().ends_with("libcudart.so.12"))
            .expect("libcudart.so.12 was loaded");
        let version = (cudart["api"].as_array().into_iter().flatten())
            .find(|call| call["function"] == "cudaRuntimeGetVersion")
            .expect("cudaRuntimeGetVersion was asked");
        assert_eq!(version["value"], 12090, "{cudart:#}");
    } else {
        // The kernel cannot start the workers' aarch64 binary: an error on each library.
        assert_eq!(output.status.code(), Some(1), "{report:#}");
        assert_eq!(causes(&report, "error"), ["load_failed"; 3], "{report:#}");
    }
}

#[test]
fn doctor_on_an_x86_64_venv_under_qemu_names_foreign_architecture() {
    let dir = tempfile::tempdir().unwrap();
    let binary = packaged_binary(dir.path());
    let venv = fixture(VENV_NCCL_CU13);
    let root = venv.to_str().unwrap();
    let output = under_qemu(
        &binary,
        dir.path(),
        &["doctor", "--no-system", "--root", root, "--format", "json"],
    );
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let report = json(&output);
    let found = findings_of(&report, "foreign_architecture");
    let [f] = found.as_slice() else {
        panic!("{report:#}")
    };
    let message = f["message"].as_str().unwrap();
    assert!(
        message.starts_with("its 2 libraries are built for x86_64 and this host is aarch64"),
        "{message}"
    );
    assert!(
        f["fix"].as_str().unwrap().contains("the aarch64 wheels"),
        "{f:#}"
    );
    // Nothing of it was loaded, and each library says why.
    let skipped: Vec<&Value> = (report["probes"].as_array().into_iter().flatten())
        .flat_map(|p| p["skipped"].as_array().into_iter().flatten())
        .collect();
    assert_eq!(skipped.len(), 2, "{report:#}");
    assert!(skipped.iter().all(|s| s["reason"]["machine"] == "x86_64"));
}
