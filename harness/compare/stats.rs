//! Whether one set of samples is slower than another: the ratio of their medians (new over
//! old, so above 1 is slower) with a bootstrap confidence interval, and the verdict that needs
//! both significance and size (GUIDE.md section 7).

use serde::{Deserialize, Serialize};

/// Bootstrap resamples per comparison.
const RESAMPLES: usize = 2000;
/// The confidence level of the interval: 99%, so that a page of A/A rows rarely shows a
/// significant difference by chance.
const TAIL: f64 = 0.005;

/// A benchmark's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The whole interval is beyond the threshold, slower.
    Slower,
    /// The whole interval is beyond the threshold, faster.
    Faster,
    /// No significant difference (the interval holds 1), or one wholly within the threshold.
    Same,
    /// A significant difference that may or may not exceed the threshold: measure again.
    Unclear,
}

impl Verdict {
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Slower => "slower",
            Verdict::Faster => "faster",
            Verdict::Same => "same",
            Verdict::Unclear => "unclear",
        }
    }
}

/// New median over old median, with its confidence interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Ratio {
    pub ratio: f64,
    pub low: f64,
    pub high: f64,
}

impl Ratio {
    /// The verdict at `threshold` (0.02 is 2%).
    pub fn verdict(&self, threshold: f64) -> Verdict {
        let (up, down) = (1.0 + threshold, 1.0 - threshold);
        if self.low > up {
            Verdict::Slower
        } else if self.high < down {
            Verdict::Faster
        } else if (self.low <= 1.0 && self.high >= 1.0) || (self.low >= down && self.high <= up) {
            Verdict::Same
        } else {
            Verdict::Unclear
        }
    }
}

/// The median of `values` (sorted in place); `values` must not be empty.
pub(crate) fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// SplitMix64: a fixed seed, so the same two runs always get the same interval.
struct Random(u64);

impl Random {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z % n as u64) as usize
    }
}

/// The ratio of medians of `new` over `old` with a percentile-bootstrap interval; `None` when
/// either has no samples or a median that is not positive.
pub fn ratio_of_medians(old: &[f64], new: &[f64]) -> Option<Ratio> {
    if old.is_empty() || new.is_empty() || old.iter().chain(new).any(|x| !x.is_finite()) {
        return None;
    }
    let (m_old, m_new) = (median(&mut old.to_vec()), median(&mut new.to_vec()));
    if m_old <= 0.0 || m_new <= 0.0 {
        return None;
    }
    let mut random = Random(0x5EED_u64 ^ (old.len() as u64) << 32 ^ new.len() as u64);
    let mut resample = |from: &[f64], into: &mut Vec<f64>| {
        into.clear();
        into.extend((0..from.len()).map(|_| from[random.below(from.len())]));
        median(into)
    };
    let (mut a, mut b) = (Vec::with_capacity(old.len()), Vec::with_capacity(new.len()));
    let mut ratios: Vec<f64> = (0..RESAMPLES)
        .map(|_| resample(new, &mut b) / resample(old, &mut a))
        .collect();
    ratios.sort_by(f64::total_cmp);
    let at = |q: f64| ratios[((q * (RESAMPLES - 1) as f64).round() as usize).min(RESAMPLES - 1)];
    Some(Ratio {
        ratio: m_new / m_old,
        low: at(TAIL),
        high: at(1.0 - TAIL),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Samples around `center` with a relative spread of `spread`, deterministic.
    fn samples(center: f64, spread: f64, n: usize, seed: u64) -> Vec<f64> {
        crate::kernels::random_f32(n, seed)
            .into_iter()
            .map(|u| center * (1.0 + spread * f64::from(u)))
            .collect()
    }

    #[test]
    fn a_clear_slowdown_is_slower_and_a_clear_speedup_faster() {
        let old = samples(100.0, 0.01, 50, 1);
        let slower = ratio_of_medians(&old, &samples(110.0, 0.01, 50, 2)).unwrap();
        assert_eq!(slower.verdict(0.02), Verdict::Slower);
        assert!((slower.ratio - 1.1).abs() < 0.01);
        let faster = ratio_of_medians(&old, &samples(90.0, 0.01, 50, 3)).unwrap();
        assert_eq!(faster.verdict(0.02), Verdict::Faster);
    }

    #[test]
    fn small_or_insignificant_differences_are_the_same() {
        let old = samples(100.0, 0.01, 50, 4);
        // 0.5% slower: significant with this little noise, but within 2%.
        assert_eq!(
            ratio_of_medians(&old, &samples(100.5, 0.01, 50, 5))
                .unwrap()
                .verdict(0.02),
            Verdict::Same
        );
        // Very noisy: no significant difference at all.
        let noisy = ratio_of_medians(&samples(100.0, 0.5, 20, 6), &samples(103.0, 0.5, 20, 7));
        assert_eq!(noisy.unwrap().verdict(0.02), Verdict::Same);
    }

    #[test]
    fn a_significant_change_near_the_threshold_is_unclear() {
        let r = Ratio {
            ratio: 1.025,
            low: 1.01,
            high: 1.04,
        };
        assert_eq!(r.verdict(0.02), Verdict::Unclear);
    }

    #[test]
    fn nothing_to_compare_is_none() {
        assert_eq!(ratio_of_medians(&[], &[1.0]), None);
        assert_eq!(ratio_of_medians(&[0.0], &[1.0]), None);
        assert_eq!(ratio_of_medians(&[1.0, f64::NAN], &[1.0]), None);
    }

    proptest! {
        #[test]
        fn a_run_compared_with_itself_is_the_same(
            values in proptest::collection::vec(1.0f64..1e9, 1..100)
        ) {
            let r = ratio_of_medians(&values, &values).unwrap();
            prop_assert_eq!(r.verdict(0.02), Verdict::Same);
            prop_assert!(r.low <= 1.0 + 1e-12 || r.high >= 1.0);
            prop_assert!((r.ratio - 1.0).abs() < 1e-12);
        }

        #[test]
        fn the_interval_holds_the_point_estimate_order(
            old in proptest::collection::vec(1.0f64..1e6, 2..40),
            new in proptest::collection::vec(1.0f64..1e6, 2..40),
        ) {
            let r = ratio_of_medians(&old, &new).unwrap();
            prop_assert!(r.low <= r.high);
        }
    }
}
