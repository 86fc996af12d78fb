//! Statistics of samples and the rule that stops sampling, after nvbench: at least a minimum of
//! samples and of time, then stop once the relative noise is under the limit, or at a hard time
//! limit; the reason is recorded.
//!
//! The noise the rule watches is kept as running (Welford) statistics, so each sample costs the
//! same however many came before; what is kept of the samples themselves is capped
//! ([`Kept`]): a tiny kernel sampled for seconds takes tens of thousands of samples, and the
//! JSON needs a uniform subsample of them and their count, not all of them.

use super::model::{StopReason, Summary};
use std::time::Duration;

/// The most samples a benchmark keeps.
pub const KEPT_SAMPLES: usize = 1024;

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
    /// Whether to stop after the samples `running` has seen, taken in `elapsed`, and why.
    pub fn verdict(&self, running: &Running, elapsed: Duration) -> Option<StopReason> {
        let quiet = running.noise().is_some_and(|n| n <= self.max_noise);
        if running.count() >= self.min_samples as u64 && elapsed >= self.min_time && quiet {
            return Some(StopReason::Noise);
        }
        (elapsed >= self.time_limit && running.count() > 0).then_some(StopReason::TimeLimit)
    }
}

/// Count, mean and sum of squared deviations of every sample seen, updated one sample at a time
/// (Welford's method: numerically stable, constant work per sample).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Running {
    count: u64,
    mean: f64,
    m2: f64,
}

impl Running {
    /// Adds one sample.
    pub fn push(&mut self, x: f64) {
        self.count += 1;
        let delta = x - self.mean;
        self.mean += delta / self.count as f64;
        self.m2 += delta * (x - self.mean);
    }

    /// Samples seen.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Relative standard deviation (sample standard deviation over the mean); `None` for fewer
    /// than two samples or a mean of zero.
    pub fn noise(&self) -> Option<f64> {
        if self.count < 2 || self.mean == 0.0 {
            return None;
        }
        let variance = self.m2 / (self.count - 1) as f64;
        Some(variance.max(0.0).sqrt() / self.mean.abs())
    }
}

/// A uniform subsample of at most `cap` items of a stream: every `stride`-th item is kept, and
/// when `cap` are kept, every other one is dropped and the stride doubles. What is kept is
/// always evenly spread over the whole run, in order.
#[derive(Debug, Clone)]
pub struct Kept<T> {
    items: Vec<T>,
    cap: usize,
    stride: u64,
    seen: u64,
}

impl<T> Kept<T> {
    /// An empty subsample of at most `cap` items (at least 2).
    pub fn new(cap: usize) -> Kept<T> {
        Kept {
            items: Vec::new(),
            cap: cap.max(2),
            stride: 1,
            seen: 0,
        }
    }

    /// Offers one item of the stream.
    pub fn push(&mut self, item: T) {
        if self.seen % self.stride == 0 {
            if self.items.len() == self.cap {
                let mut index = 0;
                self.items.retain(|_| {
                    index += 1;
                    index % 2 == 1
                });
                self.stride *= 2;
            }
            if self.seen % self.stride == 0 {
                self.items.push(item);
            }
        }
        self.seen += 1;
    }

    /// Items offered.
    pub fn seen(&self) -> u64 {
        self.seen
    }

    /// The items kept, in the order they came.
    pub fn items(&self) -> &[T] {
        &self.items
    }

    pub fn into_items(self) -> Vec<T> {
        self.items
    }
}

/// Relative standard deviation of `samples`; `None` for fewer than two or a mean of zero.
pub fn noise(samples: &[f64]) -> Option<f64> {
    let mut running = Running::default();
    samples.iter().for_each(|&x| running.push(x));
    running.noise()
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

    fn running(samples: &[f64]) -> Running {
        let mut running = Running::default();
        samples.iter().for_each(|&x| running.push(x));
        running
    }

    #[test]
    fn stops_on_quiet_samples_only_after_the_minimums() {
        let rule = Limits::standard(5.0).rule();
        let quiet = vec![100.0; 10];
        assert_eq!(
            rule.verdict(&running(&quiet[..9]), Duration::from_secs(1)),
            None
        );
        assert_eq!(
            rule.verdict(&running(&quiet), Duration::from_millis(100)),
            None
        );
        assert_eq!(
            rule.verdict(&running(&quiet), Duration::from_secs(1)),
            Some(StopReason::Noise)
        );
        let loud: Vec<f64> = (0..20)
            .map(|i| if i % 2 == 0 { 90.0 } else { 110.0 })
            .collect();
        assert_eq!(rule.verdict(&running(&loud), Duration::from_secs(1)), None);
        assert_eq!(
            rule.verdict(&running(&loud), Duration::from_secs(5)),
            Some(StopReason::TimeLimit)
        );
    }

    #[test]
    fn running_noise_is_the_two_pass_noise_even_far_from_zero() {
        // Samples of a GPU time near 1 ms in ns: a naive sum of squares loses these digits.
        let samples: Vec<f64> = (0..10_000).map(|i| 1e6 + f64::from(i % 7) * 0.25).collect();
        let n = samples.len() as f64;
        let mean = samples.iter().sum::<f64>() / n;
        let two_pass =
            (samples.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt() / mean;
        let running = running(&samples);
        assert_eq!(running.count(), 10_000);
        assert!((running.noise().unwrap() / two_pass - 1.0).abs() < 1e-9);
    }

    #[test]
    fn kept_samples_stay_under_the_cap_and_spread_over_the_whole_run() {
        let mut kept = Kept::new(8);
        (0..50u64).for_each(|i| kept.push(i));
        assert_eq!(kept.seen(), 50);
        // Every 8th item once 8 were kept twice over: the first and the latest stride's.
        assert_eq!(kept.items(), &[0, 8, 16, 24, 32, 40, 48]);
        let mut few = Kept::new(KEPT_SAMPLES);
        (0..5u64).for_each(|i| few.push(i));
        assert_eq!(few.into_items(), vec![0, 1, 2, 3, 4]);
    }

    proptest! {
        #[test]
        fn kept_items_are_evenly_spaced_and_capped(cap in 2usize..64, len in 0u64..5000) {
            let mut kept = Kept::new(cap);
            (0..len).for_each(|i| kept.push(i));
            let items = kept.items();
            prop_assert!(items.len() <= cap);
            prop_assert_eq!(kept.seen(), len);
            if len > 0 {
                prop_assert_eq!(items[0], 0);
                // Evenly spaced, and the gap is at most twice what the cap allows.
                let gap = items.get(1).map_or(1, |second| second - items[0]);
                prop_assert!(items.windows(2).all(|w| w[1] - w[0] == gap));
                prop_assert!(len - 1 - items[items.len() - 1] < gap);
                if len >= cap as u64 {
                    prop_assert!(items.len() >= cap / 2);
                }
            }
        }

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
            prop_assert!(rule.verdict(&running(&samples), Duration::from_secs(2)).is_some());
        }
    }
}
