//! `bench --lock-clocks` on the simulated GPU, whose NVML implements the locked-clocks calls (NVML's
//! TDP clock limit id included) and whose clock model treats a lock as NVML documents it, as the
//! requested clock that the SW power cap reduces "below requested clocks": the run locks at the
//! TDP clock by the GPU's UUID and records the lock as read back; a power cap still pulls the
//! locked clock below the lock and the run says so; the lock is reset after the run, when it is
//! interrupted, and when bench is killed outright; persistence mode off is warned of; and only
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
fn a_power_cap_pulls_a_tdp_lock_below_itself_and_the_run_says_so() {
    if !as_root("a_power_cap_pulls_a_tdp_lock_below_itself_and_the_run_says_so") {
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
    // Locked at the TDP clock, 1590 MHz of the simulated card's 1980: its kernels take
    // 1980/1590 as long as free ones.
    assert!(
        (locked_free / free - 1980.0 / 1590.0).abs() < 0.03,
        "{locked_free} {free}"
    );
    let lock = &report["clocks_locked"][0];
    assert_eq!(lock["index"], 0, "{lock}");
    assert!(
        lock["uuid"].as_str().is_some_and(|u| u.starts_with("GPU-")),
        "addressed by UUID: {lock}"
    );
    assert_eq!(
        (&lock["sm_mhz"], &lock["memory_mhz"], &lock["target"]),
        (&1590.into(), &2619.into(), &"tdp".into()),
        "{lock}"
    );
    assert_eq!(lock["persistence_mode"], true, "{lock}");
    assert!(lock.get("held_below").is_none(), "{lock}");
    // The power cap still takes 15% off the lock, and the run says where and by what.
    let (locked_capped, report) = vector_add("throttle = [\"sw_power_cap\"]", true);
    assert!(
        (locked_capped / locked_free - 1.0 / 0.85).abs() < 0.03,
        "locked: {locked_free} ns free, {locked_capped} ns capped"
    );
    let held = &report["clocks_locked"][0]["held_below"];
    assert_eq!(held["lowest_sm_mhz"], 1351, "{held}");
    assert_eq!(
        held["reasons"],
        serde_json::json!(["SW power cap"]),
        "{held}"
    );
    // A HW reason pulls a locked clock to half the maximum at most: 990 of the lock's 1590.
    let (locked_slowdown, _) = vector_add("throttle = [\"hw_slowdown\"]", true);
    assert!(
        (locked_slowdown / locked_free - 1590.0 / 990.0).abs() < 0.05,
        "{locked_slowdown} {locked_free}"
    );
}

#[test]
fn a_run_with_persistence_mode_off_warns_that_a_lock_can_be_dropped() {
    if !as_root("a_run_with_persistence_mode_off_warns_that_a_lock_can_be_dropped") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let output = on_simulator(dir.path(), &profile("persistence_off = true"), VECTOR_ADD)
        .arg("--results")
        .arg(dir.path())
        .args(["--format", "json", "--lock-clocks"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("persistence mode is off on GPU 0") && stderr.contains("nvidia-smi -pm 1"),
        "{stderr}"
    );
    let report = stdout_json(&output);
    assert_eq!(report["clocks_locked"][0]["persistence_mode"], false);
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
        "locked at SM 1590 MHz (TDP), memory 2619 MHz on GPU 0"
    );
}

#[test]
fn an_interrupted_run_resets_the_clocks_it_locked() {
    if !as_root("an_interrupted_run_resets_the_clocks_it_locked") {
        return;
    }
    let (mut child, dir) = locked_and_measuring();
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

/// Starts bench with `--lock-clocks` on a vector add that never completes, and waits until its
/// lock is held: the run, still measuring, and its directory.
fn locked_and_measuring() -> (std::process::Child, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let mut command = on_simulator(
        dir.path(),
        &profile("kernel_hang = \"vector_add\""),
        VECTOR_ADD,
    );
    command
        .arg("--results")
        .arg(dir.path())
        .args(["--lock-clocks", "--timeout", "600"]);
    let child = std_command(&command)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while locks_held(dir.path()).is_empty() {
        assert!(started.elapsed() < Duration::from_secs(120), "never locked");
        std::thread::sleep(Duration::from_millis(50));
    }
    (child, dir)
}

#[test]
fn a_run_killed_outright_leaves_the_clocks_reset() {
    if !as_root("a_run_killed_outright_leaves_the_clocks_reset") {
        return;
    }
    let (mut child, dir) = locked_and_measuring();
    // SAFETY: kill(2) of our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(libc::SIGKILL), "{status:?}");
    // The holder sees its pipe close and resets: a moment after bench is gone, not at once.
    let killed = Instant::now();
    while !locks_held(dir.path()).is_empty() {
        assert!(
            killed.elapsed() < Duration::from_secs(60),
            "the lock outlived bench killed with SIGKILL: {}",
            locks_held(dir.path())
        );
        std::thread::sleep(Duration::from_millis(50));
    }
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
