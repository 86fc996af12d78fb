//! Every child stackbench starts goes through [`spawn`]: helpers run with a deadline (their
//! standard output, or nothing if they fail or hang), and the worker processes of `doctor`,
//! `check` and `bench` (a request on stdin, one JSON event per line on stdout, stderr collected).
//! A child is other users' code as often as ours (a vendor library's constructor, a user's
//! compiler), so each one gets a session of its own (no controlling terminal: nothing it does
//! reaches the terminal of whoever ran us), dies when the thread that started it does
//! (`PR_SET_PDEATHSIG`, set after any change of user and checked against our pid), writes at
//! most a bounded amount we keep, and is killed with everything it started, setsid'd
//! descendants included; none starts once the run is ending. One that runs code not ours gets
//! a PID namespace of its own where the kernel allows ([`crate::contain`]), so that what it
//! started ends with it even when stackbench is killed outright.

use crate::trust::identity::Identity;
use serde::de::DeserializeOwned;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The most of a helper's standard output kept, or of a worker's standard error.
pub const OUTPUT_LIMIT: u64 = 16 << 20;
/// The longest line of events a worker may write; a longer one ends its events.
const EVENT_LINE_LIMIT: u64 = 16 << 20;
/// The most a worker may write as events in all; past it, its events end.
const EVENTS_LIMIT: u64 = 1 << 30;
/// The most events waiting to be read: our workers send a few per library or check, so only a
/// library writing events of its own outruns this; past it, events are dropped and counted.
pub const EVENTS_WAITING: usize = 4096;

/// Set once the run is ending on a signal: no child starts after that, but its cleanups'.
static STOPPING: AtomicBool = AtomicBool::new(false);

std::thread_local! {
    /// Set on the thread running the run's cleanups, which may start what they need (the
    /// helper that resets locked clocks).
    static CLEANING_UP: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Stops every later [`spawn`]: the run is ending.
pub fn stop_spawning() {
    STOPPING.store(true, Ordering::SeqCst);
}

/// Runs `cleanup` on this thread with [`spawn`] allowed again, as the run's cleanups must be.
pub fn while_cleaning_up<R>(cleanup: impl FnOnce() -> R) -> R {
    CLEANING_UP.with(|c| c.set(true));
    let result = cleanup();
    CLEANING_UP.with(|c| c.set(false));
    result
}

/// Whether a [`spawn`] on this thread is refused.
fn refused() -> bool {
    STOPPING.load(Ordering::SeqCst) && !CLEANING_UP.with(|c| c.get())
}

/// What a child sees of the node's processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sight {
    /// A PID namespace of its own where the kernel lets us make one ([`crate::contain`]):
    /// whatever it starts ends with it, even if stackbench is killed outright. For every child
    /// that runs code not ours: workers loading libraries, compilers, a user's command.
    Own,
    /// The node's: for our own helpers that ask the driver which processes use a GPU (the open
    /// kernel modules answer with those of the asker's namespace only).
    Node,
}

/// Starts `command` as every child of stackbench starts: in a session of its own with no
/// controlling terminal, dying with the thread that started it, seeing what `sight` says, and
/// as `user` when one is given (its environment reset to the allow-list first,
/// [`crate::trust::environment::reset`]). Refused once the run is ending.
pub fn spawn(
    command: &mut Command,
    user: Option<&Identity>,
    sight: Sight,
) -> std::io::Result<Child> {
    if refused() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::Interrupted,
            "the run is ending: no new process is started",
        ));
    }
    if let Some(user) = user {
        crate::trust::environment::reset(command, user);
    }
    let switch = user.map(Identity::switch);
    let descriptors = crate::contain::descriptor_limit();
    // Taken before the fork: the child checks that the parent it dies with is still us.
    let parent = libc::pid_t::try_from(std::process::id()).unwrap_or(0);
    // SAFETY: the closure runs in the child between fork and exec and makes only
    // async-signal-safe system calls, on memory allocated before the fork.
    unsafe {
        command.pre_exec(move || {
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            die_with(parent)?;
            // Made before the change of user, which takes the right to make one.
            let contained = sight == Sight::Own && crate::contain::enter(descriptors)?;
            if let Some(switch) = &switch {
                switch.make()?;
                // The change of user cleared the death signal; inside the namespace the
                // parent is its init, pid 1 there, killed with the namespace.
                die_with(if contained { 1 } else { parent })?;
            }
            Ok(())
        });
    }
    let child = command.spawn()?;
    // A stop that came while it was forked: it must not run on.
    if refused() {
        let mut child = child;
        kill_group(&mut child);
        let _ = child.wait();
        return Err(std::io::Error::new(
            std::io::ErrorKind::Interrupted,
            "the run is ending: no new process is started",
        ));
    }
    Ok(child)
}

/// In a child between fork and exec: dies when its parent does, and at once if that parent,
/// `parent`, is already gone.
///
/// # Safety
/// Only between fork and exec (async-signal-safe calls only).
unsafe fn die_with(parent: libc::pid_t) -> std::io::Result<()> {
    if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
        return Err(std::io::Error::last_os_error());
    }
    if libc::getppid() != parent {
        libc::_exit(2);
    }
    Ok(())
}

/// The command that starts stackbench's own executable as a worker: by its path where every
/// user may reach and execute it, else through a descriptor opened when the run began, so that
/// a worker run as another user starts even where that user cannot reach the file (installed
/// under `/root` by `pipx`), since executing a descriptor checks only the file's own
/// permission. The path comes first because an interpreter that `binfmt_misc` starts for the
/// binary (qemu-user running the aarch64 package on x86_64) opens it by name, and a descriptor
/// is closed by the very exec that would hand it over. Its `argv[0]` is the path either way. Of
/// our code variables (`CUDA_INJECTION64_PATH`, NCCL's plugins) it keeps only those naming a
/// file we may load.
pub fn worker_command(executable: &std::path::Path) -> Command {
    let mut command = own_executable(executable);
    crate::trust::environment::drop_untrusted_code(&mut command);
    command
}

/// A command of our own executable: by its path where anyone may execute it, else through its
/// descriptor where it can be had.
fn own_executable(executable: &std::path::Path) -> Command {
    use std::sync::OnceLock;
    /// Our executable and its descriptor, when not everyone may execute it by its path; judged
    /// once, when the first worker starts.
    static OWN: OnceLock<Option<(std::path::PathBuf, std::fs::File)>> = OnceLock::new();
    let own = OWN.get_or_init(|| {
        let path = std::env::current_exe().ok()?;
        if anyone_may_execute(&path) {
            return None;
        }
        let (file, _) = crate::hostfs::open(std::path::Path::new("/proc/self/exe")).ok()?;
        Some((path, file))
    });
    match own {
        Some((path, file)) if path == executable => {
            use std::os::fd::AsRawFd;
            let mut command = Command::new(format!("/proc/self/fd/{}", file.as_raw_fd()));
            command.arg0(executable);
            command
        }
        _ => Command::new(executable),
    }
}

/// Whether every user may reach `path` (each directory above it searchable by others) and
/// execute it, by the permission bits.
fn anyone_may_execute(path: &std::path::Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let others_x = |p: &std::path::Path| {
        std::fs::metadata(p).is_ok_and(|m| m.permissions().mode() & 0o001 != 0)
    };
    others_x(path) && path.ancestors().skip(1).all(others_x)
}

/// Runs `command` as [`spawn`] does and returns its standard output (at most [`OUTPUT_LIMIT`])
/// if it exits successfully within `timeout`; a process that runs longer is killed with
/// everything it started, so a grandchild holding the pipe open cannot keep us waiting.
pub fn output_within(
    mut command: Command,
    user: Option<&Identity>,
    sight: Sight,
    timeout: Duration,
) -> Option<String> {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = spawn(&mut command, user, sight).ok()?;
    let stdout = child.stdout.take()?;
    let reader = std::thread::spawn(move || read_bounded(stdout, OUTPUT_LIMIT));
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

/// Waits up to `timeout` for a child started by [`spawn`] to exit; one that runs longer is
/// killed with everything it started and reaped, and gives `None`.
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
/// through [`spawn`] in a namespace of its own, as `user` if one is given, and writes `input` to
/// its standard input.
pub fn start_worker<E: DeserializeOwned + Send + 'static>(
    command: Command,
    user: Option<&Identity>,
    input: Vec<u8>,
) -> std::io::Result<Worker<E>> {
    let (worker, mut stdin) = start_conversation(command, user, Sight::Own)?;
    // A worker that dies before reading its request makes this fail; its exit says why.
    std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    Ok(worker)
}

/// Starts `command` as [`start_worker`] does, seeing what `sight` says, but hands back its
/// standard input for a conversation: a line written, an event read, for as long as the worker
/// lives.
pub fn start_conversation<E: DeserializeOwned + Send + 'static>(
    mut command: Command,
    user: Option<&Identity>,
    sight: Sight,
) -> std::io::Result<(Worker<E>, ChildStdin)> {
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = spawn(&mut command, user, sight)?;
    // The pipes were all requested above, so each is there.
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        kill_group(&mut child);
        let _ = child.wait();
        return Err(std::io::Error::other("its pipes could not be set up"));
    };
    let errors = Collected::start(stderr);
    let said = Arc::clone(&errors.bytes);
    let (tx, events) = mpsc::sync_channel(EVENTS_WAITING);
    std::thread::spawn(move || {
        // A worker that writes without end gets no more of our memory than the limits: past
        // them its events end, and its pipe with them. Events that come faster than they are
        // read are dropped past [`EVENTS_WAITING`] (the pipe is still drained, so the worker
        // never blocks on it), and its standard error says how many.
        let mut stdout = BufReader::new(stdout.take(EVENTS_LIMIT));
        let mut line = Vec::new();
        let mut dropped = 0u64;
        let say = |what: String| {
            let mut said = said.lock().unwrap_or_else(|e| e.into_inner());
            said.extend_from_slice(format!("\nstackbench: {what}\n").as_bytes());
        };
        loop {
            line.clear();
            match (&mut stdout)
                .take(EVENT_LINE_LIMIT)
                .read_until(b'\n', &mut line)
            {
                Ok(0) | Err(_) => break,
                Ok(_) if line.last() != Some(&b'\n') && line.len() as u64 >= EVENT_LINE_LIMIT => {
                    break
                }
                Ok(_) => {}
            }
            if let Ok(event) = serde_json::from_slice::<E>(&line) {
                match tx.try_send(event) {
                    Ok(()) => {}
                    Err(mpsc::TrySendError::Full(_)) => {
                        dropped += 1;
                        // Said at the first, for the reader to see however the run ends.
                        if dropped == 1 {
                            say(format!(
                                "events are being dropped, past {EVENTS_WAITING} waiting to be read"
                            ));
                        }
                    }
                    Err(mpsc::TrySendError::Disconnected(_)) => break,
                }
            }
        }
        if dropped > 0 {
            say(format!("{dropped} events dropped in all"));
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

/// The worker's standard error, read on a thread as it comes; past [`OUTPUT_LIMIT`] it is read
/// and dropped, so the worker never blocks on a full pipe nor fills our memory.
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
                    Ok(n) => {
                        let mut kept = sink.lock().unwrap_or_else(|e| e.into_inner());
                        let room = (OUTPUT_LIMIT as usize).saturating_sub(kept.len());
                        kept.extend_from_slice(&chunk[..n.min(room)]);
                    }
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

/// At most `limit` bytes of `source`, as text; the rest is read and dropped, so the writer
/// never blocks on a full pipe.
fn read_bounded(source: impl Read, limit: u64) -> String {
    let mut source = source;
    let mut kept = Vec::new();
    let _ = (&mut source).take(limit).read_to_end(&mut kept);
    let _ = std::io::copy(&mut source, &mut std::io::sink());
    String::from_utf8_lossy(&kept).into_owned()
}

/// Kills a child started by [`spawn`], its session's process group and every process that
/// descends from it (a grandchild that called `setsid` or forked twice left the group).
/// Call it before reaping the child: until then its pid (the group's id) cannot be reused.
pub fn kill_group(child: &mut Child) {
    kill_tree(child.id());
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
    let stat = crate::hostfs::read_lossy(
        std::path::Path::new(&format!("/proc/{pid}/stat")),
        crate::hostfs::TEXT,
    )
    .ok()?;
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
    kill_below(std::process::id(), false);
}

/// Kills process `root` and every process that descends from it, as [`kill_descendants`] does.
pub fn kill_tree(root: u32) {
    kill_below(root, true);
}

/// Stops, then kills, every descendant of `root`, and `root` itself when `with_root`.
fn kill_below(root: u32, with_root: bool) {
    let mut stopped = std::collections::BTreeSet::new();
    if with_root {
        if let Ok(pid) = i32::try_from(root) {
            // SAFETY: kill(2) touches no memory.
            unsafe { libc::kill(pid, libc::SIGSTOP) };
            stopped.insert(pid);
        }
    }
    for _ in 0..64 {
        let found: Vec<i32> = descendants(root)
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
    let Ok(entries) = crate::hostfs::read_dir(std::path::Path::new("/proc")) else {
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

    /// A worker writing events faster than they are read: past [`EVENTS_WAITING`] they are
    /// dropped, and its standard error says so.
    #[test]
    fn events_waiting_to_be_read_are_bounded_and_the_dropped_counted() {
        let mut flood = Command::new("sh");
        flood.args(["-c", "yes '{\"n\": 1}' | head -n 100000"]);
        let (worker, _stdin) =
            start_conversation::<serde_json::Value>(flood, None, Sight::Own).unwrap();
        let Worker {
            mut child,
            events,
            errors,
        } = worker;
        child.wait().unwrap();
        // Once the reader has drained the pipe and counted, the queue holds what it kept.
        let counted = format!("{} events dropped in all", 100_000 - EVENTS_WAITING);
        let started = Instant::now();
        while !String::from_utf8_lossy(&errors.bytes.lock().unwrap()).contains(&counted) {
            assert!(started.elapsed() < Duration::from_secs(60), "never counted");
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(events.try_iter().count(), EVENTS_WAITING);
        let said = errors.finish();
        assert!(
            said.contains(&format!(
                "events are being dropped, past {EVENTS_WAITING} waiting to be read"
            )),
            "{said}"
        );
    }

    #[test]
    fn returns_output_and_kills_hangs() {
        let mut echo = Command::new("sh");
        echo.args(["-c", "echo hi"]);
        assert_eq!(
            output_within(echo, None, Sight::Own, Duration::from_secs(5)).as_deref(),
            Some("hi\n")
        );
        let mut hang = Command::new("sh");
        hang.args(["-c", "sleep 30"]);
        let started = Instant::now();
        assert_eq!(
            output_within(hang, None, Sight::Own, Duration::from_millis(200)),
            None
        );
        // Well short of the 30 s sleep, on a machine as busy as it may be.
        assert!(started.elapsed() < Duration::from_secs(20));
        let mut fail = Command::new("sh");
        fail.args(["-c", "exit 3"]);
        assert_eq!(
            output_within(fail, None, Sight::Own, Duration::from_secs(5)),
            None
        );
    }

    /// The status of `script` run by `sh` as [`spawn`] starts it.
    fn status_of(script: &str, sight: Sight) -> (ExitStatus, String) {
        let mut sh = Command::new("sh");
        sh.args(["-c", script]).stdout(Stdio::piped());
        let child = spawn(&mut sh, None, sight).unwrap();
        let out = child.wait_with_output().unwrap();
        (
            out.status,
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    }

    #[test]
    fn a_child_in_its_own_namespace_ends_as_it_would_anywhere() {
        use std::os::unix::process::ExitStatusExt;
        if !crate::trust::running_as_root("a child has a namespace of its own") {
            return;
        }
        // Its namespace's init is pid 1 there; the command comes next.
        let (status, pid) = status_of("echo $$", Sight::Own);
        assert!(status.success());
        assert_eq!(pid.trim(), "2");
        assert_ne!(status_of("echo $$", Sight::Node).1.trim(), "2");
        // Its /proc is its namespace's: /proc/self is the pid getpid returns (cuInit fails with
        // CUDA_ERROR_OPERATING_SYSTEM where it is not). The shell's own `read` opens the file.
        let (_, stat) = status_of(
            "read -r pid rest < /proc/self/stat; echo $$ $pid",
            Sight::Own,
        );
        assert_eq!(stat.trim(), "2 2");
        assert_eq!(status_of("exit 3", Sight::Own).0.code(), Some(3));
        // An abort ends it by its signal, as a crashing library's would (as a namespace's init
        // the command would ignore it, and go on).
        let (aborted, _) = status_of("kill -ABRT $$; exit 7", Sight::Own);
        assert_eq!(aborted.signal(), Some(libc::SIGABRT), "{aborted:?}");
    }

    #[test]
    fn a_signal_our_handlers_would_catch_ends_a_contained_child() {
        use std::os::unix::process::ExitStatusExt;
        if !crate::trust::running_as_root("a child has a namespace of its own") {
            return;
        }
        extern "C" fn caught(_: libc::c_int) {}
        // A handler of ours, as the run's own for SIGINT, SIGTERM and SIGHUP.
        crate::lifetime::handle(libc::SIGUSR2, caught);
        let mut sleep = Command::new("sleep");
        sleep.arg("30");
        let mut child = spawn(&mut sleep, None, Sight::Own).unwrap();
        let pid = libc::pid_t::try_from(child.id()).unwrap();
        let started = Instant::now();
        let status = loop {
            // SAFETY: kill(2) of our own child, not yet reaped.
            unsafe { libc::kill(pid, libc::SIGUSR2) };
            match child.try_wait().unwrap() {
                Some(status) => break status,
                None if started.elapsed() < Duration::from_secs(20) => {
                    std::thread::sleep(Duration::from_millis(50))
                }
                None => {
                    kill_group(&mut child);
                    panic!("SIGUSR2 did not end the contained child");
                }
            }
        };
        assert_eq!(status.signal(), Some(libc::SIGUSR2), "{status:?}");
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
