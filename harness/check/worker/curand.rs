//! The cuRAND check: the default pseudo-random generator fills 1 Mi floats on the device; every
//! value must lie in (0, 1], not all equal, with a mean within 5 standard errors of 1/2.
//!
//! Calls, through cudarc's `curand` result layer: `curandCreateGenerator`
//! (`CURAND_RNG_PSEUDO_DEFAULT`), `curandSetPseudoRandomGeneratorSeed`, `curandGenerateUniform`,
//! `curandDestroyGenerator`. cuRAND is 10.x in CUDA 11, 12 and 13 alike: these signatures, the
//! generator type's value (100) and every `curandStatus` code (0, 100-106, 201-204, 999) are the
//! ones cudarc binds, so its enum holds whatever the library returns.

use super::device::{synchronize, DeviceBuffer};
use super::outcome::{status_error, Call, Checked, Outcome};
use super::session::Session;
use crate::check::protocol::Component;
use cudarc::curand::result::{self as rand, CurandError};
use cudarc::curand::sys::curandStatus_t;

/// How many numbers to generate: 1 Mi, enough for a tight bound on the mean.
const COUNT: usize = 1 << 20;

/// The generator's seed (any fixed value: the verdict is statistical, not bit-exact).
const SEED: u64 = 0x5EED_CAFE;

/// How many standard errors the mean may be from 1/2 (a false alarm about once in 1.7 million).
const MEAN_BOUND: f64 = 5.0;

status_error!(CurandError, meaning);

/// What a cuRAND status means, from NVIDIA's cuRAND documentation (`curandStatus`).
fn meaning(status: curandStatus_t) -> Option<&'static str> {
    use curandStatus_t::*;
    Some(match status {
        CURAND_STATUS_VERSION_MISMATCH => "header file and linked library version do not match",
        CURAND_STATUS_NOT_INITIALIZED => "the generator was not initialised",
        CURAND_STATUS_ALLOCATION_FAILED => "memory allocation failed",
        CURAND_STATUS_TYPE_ERROR => "the generator is of the wrong type",
        CURAND_STATUS_OUT_OF_RANGE => "an argument is out of range",
        CURAND_STATUS_LENGTH_NOT_MULTIPLE => "the length is not a multiple of the dimension",
        CURAND_STATUS_DOUBLE_PRECISION_REQUIRED => "the GPU lacks the double precision needed",
        CURAND_STATUS_LAUNCH_FAILURE => "a kernel launch failed",
        CURAND_STATUS_PREEXISTING_FAILURE => "an earlier kernel launch had already failed",
        CURAND_STATUS_INITIALIZATION_FAILED => {
            "the CUDA runtime failed to initialise: usually no usable GPU or driver"
        }
        CURAND_STATUS_ARCH_MISMATCH => "the GPU does not support a feature the call needs",
        CURAND_STATUS_INTERNAL_ERROR => "an internal cuRAND error",
        CURAND_STATUS_SUCCESS => return None,
    })
}

/// `curand.generate`.
pub fn generate(s: &mut Session) -> Checked {
    s.library(Component::Curand).map_err(Outcome::fail)?;
    let buffer = DeviceBuffer::<f32>::alloc(COUNT)?;
    let generator = rand::create_generator().call("curandCreateGenerator")?;
    // SAFETY: a generator just created, destroyed once below; the buffer holds COUNT floats.
    let generated = unsafe { rand::set_seed(generator, SEED) }
        .call("curandSetPseudoRandomGeneratorSeed")
        .and_then(|()| {
            // SAFETY: as above.
            unsafe { rand::generate::uniform_f32(generator, buffer.as_ptr(), COUNT) }
                .call("curandGenerateUniform")
        })
        .and_then(|()| synchronize());
    // SAFETY: created above, destroyed once, after its work completed (or failed).
    let destroyed = unsafe { rand::destroy_generator(generator) }.call("curandDestroyGenerator");
    generated?;
    destroyed?;
    let values = buffer.read()?;
    match judge(&values) {
        Ok(summary) => Ok(Outcome::pass(format!(
            "{} Mi uniform floats in (0, 1], mean {:.5} ({:+.1} standard errors from 0.5)",
            COUNT >> 20,
            summary.mean,
            summary.z
        ))
        .detail("count", values.len())
        .detail("mean", summary.mean)
        .detail("variance", summary.variance)
        .detail("min", summary.min)
        .detail("max", summary.max)),
        Err(reason) => Err(Outcome::fail(reason).detail("count", values.len())),
    }
}

/// What a sample of uniform numbers looks like.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Summary {
    mean: f64,
    /// How far the mean is from 1/2, in standard errors (`sqrt(1/12 / n)`).
    z: f64,
    variance: f64,
    min: f32,
    max: f32,
}

/// The verdict on a sample meant to be uniform on (0, 1]: its summary, or why it is not.
fn judge(values: &[f32]) -> Result<Summary, String> {
    if values.len() < 2 {
        return Err(format!(
            "{} values generated: too few to judge",
            values.len()
        ));
    }
    if let Some((index, value)) = values
        .iter()
        .enumerate()
        .find(|(_, v)| !(**v > 0.0 && **v <= 1.0))
    {
        return Err(format!("value {value} at index {index} is outside (0, 1]"));
    }
    let (min, max) = values
        .iter()
        .fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(*v), hi.max(*v))
        });
    if min == max {
        return Err(format!(
            "all {} values are {min}: the generator produced no randomness",
            values.len()
        ));
    }
    let n = values.len() as f64;
    let mean = values.iter().map(|v| f64::from(*v)).sum::<f64>() / n;
    let variance = values
        .iter()
        .map(|v| (f64::from(*v) - mean).powi(2))
        .sum::<f64>()
        / (n - 1.0);
    let z = (mean - 0.5) / (1.0 / 12.0 / n).sqrt();
    if z.abs() > MEAN_BOUND {
        return Err(format!(
            "the mean of {} values is {mean:.5}, {z:+.1} standard errors from 0.5 (at most \
             {MEAN_BOUND} expected)",
            values.len()
        ));
    }
    Ok(Summary {
        mean,
        z,
        variance,
        min,
        max,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::worker::outcome::LibraryError;
    use crate::kernels;
    use rstest::rstest;

    /// `n` values evenly spread over (0, 1]: mean exactly 1/2.
    fn even(n: usize) -> Vec<f32> {
        (1..=n).map(|i| i as f32 / n as f32).collect()
    }

    /// Pseudo-random values in (0, 1], from the benchmarks' generator.
    fn random(n: usize) -> Vec<f32> {
        kernels::random_f32(n, 11)
            .into_iter()
            .map(|x| 1.0 - (x + 1.0) / 2.0)
            .collect()
    }

    #[test]
    fn a_uniform_sample_passes() {
        let summary = judge(&random(COUNT)).unwrap();
        assert!(summary.z.abs() < MEAN_BOUND, "{summary:?}");
        assert!((summary.variance - 1.0 / 12.0).abs() < 1e-3, "{summary:?}");
        assert!(summary.min > 0.0 && summary.max <= 1.0);
        let even = judge(&even(1000)).unwrap();
        assert!(
            (even.mean - 0.5005).abs() < 1e-9 && even.max == 1.0,
            "{even:?}"
        );
    }

    #[rstest]
    #[case::zero(0.0, 17, "value 0 at index 17 is outside (0, 1]")]
    #[case::negative(-0.25, 3, "value -0.25 at index 3 is outside (0, 1]")]
    #[case::above_one(1.5, 0, "value 1.5 at index 0 is outside (0, 1]")]
    #[case::nan(f32::NAN, 999, "value NaN at index 999 is outside (0, 1]")]
    #[case::infinite(f32::INFINITY, 5, "value inf at index 5 is outside (0, 1]")]
    fn values_outside_the_range_fail(#[case] bad: f32, #[case] at: usize, #[case] reason: &str) {
        let mut values = random(1000);
        values[at] = bad;
        assert_eq!(judge(&values).unwrap_err(), reason);
    }

    #[rstest]
    #[case::empty(vec![], "0 values generated: too few to judge")]
    #[case::one(vec![0.5], "1 values generated: too few to judge")]
    #[case::stuck(
        vec![0.5; 4096],
        "all 4096 values are 0.5: the generator produced no randomness"
    )]
    #[case::all_ones(
        vec![1.0; 10],
        "all 10 values are 1: the generator produced no randomness"
    )]
    fn degenerate_samples_fail(#[case] values: Vec<f32>, #[case] reason: &str) {
        assert_eq!(judge(&values).unwrap_err(), reason);
    }

    #[test]
    fn a_biased_mean_fails() {
        // Scaled into (0, 0.99]: the mean drops by 0.005, about 60 standard errors at 1 Mi.
        let biased: Vec<f32> = random(COUNT).into_iter().map(|v| v * 0.99).collect();
        let reason = judge(&biased).unwrap_err();
        assert!(
            reason.starts_with("the mean of 1048576 values is 0.49"),
            "{reason}"
        );
        assert!(
            reason.ends_with("standard errors from 0.5 (at most 5 expected)"),
            "{reason}"
        );
        // A small bias that a small sample cannot see passes.
        let small: Vec<f32> = random(1000).into_iter().map(|v| v * 0.99).collect();
        assert!(judge(&small).is_ok());
    }

    #[test]
    fn statuses_read_well() {
        let error = CurandError(curandStatus_t::CURAND_STATUS_INITIALIZATION_FAILED);
        assert_eq!(
            error.describe(),
            "CURAND_STATUS_INITIALIZATION_FAILED (203): the CUDA runtime failed to initialise: \
             usually no usable GPU or driver"
        );
        assert_eq!(meaning(curandStatus_t::CURAND_STATUS_SUCCESS), None);
    }
}
