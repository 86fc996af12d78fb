//! The simulated host reads its profile once per process, so each NVML test that needs a profile
//! of its own runs in a fresh process: this test binary again, filtered to that one test, with
//! `STACKBENCH_SIM_PROFILE` naming the profile (or unset, for the default one host). Nothing is
//! timed, so machine load cannot change an outcome.

use std::path::PathBuf;
use std::process::Command;

/// Set in the child to `test/case`: the one case it runs.
const CHILD: &str = "SIMGPU_NVML_CHILD";

/// The profile a child process reads.
#[allow(dead_code)] // each test binary uses part of this module
pub enum Profile<'a> {
    /// No `STACKBENCH_SIM_PROFILE`: one H100-like device without faults.
    Default,
    /// This TOML text, written to a file.
    Toml(&'a str),
    /// A path where no file is.
    Missing,
}

/// Runs `body` in a fresh process whose profile is `profile`. In the parent, returns the child's output after checking that it ran `test` alone
/// and passed; in the child, runs `body` if this is the case it was started for, and returns
/// `None`. `test` is the test function's name, `case` tells apart several calls in one test.
#[allow(dead_code)] // each test binary uses part of this module
pub fn with_profile(
    test: &str,
    case: &str,
    profile: Profile,
    body: impl FnOnce(),
) -> Option<String> {
    let which = format!("{test}/{case}");
    if let Ok(running) = std::env::var(CHILD) {
        if running == which {
            body();
        }
        return None;
    }
    let mut command = Command::new(std::env::current_exe().expect("the test binary"));
    command
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, &which)
        .env_remove("RUST_TEST_THREADS");
    match profile {
        Profile::Default => command.env_remove("STACKBENCH_SIM_PROFILE"),
        Profile::Toml(text) => command.env("STACKBENCH_SIM_PROFILE", profile_file(&which, text)),
        Profile::Missing => command.env(
            "STACKBENCH_SIM_PROFILE",
            scratch().join("no-such-profile.toml"),
        ),
    };
    let out = command.output().expect("the test binary runs again");
    let output = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "{which} failed in its own process:\n{output}"
    );
    assert!(
        output.contains("test result: ok. 1 passed"),
        "{which} did not run in its own process:\n{output}"
    );
    Some(output)
}

/// A profile written where cargo keeps integration tests' scratch files.
fn profile_file(which: &str, text: &str) -> PathBuf {
    let dir = scratch();
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    let name: String = which
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let path = dir.join(format!("{name}-{}.toml", std::process::id()));
    std::fs::write(&path, text).expect("the profile is written");
    path
}

/// Where the profiles are written.
fn scratch() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("simgpu-nvml-profiles")
}
