//! Scan speed on the real fixture toolkits (target: a whole scan under 1 s on 2 cores), and
//! listing the GPU architectures of the largest fixture library against NVIDIA's
//! `cuobjdump --list-elf` on the same file (target: faster, by reading headers only).

#[path = "../tests/common/mod.rs"]
mod common;

use common::toolkits;
use criterion::{criterion_group, criterion_main, Criterion};
use stackbench::discover::{Host, Options};
use stackbench::elf::fatbin;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// The largest library file among the fixtures.
fn largest_library(dir: &Path) -> PathBuf {
    let options = Options {
        roots: vec![dir.to_path_buf()],
        system: false,
    };
    let report = stackbench::scan::scan(&options, &Host::default());
    report
        .installations
        .iter()
        .flat_map(|i| &i.libraries)
        .max_by_key(|l| l.size)
        .map(|l| l.real_path.clone())
        .expect("the fixtures hold libraries")
}

fn scan(c: &mut Criterion) {
    let dir = toolkits();
    let options = Options {
        roots: vec![dir],
        system: false,
    };
    let mut group = c.benchmark_group("scan");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(15));
    group.bench_function("all fixture toolkits", |b| {
        b.iter(|| stackbench::scan::scan(&options, &Host::default()))
    });
    group.finish();
}

fn architectures(c: &mut Criterion) {
    let dir = toolkits();
    let file = largest_library(&dir);
    let cuobjdump = dir.join("tools/cuobjdump");
    let mut group = c.benchmark_group("architectures of the largest fixture library");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(20));
    group.bench_function("stackbench fatbin headers", |b| {
        b.iter(|| fatbin::list_architectures_of_file(&file).expect("the fixture library reads"))
    });
    group.bench_function("cuobjdump --list-elf", |b| {
        b.iter(|| {
            let status = Command::new(&cuobjdump)
                .arg("--list-elf")
                .arg(&file)
                .stdout(Stdio::null())
                .status()
                .expect("cuobjdump runs");
            assert!(status.success());
        })
    });
    group.finish();
}

criterion_group!(benches, scan, architectures);
criterion_main!(benches);
