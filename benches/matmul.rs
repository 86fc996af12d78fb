//! `matmul/<combination>/<precision>/<size>`: square cuBLAS GEMMs, SGEMM (f32),
//! `cublasGemmEx` in TF32, FP16 and BF16 with FP32 accumulation, and FP8 (E4M3 inputs with
//! scales, BF16 output) through `cublasLtMatmul` where the GPU has FP8 (compute capability 8.9
//! and up; elsewhere it is not registered, with the reason); and
//! `matmul/<combination>/tiled_f32/<size>`: the NVRTC-compiled tiled kernel `check` verifies;
//! sizes 1024 to 8192, random inputs (never zeros), GPU time from CUDA events, criterion's
//! throughput in elements is 2·N³ floating-point operations. Each configuration's output is
//! verified against the CPU once before it is timed. Registered on a host whose GPU came up,
//! and on the simulated GPU where `ci/sim` laid it out (tiled sizes up to 1024 there).
//! Target: cuBLAS within 3% of `torch.matmul` (ci/torch-matmul.py, ci/torch-compare.py).

mod support;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use stackbench::bench::protocol::{Implementation, Workload};
use stackbench::tolerance::Precision;

const SIZES: [u64; 4] = [1024, 2048, 4096, 8192];

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("matmul");
    support::gpu_times(&mut group);
    let configurations = [
        Precision::F32,
        Precision::Tf32,
        Precision::F16,
        Precision::Bf16,
        Precision::Fp8,
    ]
    .map(|p| (Implementation::Cublas, p, p.id().to_owned()))
    .into_iter()
    .chain([(
        Implementation::Nvrtc,
        Precision::F32,
        "tiled_f32".to_owned(),
    )]);
    let configurations: Vec<_> = configurations.collect();
    for mut target in support::gpu_targets("matmul") {
        for (implementation, precision, label) in &configurations {
            for size in support::sizes(&SIZES, 8192) {
                let workload = Workload::Matmul {
                    implementation: *implementation,
                    precision: *precision,
                    size,
                };
                let id = format!("{}/{label}/{size}", target.name);
                if let Err(why) = support::prepare(&mut target.client, &workload) {
                    eprintln!("matmul/{id}: not registered: {why}");
                    continue;
                }
                group.throughput(Throughput::Elements(2 * size * size * size));
                group.bench_function(&id, |b| {
                    b.iter_custom(|iters| support::time(&mut target.client, &workload, iters))
                });
            }
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
