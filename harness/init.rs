//! stackbench as a container's PID 1 (`docker run IMAGE check` without `--init`, a Kubernetes
//! Job's only process): there, signals without a handler are ignored, every orphan of the
//! namespace is reparented to us, and `SIGTERM` from `docker stop` would do nothing. So, as
//! tini and `docker run --init` do, PID 1 forks: the child runs the command as it would run
//! anywhere else, and PID 1 only forwards the signals that end a run to it, reaps every process
//! that ends, and exits as the child did.

use std::sync::atomic::{AtomicI32, Ordering};

/// The signals PID 1 passes to the run.
const FORWARDED: [libc::c_int; 6] = [
    libc::SIGTERM,
    libc::SIGINT,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGUSR1,
    libc::SIGUSR2,
];

/// The run's pid, for the handler.
static RUN: AtomicI32 = AtomicI32::new(0);

/// Call first thing in `main`, before any thread starts. As PID 1 it forks: in the child it
/// returns `None` (run the command), in PID 1 it supervises the child and returns the exit
/// status to end with. Anywhere else, and where the fork fails, it returns `None` at once.
pub fn supervise_if_pid1() -> Option<u8> {
    // SAFETY: getpid has no preconditions.
    if unsafe { libc::getpid() } != 1 {
        return None;
    }
    // SAFETY: no thread has started yet, so the child is a whole copy of this process.
    let run = match unsafe { libc::fork() } {
        0 | -1 => return None,
        run => run,
    };
    RUN.store(run, Ordering::SeqCst);
    for signal in FORWARDED {
        crate::lifetime::handle(signal, forward);
    }
    loop {
        let mut status = 0;
        // SAFETY: waitpid writes the status into `status`.
        let reaped = unsafe { libc::waitpid(-1, &mut status, 0) };
        if reaped == run {
            return Some(exit_status(status));
        }
        if reaped == -1 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted
        {
            return Some(crate::app::EXIT_HARNESS);
        }
    }
}

/// The status a shell would give for a child's wait status: its exit code, or 128 plus the
/// signal that ended it.
fn exit_status(status: libc::c_int) -> u8 {
    if libc::WIFEXITED(status) {
        u8::try_from(libc::WEXITSTATUS(status)).unwrap_or(crate::app::EXIT_HARNESS)
    } else if libc::WIFSIGNALED(status) {
        u8::try_from(128 + libc::WTERMSIG(status)).unwrap_or(crate::app::EXIT_HARNESS)
    } else {
        crate::app::EXIT_HARNESS
    }
}

/// The handler: the signal goes on to the run (kill(2) is async-signal-safe).
extern "C" fn forward(signal: libc::c_int) {
    let run = RUN.load(Ordering::SeqCst);
    if run > 0 {
        // SAFETY: kill(2) touches no memory.
        unsafe { libc::kill(run, signal) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_statuses_read_as_a_shell_reads_them() {
        assert_eq!(exit_status(0), 0);
        assert_eq!(exit_status(1 << 8), 1);
        assert_eq!(exit_status(libc::SIGTERM), 128 + 15);
        assert_eq!(exit_status(libc::SIGKILL), 128 + 9);
        // Not the pid 1 of a namespace: nothing to supervise.
        assert_eq!(supervise_if_pid1(), None);
    }
}
