//! How fast the PTX interpreter runs the launches `bench` and `check` make on the simulated GPU,
//! per fixture NVRTC's PTX: the vector add over 64 Mi elements (65535 blocks of 256 threads and
//! a grid-stride loop, as stackbench launches it) and `check`'s 200 x 136 x 152 tiled matmul.
//! Target: the 64 Mi vector add under 3 s, so `bench --quick` on the simulator stays a CI step.

#[path = "../tests/ptx_common/mod.rs"]
mod ptx_common;

use criterion::{criterion_group, criterion_main, Criterion};
use ptx_common::{matmul, modules, u64_param, values, Mem};
use stackbench_simgpu::ptx::{self, Launch};
use std::time::Duration;

fn vector_add(c: &mut Criterion) {
    let n: usize = 64 << 20;
    let mut mem = Mem::new();
    let pa = mem.alloc_f32(&values(n, 5));
    let pb = mem.alloc_f32(&values(n, 6));
    let pc = mem.alloc_f32(&vec![0.0; n]);
    let params = [pa, pb, pc, n as u64].map(u64_param);
    let launch = Launch {
        grid: [65_535, 1, 1],
        block: [256, 1, 1],
        shared_bytes: 0,
        params: &params,
    };
    let mut group = c.benchmark_group("interpreter/vector_add_64Mi");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(15));
    for (name, module) in modules("vector_add") {
        let kernel = module.kernel("vector_add").expect("vector_add");
        group.bench_function(&name, |b| {
            b.iter(|| ptx::run(kernel, &launch, &mem).expect("runs"))
        });
    }
    group.finish();
}

fn tiled_matmul(c: &mut Criterion) {
    let (m, n, k) = (200, 136, 152);
    let (a, b) = (values(m * k, 7), values(k * n, 8));
    let mut group = c.benchmark_group("interpreter/matmul_200x136x152");
    group.sample_size(10);
    for (name, module) in modules("matmul_tiled") {
        let kernel = module.kernel("matmul_tiled").expect("matmul_tiled");
        group.bench_function(&name, |bench| {
            bench.iter(|| matmul(kernel, &a, &b, m, n, k).1.expect("runs"))
        });
    }
    group.finish();
}

criterion_group!(benches, vector_add, tiled_matmul);
criterion_main!(benches);
