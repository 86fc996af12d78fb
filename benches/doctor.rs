//! `doctor` over all the fixture toolkits, live loading included (target: under 3 s on this
//! 2-core machine), and the static analysis alone (`--no-load`).

#[path = "../tests/common/mod.rs"]
mod common;

use common::toolkits;
use criterion::{criterion_group, criterion_main, Criterion};
use stackbench::discover::{Host, Options};
use stackbench::doctor::{doctor, DoctorOptions};
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
        worker: common::stackbench_bin(),
        windows: Default::default(),
        verify_hashes: false,
        program: None,
    };
    let (live, offline) = (options(true), options(false));
    let mut group = c.benchmark_group("doctor");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(30));
    group.bench_function("all fixture toolkits, loading every library", |b| {
        b.iter(|| doctor(&live, &Host::default()))
    });
    group.bench_function("all fixture toolkits, --no-load", |b| {
        b.iter(|| doctor(&offline, &Host::default()))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
