//! Shared helpers for the integration tests: where the fixture toolkits are, and small
//! conveniences over a scan's JSON.
//!
//! The fixtures are real NVIDIA libraries built by `ci/fetch-toolkits` into
//! `$STACKBENCH_TOOLKITS` or `<repo>/.toolkits`. Tests that need them fail, never skip, when
//! they are missing.

// Tests read the files they make and the checkout's own: std's readers are theirs (clippy.toml).
#![allow(clippy::disallowed_methods)]
#![allow(dead_code)]

pub mod fleet;
pub mod image;
pub mod pid;

use std::path::{Path, PathBuf};

/// Where `ci/fetch-ci-tools` builds its folder (ci/test runs it first): `$STACKBENCH_CI_TOOLS`,
/// else `<repo>/.ci-tools`.
fn ci_tools() -> PathBuf {
    std::env::var_os("STACKBENCH_CI_TOOLS")
        .filter(|d| !d.is_empty())
        .map_or_else(
            || Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci-tools"),
            PathBuf::from,
        )
}

/// `path` under the CI tools' folder; missing, the test fails saying how to fetch it.
fn ci_tools_file(path: &str) -> PathBuf {
    let file = ci_tools().join(path);
    assert!(
        file.exists(),
        "{} is missing: run ci/fetch-ci-tools (ci/test does)",
        file.display()
    );
    file
}

/// A validator `ci/fetch-ci-tools` builds: `bin/NAME` under its folder.
pub fn ci_tool(name: &str) -> PathBuf {
    ci_tools_file(&format!("bin/{name}"))
}

/// The Python of `ci/fetch-ci-tools`' venv, which has DuckDB.
pub fn ci_tool_venv_python() -> PathBuf {
    ci_tools_file("venv/bin/python3")
}

/// Where the fixtures are expected: `$STACKBENCH_TOOLKITS`, else `<repo>/.toolkits`.
pub fn toolkits_location() -> PathBuf {
    match std::env::var_os("STACKBENCH_TOOLKITS") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join(".toolkits"),
    }
}

/// The fixture toolkits directory, canonical; panics with what to do when it is missing or
/// half built (`ci/fetch-toolkits` writes `.complete` last).
pub fn toolkits() -> PathBuf {
    let dir = toolkits_location();
    assert!(
        dir.join(".complete").is_file(),
        "fixtures missing: run ci/fetch-toolkits (looked for a complete fixture tree at {}; \
         set STACKBENCH_TOOLKITS to use another)",
        dir.display()
    );
    dir.canonicalize().unwrap_or_else(|e| {
        panic!(
            "fixtures missing: run ci/fetch-toolkits ({}: {e})",
            dir.display()
        )
    })
}

/// A fixture tree a `ci/` script builds: `$VAR`, else `<repo>/DEFAULT`, canonical; panics with
/// the script to run when it is missing or half built (each script writes `.complete` last).
fn fixture_tree(var: &str, default: &str, script: &str) -> PathBuf {
    let dir = match std::env::var_os(var) {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join(default),
    };
    assert!(
        dir.join(".complete").is_file(),
        "fixtures missing: run ci/{script} (looked in {})",
        dir.display()
    );
    dir.canonicalize()
        .unwrap_or_else(|e| panic!("fixtures missing: run ci/{script} ({}: {e})", dir.display()))
}

/// The build fixtures (`ci/fetch-build-fixtures`: real nvcc wheels, a torch `version.py`, the
/// PyCUDA source distribution and its build requirements).
pub fn build_fixtures() -> PathBuf {
    fixture_tree(
        "STACKBENCH_BUILD_FIXTURES",
        ".build-fixtures",
        "fetch-build-fixtures",
    )
}

/// The Windows fixture trees (`ci/fetch-windows-toolkits`).
pub fn windows_toolkits() -> PathBuf {
    fixture_tree(
        "STACKBENCH_WINDOWS_TOOLKITS",
        ".toolkits-windows",
        "fetch-windows-toolkits",
    )
}

/// Debian's rdma-core packages, extracted under `root/` (`ci/fetch-rdma-core`).
pub fn rdma_core() -> PathBuf {
    fixture_tree("STACKBENCH_RDMA_CORE", ".rdma-core", "fetch-rdma-core")
}

/// The Windows virtualenv's site-packages and the Windows toolkit, relative to their tree.
pub const WIN_VENV: &str = "venv-cu11/Lib/site-packages";
/// cuDNN 8 for CUDA 11 beside CUDA 12's cuBLAS only.
pub const WIN_VENV_BROKEN: &str = "venv-cudnn8-cu11-cublas12/Lib/site-packages";
pub const WIN_TOOLKIT: &str = "toolkit/NVIDIA GPU Computing Toolkit/CUDA/v11.8";

/// A file inside the fixtures, which must exist.
pub fn fixture(relative: &str) -> PathBuf {
    let path = toolkits().join(relative);
    assert!(
        path.exists(),
        "fixtures missing: run ci/fetch-toolkits ({} is not there)",
        path.display()
    );
    path
}

/// Site-packages of the four fixture virtual environments, relative to the fixtures.
pub const VENV_CU11: &str = "venv-cu11/lib/python3.11/site-packages";
pub const VENV_CU12: &str = "venv-cu12/lib/python3.11/site-packages";
pub const VENV_CUDNN8: &str = "venv-cudnn8-cu12-cublas11/lib/python3.11/site-packages";
/// CUDA 13's NCCL beside CUDA 12's runtime.
pub const VENV_NCCL_CU13: &str = "venv-nccl-cu13-cu12/lib/python3.11/site-packages";
/// The runfile toolkit, its library directory, the conda environment and the driver libraries.
pub const TOOLKIT: &str = "usr/local/cuda-12.9";
pub const TOOLKIT_LIB: &str = "usr/local/cuda-12.9/targets/x86_64-linux/lib";
pub const CONDA: &str = "conda/envs/cu13";
pub const DRIVER_AMD64: &str = "driver-535/amd64/usr/lib/x86_64-linux-gnu/nvidia/current";
pub const DRIVER_I386: &str = "driver-535/i386/usr/lib/i386-linux-gnu/nvidia/current";

/// A real, small CUDA library to copy next to fault fixtures (CUDA 12.9's runtime).
pub fn real_cudart() -> PathBuf {
    fixture(&format!(
        "{VENV_CU12}/nvidia/cuda_runtime/lib/libcudart.so.12"
    ))
}

/// Strings of a JSON array (panics on anything else).
pub fn strings(value: &serde_json::Value) -> Vec<String> {
    value
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {value}"))
        .iter()
        .map(|v| {
            v.as_str()
                .unwrap_or_else(|| panic!("not a string: {v}"))
                .to_string()
        })
        .collect()
}

/// Every problem object in a scan's JSON: the scan's own, each installation's and each
/// library's.
pub fn all_problems(report: &serde_json::Value) -> Vec<&serde_json::Value> {
    let mut out: Vec<&serde_json::Value> = Vec::new();
    if let Some(p) = report["problems"].as_array() {
        out.extend(p.iter());
    }
    for installation in report["installations"].as_array().into_iter().flatten() {
        if let Some(p) = installation["problems"].as_array() {
            out.extend(p.iter());
        }
        for library in installation["libraries"].as_array().into_iter().flatten() {
            if let Some(p) = library["problems"].as_array() {
                out.extend(p.iter());
            }
        }
    }
    out
}

/// Every library object in a scan's JSON.
pub fn all_libraries(report: &serde_json::Value) -> Vec<&serde_json::Value> {
    report["installations"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|i| i["libraries"].as_array().into_iter().flatten())
        .collect()
}

/// The `stackbench` binary under test: `$STACKBENCH_BIN` when set (test binaries copied to a GPU
/// host, where cargo's build path does not exist), else the one cargo built.
pub fn stackbench_bin() -> PathBuf {
    match std::env::var_os("STACKBENCH_BIN") {
        Some(path) if !path.is_empty() => PathBuf::from(path),
        _ => PathBuf::from(env!("CARGO_BIN_EXE_stackbench")),
    }
}

/// The `stackbench` binary with nothing of this host's environment but a PATH: HOME is `home`
/// (give it a fresh directory) and LD_LIBRARY_PATH, CUDA_HOME, NO_COLOR and the like are unset
/// unless the test sets them, so no result depends on this host's own CUDA set-up.
pub fn isolated_stackbench(home: &Path) -> assert_cmd::Command {
    isolated(&stackbench_bin(), home)
}

/// `program` with nothing of this host's environment but a PATH, HOME `home`.
fn isolated(program: &Path, home: &Path) -> assert_cmd::Command {
    let mut command = assert_cmd::Command::new(program);
    command
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", home);
    command
}

/// Runs the isolated `stackbench` (a fresh HOME) with `args` and waits for it.
pub fn run_stackbench(args: &[&str]) -> std::process::Output {
    let home = tempfile::tempdir().expect("temporary HOME");
    isolated_stackbench(home.path())
        .args(args)
        .output()
        .expect("run stackbench")
}

/// Runs `stackbench` with `args`, one run at a time in this test binary (runs that measure do
/// not share the machine with each other), with a HOME of its own.
pub fn stackbench_alone(args: &[&str]) -> std::process::Output {
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    run_stackbench(args)
}

/// The directory every test of this binary writes its files into, kept for the whole run: one
/// of this binary's own under Cargo's `CARGO_TARGET_TMPDIR`, emptied when first used. (A static
/// is never dropped: a temporary directory here would be left in `/tmp` by every run.)
pub fn scratch() -> &'static Path {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let exe = std::env::current_exe().expect("this test binary's path");
        let name = exe.file_name().expect("this test binary's name");
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join("scratch")
            .join(name);
        match std::fs::remove_dir_all(&dir) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                panic!("cannot empty {}: {e}", dir.display())
            }
            _ => {}
        }
        std::fs::create_dir_all(&dir).expect("scratch directory");
        dir
    })
}

/// A real `bench --quick --repeat REPEAT` of the fixtures' `pip:venv-cu12` (its CPU-side rows;
/// the GPU's are skipped), with the fixture driver, its history kept under `scratch()/bench`.
pub fn fixture_bench(repeat: &str) -> std::process::Output {
    let (root, driver) = (toolkits(), fixture(DRIVER_AMD64));
    let output = stackbench_alone(&[
        "bench",
        "--quick",
        "--repeat",
        repeat,
        "--allow-skip",
        "--no-system",
        "--root",
        root.to_str().unwrap(),
        "--driver-dir",
        driver.to_str().unwrap(),
        "--combination",
        "pip:venv-cu12",
        "--format",
        "json",
        "--results",
        scratch().join("bench").to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0));
    output
}

/// `stackbench compare OLD NEW --format json EXTRA...`, alone.
pub fn compare_json(old: &Path, new: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "compare",
        old.to_str().unwrap(),
        new.to_str().unwrap(),
        "--format",
        "json",
    ];
    args.extend_from_slice(extra);
    stackbench_alone(&args)
}

/// A run's standard output as JSON; its standard error must not hold a panic.
pub fn stdout_json(output: &std::process::Output) -> serde_json::Value {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}); stderr: {stderr}"))
}

/// A doctor report's JSON from standard output: checks the schema tag and that it reads back as
/// stackbench's own `DoctorReport` (so every finding's cause is a known code).
pub fn doctor_report(stdout: &[u8]) -> serde_json::Value {
    let value: serde_json::Value = serde_json::from_slice(stdout).unwrap_or_else(|e| {
        panic!(
            "doctor's stdout is not JSON ({e}): {}",
            String::from_utf8_lossy(stdout)
        )
    });
    assert_eq!(
        value["schema"],
        stackbench::tags::DOCTOR_SCHEMA,
        "schema tag"
    );
    assert_eq!(stackbench::tags::DOCTOR_SCHEMA, "stackbench.doctor/v1");
    if let Err(e) = serde_json::from_value::<stackbench::doctor::DoctorReport>(value.clone()) {
        panic!("doctor's JSON does not read back as a DoctorReport: {e}");
    }
    value
}

/// The findings of a doctor report with cause code `cause`, in report order, each folded
/// finding (`also`) unfolded into one of its own beside the finding it was folded into.
pub fn findings_of(report: &serde_json::Value, cause: &str) -> Vec<serde_json::Value> {
    let mut found = Vec::new();
    for f in report["findings"]
        .as_array()
        .unwrap_or_else(|| panic!("no findings array in {report}"))
        .iter()
        .filter(|f| f["cause"] == cause)
    {
        let mut head = f.clone();
        let also = head
            .as_object_mut()
            .and_then(|o| o.remove("also"))
            .unwrap_or_default();
        found.push(head.clone());
        for folded in also.as_array().into_iter().flatten() {
            let mut one = head.clone();
            for (key, value) in folded.as_object().into_iter().flatten() {
                one[key] = value.clone();
            }
            found.push(one);
        }
    }
    found
}

/// The live load, in a doctor report, of the library whose requested path ends in `/file`.
pub fn probe_load<'a>(report: &'a serde_json::Value, file: &str) -> &'a serde_json::Value {
    let loads: Vec<&serde_json::Value> = report["probes"]
        .as_array()
        .expect("probes array")
        .iter()
        .flat_map(|p| p["loads"].as_array().into_iter().flatten())
        .filter(|l| {
            l["path"]
                .as_str()
                .unwrap_or_default()
                .ends_with(&format!("/{file}"))
        })
        .collect();
    assert_eq!(loads.len(), 1, "one load of {file} in {}", report["probes"]);
    loads[0]
}

/// Builds the shared library `file` (soname `soname`) in `dir` from C `source` with the system
/// compiler: a tiny faulty library for crash and hang tests.
pub fn build_library(dir: &Path, file: &str, soname: &str, source: &str) {
    let c = dir.join(format!("{file}.c"));
    std::fs::write(&c, source).unwrap();
    let status = std::process::Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(dir.join(file))
        .arg(format!("-Wl,-soname,{soname}"))
        .arg(&c)
        .status()
        .expect("run cc");
    assert!(status.success(), "cc failed for {file}");
    std::fs::remove_file(c).unwrap();
}

/// A `stackbench.toml` naming one combination of `dirs`, in `dir`.
pub fn combination_config(dir: &Path, name: &str, dirs: &[PathBuf]) -> PathBuf {
    let list: Vec<String> = dirs
        .iter()
        .map(|d| format!("{:?}", d.display().to_string()))
        .collect();
    let path = dir.join("stackbench.toml");
    std::fs::write(
        &path,
        format!(
            "[[combination]]\nname = \"{name}\"\nlibrary_dirs = [{}]\n",
            list.join(", ")
        ),
    )
    .unwrap();
    path
}

/// `dir/faulty/libcublas.so.12`, built here: its `cublasGetProperty` says "about to fail" on
/// stderr, then runs `body` (`raise(SIGSEGV); return 0;` to crash, `for (;;) pause(); return 0;`
/// to hang). The directory, for a combination's `library_dirs`.
pub fn faulty_cublas(dir: &Path, body: &str) -> PathBuf {
    let faulty = dir.join("faulty");
    std::fs::create_dir(&faulty).unwrap();
    build_library(
        &faulty,
        "libcublas.so.12",
        "libcublas.so.12",
        &format!(
            "#include <signal.h>\n#include <stdio.h>\n#include <unistd.h>\n\
             int cublasGetProperty(int type, int *value) {{ fprintf(stderr, \"about to fail\\n\"); {body} }}\n"
        ),
    );
    faulty
}

/// The simulated GPU as `ci/sim` lays it out: its `libcuda.so.1` and `libnvidia-ml.so.1`, and a
/// CUDA 13.0 toolkit beside it (the real NVRTC, and the simulated libraries under NVIDIA's
/// names).
pub struct Simulator {
    pub driver_dir: PathBuf,
    pub toolkit_dir: PathBuf,
}

/// The simulator as an earlier `ci/sim` left it under cargo's target directory, if it did;
/// nothing is built.
pub fn laid_out_simulator() -> Option<Simulator> {
    let target = match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join("target"),
    };
    let sim = Simulator {
        driver_dir: target.join("simgpu/driver"),
        toolkit_dir: target.join("simgpu/cuda-sim"),
    };
    (sim.driver_dir.join("libcuda.so.1").is_file() && sim.toolkit_dir.is_dir()).then_some(sim)
}

/// Runs `ci/sim` once per test process (it builds tests/simgpu where needed) and gives where it
/// put the simulator; panics with its output when it fails.
pub fn simulator() -> &'static Simulator {
    static SIMULATOR: std::sync::OnceLock<Simulator> = std::sync::OnceLock::new();
    SIMULATOR.get_or_init(|| {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("ci/sim");
        let output = std::process::Command::new(&script)
            .output()
            .expect("run ci/sim");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "ci/sim failed: {stdout}{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let value = |key: &str| {
            stdout
                .lines()
                .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
                .map(PathBuf::from)
                .unwrap_or_else(|| panic!("ci/sim printed no {key}=: {stdout}"))
        };
        Simulator {
            driver_dir: value("driver_dir"),
            toolkit_dir: value("toolkit_dir"),
        }
    })
}

/// `stackbench COMMAND` set up to run on the simulator alone (`--no-system`, its toolkit as
/// the root, its driver): HOME and working directory `dir`, the profile `toml` written to
/// `dir/profile.toml`, the simulated libraries' calls traced to `dir/trace.jsonl` (see
/// [`simulator_trace`]). Add the command's own arguments.
pub fn on_simulator(dir: &Path, toml: &str, command: &[&str]) -> assert_cmd::Command {
    std::fs::create_dir_all(dir).expect("the run's directory");
    simulated(isolated_stackbench(dir), dir, toml, command)
}

/// [`on_simulator`]'s command on a kernel boot of its own: run in a mount namespace of its own
/// in which `/proc/sys/kernel/random/boot_id` reads `boot_id`, so that runs of one machine are
/// taken for runs of separate boots. Mounting needs root.
pub fn on_simulator_booted(
    dir: &Path,
    toml: &str,
    command: &[&str],
    boot_id: &str,
) -> assert_cmd::Command {
    std::fs::create_dir_all(dir).expect("the run's directory");
    let file = dir.join("boot_id");
    std::fs::write(&file, format!("{boot_id}\n")).expect("write the boot id");
    let mut unshare = isolated(Path::new("/usr/bin/unshare"), dir);
    unshare
        .args(["--mount", "--propagation", "private", "sh", "-c"])
        .arg(r#"mount --bind "$0" /proc/sys/kernel/random/boot_id && exec "$@""#)
        .arg(&file)
        .arg(stackbench_bin());
    simulated(unshare, dir, toml, command)
}

/// `stackbench`, however it is started, given `command` on the simulated GPU of the profile
/// `toml`, its files in `dir`.
fn simulated(
    mut stackbench: assert_cmd::Command,
    dir: &Path,
    toml: &str,
    command: &[&str],
) -> assert_cmd::Command {
    let sim = simulator();
    let profile = dir.join("profile.toml");
    std::fs::write(&profile, toml).expect("write the profile");
    std::fs::create_dir_all(dir.join("tmp")).expect("the run's TMPDIR");
    stackbench
        .env("TMPDIR", dir.join("tmp"))
        .env("STACKBENCH_SIM_PROFILE", &profile)
        .env("STACKBENCH_SIM_TRACE", dir.join("trace.jsonl"))
        .current_dir(dir)
        .args(command)
        .args(["--no-system", "--root"])
        .arg(&sim.toolkit_dir)
        .arg("--driver-dir")
        .arg(&sim.driver_dir);
    stackbench
}

/// Fails unless `tmp`, the TMPDIR of a run that has ended, is empty: its workers' directories
/// (the pinning directory, NCCL's debug log) go with the run.
pub fn assert_nothing_left(tmp: &Path) {
    let left: Vec<_> = std::fs::read_dir(tmp)
        .expect("the run's TMPDIR")
        .map(|entry| entry.expect("an entry of TMPDIR").file_name())
        .collect();
    assert!(left.is_empty(), "left in {}: {left:?}", tmp.display());
}

/// The simulated libraries' calls a run [`on_simulator`] in `dir` made, one JSON object a call.
pub fn simulator_trace(dir: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join("trace.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// Check `id` of a check report's one combination.
pub fn check_result<'a>(report: &'a serde_json::Value, id: &str) -> &'a serde_json::Value {
    report["combinations"][0]["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no check {id}: {report}"))
}

/// `(status, reason)` of check `id` of a check report's one combination.
pub fn check_status<'a>(report: &'a serde_json::Value, id: &str) -> (&'a str, &'a str) {
    let check = check_result(report, id);
    (
        check["status"].as_str().unwrap_or_default(),
        check["reason"].as_str().unwrap_or_default(),
    )
}

/// A bench report's rows of `benchmark` (`copy`, `vector_add`, `matmul`).
pub fn bench_rows<'a>(
    report: &'a serde_json::Value,
    benchmark: &str,
) -> Vec<&'a serde_json::Value> {
    (report["benchmarks"].as_array().expect("benchmarks").iter())
        .filter(|r| r["benchmark"] == benchmark)
        .collect()
}

/// A bench report's first row of `benchmark`.
pub fn bench_row<'a>(report: &'a serde_json::Value, benchmark: &str) -> &'a serde_json::Value {
    bench_rows(report, benchmark)
        .first()
        .copied()
        .unwrap_or_else(|| panic!("no {benchmark} row"))
}

/// A finished run on the simulator.
pub struct SimulatedRun {
    pub code: Option<i32>,
    pub report: serde_json::Value,
    /// The simulated libraries' calls (see [`simulator_trace`]).
    pub trace: Vec<serde_json::Value>,
}

/// `stackbench COMMAND --format json` [`on_simulator`] with the profile `toml`, in a directory
/// of its own. A bench writes its files there, with one repetition unless `command` asks for
/// more (repetitions are compare's business, tested in `tests/simulated_compare.rs`).
pub fn run_simulated(command: &[&str], toml: &str) -> SimulatedRun {
    let dir = tempfile::tempdir().expect("temporary directory");
    let mut stackbench = on_simulator(dir.path(), toml, command);
    if command[0] == "bench" {
        if !command.contains(&"--repeat") {
            stackbench.args(["--repeat", "1"]);
        }
        stackbench.arg("--results").arg(dir.path());
    }
    let output = stackbench
        .args(["--format", "json"])
        .output()
        .expect("run stackbench");
    assert_nothing_left(&dir.path().join("tmp"));
    SimulatedRun {
        code: output.status.code(),
        report: stdout_json(&output),
        trace: simulator_trace(dir.path()),
    }
}

/// `stackbench doctor --sysroot` run under `strace`.
pub struct TracedDoctor {
    pub code: Option<i32>,
    pub report: serde_json::Value,
    /// Every place it named or opened outside the tree that a run of `stackbench --version`
    /// (the loader's own files) does not, nor the process's own `/proc/<pid>` and cgroup.
    pub outside: Vec<String>,
    /// strace's whole record, for the failure message.
    pub trace: String,
}

/// Runs `stackbench doctor --sysroot tree --format json` under `strace -f -y`, with only
/// `env` in the environment: its report, and what it read outside the tree (see
/// [`TracedDoctor::outside`]).
pub fn traced_doctor_sysroot(tree: &Path, env: &[(&str, &str)]) -> TracedDoctor {
    let args = [
        "doctor".as_ref(),
        "--sysroot".as_ref(),
        tree.as_os_str(),
        "--format".as_ref(),
        "json".as_ref(),
    ];
    let (code, stdout, trace) = traced(&args, env);
    let (_, _, baseline) = traced(&["--version".as_ref()], env);
    let mut allowed = outside(&baseline, tree);
    // The tree's own path is made canonical, link by link from `/`.
    allowed.extend(tree.ancestors().map(|a| a.display().to_string()));
    let own = |place: &String| {
        let proc_pid = place
            .strip_prefix("/proc/")
            .and_then(|rest| rest.split('/').next())
            .is_some_and(|pid| pid == "self" || pid.bytes().all(|b| b.is_ascii_digit()));
        // How many threads to start: the cgroup's CPU quota and the CPUs.
        proc_pid
            || place.starts_with("/sys/fs/cgroup")
            || place.starts_with("/sys/devices/system/cpu")
    };
    let outside = outside(&trace, tree)
        .into_iter()
        .filter(|p| !allowed.contains(p) && !own(p))
        .collect();
    TracedDoctor {
        code,
        report: serde_json::from_slice(&stdout).expect("doctor's JSON"),
        outside,
        trace,
    }
}

/// The places a traced run named or opened outside `tree`, from `strace -f -y`'s record: each
/// call's path argument (its first string; the others are data, as `readlink`'s target) and
/// every file descriptor's path (`3</usr/lib/...>`: where an opened link really led).
fn outside(trace: &str, tree: &Path) -> std::collections::BTreeSet<String> {
    let mut places = std::collections::BTreeSet::new();
    // Starting the program and asking for its working directory read nothing.
    let reads = |line: &&str| !line.contains("execve(") && !line.contains("getcwd(");
    for line in trace.lines().filter(reads) {
        let argument = line
            .split_once('"')
            .and_then(|(_, rest)| rest.split_once('"'))
            .map(|(path, _)| path)
            // `fstatat(fd, "")` asks about the descriptor, whose path follows.
            .filter(|path| !path.is_empty());
        // The working directory `AT_FDCWD` names is not read.
        let descriptors = line
            .split("</")
            .zip(line.split("</").skip(1))
            .filter(|(before, _)| !before.ends_with("AT_FDCWD"))
            .filter_map(|(_, rest)| rest.split_once('>'))
            .map(|(path, _)| format!("/{path}"));
        for place in argument.map(str::to_owned).into_iter().chain(descriptors) {
            if !Path::new(&place).starts_with(tree) {
                places.insert(place);
            }
        }
    }
    places
}

/// Runs `stackbench args` under `strace`, with only `env` in the environment: its exit code,
/// its output, and the trace.
fn traced(args: &[&std::ffi::OsStr], env: &[(&str, &str)]) -> (Option<i32>, Vec<u8>, String) {
    let home = tempfile::tempdir().unwrap();
    let record = home.path().join("trace");
    let output = std::process::Command::new("strace")
        .current_dir(home.path())
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", home.path())
        .envs(env.iter().copied())
        .args([
            "-f",
            "-qq",
            "-y",
            "-s",
            "4096",
            "-e",
            "trace=%file,getdents64",
            "-o",
        ])
        .arg(&record)
        .arg(stackbench_bin())
        .args(args)
        .output()
        .expect("strace (Debian's strace; ci/test installs it)");
    let trace = std::fs::read_to_string(&record).expect("strace's record");
    (output.status.code(), output.stdout, trace)
}

/// A page as headless Chromium drew it: its pixels, RGB.
pub struct Screenshot {
    pub pixels: Vec<[u8; 3]>,
}

impl Screenshot {
    /// How many pixels `matches` accepts.
    pub fn count(&self, matches: impl Fn([u8; 3]) -> bool) -> usize {
        self.pixels.iter().filter(|p| matches(**p)).count()
    }
}

/// Draws `page` with headless Chromium at 1200 x 2400 into `png` (kept for a person to look
/// at) and reads its pixels back.
pub fn screenshot(page: &Path, png: &Path) -> Screenshot {
    let chromium = ["chromium", "chromium-browser"]
        .into_iter()
        .map(|name| PathBuf::from("/usr/bin").join(name))
        .find(|path| path.exists())
        .expect("Chromium is needed (Debian's package chromium; ci/test installs it)");
    let _ = std::fs::remove_file(png);
    let profile = tempfile::tempdir().unwrap();
    let status = std::process::Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--window-size=1200,2400",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("file://{}", page.display()))
        .stderr(std::process::Stdio::null())
        .status()
        .expect("start Chromium");
    assert!(status.success(), "chromium: {status}");
    eprintln!("screenshot: {}", png.display());
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(png).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
    let frame = reader.next_frame(&mut pixels).unwrap();
    assert_eq!((frame.width, frame.height), (1200, 2400));
    let channels = frame.color_type.samples();
    Screenshot {
        pixels: pixels[..frame.buffer_size()]
            .chunks(channels)
            .map(|p| [p[0], p[1], p[2]])
            .collect(),
    }
}

/// Whether this host has NVIDIA hardware as `doctor` decides it (a PCI function of NVIDIA's,
/// vendor 0x10de, in sysfs): where it has none, a driver missing altogether is a note, not an
/// error, and findings and exit statuses that follow from it differ.
pub fn nvidia_hardware_here() -> bool {
    std::fs::read_dir("/sys/bus/pci/devices")
        .map(|entries| {
            entries.flatten().any(|e| {
                std::fs::read_to_string(e.path().join("vendor")).is_ok_and(|v| v.trim() == "0x10de")
            })
        })
        .unwrap_or(false)
}

/// The severity `doctor` gives a driver missing altogether on this host.
pub fn no_driver_severity() -> &'static str {
    match nvidia_hardware_here() {
        true => "error",
        false => "info",
    }
}

/// Whether the loader finds a `libcuda.so.1` on this host (a GPU machine), per `ldconfig -p`.
pub fn host_has_a_driver() -> bool {
    std::process::Command::new("/sbin/ldconfig")
        .arg("-p")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).contains("libcuda.so.1 "))
        .unwrap_or(false)
}
