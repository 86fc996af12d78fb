//! How fast the interpreter runs the launches `bench` makes: the vector add over 64 Mi
//! elements (65535 blocks of 256 threads and a grid-stride loop) and the 200 x 136 x 152
//! matmul. It prints the times and asserts only the results: timing asserts fail on a busy
//! CI runner. Run with
//! `cargo test --release -p simgpu --test ptx_speed -- --ignored --nocapture`.

mod ptx_common;

use std::time::Instant;

use ptx_common::*;
use stackbench_simgpu::ptx::{self, Launch};

#[test]
#[ignore = "a measurement: run it with --ignored --nocapture"]
fn vector_add_64_mi_elements() {
    let n: usize = 64 << 20;
    let a = values(n, 5);
    let b = values(n, 6);
    let mut mem = Mem::new();
    let pa = mem.alloc_f32(&a);
    let pb = mem.alloc_f32(&b);
    let pc = mem.alloc_f32(&vec![0.0; n]);
    let params = [
        u64_param(pa),
        u64_param(pb),
        u64_param(pc),
        u64_param(n as u64),
    ];
    // As stackbench launches it: 65535 blocks at most, the grid-stride loop does the rest.
    let launch = Launch {
        grid: [65_535, 1, 1],
        block: [256, 1, 1],
        shared_bytes: 0,
        params: &params,
    };
    for (name, module) in modules("vector_add") {
        let kernel = module.kernel("vector_add").unwrap();
        let start = Instant::now();
        let counts = ptx::run(kernel, &launch, &mem).unwrap();
        let took = start.elapsed();
        println!(
            "{name}: vector_add over {n} elements in {:.2} s ({} thread instructions, {:.2} ns \
             each)",
            took.as_secs_f64(),
            counts.instructions,
            took.as_secs_f64() * 1e9 / counts.instructions as f64
        );
        let c = mem.f32s(pc);
        assert!(c
            .iter()
            .zip(a.iter().zip(&b))
            .all(|(c, (a, b))| c.to_bits() == (a + b).to_bits()));
    }
}

#[test]
#[ignore = "a measurement: run it with --ignored --nocapture"]
fn matmul_200_136_152() {
    let (m, n, k) = (200, 136, 152);
    let a = values(m * k, 7);
    let b = values(k * n, 8);
    for (name, module) in modules("matmul_tiled") {
        let kernel = module.kernel("matmul_tiled").unwrap();
        let start = Instant::now();
        let (_, counts) = matmul(kernel, &a, &b, m, n, k);
        let took = start.elapsed();
        let counts = counts.unwrap();
        println!(
            "{name}: matmul {m}x{n}x{k} in {:.3} s ({} thread instructions)",
            took.as_secs_f64(),
            counts.instructions
        );
    }
}
