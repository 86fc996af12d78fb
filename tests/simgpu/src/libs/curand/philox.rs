//! Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011): a
//! counter-based generator, so value `i` of a stream is a pure function of the key (the seed)
//! and `i`, and a generation can start at any offset. Uniform floats are made as cuRAND's are:
//! `x 2^-32 + 2^-33` in single precision, which lies in (0, 1] (1 where rounding reaches it).

/// Philox's multipliers and Weyl constants.
const M0: u32 = 0xD251_1F53;
const M1: u32 = 0xCD9E_8D57;
const W0: u32 = 0x9E37_79B9;
const W1: u32 = 0xBB67_AE85;

/// The four 32-bit words of block `counter` under `seed`.
pub fn block(seed: u64, counter: u64) -> [u32; 4] {
    let mut c = [counter as u32, (counter >> 32) as u32, 0, 0];
    let mut k = [seed as u32, (seed >> 32) as u32];
    for round in 0..10 {
        if round > 0 {
            k = [k[0].wrapping_add(W0), k[1].wrapping_add(W1)];
        }
        let p0 = u64::from(M0) * u64::from(c[0]);
        let p1 = u64::from(M1) * u64::from(c[2]);
        c = [
            (p1 >> 32) as u32 ^ c[1] ^ k[0],
            p1 as u32,
            (p0 >> 32) as u32 ^ c[3] ^ k[1],
            p0 as u32,
        ];
    }
    c
}

/// The 32-bit words `offset .. offset + count` of the stream of `seed`.
pub fn words(seed: u64, offset: u64, count: usize) -> Vec<u32> {
    let mut out = Vec::with_capacity(count);
    let mut i = offset;
    while out.len() < count {
        let words = block(seed, i / 4);
        let start = (i % 4) as usize;
        let take = (4 - start).min(count - out.len());
        out.extend_from_slice(&words[start..start + take]);
        i += take as u64;
    }
    out
}

/// A 32-bit word as a float in (0, 1], as cuRAND's `_curand_uniform` makes it.
pub fn uniform(word: u32) -> f32 {
    const SCALE: f32 = 2.328_306_4e-10; // 2^-32
    word as f32 * SCALE + SCALE / 2.0
}
