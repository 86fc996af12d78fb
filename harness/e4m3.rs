//! FP8 E4M3 (`__nv_fp8_e4m3`, OCP's "E4M3FN"): 1 sign bit, 4 exponent bits biased by 7,
//! 3 mantissa bits; no infinities, `S.1111.111` is NaN, the largest finite value is 448 and
//! the smallest subnormal 2⁻⁹. The inputs of an FP8 GEMM are made here and the CPU reference
//! multiplies what [`decode`] makes of them.

/// The largest finite E4M3 value.
pub const MAX: f32 = 448.0;

/// The E4M3 byte nearest `x` (ties to even), saturated to ±448 as CUDA's `__NV_SATFINITE`
/// conversion does; NaN becomes NaN.
pub fn encode(x: f32) -> u8 {
    let sign = if x.is_sign_negative() { 0x80 } else { 0 };
    if x.is_nan() {
        return 0x7f;
    }
    let magnitude = x.abs().min(MAX);
    // The spacing of E4M3 values around `magnitude`: 2^(e-3) for a normal of exponent e,
    // 2^-9 for subnormals (exponents below -6).
    let exponent = if magnitude < f32::MIN_POSITIVE {
        -6
    } else {
        (magnitude.to_bits() >> 23) as i32 - 127
    }
    .max(-6);
    let step = f32::from_bits(((exponent - 3 + 127) as u32) << 23);
    let units = magnitude / step; // exact: a division by a power of two
    let mut rounded = units.round();
    if (units - units.trunc() - 0.5).abs() == 0.0 && rounded % 2.0 != 0.0 {
        rounded -= 1.0; // a tie: to even
    }
    let value = (rounded * step).min(MAX);
    sign | magnitude_bits(value)
}

/// The byte of a non-negative `value` that E4M3 holds exactly.
fn magnitude_bits(value: f32) -> u8 {
    if value < 2f32.powi(-6) {
        return (value / 2f32.powi(-9)) as u8; // a subnormal: its mantissa counts 2^-9
    }
    let bits = value.to_bits();
    let exponent = (bits >> 23) as i32 - 127 + 7;
    let mantissa = (bits >> 20) & 0x7;
    ((exponent as u32) << 3 | mantissa) as u8
}

/// The value of an E4M3 byte, exactly.
pub fn decode(byte: u8) -> f32 {
    let sign = if byte & 0x80 != 0 { -1.0 } else { 1.0 };
    let (exponent, mantissa) = (i32::from(byte >> 3 & 0xf), f32::from(byte & 0x7));
    if exponent == 0xf && mantissa == 7.0 {
        return f32::NAN;
    }
    sign * match exponent {
        0 => mantissa * 2f32.powi(-9),
        e => (1.0 + mantissa / 8.0) * 2f32.powi(e - 7),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Every finite E4M3 value, ascending (both zeros once).
    fn finite_values() -> Vec<f32> {
        let mut all: Vec<f32> = (0..=255u8).map(decode).filter(|v| v.is_finite()).collect();
        all.sort_by(f32::total_cmp);
        all.dedup();
        all
    }

    #[test]
    fn known_values_decode_and_encode() {
        assert_eq!(decode(0x00), 0.0);
        assert_eq!(decode(0x38), 1.0);
        assert_eq!(decode(0xb8), -1.0);
        assert_eq!(decode(0x7e), 448.0);
        assert_eq!(decode(0x01), 2f32.powi(-9));
        assert_eq!(decode(0x08), 2f32.powi(-6));
        assert!(decode(0x7f).is_nan() && decode(0xff).is_nan());
        assert_eq!(encode(1.0), 0x38);
        assert_eq!(encode(-448.0), 0xfe);
        assert_eq!(encode(1e9), 0x7e, "saturates");
        assert_eq!(encode(f32::INFINITY), 0x7e);
        assert_eq!(encode(f32::NAN), 0x7f);
        // 1.0625 lies halfway between 1.0 (mantissa 0) and 1.125 (mantissa 1): to even.
        assert_eq!(encode(1.0625), 0x38);
        assert_eq!(
            encode(1.1875),
            0x3a,
            "between 1.125 and 1.25: to even, 1.25"
        );
    }

    #[test]
    fn every_byte_but_nan_round_trips() {
        for byte in 0..=255u8 {
            let value = decode(byte);
            if value.is_nan() {
                continue;
            }
            let back = encode(value);
            assert_eq!(decode(back), value, "{byte:#04x}");
            if byte != 0x80 {
                assert_eq!(back, byte, "{value}");
            }
        }
    }

    #[test]
    fn the_value_set_is_what_the_format_defines() {
        let values = finite_values();
        // 2 x 126 finite magnitudes (0x00-0x7e), both zeros one value: 253.
        assert_eq!(values.len(), 253);
        assert_eq!(values.last(), Some(&MAX));
    }

    proptest! {
        #[test]
        fn encoding_picks_the_nearest_value(x in -500.0f32..500.0) {
            let got = decode(encode(x));
            let nearest = finite_values()
                .into_iter()
                .map(|v| (v - x.clamp(-MAX, MAX)).abs())
                .fold(f32::INFINITY, f32::min);
            prop_assert_eq!((got - x.clamp(-MAX, MAX)).abs(), nearest);
        }
    }
}
