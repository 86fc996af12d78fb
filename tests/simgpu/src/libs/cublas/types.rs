//! cuBLAS's enumerations as the C headers number them (`cudaDataType`, `cublasComputeType_t`,
//! `cublasOperation_t`, `cublasMath_t`), the element formats the reference reads and writes
//! (FP8 E4M3 through a table of its 256 values), and the rounding a reduced-precision compute
//! type applies to FP32 inputs.

use super::status::Status;
use half::{bf16, f16};

/// An element format (`cudaDataType`): `CUDA_R_32F` = 0, `CUDA_R_16F` = 2, `CUDA_R_16BF` = 14,
/// `CUDA_R_8F_E4M3` = 28.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Element {
    F32,
    F16,
    Bf16,
    /// FP8 E4M3 (`__nv_fp8_e4m3`), which only cuBLASLt's FP8 matmul takes.
    E4m3,
}

/// Every E4M3 value by its byte: 1 sign bit, 4 exponent bits biased by 7, 3 mantissa bits; no
/// infinities, `S.1111.111` NaN. A byte of exponent field `e` and mantissa `m` is the integer
/// significand `8 + m` (`m` alone when `e` is 0, a subnormal) times `2^(max(e, 1) - 10)`.
static E4M3: [f32; 256] = e4m3_table();

/// The byte of E4M3's largest finite value, 448.
const E4M3_MAX: u8 = 0x7e;

/// Builds [`E4M3`].
const fn e4m3_table() -> [f32; 256] {
    let mut table = [0.0f32; 256];
    let mut byte = 0;
    while byte < 256 {
        let (exponent, mantissa) = ((byte >> 3) & 0xf, byte & 0x7);
        let value = if exponent == 0xf && mantissa == 0x7 {
            f32::NAN
        } else {
            let significand = if exponent == 0 {
                mantissa
            } else {
                8 + mantissa
            };
            let scale = if exponent == 0 { 1 } else { exponent };
            // 2^(scale - 10), a normal f32 (2^-9 to 2^5) built from its biased exponent.
            significand as f32 * f32::from_bits(((scale + 117) as u32) << 23)
        };
        table[byte] = if byte & 0x80 != 0 { -value } else { value };
        byte += 1;
    }
    table
}

/// The E4M3 byte nearest `x`, ties to the even byte, saturated to ±448 as CUDA's
/// `__NV_SATFINITE` conversion saturates (infinities too); NaN is `0x7f`. The positive values
/// are [`E4M3`]'s bytes 0 to `0x7e` in increasing order: a binary search finds `x`'s
/// neighbours, the nearer wins.
pub fn e4m3(x: f32) -> u8 {
    if x.is_nan() {
        return 0x7f;
    }
    let sign = if x.is_sign_negative() { 0x80 } else { 0 };
    let magnitude = x.abs();
    let positive = &E4M3[..=usize::from(E4M3_MAX)];
    let above = positive.partition_point(|v| *v < magnitude);
    let byte = match above {
        0 => 0,
        n if n == positive.len() => E4M3_MAX,
        n if positive[n] == magnitude => n as u8,
        n => {
            // Near a tie both differences are exact (Sterbenz: the three values lie within a
            // factor of 2), so a tie is seen as one.
            let (low, high) = (magnitude - positive[n - 1], positive[n] - magnitude);
            let nearer = match low.partial_cmp(&high) {
                Some(std::cmp::Ordering::Less) => n - 1,
                Some(std::cmp::Ordering::Greater) => n,
                _ => n & !1,
            };
            nearer as u8
        }
    };
    sign | byte
}

impl Element {
    /// The format of a `cudaDataType`; the real types a GEMM of FP32 accumulation takes.
    pub fn of(raw: i32) -> Result<Element, Status> {
        match raw {
            0 => Ok(Element::F32),
            2 => Ok(Element::F16),
            14 => Ok(Element::Bf16),
            28 => Ok(Element::E4m3),
            _ => Err(Status::NOT_SUPPORTED),
        }
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            Element::F32 => 4,
            Element::F16 | Element::Bf16 => 2,
            Element::E4m3 => 1,
        }
    }

    /// The header's name (`CUDA_R_16BF`).
    pub fn name(self) -> &'static str {
        match self {
            Element::F32 => "CUDA_R_32F",
            Element::F16 => "CUDA_R_16F",
            Element::Bf16 => "CUDA_R_16BF",
            Element::E4m3 => "CUDA_R_8F_E4M3",
        }
    }

    /// Little-endian elements as f32 (16- and 8-bit formats widen exactly).
    pub fn decode(self, bytes: &[u8]) -> Vec<f32> {
        match self {
            Element::F32 => bytes
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect(),
            Element::F16 => bytes
                .chunks_exact(2)
                .map(|b| f16::from_le_bytes([b[0], b[1]]).to_f32())
                .collect(),
            Element::Bf16 => bytes
                .chunks_exact(2)
                .map(|b| bf16::from_le_bytes([b[0], b[1]]).to_f32())
                .collect(),
            Element::E4m3 => bytes.iter().map(|b| E4M3[usize::from(*b)]).collect(),
        }
    }

    /// `value` in this format (rounded to nearest even; E4M3 saturated), little-endian, into
    /// `out`.
    pub fn encode_into(self, value: f32, out: &mut [u8]) {
        match self {
            Element::F32 => out.copy_from_slice(&value.to_le_bytes()),
            Element::F16 => out.copy_from_slice(&f16::from_f32(value).to_le_bytes()),
            Element::Bf16 => out.copy_from_slice(&bf16::from_f32(value).to_le_bytes()),
            Element::E4m3 => out.copy_from_slice(&[e4m3(value)]),
        }
    }
}

/// How FP32 inputs are multiplied: exactly, or rounded first to a tensor-core format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rounding {
    /// FP32 (or narrower inputs, which widen exactly).
    None,
    /// TF32: 10 mantissa bits.
    Tf32,
    /// FP16.
    F16,
    /// BF16.
    Bf16,
}

impl Rounding {
    /// `x` as the multiplier sees it.
    pub fn apply(self, x: f32) -> f32 {
        match self {
            Rounding::None => x,
            Rounding::Tf32 => tf32(x),
            Rounding::F16 => f16::from_f32(x).to_f32(),
            Rounding::Bf16 => bf16::from_f32(x).to_f32(),
        }
    }
}

/// `x` rounded to TF32 (1 sign, 8 exponent, 10 mantissa bits), to nearest, ties to even; NaN
/// and infinities unchanged, a value past TF32's largest becomes infinite.
pub fn tf32(x: f32) -> f32 {
    if !x.is_finite() {
        return x;
    }
    let bits = x.to_bits();
    let dropped = 13;
    let lsb = (bits >> dropped) & 1;
    let rounded = bits.wrapping_add((1 << (dropped - 1)) - 1 + lsb) & !((1 << dropped) - 1);
    f32::from_bits(rounded)
}

/// A compute type (`cublasComputeType_t`) of FP32 accumulation: what stackbench uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Compute {
    /// `CUBLAS_COMPUTE_32F` (68): FP32, or TF32 when the handle's math mode allows it.
    F32,
    /// `CUBLAS_COMPUTE_32F_PEDANTIC` (69): FP32 whatever the math mode.
    F32Pedantic,
    /// `CUBLAS_COMPUTE_32F_FAST_16F` (74).
    Fast16F,
    /// `CUBLAS_COMPUTE_32F_FAST_16BF` (75).
    Fast16Bf,
    /// `CUBLAS_COMPUTE_32F_FAST_TF32` (77).
    FastTf32,
}

impl Compute {
    /// The compute type `raw` names; a valid one this reference lacks (16F, 64F, 32I) is
    /// `CUBLAS_STATUS_NOT_SUPPORTED`, a number that names none `CUBLAS_STATUS_INVALID_VALUE`.
    pub fn of(raw: i32) -> Result<Compute, Status> {
        match raw {
            68 => Ok(Compute::F32),
            69 => Ok(Compute::F32Pedantic),
            74 => Ok(Compute::Fast16F),
            75 => Ok(Compute::Fast16Bf),
            77 => Ok(Compute::FastTf32),
            64..=79 => Err(Status::NOT_SUPPORTED),
            _ => Err(Status::INVALID_VALUE),
        }
    }

    /// The header's name.
    pub fn name(self) -> &'static str {
        match self {
            Compute::F32 => "CUBLAS_COMPUTE_32F",
            Compute::F32Pedantic => "CUBLAS_COMPUTE_32F_PEDANTIC",
            Compute::Fast16F => "CUBLAS_COMPUTE_32F_FAST_16F",
            Compute::Fast16Bf => "CUBLAS_COMPUTE_32F_FAST_16BF",
            Compute::FastTf32 => "CUBLAS_COMPUTE_32F_FAST_TF32",
        }
    }

    /// How FP32 inputs are rounded under math mode `math`: the fast types always;
    /// `CUBLAS_COMPUTE_32F` to TF32 only under `CUBLAS_TF32_TENSOR_OP_MATH`.
    pub fn rounding(self, math: Math) -> Rounding {
        match self {
            Compute::FastTf32 => Rounding::Tf32,
            Compute::Fast16F => Rounding::F16,
            Compute::Fast16Bf => Rounding::Bf16,
            Compute::F32 if math.tf32 => Rounding::Tf32,
            Compute::F32 | Compute::F32Pedantic => Rounding::None,
        }
    }
}

/// A handle's math mode (`cublasMath_t`): the mode (0 default, 1 tensor op, 2 pedantic,
/// 3 TF32 tensor op, 4 BF16x9 emulation) with flag 16 (no reduced-precision reduction).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Math {
    /// The raw value, answered by `cublasGetMathMode`.
    pub raw: i32,
    /// FP32 GEMMs may use TF32 (`CUBLAS_TF32_TENSOR_OP_MATH`).
    pub tf32: bool,
}

impl Math {
    /// The math mode `raw`, or `CUBLAS_STATUS_INVALID_VALUE`.
    pub fn of(raw: i32) -> Result<Math, Status> {
        let mode = raw & !16;
        if !(0..=4).contains(&mode) && mode != 8 {
            return Err(Status::INVALID_VALUE);
        }
        Ok(Math {
            raw,
            tf32: mode == 3,
        })
    }
}

/// `cublasOperation_t`: `CUBLAS_OP_N` (0), `CUBLAS_OP_T` (1), `CUBLAS_OP_C` (2, for real types
/// a transpose).
pub fn transposed(raw: i32) -> Result<bool, Status> {
    match raw {
        0 => Ok(false),
        1 | 2 => Ok(true),
        _ => Err(Status::INVALID_VALUE),
    }
}

/// The header's name of an operation (`"CUBLAS_OP_T"`).
pub fn operation_name(raw: i32) -> &'static str {
    match raw {
        0 => "CUBLAS_OP_N",
        1 => "CUBLAS_OP_T",
        2 => "CUBLAS_OP_C",
        _ => "invalid",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tf32_keeps_ten_mantissa_bits_rounding_to_nearest_even() {
        let one = 1.0f32.to_bits();
        let ulp = 1 << 13;
        // Below half an ulp: down; above: up; exactly half: to the even neighbour.
        assert_eq!(tf32(f32::from_bits(one + ulp / 2 - 1)).to_bits(), one);
        assert_eq!(tf32(f32::from_bits(one + ulp / 2 + 1)).to_bits(), one + ulp);
        assert_eq!(tf32(f32::from_bits(one + ulp / 2)).to_bits(), one);
        assert_eq!(
            tf32(f32::from_bits(one + ulp + ulp / 2)).to_bits(),
            one + 2 * ulp
        );
        assert_eq!(tf32(1.0 + 1.0 / 1024.0), 1.0 + 1.0 / 1024.0);
        assert_eq!(tf32(-3.0e-3).to_bits() & (ulp - 1), 0);
        assert_eq!(tf32(f32::MAX), f32::INFINITY);
        assert!(tf32(f32::NAN).is_nan());
    }

    #[test]
    fn only_the_fast_types_and_the_tf32_math_mode_round_fp32_inputs() {
        let default = Math::of(0).unwrap();
        let tf32_mode = Math::of(3).unwrap();
        assert_eq!(Compute::F32.rounding(default), Rounding::None);
        assert_eq!(Compute::F32.rounding(tf32_mode), Rounding::Tf32);
        assert_eq!(Compute::F32Pedantic.rounding(tf32_mode), Rounding::None);
        assert_eq!(Compute::FastTf32.rounding(default), Rounding::Tf32);
        assert_eq!(Compute::of(70), Err(Status::NOT_SUPPORTED));
        assert_eq!(Compute::of(0), Err(Status::INVALID_VALUE));
        assert_eq!(Math::of(7), Err(Status::INVALID_VALUE));
        assert_eq!(Math::of(3 | 16).map(|m| m.tf32), Ok(true));
    }

    #[test]
    fn sixteen_bit_formats_round_trip_through_bytes() {
        let mut out = [0u8; 2];
        Element::Bf16.encode_into(1.5, &mut out);
        assert_eq!(Element::Bf16.decode(&out), vec![1.5]);
        Element::F16.encode_into(-0.25, &mut out);
        assert_eq!(Element::F16.decode(&out), vec![-0.25]);
        assert_eq!(Element::of(1), Err(Status::NOT_SUPPORTED));
    }

    #[test]
    fn e4m3_holds_448_subnormals_of_2_to_the_minus_9_and_one_nan_per_sign() {
        assert_eq!(E4M3[0x38], 1.0);
        assert_eq!(E4M3[0x39], 1.125);
        assert_eq!(E4M3[0x01], 1.0 / 512.0);
        assert_eq!(E4M3[0x07], 7.0 / 512.0);
        assert_eq!(E4M3[0x08], 1.0 / 64.0);
        assert_eq!(E4M3[0x7e], 448.0);
        assert_eq!(E4M3[0xfe], -448.0);
        assert!(E4M3[0x7f].is_nan() && E4M3[0xff].is_nan());
        assert_eq!(E4M3.iter().filter(|v| v.is_nan()).count(), 2);
        // Every other byte comes back from its value (-0 included).
        for byte in (0..=255u8).filter(|b| b & 0x7f != 0x7f) {
            assert_eq!(e4m3(E4M3[usize::from(byte)]), byte, "{byte:#x}");
        }
        assert_eq!(Element::E4m3.decode(&[0x38, 0xc0]), vec![1.0, -2.0]);
    }

    #[test]
    fn e4m3_rounds_to_nearest_even_and_saturates() {
        // Halfway between 1 (0x38) and 1.125 (0x39): to 0x38; between 1.125 and 1.25: 0x3a.
        assert_eq!(e4m3(1.0625), 0x38);
        assert_eq!(e4m3(1.1875), 0x3a);
        assert_eq!(e4m3(1.07), 0x39);
        assert_eq!(e4m3(-1.05), 0xb8);
        // Below half the smallest subnormal: zero; half of it, a tie: zero, the even byte.
        assert_eq!(e4m3(1.0 / 4096.0), 0x00);
        assert_eq!(e4m3(1.0 / 1024.0), 0x00);
        assert_eq!(e4m3(3.0 / 2048.0), 0x01);
        // Past 448 (480 would be next): 448, infinities too; NaN stays NaN.
        assert_eq!(e4m3(464.0), 0x7e);
        assert_eq!(e4m3(1e9), 0x7e);
        assert_eq!(e4m3(f32::NEG_INFINITY), 0xfe);
        assert_eq!(e4m3(f32::NAN), 0x7f);
        let mut out = [0u8];
        Element::E4m3.encode_into(-3.3, &mut out);
        assert_eq!(out, [0xc5]);
    }
}
