//! The PTX each fixture NVRTC emits for stackbench's kernels, run by the interpreter and
//! checked against host references: bit-exact where the GPU's rounding is known.

mod ptx_common;

use ptx_common::*;
use stackbench_simgpu::ptx::{Module, Param};

#[test]
fn every_committed_ptx_file_parses() {
    let files = ptx_files();
    assert!(files.len() >= 6, "two kernels from three NVRTCs: {files:?}");
    for (name, text) in files {
        let module = Module::parse(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        let kernel_name = name.split('.').next().unwrap();
        let kernel = module
            .kernel(kernel_name)
            .unwrap_or_else(|| panic!("{name} has {kernel_name}"));
        let pointer = Param { size: 8, align: 8 };
        let int = Param { size: 4, align: 4 };
        match kernel_name {
            "vector_add" => {
                assert_eq!(kernel.params, vec![pointer; 4], "{name}");
                assert_eq!(kernel.shared_bytes, 0, "{name}");
            }
            "matmul_tiled" => {
                assert_eq!(
                    kernel.params,
                    vec![pointer, pointer, pointer, int, int, int],
                    "{name}"
                );
                assert_eq!(kernel.shared_bytes, 2 * 16 * 16 * 4, "{name}");
            }
            // The harness's peer-copy kernel (src, dst, n), as NVVM gave it.
            "stackbench_peer_copy" => assert_eq!(kernel.params, vec![pointer; 3], "{name}"),
            other => panic!("unexpected kernel {other}"),
        }
        assert!(
            module.target.starts_with("sm_"),
            "{name}: {}",
            module.target
        );
        assert!(module.version.0 >= 7, "{name}: {:?}", module.version);
    }
}

#[test]
fn vector_add_is_bit_exact_on_odd_sizes() {
    for (name, module) in modules("vector_add") {
        let kernel = module.kernel("vector_add").unwrap();
        for (n, blocks) in [
            (1, 1),
            (255, 1),
            (256, 1),
            (257, 2),
            (1000, 4),
            (4099, 17),
            // Fewer blocks than the size needs: the grid-stride loop covers the rest.
            (5000, 3),
            (777, 1),
        ] {
            let a = values(n, 1);
            let b = values(n, 2);
            let (c, counts) = vector_add(kernel, &a, &b, blocks, 256);
            let counts = counts.unwrap_or_else(|f| panic!("{name}, n = {n}: {f:?}"));
            for i in 0..n {
                assert_eq!(
                    c[i].to_bits(),
                    (a[i] + b[i]).to_bits(),
                    "{name}, n = {n}, element {i}"
                );
            }
            assert_eq!(counts.global_bytes_loaded, 8 * n as u64, "{name}");
            assert_eq!(counts.global_bytes_stored, 4 * n as u64, "{name}");
            assert_eq!(counts.flops, n as u64, "{name}");
            assert!(counts.instructions > 10 * n as u64, "{name}: {counts:?}");
        }
    }
}

/// `C = A * B` in f32 as the PTX computes it: per tile of 16, per `i`, one FMA into the sum.
fn matmul_f32_fma(a: &[f32], b: &[f32], m: usize, n: usize, k: usize) -> Vec<f32> {
    let mut c = vec![0f32; m * n];
    for row in 0..m {
        for col in 0..n {
            let mut sum = 0f32;
            for t in (0..k).step_by(16) {
                for i in 0..16 {
                    let kk = t + i;
                    let (x, y) = if kk < k {
                        (a[row * k + kk], b[kk * n + col])
                    } else {
                        (0.0, 0.0)
                    };
                    sum = x.mul_add(y, sum);
                }
            }
            c[row * n + col] = sum;
        }
    }
    c
}

fn matmul_f64(a: &[f32], b: &[f32], m: usize, n: usize, k: usize) -> Vec<f64> {
    let mut c = vec![0f64; m * n];
    for row in 0..m {
        for col in 0..n {
            c[row * n + col] = (0..k)
                .map(|i| f64::from(a[row * k + i]) * f64::from(b[i * n + col]))
                .sum();
        }
    }
    c
}

#[test]
fn matmul_tiled_matches_references_on_sizes_not_multiples_of_16() {
    let (m, n, k) = (200, 136, 152);
    let a = values(m * k, 3);
    let b = values(k * n, 4);
    let exact = matmul_f32_fma(&a, &b, m, n, k);
    let wide = matmul_f64(&a, &b, m, n, k);
    for (name, module) in modules("matmul_tiled") {
        let kernel = module.kernel("matmul_tiled").unwrap();
        let (c, counts) = matmul(kernel, &a, &b, m, n, k);
        let counts = counts.unwrap_or_else(|f| panic!("{name}: {f:?}"));
        for i in 0..m * n {
            let err = (f64::from(c[i]) - wide[i]).abs();
            assert!(
                err <= 1e-4 * (1.0 + wide[i].abs()),
                "{name}, element {i}: {} vs {}",
                c[i],
                wide[i]
            );
            assert_eq!(c[i].to_bits(), exact[i].to_bits(), "{name}, element {i}");
        }
        // Every thread of every block runs 16 FMAs a tile, in or out of the matrices.
        let blocks = (m.div_ceil(16) * n.div_ceil(16)) as u64;
        let tiles = k.div_ceil(16) as u64;
        assert_eq!(counts.flops, blocks * 256 * tiles * 16 * 2, "{name}");
        assert_eq!(counts.global_bytes_stored, 4 * (m * n) as u64, "{name}");
        // Each element of A is loaded by every column block, each of B by every row block.
        let loaded = 4 * (m * k * n.div_ceil(16) + k * n * m.div_ceil(16)) as u64;
        assert_eq!(counts.global_bytes_loaded, loaded, "{name}");
    }
}
