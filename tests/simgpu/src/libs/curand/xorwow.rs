//! XORWOW, cuRAND's default pseudo-random generator: Marsaglia's xorshift of five 32-bit words
//! plus a Weyl sequence ("Xorshift RNGs", J. Stat. Softw. 2003), seeded as cuRAND's device API
//! seeds it (`curand_init`: the seed's halves salted and multiplied into the state). One
//! sequence, stepped to the offset: cuRAND's host API spreads its output over many such
//! sequences, so values are XORWOW's but not bit-identical to NVIDIA's, which stackbench does
//! not check.

/// The Weyl sequence's step.
const WEYL: u32 = 362_437;

/// How far an offset may skip: it is stepped word by word here, where cuRAND jumps with
/// precomputed matrices.
pub const MAX_OFFSET: u64 = 1 << 30;

/// One XORWOW state.
struct State {
    v: [u32; 5],
    d: u32,
}

impl State {
    /// `curand_init(seed, 0, 0)`'s state.
    fn seeded(seed: u64) -> State {
        let s0 = (seed as u32) ^ 0xaad2_6b49;
        let s1 = ((seed >> 32) as u32) ^ 0xf7dc_efdd;
        let t0 = 1_099_087_573u32.wrapping_mul(s0);
        let t1 = 2_591_861_531u32.wrapping_mul(s1);
        State {
            d: 6_615_241u32.wrapping_add(t1).wrapping_add(t0),
            v: [
                123_456_789u32.wrapping_add(t0),
                362_436_069 ^ t0,
                521_288_629u32.wrapping_add(t1),
                88_675_123 ^ t1,
                5_783_321u32.wrapping_add(t0),
            ],
        }
    }

    /// The next word.
    fn next(&mut self) -> u32 {
        let t = self.v[0] ^ (self.v[0] >> 2);
        self.v.rotate_left(1);
        self.v[4] = (self.v[3] ^ (self.v[3] << 4)) ^ (t ^ (t << 1));
        self.d = self.d.wrapping_add(WEYL);
        self.v[4].wrapping_add(self.d)
    }
}

/// The 32-bit words `offset .. offset + count` of the sequence of `seed`; `None` for an offset
/// beyond [`MAX_OFFSET`].
pub fn words(seed: u64, offset: u64, count: usize) -> Option<Vec<u32>> {
    if offset > MAX_OFFSET {
        return None;
    }
    let mut state = State::seeded(seed);
    for _ in 0..offset {
        state.next();
    }
    Some((0..count).map(|_| state.next()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first words of `curand_init(seed, 0, 0)` then `curand()`, computed apart from this
    /// code (a Python transcription of the recurrence in cuRAND's `curand_kernel.h`).
    #[test]
    fn known_answers() {
        assert_eq!(
            words(0, 0, 4).unwrap(),
            [0xbd7f_03b6, 0x703e_556d, 0x845a_f0c5, 0x2830_67fd]
        );
        assert_eq!(
            words(1234, 0, 4).unwrap(),
            [0x253d_5e15, 0x6f55_8604, 0xdee6_daf2, 0x7485_b394]
        );
        assert_eq!(
            words(0x5EED_CAFE, 0, 4).unwrap(),
            [0x88f9_956e, 0xcbf2_f9a4, 0x1513_08aa, 0x0f68_7714]
        );
    }

    #[test]
    fn an_offset_starts_later_in_the_same_sequence() {
        let whole = words(7, 0, 100).unwrap();
        assert_eq!(words(7, 40, 60).unwrap(), whole[40..]);
        assert_eq!(words(7, MAX_OFFSET + 1, 1), None);
    }
}
