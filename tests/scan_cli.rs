//! `stackbench scan` as a user runs it: formats, colour, output files, exit statuses, and
//! damaged or hostile trees built here next to a copy of a real CUDA library.

// Tests read the files they make and the checkout's own: std's readers are theirs (clippy.toml).
#![allow(clippy::disallowed_methods)]

mod common;

use assert_cmd::Command;
use common::*;
use serde_json::Value;
use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;
use std::time::Duration;

/// The binary under test, with `NO_COLOR` cleared so each test sets what it means.
fn stackbench() -> Command {
    let mut command = Command::new(stackbench_bin());
    command.env_remove("NO_COLOR");
    command
}

/// `scan --no-system --root <fixtures>` plus `args`.
fn scan_fixtures(args: &[&str]) -> Output {
    stackbench()
        .args(["scan", "--no-system", "--root"])
        .arg(toolkits())
        .args(args)
        .output()
        .expect("run stackbench")
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).expect("stdout is UTF-8")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The JSON scan of the fixtures, run once; with its raw bytes.
fn fixture_json() -> &'static (Vec<u8>, Value) {
    static JSON: OnceLock<(Vec<u8>, Value)> = OnceLock::new();
    JSON.get_or_init(|| {
        let output = scan_fixtures(&["--format", "json"]);
        assert_eq!(
            output.status.code(),
            Some(0),
            "clean fixtures exit 0; stderr: {}",
            stderr(&output)
        );
        let value = serde_json::from_slice(&output.stdout).expect("stdout is JSON");
        (output.stdout, value)
    })
}

fn keys(value: &Value) -> Vec<&str> {
    let mut keys: Vec<&str> = value
        .as_object()
        .unwrap_or_else(|| panic!("not an object: {value}"))
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    keys
}

fn assert_has_keys(value: &Value, wanted: &[&str]) {
    let found = keys(value);
    for key in wanted {
        assert!(found.contains(key), "no {key:?} in {found:?}");
    }
}

#[test]
fn json_is_schema_tagged_and_complete() {
    let (_, report) = fixture_json();
    assert_eq!(report["schema"], "stackbench.scan/v1");
    assert_has_keys(
        report,
        &["schema", "host", "searched", "installations", "problems"],
    );
    assert_has_keys(
        &report["host"],
        &["hostname", "os", "arch", "stackbench_version"],
    );
    assert_eq!(report["searched"][0]["source"], "root");
    let installations = report["installations"].as_array().unwrap();
    assert_eq!(installations.len(), 8);
    let mut layouts: Vec<&str> = installations
        .iter()
        .map(|i| i["layout"].as_str().unwrap())
        .collect();
    layouts.sort_unstable();
    layouts.dedup();
    assert_eq!(layouts, ["conda", "driver", "pip", "toolkit"]);
    for installation in installations {
        assert_has_keys(
            installation,
            &[
                "root",
                "layout",
                "cuda_version",
                "driver_version",
                "sources",
                "libraries",
                "problems",
            ],
        );
        assert!(!installation["libraries"].as_array().unwrap().is_empty());
        for library in installation["libraries"].as_array().unwrap() {
            assert_has_keys(
                library,
                &[
                    "name",
                    "soname",
                    "path",
                    "real_path",
                    "symlink_chain",
                    "aliases",
                    "version",
                    "version_source",
                    "size",
                    "elf_class",
                    "machine",
                    "needed",
                    "rpath",
                    "runpath",
                    "dlopen_deps",
                    "sass",
                    "ptx",
                    "problems",
                ],
            );
            for list in ["needed", "dlopen_deps", "sass", "ptx"] {
                strings(&library[list]);
            }
            assert!(library["problems"].as_array().unwrap().is_empty());
        }
    }
    assert!(all_problems(report).is_empty());
    // A few facts survive the trip through JSON as they are.
    let toolkit = installations
        .iter()
        .find(|i| i["layout"] == "toolkit")
        .unwrap();
    assert_eq!(toolkit["cuda_version"], "12.9");
    let cudart = toolkit["libraries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["name"] == "cudart")
        .unwrap();
    assert_eq!(cudart["soname"], "libcudart.so.12");
    assert_eq!(cudart["version"], "12.9.79");
    assert_eq!(cudart["version_source"], "file_name");
    assert_eq!(strings(&cudart["dlopen_deps"]), ["libcuda.so.1"]);
}

#[test]
fn clean_fixtures_exit_zero_in_every_format() {
    for format in ["terminal", "json", "csv", "markdown"] {
        let output = scan_fixtures(&["--format", format]);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{format}: {}",
            stderr(&output)
        );
        assert!(output.stderr.is_empty(), "{format}: {}", stderr(&output));
        assert!(!output.stdout.is_empty());
    }
}

#[test]
fn csv_has_a_header_and_a_row_per_library() {
    let (_, report) = fixture_json();
    let output = scan_fixtures(&["--format", "csv"]);
    assert_eq!(output.status.code(), Some(0));
    let mut reader = csv::Reader::from_reader(output.stdout.as_slice());
    let header: Vec<String> = reader.headers().unwrap().iter().map(String::from).collect();
    assert_eq!(
        header,
        [
            "root",
            "layout",
            "cuda_version",
            "driver_version",
            "name",
            "version",
            "soname",
            "path",
            "real_path",
            "elf_class",
            "machine",
            "needed",
            "runpath",
            "dlopen_deps",
            "sass",
            "ptx",
            "problems",
        ]
    );
    let rows: Vec<csv::StringRecord> = reader.records().map(|r| r.unwrap()).collect();
    let libraries: Vec<(&Value, &Value)> = report["installations"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|i| {
            i["libraries"]
                .as_array()
                .unwrap()
                .iter()
                .map(move |l| (i, l))
        })
        .collect();
    assert_eq!(rows.len(), libraries.len());
    for (row, (installation, library)) in rows.iter().zip(&libraries) {
        assert_eq!(row.len(), header.len());
        assert_eq!(&row[0], installation["root"].as_str().unwrap());
        assert_eq!(&row[1], installation["layout"].as_str().unwrap());
        assert_eq!(&row[4], library["name"].as_str().unwrap());
        assert_eq!(&row[7], library["path"].as_str().unwrap());
        assert_eq!(row[14], strings(&library["sass"]).join(" "));
    }
}

#[test]
fn markdown_has_a_table_per_installation() {
    let (_, report) = fixture_json();
    let output = scan_fixtures(&["--format", "markdown"]);
    assert_eq!(output.status.code(), Some(0));
    let text = stdout(&output);
    assert!(text.starts_with("# stackbench scan\n"), "{text}");
    let installations = report["installations"].as_array().unwrap();
    let sections: Vec<&str> = text.split("\n## ").skip(1).collect();
    assert_eq!(sections.len(), installations.len());
    for (section, installation) in sections.iter().zip(installations) {
        let root = installation["root"].as_str().unwrap();
        let layout = installation["layout"].as_str().unwrap();
        let mut lines = section.lines();
        let title = lines.next().unwrap();
        assert!(title.starts_with(&format!("{layout} `{root}`")), "{title}");
        let table: Vec<&str> = lines.filter(|l| l.starts_with('|')).collect();
        assert!(
            table[0].starts_with("| library | version | soname |"),
            "{}",
            table[0]
        );
        assert!(table[1].starts_with("|---|"), "{}", table[1]);
        let libraries = installation["libraries"].as_array().unwrap();
        assert_eq!(table.len() - 2, libraries.len(), "{section}");
        for (row, library) in table[2..].iter().zip(libraries) {
            let name = library["name"].as_str().unwrap();
            assert!(row.starts_with(&format!("| {name} |")), "{row}");
        }
    }
}

#[test]
fn terminal_report_respects_no_color() {
    let (_, report) = fixture_json();
    let libraries = all_libraries(report).len();
    let output = stackbench()
        .env("NO_COLOR", "1")
        .args(["scan", "--no-system", "--root"])
        .arg(toolkits())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let text = stdout(&output);
    assert!(!text.contains('\x1b'), "escape codes with NO_COLOR set");
    assert!(
        text.starts_with(&format!(
            "stackbench scan: 8 installations, {libraries} libraries, 0 problems\n"
        )),
        "{text}"
    );
    for installation in report["installations"].as_array().unwrap() {
        assert!(text.contains(installation["root"].as_str().unwrap()));
    }
    let never = scan_fixtures(&["--color", "never"]);
    assert!(!stdout(&never).contains('\x1b'));
    // Not a terminal: auto means no colour.
    let auto = scan_fixtures(&[]);
    assert!(!stdout(&auto).contains('\x1b'));
}

#[test]
fn color_always_paints_the_terminal_report() {
    let output = scan_fixtures(&["--color", "always"]);
    assert_eq!(output.status.code(), Some(0));
    let text = stdout(&output);
    assert!(text.contains("\x1b[1mstackbench scan:\x1b[0m"), "{text}");
    assert!(text.contains("\x1b[36mtoolkit  \x1b[0m"), "{text}");
    // An explicit flag outranks NO_COLOR (no-color.org: command-line flags override it).
    let flagged = stackbench()
        .env("NO_COLOR", "1")
        .args(["--color", "always", "scan", "--no-system", "--root"])
        .arg(toolkits())
        .output()
        .unwrap();
    assert!(stdout(&flagged).contains('\x1b'));
    // Colour is for the terminal report only.
    let json = scan_fixtures(&["--color", "always", "--format", "json"]);
    assert!(!stdout(&json).contains('\x1b'));
}

#[test]
fn output_file_replaces_an_existing_file_whole() {
    let (bytes, _) = fixture_json();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("scan.json");
    // Longer than the report: any leftover byte would show.
    fs::write(&path, vec![b'x'; bytes.len() * 2]).unwrap();
    let output = scan_fixtures(&["--format", "json", "--output", path.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(output.stdout.is_empty(), "the report went to the file only");
    assert_eq!(&fs::read(&path).unwrap(), bytes);
    let left: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, ["scan.json"], "no temporary file left behind");
    // `-o` and `-` (standard output) too.
    let short = scan_fixtures(&["--format", "csv", "-o", path.to_str().unwrap()]);
    assert_eq!(short.status.code(), Some(0));
    assert!(fs::read_to_string(&path)
        .unwrap()
        .starts_with("root,layout,"));
    let dash = scan_fixtures(&["--format", "json", "--output", "-"]);
    assert_eq!(&dash.stdout, bytes);
}

#[test]
fn output_into_a_missing_directory_is_a_harness_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("no/such/dir/scan.json");
    let output = scan_fixtures(&["--output", path.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    let err = stderr(&output);
    assert!(
        err.starts_with("error: cannot write the report to "),
        "{err}"
    );
    assert!(err.contains("check that its directory exists"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn missing_root_exits_2_and_says_what_to_do() {
    let output = stackbench()
        .args([
            "scan",
            "--no-system",
            "--root",
            "/nonexistent/stackbench-root",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty());
    let err = stderr(&output);
    assert!(
        err.starts_with("error: --root /nonexistent/stackbench-root: "),
        "{err}"
    );
    assert!(
        err.contains("give an existing, readable directory"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn a_file_as_root_exits_2() {
    let output = stackbench()
        .args(["scan", "--no-system", "--root"])
        .arg(real_cudart())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let err = stderr(&output);
    assert!(err.starts_with("error: --root "), "{err}");
    assert!(err.contains("not a directory"), "{err}");
}

#[test]
fn no_system_needs_a_root() {
    let output = stackbench().args(["scan", "--no-system"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("--root"), "{}", stderr(&output));
}

// ---- damaged and hostile trees ----------------------------------------------------------------

/// Longest a scan of a small tree may take before it counts as hung (it takes well under a
/// second).
const SCAN_TIMEOUT: Duration = Duration::from_secs(60);

/// The exit status, or why there is none.
fn exit_code(output: &Output) -> Result<i32, String> {
    output.status.code().ok_or_else(|| {
        format!(
            "no exit status ({}): hung and killed, or crashed",
            output.status
        )
    })
}

/// Whether this process runs as root, for whom `chmod 000` stops nothing.
fn running_as_root() -> bool {
    let out = std::process::Command::new("id")
        .arg("-u")
        .output()
        .expect("run id -u");
    String::from_utf8_lossy(&out.stdout).trim() == "0"
}

/// The command that runs stackbench so that file permissions apply: as `nobody` through
/// `setpriv` when the tests run as root, directly otherwise.
fn unprivileged_stackbench() -> Command {
    if !running_as_root() {
        return stackbench();
    }
    let setpriv = ["/usr/bin/setpriv", "/bin/setpriv"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .expect(
            "tests run as root: setpriv (util-linux) is needed to run stackbench as nobody, \
             so that unreadable files are unreadable",
        );
    let mut command = Command::new(setpriv);
    command
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            env!("CARGO_BIN_EXE_stackbench"),
        ])
        .env_remove("NO_COLOR");
    command
}

fn set_mode(path: &Path, mode: u32) {
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
}

/// A tree of damaged library files beside an intact copy of CUDA 12.9's libcudart.
///
/// ```text
/// <tmp>/lib/libcudart.so.12       a full copy of the real library
/// <tmp>/lib/libcurand.so.10       its first 1000 bytes              -> truncated
/// <tmp>/lib/libcublas.so.12       a text file                       -> not_elf
/// <tmp>/lib/libcufft.so.11        empty                             -> truncated
/// <tmp>/lib/libcuda.so.1 <-> libcuda.so                             -> symlink_loop (both)
/// <tmp>/lib/libnvrtc.so.12 -> libnvrtc.so.12.9.86 (missing)         -> broken_symlink
/// <tmp>/lib/libcusolver.so.11     a copy, mode 000                  -> unreadable
/// <tmp>/tree/loop -> ..                                              -> symlink_loop
/// <tmp>/locked/ (mode 000) holding a copy of the library            -> unreadable
/// ```
struct Faults {
    dir: tempfile::TempDir,
}

impl Faults {
    fn new() -> Faults {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let real = fs::read(real_cudart()).unwrap();
        let lib = root.join("lib");
        fs::create_dir(&lib).unwrap();
        fs::write(lib.join("libcudart.so.12"), &real).unwrap();
        fs::write(lib.join("libcurand.so.10"), &real[..1000]).unwrap();
        fs::write(
            lib.join("libcublas.so.12"),
            "INPUT(-lcublas_static)\nthis is a linker script, not a library\n",
        )
        .unwrap();
        fs::write(lib.join("libcufft.so.11"), b"").unwrap();
        symlink("libcuda.so", lib.join("libcuda.so.1")).unwrap();
        symlink("libcuda.so.1", lib.join("libcuda.so")).unwrap();
        symlink("libnvrtc.so.12.9.86", lib.join("libnvrtc.so.12")).unwrap();
        fs::write(lib.join("libcusolver.so.11"), &real).unwrap();
        let tree = root.join("tree");
        fs::create_dir(&tree).unwrap();
        symlink("..", tree.join("loop")).unwrap();
        let locked = root.join("locked");
        fs::create_dir(&locked).unwrap();
        fs::write(locked.join("libcusparse.so.12"), &real).unwrap();
        // Everything readable by the unprivileged user but the two things meant not to be.
        for d in [root, lib.as_path(), tree.as_path()] {
            set_mode(d, 0o755);
        }
        for f in [
            "libcudart.so.12",
            "libcurand.so.10",
            "libcublas.so.12",
            "libcufft.so.11",
        ] {
            set_mode(&lib.join(f), 0o644);
        }
        set_mode(&lib.join("libcusolver.so.11"), 0o000);
        set_mode(&locked, 0o000);
        Faults { dir }
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn scan(&self, format: &str) -> Output {
        unprivileged_stackbench()
            .args(["scan", "--no-system", "--format", format, "--root"])
            .arg(self.root())
            .timeout(SCAN_TIMEOUT)
            .output()
            .expect("run stackbench")
    }
}

impl Drop for Faults {
    fn drop(&mut self) {
        // Give the tree back so it can be removed by a user who is not root.
        let _ = fs::set_permissions(
            self.root().join("locked"),
            fs::Permissions::from_mode(0o755),
        );
    }
}

/// Problem kinds reported for paths whose last component is `name`.
fn kinds_for<'a>(problems: &[&'a Value], name: &str) -> Vec<&'a str> {
    problems
        .iter()
        .filter(|p| {
            Path::new(p["path"].as_str().unwrap())
                .file_name()
                .is_some_and(|n| n == name)
        })
        .map(|p| p["kind"].as_str().unwrap())
        .collect()
}

#[test]
fn damaged_files_are_problems_and_the_real_library_is_still_read() {
    let faults = Faults::new();
    let output = faults.scan("json");
    let err = stderr(&output);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(
        output.status.code(),
        Some(1),
        "problems found: exit 1; {err}"
    );
    let report: Value = serde_json::from_slice(&output.stdout).expect("stdout is JSON");
    let problems = all_problems(&report);
    let expect = |name: &str, kinds: &[&str]| {
        assert_eq!(kinds_for(&problems, name), kinds, "{name}: {problems:#?}");
    };
    expect("libcurand.so.10", &["truncated"]);
    expect("libcublas.so.12", &["not_elf"]);
    expect("libcufft.so.11", &["truncated"]);
    expect("libcuda.so.1", &["symlink_loop"]);
    expect("libcuda.so", &["symlink_loop"]);
    expect("libnvrtc.so.12", &["broken_symlink"]);
    expect("libcusolver.so.11", &["unreadable"]);
    expect("loop", &["symlink_loop"]);
    expect("locked", &["unreadable"]);
    assert_eq!(problems.len(), 9, "{problems:#?}");
    for p in &problems {
        assert!(
            !p["message"].as_str().unwrap().is_empty(),
            "every problem says what happened: {p}"
        );
    }
    // The intact copy beside them is read as the real library is.
    let cudart: Vec<&Value> = all_libraries(&report)
        .into_iter()
        .filter(|l| l["name"] == "cudart")
        .collect();
    assert_eq!(cudart.len(), 1, "{cudart:#?}");
    let cudart = cudart[0];
    assert_eq!(
        cudart["path"].as_str().unwrap(),
        faults
            .root()
            .canonicalize()
            .unwrap()
            .join("lib/libcudart.so.12")
            .to_str()
            .unwrap()
    );
    assert_eq!(cudart["soname"], "libcudart.so.12");
    assert_eq!(cudart["elf_class"], "ELF64");
    assert_eq!(cudart["machine"], "x86_64");
    assert_eq!(
        strings(&cudart["needed"]),
        [
            "libc.so.6",
            "ld-linux-x86-64.so.2",
            "libdl.so.2",
            "libpthread.so.0",
            "librt.so.1"
        ]
    );
    assert_eq!(strings(&cudart["dlopen_deps"]), ["libcuda.so.1"]);
    assert!(cudart["problems"].as_array().unwrap().is_empty());
    // Nothing from the locked directory was listed.
    assert!(all_libraries(&report)
        .iter()
        .all(|l| !l["path"].as_str().unwrap().contains("/locked/")));
}

#[test]
fn damaged_files_do_not_stop_any_format() {
    let faults = Faults::new();
    for format in ["terminal", "csv", "markdown"] {
        let output = faults.scan(format);
        let err = stderr(&output);
        assert!(!err.contains("panicked"), "{format}: {err}");
        assert_eq!(exit_code(&output), Ok(1), "{format}: {err}");
        let text = stdout(&output);
        assert!(text.contains("libcudart.so.12"), "{format}: {text}");
        if format != "csv" {
            for code in [
                "truncated",
                "not_elf",
                "symlink_loop",
                "broken_symlink",
                "unreadable",
            ] {
                assert!(text.contains(code), "{format} does not show {code}: {text}");
            }
        }
    }
}

/// Problems inside an installation are listed in path order, as the scan's own are, so two
/// scans of the same tree give the same report whatever order the file system lists entries.
#[test]
fn installation_problems_are_in_a_stable_order() {
    let faults = Faults::new();
    let output = faults.scan("json");
    assert_eq!(exit_code(&output), Ok(1), "{}", stderr(&output));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let scan_level = strings(
        &report["problems"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["path"].clone())
            .collect(),
    );
    let mut sorted = scan_level.clone();
    sorted.sort();
    assert_eq!(scan_level, sorted);
    for installation in report["installations"].as_array().unwrap() {
        let paths = strings(
            &installation["problems"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p["path"].clone())
                .collect(),
        );
        assert_eq!(
            paths.len(),
            3,
            "two loop links and a dangling link: {paths:?}"
        );
        let mut sorted = paths.clone();
        sorted.sort();
        assert_eq!(paths, sorted, "installation problems in path order");
    }
}

/// A FIFO named like a library: reading it must not block the scan (opening a FIFO for reading
/// waits for a writer); it is not a regular file, so it is reported as one.
#[test]
fn a_fifo_named_like_a_library_does_not_hang_the_scan() {
    let dir = tempfile::tempdir().unwrap();
    let lib = dir.path().join("lib");
    fs::create_dir(&lib).unwrap();
    fs::copy(real_cudart(), lib.join("libcudart.so.12")).unwrap();
    let fifo = lib.join("libcufft.so.11");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("run mkfifo");
    assert!(made.success(), "mkfifo {}", fifo.display());
    let output = stackbench()
        .args(["scan", "--no-system", "--format", "json", "--root"])
        .arg(dir.path())
        .timeout(Duration::from_secs(10))
        .output()
        .unwrap();
    assert_eq!(exit_code(&output), Ok(1), "{}", stderr(&output));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let problems = all_problems(&report);
    assert_eq!(
        kinds_for(&problems, "libcufft.so.11"),
        ["not_regular_file"],
        "{problems:#?}"
    );
    assert_eq!(problems.len(), 1, "{problems:#?}");
    let cudart: Vec<&Value> = all_libraries(&report)
        .into_iter()
        .filter(|l| l["name"] == "cudart")
        .collect();
    assert_eq!(cudart[0]["soname"], "libcudart.so.12");
}

/// A --root that exists but cannot be read is a bad argument, like a missing one: the options
/// promise "every `--root` must be a readable directory" and the error says so.
#[test]
fn unreadable_root_exits_2_and_says_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    set_mode(dir.path(), 0o755);
    let locked = dir.path().join("locked");
    fs::create_dir(&locked).unwrap();
    set_mode(&locked, 0o000);
    let output = unprivileged_stackbench()
        .args(["scan", "--no-system", "--root"])
        .arg(&locked)
        .timeout(SCAN_TIMEOUT)
        .output()
        .unwrap();
    set_mode(&locked, 0o755);
    let err = stderr(&output);
    assert_eq!(exit_code(&output), Ok(2), "stdout: {}", stdout(&output));
    assert!(
        err.starts_with(&format!("error: --root {}: ", locked.display())),
        "{err}"
    );
    assert!(
        err.contains("give an existing, readable directory"),
        "{err}"
    );
}

/// 20,000 empty files in 200 directories, and a chain of 40 nested directories (deeper than
/// the 32 levels a --root is read to) with a library at its bottom: the wide tree is read whole,
/// the deep one to its limit, and the cut is said. (How fast is `benches/scan`'s to tell.)
#[test]
fn large_and_deep_trees_are_walked_to_the_depth_limit() {
    // In cargo's scratch directory: creating files in some hosts' /tmp is 30 times slower.
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let root = dir.path();
    for d in 0..200 {
        let sub = root.join(format!("wide/d{d:03}"));
        fs::create_dir_all(&sub).unwrap();
        for f in 0..100 {
            fs::File::create(sub.join(format!("f{f:03}.txt"))).unwrap();
        }
    }
    let real = real_cudart();
    let shallow = root.join("wide/d000");
    fs::copy(&real, shallow.join("libcudart.so.12")).unwrap();
    let mut deep = root.join("deep");
    for level in 0..40 {
        deep.push(format!("l{level}"));
    }
    fs::create_dir_all(&deep).unwrap();
    fs::copy(&real, deep.join("libcudart.so.12")).unwrap();

    let output = stackbench()
        .args(["scan", "--no-system", "--format", "json", "--root"])
        .arg(root)
        // A hang guard only: the scan takes well under a second here.
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let err = stderr(&output);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(output.status.code(), Some(1), "{err}");
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let problems = all_problems(&report);
    let kinds: Vec<&str> = problems
        .iter()
        .map(|p| p["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["too_deep"], "{problems:#?}");
    assert_eq!(
        Path::new(problems[0]["path"].as_str().unwrap()),
        root,
        "the cut is reported against the --root"
    );
    let paths: Vec<PathBuf> = all_libraries(&report)
        .iter()
        .map(|l| PathBuf::from(l["path"].as_str().unwrap()))
        .collect();
    assert_eq!(
        paths,
        [shallow.canonicalize().unwrap().join("libcudart.so.12")],
        "the shallow copy is found, the one 41 levels down is not"
    );
}
