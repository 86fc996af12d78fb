//! A hostile host: what any user of a shared node can leave where a root run of stackbench looks
//! (FIFOs, links to endless devices, sparse files of 100 GB, link loops, directories 60 deep, a
//! file that grows while read, thousands of environments, libraries that reach for the terminal,
//! fork away or write without end) must cost the run a named finding, never a hang, the node's
//! memory, a process left behind or root's terminal. And stackbench as a container's PID 1
//! (`unshare -pf`) must pass the checks it passes elsewhere and end on SIGTERM.

// Tests read the files they make and the checkout's own: std's readers are theirs (clippy.toml).
#![allow(clippy::disallowed_methods)]

mod common;

use common::pid::PidCatcher;
use common::*;
use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The user another user's files belong to, when the tests run as root.
const OTHER: u32 = 4242;

/// The peak resident memory the issue allows a run on the hostile host.
const RSS_LIMIT_KB: i64 = 256 * 1024;

/// Long enough for any of these runs on a loaded machine; a run killed at it hung.
const HUNG: Duration = Duration::from_secs(300);

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn mkfifo(path: &Path) {
    let name = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o644) }, 0, "mkfifo");
}

fn sparse(path: &Path, len: u64) {
    fs::File::create(path).unwrap().set_len(len).unwrap();
}

/// Makes `path`'s parent and writes `bytes` there.
fn write(path: &Path, bytes: &[u8]) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, bytes).unwrap();
}

/// Makes `path`'s parent and writes there `head`, then as many of `items` (each with `sep`
/// after it but the last) as fit in `len` bytes with `tail`, written as they are made: the
/// tests' own memory is in the peak a child's `wait4` reports, so no listing is held whole.
fn write_listing(
    path: &Path,
    len: usize,
    (head, sep, tail): (&str, &str, &str),
    item: impl Fn(usize) -> String,
) {
    use std::io::Write;
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut out = std::io::BufWriter::new(fs::File::create(path).unwrap());
    out.write_all(head.as_bytes()).unwrap();
    let mut written = head.len();
    for i in 0.. {
        let next = item(i);
        let joint = if i == 0 { "" } else { sep };
        if written + joint.len() + next.len() + tail.len() > len {
            break;
        }
        out.write_all(joint.as_bytes()).unwrap();
        out.write_all(next.as_bytes()).unwrap();
        written += joint.len() + next.len();
    }
    out.write_all(tail.as_bytes()).unwrap();
    out.flush().unwrap();
}

/// Gives the tree to [`OTHER`] when we are root, as another user's home would be.
fn give_away(root: &Path) {
    if is_root() {
        let status = Command::new("chown")
            .args(["-R", "-h", &format!("{OTHER}:{OTHER}")])
            .arg(root)
            .status()
            .unwrap();
        assert!(status.success());
    }
}

/// A directory others may enter, for trees a worker run as [`OTHER`] must reach.
fn open_tempdir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

/// How a run ended: its status (`None`: killed at [`HUNG`]), output, peak RSS and wall time.
struct Ended {
    code: Option<i32>,
    signal: Option<i32>,
    stdout: Vec<u8>,
    stderr: String,
    max_rss_kb: i64,
    took: Duration,
}

/// Runs `command` to its end (killed at [`HUNG`]), reading its peak RSS from `wait4`.
fn run_measured(mut command: Command) -> Ended {
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let started = Instant::now();
    let mut child = command.spawn().expect("start stackbench");
    let pid = child.id() as libc::pid_t;
    let (out, err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let out = std::thread::spawn(move || read_all(out));
    let err = std::thread::spawn(move || read_all(err));
    let done = Arc::new(AtomicBool::new(false));
    let watchdog = {
        let done = Arc::clone(&done);
        std::thread::spawn(move || {
            while !done.load(Ordering::SeqCst) {
                if started.elapsed() > HUNG {
                    // SAFETY: kill(2) of our own child.
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        })
    };
    let mut status = 0;
    // SAFETY: a zeroed rusage written by wait4 for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let reaped = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(reaped, pid, "wait4");
    done.store(true, Ordering::SeqCst);
    watchdog.join().unwrap();
    let took = started.elapsed();
    std::mem::forget(child);
    Ended {
        code: libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)),
        signal: libc::WIFSIGNALED(status).then(|| libc::WTERMSIG(status)),
        stdout: out.join().unwrap(),
        stderr: String::from_utf8_lossy(&err.join().unwrap()).into_owned(),
        max_rss_kb: usage.ru_maxrss,
        took,
    }
}

fn read_all(mut source: impl std::io::Read) -> Vec<u8> {
    let mut bytes = Vec::new();
    let _ = source.read_to_end(&mut bytes);
    bytes
}

/// A site-packages below `venv`, as pip lays it out.
fn site(venv: &Path) -> PathBuf {
    venv.join("lib/python3.11/site-packages")
}

/// The hostile tree: every name stackbench reads, each something that is not a file of its
/// kind, beside real libraries that must still be read. Returns the paths doctor must name,
/// each with the problem code it must give.
fn hostile_tree(root: &Path) -> Vec<(PathBuf, &'static str)> {
    let cudart = real_cudart();
    let mut named = Vec::new();
    // A venv whose metadata are a FIFO and a link to /dev/zero, beside a real runtime.
    let venv = root.join("home/mallory/fifo-venv");
    mkfifo(&{
        fs::create_dir_all(&venv).unwrap();
        venv.join("pyvenv.cfg")
    });
    let dist_info = site(&venv).join("nvidia_cuda_runtime_cu12-12.9.79.dist-info");
    fs::create_dir_all(&dist_info).unwrap();
    mkfifo(&dist_info.join("METADATA"));
    named.push((dist_info.join("METADATA"), "not_regular_file"));
    // A wheel whose METADATA reads, and whose RECORD never ends.
    let dist_info = site(&venv).join("nvidia_cublas_cu12-12.9.1.4.dist-info");
    write(
        &dist_info.join("METADATA"),
        b"Name: nvidia-cublas-cu12\nVersion: 12.9.1.4\n",
    );
    symlink("/dev/zero", dist_info.join("RECORD")).unwrap();
    named.push((dist_info.join("RECORD"), "not_regular_file"));
    let lib = site(&venv).join("nvidia/cuda_runtime/lib");
    fs::create_dir_all(&lib).unwrap();
    fs::copy(&cudart, lib.join("libcudart.so.12")).unwrap();
    // Libraries that are no libraries: an endless device, a FIFO, a sparse 100 GB file, a loop.
    symlink("/dev/zero", lib.join("libcublas.so.12")).unwrap();
    named.push((lib.join("libcublas.so.12"), "not_regular_file"));
    symlink("/dev/urandom", lib.join("libcublasLt.so.12")).unwrap();
    named.push((lib.join("libcublasLt.so.12"), "not_regular_file"));
    mkfifo(&lib.join("libnvrtc.so.12"));
    named.push((lib.join("libnvrtc.so.12"), "not_regular_file"));
    sparse(&lib.join("libcufft.so.11"), 100 << 30);
    named.push((lib.join("libcufft.so.11"), "too_large"));
    symlink("libcurand.so.10", lib.join("libcurand.so.10")).unwrap();
    // A venv whose metadata are endless: urandom, and a sparse RECORD far past any listing.
    let venv = root.join("home/mallory/endless-venv");
    fs::create_dir_all(&venv).unwrap();
    symlink("/dev/urandom", venv.join("pyvenv.cfg")).unwrap();
    let dist_info = site(&venv).join("nvidia_cuda_nvrtc_cu12-12.9.86.dist-info");
    fs::create_dir_all(&dist_info).unwrap();
    symlink("/dev/urandom", dist_info.join("METADATA")).unwrap();
    named.push((dist_info.join("METADATA"), "not_regular_file"));
    let lib = site(&venv).join("nvidia/cuda_nvrtc/lib");
    fs::create_dir_all(&lib).unwrap();
    fs::copy(&cudart, lib.join("libcudart.so.12")).unwrap();
    // A wheel whose RECORD stays just under the listings' cap (64 MiB) with millions of short
    // lines, each a "library": once 1.2 GB and 20 s of doctor, now refused past its lines.
    let venv = root.join("home/mallory/listing-venv");
    write(&venv.join("pyvenv.cfg"), b"home = /usr/bin\n");
    let dist_info = site(&venv).join("nvidia_cufft_cu12-11.4.1.4.dist-info");
    write(
        &dist_info.join("METADATA"),
        b"Name: nvidia-cufft-cu12\nVersion: 11.4.1.4\n",
    );
    write_listing(&dist_info.join("RECORD"), 63 << 20, ("", "", ""), |i| {
        format!("{i:07}.so,,\n")
    });
    named.push((dist_info.join("RECORD"), "too_large"));
    let lib = site(&venv).join("nvidia/cuda_runtime/lib");
    fs::create_dir_all(&lib).unwrap();
    fs::copy(&cudart, lib.join("libcudart.so.12")).unwrap();
    // A real library grown sparse to just under the largest a library is read at (4 GiB): it
    // is read, by its parts; copied whole, as another user's library once was, it cost 4 GiB.
    let grown = lib.join(GROWN);
    fs::copy(&cudart, &grown).unwrap();
    fs::OpenOptions::new()
        .write(true)
        .open(&grown)
        .unwrap()
        .set_len((4 << 30) - 4096)
        .unwrap();
    // A toolkit whose version.json is a FIFO, a conda environment whose records are endless.
    let toolkit = root.join("usr/local/cuda-12.9");
    fs::create_dir_all(toolkit.join("lib64")).unwrap();
    mkfifo(&toolkit.join("version.json"));
    named.push((toolkit.join("version.json"), "not_regular_file"));
    fs::copy(&cudart, toolkit.join("lib64/libcudart.so.12")).unwrap();
    let conda = root.join("home/mallory/conda/envs/cu12");
    fs::create_dir_all(conda.join("conda-meta")).unwrap();
    fs::create_dir_all(conda.join("lib")).unwrap();
    symlink(
        "/dev/zero",
        conda.join("conda-meta/cuda-cudart-12.9.79-0.json"),
    )
    .unwrap();
    named.push((
        conda.join("conda-meta/cuda-cudart-12.9.79-0.json"),
        "not_regular_file",
    ));
    mkfifo(&conda.join("conda-meta/cuda-version-12.9-3.json"));
    named.push((
        conda.join("conda-meta/cuda-version-12.9-3.json"),
        "not_regular_file",
    ));
    fs::copy(&cudart, conda.join("lib/libcudart.so.12")).unwrap();
    // A conda package record just under the listings' cap, listing millions of libraries.
    write_listing(
        &conda.join("conda-meta/cuda-nvrtc-12.9.86-0.json"),
        63 << 20,
        (
            r#"{"name":"cuda-nvrtc","version":"12.9.86","files":["#,
            ",",
            "]}",
        ),
        |i| format!("\"lib/{i:07}.so\""),
    );
    named.push((
        conda.join("conda-meta/cuda-nvrtc-12.9.86-0.json"),
        "too_large",
    ));
    // Directory link loops, a tree 60 deep, a directory nobody may read.
    let loops = root.join("home/mallory/loops");
    fs::create_dir_all(&loops).unwrap();
    symlink("..", loops.join("up")).unwrap();
    symlink("b", loops.join("a")).unwrap();
    symlink("a", loops.join("b")).unwrap();
    let mut deep = root.join("home/mallory/deep");
    for _ in 0..60 {
        deep = deep.join("d");
    }
    fs::create_dir_all(&deep).unwrap();
    let locked = root.join("home/mallory/locked");
    fs::create_dir_all(&locked).unwrap();
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o000)).unwrap();
    // Thousands of environments, each with its wheel's metadata.
    for i in 0..5000 {
        let venv = root.join(format!("home/u{i}/venv"));
        write(&venv.join("pyvenv.cfg"), b"home = /usr/bin\n");
        write(
            &site(&venv).join("nvidia_cuda_runtime_cu12-12.9.79.dist-info/METADATA"),
            b"Name: nvidia-cuda-runtime-cu12\nVersion: 12.9.79\n",
        );
    }
    named
}

/// The name of the real library grown sparse to just under the largest size read.
const GROWN: &str = "libcudart.so.12.9.79";

/// A file of 1 GiB that grows for as long as the returned flag is unset: sparse, so it costs
/// no disk.
fn growing(path: &Path) -> (Arc<AtomicBool>, std::thread::JoinHandle<()>) {
    let file = fs::File::create(path).unwrap();
    file.set_len(1 << 30).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    let grower = std::thread::spawn(move || {
        let mut len = 1u64 << 30;
        while !flag.load(Ordering::SeqCst) && len < (100 << 30) {
            len += 16 << 20;
            let _ = file.set_len(len);
            std::thread::sleep(Duration::from_millis(1));
        }
    });
    (stop, grower)
}

#[test]
fn doctor_on_a_hostile_tree_names_every_hostile_file_and_neither_hangs_nor_swells() {
    let dir = open_tempdir();
    let root = dir.path().canonicalize().unwrap().join("host");
    let named = hostile_tree(&root);
    // A RECORD that grows while it is read, already past any listing's cap.
    let dist_info = site(&root.join("home/mallory/endless-venv"))
        .join("nvidia_cuda_cupti_cu12-12.9.79.dist-info");
    write(
        &dist_info.join("METADATA"),
        b"Name: nvidia-cuda-cupti-cu12\nVersion: 12.9.79\n",
    );
    let (stop, grower) = growing(&dist_info.join("RECORD"));
    let mut named = named;
    named.push((dist_info.join("RECORD"), "too_large"));
    give_away(&root.join("home"));
    let mut doctor = Command::new(stackbench_bin());
    doctor
        .args(["doctor", "--no-system", "--format", "json", "--root"])
        .arg(&root)
        .env("HOME", dir.path())
        .stdin(Stdio::null());
    let ended = run_measured(doctor);
    stop.store(true, Ordering::SeqCst);
    grower.join().unwrap();
    unlock(&root);
    assert_ended_unswollen("doctor", &ended);
    let report = doctor_report(&ended.stdout);
    let findings = findings_of(&report, "scan_problem");
    for (path, code) in named {
        let shown = path.display().to_string();
        assert!(
            findings.iter().any(|f| f["path"] == shown.as_str()
                && f["message"]
                    .as_str()
                    .is_some_and(|m| m.starts_with(&format!("{code}: ")))),
            "no {code} finding names {shown}: {}",
            serde_json::to_string_pretty(&findings).unwrap()
        );
    }
    // The real libraries beside them were still read.
    let libraries = report["installations"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|i| i["libraries"].as_array().unwrap().iter())
        .filter(|l| l["soname"] == "libcudart.so.12" && l["machine"] == "x86_64")
        .count();
    assert!(libraries >= 4, "{libraries} real runtimes read");
    let grown = report["installations"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|i| i["libraries"].as_array().unwrap().iter())
        .find(|l| l["path"].as_str().is_some_and(|p| p.ends_with(GROWN)));
    assert!(
        grown.is_some_and(|l| l["soname"] == "libcudart.so.12" && l["machine"] == "x86_64"),
        "the library grown sparse to 4 GiB was not read: {grown:?}"
    );
}

/// A tree (`host` in a fresh directory) holding a real CUDA runtime in `lib` below it: the
/// directory, the tree, and the runtime's directory.
fn one_runtime_at(lib: &std::ffi::OsStr) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = open_tempdir();
    let root = dir.path().canonicalize().unwrap().join("host");
    let lib = root.join(lib);
    fs::create_dir_all(&lib).unwrap();
    fs::copy(real_cudart(), lib.join("libcudart.so.12")).unwrap();
    (dir, root, lib)
}

/// Any user can name a directory with bytes that are not UTF-8: every format still writes
/// its report (JSON used to exit 2 with none), the text formats show the escaped name, and the
/// JSON form reads back to the very bytes.
#[rstest::rstest]
#[case::scan("scan", &["json", "csv", "markdown"])]
#[case::doctor("doctor", &["json", "csv", "markdown", "openmetrics", "terminal"])]
fn a_name_that_is_not_utf8_fails_no_format_and_reads_back_to_its_bytes(
    #[case] command: &str,
    #[case] formats: &[&str],
) {
    use std::os::unix::ffi::OsStrExt;
    let (dir, root, lib) = one_runtime_at(std::ffi::OsStr::from_bytes(b"opt/\xff\xfe/lib"));
    for format in formats {
        let out = Command::new(stackbench_bin())
            .arg(command)
            .args((command == "doctor").then_some("--no-load"))
            .args(["--no-system", "--format", format, "--root"])
            .arg(&root)
            .env("HOME", dir.path())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.code().is_some_and(|c| c < 2),
            "{command} --format {format}: {:?}\n{stdout}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        // OpenMetrics counts findings and doctor's CSV lists findings: neither names this path.
        let shown = match (command, *format) {
            (_, "openmetrics") | ("doctor", "csv") => None,
            (_, "json") => Some(r"opt/\\xff\\xfe/lib"),
            _ => Some(r"opt/\xff\xfe/lib"),
        };
        assert!(
            shown.is_none_or(|name| stdout.contains(name)),
            "{command} --format {format} does not show the escaped name:\n{stdout}"
        );
        if *format != "json" {
            continue;
        }
        let libraries: Vec<PathBuf> = if command == "scan" {
            let report: stackbench::model::ScanReport = serde_json::from_slice(&out.stdout)
                .unwrap_or_else(|e| panic!("scan's JSON does not read back: {e}\n{stdout}"));
            report
                .installations
                .into_iter()
                .flat_map(|i| i.libraries)
                .map(|l| l.path)
                .collect()
        } else {
            let report: stackbench::doctor::DoctorReport = serde_json::from_slice(&out.stdout)
                .unwrap_or_else(|e| panic!("doctor's JSON does not read back: {e}\n{stdout}"));
            report
                .installations
                .into_iter()
                .flat_map(|i| i.libraries)
                .map(|l| l.path)
                .collect()
        };
        assert!(
            libraries.contains(&lib.join("libcudart.so.12")),
            "{command}: the library under the name is not read back to its bytes: {libraries:?}"
        );
    }
}

/// Names any user may give that are UTF-8 but unkind: a newline inside, and a tree 4,000 bytes
/// deep in 250-byte components (near `PATH_MAX`). The runtime below each is read, and doctor's
/// JSON reads back to the very path.
#[rstest::rstest]
#[case::newline("", "opt/new\nline/lib")]
#[case::four_thousand_bytes_deep(&format!("{}/", vec!["n".repeat(250); 15].join("/")), "opt/lib")]
fn a_library_under_an_unkind_name_is_read_and_named_exactly(
    #[case] above: &str,
    #[case] lib: &str,
) {
    let dir = open_tempdir();
    let root = dir.path().canonicalize().unwrap().join(above).join("host");
    let lib = root.join(lib);
    fs::create_dir_all(&lib).unwrap();
    fs::copy(real_cudart(), lib.join("libcudart.so.12")).unwrap();
    let out = Command::new(stackbench_bin())
        .args([
            "doctor",
            "--no-load",
            "--no-system",
            "--format",
            "json",
            "--root",
        ])
        .arg(&root)
        .env("HOME", dir.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.code().is_some_and(|c| c < 2), "{out:?}");
    let report: stackbench::doctor::DoctorReport = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("doctor's JSON does not read back: {e}"));
    let libraries: Vec<PathBuf> = report
        .installations
        .into_iter()
        .flat_map(|i| i.libraries)
        .map(|l| l.path)
        .collect();
    assert!(
        libraries.contains(&lib.join("libcudart.so.12")),
        "not read, or not named exactly ({} bytes): {libraries:?}",
        lib.as_os_str().len()
    );
}

/// Where a file cannot be reopened through the descriptor that was judged (no `/proc`, as in a
/// chroot), it is named as not read, never opened again by its name, where another file could
/// have been swapped in. Mutation: `hostfs::reopen` falling back to the path reads the library
/// and names nothing.
#[test]
fn without_proc_a_file_is_named_as_not_read_never_reopened_by_its_name() {
    if !is_root() {
        eprintln!("skipped: needs root (unshare -m, to unmount /proc); CI runs as root");
        return;
    }
    let (dir, root, _) = one_runtime_at("opt/cuda/lib64".as_ref());
    let out = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c"])
        .arg(r#"umount -l /proc && exec "$0" "$@""#)
        .arg(stackbench_bin())
        .args(["scan", "--no-system", "--format", "json", "--root"])
        .arg(&root)
        .env("HOME", dir.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.code().is_some_and(|c| c < 2),
        "{:?}\n{stdout}{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("libcudart.so.12")
            && stdout.contains("cannot be reopened through its descriptor"),
        "{stdout}"
    );
}

/// check and bench read the host as doctor does: on the hostile tree each ends by itself,
/// within the memory the issue allows, and is no harness failure (exit 2).
#[rstest::rstest]
#[case::check(&["check", "--no-system"])]
#[case::bench(&["bench", "--quick", "--no-system"])]
fn check_and_bench_on_a_hostile_tree_end_by_themselves_and_do_not_swell(#[case] run: &[&str]) {
    let dir = open_tempdir();
    let root = dir.path().canonicalize().unwrap().join("host");
    hostile_tree(&root);
    give_away(&root.join("home"));
    let mut command = Command::new(stackbench_bin());
    command.args(run).args(["--format", "json"]);
    if run[0] == "bench" {
        command.arg("--results").arg(dir.path().join("results"));
    }
    command
        .arg("--root")
        .arg(&root)
        .env("HOME", dir.path())
        .stdin(Stdio::null());
    let ended = run_measured(command);
    unlock(&root);
    assert_ended_unswollen(run[0], &ended);
}

/// Lets the test's clean-up into the tree's unreadable directory again.
fn unlock(root: &Path) {
    let locked = root.join("home/mallory/locked");
    fs::set_permissions(locked, fs::Permissions::from_mode(0o755)).unwrap();
}

/// Asserts that the run of `what` ended by itself, was no harness failure (exit 2), and stayed
/// under the memory the issue allows.
fn assert_ended_unswollen(what: &str, ended: &Ended) {
    eprintln!(
        "{what}: peak RSS {} kB, {:.1} s",
        ended.max_rss_kb,
        ended.took.as_secs_f64()
    );
    assert!(
        ended.code.is_some(),
        "{what} did not end by itself (signal {:?}, after {:?}): {}",
        ended.signal,
        ended.took,
        ended.stderr
    );
    assert_ne!(ended.code, Some(2), "{}", ended.stderr);
    assert!(
        ended.max_rss_kb < RSS_LIMIT_KB,
        "{what}'s peak RSS was {} kB",
        ended.max_rss_kb
    );
}

#[test]
fn root_never_opens_a_device_a_library_name_leads_to() {
    let dir = open_tempdir();
    let root = dir.path().canonicalize().unwrap();
    let lib = site(&root.join("venv")).join("nvidia/cuda_runtime/lib");
    fs::create_dir_all(&lib).unwrap();
    fs::copy(real_cudart(), lib.join("libcudart.so.12")).unwrap();
    // /dev/full stands for /dev/watchdog, which an open alone arms (and std opens /dev/null).
    symlink("/dev/full", lib.join("libcublas.so.12")).unwrap();
    let trace = root.join("trace");
    let status = Command::new("strace")
        .args(["-f", "-qq", "-e", "trace=open,openat,openat2", "-o"])
        .arg(&trace)
        .arg(stackbench_bin())
        .args(["doctor", "--no-system", "--root"])
        .arg(&root)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("these tests run doctor under strace: install Debian's strace");
    assert!(status.code().is_some_and(|c| c < 2), "{status}");
    let trace = fs::read_to_string(trace).unwrap();
    let opened: Vec<&str> = trace
        .lines()
        .filter(|l| l.contains("libcublas.so.12") || l.contains("/dev/full"))
        .filter(|l| !l.contains("O_PATH") && !l.contains("ENOENT"))
        .collect();
    assert!(
        opened.is_empty(),
        "the device behind libcublas.so.12 was opened: {opened:#?}"
    );
}

/// A library for `doctor` to probe whose constructor does `body` (C), in `dir`'s pip layout.
fn probed_library(dir: &Path, body: &str) -> PathBuf {
    probed_library_with(dir, "", body)
}

/// [`probed_library`] with C definitions (`defined`) before the constructor.
fn probed_library_with(dir: &Path, defined: &str, body: &str) -> PathBuf {
    let lib = site(&dir.join("venv")).join("nvidia/cuda_runtime/lib");
    fs::create_dir_all(&lib).unwrap();
    let source = format!(
        "#include <fcntl.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n\
         #include <sys/ioctl.h>\n#include <sys/socket.h>\n#include <sys/un.h>\n\
         #include <unistd.h>\n{defined}\n\
         __attribute__((constructor)) static void hostile(void) {{ {body} }}\n\
         int cudaRuntimeGetVersion(int *v) {{ *v = 12090; return 0; }}\n"
    );
    build_library(&lib, "libcudart.so.12", "libcudart.so.12", &source);
    dir.join("venv")
}

/// A scratch directory others may enter (canonical), and in it `marks/`, where a probed
/// library, run as whichever user, leaves what it saw.
fn with_marks() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = open_tempdir();
    let root = dir.path().canonicalize().unwrap();
    let marks = root.join("marks");
    fs::create_dir(&marks).unwrap();
    fs::set_permissions(&marks, fs::Permissions::from_mode(0o777)).unwrap();
    (dir, root, marks)
}

#[test]
fn a_library_finds_no_terminal_to_push_input_into() {
    let (_dir, root, marks) = with_marks();
    let body = format!(
        "int fd = open(\"/dev/tty\", O_RDWR | O_NOCTTY);\
         FILE *m = fopen(\"{}/tty\", \"w\");\
         if (fd < 0) {{ fputs(\"none\", m); }} else {{\
           const char *c = \"#\"; int pushed = ioctl(fd, TIOCSTI, c);\
           fputs(pushed == 0 ? \"pushed\" : \"tty\", m); }}\
         fclose(m);",
        marks.display()
    );
    let venv = probed_library(&root, &body);
    give_away(&venv);
    // doctor with a controlling terminal, as root at an interactive shell has one.
    let command = format!(
        "{} doctor --no-system --root {} >/dev/null 2>&1",
        stackbench_bin().display(),
        venv.display()
    );
    let status = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .status()
        .expect("run util-linux's script");
    assert!(status.code().is_some_and(|c| c < 2), "{status}");
    let seen = fs::read_to_string(marks.join("tty")).expect("the library was loaded");
    assert_eq!(seen, "none", "a probed library had a terminal");
}

/// Whether process `pid` is gone (or a zombie no one has reaped yet), within a few seconds.
fn gone(pid: i32) -> bool {
    for _ in 0..100 {
        let state = fs::read_to_string(format!("/proc/{pid}/stat")).ok();
        match state.as_deref().and_then(|s| s.rsplit_once(')')) {
            None => return true,
            Some((_, rest)) if rest.trim_start().starts_with('Z') => return true,
            Some(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
    false
}

/// A library that forks twice, the grandchild in a session of its own, which says its pid to
/// the returned catcher and sleeps; the load goes on once it has said it (a mark beside the
/// catcher's socket), then does `then` (C). The venv, and the catcher.
fn forking_away(then: &str) -> (tempfile::TempDir, PathBuf, PidCatcher) {
    let (dir, root, marks) = with_marks();
    let catcher = PidCatcher::listen(&marks.join("pid.sock"));
    let body = format!(
        "if (fork() == 0) {{ if (fork() == 0) {{ setsid(); say_pid();\
           FILE *m = fopen(\"{0}/said\", \"w\"); if (m) fclose(m);\
           sleep(300); _exit(0); }} _exit(0); }}\
         for (int i = 0; i < 1000 && access(\"{0}/said\", F_OK) != 0; i++) usleep(10000);\
         {then}",
        marks.display()
    );
    let venv = probed_library_with(&root, &catcher.say_pid_c(), &body);
    give_away(&venv);
    (dir, venv, catcher)
}

/// Asserts that process `pid`, forked away by a probed library, is gone (killing it if not).
fn assert_gone(pid: i32, after: &str) {
    let left = gone(pid);
    if !left {
        // SAFETY: kill(2) of the process the test's own library started.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    assert!(
        left,
        "process {pid}, forked away by a probed library, outlived {after}"
    );
}

#[test]
fn a_library_that_forks_a_new_session_away_leaves_nothing_behind() {
    let (_dir, venv, catcher) = forking_away("");
    let output = Command::new(stackbench_bin())
        .args(["doctor", "--no-system", "--root"])
        .arg(&venv)
        .output()
        .unwrap();
    assert!(output.status.code().is_some_and(|c| c < 2), "{output:?}");
    assert_gone(catcher.pid(), "doctor");
}

#[test]
fn a_library_s_runaway_dies_with_a_run_killed_outright() {
    if !is_root() {
        // Only root may give a worker a namespace of its own.
        return;
    }
    // The load then hangs: doctor is mid-run when it is killed.
    let (_dir, venv, catcher) = forking_away("sleep(300);");
    let mut doctor = Command::new(stackbench_bin())
        .args(["doctor", "--no-system", "--root"])
        .arg(&venv)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = catcher.pid();
    doctor.kill().unwrap();
    doctor.wait().unwrap();
    assert_gone(pid, "doctor killed with SIGKILL");
}

#[test]
fn a_library_that_writes_without_end_costs_a_finding_not_the_node_s_memory() {
    let dir = open_tempdir();
    let root = dir.path().canonicalize().unwrap();
    // Endless output on the worker's standard output (its events) and error.
    let body = "static char line[65536]; memset(line, 'x', sizeof line);\
                for (;;) { if (write(1, line, sizeof line) < 0) break;\
                           if (write(2, line, sizeof line) < 0) break; }";
    let venv = probed_library(&root, body);
    give_away(&venv);
    let mut doctor = Command::new(stackbench_bin());
    doctor
        .args(["doctor", "--no-system", "--format", "json", "--root"])
        .arg(&venv)
        .stdin(Stdio::null());
    let ended = run_measured(doctor);
    assert!(
        ended.code.is_some_and(|c| c < 2),
        "doctor ended {:?}/{:?} after {:?}: {}",
        ended.code,
        ended.signal,
        ended.took,
        ended.stderr
    );
    assert!(
        ended.max_rss_kb < RSS_LIMIT_KB,
        "doctor's peak RSS was {} kB",
        ended.max_rss_kb
    );
    let report = doctor_report(&ended.stdout);
    let load = probe_load(&report, "libcudart.so.12");
    assert_ne!(load["outcome"]["kind"], "loaded", "{load}");
}

#[test]
fn nohup_s_ignored_hangup_stays_ignored() {
    let dir = open_tempdir();
    let root = dir.path().canonicalize().unwrap();
    // A library that hangs in its constructor keeps doctor busy until the probe's deadline.
    let venv = probed_library(&root, "sleep(300);");
    let mut doctor = Command::new(stackbench_bin());
    doctor
        .args(["doctor", "--no-system", "--root"])
        .arg(&venv)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: signal(2) in the child before exec, as nohup does.
    unsafe {
        doctor.pre_exec(|| {
            libc::signal(libc::SIGHUP, libc::SIG_IGN);
            Ok(())
        });
    }
    let mut child = doctor.spawn().unwrap();
    std::thread::sleep(Duration::from_secs(1));
    // SAFETY: kill(2) of our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGHUP) };
    let status = child.wait().unwrap();
    assert!(
        status.code().is_some_and(|c| c < 2),
        "a hangup ended `nohup stackbench doctor`: {status}"
    );
}

#[test]
fn as_pid_1_check_passes_what_it_passes_elsewhere_and_sigterm_ends_it() {
    if !is_root() {
        eprintln!("skipped: needs root (unshare -pf makes a PID namespace); CI runs as root");
        return;
    }
    let dir = open_tempdir();
    let sim = simulator();
    let check = |pid1: bool, profile: &str| {
        let profile_path = dir.path().join(format!("{profile}.toml"));
        let toml = match profile {
            "hang" => "[faults]\nkernel_hang = \"vector_add\"\n",
            _ => "",
        };
        fs::write(&profile_path, toml).unwrap();
        let mut command = match pid1 {
            true => {
                let mut c = Command::new("unshare");
                c.args(["-pf", "--mount-proc"]).arg(stackbench_bin());
                c
            }
            false => Command::new(stackbench_bin()),
        };
        command
            .args(["check", "--no-system", "--format", "json", "--root"])
            .arg(&sim.toolkit_dir)
            .arg("--driver-dir")
            .arg(&sim.driver_dir)
            .env("STACKBENCH_SIM_PROFILE", &profile_path)
            .env("HOME", dir.path())
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        command
    };
    let statuses = |output: &std::process::Output| -> Vec<(String, String)> {
        let report = stdout_json(output);
        let mut all: Vec<(String, String)> = report["combinations"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|c| c["checks"].as_array().unwrap().iter())
            .map(|r| (r["id"].to_string(), r["status"].to_string()))
            .collect();
        all.sort();
        all
    };
    let outside = check(false, "plain").output().unwrap();
    let inside = check(true, "plain").output().unwrap();
    let (outside, inside) = (statuses(&outside), statuses(&inside));
    assert!(outside.iter().filter(|(_, s)| s == "\"pass\"").count() > 10);
    assert_eq!(inside, outside, "check as PID 1 differs from check outside");
    // A check stuck on a kernel that never completes: SIGTERM to PID 1 ends it, and its workers.
    let mut hung = check(true, "hang").spawn().unwrap();
    let unshare = hung.id();
    let pid1 = (0..200)
        .find_map(|_| {
            std::thread::sleep(Duration::from_millis(25));
            children(unshare).into_iter().next()
        })
        .expect("unshare started PID 1");
    std::thread::sleep(Duration::from_secs(2));
    let run: Vec<i32> = descendants(pid1);
    assert!(!run.is_empty(), "the run had started its workers");
    let sent = Instant::now();
    // SAFETY: kill(2) of the namespace's init, which the test started.
    unsafe { libc::kill(pid1, libc::SIGTERM) };
    let status = hung.wait().unwrap();
    assert!(
        sent.elapsed() < Duration::from_secs(60),
        "SIGTERM took {:?} to end PID 1",
        sent.elapsed()
    );
    assert!(!status.success(), "{status}");
    for pid in run {
        assert!(gone(pid), "process {pid} of the run outlived SIGTERM");
    }
}

/// The children of `pid`, from /proc.
fn children(pid: u32) -> Vec<i32> {
    let list = fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
    list.split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// Every descendant of `pid`.
fn descendants(pid: i32) -> Vec<i32> {
    let mut found = Vec::new();
    let mut next = vec![pid];
    while let Some(at) = next.pop() {
        for child in children(at as u32) {
            found.push(child);
            next.push(child);
        }
    }
    found
}

#[test]
fn compare_refuses_a_fifo_for_a_result_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("bench.json");
    mkfifo(&fifo);
    let mut compare = Command::new(stackbench_bin());
    compare
        .arg("compare")
        .arg(&fifo)
        .arg(&fifo)
        .stdin(Stdio::null());
    let ended = run_measured(compare);
    assert_eq!(ended.code, Some(2), "{}", ended.stderr);
    assert!(
        ended.stderr.contains("not a regular file (a FIFO)"),
        "{}",
        ended.stderr
    );
}

#[test]
fn a_worker_as_another_user_starts_from_a_binary_only_root_can_reach() {
    if !is_root() {
        eprintln!(
            "skipped: needs root (only root drops a worker to another user); CI runs as root"
        );
        return;
    }
    // stackbench installed under /root by pipx: a directory no other user may enter.
    let home = tempfile::tempdir().unwrap();
    fs::set_permissions(home.path(), fs::Permissions::from_mode(0o700)).unwrap();
    let installed = home.path().join("stackbench");
    fs::copy(stackbench_bin(), &installed).unwrap();
    let dir = open_tempdir();
    let venv = dir.path().canonicalize().unwrap().join("venv");
    let lib = site(&venv).join("nvidia/cuda_runtime/lib");
    fs::create_dir_all(&lib).unwrap();
    fs::copy(real_cudart(), lib.join("libcudart.so.12")).unwrap();
    give_away(&venv);
    let output = Command::new(&installed)
        .args(["doctor", "--no-system", "--format", "json", "--root"])
        .arg(&venv)
        .env("HOME", dir.path())
        .output()
        .unwrap();
    let report = doctor_report(&output.stdout);
    let load = probe_load(&report, "libcudart.so.12");
    assert_eq!(load["outcome"]["kind"], "loaded", "{load}");
}
