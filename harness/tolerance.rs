//! Verifying GPU results against a CPU reference: the relative error of a result and the
//! tolerance each precision gets (GUIDE.md section 7).

use serde::{Deserialize, Serialize};
use std::fmt;

/// The number format a result was computed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Precision {
    F32,
    /// FP32 storage, TF32 tensor-core multiplication (10-bit mantissa).
    Tf32,
    F16,
    Bf16,
    /// FP8 E4M3 inputs with a scale each, FP32 accumulation, BF16 output (cuBLASLt).
    Fp8,
}

impl Precision {
    /// The largest relative error accepted: FP32 1e-4 (well above its ~1e-6), TF32 2e-3, FP16
    /// 1e-2 and BF16 2e-2 (output rounding alone is 2^-11 and 2^-8 of an element); FP8 as BF16,
    /// its output's format (the reference multiplies the decoded inputs, so input rounding
    /// costs nothing).
    pub fn tolerance(self) -> f64 {
        match self {
            Precision::F32 => 1e-4,
            Precision::Tf32 => 2e-3,
            Precision::F16 => 1e-2,
            Precision::Bf16 | Precision::Fp8 => 2e-2,
        }
    }

    /// The name in benchmark ids and parameters, as serialised (`f32`, `tf32`, `f16`, `bf16`,
    /// `fp8`).
    pub fn id(self) -> &'static str {
        match self {
            Precision::F32 => "f32",
            Precision::Tf32 => "tf32",
            Precision::F16 => "f16",
            Precision::Bf16 => "bf16",
            Precision::Fp8 => "fp8",
        }
    }

    /// The name as in reports (`fp32`, `tf32`, `fp16`, `bf16`, `fp8`).
    pub fn name(self) -> &'static str {
        match self {
            Precision::F32 => "fp32",
            Precision::Tf32 => "tf32",
            Precision::F16 => "fp16",
            Precision::Bf16 => "bf16",
            Precision::Fp8 => "fp8",
        }
    }
}

/// How far a result is from its reference.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Comparison {
    /// `max |got - want| / max |want|` (normwise, so elements near zero do not dominate); NaN or
    /// infinity anywhere in the result makes it infinite.
    pub relative_error: f64,
    /// The first element with the largest error.
    pub worst_index: usize,
    pub tolerance: f64,
}

impl Comparison {
    /// Within the tolerance.
    pub fn passed(&self) -> bool {
        self.relative_error <= self.tolerance
    }
}

impl fmt::Display for Comparison {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let verdict = if self.passed() { "within" } else { "beyond" };
        write!(
            f,
            "relative error {:.2e} {verdict} the tolerance {:.0e} (worst at element {})",
            self.relative_error, self.tolerance, self.worst_index
        )
    }
}

/// Why two results cannot be compared at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the result has {got} elements, the reference {want}")]
pub struct LengthMismatch {
    pub got: usize,
    pub want: usize,
}

/// Compares `got` with the reference `want` for `precision`. An all-zero reference compares by
/// absolute error.
pub fn compare(
    got: &[f64],
    want: &[f64],
    precision: Precision,
) -> Result<Comparison, LengthMismatch> {
    if got.len() != want.len() {
        return Err(LengthMismatch {
            got: got.len(),
            want: want.len(),
        });
    }
    let scale = want.iter().fold(0.0f64, |m, w| m.max(w.abs()));
    let scale = if scale > 0.0 && scale.is_finite() {
        scale
    } else {
        1.0
    };
    let (mut worst, mut worst_index) = (0.0f64, 0);
    for (index, (g, w)) in got.iter().zip(want).enumerate() {
        let error = if g.is_finite() {
            (g - w).abs() / scale
        } else {
            f64::INFINITY
        };
        if error > worst {
            worst = error;
            worst_index = index;
        }
    }
    Ok(Comparison {
        relative_error: worst,
        worst_index,
        tolerance: precision.tolerance(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_cases() {
        let want = [1.0, -2.0, 4.0];
        let exact = compare(&want, &want, Precision::F32).unwrap();
        assert_eq!(exact.relative_error, 0.0);
        assert!(exact.passed());
        let off = compare(&[1.0, -2.0, 4.04], &want, Precision::F32).unwrap();
        assert!((off.relative_error - 0.01).abs() < 1e-12);
        assert_eq!(off.worst_index, 2);
        assert!(!off.passed());
        assert!(compare(&[1.0, -2.0, 4.04], &want, Precision::Bf16)
            .unwrap()
            .passed());
        let nan = compare(&[1.0, f64::NAN, 4.0], &want, Precision::Bf16).unwrap();
        assert!(!nan.passed());
        assert_eq!(nan.worst_index, 1);
        assert_eq!(
            compare(&[1.0], &want, Precision::F32),
            Err(LengthMismatch { got: 1, want: 3 })
        );
        assert!(compare(&[1e-9, 0.0], &[0.0, 0.0], Precision::F32)
            .unwrap()
            .passed());
        assert!(off
            .to_string()
            .starts_with("relative error 1.00e-2 beyond the tolerance 1e-4"));
    }

    fn precision() -> impl Strategy<Value = Precision> {
        prop_oneof![
            Just(Precision::F32),
            Just(Precision::Tf32),
            Just(Precision::F16),
            Just(Precision::Bf16),
            Just(Precision::Fp8)
        ]
    }

    proptest! {
        #[test]
        fn a_result_equal_to_its_reference_passes(
            want in prop::collection::vec(-1e6f64..1e6, 1..64),
            precision in precision(),
        ) {
            let c = compare(&want, &want, precision).unwrap();
            prop_assert_eq!(c.relative_error, 0.0);
            prop_assert!(c.passed());
        }

        #[test]
        fn error_is_scale_invariant(
            want in prop::collection::vec(-1e3f64..1e3, 1..64),
            noise in prop::collection::vec(-1e-3f64..1e-3, 64),
            scale in 1e-3f64..1e3,
        ) {
            let got: Vec<f64> = want.iter().zip(&noise).map(|(w, n)| w + n).collect();
            let a = compare(&got, &want, Precision::F32).unwrap();
            let scaled_got: Vec<f64> = got.iter().map(|x| x * scale).collect();
            let scaled_want: Vec<f64> = want.iter().map(|x| x * scale).collect();
            let b = compare(&scaled_got, &scaled_want, Precision::F32).unwrap();
            prop_assert!((a.relative_error - b.relative_error).abs() <= 1e-9 * a.relative_error.max(1.0));
        }

        #[test]
        fn perturbation_below_the_tolerance_passes_and_above_fails(
            want in prop::collection::vec(0.5f64..2.0, 1..64),
            index in any::<prop::sample::Index>(),
            precision in precision(),
        ) {
            let scale = want.iter().fold(0.0f64, |m, w| m.max(w.abs()));
            let at = index.index(want.len());
            let tolerance = precision.tolerance();
            let mut near = want.clone();
            near[at] += 0.5 * tolerance * scale;
            prop_assert!(compare(&near, &want, precision).unwrap().passed());
            let mut far = want.clone();
            far[at] += 2.0 * tolerance * scale;
            let c = compare(&far, &want, precision).unwrap();
            prop_assert!(!c.passed());
            prop_assert_eq!(c.worst_index, at);
        }

        #[test]
        fn non_finite_results_never_pass(
            want in prop::collection::vec(-10f64..10.0, 1..32),
            index in any::<prop::sample::Index>(),
            bad in prop_oneof![Just(f64::NAN), Just(f64::INFINITY), Just(f64::NEG_INFINITY)],
        ) {
            let mut got = want.clone();
            got[index.index(want.len())] = bad;
            prop_assert!(!compare(&got, &want, Precision::Bf16).unwrap().passed());
        }
    }
}
