//! Reading a Windows DLL's facts against reading its Linux twin's (the same NVIDIA library
//! built for both; target: no slower per byte). Each pair is timed as bytes per second of the
//! file, so files of different sizes compare.

#[path = "../tests/common/mod.rs"]
mod common;

use common::{fixture, windows_toolkits, VENV_CU11, WIN_VENV};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::path::PathBuf;
use std::time::Duration;

/// Twins: the name, the Windows DLL and the Linux shared object.
fn twins() -> [(&'static str, PathBuf, PathBuf); 3] {
    let windows = windows_toolkits().join(WIN_VENV).join("nvidia");
    let linux = |relative: &str| fixture(&format!("{VENV_CU11}/nvidia/{relative}"));
    [
        (
            "cudart_11.8.89",
            windows.join("cuda_runtime/bin/cudart64_110.dll"),
            linux("cuda_runtime/lib/libcudart.so.11.0"),
        ),
        (
            "cublasLt_11.11.3.6",
            windows.join("cublas/bin/cublasLt64_11.dll"),
            linux("cublas/lib/libcublasLt.so.11"),
        ),
        (
            "cudnn_cnn_infer_8.9.4.25",
            windows.join("cudnn/bin/cudnn_cnn_infer64_8.dll"),
            windows_toolkits().join("linux-twin/libcudnn_cnn_infer.so.8"),
        ),
    ]
}

fn read(c: &mut Criterion) {
    let mut group = c.benchmark_group("read");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(3));
    for (name, dll, so) in twins() {
        let size = |p: &PathBuf| std::fs::metadata(p).expect("fixture").len();
        group.throughput(Throughput::Bytes(size(&dll)));
        group.bench_function(format!("{name}/pe"), |b| {
            b.iter(|| stackbench::pe::read_path(&dll).expect("a DLL"))
        });
        group.throughput(Throughput::Bytes(size(&so)));
        group.bench_function(format!("{name}/elf"), |b| {
            b.iter(|| stackbench::elf::read_path(&so).expect("a shared object"))
        });
    }
    group.finish();
}

criterion_group!(benches, read);
criterion_main!(benches);
