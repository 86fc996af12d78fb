//! The odd one out among peers: a GPU (or a pair of GPUs) whose figure lies beyond a robust
//! bound of its same-model peers.
//!
//! The method, as the reports state it: the median of the peers' figures and their median
//! absolute deviation (MAD, scaled by 1.4826 to estimate a standard deviation); a member is an
//! outlier when it is worse than the median by more than both four such deviations and
//! [`FLOOR`]. The floor is there because identical GPUs still differ by a few percent (clocks,
//! temperature, page placement; fleet studies find same-model GPUs about 8% apart across
//! nodes), and a MAD of near zero would otherwise flag noise. Fewer than [`MIN_PEERS`] members
//! say nothing: with two, neither is the odd one.

/// Relative excess over the median below which nothing is claimed.
pub const FLOOR: f64 = 0.10;
/// Deviations (scaled MAD) beyond the median a member must lie.
pub const DEVIATIONS: f64 = 4.0;
/// The fewest members a median can single one out of.
pub const MIN_PEERS: usize = 3;

/// The method, for reports.
pub const METHOD: &str =
    "worse than the median of its same-model peers by more than 4 scaled MADs and 10%";

/// One member found beyond the bound.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Outlier {
    /// Its position in the figures given.
    pub at: usize,
    /// Its figure over the peers' median: above 1 is worse.
    pub ratio: f64,
}

/// The members whose figure is worse than the bound, `figures` being costs (higher is worse:
/// durations, or seconds per byte for a bandwidth). Non-finite or non-positive figures are
/// left out of the median and never flagged.
pub fn outliers(figures: &[f64]) -> Vec<Outlier> {
    let valid: Vec<f64> = figures
        .iter()
        .copied()
        .filter(|f| f.is_finite() && *f > 0.0)
        .collect();
    if valid.len() < MIN_PEERS {
        return Vec::new();
    }
    let median = crate::figures::median(&mut valid.clone());
    let mut deviations: Vec<f64> = valid.iter().map(|f| (f - median).abs()).collect();
    let sigma = 1.4826 * crate::figures::median(&mut deviations);
    let bound = median * (1.0 + FLOOR).max(1.0 + DEVIATIONS * sigma / median);
    figures
        .iter()
        .enumerate()
        .filter(|(_, f)| f.is_finite() && **f > bound)
        .map(|(at, f)| Outlier {
            at,
            ratio: f / median,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn one_gpu_fifteen_percent_slower_of_eight_is_named_with_its_ratio() {
        let mut figures = vec![1.0, 1.01, 0.99, 1.0, 1.02, 1.0, 0.98, 1.0];
        figures[5] = 1.15;
        let found = outliers(&figures);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].at, 5);
        assert!((found[0].ratio - 1.15).abs() < 0.01, "{found:?}");
    }

    #[test]
    fn faster_members_and_small_differences_are_not_outliers() {
        assert!(outliers(&[1.0, 1.0, 1.0, 0.5]).is_empty());
        assert!(outliers(&[1.0, 1.0, 1.0, 1.08]).is_empty());
    }

    #[test]
    fn two_members_say_nothing() {
        assert!(outliers(&[1.0, 3.0]).is_empty());
        assert!(outliers(&[1.0]).is_empty());
    }

    #[test]
    fn a_spread_out_node_needs_more_than_the_floor() {
        // Peers 20% apart: a member 25% above the median is within four deviations.
        let figures = [0.8, 0.9, 1.0, 1.1, 1.2, 1.25];
        assert!(outliers(&figures).is_empty());
    }

    proptest! {
        #[test]
        fn identical_peers_with_noise_below_the_floor_are_never_flagged(
            noise in proptest::collection::vec(-0.04f64..0.04, 3..16)
        ) {
            let figures: Vec<f64> = noise.iter().map(|n| 1.0 + n).collect();
            prop_assert!(outliers(&figures).is_empty());
        }
    }
}
