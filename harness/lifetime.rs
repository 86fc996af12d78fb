//! How long stackbench's processes live: no worker outlives its run. A worker dies with its
//! parent (`PR_SET_PDEATHSIG`, so a run killed outright takes its workers along); the run is
//! its descendants' subreaper, so one that forked away (`setsid`, a double fork) comes back to
//! it rather than to init, and is killed when the run ends, however it ends; a run that a
//! signal ends (Ctrl-C, a CI or Slurm time limit, `timeout`: SIGINT, SIGTERM, SIGHUP) first
//! starts no more workers and kills its workers and whatever they started, then runs its
//! cleanups (the locked clocks' reset), then ends as the signal would have ended it. A signal
//! the run was started ignoring (`nohup`) stays ignored. Otherwise a worker on a real GPU would
//! go on holding its context, and the next run would find the GPU busy.

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

/// The signals that end a run.
const SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// A cleanup to run when a signal ends the run.
type Cleanup = Box<dyn FnOnce() + Send>;

/// The cleanups registered, by id.
static CLEANUPS: Mutex<Vec<(u64, Cleanup)>> = Mutex::new(Vec::new());

/// The next cleanup's id.
static NEXT: AtomicU64 = AtomicU64::new(0);

/// The signal pipe's write end, for the handler.
static SIGNAL_PIPE: AtomicI32 = AtomicI32::new(-1);

/// Makes the calling worker die when its parent does (SIGKILL). [`crate::process::spawn`]
/// already set this before the worker executed, checked against the parent's pid taken before
/// the fork; set again here for a worker started otherwise. Its parent may well be pid 1 (the
/// run as a container's init), so that alone says nothing.
pub fn die_with_parent() {
    // SAFETY: prctl(PR_SET_PDEATHSIG) touches no memory of ours.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
    }
}

/// Makes this run the subreaper of everything it starts, so that a descendant that leaves its
/// parent (`setsid` and a double fork) is still this run's, found and killed when the run ends.
pub fn adopt_orphans() {
    // SAFETY: prctl(PR_SET_CHILD_SUBREAPER) touches no memory.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1) };
}

/// Whether `signal` was ignored when the run started (`nohup` ignores SIGHUP): it stays so.
fn ignored(signal: libc::c_int) -> bool {
    // SAFETY: sigaction with a null new action only reads the current one into `current`.
    unsafe {
        let mut current: libc::sigaction = std::mem::zeroed();
        libc::sigaction(signal, std::ptr::null(), &mut current) == 0
            && current.sa_sigaction == libc::SIG_IGN
    }
}

/// Makes a signal that ends this run end its workers first and run its cleanups (see the
/// module's documentation). Installed once; later calls do nothing.
pub fn end_workers_on_signals() {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        let mut fds = [0 as RawFd; 2];
        // SAFETY: pipe2 writes two descriptors into `fds`.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return; // no pipe, no handler: the default actions stay
        }
        let (read, write) = (fds[0], fds[1]);
        SIGNAL_PIPE.store(write, Ordering::Relaxed);
        std::thread::spawn(move || watch(read));
        for signal in SIGNALS.into_iter().filter(|s| !ignored(*s)) {
            handle(signal, on_signal);
        }
    });
}

/// Makes `handler` (async-signal-safe) handle `signal`, with an empty mask; a read or wait the
/// handler interrupts (the watcher's own, on whichever thread the signal lands) carries on
/// rather than failing with EINTR.
pub fn handle(signal: libc::c_int, handler: extern "C" fn(libc::c_int)) {
    // SAFETY: a zeroed sigaction with the handler, SA_RESTART and an empty mask.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = handler as *const () as usize;
        action.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(signal, &action, std::ptr::null_mut());
    }
}

/// A cleanup registered with [`on_interrupt`]: dropping it unregisters it, unrun.
pub struct Registered(u64);

/// Registers `cleanup` to run if a signal ends the run (after its workers are killed); the
/// handler is installed if it was not.
pub fn on_interrupt(cleanup: impl FnOnce() + Send + 'static) -> Registered {
    end_workers_on_signals();
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    CLEANUPS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push((id, Box::new(cleanup)));
    Registered(id)
}

impl Drop for Registered {
    fn drop(&mut self) {
        CLEANUPS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|(id, _)| *id != self.0);
    }
}

/// A private directory of the run's, removed when dropped and when a signal ends the run (a
/// static or a value still alive then is never dropped).
pub struct Scratch {
    dir: tempfile::TempDir,
    _cleanup: Registered,
}

impl Scratch {
    /// A new directory named `prefix` and a random suffix under `TMPDIR` (else `/tmp`), of
    /// `mode`.
    pub fn new(prefix: &str, mode: u32) -> std::io::Result<Scratch> {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::Builder::new()
            .prefix(prefix)
            .permissions(std::fs::Permissions::from_mode(mode))
            .tempdir()?;
        let path = dir.path().to_owned();
        let cleanup = on_interrupt(move || {
            let _ = std::fs::remove_dir_all(path);
        });
        Ok(Scratch {
            dir,
            _cleanup: cleanup,
        })
    }

    /// Makes the directory over to `owner` (uid, gid), where a worker runs as another user:
    /// only they and root may then write it.
    pub fn made_over(self, owner: Option<(u32, u32)>) -> std::io::Result<Scratch> {
        if let Some((uid, gid)) = owner {
            std::os::unix::fs::chown(self.path(), Some(uid), Some(gid))?;
        }
        Ok(self)
    }

    pub fn path(&self) -> &std::path::Path {
        self.dir.path()
    }
}

/// The handler: writes the signal's number to the pipe (async-signal-safe), nothing else.
extern "C" fn on_signal(signal: libc::c_int) {
    let byte = signal as u8;
    let fd = SIGNAL_PIPE.load(Ordering::Relaxed);
    // SAFETY: write(2) of one byte from the stack is async-signal-safe.
    unsafe { libc::write(fd, std::ptr::from_ref(&byte).cast(), 1) };
}

/// The watcher: on the first signal, the workers, then the cleanups, then the signal again
/// with its default action.
fn watch(read: RawFd) {
    let mut byte = 0u8;
    loop {
        // SAFETY: reads one byte into `byte` from our own pipe.
        match unsafe { libc::read(read, std::ptr::from_mut(&mut byte).cast(), 1) } {
            1 => break,
            // The signal landed on this thread and interrupted its read: its byte is in the
            // pipe. Returning here left the signal unanswered and the run hanging.
            -1 if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted => {}
            _ => return,
        }
    }
    crate::process::stop_spawning();
    crate::process::kill_descendants();
    let cleanups = std::mem::take(&mut *CLEANUPS.lock().unwrap_or_else(|e| e.into_inner()));
    crate::process::while_cleaning_up(|| {
        for (_, cleanup) in cleanups {
            cleanup();
        }
    });
    let signal = libc::c_int::from(byte);
    // SAFETY: back to the default action, then the signal itself ends the process.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
        libc::raise(signal);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cleanup_dropped_is_never_run() {
        let kept = on_interrupt(|| {});
        let dropped = on_interrupt(|| panic!("unregistered"));
        let ids = |list: &Vec<(u64, Cleanup)>| list.iter().map(|(id, _)| *id).collect::<Vec<_>>();
        let before = ids(&CLEANUPS.lock().unwrap());
        assert!(before.contains(&kept.0) && before.contains(&dropped.0));
        let gone = dropped.0;
        drop(dropped);
        assert!(!ids(&CLEANUPS.lock().unwrap()).contains(&gone));
        drop(kept);
    }
}
