//! CPU-side benchmarks that compare toolkits honestly without a GPU, on every combination (the
//! fixture toolkits' when built, and the host's):
//!
//! - `nvrtc_compile/<combination>/<kernel>/sm_90`: NVRTC compiling the vector add and the tiled
//!   matmul for sm_90 (the device's architecture where there is one), in the combination's
//!   persistent worker;
//! - `load/<combination>`: a fresh worker opening every library of the combination and asking
//!   its version, the sum of those times (each iteration is a new process: a library loads once
//!   per process).

mod support;

use criterion::{criterion_group, criterion_main, Criterion};
use stackbench::bench::protocol::Workload;
use stackbench::kernels::Kernel;
use std::time::Duration;

fn bench(c: &mut Criterion) {
    let mut compile = c.benchmark_group("nvrtc_compile");
    compile
        .sample_size(10)
        .measurement_time(Duration::from_secs(2));
    let targets = support::cpu_targets("toolkits");
    let mut loads = Vec::new();
    for mut target in targets {
        let arch = target.arch.clone();
        for kernel in Kernel::ALL {
            let workload = Workload::Compile {
                kernel,
                arch: arch.clone(),
            };
            let id = format!("{}/{}/{arch}", target.name, kernel.function());
            if let Err(why) = support::prepare(&mut target.client, &workload) {
                eprintln!("nvrtc_compile/{id}: not registered: {why}");
                continue;
            }
            compile.bench_function(&id, |b| {
                b.iter_custom(|iters| support::time(&mut target.client, &workload, iters))
            });
        }
        loads.push(target);
    }
    compile.finish();

    let mut load = c.benchmark_group("load");
    load.sample_size(10)
        .measurement_time(Duration::from_secs(5));
    for target in &support::loadable("load", loads) {
        load.bench_function(&target.name, |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| {
                        support::load_once(target)
                            .unwrap_or_else(|why| panic!("load/{}: {why}", target.name))
                    })
                    .sum()
            })
        });
    }
    load.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
