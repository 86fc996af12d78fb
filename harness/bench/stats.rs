//! Statistics of samples and the rule that stops sampling, after nvbench: at least a minimum of
//! samples and of time, then stop once the relative noise is under the limit, or at a hard time
//! limit; the reason is recorded.

use super::model::{StopReason, Summary};
use std::time::Duration;

/// When to stop taking samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StopRule {
    pub min_samples: usize,
    /// Time spent sampling before noise may stop it.
    pub min_time: Duration,
    /// Relative standard deviation that is quiet enough (0.005 is 0.5%).
    pub max_noise: f64,
    /// The hard cap on time spent sampling.
    pub time_limit: Duration,
}

impl StopRule {
    /// Whether to stop after `samples` taken in `elapsed`, and why.
    pub fn verdict(&self, samples: &[f64], elapsed: Duration) -> Option<StopReason> {
        let quiet = noise(samples).is_some_and(|n| n <= self.max_noise);
        if samples.len() >= self.min_samples && elapsed >= self.min_time && quiet {
            return Some(StopReason::Noise);
        }
        (elapsed >= self.time_limit && !samples.is_empty()).then_some(StopReason::TimeLimit)
    }
}

/// Relative standard deviation (sample standard deviation over the mean); `None` for fewer than
/// two samples or a mean of zero.
pub fn noise(samples: &[f64]) -> Option<f64> {
    if samples.len() < 2 {
        return None;
    }
    let n = samples.len() as f64;
    let mean = samples.iter().sum::<f64>() / n;
    if mean == 0.0 {
        return None;
    }
    let variance = samples.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    Some(variance.sqrt() / mean.abs())
}

/// The quantile `q` (0 to 1) of sorted samples, linearly interpolated.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let at = q * (sorted.len() - 1) as f64;
    let (low, high) = (at.floor() as usize, at.ceil() as usize);
    sorted[low] + (sorted[high] - sorted[low]) * (at - low as f64)
}

/// Median, quartiles, extremes and noise; `None` when there are no samples or one is not finite.
pub fn summarize(samples: &[f64]) -> Option<Summary> {
    if samples.is_empty() || samples.iter().any(|s| !s.is_finite()) {
        return None;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    Some(Summary {
        median_ns: quantile(&sorted, 0.5),
        q1_ns: quantile(&sorted, 0.25),
        q3_ns: quantile(&sorted, 0.75),
        min_ns: sorted[0],
        max_ns: sorted[sorted.len() - 1],
        noise: noise(samples).unwrap_or(0.0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::protocol::Limits;
    use proptest::prelude::*;

    #[test]
    fn quartiles_interpolate() {
        let s = summarize(&[4.0, 1.0, 3.0, 2.0, 5.0]).unwrap();
        assert_eq!((s.min_ns, s.q1_ns, s.median_ns), (1.0, 2.0, 3.0));
        assert_eq!((s.q3_ns, s.max_ns), (4.0, 5.0));
        assert_eq!(summarize(&[1.0, 2.0]).unwrap().median_ns, 1.5);
        assert_eq!(summarize(&[]), None);
        assert_eq!(summarize(&[1.0, f64::NAN]), None);
    }

    #[test]
    fn noise_is_relative() {
        assert_eq!(noise(&[5.0]), None);
        assert_eq!(noise(&[2.0, 2.0, 2.0]), Some(0.0));
        let n = noise(&[99.0, 101.0]).unwrap();
        assert!((n - 2f64.sqrt() / 100.0).abs() < 1e-12);
    }

    #[test]
    fn stops_on_quiet_samples_only_after_the_minimums() {
        let rule = Limits::standard(5.0).rule();
        let quiet = vec![100.0; 10];
        assert_eq!(rule.verdict(&quiet[..9], Duration::from_secs(1)), None);
        assert_eq!(rule.verdict(&quiet, Duration::from_millis(100)), None);
        assert_eq!(
            rule.verdict(&quiet, Duration::from_secs(1)),
            Some(StopReason::Noise)
        );
        let loud: Vec<f64> = (0..20)
            .map(|i| if i % 2 == 0 { 90.0 } else { 110.0 })
            .collect();
        assert_eq!(rule.verdict(&loud, Duration::from_secs(1)), None);
        assert_eq!(
            rule.verdict(&loud, Duration::from_secs(5)),
            Some(StopReason::TimeLimit)
        );
    }

    proptest! {
        #[test]
        fn summaries_are_ordered(samples in proptest::collection::vec(1.0f64..1e9, 1..200)) {
            let s = summarize(&samples).unwrap();
            prop_assert!(s.min_ns <= s.q1_ns && s.q1_ns <= s.median_ns);
            prop_assert!(s.median_ns <= s.q3_ns && s.q3_ns <= s.max_ns);
            prop_assert!(s.noise >= 0.0);
        }

        #[test]
        fn the_time_limit_always_ends_sampling(samples in proptest::collection::vec(1.0f64..1e9, 1..50)) {
            let rule = Limits::standard(2.0).rule();
            prop_assert!(rule.verdict(&samples, Duration::from_secs(2)).is_some());
        }
    }
}
