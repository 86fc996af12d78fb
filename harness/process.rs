//! Running a helper process with a deadline: its standard output, or nothing if it fails or hangs.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Runs `command` and returns its standard output if it exits successfully within `timeout`;
/// a process that runs longer is killed with everything it started (its process group), so a
/// grandchild holding the pipe open cannot keep us waiting.
pub fn output_within(mut command: Command, timeout: Duration) -> Option<String> {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .ok()?;
    let mut stdout = child.stdout.take()?;
    let reader = std::thread::spawn(move || {
        let mut out = String::new();
        let _ = stdout.read_to_string(&mut out);
        out
    });
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if started.elapsed() < timeout => std::thread::sleep(Duration::from_millis(5)),
            _ => {
                kill_group(&mut child);
                let _ = child.wait();
                break None;
            }
        }
    };
    let out = reader.join().ok()?;
    status.filter(|s| s.success()).map(|_| out)
}

/// Kills a child started with `process_group(0)` and everything in its process group.
/// Call it before reaping the child: until then its pid (the group's id) cannot be reused.
pub fn kill_group(child: &mut Child) {
    if let Ok(group) = i32::try_from(child.id()) {
        // SAFETY: kill(2) with a negative pid signals that process group; no memory is touched.
        unsafe { libc::kill(-group, libc::SIGKILL) };
    }
    let _ = child.kill();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn returns_output_and_kills_hangs() {
        let mut echo = Command::new("sh");
        echo.args(["-c", "echo hi"]);
        assert_eq!(
            output_within(echo, Duration::from_secs(5)).as_deref(),
            Some("hi\n")
        );
        let mut hang = Command::new("sh");
        hang.args(["-c", "sleep 30"]);
        let started = Instant::now();
        assert_eq!(output_within(hang, Duration::from_millis(200)), None);
        assert!(started.elapsed() < Duration::from_secs(5));
        let mut fail = Command::new("sh");
        fail.args(["-c", "exit 3"]);
        assert_eq!(output_within(fail, Duration::from_secs(5)), None);
    }
}
