//! A child in a PID namespace of its own, so that nothing it starts outlives it: not a
//! grandchild that called `setsid` or forked twice, not even when stackbench itself is killed
//! outright (`SIGKILL`, the OOM killer), where no handler of ours runs. When a namespace's first
//! process ends, the kernel kills every process left in it.
//!
//! The command must not be that first process: a namespace's init ignores the signals it has no
//! handler for, so a library's `abort()` would not end it as it ends anywhere else. So three
//! processes stand where one did:
//! - the *waiter*, our child, stays in our namespace: it waits for the init and then ends as the
//!   command ended (its exit code, or the signal that killed it), so the `Child` we hold reads the
//!   command's own status; killed, it takes the init along (`PR_SET_PDEATHSIG`);
//! - the namespace's *init* starts the command, reaps whatever is handed to it, and when the
//!   command ends, passes its status to the waiter and ends, which ends the namespace;
//! - the *command*, which runs as it would anywhere else.
//!
//! The namespace comes with a mount namespace of its own, where the init mounts the PID
//! namespace's `/proc`: in a PID namespace that reads the node's `/proc` (where `/proc/self` is
//! not the pid `getpid` returns), CUDA's `cuInit` fails with `CUDA_ERROR_OPERATING_SYSTEM` (304),
//! as `unshare --pid --fork` showed and `unshare --pid --fork --mount-proc` did not (an H200,
//! driver 580.159.04, 2026-11-29).
//!
//! Only a process with `CAP_SYS_ADMIN` may make the namespaces (root, as stackbench runs on
//! nodes), and only where it may mount a `/proc` (a container may forbid it); elsewhere the
//! command runs as before, the run's subreaper and its kills still catching what it started
//! unless stackbench is killed outright.

use std::io;

/// Called in the child between fork and exec, before any change of user (which would take the
/// right to make a namespace with it); only async-signal-safe system calls. Returns `Ok(true)`
/// in the process that goes on to run the command, inside a new namespace; `Ok(false)`, having
/// done nothing, where no namespace could be made. The waiter and the init never return.
///
/// # Safety
/// Only between fork and exec of a child.
pub unsafe fn enter(descriptors: libc::c_int) -> io::Result<bool> {
    if !own_mounts_with_proc() || libc::unshare(libc::CLONE_NEWPID) != 0 {
        return Ok(false);
    }
    default_handlers();
    let mut status_pipe = [0; 2];
    if libc::pipe2(status_pipe.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
        return Err(io::Error::last_os_error());
    }
    let [read, write] = status_pipe;
    match libc::fork() {
        -1 => Err(io::Error::last_os_error()),
        0 => {
            libc::close(read);
            start(write, descriptors)
        }
        init => {
            keep_only(read, descriptors);
            wait(init, read)
        }
    }
}

/// The namespace's init: starts the command (returns in it), then reaps until the command ends,
/// writes its wait status to `write` and ends, and the namespace with it.
unsafe fn start(write: libc::c_int, descriptors: libc::c_int) -> io::Result<bool> {
    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
    // The namespace's own /proc, over the node's; the waiter's mount showed that one may be
    // mounted here.
    mount_proc();
    match libc::fork() {
        -1 => libc::_exit(127),
        // The status pipe closes when the command executes (O_CLOEXEC).
        0 => Ok(true),
        command => {
            keep_only(write, descriptors);
            loop {
                let mut status = 0;
                let reaped = libc::waitpid(-1, &mut status, 0);
                if reaped == command {
                    libc::write(
                        write,
                        std::ptr::from_ref(&status).cast(),
                        size_of_val(&status),
                    );
                    libc::_exit(0);
                }
                if reaped == -1 && *libc::__errno_location() != libc::EINTR {
                    libc::_exit(127);
                }
            }
        }
    }
}

/// Moves this process into a mount namespace of its own whose mounts no longer propagate to the
/// node's, and mounts a `/proc` there: false where any of it is refused (then the process keeps
/// the node's view, or a private copy of it, unchanged).
unsafe fn own_mounts_with_proc() -> bool {
    libc::unshare(libc::CLONE_NEWNS) == 0
        && libc::mount(
            std::ptr::null(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        ) == 0
        && mount_proc()
}

/// Mounts a `/proc` showing the calling process's PID namespace.
unsafe fn mount_proc() -> bool {
    libc::mount(
        c"proc".as_ptr(),
        c"/proc".as_ptr(),
        c"proc".as_ptr(),
        libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
        std::ptr::null(),
    ) == 0
}

/// The waiter: waits for the init, then ends as the command did (as the init did if it was
/// killed before it could say).
unsafe fn wait(init: libc::pid_t, read: libc::c_int) -> ! {
    let mut status = 0;
    loop {
        let reaped = libc::waitpid(init, &mut status, 0);
        if reaped == init {
            break;
        }
        if reaped == -1 && *libc::__errno_location() != libc::EINTR {
            libc::_exit(127);
        }
    }
    let mut command: libc::c_int = 0;
    let got = libc::read(
        read,
        std::ptr::from_mut(&mut command).cast(),
        size_of_val(&command),
    );
    if got == size_of_val(&command) as isize {
        status = command;
    }
    end_as(status)
}

/// The signals stackbench may handle (the run's end, PID 1's forwarding).
const HANDLED: [libc::c_int; 6] = [
    libc::SIGINT,
    libc::SIGTERM,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGUSR1,
    libc::SIGUSR2,
];

/// Gives the waiter and the init what an exec would give the command: our handlers back to
/// the default action (a signal that ends the command ends the waiter as it would have ended
/// the command), what is ignored still ignored (`nohup`).
unsafe fn default_handlers() {
    for signal in HANDLED {
        let mut current: libc::sigaction = std::mem::zeroed();
        let read = libc::sigaction(signal, std::ptr::null(), &mut current);
        if read == 0 && current.sa_sigaction != libc::SIG_IGN {
            libc::signal(signal, libc::SIG_DFL);
        }
    }
}

/// Ends this process as a process with wait status `status` ended.
unsafe fn end_as(status: libc::c_int) -> ! {
    if libc::WIFEXITED(status) {
        libc::_exit(libc::WEXITSTATUS(status));
    }
    let signal = if libc::WIFSIGNALED(status) {
        libc::WTERMSIG(status)
    } else {
        libc::SIGKILL
    };
    // This is a copy of stackbench's memory: no core of it is wanted.
    libc::prctl(libc::PR_SET_DUMPABLE, 0);
    libc::signal(signal, libc::SIG_DFL);
    let mut set: libc::sigset_t = std::mem::zeroed();
    libc::sigemptyset(&mut set);
    libc::sigaddset(&mut set, signal);
    libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
    libc::kill(libc::getpid(), signal);
    // A signal whose default is not to end a process.
    libc::_exit(128 + signal)
}

/// Closes every descriptor from 3 on but `kept`: the waiter and the init must hold nothing of
/// the parent's (not the pipe by which `std` learns that the command executed). They keep the
/// standard streams: the command's pipes then close only when the waiter has ended, its status
/// set, so whoever reads them to their end finds the command's status, not one it had to kill.
unsafe fn keep_only(kept: libc::c_int, descriptors: libc::c_int) {
    let below = kept <= 3 || libc::syscall(libc::SYS_close_range, 3, kept - 1, 0) == 0;
    let above = libc::syscall(libc::SYS_close_range, kept + 1, libc::c_uint::MAX, 0) == 0;
    if below && above {
        return;
    }
    // Kernels before 5.9 have no close_range.
    for fd in (3..descriptors.max(kept + 1)).filter(|fd| *fd != kept) {
        libc::close(fd);
    }
}

/// How many descriptors a process may have open (at most 65536: where close_range is missing,
/// [`enter`]'s processes close each in turn), read before a fork.
pub fn descriptor_limit() -> libc::c_int {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into `limit`, which is live.
    match unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } {
        0 => libc::c_int::try_from(limit.rlim_cur.min(65536)).unwrap_or(65536),
        _ => 65536,
    }
}
