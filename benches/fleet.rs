//! The history store's cost on issue 52's generated fleet (1,000 nodes × 90 nights, made from
//! the committed H100 run; tests/common/fleet.rs): ingest of one night's 1,000 runs into a new
//! store (runs per second), reading the 90 nights' figures back, the fleet verdict over them
//! (`compare --fleet driver=570.* driver=580.*`), the baseline of driver 570's nodes (`baseline
//! --select driver=570.*`) and the 90-night report (`report --store`, as HTML). The targets: the
//! verdict and the report each under 10 s on a 2-core machine.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use stackbench::compare::load::Run;
use stackbench::fleet::{self, FleetOptions};
use stackbench::store::{Columns, Store};
use std::time::Duration;

#[allow(dead_code)]
#[path = "../tests/common/fleet.rs"]
mod generated;

use generated::Spec;

fn store(c: &mut Criterion) {
    let spec = Spec::issue();
    let base = generated::base(spec.samples);
    let offsets = generated::offsets(&spec);
    let night: Vec<Run> = (0..spec.nodes)
        .map(|n| Run::Bench(generated::run(&spec, &base, &offsets, n, 0)))
        .collect();
    let mut group = c.benchmark_group("store");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(10));
    group.throughput(Throughput::Elements(spec.nodes as u64));
    group.bench_function("ingest one night of 1000 runs", |b| {
        b.iter_batched(
            || tempfile::tempdir().expect("a directory"),
            |dir| stackbench::store::ingest::add(&Store::at(dir.path()), &night).expect("ingest"),
            BatchSize::PerIteration,
        )
    });
    group.finish();

    let dir = tempfile::tempdir().expect("a directory");
    let fleet_store = Store::at(dir.path());
    generated::generate(&spec, &fleet_store);
    let mut group = c.benchmark_group("fleet of 1000 nodes x 90 nights");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(20));
    group.bench_function("read the figures", |b| {
        b.iter(|| fleet_store.read(Columns::Figures).expect("read"))
    });
    let options = FleetOptions {
        store: dir.path().to_path_buf(),
        old: "driver=570.*".parse().expect("a selector"),
        new: "driver=580.*".parse().expect("a selector"),
        threshold: None,
    };
    group.bench_function("compare --fleet", |b| {
        b.iter(|| fleet::compare(&options).expect("the verdict"))
    });
    let selector = "driver=570.*".parse().expect("a selector");
    group.bench_function("baseline --select driver=570.*", |b| {
        b.iter(|| {
            stackbench::baseline::derive(dir.path(), Some(&selector), None).expect("a baseline")
        })
    });
    group.bench_function("report --store (HTML)", |b| {
        b.iter(|| {
            let history = fleet::nights::history(&fleet_store, None).expect("the nights");
            stackbench::report::history(stackbench::report::format::PageFormat::Html, &history)
                .expect("the page")
        })
    });
    group.finish();
}

criterion_group!(benches, store);
criterion_main!(benches);
