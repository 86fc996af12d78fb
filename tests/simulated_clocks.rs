//! `bench --lock-clocks` on the simulated GPU, whose NVML implements the locked-clocks calls and
//! whose clock model honours a lock (the SW reasons no longer hold the clock back; a HW reason
//! still pulls it below): a SW throttle moves an unlocked run's vector add and not a locked
//! run's, the run records the lock and resets it after, also when it is interrupted, and only
//! root may lock. These lock clocks, which NVML lets only root do: run as an ordinary user, the
//! locking tests say they are skipped and why (CI runs as root); the refusal is tested either way.

// Tests read the files they make and the checkout's own: std's readers are theirs (clippy.toml).
#![allow(clippy::disallowed_methods)]

mod common;

use common::{bench_row, on_simulator, stdout_json};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::time::{Duration, Instant};

/// The vector add alone, one repetition.
const VECTOR_ADD: &[&str] = &[
    "bench",
    "--quick",
    "--allow-skip",
    "--repeat",
    "1",
    "--filter",
    "vector_add/",
];

/// A seeded device (every draw pinned: figures repeat exactly) with `faults`.
fn profile(faults: &str) -> String {
    format!("[[device]]\nseed = 11\nboot_sigma = 0.0\nrun_sigma = 0.0\n\n[faults]\n{faults}\n")
}

fn as_root(test: &str) -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        eprintln!("skipped: {test}: needs root (NVML lets only root lock clocks); CI runs as root");
    }
    root
}

/// `command` as a std `Command`, to spawn or run as another user: its program, arguments,
/// working directory and environment (which [`on_simulator`] builds from nothing).
fn std_command(command: &assert_cmd::Command) -> std::process::Command {
    let mut std = std::process::Command::new(command.get_program());
    std.args(command.get_args()).env_clear();
    for (name, value) in command.get_envs() {
        if let Some(value) = value {
            std.env(name, value);
        }
    }
    if let Some(dir) = command.get_current_dir() {
        std.current_dir(dir);
    }
    std
}

/// The lock lines the simulated driver holds for `dir`'s profile (empty: no lock).
fn locks_held(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("profile.toml.locked-clocks-boot0")).unwrap_or_default()
}

/// A run of the vector add with `faults`, locked or not: its median time, ns, and the report.
fn vector_add(faults: &str, locked: bool) -> (f64, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let mut command = on_simulator(dir.path(), &profile(faults), VECTOR_ADD);
    command
        .arg("--results")
        .arg(dir.path())
        .args(["--format", "json"]);
    if locked {
        command.arg("--lock-clocks");
    }
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_eq!(locks_held(dir.path()), "", "the lock outlived the run");
    let report = stdout_json(&output);
    let median = bench_row(&report, "vector_add")["summary"]["median_ns"]
        .as_f64()
        .expect("a median");
    (median, report)
}

#[test]
fn a_sw_throttle_moves_an_unlocked_run_and_not_a_locked_one() {
    if !as_root("a_sw_throttle_moves_an_unlocked_run_and_not_a_locked_one") {
        return;
    }
    let (free, _) = vector_add("", false);
    let (capped, _) = vector_add("throttle = [\"sw_power_cap\"]", false);
    // SW power cap takes 15% off the SM clock: the kernel takes 1/0.85 as long.
    assert!(
        (capped / free - 1.0 / 0.85).abs() < 0.03,
        "unlocked: {free} ns free, {capped} ns capped"
    );
    let (locked_free, report) = vector_add("", true);
    let (locked_capped, _) = vector_add("throttle = [\"sw_power_cap\"]", true);
    assert!(
        (locked_capped / locked_free - 1.0).abs() < 0.01,
        "locked: {locked_free} ns free, {locked_capped} ns capped"
    );
    // Locked at the default applications clock, the simulated card's maximum: as fast as free.
    assert!(
        (locked_free / free - 1.0).abs() < 0.01,
        "{locked_free} {free}"
    );
    assert_eq!(
        report["clocks_locked"],
        serde_json::json!([{"index": 0, "sm_mhz": 1980, "memory_mhz": 2619}])
    );
    // A HW reason still pulls a locked clock below its lock: half of it.
    let (locked_slowdown, _) = vector_add("throttle = [\"hw_slowdown\"]", true);
    assert!(
        (locked_slowdown / locked_free - 2.0).abs() < 0.1,
        "{locked_slowdown} {locked_free}"
    );
}

#[test]
fn compare_tells_a_locked_run_from_an_unlocked_one() {
    if !as_root("compare_tells_a_locked_run_from_an_unlocked_one") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (_, free) = vector_add("", false);
    let (_, locked) = vector_add("", true);
    let (old, new) = (dir.path().join("free.json"), dir.path().join("locked.json"));
    std::fs::write(&old, free.to_string()).unwrap();
    std::fs::write(&new, locked.to_string()).unwrap();
    let output = common::compare_json(&old, &new, &[]);
    let report = stdout_json(&output);
    let clocks: Vec<&serde_json::Value> = report["environment"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["what"] == "clocks")
        .collect();
    assert_eq!(clocks.len(), 1, "{report:#}");
    assert_eq!(clocks[0]["old"], "not locked");
    assert_eq!(
        clocks[0]["new"],
        "locked at SM 1980 MHz, memory 2619 MHz on GPU 0"
    );
}

#[test]
fn an_interrupted_run_resets_the_clocks_it_locked() {
    if !as_root("an_interrupted_run_resets_the_clocks_it_locked") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // The vector add never completes, so the run is still measuring when it is interrupted.
    let mut command = on_simulator(
        dir.path(),
        &profile("kernel_hang = \"vector_add\""),
        VECTOR_ADD,
    );
    command
        .arg("--results")
        .arg(dir.path())
        .args(["--lock-clocks", "--timeout", "600"]);
    let mut child = std_command(&command)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while locks_held(dir.path()).is_empty() {
        assert!(started.elapsed() < Duration::from_secs(120), "never locked");
        std::thread::sleep(Duration::from_millis(50));
    }
    // SAFETY: kill(2) of our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(libc::SIGTERM), "{status:?}");
    assert_eq!(
        locks_held(dir.path()),
        "",
        "the lock outlived the interrupted run"
    );
}

#[test]
fn only_root_may_lock_clocks() {
    let dir = tempfile::tempdir().unwrap();
    let mut command = std_command(&on_simulator(dir.path(), &profile(""), VECTOR_ADD));
    command
        .arg("--results")
        .arg(dir.path())
        .arg("--lock-clocks");
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        // As an ordinary user, where root runs the tests; the directory must be theirs.
        std::os::unix::fs::chown(dir.path(), Some(4242), Some(4242)).unwrap();
        std::fs::set_permissions(
            dir.path(),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
        command.uid(4242).gid(4242).env("HOME", dir.path());
    }
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--lock-clocks needs root"), "{stderr}");
    assert_eq!(locks_held(dir.path()), "");
}
