//! No worker outlives its run: a `check` cut off while a kernel hangs (by `timeout`'s SIGTERM,
//! as a CI job or a Slurm time limit ends it, or killed outright) leaves no stackbench process
//! behind, and, unless killed outright, no directory of its own in TMPDIR. Without it, a worker on a real GPU goes on holding its context, and the next run
//! finds the GPU busy.

// Tests read the files they make and the checkout's own: std's readers are theirs (clippy.toml).
#![allow(clippy::disallowed_methods)]

mod common;

use common::on_simulator;
use rstest::rstest;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// The processes whose environment names `profile` as the simulator's: this run's and its
/// workers', wherever they were reparented.
fn processes_of(profile: &Path) -> Vec<u32> {
    let wanted = format!("STACKBENCH_SIM_PROFILE={}", profile.display());
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|environ| {
                environ
                    .split(|b| *b == 0)
                    .any(|var| var == wanted.as_bytes())
            })
        })
        .collect()
}

/// Waits up to `limit` for `done`, checking every 50 ms.
fn wait_for(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let started = Instant::now();
    while started.elapsed() < limit {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    done()
}

/// `check` on the simulated GPU whose vector add hangs, started with every signal that ends a
/// run at its default action, as a run in a terminal is. A suite run as a background job of a
/// script (`ci/test > log &`) hands every process SIGINT ignored (POSIX, for asynchronous
/// lists), and a run keeps a signal it was started ignoring ignored (`nohup`): the SIGINT cases
/// then ran to the --timeout and failed, on a busy machine or not.
fn hung_check(dir: &Path) -> std::process::Child {
    let command = on_simulator(
        dir,
        "[faults]\nkernel_hang = \"vector_add\"\n",
        &["check", "--timeout", "600"],
    );
    let mut run = std::process::Command::new(command.get_program());
    run.args(command.get_args())
        .env_clear()
        .envs(command.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: signal(2) between fork and exec, async-signal-safe.
    unsafe {
        run.pre_exec(|| {
            for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
                libc::signal(signal, libc::SIG_DFL);
            }
            Ok(())
        });
    }
    run.spawn().unwrap()
}

/// A signal at any moment of a run ends it within seconds, as the signal would: before its
/// handlers are in place, while its workers are set up, in the hung kernel. The sweep sends
/// SIGINT, SIGTERM and SIGHUP in turn at delays from 0 to 3 s after the start. Mutation: a run
/// keeping SIGINT ignored (as a background job's was) ends at its --timeout, not in 20 s.
#[test]
fn a_signal_at_any_moment_of_a_check_ends_it_within_seconds() {
    let signals = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];
    for (at, delay_ms) in [0u64, 10, 30, 60, 120, 250, 500, 1000, 2000, 3000]
        .into_iter()
        .enumerate()
    {
        let signal = signals[at % signals.len()];
        let dir = tempfile::tempdir().unwrap();
        let profile = dir.path().join("profile.toml");
        let mut check = hung_check(dir.path());
        std::thread::sleep(Duration::from_millis(delay_ms));
        // SAFETY: kill(2) of our own child.
        unsafe { libc::kill(check.id() as i32, signal) };
        let sent = Instant::now();
        let ended = wait_for(Duration::from_secs(20), || {
            check.try_wait().is_ok_and(|s| s.is_some())
        });
        if !ended {
            let _ = check.kill();
        }
        let status = check.wait().unwrap();
        let left = processes_of(&profile);
        for pid in &left {
            // SAFETY: kill(2) of a process this test started; nothing may be left for the next.
            unsafe { libc::kill(*pid as i32, libc::SIGKILL) };
        }
        assert!(
            ended,
            "signal {signal} at {delay_ms} ms: still running {:?} after it",
            sent.elapsed()
        );
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(signal),
            "signal {signal} at {delay_ms} ms: {status:?}"
        );
        assert!(
            wait_for(Duration::from_secs(10), || processes_of(&profile)
                .is_empty()),
            "signal {signal} at {delay_ms} ms: left running: {left:?}"
        );
    }
}

#[rstest]
#[case::sigterm(libc::SIGTERM)]
#[case::sigint(libc::SIGINT)]
#[case::sigkill(libc::SIGKILL)]
fn a_check_cut_off_while_a_kernel_hangs_leaves_no_worker(#[case] signal: libc::c_int) {
    let dir = tempfile::tempdir().unwrap();
    let profile = dir.path().join("profile.toml");
    let mut check = hung_check(dir.path());
    // Until a worker runs (the parent alone is one process of the profile).
    assert!(
        wait_for(Duration::from_secs(120), || processes_of(&profile).len()
            >= 2),
        "no worker started"
    );
    // Into the hung launch: the worker is busy, not between checks.
    std::thread::sleep(Duration::from_secs(3));
    // SAFETY: kill(2) of our own child.
    unsafe { libc::kill(check.id() as i32, signal) };
    let status = check.wait().unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(signal),
        "{status:?}"
    );
    let gone = wait_for(Duration::from_secs(10), || {
        processes_of(&profile).is_empty()
    });
    let left = processes_of(&profile);
    for pid in &left {
        // SAFETY: kill(2) of a process this test started; nothing may be left for the next.
        unsafe { libc::kill(*pid as i32, libc::SIGKILL) };
    }
    assert!(gone, "left running after the run ended: {left:?}");
    if signal != libc::SIGKILL {
        // A run killed outright cannot clean up; one a signal ends removes its directories.
        common::assert_nothing_left(&dir.path().join("tmp"));
    }
}

/// What a worker started dies with the run too: a library whose constructor starts a child and
/// then hangs, in a `doctor` ended by SIGTERM. Its worker would die with its parent by itself;
/// the child it started would not, had the run not ended its workers' descendants first.
#[test]
fn a_doctor_ended_while_a_library_hangs_leaves_nothing_the_library_started() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let lib = dir.path().join("lib");
    std::fs::create_dir(&lib).unwrap();
    std::fs::copy(common::real_cudart(), lib.join("libcudart.so.12")).unwrap();
    common::build_library(
        &lib,
        "libcupti.so.12",
        "libcupti.so.12",
        r#"#include <unistd.h>
__attribute__((constructor)) static void start_and_hang(void) {
    if (fork() == 0) { execl("/bin/sleep", "sleep", "1000", (char *)0); _exit(1); }
    sleep(1000);
}
int cuptiGetVersion(unsigned *version) { *version = 26; return 0; }
"#,
    );
    let marker = dir.path().join("marker");
    let home = tempfile::tempdir().unwrap();
    let mut doctor = std::process::Command::new(common::stackbench_bin())
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", home.path())
        .env("STACKBENCH_SIM_PROFILE", &marker)
        .args(["doctor", "--no-system", "--root"])
        .arg(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Until the library's child runs beside the doctor and its worker.
    assert!(
        wait_for(Duration::from_secs(60), || {
            processes_of(&marker).len() >= 3
        }),
        "the library's child never started"
    );
    // SAFETY: kill(2) of our own child.
    unsafe { libc::kill(doctor.id() as i32, libc::SIGTERM) };
    doctor.wait().unwrap();
    let gone = wait_for(Duration::from_secs(10), || processes_of(&marker).is_empty());
    let left = processes_of(&marker);
    for pid in &left {
        // SAFETY: kill(2) of a process this test started.
        unsafe { libc::kill(*pid as i32, libc::SIGKILL) };
    }
    assert!(gone, "left running after the run ended: {left:?}");
}
