//! Can this host build CUDA code (issue 29): `doctor` on real nvcc wheels (CUDA 13's
//! `nvidia-cuda-nvcc` with a real nvcc and `host_config.h`; CUDA 12's, which ships ptxas and no
//! nvcc), a runtime-only `CUDA_HOME`, a host compiler newer than `host_config.h` allows, the
//! environment's variables, a real torch `version.py`, the kernel module, and a real PyCUDA
//! source build run under `doctor --`.

// Tests read the files they make and the checkout's own: std's readers are theirs (clippy.toml).
#![allow(clippy::disallowed_methods)]

mod common;

use common::{build_fixtures, doctor_report, findings_of, fixture, isolated_stackbench, TOOLKIT};
use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

const SITE: &str = "lib/python3.11/site-packages";

/// CUDA 13.0's nvcc, crt, runtime and nvvm wheels of one release: a toolkit that compiles.
fn cu13() -> PathBuf {
    build_fixtures().join("venv-nvcc-cu13-nvvm").join(SITE)
}

/// The same without `nvidia-nvvm` (installed with `--no-deps`): no cicc.
fn cu13_without_nvvm() -> PathBuf {
    build_fixtures().join("venv-nvcc-cu13").join(SITE)
}

/// The same with the `nvidia-nvvm` an unpinned install takes, 13.5.37, beside nvcc 13.0.88.
fn cu13_with_newer_nvvm() -> PathBuf {
    build_fixtures().join("venv-nvcc-cu13-nvvm135").join(SITE)
}

fn cu12() -> PathBuf {
    build_fixtures().join("venv-nvcc-cu12").join(SITE)
}

/// `doctor --no-system --format json` on `roots`, with `env` on top of an isolated one.
fn doctor(roots: &[PathBuf], env: &[(&str, String)], extra: &[&str]) -> (i32, Value) {
    let home = tempfile::tempdir().expect("HOME");
    let mut command = isolated_stackbench(home.path());
    command.args(["doctor", "--no-system", "--format", "json"]);
    for root in roots {
        command.arg("--root").arg(root);
    }
    command.args(extra);
    for (key, value) in env {
        command.env(key, value);
    }
    let output = command.output().expect("run doctor");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    (
        output.status.code().expect("exit code"),
        doctor_report(&output.stdout),
    )
}

fn toolkit<'a>(report: &'a Value, root: &Path) -> &'a Value {
    report["build"]["toolkits"]
        .as_array()
        .expect("toolkits")
        .iter()
        .find(|t| t["root"] == root.display().to_string())
        .unwrap_or_else(|| panic!("no toolkit {} in {}", root.display(), report["build"]))
}

fn causes(report: &Value) -> Vec<String> {
    report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| f["cause"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// A program `name` in a fresh directory that prints `version` as its `--version`.
fn fake_program(dir: &Path, name: &str, version: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\necho '{version}'\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

#[test]
fn a_real_nvcc_wheel_can_compile_and_the_cu12_nvcc_wheel_is_said_to_hold_no_nvcc() {
    let (_, report) = doctor(&[cu13(), cu12()], &[], &[]);
    let cu13_toolkit = toolkit(&report, &cu13());
    assert!(cu13_toolkit["nvcc"]
        .as_str()
        .unwrap()
        .ends_with("nvidia/cu13/bin/nvcc"));
    // nvcc itself answered: the wheel's version would say 13.0 too, so the source is checked.
    assert_eq!(cu13_toolkit["nvcc_version"], "13.0");
    assert_eq!(cu13_toolkit["nvcc_version_source"], "nvcc --version");
    assert_eq!(cu13_toolkit["header_version"], "13.0");
    assert_eq!(cu13_toolkit["host_limits"]["gnu_max"], 15);
    assert_eq!(cu13_toolkit["host_limits"]["clang_max"], 20);
    assert_eq!(
        common::strings(&cu13_toolkit["missing_headers"]),
        ["cudaProfiler.h"]
    );
    let cu12_toolkit = toolkit(&report, &cu12());
    assert!(cu12_toolkit["nvcc"].is_null());
    assert!(cu12_toolkit["ptxas_only"]
        .as_str()
        .unwrap()
        .ends_with("cuda_nvcc/bin/ptxas"));
    let no_compiler = findings_of(&report, "no_compiler");
    assert_eq!(no_compiler.len(), 1, "{no_compiler:?}");
    let message = no_compiler[0]["message"].as_str().unwrap();
    assert!(
        message.contains("nvidia-cuda-nvcc-cu12 12.9.86") && message.contains("no nvcc"),
        "{message}"
    );
    // The fix points at the toolkit that can compile.
    assert!(no_compiler[0]["fix"]
        .as_str()
        .unwrap()
        .contains(&cu13().display().to_string()));
    // No stub in any wheel: -lcuda links only where the host has a libcuda.so.
    let system_libcuda = !report["build"]["system_libcuda"].is_null();
    assert_eq!(
        findings_of(&report, "no_link_stub").is_empty(),
        system_libcuda
    );
}

#[test]
fn a_gcc_newer_than_host_config_allows_is_refused_by_the_toolkits_own_limit() {
    let bin = tempfile::tempdir().unwrap();
    fake_program(bin.path(), "g++", "g++ (GCC) 16.1.0");
    let path = format!("{}:/usr/bin:/bin", bin.path().display());
    let (_, report) = doctor(&[cu13()], &[("PATH", path)], &[]);
    assert_eq!(report["build"]["host_compiler"]["version"], "16.1.0");
    let refused = findings_of(&report, "host_compiler_unsupported");
    assert_eq!(refused.len(), 1, "{}", report["findings"]);
    let message = refused[0]["message"].as_str().unwrap();
    assert!(message.contains("gcc 16 is newer than 15"), "{message}");
    assert!(message.contains("host_config.h"), "{message}");
    // The same compiler at the limit is taken, and CUDAHOSTCXX wins over PATH.
    let at_limit = tempfile::tempdir().unwrap();
    let named = fake_program(at_limit.path(), "g++-15", "g++-15 (GCC) 15.2.0");
    let path = format!("{}:/usr/bin:/bin", bin.path().display());
    let (_, report) = doctor(
        &[cu13()],
        &[("PATH", path), ("CUDAHOSTCXX", named.display().to_string())],
        &[],
    );
    assert_eq!(report["build"]["host_compiler"]["named_by"], "CUDAHOSTCXX");
    assert!(findings_of(&report, "host_compiler_unsupported").is_empty());
    let summary = report["build"]["toolkits"][0].clone();
    assert!(summary["nvcc"].is_string());
}

#[test]
fn a_runtime_only_cuda_home_and_one_that_points_nowhere_are_invalid_and_the_fix_names_a_toolkit_that_compiles(
) {
    let runtime_only = fixture(TOOLKIT);
    let (_, report) = doctor(
        &[cu13()],
        &[
            ("CUDA_HOME", runtime_only.display().to_string()),
            ("CUDA_ROOT", "/nonexistent/cuda".to_string()),
        ],
        &[],
    );
    let invalid = findings_of(&report, "cuda_home_invalid");
    let messages: Vec<&str> = invalid
        .iter()
        .map(|f| f["message"].as_str().unwrap())
        .collect();
    assert_eq!(invalid.len(), 2, "{messages:?}");
    let home = invalid
        .iter()
        .find(|f| f["message"].as_str().unwrap().starts_with("CUDA_HOME"))
        .unwrap();
    assert!(
        home["message"]
            .as_str()
            .unwrap()
            .contains("a directory without bin/nvcc"),
        "{home}"
    );
    let cu13_root = cu13().join("nvidia/cu13");
    assert!(
        home["fix"]
            .as_str()
            .unwrap()
            .contains(&format!("export CUDA_HOME={}", cu13_root.display())),
        "{home}"
    );
    assert!(messages
        .iter()
        .any(|m| m.starts_with("CUDA_ROOT") && m.contains("nothing is there")));
    // Two variables naming two places: one conflict finding listing both.
    let conflict = findings_of(&report, "cuda_env_conflict");
    assert_eq!(conflict.len(), 1);
    assert_eq!(conflict[0]["evidence"].as_array().unwrap().len(), 2);
}

#[test]
fn unset_variables_are_never_an_alarm() {
    let (_, report) = doctor(&[cu13(), cu12(), fixture(TOOLKIT)], &[], &[]);
    let environment = [
        "cuda_home_invalid",
        "cuda_env_conflict",
        "several_nvcc_on_path",
        "mixed_cuda_search_path",
        "no_visible_devices",
        "host_compiler_unsupported",
    ];
    let raised: Vec<String> = causes(&report)
        .into_iter()
        .filter(|c| environment.contains(&c.as_str()))
        .collect();
    assert!(raised.is_empty(), "{raised:?}");
    // The runtime-only toolkit is said to be one, in its table line only.
    let line = toolkit(&report, &fixture(TOOLKIT));
    assert!(line["nvcc"].is_null());
}

#[test]
fn two_nvcc_on_path_mixed_majors_on_the_search_path_and_hidden_gpus_are_each_named() {
    let other = tempfile::tempdir().unwrap();
    fake_program(
        other.path(),
        "nvcc",
        "Cuda compilation tools, release 12.4, V12.4.131",
    );
    let path = format!(
        "{}:{}:/usr/bin:/bin",
        other.path().display(),
        cu13().join("nvidia/cu13/bin").display()
    );
    let cu11_lib = fixture(common::VENV_CU11).join("nvidia/cuda_runtime/lib");
    let cu12_lib = fixture(common::VENV_CU12).join("nvidia/cuda_runtime/lib");
    let search = format!("{}:{}", cu11_lib.display(), cu12_lib.display());
    let roots = [
        cu13(),
        fixture(common::VENV_CU11),
        fixture(common::VENV_CU12),
    ];
    for hidden in ["", "-1", "none"] {
        let env = [
            ("PATH", path.clone()),
            ("LD_LIBRARY_PATH", search.clone()),
            ("CUDA_VISIBLE_DEVICES", hidden.to_string()),
        ];
        let (_, report) = doctor(&roots, &env, &["--no-load"]);
        let several = findings_of(&report, "several_nvcc_on_path");
        assert_eq!(several.len(), 1, "{}", report["findings"]);
        assert!(several[0]["evidence"][0]
            .as_str()
            .unwrap()
            .ends_with("nvcc (wins)"));
        let mixed = findings_of(&report, "mixed_cuda_search_path");
        assert_eq!(mixed.len(), 1);
        assert_eq!(
            common::strings(&mixed[0]["evidence"]),
            [
                format!("{}: CUDA 11", cu11_lib.display()),
                format!("{}: CUDA 12", cu12_lib.display())
            ]
        );
        assert_eq!(
            findings_of(&report, "no_visible_devices").len(),
            1,
            "CUDA_VISIBLE_DEVICES={hidden:?}"
        );
    }
    let (_, report) = doctor(
        &roots,
        &[("CUDA_VISIBLE_DEVICES", "0".into())],
        &["--no-load"],
    );
    assert!(findings_of(&report, "no_visible_devices").is_empty());
}

#[test]
fn frameworks_are_read_from_their_files_without_importing_them() {
    let torch_venv = build_fixtures().join("venv-torch");
    let (_, report) = doctor(std::slice::from_ref(&torch_venv), &[], &["--no-load"]);
    let frameworks = report["frameworks"].as_array().expect("frameworks");
    let torch = frameworks
        .iter()
        .find(|f| f["name"] == "torch")
        .expect("torch");
    assert_eq!(torch["version"], "2.9.1+cu128");
    assert_eq!(torch["cuda"], "12.8");
    assert_eq!(torch["cudnn"], "9.10.2.21");
    assert!(torch["source"]
        .as_str()
        .unwrap()
        .ends_with("torch/version.py"));
    let cupy = frameworks
        .iter()
        .find(|f| f["name"] == "cupy")
        .expect("cupy");
    assert_eq!(cupy["cuda"], "12");
    let jax = frameworks.iter().find(|f| f["name"] == "jax").expect("jax");
    assert_eq!(jax["cuda"], "12");
    assert!(jax["cudnn"].is_null(), "a range is not a pin: {jax}");
}

/// The fixture's 535 libcuda on the search path: on a host without the NVIDIA kernel module,
/// `no_kernel_module` is the first error; on a GPU host whose module is another version, the
/// stale copy before the host's own driver is.
#[test]
fn a_reachable_libcuda_without_a_kernel_module_is_the_first_error() {
    let driver = fixture(common::DRIVER_AMD64);
    let env = [("LD_LIBRARY_PATH", driver.display().to_string())];
    let (code, report) = doctor(&[fixture(common::CONDA)], &env, &[]);
    let module_loaded = Path::new("/proc/driver/nvidia/version").exists()
        || Path::new("/sys/module/nvidia").exists()
        || Path::new("/dev/dxg").exists();
    let first = &report["findings"][0];
    assert_eq!(code, 1);
    assert_eq!(
        findings_of(&report, "no_kernel_module").is_empty(),
        module_loaded,
        "{}",
        report["findings"]
    );
    assert!(
        first["message"].as_str().unwrap().contains("535.261.03"),
        "{first}"
    );
    let module = std::fs::read_to_string("/proc/driver/nvidia/version").unwrap_or_default();
    if !module_loaded {
        assert_eq!(first["cause"], "no_kernel_module", "{}", report["findings"]);
    } else if !module.is_empty() && !module.contains("535.261.03") {
        // A GPU host: the fixture's 535 libcuda put before the host's own driver, whose module
        // is loaded, is the first error: a stale copy shadowing the module's own version, or,
        // where the host's copy is not on the search at all, a module mismatch.
        assert!(
            ["stale_driver_library", "kernel_module_mismatch"]
                .contains(&first["cause"].as_str().unwrap_or_default()),
            "{}",
            report["findings"]
        );
    }
    // The driver_too_old it leads to is still said, after it.
    assert!(!findings_of(&report, "driver_too_old").is_empty());
}

#[test]
fn a_fix_that_puts_an_older_driver_on_the_path_says_what_it_is_too_old_for() {
    let roots = [fixture(common::CONDA), fixture("driver-535")];
    let (_, report) = doctor(&roots, &[], &["--no-load"]);
    let no_driver = findings_of(&report, "no_driver");
    assert_eq!(no_driver.len(), 1);
    let fix = no_driver[0]["fix"].as_str().unwrap();
    assert!(fix.starts_with("export LD_LIBRARY_PATH="), "{fix}");
    assert!(
        fix.contains("supports CUDA 12.2 only: too old for the CUDA 13.0 runtime"),
        "{fix}"
    );
}

/// `doctor --quiet -- <fresh venv>/bin/python -m pip install <pycuda sdist>`, offline from the
/// fixtures' wheelhouse, with `env`. `CFLAGS=-O0` makes the Boost.Python sources PyCUDA compiles
/// before its CUDA ones quicker to build: only how the build fails matters here.
fn pycuda_build(roots: &[PathBuf], env: &[(&str, String)]) -> (i32, Value) {
    let fixtures = build_fixtures();
    let venv = tempfile::tempdir().unwrap();
    let made = std::process::Command::new("python3")
        .args(["-m", "venv"])
        .arg(venv.path())
        .status()
        .expect("python3 -m venv");
    assert!(made.success());
    let python = venv.path().join("bin/python");
    let sdist = fixtures.join("pycuda/pycuda-2026.1.tar.gz");
    let wheelhouse = fixtures.join("wheelhouse");
    let command = [
        python.display().to_string(),
        "-m".into(),
        "pip".into(),
        "install".into(),
        "--no-index".into(),
        "--no-cache-dir".into(),
        "--find-links".into(),
        wheelhouse.display().to_string(),
        sdist.display().to_string(),
    ];
    let mut args: Vec<&str> = vec!["--quiet", "--timeout", "600", "--"];
    args.extend(command.iter().map(String::as_str));
    let mut env = env.to_vec();
    env.push(("CFLAGS", "-O0".into()));
    env.push(("PIP_DISABLE_PIP_VERSION_CHECK", "1".into()));
    doctor(roots, &env, &args)
}

#[test]
fn a_real_pycuda_source_build_under_doctor_is_explained_with_the_toolkit_to_use() {
    let cu13_root = cu13().join("nvidia/cu13");
    let roots = [cu13()];
    let (plain, given) = std::thread::scope(|scope| {
        // As a new user runs it: nothing named, no nvcc on PATH.
        let plain = scope.spawn(|| pycuda_build(&roots, &[]));
        // Pointed at CUDA 13's wheels (by the nvcc on PATH, which PyCUDA reads), which lack
        // cudaProfiler.h.
        let given = scope.spawn(|| {
            let path = format!(
                "{}:/usr/local/bin:/usr/bin:/bin",
                cu13_root.join("bin").display()
            );
            pycuda_build(
                &roots,
                &[
                    ("CUDA_ROOT", cu13_root.display().to_string()),
                    ("PATH", path),
                ],
            )
        });
        (plain.join().unwrap(), given.join().unwrap())
    });
    let (code, report) = plain;
    assert_eq!(code, 1, "{}", report["findings"]);
    assert_ne!(report["command"]["exit_status"], 0);
    let headers = findings_of(&report, "no_headers");
    assert_eq!(headers.len(), 1, "{}", report["findings"]);
    let message = headers[0]["message"].as_str().unwrap();
    assert!(message.contains("found no cuda.h"), "{message}");
    // A build under doctor has each toolkit's probe compiled too: the wheels can compile.
    let probe = &toolkit(&report, &cu13())["probe"];
    assert_eq!(probe["compiled"], true, "{probe}");
    // PyCUDA's fix names every part its build needs that the toolkit lacks, cuRAND's headers too.
    assert!(
        headers[0]["fix"]
            .as_str()
            .unwrap()
            .contains("nvidia-curand"),
        "{}",
        headers[0]
    );
    assert!(
        message.contains(&format!("the toolkit to use is {}", cu13_root.display())),
        "{message}"
    );
    let fix = headers[0]["fix"].as_str().unwrap();
    // PyCUDA finds its toolkit by the nvcc on PATH, not by a CUDA_ROOT variable.
    assert!(
        fix.starts_with(&format!("export PATH={}/bin:$PATH", cu13_root.display())),
        "{fix}"
    );
    assert!(headers[0]["evidence"][0]
        .as_str()
        .unwrap()
        .contains("fatal error: cuda.h: No such file or directory"));
    let compiler = findings_of(&report, "no_compiler");
    assert_eq!(
        compiler.len(),
        1,
        "pycuda's 'nvcc not in path': {}",
        report["findings"]
    );

    let (code, report) = given;
    assert_eq!(code, 1, "{}", report["findings"]);
    let headers = findings_of(&report, "no_headers");
    assert_eq!(headers.len(), 1, "{}", report["findings"]);
    let message = headers[0]["message"].as_str().unwrap();
    assert!(
        message.contains(&format!(
            "found no cudaProfiler.h in {}",
            cu13_root.display()
        )),
        "{message}"
    );
    assert!(headers[0]["fix"]
        .as_str()
        .unwrap()
        .contains("pip install nvidia-cuda-profiler-api"));
    assert!(
        findings_of(&report, "no_compiler").is_empty(),
        "{}",
        report["findings"]
    );
}

#[test]
fn a_toolkit_whose_headers_are_of_another_cuda_than_its_nvcc_is_a_mismatch() {
    // CUDA 13.0's real nvcc beside CUDA 12.9's real headers, as a hand-assembled CUDA_HOME.
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir(home.path().join("bin")).unwrap();
    std::os::unix::fs::symlink(
        cu13().join("nvidia/cu13/bin/nvcc"),
        home.path().join("bin/nvcc"),
    )
    .unwrap();
    std::os::unix::fs::symlink(
        cu12().join("nvidia/cuda_runtime/include"),
        home.path().join("include"),
    )
    .unwrap();
    let (_, report) = doctor(
        &[fixture(TOOLKIT)],
        &[("CUDA_HOME", home.path().display().to_string())],
        &[],
    );
    let mismatch = findings_of(&report, "headers_mismatch");
    assert_eq!(mismatch.len(), 1, "{}", report["findings"]);
    let message = mismatch[0]["message"].as_str().unwrap();
    assert!(
        message.contains("cuda.h is CUDA 12.9 while nvcc is CUDA 13.0"),
        "{message}"
    );
    // The same CUDA_HOME with the headers of nvcc's own CUDA is no mismatch.
    std::fs::remove_file(home.path().join("include")).unwrap();
    std::os::unix::fs::symlink(
        cu13().join("nvidia/cu13/include"),
        home.path().join("include"),
    )
    .unwrap();
    let (_, report) = doctor(
        &[fixture(TOOLKIT)],
        &[("CUDA_HOME", home.path().display().to_string())],
        &[],
    );
    assert!(
        findings_of(&report, "headers_mismatch").is_empty(),
        "{}",
        report["findings"]
    );
}

#[test]
fn a_framework_built_for_a_cuda_the_driver_cannot_run_is_named() {
    let jax_cu13 = build_fixtures().join("venv-jax-cu13");
    let torch = build_fixtures().join("venv-torch");
    let driver = fixture(common::DRIVER_AMD64);
    let env = [("LD_LIBRARY_PATH", driver.display().to_string())];
    let (code, report) = doctor(&[jax_cu13, torch], &env, &["--no-load"]);
    assert_eq!(code, 1);
    let unsupported = findings_of(&report, "framework_cuda_unsupported");
    // jax-cuda13-plugin on driver 535 (CUDA 12.2); torch for 12.8 and CuPy for 12 run on it
    // through minor-version compatibility.
    assert_eq!(unsupported.len(), 1, "{}", report["findings"]);
    let message = unsupported[0]["message"].as_str().unwrap();
    assert!(message.starts_with("jax-cuda13-plugin 0.7.2"), "{message}");
    assert!(
        message.contains("built for CUDA 13; the driver 535.261.03 supports CUDA 12.2"),
        "{message}"
    );
    assert!(unsupported[0]["fix"]
        .as_str()
        .unwrap()
        .contains("580 or newer"));
}

#[test]
fn markdown_has_a_row_per_toolkit_saying_whether_it_can_compile() {
    let home = tempfile::tempdir().expect("HOME");
    let output = isolated_stackbench(home.path())
        .args([
            "doctor",
            "--no-system",
            "--no-load",
            "--format",
            "markdown",
            "--root",
        ])
        .arg(cu13())
        .arg("--root")
        .arg(cu12())
        .output()
        .expect("run doctor");
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("## Building CUDA code"), "{text}");
    let row = |root: &Path| {
        text.lines()
            .find(|l| l.starts_with(&format!("| `{}` |", root.display())))
            .unwrap_or_else(|| panic!("no row for {}: {text}", root.display()))
            .to_owned()
    };
    assert!(
        row(&cu13()).contains("can compile: looks complete, not compiled (nvcc 13.0"),
        "{text}"
    );
    assert!(
        row(&cu12()).contains("can compile: no (no nvcc (ptxas only))"),
        "{text}"
    );
}

/// `doctor --no-system --root ROOT` in the terminal's words, with `extra`.
fn doctor_text(root: &Path, extra: &[&str]) -> (i32, String) {
    let home = tempfile::tempdir().expect("HOME");
    let output = isolated_stackbench(home.path())
        .args(["doctor", "--no-system", "--color", "never", "--root"])
        .arg(root)
        .args(extra)
        .output()
        .expect("run doctor");
    (
        output.status.code().expect("exit code"),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

/// The CUDA 13.0 wheels with the nvvm of their release: plain doctor, which only reads files,
/// says they look complete and were not compiled; `--build` compiles a probe (a kernel,
/// `cuda.h`, a driver call) with their nvcc, and only then says "can compile: yes". Nothing is
/// an error: doctor exits 0 on this host without a GPU. Mutation: `probe::run` reporting
/// `compiled: true` without running nvcc fails the three tests after this one.
#[test]
fn the_cuda_13_wheels_with_their_nvvm_compile_a_probe_and_only_then_say_yes() {
    let (code, text) = doctor_text(&cu13(), &[]);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("can compile: looks complete, not compiled (nvcc 13.0"),
        "{text}"
    );
    let (code, report) = doctor(&[cu13()], &[], &["--build"]);
    assert_eq!(code, 0, "{}", report["findings"]);
    let probe = &toolkit(&report, &cu13())["probe"];
    assert_eq!(probe["compiled"], true, "{probe}");
    assert!(toolkit(&report, &cu13())["cicc"]
        .as_str()
        .is_some_and(|c| c.ends_with("nvvm/bin/cicc")));
    // The link needs a libcuda.so: the host's driver's development link where there is one.
    match probe["linked"].as_bool() {
        Some(true) => assert!(probe.get("failure").is_none(), "{probe}"),
        _ => assert!(
            probe["failure"]["line"]
                .as_str()
                .unwrap_or_default()
                .contains("-lcuda"),
            "{probe}"
        ),
    }
    for cause in ["no_nvvm", "nvvm_mismatch", "build_probe_failed"] {
        assert!(
            findings_of(&report, cause).is_empty(),
            "{}",
            report["findings"]
        );
    }
    let (_, text) = doctor_text(&cu13(), &["--build"]);
    assert!(
        text.contains("can compile: yes (a probe compiled in "),
        "{text}"
    );
}

/// A `g++` (and `gcc`, `c++`) anyone may rewrite, first on PATH: the trust rule refuses it, and
/// `doctor --build` must then never run it by any route, not as the compiler asked for its
/// version and not through nvcc, which without `-ccbin` runs the first `gcc` on PATH (as root,
/// before), nor any program of that PATH through nvcc (g++ runs `as` by name). The probe says it
/// was not run and why. Mutations: `BuildFacts::probe` calling nvcc without `-ccbin` when no compiler was
/// accepted, or the steps keeping the caller's PATH, write the witness.
#[test]
fn a_host_compiler_the_rule_refuses_is_never_run_not_even_through_nvcc() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let evil = dir.path().join("evil");
    std::fs::create_dir(&evil).unwrap();
    let witness = dir.path().join("witness");
    for name in ["g++", "gcc", "c++", "as", "ld"] {
        let path = evil.join(name);
        std::fs::write(
            &path,
            format!(
                "#!/bin/sh\nid -u >> '{}'\nexec /usr/bin/{name} \"$@\"\n",
                witness.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    std::fs::set_permissions(&evil, std::fs::Permissions::from_mode(0o777)).unwrap();
    let path = format!("{}:/usr/bin:/bin", evil.display());
    let (_, report) = doctor(&[cu13()], &[("PATH", path)], &["--build"]);
    let witnessed = std::fs::read_to_string(&witness).unwrap_or_default();
    assert!(
        witnessed.is_empty(),
        "the refused compiler ran, as uid {witnessed}"
    );
    assert!(
        report["build"]["host_compiler_missing"]
            .as_str()
            .is_some_and(|why| why.contains("every user")),
        "{}",
        report["build"]
    );
    let probe = &toolkit(&report, &cu13())["probe"];
    assert_eq!(probe["compiled"], false, "{probe}");
    assert!(
        probe["failure"]["status"]
            .as_str()
            .is_some_and(|s| s.starts_with("not run: no host compiler to give nvcc")),
        "{probe}"
    );
    assert!(
        findings_of(&report, "build_probe_failed").is_empty(),
        "the missing compiler is the finding, not the probe: {}",
        report["findings"]
    );
    // With the system's g++ named, the probe compiles, and the assembler g++ runs by name is
    // the system's: the steps' PATH holds the judged directories only.
    let (_, report) = doctor(
        &[cu13()],
        &[
            ("PATH", format!("{}:/usr/bin:/bin", evil.display())),
            ("NVCC_CCBIN", "/usr/bin/g++".into()),
        ],
        &["--build"],
    );
    let probe = &toolkit(&report, &cu13())["probe"];
    assert_eq!(probe["compiled"], true, "{probe}");
    let witnessed = std::fs::read_to_string(&witness).unwrap_or_default();
    assert!(
        witnessed.is_empty(),
        "a program from the unjudged PATH ran, as uid {witnessed}"
    );
}

/// nvcc 13.0.88 with nvidia-nvvm 13.5.37 (what an unpinned install takes): the files already
/// show it cannot compile, and the fix pins nvvm to nvcc's release; `--build` shows ptxas
/// rejecting cicc's PTX.
#[test]
fn an_nvvm_newer_than_nvcc_cannot_compile_and_the_fix_pins_it() {
    let (code, report) = doctor(&[cu13_with_newer_nvvm()], &[], &[]);
    assert_eq!(code, 0, "warnings only: {}", report["findings"]);
    let mismatch = findings_of(&report, "nvvm_mismatch");
    assert_eq!(mismatch.len(), 1, "{}", report["findings"]);
    let message = mismatch[0]["message"].as_str().unwrap();
    assert!(
        message.contains("nvidia-nvvm 13.5.37 is newer than nvcc 13.0"),
        "{message}"
    );
    assert!(
        mismatch[0]["fix"]
            .as_str()
            .unwrap()
            .starts_with("pip install \"nvidia-nvvm==13.0.*\""),
        "{}",
        mismatch[0]
    );
    let (_, text) = doctor_text(&cu13_with_newer_nvvm(), &[]);
    assert!(
        text.contains("can compile: no (nvidia-nvvm 13.5.37 is newer"),
        "{text}"
    );
    let (_, report) = doctor(&[cu13_with_newer_nvvm()], &[], &["--build"]);
    let probe = &toolkit(&report, &cu13_with_newer_nvvm())["probe"];
    assert_eq!(probe["compiled"], false, "{probe}");
    assert_eq!(probe["failure"]["step"], "compile");
    assert_eq!(probe["failure"]["tool"], "ptxas", "{probe}");
    assert!(
        probe["failure"]["line"]
            .as_str()
            .unwrap_or_default()
            .contains("Unsupported .version 9.5; current version is '9.0'"),
        "{probe}"
    );
    let evidence = mismatch_evidence(&report);
    assert!(evidence.contains("probe compile: ptxas"), "{evidence}");
}

fn mismatch_evidence(report: &Value) -> String {
    findings_of(report, "nvvm_mismatch")
        .first()
        .map(|f| f["evidence"].to_string())
        .unwrap_or_default()
}

/// nvcc without nvidia-nvvm (`pip install --no-deps`, as images that copy wheels do): plain
/// doctor already says it cannot compile, naming cicc and nvvm, and `--build` shows the shell
/// failing to find cicc.
#[test]
fn without_nvvm_plain_doctor_says_it_cannot_compile_and_names_cicc() {
    let root = cu13_without_nvvm();
    let (_, report) = doctor(std::slice::from_ref(&root), &[], &[]);
    let missing = findings_of(&report, "no_nvvm");
    assert_eq!(missing.len(), 1, "{}", report["findings"]);
    assert!(
        missing[0]["message"]
            .as_str()
            .unwrap()
            .contains("has no cicc (nvvm/bin/cicc)"),
        "{}",
        missing[0]
    );
    assert!(
        missing[0]["fix"]
            .as_str()
            .unwrap()
            .contains("nvidia-nvvm==13.0.*"),
        "{}",
        missing[0]
    );
    let (_, text) = doctor_text(&root, &[]);
    assert!(
        text.contains("can compile: no (no nvvm/bin/cicc beside nvcc"),
        "{text}"
    );
    let (_, report) = doctor(std::slice::from_ref(&root), &[], &["--build"]);
    let probe = &toolkit(&report, &root)["probe"];
    assert_eq!(probe["compiled"], false, "{probe}");
    assert_eq!(probe["failure"]["tool"], "cicc", "{probe}");
    assert!(
        probe["failure"]["line"]
            .as_str()
            .unwrap_or_default()
            .ends_with("cicc: not found"),
        "{probe}"
    );
}

/// The working wheels with `cuda_runtime.h` taken away (a tree of hard links): the files look
/// complete (`cuda.h` is there), and only the probe shows the compile failing, naming the
/// header and the wheel that ships it.
#[test]
fn a_header_missing_is_found_by_the_probe_and_named() {
    let dir = tempfile::tempdir().unwrap();
    let site = dir.path().join(SITE);
    link_tree(&cu13(), &site);
    std::fs::remove_file(site.join("nvidia/cu13/include/cuda_runtime.h")).unwrap();
    let (_, report) = doctor(std::slice::from_ref(&site), &[], &["--build"]);
    let failed = findings_of(&report, "build_probe_failed");
    assert_eq!(failed.len(), 1, "{}", report["findings"]);
    let message = failed[0]["message"].as_str().unwrap();
    assert!(
        message.contains("could not compile a probe: compile: host compiler")
            && message.contains("cuda_runtime.h: No such file or directory"),
        "{message}"
    );
    assert!(
        failed[0]["fix"]
            .as_str()
            .unwrap()
            .contains("pip install nvidia-cuda-runtime"),
        "{}",
        failed[0]
    );
}

/// `to` made a tree of hard links to the files of `from` (copies where the kernel refuses).
fn link_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let (source, target) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type().unwrap();
        if kind.is_dir() {
            link_tree(&source, &target);
        } else if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&source).unwrap(), &target).unwrap();
        } else if std::fs::hard_link(&source, &target).is_err() {
            std::fs::copy(&source, &target).unwrap();
        }
    }
}

/// A host with no toolkit at all (an empty image read with `--sysroot`) says in one line that it
/// cannot build CUDA code, and what to install.
#[test]
fn a_host_without_nvcc_says_it_cannot_build_and_what_to_install() {
    let image = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let output = isolated_stackbench(home.path())
        .args(["doctor", "--color", "never", "--sysroot"])
        .arg(image.path())
        .output()
        .expect("run doctor");
    let text = String::from_utf8_lossy(&output.stdout);
    let line = text
        .lines()
        .find(|l| l.starts_with("building CUDA code: "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains("this host cannot: it has no nvcc"), "{text}");
    assert!(text.contains("nvidia-nvvm==13.0.88"), "{text}");
}
