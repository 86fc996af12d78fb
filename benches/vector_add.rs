//! `vector_add/<combination>/<elements>`: f32 `c = a + b` through the NVRTC-compiled kernel,
//! 1 Mi to 256 Mi elements, GPU time from CUDA events (batch: criterion's iterations back to
//! back), bandwidth counted as 12 bytes per element in decimal GB/s, as `stackbench bench`
//! gives it. Each size's output is verified against the CPU once before it is timed.
//! Registered on a host whose GPU came up, and on the simulated GPU where `ci/sim` laid it out
//! (its figures are the model's).
//! Target: at 64 Mi elements and above, at least 90% of the device-to-device copy bandwidth
//! (`stackbench bench` measures both in one run).

mod support;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use stackbench::bench::protocol::Workload;

const SIZES: [u64; 5] = [1 << 20, 1 << 22, 1 << 24, 1 << 26, 1 << 28];

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("vector_add");
    support::gpu_times(&mut group);
    for mut target in support::gpu_targets("vector_add") {
        for elements in support::sizes(&SIZES, 1 << 26) {
            let workload = Workload::VectorAdd { elements };
            let id = format!("{}/{elements}", target.name);
            if let Err(why) = support::prepare(&mut target.client, &workload) {
                eprintln!("vector_add/{id}: not registered: {why}");
                continue;
            }
            group.throughput(Throughput::BytesDecimal(12 * elements));
            group.bench_function(&id, |b| {
                b.iter_custom(|iters| support::time(&mut target.client, &workload, iters))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
