//! `stackbench doctor` against libraries that crash, hang, exit, fork, talk on standard output or
//! are not libraries at all: built here with `cc`, named like CUDA libraries so the scan takes
//! them, beside real NVIDIA libraries (symlinks into the fixtures) that must still be probed.

// Tests read the files they make and the checkout's own: std's readers are theirs (clippy.toml).
#![allow(clippy::disallowed_methods)]

mod common;

use common::pid::PidCatcher;
use common::*;
use serde_json::Value;
use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// A directory for doctor to scan, and one beside it for C sources and marker files (not scanned).
struct Tree {
    root: tempfile::TempDir,
    work: tempfile::TempDir,
}

impl Tree {
    fn new() -> Tree {
        Tree {
            root: tempfile::tempdir().expect("temporary directory"),
            work: tempfile::tempdir().expect("temporary directory"),
        }
    }

    /// The scanned directory, canonical (as the report names it).
    fn root(&self) -> PathBuf {
        self.root.path().canonicalize().expect("canonical root")
    }

    /// A path in the side directory.
    fn work(&self, name: &str) -> PathBuf {
        self.work.path().join(name)
    }

    /// Compiles `source` into `<root>/<name>`, a shared object whose soname is `name`.
    fn build(&self, name: &str, source: &str) -> PathBuf {
        let c = self.work(&format!("{name}.c"));
        fs::write(&c, source).expect("write C source");
        let out = self.root().join(name);
        let status = Command::new("cc")
            .args(["-shared", "-fPIC", "-o"])
            .arg(&out)
            .arg(format!("-Wl,-soname,{name}"))
            .arg(&c)
            .status()
            .unwrap_or_else(|e| panic!("these tests need a C compiler: cannot run `cc`: {e}"));
        assert!(status.success(), "cc failed for {name}");
        out
    }

    /// A symlink `<root>/<name>` to a real fixture library.
    fn link_real(&self, name: &str, fixture_path: &str) -> PathBuf {
        let link = self.root().join(name);
        symlink(fixture(fixture_path), &link).expect("symlink a real library");
        link
    }
}

fn real_nvrtc() -> String {
    format!("{VENV_CU12}/nvidia/cuda_nvrtc/lib/libnvrtc.so.12")
}

fn real_cudart_path() -> String {
    format!("{VENV_CU12}/nvidia/cuda_runtime/lib/libcudart.so.12")
}

/// One doctor run on `root`, JSON, and how long it took.
struct Run {
    code: i32,
    report: Value,
    stderr: String,
    took: Duration,
}

fn doctor(root: &Path, args: &[&str]) -> Run {
    let home = tempfile::tempdir().expect("temporary HOME");
    let started = Instant::now();
    let output = isolated_stackbench(home.path())
        .args(["doctor", "--no-system", "--root"])
        .arg(root)
        .args(args)
        .args(["--format", "json"])
        .output()
        .expect("run stackbench doctor");
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "doctor panicked: {stderr}");
    let code = output
        .status
        .code()
        .unwrap_or_else(|| panic!("doctor was killed by a signal; stderr: {stderr}"));
    Run {
        code,
        report: doctor_report(&output.stdout),
        stderr,
        took,
    }
}

fn text<'a>(value: &'a Value, key: &str) -> &'a str {
    value[key].as_str().unwrap_or("")
}

/// The one finding with `cause` about the library `file`.
fn finding(report: &Value, cause: &str, file: &str) -> Value {
    let found: Vec<Value> = findings_of(report, cause)
        .into_iter()
        .filter(|f| f["library"] == file)
        .collect();
    assert_eq!(
        found.len(),
        1,
        "one `{cause}` finding for {file} in {}",
        report["findings"]
    );
    found.into_iter().next().expect("one")
}

fn api_value(load: &Value, function: &str) -> Value {
    load["api"]
        .as_array()
        .expect("api array")
        .iter()
        .find(|c| c["function"] == function)
        .map(|c| c["value"].clone())
        .unwrap_or_else(|| panic!("{function} not called in {load}"))
}

/// Whether process `pid` still runs (a zombie waiting for its reaper does not).
fn running(pid: i32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/status")) {
        Ok(status) => !status
            .lines()
            .any(|l| l.starts_with("State:") && l.contains('Z')),
        Err(_) => false,
    }
}

/// Kills process `pid` (one this test's library started) if it still runs.
fn reap(pid: i32) {
    if running(pid) {
        // SAFETY: kill(2) on one pid; no memory is touched.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
}

/// Constructor that segfaults.
const SEGFAULT: &str = r#"
#include <signal.h>
__attribute__((constructor)) static void boom(void) { raise(SIGSEGV); }
int cufftGetVersion(int *version) { *version = 11000; return 0; }
"#;

/// Constructor that says its pid to `catcher` and waits forever.
fn hang(catcher: &PidCatcher) -> String {
    format!(
        r#"
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
{}
__attribute__((constructor)) static void wait_forever(void) {{
    say_pid();
    for (;;) pause();
}}
"#,
        catcher.say_pid_c()
    )
}

#[test]
fn crashing_and_hanging_constructors_are_findings_and_the_rest_is_still_probed() {
    let tree = Tree::new();
    let root = tree.root();
    let segfault = tree.build("libcufft.so.11", SEGFAULT);
    let catcher = PidCatcher::listen(&tree.work("hung.sock"));
    let hung = tree.build("libcurand.so.10", &hang(&catcher));
    tree.link_real("libcudart.so.12", &real_cudart_path());
    // Probed after the hang, by a fresh worker.
    tree.link_real("libnvrtc.so.12", &real_nvrtc());

    let run = doctor(&root, &["--timeout", "1"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    // The hang waits forever: any bound proves the timeout cut it off. This one is far above
    // what the run needs on a loaded 2-core machine, so it holds however busy the machine is.
    assert!(
        run.took < Duration::from_secs(60),
        "--timeout 1 bounds the hang; took {:?}",
        run.took
    );

    let crashed = &finding(&run.report, "load_crashed", "libcufft.so.11");
    assert_eq!(crashed["severity"], "error");
    assert_eq!(text(crashed, "path"), segfault.display().to_string());
    assert_eq!(text(crashed, "installation"), root.display().to_string());
    assert_eq!(
        text(crashed, "message"),
        "loading libcufft.so.11 killed the process with SIGSEGV"
    );
    assert!(
        strings(&crashed["evidence"]).contains(&format!("calling init: {}", segfault.display())),
        "the loader's trail shows the constructor running: {crashed}"
    );

    let timed_out = &finding(&run.report, "load_hung", "libcurand.so.10");
    assert_eq!(timed_out["severity"], "error");
    assert_eq!(text(timed_out, "path"), hung.display().to_string());
    assert_eq!(
        text(timed_out, "message"),
        "loading libcurand.so.10 did not finish within 1000 ms"
    );
    assert!(
        text(timed_out, "fix").contains("LD_DEBUG=libs"),
        "{timed_out}"
    );

    let cufft = probe_load(&run.report, "libcufft.so.11");
    assert_eq!(cufft["outcome"]["kind"], "crashed");
    assert_eq!(cufft["outcome"]["signal"], 11);
    assert_eq!(cufft["outcome"]["signal_name"], "SIGSEGV");
    let curand = probe_load(&run.report, "libcurand.so.10");
    assert_eq!(curand["outcome"]["kind"], "timed_out");
    assert!(curand["outcome"]["after_ms"].as_u64().expect("after_ms") >= 1000);

    // The real libraries on either side were loaded and answered.
    let cudart = probe_load(&run.report, "libcudart.so.12");
    assert_eq!(cudart["outcome"]["kind"], "loaded", "{cudart}");
    assert_eq!(api_value(cudart, "cudaRuntimeGetVersion"), 12090);
    let nvrtc = probe_load(&run.report, "libnvrtc.so.12");
    assert_eq!(nvrtc["outcome"]["kind"], "loaded", "{nvrtc}");
    assert_eq!(api_value(nvrtc, "nvrtcVersion"), 12090);

    // The report is complete: the whole installation is there.
    let installation = run.report["installations"]
        .as_array()
        .expect("installations")
        .iter()
        .find(|i| i["root"] == root.display().to_string().as_str())
        .expect("the fault tree is an installation");
    assert_eq!(
        installation["libraries"]
            .as_array()
            .expect("libraries")
            .len(),
        4
    );

    // The hung worker was killed, not left behind.
    let pid = catcher.pid();
    let gone = !running(pid);
    reap(pid);
    assert!(gone, "the hung worker {pid} still runs after doctor exited");
}

/// CUDA 13's link-time stubs (`targets/x86_64-linux/lib/stubs/libcublas.so`, ...) crash in
/// their constructors: the first real GPU host's doctor reported three of them as errors. A
/// stub is for the linker only, so doctor lists it and never loads it.
#[test]
fn a_toolkit_s_link_time_stubs_are_listed_and_never_loaded() {
    let tree = Tree::new();
    let stubs = tree.root().join("stubs");
    fs::create_dir(&stubs).expect("stubs directory");
    let c = tree.work("stub.c");
    fs::write(&c, SEGFAULT).expect("write C source");
    let stub = stubs.join("libcublas.so");
    let status = Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&stub)
        .arg("-Wl,-soname,libcublas.so.13")
        .arg(&c)
        .status()
        .expect("these tests need a C compiler");
    assert!(status.success(), "cc failed for the stub");
    tree.link_real("libnvrtc.so.12", &real_nvrtc());
    let run = doctor(&tree.root(), &["--timeout", "5"]);
    assert!(
        findings_of(&run.report, "load_crashed").is_empty(),
        "{:#}",
        run.report["findings"]
    );
    let loads: Vec<&Value> = (run.report["probes"].as_array().expect("probes").iter())
        .flat_map(|p| p["loads"].as_array().into_iter().flatten())
        .collect();
    assert!(
        loads.iter().all(|l| !text(l, "path").contains("/stubs/")),
        "{loads:#?}"
    );
    assert_eq!(
        probe_load(&run.report, "libnvrtc.so.12")["outcome"]["kind"],
        "loaded"
    );
    assert!(
        all_libraries(&run.report)
            .iter()
            .any(|l| l["path"] == stub.display().to_string().as_str()),
        "the stub is still listed"
    );
}

#[test]
fn constructors_that_exit_or_abort_are_load_crashed() {
    let tree = Tree::new();
    tree.build(
        "libnvjpeg.so.12",
        "#include <unistd.h>\n__attribute__((constructor)) static void quit(void) { _exit(3); }\n",
    );
    tree.build(
        "libcusparse.so.12",
        "#include <stdlib.h>\n__attribute__((constructor)) static void die(void) { abort(); }\n",
    );
    tree.link_real("libnvrtc.so.12", &real_nvrtc());
    let run = doctor(&tree.root(), &["--timeout", "5"]);
    assert_eq!(run.code, 1);
    let exited = &finding(&run.report, "load_crashed", "libnvjpeg.so.12");
    assert_eq!(
        text(exited, "message"),
        "loading libnvjpeg.so.12 ended the process with exit status 3"
    );
    assert_eq!(
        probe_load(&run.report, "libnvjpeg.so.12")["outcome"]["exit_code"],
        3
    );
    let aborted = &finding(&run.report, "load_crashed", "libcusparse.so.12");
    assert_eq!(
        text(aborted, "message"),
        "loading libcusparse.so.12 killed the process with SIGABRT"
    );
    let nvrtc = probe_load(&run.report, "libnvrtc.so.12");
    assert_eq!(nvrtc["outcome"]["kind"], "loaded", "{nvrtc}");
}

/// A constructor that writes the probe worker's own `start` event for every index to every
/// descriptor it inherited, five times a second, forever.
const START_FLOOD: &str = r#"
#include <stdio.h>
#include <string.h>
#include <unistd.h>
__attribute__((constructor)) static void flood(void) {
    char line[96];
    for (;;) {
        for (int index = 0; index < 8; index++) {
            int n = snprintf(line, sizeof line, "{\"event\":\"start\",\"index\":%d,\"path\":\"/x\"}\n", index);
            for (int fd = 1; fd < 64; fd++) (void)!write(fd, line, n);
        }
        usleep(200000);
    }
}
"#;

/// A library that says "starting" again and again moves no deadline: it is cut off at its
/// own timeout, and the library after it is still probed.
#[test]
fn a_library_repeating_the_workers_start_event_is_cut_off_at_its_timeout() {
    let tree = Tree::new();
    tree.build("libcurand.so.10", START_FLOOD);
    tree.link_real("libnvrtc.so.12", &real_nvrtc());
    let home = tempfile::tempdir().expect("temporary HOME");
    let started = Instant::now();
    // Far above what the run needs on a loaded 2-core machine (two 2 s timeouts and one real
    // library), so it holds however busy the machine is; a deadline the flood moves never ends.
    let output = isolated_stackbench(home.path())
        .args(["doctor", "--no-system", "--root"])
        .arg(tree.root())
        .args(["--timeout", "2", "--format", "json"])
        .timeout(Duration::from_secs(120))
        .output()
        .expect("run stackbench doctor");
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.code().is_some(),
        "doctor did not end: killed after {took:?}; stderr: {stderr}"
    );
    let report = doctor_report(&output.stdout);
    let hung = &finding(&report, "load_hung", "libcurand.so.10");
    assert_eq!(hung["severity"], "error", "{hung}");
    // Timed from the worker's own start: a start the library repeats restarts no clock, so it
    // ran its whole timeout, however busy the machine.
    let load = probe_load(&report, "libcurand.so.10");
    assert!(load["millis"].as_u64() >= Some(2000), "{load}");
    let nvrtc = probe_load(&report, "libnvrtc.so.12");
    assert_eq!(api_value(nvrtc, "nvrtcVersion"), 12090);
}

#[test]
fn a_library_writing_to_stdout_does_not_break_the_workers_protocol() {
    let tree = Tree::new();
    tree.build(
        "libcufft.so.11",
        r#"
#include <stdio.h>
__attribute__((constructor)) static void chat(void) {
    printf("{\"event\": \"not really\"} banner without newline");
    fflush(stdout);
}
"#,
    );
    tree.link_real("libnvrtc.so.12", &real_nvrtc());
    let run = doctor(&tree.root(), &["--timeout", "5"]);
    let chatty = probe_load(&run.report, "libcufft.so.11");
    assert_eq!(chatty["outcome"]["kind"], "loaded", "{chatty}");
    assert!(
        strings(&chatty["messages"])
            .iter()
            .any(|m| m.contains("banner without newline")),
        "its words are kept as messages: {chatty}"
    );
    let nvrtc = probe_load(&run.report, "libnvrtc.so.12");
    assert_eq!(api_value(nvrtc, "nvrtcVersion"), 12090);
    assert!(findings_of(&run.report, "load_hung").is_empty());
    assert!(findings_of(&run.report, "load_failed").is_empty());
}

/// A process that a library's constructor forks is not left running once doctor has exited
/// (nor holds the worker's pipes, which would cost a grace wait).
#[test]
fn a_library_that_forks_leaves_no_process_behind() {
    let tree = Tree::new();
    let catcher = PidCatcher::listen(&tree.work("grandchild.sock"));
    tree.build(
        "libcusolver.so.11",
        &format!(
            r#"
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
{}
__attribute__((constructor)) static void spawn(void) {{
    int ready[2];
    if (pipe(ready) != 0) return;
    if (fork() == 0) {{
        say_pid();
        char done = 1;
        write(ready[1], &done, 1);
        for (;;) pause();
    }}
    /* The pid is said before the library's load goes on, however busy the machine. */
    char done;
    read(ready[0], &done, 1);
}}
"#,
            catcher.say_pid_c()
        ),
    );
    tree.link_real("libnvrtc.so.12", &real_nvrtc());
    let run = doctor(&tree.root(), &["--timeout", "2"]);
    let pid = catcher.pid();
    let left = running(pid);
    reap(pid);
    assert_eq!(
        probe_load(&run.report, "libcusolver.so.11")["outcome"]["kind"],
        "loaded"
    );
    assert_eq!(
        api_value(probe_load(&run.report, "libnvrtc.so.12"), "nvrtcVersion"),
        12090
    );
    assert!(
        !left,
        "process {pid}, forked by libcusolver.so.11's constructor, still runs after doctor exited"
    );
}

#[test]
fn files_named_like_libraries_that_are_not_are_scan_problems() {
    let tree = Tree::new();
    let root = tree.root();
    fs::write(root.join("libcublas.so.12"), "not a library\n").expect("write");
    let real = fs::read(fixture(&real_cudart_path())).expect("read cudart");
    fs::write(root.join("libcublasLt.so.12"), &real[..200]).expect("write");
    fs::write(root.join("libcusolver.so.11"), b"").expect("write");
    symlink("/nonexistent/libcufft.so.11", root.join("libcufft.so.11")).expect("symlink");
    symlink("libcurand.so.10", root.join("libcurand.so.10")).expect("symlink");
    tree.link_real("libcudart.so.12", &real_cudart_path());

    let run = doctor(&root, &["--timeout", "5"]);
    assert!(run.code == 0 || run.code == 1, "{}", run.stderr);
    for (file, kind) in [
        ("libcublas.so.12", "not_elf: "),
        ("libcublasLt.so.12", "truncated: "),
        ("libcusolver.so.11", "truncated: "),
        ("libcufft.so.11", "broken_symlink: "),
        ("libcurand.so.10", "symlink_loop: "),
    ] {
        let f = &finding(&run.report, "scan_problem", file);
        assert_eq!(f["severity"], "warning", "{f}");
        assert_eq!(text(f, "path"), root.join(file).display().to_string());
        assert!(text(f, "message").starts_with(kind), "{file}: {f}");
        // Never handed to dlopen.
        assert!(
            !run.report["probes"]
                .as_array()
                .expect("probes")
                .iter()
                .flat_map(|p| p["loads"].as_array().into_iter().flatten())
                .any(|l| text(l, "path").ends_with(&format!("/{file}"))),
            "{file} was loaded"
        );
    }
    let cudart = probe_load(&run.report, "libcudart.so.12");
    assert_eq!(cudart["outcome"]["kind"], "loaded", "{cudart}");
}

#[test]
fn no_load_runs_no_library_code() {
    let tree = Tree::new();
    let marker = tree.work("constructor-ran");
    tree.build(
        "libcusparse.so.12",
        &format!(
            r#"
#include <stdio.h>
__attribute__((constructor)) static void mark(void) {{
    FILE *f = fopen("{}", "w");
    if (f) fclose(f);
}}
"#,
            marker.display()
        ),
    );
    let catcher = PidCatcher::listen(&tree.work("hung.sock"));
    tree.build("libcurand.so.10", &hang(&catcher));
    tree.build("libcufft.so.11", SEGFAULT);

    // Static only: no constructor ran, so neither the hang nor the crash was reached.
    let run = doctor(&tree.root(), &["--no-load"]);
    assert!(!marker.exists(), "a constructor ran under --no-load");
    assert!(!catcher.connected(), "a constructor ran under --no-load");
    assert_eq!(run.report["loaded"], false);
    assert_eq!(run.report["probes"], serde_json::json!([]));
    for cause in ["load_crashed", "load_hung", "load_failed"] {
        assert!(findings_of(&run.report, cause).is_empty(), "{cause}");
    }

    // The control: loading does run it.
    let loaded = doctor(&tree.root(), &["--timeout", "1"]);
    assert!(marker.exists(), "the constructor did not run when loading");
    finding(&loaded.report, "load_hung", "libcurand.so.10");
    finding(&loaded.report, "load_crashed", "libcufft.so.11");
    reap(catcher.pid());
}
