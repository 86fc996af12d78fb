//! Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011): a
//! counter-based generator, so value `i` of a stream is a pure function of the key (the seed)
//! and `i`, and a generation can start at any offset. Checked against Random123's known-answer
//! vectors.

/// Philox's multipliers and Weyl constants.
const M0: u32 = 0xD251_1F53;
const M1: u32 = 0xCD9E_8D57;
const W0: u32 = 0x9E37_79B9;
const W1: u32 = 0xBB67_AE85;

/// Philox4x32-10 of a 128-bit counter under a 64-bit key, as Random123 defines it.
pub fn philox4x32_10(counter: [u32; 4], key: [u32; 2]) -> [u32; 4] {
    let (mut c, mut k) = (counter, key);
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

/// The four 32-bit words of block `counter` under `seed`.
pub fn block(seed: u64, counter: u64) -> [u32; 4] {
    philox4x32_10(
        [counter as u32, (counter >> 32) as u32, 0, 0],
        [seed as u32, (seed >> 32) as u32],
    )
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Random123's known-answer vectors for Philox4x32-10 (its `tests/kat_vectors`: counter,
    /// key, expected output).
    #[test]
    fn random123_known_answers() {
        let vectors: [([u32; 4], [u32; 2], [u32; 4]); 3] = [
            (
                [0; 4],
                [0; 2],
                [0x6627_e8d5, 0xe169_c58d, 0xbc57_ac4c, 0x9b00_dbd8],
            ),
            (
                [u32::MAX; 4],
                [u32::MAX; 2],
                [0x408f_276d, 0x41c8_3b0e, 0xa20b_c7c6, 0x6d54_51fd],
            ),
            (
                [0x243f_6a88, 0x85a3_08d3, 0x1319_8a2e, 0x0370_7344],
                [0xa409_3822, 0x299f_31d0],
                [0xd16c_fe09, 0x94fd_cceb, 0x5001_e420, 0x2412_6ea1],
            ),
        ];
        for (counter, key, expected) in vectors {
            assert_eq!(
                philox4x32_10(counter, key),
                expected,
                "{counter:x?} {key:x?}"
            );
        }
    }
}
