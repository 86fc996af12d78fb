//! `doctor` over all the fixture toolkits, live loading included (target: under 3 s on this
//! 2-core machine), and the static analysis alone (`--no-load`); and what `doctor -- COMMAND`
//! adds to a command's own run time (target: under 0.5 s): a Python program loading the CUDA 12
//! runtime, alone and under the doctor, which scans this host's own places as a user's run would;
//! and `doctor --sysroot` of an unpacked CUDA runtime container image, the whole process with the
//! image's environment (target: under 1 s); and the trust rule's cost (issue 27): the rule alone
//! over every fixture installation, and a full `doctor` of the fixtures with the rule off
//! (`--load-untrusted`) beside the one with it on; and what `--build` adds (issue 42): `doctor`
//! of the CUDA 13.0 compiler wheels with and without compiling and linking the probe; and a
//! shared node's homes (issue 49): `doctor --sysroot` of a host with 5,000 venvs, each with an
//! NVIDIA wheel's metadata and its runtime (a hard link to the fixture's), time per venv and the
//! run's peak memory (printed once: criterion measures time only).

#[path = "../tests/common/mod.rs"]
mod common;

use common::{build_fixtures, fixture, image, real_cudart, stackbench_bin, toolkits, VENV_CU12};
use criterion::{criterion_group, criterion_main, Criterion};
use stackbench::discover::{Host, Options};
use stackbench::doctor::{doctor, DoctorOptions};
use stackbench::trust::Policy;
use std::time::Duration;

fn bench(c: &mut Criterion) {
    let options = |load| DoctorOptions {
        discover: Options {
            roots: vec![toolkits()],
            system: false,
        },
        load,
        timeout: Duration::from_secs(10),
        target: None,
        worker: stackbench_bin(),
        windows: Default::default(),
        verify_hashes: false,
        build: false,
        program: None,
        command: Vec::new(),
        command_timeout: Duration::from_secs(600),
        quiet: true,
        trust: Policy::strict(),
    };
    let (live, offline) = (options(true), options(false));
    let untrusted = DoctorOptions {
        trust: Policy::new(true),
        ..options(true)
    };
    let mut group = c.benchmark_group("doctor");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(30));
    group.bench_function("all fixture toolkits, loading every library", |b| {
        b.iter(|| doctor(&live, &Host::default()))
    });
    group.bench_function(
        "all fixture toolkits, loading every library, --load-untrusted",
        |b| b.iter(|| doctor(&untrusted, &Host::default())),
    );
    group.bench_function("all fixture toolkits, --no-load", |b| {
        b.iter(|| doctor(&offline, &Host::default()))
    });
    let wheels = build_fixtures().join("venv-nvcc-cu13-nvvm/lib/python3.11/site-packages");
    let read_only = DoctorOptions {
        discover: Options {
            roots: vec![wheels],
            system: false,
        },
        ..options(true)
    };
    let compiled = DoctorOptions {
        build: true,
        ..read_only.clone()
    };
    group.bench_function("CUDA 13.0 compiler wheels", |b| {
        b.iter(|| doctor(&read_only, &Host::default()))
    });
    group.bench_function("CUDA 13.0 compiler wheels, --build", |b| {
        b.iter(|| doctor(&compiled, &Host::default()))
    });
    group.finish();
}

fn command(c: &mut Criterion) {
    let runtime = fixture(VENV_CU12).join("nvidia/cuda_runtime/lib/libcudart.so.12");
    let script = format!("import ctypes; ctypes.CDLL('{}')", runtime.display());
    let program = ["python3", "-c", script.as_str()];
    let run = |command: &mut std::process::Command| {
        let status = command
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .expect("run");
        assert!(status.code().is_some());
    };
    let mut group = c.benchmark_group("doctor_command");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(20));
    group.bench_function("python loading the runtime, alone", |b| {
        b.iter(|| run(std::process::Command::new(program[0]).args(&program[1..])))
    });
    group.bench_function("python loading the runtime, under doctor --", |b| {
        b.iter(|| {
            run(std::process::Command::new(stackbench_bin())
                .args(["doctor", "--quiet", "--format", "json", "--"])
                .args(program))
        })
    });
    group.finish();
}

fn sysroot(c: &mut Criterion) {
    let image = image::runtime_image(true);
    let mut group = c.benchmark_group("doctor_sysroot");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(10));
    group.bench_function(
        "CUDA 12.9 runtime image, as docker export unpacks it",
        |b| {
            b.iter(|| {
                let status = std::process::Command::new(stackbench_bin())
                    .env_clear()
                    .envs(image::IMAGE_ENV.iter().copied())
                    .args(["doctor", "--sysroot"])
                    .arg(image.path())
                    .args(["--format", "json"])
                    .stdout(std::process::Stdio::null())
                    .status()
                    .expect("run stackbench");
                assert_eq!(status.code(), Some(0));
            })
        },
    );
    group.finish();
}

/// The trust rule alone: for every installation of the fixtures, its libraries and search
/// path walked and judged as `doctor` judges them before loading (metadata only).
fn trust(c: &mut Criterion) {
    let scan = stackbench::scan::scan(
        &Options {
            roots: vec![toolkits()],
            system: false,
        },
        &Host::default(),
    );
    let installations: Vec<(Vec<std::path::PathBuf>, String)> = scan
        .installations
        .iter()
        .map(|i| {
            let files = i.libraries.iter().map(|l| l.real_path.clone()).collect();
            (files, stackbench::diagnose::search_path(i, None))
        })
        .collect();
    let libraries: usize = installations.iter().map(|(f, _)| f.len()).sum();
    let policy = Policy::strict();
    let mut group = c.benchmark_group("trust");
    group.bench_function(
        format!(
            "every fixture installation ({} installations, {libraries} libraries)",
            installations.len()
        ),
        |b| {
            b.iter(|| {
                for (files, search_path) in &installations {
                    std::hint::black_box(policy.decide(files, &[], search_path));
                }
            })
        },
    );
    group.finish();
}

/// How many venvs the shared node's homes hold.
const VENVS: usize = 5000;

/// A host whose `/home` holds [`VENVS`] venvs, each a wheel's metadata and runtime.
fn many_venvs() -> tempfile::TempDir {
    let root = tempfile::tempdir().expect("a scratch directory");
    let cudart = real_cudart();
    for i in 0..VENVS {
        let site = root
            .path()
            .join(format!("home/u{i}/venv/lib/python3.11/site-packages"));
        let lib = site.join("nvidia/cuda_runtime/lib");
        std::fs::create_dir_all(&lib).expect("a venv");
        std::fs::write(
            root.path().join(format!("home/u{i}/venv/pyvenv.cfg")),
            "home = /usr/bin\n",
        )
        .expect("pyvenv.cfg");
        let dist_info = site.join("nvidia_cuda_runtime_cu12-12.9.79.dist-info");
        std::fs::create_dir_all(&dist_info).expect("a dist-info");
        std::fs::write(
            dist_info.join("METADATA"),
            "Name: nvidia-cuda-runtime-cu12\nVersion: 12.9.79\n",
        )
        .expect("METADATA");
        std::fs::write(
            dist_info.join("RECORD"),
            "nvidia/cuda_runtime/lib/libcudart.so.12,sha256=x,741088\n",
        )
        .expect("RECORD");
        let library = lib.join("libcudart.so.12");
        if std::fs::hard_link(&cudart, &library).is_err() {
            std::os::unix::fs::symlink(&cudart, &library).expect("a runtime");
        }
    }
    root
}

fn homes(c: &mut Criterion) {
    let host = many_venvs();
    let run = || {
        // A node's own environment, not cargo's (whose LD_LIBRARY_PATH adds search directories
        // to every one of the 25,000 missing dependencies a root without libc gives).
        std::process::Command::new(stackbench_bin())
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .args(["doctor", "--format", "json", "--sysroot"])
            .arg(host.path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("run stackbench")
    };
    // Peak memory, as the kernel accounts a finished child, taken through a small python3:
    // a child forked straight from this large process would count this process's own peak.
    let measured = std::process::Command::new("python3")
        .args([
            "-c",
            "import resource, subprocess, sys; \
             subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); \
             print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)",
        ])
        .arg(stackbench_bin())
        .args(["doctor", "--format", "json", "--sysroot"])
        .arg(host.path())
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .output()
        .expect("run python3");
    let kb: u64 = String::from_utf8_lossy(&measured.stdout)
        .trim()
        .parse()
        .expect("python3 printed the peak");
    eprintln!(
        "doctor --sysroot of {VENVS} venvs: peak RSS {} MiB",
        kb / 1024
    );
    let mut group = c.benchmark_group("doctor_homes");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(60));
    group.throughput(criterion::Throughput::Elements(VENVS as u64));
    group.bench_function(format!("{VENVS} venvs under /home, --sysroot"), |b| {
        b.iter(|| {
            let status = run().wait().expect("stackbench ran");
            assert!(status.code().is_some_and(|c| c < 2), "{status}");
        })
    });
    group.finish();
}

criterion_group!(benches, bench, command, sysroot, trust, homes);
criterion_main!(benches);
