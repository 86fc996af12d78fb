//! Whether one run of a benchmark is slower than another: the ratio of their figures (new over
//! old, so above 1 is slower) with a 99% interval that carries the variation between runs, and
//! the verdict that needs evidence both ways (GUIDE.md section 7).
//!
//! A run's figure is the geometric mean of its repetitions' medians (the median, for one
//! repetition). The interval is a two-level bootstrap (Kalibera and Jones, "Rigorous
//! benchmarking in reasonable time", 2013): resample the repetitions, then each picked
//! repetition's samples. A bootstrap of a few repetitions is too narrow, so its spread is
//! widened by the small-sample factor `sqrt(R/(R-1)) t/z`. The [`Floor`] then adds what no pair
//! of runs shows by itself (learned from the history of the host, or a stated default): the
//! variation between runs, independent of the repetitions' and so added in quadrature; and the
//! variation between repetitions, which the bootstrap measures too, so the interval is never
//! narrower than it.

use crate::bench::model::Side;
use crate::figures::median;
use serde::{Deserialize, Serialize};

/// Level-one resamples (of repetitions) per comparison.
const RESAMPLES: usize = 4000;
/// Level-two resamples (of samples) kept per repetition, drawn from by every level-one resample.
const WITHIN: usize = 128;
/// The normal quantile of the interval's upper tail: 99% two-sided.
pub const Z99: f64 = 2.575_829;
/// The interval's tail probability on each side.
const TAIL: f64 = 0.005;

/// A benchmark's verdict. The interval says what changed, the threshold what matters: a change
/// the interval shows but within the threshold is reported as such, never as `same`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The whole interval lies above 1 + threshold.
    Slower,
    /// The whole interval lies below 1 - threshold.
    Faster,
    /// The whole interval lies above 1 but reaches within the threshold: a change shown, too
    /// small to be sure it matters.
    SlowerBelowThreshold,
    /// The whole interval lies below 1 but reaches within the threshold.
    FasterBelowThreshold,
    /// The interval holds 1 and lies within 1 ± threshold: shown to be the same (an
    /// equivalence test).
    Same,
    /// Neither shown: the interval holds 1 and reaches across a threshold.
    Unclear,
}

impl Verdict {
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Slower => "slower",
            Verdict::Faster => "faster",
            Verdict::SlowerBelowThreshold => "slower, below threshold",
            Verdict::FasterBelowThreshold => "faster, below threshold",
            Verdict::Same => "same",
            Verdict::Unclear => "unclear",
        }
    }

    /// The way the verdict shows a change: 1 slower, -1 faster, 0 neither.
    fn direction(self) -> i8 {
        match self {
            Verdict::Slower | Verdict::SlowerBelowThreshold => 1,
            Verdict::Faster | Verdict::FasterBelowThreshold => -1,
            Verdict::Same | Verdict::Unclear => 0,
        }
    }

    /// Whether the row's verdict in cycles confirms this verdict in time, as nvbench's robust
    /// compare confirms a gap on a kernel whose clock moved: a change in time counts only where
    /// the cycles show it the same way; no change needs no confirming.
    pub fn confirmed_by(self, cycles: Verdict) -> bool {
        self.direction() == 0 || self.direction() == cycles.direction()
    }
}

/// The least threshold a row takes from its evidence: nvbench's robust compare needs a 0.5% gap
/// before it calls a change, and no floor learned from a few runs is trusted finer.
pub const MIN_THRESHOLD: f64 = 0.005;

/// The most: the threshold stackbench used for every row before it took them from the
/// evidence. A row whose floor is wider is not excused a larger change: its interval is wider,
/// and it is `unclear` instead.
pub const MAX_THRESHOLD: f64 = 0.02;

/// A row's threshold from its evidence: the smallest change the floor's variation between runs
/// lets it call (a change that size, with an interval as wide as that variation alone makes it,
/// excludes no change), within [`MIN_THRESHOLD`] and [`MAX_THRESHOLD`]. The variation between
/// runs is what no number of repetitions narrows: a smaller change than it does not matter on
/// this card. A stated default is no evidence: its rows take [`MAX_THRESHOLD`].
pub fn evidence_threshold(floor: &Floor) -> f64 {
    if floor.source == FloorSource::Default {
        return MAX_THRESHOLD;
    }
    floor
        .between_runs_half_width()
        .exp_m1()
        .clamp(MIN_THRESHOLD, MAX_THRESHOLD)
}

/// New figure over old, with its 99% interval.
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
        // An interval exactly as wide as the threshold's evidence is within it, whatever the
        // last bit of the arithmetic says.
        let within = |x: f64, bound: f64| (x / bound).ln().abs() < 1e-12;
        if self.low > up && !within(self.low, up) {
            Verdict::Slower
        } else if self.high < down && !within(self.high, down) {
            Verdict::Faster
        } else if self.low > 1.0 {
            Verdict::SlowerBelowThreshold
        } else if self.high < 1.0 {
            Verdict::FasterBelowThreshold
        } else if (self.low >= down || within(self.low, down))
            && (self.high <= up || within(self.high, up))
        {
            Verdict::Same
        } else {
            Verdict::Unclear
        }
    }
}

/// Where a noise floor came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FloorSource {
    /// Earlier runs of the same build and environment on this host (`--results`).
    History,
    /// History made on one boot, compared runs made on another: learned, but the variation
    /// between runs held to at least what spans reboots (the reference's, else the stated
    /// default).
    HistoryOneBoot,
    /// Too little history: learned from the real runs of the GPU model committed under
    /// `results/`, across their boots ([`super::reference`]), each file cited.
    Reference,
    /// Too little history and no reference: stackbench's stated default for the benchmark's
    /// side.
    Default,
}

/// The variation between runs of one benchmark on one host, as relative standard deviations
/// of log figures, that an interval is never narrower than.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Floor {
    pub source: FloorSource,
    /// Between runs (separate `bench` commands, minutes apart): what no pair of runs shows.
    pub between_runs: f64,
    /// Between the repetitions of one run: counted from history, or for a side with one
    /// repetition (whose runs cannot show it).
    pub between_repetitions: f64,
    /// The earlier runs it was learned from (0 for the default).
    #[serde(default)]
    pub runs: usize,
    /// The boots those runs were made on (a reference floor's; absent otherwise).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub boots: usize,
    /// The committed files a reference floor was learned from (`results/bench-....json`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cited: Vec<String>,
    /// What a reference floor applies to, as it was learned: the GPU model, driver and clock
    /// state, and the benchmark kinds whose variation between boots it pooled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub learned_on: Option<String>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// The stated default variation between runs of GPU figures from CUDA events, as a relative
/// standard deviation: what separate `bench` commands on one card differ by beyond their
/// repetitions (clocks, temperature, page placement, reboots). Run-to-run spreads of 1-3% on
/// one card are common for bandwidth tests, and nvbench's maintainers report identical runs
/// called SLOW or FAST (NVIDIA/nvbench#316); GUIDE.md section 7 asks for a stated 1-2%, and
/// this is its middle. History on the host replaces it with the host's own.
pub const GPU_BETWEEN_RUNS: f64 = 0.015;

impl Floor {
    /// The stated default: CPU-side figures (compilation, library loading) move 15% between
    /// runs and 10% between repetitions on a shared host (this project's 2-core VM, shared with
    /// other builds, showed NVRTC compile medians 20-55% apart a minute apart); GPU figures
    /// [`GPU_BETWEEN_RUNS`] between runs and 2% between repetitions when a side has only one.
    pub fn default_for(side: Side) -> Floor {
        let (between_runs, between_repetitions) = match side {
            Side::Cpu => (0.15, 0.10),
            Side::Gpu => (GPU_BETWEEN_RUNS, 0.02),
        };
        Floor {
            source: FloorSource::Default,
            between_runs,
            between_repetitions,
            runs: 0,
            boots: 0,
            cited: Vec::new(),
            learned_on: None,
        }
    }

    /// Where the floor came from and what it is, in words.
    pub fn words(&self) -> String {
        let source = match self.source {
            FloorSource::History => format!("learned from {} earlier runs", self.runs),
            FloorSource::HistoryOneBoot => format!(
                "learned from {} earlier runs on one boot, at least what spans reboots between \
                 runs for a run made on another",
                self.runs
            ),
            FloorSource::Reference => format!(
                "learned from {} committed real runs on {} boots{}",
                self.runs,
                self.boots,
                self.learned_on
                    .as_deref()
                    .map(|on| format!(" ({on})"))
                    .unwrap_or_default()
            ),
            FloorSource::Default => "stated default".to_owned(),
        };
        format!(
            "{source}: {:.1}% between runs, {:.1}% between repetitions",
            100.0 * self.between_runs,
            100.0 * self.between_repetitions
        )
    }

    /// The half-width of the log ratio's 99% interval that the variation between runs alone
    /// gives: one run's worth on each side.
    pub fn between_runs_half_width(&self) -> f64 {
        Z99 * (2.0 * self.between_runs.powi(2)).sqrt()
    }

    /// The half-width that the variation between repetitions gives `old` and `new` of them,
    /// when the floor speaks for it: learned from history, or for a side of one repetition
    /// (which cannot show it); 0 otherwise.
    pub fn repetitions_half_width(&self, old: usize, new: usize) -> f64 {
        let (old, new) = (old.max(1) as f64, new.max(1) as f64);
        if self.source == FloorSource::Default && old.min(new) >= 2.0 {
            return 0.0;
        }
        Z99 * (self.between_repetitions.powi(2) * (1.0 / old + 1.0 / new)).sqrt()
    }

    /// The half-width of an interval whose own (bootstrap) half-width is `own`, for `old` and
    /// `new` repetitions: at least the repetitions' floor, then the variation between runs
    /// added in quadrature.
    pub fn widen(&self, own: f64, old: usize, new: usize) -> f64 {
        own.max(self.repetitions_half_width(old, new))
            .hypot(self.between_runs_half_width())
    }
}

/// The ratio of a comparison, and whether the floor, more than the runs' own variation, set its
/// interval (on either side).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    pub ratio: Ratio,
    pub floor_set: bool,
    /// Each side's figure, ns: the geometric mean of its repetitions' medians.
    pub figures: (f64, f64),
}

/// The mean of `values`; `values` must not be empty.
pub(crate) fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

/// Fewest nodes a side of a fleet comparison needs: its median's interval comes from the
/// spread between its nodes.
pub const MIN_NODES: usize = 3;

/// Resamples of a fleet comparison's bootstrap.
const NODE_RESAMPLES: usize = 2000;

/// The shift between two groups' medians, `old` and `new` being one log figure per node (the
/// nodes are the replicates): new over old, with a 99% percentile-bootstrap interval over the
/// nodes of each group (fixed seed, so the same store gives the same interval). `None` when a
/// group has fewer than [`MIN_NODES`].
pub fn median_shift(old: &[f64], new: &[f64]) -> Option<Ratio> {
    if old.len() < MIN_NODES || new.len() < MIN_NODES {
        return None;
    }
    let point = median(&mut new.to_vec()) - median(&mut old.to_vec());
    let mut random = Random(0x5EED_F1EE7);
    let mut resample = |values: &[f64], scratch: &mut Vec<f64>| {
        scratch.clear();
        scratch.extend((0..values.len()).map(|_| values[random.below(values.len())]));
        median(scratch)
    };
    let (mut a, mut b) = (Vec::with_capacity(old.len()), Vec::with_capacity(new.len()));
    let mut shifts: Vec<f64> = (0..NODE_RESAMPLES)
        .map(|_| resample(new, &mut b) - resample(old, &mut a))
        .collect();
    shifts.sort_by(f64::total_cmp);
    let at = |q: f64| nearest_quantile(&shifts, q);
    Some(Ratio {
        ratio: point.exp(),
        low: at(TAIL).exp().min(point.exp()),
        high: at(1.0 - TAIL).exp().max(point.exp()),
    })
}

/// The `q` quantile of `sorted` (ascending, not empty) by the nearest rank.
pub fn nearest_quantile(sorted: &[f64], q: f64) -> f64 {
    sorted[((q * (sorted.len() - 1) as f64).round() as usize).min(sorted.len() - 1)]
}

/// SplitMix64: a fixed seed, so the same two runs always get the same interval.
struct Random(u64);

impl Random {
    /// A uniform index below `n` (`n` > 0).
    fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        ((u128::from(z) * n as u128) >> 64) as usize
    }
}

/// Student's t, two-sided 99% (its upper 0.995 quantile), for `df` degrees of freedom.
fn t99(df: usize) -> f64 {
    use statrs::distribution::{ContinuousCDF, StudentsT};
    StudentsT::new(0.0, 1.0, df.max(1) as f64).map_or(f64::INFINITY, |t| t.inverse_cdf(1.0 - TAIL))
}

/// How much a percentile bootstrap of `old` and `new` repetitions (both at least 2) is widened:
/// `sqrt(m/(m-1))` for the bootstrap's biased variance (m the fewer repetitions), times
/// Student's t over the normal quantile for the repetitions' degrees of freedom.
pub fn small_sample_factor(old: usize, new: usize) -> f64 {
    let fewer = old.min(new) as f64;
    (fewer / (fewer - 1.0)).sqrt() * t99(old + new - 2) / Z99
}

/// `count` bootstrap medians of `sorted` (resampled with replacement), as logs.
fn bootstrap_log_medians(sorted: &[f64], count: usize, random: &mut Random) -> Vec<f64> {
    let n = sorted.len();
    let (a, b) = ((n - 1) / 2, n / 2);
    let mut hits = vec![0u32; n];
    (0..count)
        .map(|_| {
            hits.iter_mut().for_each(|h| *h = 0);
            for _ in 0..n {
                hits[random.below(n)] += 1;
            }
            let (mut seen, mut low, mut high) = (0usize, None, sorted[n - 1]);
            for (value, &h) in sorted.iter().zip(&hits) {
                seen += h as usize;
                if low.is_none() && seen > a {
                    low = Some(*value);
                }
                if seen > b {
                    high = *value;
                    break;
                }
            }
            ((low.unwrap_or(high) + high) / 2.0).ln()
        })
        .collect()
}

/// The log of each repetition's median, and its pool of bootstrap log medians.
struct Side2 {
    logs: Vec<f64>,
    pools: Vec<Vec<f64>>,
}

impl Side2 {
    fn new(repetitions: &[&[f64]], random: &mut Random) -> Option<Side2> {
        let mut logs = Vec::with_capacity(repetitions.len());
        let mut pools = Vec::with_capacity(repetitions.len());
        for samples in repetitions {
            let mut sorted = samples.to_vec();
            let m = median(&mut sorted);
            if m <= 0.0 || !m.is_finite() {
                return None;
            }
            logs.push(m.ln());
            pools.push(bootstrap_log_medians(&sorted, WITHIN, random));
        }
        Some(Side2 { logs, pools })
    }

    /// The log figure: the mean of the repetitions' log medians.
    fn figure(&self) -> f64 {
        self.logs.iter().sum::<f64>() / self.logs.len() as f64
    }

    /// One two-level resample of the log figure.
    fn resample(&self, random: &mut Random) -> f64 {
        let r = self.pools.len();
        let total: f64 = (0..r)
            .map(|_| {
                let pool = &self.pools[random.below(r)];
                pool[random.below(pool.len())]
            })
            .sum();
        total / r as f64
    }
}

/// The ratio of `new`'s figure over `old`'s, each given as its repetitions' kept samples, with
/// its 99% interval held to `floor`; `None` when either side has no samples, a sample that is
/// not finite or a median that is not positive.
pub fn estimate(old: &[&[f64]], new: &[&[f64]], floor: &Floor) -> Option<Estimate> {
    let usable = |side: &[&[f64]]| {
        !side.is_empty()
            && side
                .iter()
                .all(|r| !r.is_empty() && r.iter().all(|x| x.is_finite()))
    };
    if !usable(old) || !usable(new) {
        return None;
    }
    let count = |side: &[&[f64]]| side.iter().map(|r| r.len() as u64).sum::<u64>();
    let mut random = Random(0x5EED ^ (count(old) << 32) ^ count(new) ^ (old.len() as u64) << 56);
    let (a, b) = (Side2::new(old, &mut random)?, Side2::new(new, &mut random)?);
    let point = b.figure() - a.figure();
    let mut differences: Vec<f64> = (0..RESAMPLES)
        .map(|_| b.resample(&mut random) - a.resample(&mut random))
        .collect();
    differences.sort_by(f64::total_cmp);
    let at =
        |q: f64| differences[((q * (RESAMPLES - 1) as f64).round() as usize).min(RESAMPLES - 1)];
    let (r_old, r_new) = (old.len(), new.len());
    let factor = if r_old.min(r_new) >= 2 {
        small_sample_factor(r_old, r_new)
    } else {
        1.0
    };
    let (below, above) = (
        factor * (point - at(TAIL)).max(0.0),
        factor * (at(1.0 - TAIL) - point).max(0.0),
    );
    let (low, high) = (
        floor.widen(below, r_old, r_new),
        floor.widen(above, r_old, r_new),
    );
    // The floor set a side when its share of that side's variance is the larger.
    let set = |own: f64, widened: f64| widened.powi(2) - own.powi(2) > own.powi(2);
    Some(Estimate {
        ratio: Ratio {
            ratio: point.exp(),
            low: (point - low).exp(),
            high: (point + high).exp(),
        },
        floor_set: set(below, low) || set(above, high),
        figures: (a.figure().exp(), b.figure().exp()),
    })
}

/// The ratio of one environment's runs over another's (a driver upgrade with history on both
/// sides), each side its runs' log figures, the compared run among them: the difference of the
/// sides' means with Student's t 99% interval on the runs' pooled spread, `n_old + n_new - 2`
/// degrees of freedom. The runs' spread is the variation between runs itself, measured, so no
/// floor is added, except where a side's runs were all made on one boot (`spans_boots`: the
/// variation between runs that spans reboots, added in quadrature). `None` with fewer than two
/// runs a side.
pub fn estimate_runs(old: &[f64], new: &[f64], spans_boots: Option<&Floor>) -> Option<Estimate> {
    let (n1, n2) = (old.len(), new.len());
    if n1 < 2 || n2 < 2 || old.iter().chain(new).any(|x| !x.is_finite()) {
        return None;
    }
    let squares = |v: &[f64]| {
        let m = mean(v);
        v.iter().map(|x| (x - m).powi(2)).sum::<f64>()
    };
    let (a, b) = (mean(old), mean(new));
    let df = n1 + n2 - 2;
    let pooled = (squares(old) + squares(new)) / df as f64;
    let own = t99(df) * (pooled * (1.0 / n1 as f64 + 1.0 / n2 as f64)).sqrt();
    let half = match spans_boots {
        Some(floor) => own.hypot(floor.between_runs_half_width()),
        None => own,
    };
    let point = b - a;
    Some(Estimate {
        ratio: Ratio {
            ratio: point.exp(),
            low: (point - half).exp(),
            high: (point + half).exp(),
        },
        floor_set: spans_boots.is_some_and(|f| f.between_runs_half_width() > own),
        figures: (a.exp(), b.exp()),
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

    /// `count` repetitions around `centers[i]`.
    fn runs(centers: &[f64], spread: f64, n: usize, seed: u64) -> Vec<Vec<f64>> {
        centers
            .iter()
            .enumerate()
            .map(|(i, &c)| samples(c, spread, n, seed + i as u64))
            .collect()
    }

    fn slices(runs: &[Vec<f64>]) -> Vec<&[f64]> {
        runs.iter().map(Vec::as_slice).collect()
    }

    const GPU: Floor = Floor {
        source: FloorSource::Default,
        between_runs: 0.0,
        between_repetitions: 0.02,
        runs: 0,
        boots: 0,
        cited: Vec::new(),
        learned_on: None,
    };

    #[test]
    fn a_three_percent_slowdown_over_five_tight_repetitions_is_slower() {
        let old = runs(&[100.0; 5], 0.01, 200, 1);
        let new = runs(&[103.0; 5], 0.01, 200, 20);
        let e = estimate(&slices(&old), &slices(&new), &GPU).unwrap();
        assert_eq!(e.ratio.verdict(0.02), Verdict::Slower, "{e:?}");
        assert!((e.ratio.ratio - 1.03).abs() < 0.005, "{e:?}");
        let back = estimate(&slices(&new), &slices(&old), &GPU).unwrap();
        assert_eq!(back.ratio.verdict(0.02), Verdict::Faster, "{back:?}");
    }

    #[test]
    fn repetitions_that_disagree_widen_the_interval_beyond_their_samples() {
        // Tight samples in each repetition, but the repetitions 10% apart: one repetition's
        // samples alone would call 1.05 significant; the repetitions say it is not.
        let old = runs(&[95.0, 105.0, 100.0], 0.001, 100, 3);
        let new = runs(&[100.0, 110.0, 105.0], 0.001, 100, 30);
        let e = estimate(&slices(&old), &slices(&new), &GPU).unwrap();
        assert_eq!(e.ratio.verdict(0.02), Verdict::Unclear, "{e:?}");
        assert!(e.ratio.low < 1.0 && e.ratio.high > 1.1, "{e:?}");
    }

    #[test]
    fn same_needs_the_whole_interval_within_the_threshold() {
        let old = runs(&[100.0; 5], 0.01, 200, 5);
        let new = runs(&[100.0; 5], 0.01, 200, 50);
        let e = estimate(&slices(&old), &slices(&new), &GPU).unwrap();
        assert_eq!(e.ratio.verdict(0.02), Verdict::Same, "{e:?}");
        // A 0.5% change the interval shows is that, below a 2% threshold: not sameness.
        let shifted = runs(&[100.5; 5], 0.01, 200, 50);
        let e = estimate(&slices(&old), &slices(&shifted), &GPU).unwrap();
        assert_eq!(
            e.ratio.verdict(0.02),
            Verdict::SlowerBelowThreshold,
            "{e:?}"
        );
        // An interval that holds 1 but reaches past the threshold is no evidence of sameness.
        let wide = Ratio {
            ratio: 1.29,
            low: 0.96,
            high: 1.41,
        };
        assert_eq!(wide.verdict(0.02), Verdict::Unclear);
        let near = Ratio {
            ratio: 1.025,
            low: 0.99,
            high: 1.04,
        };
        assert_eq!(near.verdict(0.02), Verdict::Unclear);
    }

    #[test]
    fn one_repetition_a_side_is_held_to_the_floor_and_says_so() {
        let old = runs(&[100.0], 0.001, 100, 7);
        let new = runs(&[103.0], 0.001, 100, 70);
        let e = estimate(&slices(&old), &slices(&new), &GPU).unwrap();
        assert!(e.floor_set);
        let width = (e.ratio.high / e.ratio.ratio).ln();
        // The documented floor, by hand: 2.576 · sqrt(0.02² · (1/1 + 1/1)) = 0.072856, the
        // repetitions' samples (0.1% apart) adding nothing beside it.
        assert!((width - 0.072_856).abs() < 1e-5, "{width}: {e:?}");
        assert_eq!(e.ratio.verdict(0.02), Verdict::Unclear);
        let cpu = Floor::default_for(Side::Cpu);
        let slow = runs(&[300.0], 0.001, 100, 8);
        let e = estimate(&slices(&old), &slices(&slow), &cpu).unwrap();
        assert_eq!(
            e.ratio.verdict(0.02),
            Verdict::Slower,
            "three times as slow: {e:?}"
        );
    }

    #[test]
    fn the_variation_between_runs_adds_to_the_repetitions_in_quadrature() {
        // Independent sources of variation: their variances add, neither hides the other.
        let old = runs(&[100.0, 102.0, 98.0, 101.0, 99.0], 0.01, 100, 11);
        let new = runs(&[101.0, 99.0, 103.0, 100.0, 102.0], 0.01, 100, 110);
        let width = |floor: &Floor| {
            let e = estimate(&slices(&old), &slices(&new), floor).unwrap();
            (e.ratio.high / e.ratio.ratio).ln()
        };
        let own = width(&GPU);
        let between = Floor {
            between_runs: 0.015,
            ..GPU
        };
        // The documented term, by hand: 2.576 · sqrt(2 · 0.015²) = 0.054642.
        let added = 0.054_642;
        assert!(own > 0.01, "{own}");
        assert!((width(&between) - own.hypot(added)).abs() < 1e-5, "{own}");
    }

    #[test]
    fn the_same_inputs_give_the_same_interval() {
        let old = runs(&[100.0, 101.0, 99.0], 0.05, 50, 9);
        let new = runs(&[102.0, 100.0, 104.0], 0.05, 50, 90);
        let first = estimate(&slices(&old), &slices(&new), &GPU).unwrap();
        let second = estimate(&slices(&old), &slices(&new), &GPU).unwrap();
        assert_eq!(first, second);
    }

    #[test]
    fn the_small_sample_factor_shrinks_towards_one() {
        let three = small_sample_factor(3, 3);
        let five = small_sample_factor(5, 5);
        let many = small_sample_factor(100, 100);
        assert!(
            three > five && five > many && many > 1.0,
            "{three} {five} {many}"
        );
        assert!((three - 1.5f64.sqrt() * 4.604_095 / Z99).abs() < 1e-6);
    }

    #[test]
    fn student_s_t_is_exact_where_the_tables_are_coarsest() {
        // The printed two-sided 99% table (upper 0.995 quantile), to its three decimals.
        for (df, table) in [(1, 63.657), (2, 9.925), (3, 5.841), (5, 4.032), (30, 2.750)] {
            assert!((t99(df) - table).abs() < 5e-4, "{df}: {}", t99(df));
        }
    }

    #[test]
    fn a_change_the_interval_shows_within_the_threshold_is_never_same() {
        let at = |low: f64, high: f64| Ratio {
            ratio: f64::sqrt(low * high),
            low,
            high,
        };
        assert_eq!(
            at(1.005, 1.015).verdict(0.02),
            Verdict::SlowerBelowThreshold
        );
        assert_eq!(
            at(0.985, 0.995).verdict(0.02),
            Verdict::FasterBelowThreshold
        );
        assert_eq!(at(1.021, 1.03).verdict(0.02), Verdict::Slower);
        assert_eq!(at(0.995, 1.015).verdict(0.02), Verdict::Same);
        assert_eq!(at(0.995, 1.025).verdict(0.02), Verdict::Unclear);
        // A change beyond the threshold whose interval reaches back within it is shown, not
        // called beyond it.
        assert_eq!(at(1.01, 1.05).verdict(0.02), Verdict::SlowerBelowThreshold);
    }

    #[test]
    fn the_threshold_from_evidence_is_what_the_floor_lets_a_row_call() {
        let floor = Floor {
            source: FloorSource::Reference,
            between_runs: 0.001,
            between_repetitions: 0.001,
            ..GPU
        };
        let quiet = evidence_threshold(&floor);
        assert_eq!(
            quiet, MIN_THRESHOLD,
            "a floor finer than 0.5% is held to it"
        );
        let between = |between_runs| Floor {
            source: FloorSource::Reference,
            between_runs,
            ..floor.clone()
        };
        // 2.576 · sqrt(2 · 0.0025²) = 0.0091070 in logs: e^0.0091070 - 1.
        let learned = evidence_threshold(&between(0.0025));
        assert!((learned - 0.009_149).abs() < 1e-6, "{learned}");
        assert_eq!(evidence_threshold(&between(0.015)), MAX_THRESHOLD);
        // The stated default is no evidence.
        assert_eq!(
            evidence_threshold(&Floor::default_for(Side::Gpu)),
            MAX_THRESHOLD
        );
        // An A/A interval exactly as wide as that evidence is within it.
        let h = floor.widen(0.0, 5, 5).max(MIN_THRESHOLD.ln_1p());
        let aa = Ratio {
            ratio: 1.0,
            low: (-h).exp(),
            high: h.exp(),
        };
        assert_eq!(aa.verdict(quiet), Verdict::Same);
    }

    #[test]
    fn nothing_to_compare_is_none() {
        let floor = Floor::default_for(Side::Cpu);
        assert_eq!(estimate(&[], &[&[1.0]], &floor), None);
        assert_eq!(estimate(&[&[0.0]], &[&[1.0]], &floor), None);
        assert_eq!(estimate(&[&[1.0, f64::NAN]], &[&[1.0]], &floor), None);
        assert_eq!(estimate(&[&[]], &[&[1.0]], &floor), None);
    }

    proptest! {
        #[test]
        fn a_run_compared_with_itself_is_never_slower_or_faster(
            values in proptest::collection::vec(1.0f64..1e9, 1..60),
            repetitions in 1usize..5,
        ) {
            let side: Vec<&[f64]> = (0..repetitions).map(|_| values.as_slice()).collect();
            let e = estimate(&side, &side, &GPU).unwrap();
            prop_assert!(!matches!(e.ratio.verdict(0.02), Verdict::Slower | Verdict::Faster));
            prop_assert!((e.ratio.ratio - 1.0).abs() < 1e-12);
            prop_assert!(e.ratio.low <= 1.0 && e.ratio.high >= 1.0);
        }

        #[test]
        fn the_interval_holds_the_point_estimate(
            old in proptest::collection::vec(1.0f64..1e6, 2..40),
            new in proptest::collection::vec(1.0f64..1e6, 2..40),
            split in 1usize..3,
        ) {
            let (a, b) = old.split_at(old.len().min(split));
            let e = estimate(&[a, b].into_iter().filter(|s| !s.is_empty()).collect::<Vec<_>>(), &[&new], &GPU).unwrap();
            prop_assert!(e.ratio.low <= e.ratio.ratio && e.ratio.ratio <= e.ratio.high);
        }
    }
}
