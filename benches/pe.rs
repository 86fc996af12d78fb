//! Reading a Windows DLL's facts against reading its Linux twin's (the same NVIDIA release built
//! for both; target: no slower per byte), for every fixture DLL that has such a twin. Each file
//! is timed as bytes per second of the file, so files of different sizes compare.
//!
//! `cudart32_110.dll` has no twin: NVIDIA ships no 32-bit Linux runtime for CUDA 11.8.
//!
//! What a file costs to read depends on how the kernel holds it in the page cache (mapping a
//! page held in a small folio costs more than one in a large folio), and that depends on how
//! the file was read before: each file's cached pages are dropped and it is read once, untimed,
//! by the reader being timed, which then reads it from the cache its own first read made, as a
//! second `scan` of the same tree does.

// Tests read the files they make and the checkout's own: std's readers are theirs (clippy.toml).
#![allow(clippy::disallowed_methods)]

#[path = "../tests/common/mod.rs"]
mod common;

use common::{fixture, windows_toolkits, VENV_CU11, VENV_CU12, WIN_VENV, WIN_VENV_BROKEN};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A DLL and its Linux twin, named by library and release.
struct Twin {
    name: String,
    dll: PathBuf,
    so: PathBuf,
}

/// The CUDA 11.8 wheels' twins: name and release, the wheel's directory, the DLL, the `.so`.
#[rustfmt::skip]
const CU11: [[&str; 4]; 9] = [
    ["cudart_11.8.89",         "cuda_runtime", "cudart64_110.dll",     "libcudart.so.11.0"],
    ["cupti_11.8.87",          "cuda_cupti",   "cupti64_2022.3.0.dll", "libcupti.so.11.8"],
    ["nvperf_host_11.8.87",    "cuda_cupti",   "nvperf_host.dll",      "libnvperf_host.so"],
    ["nvperf_target_11.8.87",  "cuda_cupti",   "nvperf_target.dll",    "libnvperf_target.so"],
    ["checkpoint_11.8.87",     "cuda_cupti",   "checkpoint.dll",       "libcheckpoint.so"],
    ["pcsamplingutil_11.8.87", "cuda_cupti",   "pcsamplingutil.dll",   "libpcsamplingutil.so"],
    ["cublas_11.11.3.6",       "cublas",       "cublas64_11.dll",      "libcublas.so.11"],
    ["cublasLt_11.11.3.6",     "cublas",       "cublasLt64_11.dll",    "libcublasLt.so.11"],
    ["nvblas_11.11.3.6",       "cublas",       "nvblas64_11.dll",      "libnvblas.so.11"],
];

/// CUDA 12's cuBLAS 12.9.1.4 (in the broken venv) against the CUDA 12 venv's.
#[rustfmt::skip]
const CU12: [[&str; 4]; 3] = [
    ["cublas_12.9.1.4",   "cublas", "cublas64_12.dll",   "libcublas.so.12"],
    ["cublasLt_12.9.1.4", "cublas", "cublasLt64_12.dll", "libcublasLt.so.12"],
    ["nvblas_12.9.1.4",   "cublas", "nvblas64_12.dll",   "libnvblas.so.12"],
];

/// cuDNN 8.9.4.25's libraries, against its Linux build in `linux-twin/`.
const CUDNN: [&str; 7] = [
    "",
    "_adv_infer",
    "_adv_train",
    "_cnn_infer",
    "_cnn_train",
    "_ops_infer",
    "_ops_train",
];

/// Every twin.
fn twins() -> Vec<Twin> {
    let windows = windows_toolkits();
    let wheels = |venv: &str, linux_venv: &str, table: &[[&str; 4]]| {
        table
            .iter()
            .map(|[name, dir, dll, so]| Twin {
                name: (*name).to_owned(),
                dll: windows.join(format!("{venv}/nvidia/{dir}/bin/{dll}")),
                so: fixture(&format!("{linux_venv}/nvidia/{dir}/lib/{so}")),
            })
            .collect::<Vec<_>>()
    };
    let mut all = wheels(WIN_VENV, VENV_CU11, &CU11);
    all.extend(wheels(WIN_VENV_BROKEN, VENV_CU12, &CU12));
    all.extend(CUDNN.map(|part| Twin {
        name: format!("cudnn{part}_8.9.4.25"),
        dll: windows.join(format!("{WIN_VENV}/nvidia/cudnn/bin/cudnn{part}64_8.dll")),
        so: windows.join(format!("linux-twin/libcudnn{part}.so.8")),
    }));
    all
}

/// Drops the file's cached pages, then reads it with `read` (see the module's notes).
fn prime(path: &Path, read: Reader) {
    use std::os::unix::io::AsRawFd;
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    // SAFETY: advice on an open descriptor; it only drops clean cached pages.
    unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    read(path);
}

fn read(c: &mut Criterion) {
    // As criterion decides: `cargo bench` times, `cargo test` runs each benchmark once, for
    // which the page cache is left as it is.
    let args: Vec<String> = std::env::args().collect();
    let timed = args.iter().any(|a| a == "--bench") && !args.iter().any(|a| a == "--test");
    let mut group = c.benchmark_group("read");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2));
    for Twin { name, dll, so } in twins() {
        for (format, path, read) in [("pe", dll, read_pe as Reader), ("elf", so, read_elf)] {
            group.throughput(Throughput::Bytes(size(&path)));
            // Criterion calls this once per sample: the file is primed before the first one,
            // and only if this benchmark is selected.
            let mut primed = !timed;
            group.bench_function(format!("{name}/{format}"), |b| {
                if !primed {
                    prime(&path, read);
                    primed = true;
                }
                b.iter(|| read(&path))
            });
        }
    }
    group.finish();
}

/// Reads one file's facts, as `scan` does.
type Reader = fn(&Path);

fn read_pe(path: &Path) {
    stackbench::pe::read_path(path).expect("a DLL");
}

fn read_elf(path: &Path) {
    stackbench::elf::read_path(path).expect("a shared object");
}

fn size(path: &Path) -> u64 {
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .len()
}

criterion_group!(benches, read);
criterion_main!(benches);
