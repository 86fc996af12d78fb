//! Property tests: the real kernels against host references over random shapes.

mod ptx_common;

use proptest::prelude::*;
use ptx_common::*;

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn vector_add_is_bit_exact_for_any_size_and_grid(
        n in 1usize..3000,
        blocks in 1u32..12,
        threads in 1u32..=1024,
        which in 0usize..3,
        seed in any::<u64>(),
    ) {
        let modules = modules("vector_add");
        let (name, module) = &modules[which % modules.len()];
        let kernel = module.kernel("vector_add").unwrap();
        let a = values(n, seed);
        let b = values(n, seed ^ 0x55);
        let (c, counts) = vector_add(kernel, &a, &b, blocks, threads);
        let counts = counts.unwrap();
        for i in 0..n {
            prop_assert_eq!(c[i].to_bits(), (a[i] + b[i]).to_bits(), "{} element {}", name, i);
        }
        prop_assert_eq!(counts.global_bytes_stored, 4 * n as u64);
    }

    #[test]
    fn matmul_tiled_is_bit_exact_for_any_shape(
        m in 1usize..40,
        n in 1usize..40,
        k in 0usize..50,
        which in 0usize..3,
        seed in any::<u64>(),
    ) {
        let modules = modules("matmul_tiled");
        let (name, module) = &modules[which % modules.len()];
        let kernel = module.kernel("matmul_tiled").unwrap();
        let a = values(m * k, seed);
        let b = values(k * n, seed ^ 0xaa);
        let (c, counts) = matmul(kernel, &a, &b, m, n, k);
        counts.unwrap();
        // The PTX's order: per tile of 16, per i, one FMA (tiles past k add zeros).
        for row in 0..m {
            for col in 0..n {
                let mut sum = 0f32;
                for kk in 0..k.div_ceil(16) * 16 {
                    let (x, y) = if kk < k { (a[row * k + kk], b[kk * n + col]) } else { (0.0, 0.0) };
                    sum = x.mul_add(y, sum);
                }
                prop_assert_eq!(c[row * n + col].to_bits(), sum.to_bits(), "{} ({}, {})", name, row, col);
            }
        }
    }
}
