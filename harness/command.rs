//! A real program run under the loader's trace (`doctor -- COMMAND`): every CUDA library it
//! asked for, in load order, and the file it got or that it got none; its own error lines that
//! name CUDA libraries or CUDA errors; its exit status.
//!
//! The loader writes its trace (`LD_DEBUG=libs,files`) into files of stackbench's
//! (`LD_DEBUG_OUTPUT`, one per process, so children are traced too), never into the program's
//! own output, which is passed through to stackbench's standard error (or kept, with `--quiet`)
//! and read for error lines either way.

use crate::catalog;
use crate::probe::trail::strip_pid;
use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Error lines kept from the program's output.
const MAX_ERROR_LINES: usize = 20;
/// The most of one line of the program's output held at once: a longer line is relayed whole
/// and looked at in pieces of this size, so a line without end costs no memory.
const LINE_LIMIT: u64 = 64 << 10;

/// What the program's output says when CUDA fails it.
const ERROR_PATTERNS: [&str; 8] = [
    "cannot open shared object file",
    "error while loading shared libraries",
    "Could not load dynamic library",
    "CUDA driver version is insufficient",
    "no kernel image is available for execution on the device",
    "CUDA_ERROR_",
    "cudaError",
    "undefined symbol",
];

/// A program's run, as the loader saw it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CommandReport {
    pub command: Vec<String>,
    /// Its exit status; none when a signal ended it or it was stopped at the deadline.
    pub exit_status: Option<i32>,
    /// The signal that ended it.
    pub signal: Option<i32>,
    /// Whether it was stopped at the deadline (`--timeout`).
    pub timed_out: bool,
    pub seconds: f64,
    /// Every CUDA library it (or a process it started) asked the loader for, in order.
    pub libraries: Vec<CommandLibrary>,
    /// Its output lines that name a library it could not load, a CUDA error or a part of the
    /// toolkit a build missed.
    pub error_lines: Vec<String>,
    /// The `-I` directories of the compiler lines in its output (a build's), in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[serde(with = "crate::pathname::list")]
    pub include_dirs: Vec<PathBuf>,
    /// The dynamically linked programs it ran (the loader's `initialize program:`), in order:
    /// a build's compilers and tools.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub programs: Vec<String>,
    /// Why the program could not be run at all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_run: Option<String>,
}

/// One CUDA library a program asked for.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CommandLibrary {
    /// The name it asked for (`libcudart.so.12`, or a path).
    pub name: String,
    /// The file the loader mapped; none when every candidate failed.
    #[serde(default, with = "crate::pathname::option")]
    pub found: Option<PathBuf>,
    /// The files the loader tried, in order.
    #[serde(with = "crate::pathname::list")]
    pub tried: Vec<PathBuf>,
    /// The installation the file belongs to (filled in by `doctor`).
    #[serde(default)]
    #[serde(with = "crate::pathname::option")]
    pub installation: Option<PathBuf>,
}

/// Runs `command` with `LD_LIBRARY_PATH` as the user's environment has it (`None`: unset,
/// whatever ours holds), the loader tracing into a directory of ours; its output goes to our
/// standard error unless `quiet`.
pub fn run(
    command: &[String],
    ld_library_path: Option<&str>,
    timeout: Duration,
    quiet: bool,
) -> CommandReport {
    let mut report = CommandReport {
        command: command.to_vec(),
        exit_status: None,
        signal: None,
        timed_out: false,
        seconds: 0.0,
        libraries: Vec::new(),
        error_lines: Vec::new(),
        include_dirs: Vec::new(),
        programs: Vec::new(),
        not_run: None,
    };
    let Some((program, args)) = command.split_first() else {
        report.not_run = Some("no command given after --".into());
        return report;
    };
    let trace = match crate::lifetime::Scratch::new("stackbench-ld-", 0o700) {
        Ok(dir) => dir,
        Err(e) => {
            report.not_run = Some(format!(
                "cannot make a directory for the loader's trace: {e}"
            ));
            return report;
        }
    };
    let mut child = Command::new(program);
    match ld_library_path {
        Some(path) => child.env("LD_LIBRARY_PATH", path),
        None => child.env_remove("LD_LIBRARY_PATH"),
    };
    child
        .args(args)
        .env("LD_DEBUG", "libs,files")
        .env("LD_DEBUG_OUTPUT", trace.path().join("ld"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let started = Instant::now();
    let mut child = match crate::process::spawn(&mut child, None, crate::process::Sight::Own) {
        Ok(child) => child,
        Err(e) => {
            report.not_run = Some(format!("cannot run {program}: {e}"));
            return report;
        }
    };
    let seen = Arc::new(Mutex::new(Seen::default()));
    let relays: Vec<_> = (crate::process::output_streams(&mut child).into_iter())
        .map(|stream| {
            let seen = Arc::clone(&seen);
            std::thread::spawn(move || relay(stream, quiet, &seen))
        })
        .collect();
    let status = crate::process::exit_within(&mut child, timeout);
    report.seconds = started.elapsed().as_secs_f64();
    report.timed_out = status.is_none();
    if let Some(status) = status {
        use std::os::unix::process::ExitStatusExt;
        report.exit_status = status.code();
        report.signal = status.signal();
    }
    for relay in relays {
        let _ = relay.join();
    }
    if let Ok(seen) = seen.lock() {
        report.error_lines = seen.error_lines.clone();
        report.include_dirs = seen.include_dirs.clone();
    }
    for_each_trace(trace.path(), |trace| {
        report.libraries.extend(cuda_libraries(trace));
        for program in programs(trace) {
            if !report.programs.contains(&program) {
                report.programs.push(program);
            }
        }
    });
    report
}

/// What the program's output showed.
#[derive(Default)]
struct Seen {
    error_lines: Vec<String>,
    include_dirs: Vec<PathBuf>,
}

/// Copies the program's output to our standard error (unless `quiet`), keeping error lines and
/// the include directories of compiler lines.
fn relay(stream: Box<dyn Read + Send>, quiet: bool, seen: &Mutex<Seen>) {
    let mut reader = BufReader::new(stream);
    let mut line = Vec::new();
    while (&mut reader)
        .take(LINE_LIMIT)
        .read_until(b'\n', &mut line)
        .is_ok_and(|n| n > 0)
    {
        if !quiet {
            let _ = std::io::stderr().write_all(&line);
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end();
        let error = ERROR_PATTERNS
            .into_iter()
            .chain(crate::toolchain::failure::patterns())
            .any(|p| text.contains(p));
        let dirs = crate::toolchain::failure::include_dirs(text);
        if let Ok(mut seen) = seen.lock() {
            if error && seen.error_lines.len() < MAX_ERROR_LINES {
                seen.error_lines.push(text.to_owned());
            }
            for dir in dirs {
                if !seen.include_dirs.contains(&dir) && seen.include_dirs.len() < MAX_ERROR_LINES {
                    seen.include_dirs.push(dir);
                }
            }
        }
        line.clear();
    }
}

/// Calls `each` on every trace file under `dir` (one per process), in the order of their
/// process ids, one at a time: a program that starts thousands of processes costs the memory of
/// one trace.
fn for_each_trace(dir: &Path, mut each: impl FnMut(&str)) {
    let mut files: Vec<(u64, PathBuf)> = crate::hostfs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let pid = e.file_name().to_str()?.strip_prefix("ld.")?.parse().ok()?;
            Some((pid, e.path()))
        })
        .collect();
    files.sort();
    for (_, path) in files {
        if let Ok(trace) = crate::hostfs::read_lossy(&path, crate::hostfs::LISTING) {
            each(&trace);
        }
    }
}

/// The programs one process's trace shows starting (`initialize program: gcc`).
pub fn programs(trace: &str) -> Vec<String> {
    trace
        .lines()
        .filter_map(strip_pid)
        .filter_map(|l| l.trim().strip_prefix("initialize program: "))
        .map(str::to_owned)
        .collect()
}

/// The CUDA libraries one process's `LD_DEBUG=libs,files` trace shows it asking for: each
/// `find library=NAME` with the files tried after it, found when the loader then generated a
/// link map for one of them; and each path opened as given (`dlopen("/x/libcudnn.so.8")`, which
/// the loader does not search for). A name asked for again is listed once.
pub fn cuda_libraries(trace: &str) -> Vec<CommandLibrary> {
    let lines: Vec<&str> = trace.lines().filter_map(strip_pid).map(str::trim).collect();
    let mapped: Vec<&str> = lines
        .iter()
        .filter_map(|l| l.strip_prefix("file="))
        .filter(|l| l.contains("generating link map"))
        .filter_map(|l| l.split(" [").next())
        .collect();
    let is_cuda = |name: &str| catalog::classify(name.rsplit('/').next().unwrap_or(name)).is_some();
    let mut out: Vec<CommandLibrary> = Vec::new();
    for (at, line) in lines.iter().enumerate() {
        let searched = line
            .strip_prefix("find library=")
            .and_then(|rest| rest.split(" [").next());
        // `file=/x/lib.so [0];  dynamically loaded by ...` (or `needed by`): opened as given.
        let given = line
            .strip_prefix("file=")
            .filter(|rest| rest.contains("loaded by") || rest.contains("needed by"))
            .and_then(|rest| rest.split(" [").next())
            .filter(|name| name.contains('/'));
        let Some(name) = searched.or(given) else {
            continue;
        };
        if !is_cuda(name) || out.iter().any(|l| l.name == name) {
            continue;
        }
        // The search's lines: up to the next search.
        let block: Vec<&str> = lines[at + 1..]
            .iter()
            .take_while(|l| !l.starts_with("find library="))
            .copied()
            .collect();
        let tried: Vec<PathBuf> = if searched.is_some() {
            block
                .iter()
                .filter_map(|l| l.strip_prefix("trying file="))
                .map(PathBuf::from)
                .collect()
        } else {
            vec![PathBuf::from(name)]
        };
        // The loader names the link map it generates by the name asked for or by the path.
        let linked = |what: &str| mapped.contains(&what);
        let found = match searched {
            Some(_)
                if block.iter().any(|l| {
                    l.strip_prefix("file=")
                        .and_then(|rest| rest.split(" [").next())
                        .is_some_and(|n| n == name)
                        && l.contains("generating link map")
                }) =>
            {
                tried.last().cloned()
            }
            _ => tried.iter().find(|t| linked(&t.to_string_lossy())).cloned(),
        };
        out.push(CommandLibrary {
            name: name.to_owned(),
            found,
            tried,
            installation: None,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A program writing 8 MiB on one line holding an error: the line is looked at in pieces of
    /// at most [`LINE_LIMIT`] bytes, so what is kept of it is bounded, and the error still seen.
    #[test]
    fn a_line_without_end_is_looked_at_in_bounded_pieces() {
        let long = std::io::repeat(b'x')
            .take(8 << 20)
            .chain(&b"CUDA_ERROR_NO_DEVICE"[..])
            .chain(std::io::repeat(b'y').take(8 << 20))
            .chain(&b"\nundefined symbol: cublasLtCreate\n"[..]);
        let seen = Mutex::new(Seen::default());
        relay(Box::new(long), true, &seen);
        let seen = seen.into_inner().unwrap();
        assert!(seen
            .error_lines
            .iter()
            .all(|l| l.len() as u64 <= LINE_LIMIT));
        assert!(seen
            .error_lines
            .iter()
            .any(|l| l.contains("CUDA_ERROR_NO_DEVICE")));
        assert!(seen
            .error_lines
            .contains(&"undefined symbol: cublasLtCreate".to_owned()));
    }

    const TRACE: &str = "     41:\tfind library=libcudart.so.12 [0]; searching
     41:\t search path=/venv/nvidia/cuda_runtime/lib\t\t(RUNPATH from file ./main)
     41:\t  trying file=/venv/nvidia/cuda_runtime/lib/libcudart.so.12
     41:\t
     41:\tfile=libcudart.so.12 [0];  needed by ./main [0]
     41:\tfile=/venv/nvidia/cuda_runtime/lib/libcudart.so.12 [0];  generating link map
     41:\tfind library=libc.so.6 [0]; searching
     41:\t  trying file=/lib/x86_64-linux-gnu/libc.so.6
     41:\tfile=/lib/x86_64-linux-gnu/libc.so.6 [0];  generating link map
     41:\tfind library=libcublasLt.so.12 [0]; searching
     41:\t search cache=/etc/ld.so.cache
     41:\t  trying file=/lib/x86_64-linux-gnu/libcublasLt.so.12
     41:\t  trying file=/usr/lib/libcublasLt.so.12
     41:\tfind library=libcublasLt.so.12 [0]; searching
     41:\tfile=/venv/nvidia/cudnn/lib/libcudnn.so.8 [0];  dynamically loaded by ./main [0]
     41:\tfile=/venv/nvidia/cudnn/lib/libcudnn.so.8 [0];  generating link map
";

    #[test]
    fn the_trace_gives_each_cuda_library_once_with_the_file_it_got() {
        let libraries = cuda_libraries(TRACE);
        let names: Vec<&str> = libraries.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "libcudart.so.12",
                "libcublasLt.so.12",
                "/venv/nvidia/cudnn/lib/libcudnn.so.8"
            ]
        );
        assert!(libraries[2].found.is_some());
        assert_eq!(
            libraries[0].found.as_deref(),
            Some(Path::new("/venv/nvidia/cuda_runtime/lib/libcudart.so.12"))
        );
        assert_eq!(libraries[1].found, None);
        assert_eq!(libraries[1].tried.len(), 2);
    }

    #[test]
    fn a_program_s_output_is_kept_apart_from_the_trace_and_its_status_reported() {
        let script = "echo 'OSError: libcublasLt.so.12: cannot open shared object file'; exit 3";
        let command = ["sh", "-c", script].map(String::from);
        let report = run(&command, None, Duration::from_secs(10), true);
        assert_eq!(report.exit_status, Some(3));
        assert_eq!(
            report.error_lines,
            ["OSError: libcublasLt.so.12: cannot open shared object file"]
        );
        assert!(!report.timed_out);
        let hang = run(
            &["sleep", "30"].map(String::from),
            None,
            Duration::from_millis(200),
            true,
        );
        assert!(hang.timed_out);
        let missing = run(
            &["/nonexistent/program".to_string()],
            None,
            Duration::from_secs(1),
            true,
        );
        assert!(missing.not_run.is_some());
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_traces_never_panic(text in ".{0,400}") {
            let _ = cuda_libraries(&text);
        }
    }
}
