//! Child processes stackbench starts: a helper run with a deadline (its standard output, or
//! nothing if it fails or hangs), and the worker processes of `doctor` and `check` (a request on
//! stdin, one JSON event per line on stdout, stderr collected), each in its own process group so
//! that whatever a vendor library forks dies with it.

use serde::de::DeserializeOwned;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex};
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
    let status = exit_within(&mut child, timeout);
    let out = reader.join().ok()?;
    status.filter(|s| s.success()).map(|_| out)
}

/// A child's piped standard output and error, each a reader a thread can own.
pub fn output_streams(child: &mut Child) -> Vec<Box<dyn Read + Send>> {
    let out = (child.stdout.take()).map(|s| Box::new(s) as Box<dyn Read + Send>);
    let err = (child.stderr.take()).map(|s| Box::new(s) as Box<dyn Read + Send>);
    out.into_iter().chain(err).collect()
}

/// Waits up to `timeout` for a child started with `process_group(0)` to exit; one that runs
/// longer is killed with its process group and reaped, and gives `None`.
pub fn exit_within(child: &mut Child, timeout: Duration) -> Option<ExitStatus> {
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) if started.elapsed() < timeout => std::thread::sleep(Duration::from_millis(5)),
            _ => {
                kill_group(child);
                let _ = child.wait();
                return None;
            }
        }
    }
}

/// A worker process: its events as they come, and its standard error.
pub struct Worker<E> {
    pub child: Child,
    /// One event per line of its standard output; lines that are not an `E` are dropped.
    pub events: Receiver<E>,
    pub errors: Collected,
}

/// Starts `command` (its arguments and environment already given) with piped standard streams,
/// in its own process group, and writes `input` to its standard input.
pub fn start_worker<E: DeserializeOwned + Send + 'static>(
    command: Command,
    input: Vec<u8>,
) -> std::io::Result<Worker<E>> {
    let (worker, mut stdin) = start_conversation(command)?;
    // A worker that dies before reading its request makes this fail; its exit says why.
    std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    Ok(worker)
}

/// Starts `command` as [`start_worker`] does, but hands back its standard input for a
/// conversation: a line written, an event read, for as long as the worker lives.
pub fn start_conversation<E: DeserializeOwned + Send + 'static>(
    mut command: Command,
) -> std::io::Result<(Worker<E>, ChildStdin)> {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()?;
    // The pipes were all requested above, so each is there.
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        kill_group(&mut child);
        let _ = child.wait();
        return Err(std::io::Error::other("its pipes could not be set up"));
    };
    let errors = Collected::start(stderr);
    let (tx, events) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Ok(event) = serde_json::from_str::<E>(&line) {
                if tx.send(event).is_err() {
                    break;
                }
            }
        }
    });
    Ok((
        Worker {
            child,
            events,
            errors,
        },
        stdin,
    ))
}

/// The worker's standard error, read on a thread as it comes.
pub struct Collected {
    bytes: Arc<Mutex<Vec<u8>>>,
    done: Receiver<()>,
}

impl Collected {
    pub fn start(mut source: impl Read + Send + 'static) -> Collected {
        let bytes = Arc::new(Mutex::new(Vec::new()));
        let (tx, done) = mpsc::channel();
        let sink = Arc::clone(&bytes);
        std::thread::spawn(move || {
            let mut chunk = [0u8; 16384];
            loop {
                match source.read(&mut chunk) {
                    Ok(0) => break,
                    Ok(n) => sink
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .extend_from_slice(&chunk[..n]),
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
            let _ = tx.send(());
        });
        Collected { bytes, done }
    }

    /// Everything read, once the writer is gone (or after a short grace if something else, a
    /// grandchild, still holds the pipe open).
    pub fn finish(self) -> String {
        let _ = self.done.recv_timeout(Duration::from_secs(2));
        let bytes = self.bytes.lock().unwrap_or_else(|e| e.into_inner());
        String::from_utf8_lossy(&bytes).into_owned()
    }
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

/// Whether process `pid` is `ancestor` or one of its descendants (by `/proc/PID/stat`'s parent
/// pids); a process that has gone, or never was on this host, is not.
pub fn descends_from(pid: u32, ancestor: u32) -> bool {
    let mut at = pid;
    for _ in 0..256 {
        if at == ancestor {
            return true;
        }
        match parent(at) {
            Some(up) if up != 0 && up != at => at = up,
            _ => return false,
        }
    }
    false
}

/// The parent pid in `/proc/PID/stat` (the field after the state, after the name's `)`).
fn parent(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// Kills every process that descends from this one (its workers, whatever they started),
/// as a run that is ending on a signal must: none may outlive it holding a GPU.
///
/// All are stopped before any is killed: a worker killed first would hand its children to init
/// before the scan reached them, and they would no longer look like ours. A stopped process
/// cannot fork, so the scans end once one finds nothing new.
pub fn kill_descendants() {
    let me = std::process::id();
    let mut stopped = std::collections::BTreeSet::new();
    for _ in 0..64 {
        let found: Vec<i32> = descendants(me)
            .into_iter()
            .filter(|pid| !stopped.contains(pid))
            .collect();
        if found.is_empty() {
            break;
        }
        for pid in found {
            // SAFETY: kill(2) touches no memory.
            unsafe { libc::kill(pid, libc::SIGSTOP) };
            stopped.insert(pid);
        }
    }
    for pid in stopped {
        // SAFETY: kill(2) touches no memory; SIGKILL ends a stopped process too.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
}

/// The processes that descend from `ancestor`, itself left out.
fn descendants(ancestor: u32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| *pid != ancestor && descends_from(*pid, ancestor))
        .filter_map(|pid| i32::try_from(pid).ok())
        .collect()
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
        // Well short of the 30 s sleep, on a machine as busy as it may be.
        assert!(started.elapsed() < Duration::from_secs(20));
        let mut fail = Command::new("sh");
        fail.args(["-c", "exit 3"]);
        assert_eq!(output_within(fail, Duration::from_secs(5)), None);
    }

    #[test]
    fn stackbench_s_own_processes_are_its_own() {
        let me = std::process::id();
        assert!(descends_from(me, me));
        let child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let mut child = child;
        assert!(descends_from(child.id(), me));
        assert!(!descends_from(1, me));
        assert!(!descends_from(u32::MAX - 7, me));
        child.kill().unwrap();
        child.wait().unwrap();
    }
}
