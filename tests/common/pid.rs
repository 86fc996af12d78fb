//! The pid of a process a test's library starts, as the test's namespace numbers it. A worker
//! runs in a PID namespace of its own with that namespace's `/proc`, so a library there cannot
//! say its node pid itself (`getpid` and `/proc/self` give the namespace's); a Unix socket's
//! peer credentials can, since the kernel gives the connecting process's pid in the listener's
//! namespace.

use std::os::fd::AsRawFd;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, Receiver};
use std::time::Duration;

/// A socket any user may connect to, and the pids of the processes that did, in order.
pub struct PidCatcher {
    path: PathBuf,
    pids: Receiver<i32>,
}

impl PidCatcher {
    /// Listens at `path` (a thread accepts for as long as the test runs).
    pub fn listen(path: &Path) -> PidCatcher {
        let listener = UnixListener::bind(path).expect("bind the pid socket");
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o777)).unwrap();
        let (sender, pids) = channel();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                if sender.send(peer_pid(&stream)).is_err() {
                    break;
                }
            }
        });
        PidCatcher {
            path: path.to_path_buf(),
            pids,
        }
    }

    /// C source of `static void say_pid(void)`, which connects to the socket and closes the
    /// connection (needs `<string.h>`, `<sys/socket.h>`, `<sys/un.h>` and `<unistd.h>`).
    pub fn say_pid_c(&self) -> String {
        format!(
            r#"static void say_pid(void) {{
    struct sockaddr_un address;
    memset(&address, 0, sizeof address);
    address.sun_family = AF_UNIX;
    strncpy(address.sun_path, "{}", sizeof address.sun_path - 1);
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    if (s >= 0) {{ connect(s, (struct sockaddr *)&address, sizeof address); close(s); }}
}}
"#,
            self.path.display()
        )
    }

    /// The pid of the next process to connect, waiting up to 30 s for it.
    pub fn pid(&self) -> i32 {
        let pid = (self.pids.recv_timeout(Duration::from_secs(30)))
            .unwrap_or_else(|_| panic!("no process connected to {}", self.path.display()));
        assert!(
            pid > 0,
            "the kernel gave no pid for a connection to {}",
            self.path.display()
        );
        pid
    }

    /// Whether a process connected that [`PidCatcher::pid`] has not returned yet.
    pub fn connected(&self) -> bool {
        std::thread::sleep(Duration::from_millis(100));
        self.pids.try_recv().is_ok()
    }
}

/// The connecting process's pid, in this process's namespace (0 where the kernel has none).
fn peer_pid(stream: &UnixStream) -> i32 {
    // SAFETY: an all-zero ucred is valid; getsockopt writes at most `len` bytes into it.
    let mut cred: libc::ucred = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: a live socket, and a buffer of `len` bytes.
    let read = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            std::ptr::from_mut(&mut cred).cast(),
            &mut len,
        )
    };
    if read == 0 {
        cred.pid
    } else {
        0
    }
}
