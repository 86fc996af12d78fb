//! The worker side: loads the requested libraries and reports each as a JSON line.
//!
//! Runs as `stackbench __probe` with a [`ProbeRequest`] on stdin. Before each library it writes a
//! start marker to stderr (where the loader's `LD_DEBUG` trail goes) and a `start` event to its
//! protocol channel; after it, an end marker and a `done` event. The protocol channel is the
//! original stdout; stdout itself is pointed at stderr so that nothing a library prints can corrupt
//! it. Nothing is ever `dlclose`d, and the worker leaves with `_exit`: constructors may have started
//! threads, and vendor destructors are not ours to run.

use super::api;
use super::dl::{self, Mapped};
use super::trail;
use super::{LoadOutcome, LoadStage, LoadedObject, WorkerEvent};
use std::collections::HashSet;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::FromRawFd;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

/// Runs the worker: a request on stdin, results on stdout.
pub fn run() -> ExitCode {
    plain_crashes();
    let request = match read_request::<super::ProbeRequest>() {
        Ok(request) => request,
        Err(e) => {
            eprintln!("stackbench __probe: cannot read the request on standard input: {e}");
            return ExitCode::from(2);
        }
    };
    let mut channel = match protocol_channel() {
        Ok(channel) => channel,
        Err(e) => {
            eprintln!("stackbench __probe: cannot set up the protocol channel: {e}");
            return ExitCode::from(2);
        }
    };
    for (index, path) in request.libraries.iter().enumerate() {
        mark(&trail::start_marker(index));
        let start = WorkerEvent::Start {
            index,
            path: path.clone(),
        };
        if send(&mut channel, &start).is_err() {
            leave(3); // the parent is gone
        }
        let done = load(index, path);
        mark(&trail::end_marker(index));
        if send(&mut channel, &done).is_err() {
            leave(3);
        }
    }
    leave(0)
}

/// Exits at once: no exit handlers, no destructors of the libraries loaded.
pub(crate) fn leave(code: i32) -> ! {
    let _ = io::stderr().flush();
    // SAFETY: _exit only ends the process; all our output is written unbuffered.
    unsafe { libc::_exit(code) }
}

/// A library that crashes the worker should die of its signal, as it would in any program (Rust's
/// runtime handles SIGSEGV and SIGBUS to report stack overflows, and would swallow a raised one),
/// and should not leave a core file behind.
pub(crate) fn plain_crashes() {
    let zero = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain system calls on this process with valid arguments.
    unsafe {
        libc::signal(libc::SIGSEGV, libc::SIG_DFL);
        libc::signal(libc::SIGBUS, libc::SIG_DFL);
        libc::setrlimit(libc::RLIMIT_CORE, &zero);
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
    }
}

/// The request on standard input, read whole.
pub(crate) fn read_request<T: serde::de::DeserializeOwned>() -> io::Result<T> {
    let mut text = String::new();
    io::stdin().read_to_string(&mut text)?;
    serde_json::from_str(&text).map_err(io::Error::other)
}

/// Moves the original stdout to a new descriptor for the protocol and points stdout at stderr.
pub(crate) fn protocol_channel() -> io::Result<File> {
    io::stdout().flush()?;
    // SAFETY: duplicating this process's own standard descriptors; the new one is owned by the
    // File returned and by nothing else.
    unsafe {
        let fd = libc::fcntl(libc::STDOUT_FILENO, libc::F_DUPFD_CLOEXEC, 3);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        if libc::dup2(libc::STDERR_FILENO, libc::STDOUT_FILENO) < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(File::from_raw_fd(fd))
    }
}

/// One marker line on stderr, in one write.
fn mark(marker: &str) {
    let _ = io::stderr().write_all(format!("\n{marker}\n").as_bytes());
}

/// One event as one JSON line, in one write.
pub(crate) fn send(channel: &mut File, event: &impl serde::Serialize) -> io::Result<()> {
    let mut line = serde_json::to_vec(event).map_err(io::Error::other)?;
    line.push(b'\n');
    channel.write_all(&line)
}

/// Loads one library, lists what got mapped, and calls its version APIs.
fn load(index: usize, path: &Path) -> WorkerEvent {
    let mut seen = Seen::new(&dl::mapped_objects());
    let started = Instant::now();
    let (outcome, api) = match dl::Library::open(path) {
        Err(error) => (LoadOutcome::Failed { error }, Vec::new()),
        Ok(library) => {
            seen.observe(LoadStage::Dlopen);
            mark(&trail::api_marker(index));
            let api = component_of(path)
                .map(|component| {
                    api::version_calls(&component, &library, &mut || {
                        seen.observe(LoadStage::ApiCall)
                    })
                })
                .unwrap_or_default();
            (LoadOutcome::Loaded, api)
        }
    };
    let millis = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    seen.observe(LoadStage::ApiCall);
    let loaded = seen.drain(&dl::mapped_objects());
    WorkerEvent::Done {
        index,
        outcome,
        loaded,
        api,
        millis,
    }
}

/// The component of the file (`cudart`), from the name given or else from the file it points to.
fn component_of(path: &Path) -> Option<String> {
    let from = |p: &Path| {
        p.file_name()
            .and_then(|n| crate::catalog::classify(&n.to_string_lossy()).map(|n| n.component))
    };
    from(path).or_else(|| {
        crate::hostfs::real_path(path)
            .ok()
            .and_then(|real| from(&real))
    })
}

/// What an object is told apart by: where it was mapped and the name it was opened by.
type Key = (usize, PathBuf);

fn key(m: &Mapped) -> Key {
    (m.base, m.name.clone())
}

/// Every object mapped since a first look, with the stage that first saw it. Looking after the
/// `dlopen` and after each API call catches objects mapped and unmapped again in between
/// (libcudart unloads a libcuda that fails to initialise).
pub(crate) struct Seen {
    new: Vec<(Mapped, LoadStage)>,
    /// Every object seen so far, the first look's included.
    known: HashSet<Key>,
}

impl Seen {
    pub(crate) fn new(before: &[Mapped]) -> Seen {
        Seen {
            new: Vec::new(),
            known: before.iter().map(key).collect(),
        }
    }

    pub(crate) fn observe(&mut self, stage: LoadStage) {
        self.add(&dl::mapped_objects(), stage);
    }

    fn add(&mut self, now: &[Mapped], stage: LoadStage) {
        for m in now {
            if !m.name.as_os_str().is_empty() && self.known.insert(key(m)) {
                self.new.push((m.clone(), stage));
            }
        }
    }

    /// The objects seen since the last drain, in the order they were seen; `now` says which are
    /// still mapped.
    pub(crate) fn drain(&mut self, now: &[Mapped]) -> Vec<LoadedObject> {
        self.add(now, LoadStage::ApiCall);
        let mapped: HashSet<Key> = now.iter().map(key).collect();
        std::mem::take(&mut self.new)
            .into_iter()
            .map(|(m, stage)| {
                let real = crate::hostfs::real_path(&m.name).unwrap_or_else(|_| m.name.clone());
                let name = m.soname.clone().unwrap_or_else(|| {
                    m.name
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default()
                });
                LoadedObject {
                    name,
                    // The protocol is JSON: a path that is not UTF-8 is sent as its lossy text.
                    path: PathBuf::from(real.to_string_lossy().into_owned()),
                    stage,
                    unloaded: !mapped.contains(&key(&m)),
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mapped(base: usize, name: &str, soname: Option<&str>) -> Mapped {
        Mapped {
            base,
            name: name.into(),
            soname: soname.map(str::to_owned),
        }
    }

    #[test]
    fn new_objects_are_staged() {
        let libc = mapped(1, "/lib/libc.so.6", Some("libc.so.6"));
        let cudart = mapped(2, "/nonexistent/libcudart.so.12", Some("libcudart.so.12"));
        let cuda = mapped(3, "/nonexistent/libcuda.so.1", None);
        let rt = mapped(4, "/nonexistent/librt.so.1", Some("librt.so.1"));
        let mut seen = Seen::new(&[mapped(0, "", None), libc.clone()]);
        seen.add(&[libc.clone(), cudart.clone()], LoadStage::Dlopen);
        seen.add(
            &[libc.clone(), cudart.clone(), cuda.clone()],
            LoadStage::ApiCall,
        );
        let loaded = seen.drain(&[libc, cudart, rt]);
        let object = |name: &str, path: &str, stage, unloaded| LoadedObject {
            name: name.into(),
            path: path.into(),
            stage,
            unloaded,
        };
        assert_eq!(
            loaded,
            [
                object(
                    "libcudart.so.12",
                    "/nonexistent/libcudart.so.12",
                    LoadStage::Dlopen,
                    false
                ),
                object(
                    "libcuda.so.1",
                    "/nonexistent/libcuda.so.1",
                    LoadStage::ApiCall,
                    true
                ),
                object(
                    "librt.so.1",
                    "/nonexistent/librt.so.1",
                    LoadStage::ApiCall,
                    false
                ),
            ]
        );
    }

    #[test]
    fn components_from_names() {
        assert_eq!(
            component_of(Path::new("/x/libcudart.so.12")).as_deref(),
            Some("cudart")
        );
        assert_eq!(component_of(Path::new("/nonexistent/weird")), None);
    }
}
