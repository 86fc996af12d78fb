//! The simulated cuRAND 10.4 (`libcurand.so.10`, CUDA 13.0's, version 10.4.0.35): the default
//! XORWOW and Philox4x32-10 pseudo-random generators, each computed by its own algorithm
//! (Philox checked against Random123's known answers; values are not bit-identical to NVIDIA's
//! host API, which stackbench does not check), seeded, offset and put on a stream as cuRAND's
//! are; `curandGenerateUniform` gives floats in (0, 1] as cuRAND documents. The generator types
//! it does not compute (MRG32k3a, MTGP32, MT19937, the quasi-random ones) are refused by name
//! with `CURAND_STATUS_TYPE_ERROR`, never replaced by another.

pub mod generator;
pub mod philox;
pub mod xorwow;

/// A 32-bit word as a float in (0, 1], as cuRAND's `_curand_uniform` makes it:
/// `x 2^-32 + 2^-33` in single precision (1 where rounding reaches it).
pub fn uniform(word: u32) -> f32 {
    const SCALE: f32 = 2.328_306_4e-10; // 2^-32
    word as f32 * SCALE + SCALE / 2.0
}
