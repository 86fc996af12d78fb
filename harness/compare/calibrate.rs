//! `stackbench compare --calibrate FILES...`: bench runs of one build on one host (A/A runs),
//! every pair compared as `compare` would (each pair's floor learned from the other runs), and
//! per benchmark how often a verdict called a change that is not there, the widest change seen,
//! the smallest change a pair could have called, and the smallest `--threshold` with no false
//! verdict: so that a team sets `--threshold` from data.

use super::floor::History;
use super::load::{self, LoadError, Run};
use super::stats::{self, Verdict};
use crate::bench::model::{BenchReport, Side, Status};
use crate::tags::CALIBRATION_SCHEMA;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// What A/A runs say of each benchmark on this host.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CalibrationReport {
    pub schema: String,
    /// The threshold the verdicts were given at (0.02 is 2%), as `--threshold` set it; absent
    /// when each pair's row took its own from its noise floor's evidence, as `compare` does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold: Option<f64>,
    /// The runs, oldest first.
    #[serde(with = "crate::pathname::list")]
    pub files: Vec<PathBuf>,
    /// Pairs of runs compared.
    pub pairs: usize,
    pub benchmarks: Vec<CalibrationRow>,
}

/// One benchmark over every pair of runs that measured it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CalibrationRow {
    pub id: String,
    pub side: Side,
    /// Pairs in which both runs measured it.
    pub pairs: usize,
    pub slower: usize,
    pub faster: usize,
    pub same: usize,
    pub unclear: usize,
    /// `slower, below threshold` and `faster, below threshold`: an interval that excludes no
    /// change, within the threshold.
    #[serde(default)]
    pub below_threshold: usize,
    /// `slower` and `faster` over `pairs`: each one a false verdict, the runs being of one build.
    pub false_verdicts: f64,
    /// The largest |ratio − 1| of any pair.
    pub widest_change: f64,
    /// The median over pairs of the smallest slowdown the pair's interval would have called
    /// `slower` at the threshold.
    pub detectable: f64,
    /// The smallest threshold at which no pair is `slower` or `faster`.
    pub threshold_for_none: f64,
    /// The smallest threshold at which every pair is `same`: the widest reach of an interval.
    pub threshold_for_same: f64,
}

/// Why runs cannot be calibrated from (exit status 2).
#[derive(Debug, thiserror::Error)]
pub enum CalibrateError {
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error("{}: a {kind} result; --calibrate reads bench runs (results/bench-*.json)", path.display())]
    NotBench { path: PathBuf, kind: &'static str },
    #[error("--calibrate needs at least two bench runs of one build; {given} given")]
    TooFew { given: usize },
}

/// The median of `values`, 0 when there are none.
fn median_or_zero(mut values: Vec<f64>) -> f64 {
    if values.is_empty() {
        0.0
    } else {
        crate::figures::median(&mut values)
    }
}

/// Calibrates from the bench runs in `files` at `threshold`, else at each row's threshold from
/// its floor's evidence.
pub fn calibrate(
    files: &[PathBuf],
    threshold: Option<f64>,
) -> Result<CalibrationReport, CalibrateError> {
    let mut runs: Vec<(String, PathBuf, BenchReport)> = Vec::new();
    for path in files {
        match load::read(path)? {
            Run::Bench(run) => runs.push((run.started.clone(), path.clone(), run)),
            other => {
                return Err(CalibrateError::NotBench {
                    path: path.clone(),
                    kind: other.kind(),
                })
            }
        }
    }
    if runs.len() < 2 {
        return Err(CalibrateError::TooFew { given: runs.len() });
    }
    runs.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    let reports: Vec<&BenchReport> = runs.iter().map(|(_, _, r)| r).collect();
    Ok(CalibrationReport {
        schema: CALIBRATION_SCHEMA.to_owned(),
        threshold,
        files: runs.iter().map(|(_, p, _)| p.clone()).collect(),
        pairs: reports.len() * (reports.len() - 1) / 2,
        benchmarks: rows(&reports, threshold),
    })
}

/// Every pair's verdicts, gathered per benchmark.
#[derive(Default)]
struct Tally {
    side: Option<Side>,
    verdicts: Vec<Verdict>,
    changes: Vec<f64>,
    detectable: Vec<f64>,
    threshold_for_none: f64,
    threshold_for_same: f64,
}

/// Each benchmark's tally over every pair of `runs` (older first), in the first run's order;
/// in runs over several GPUs, each benchmark's on each GPU (`... on GPU 3`).
fn rows(runs: &[&BenchReport], threshold: Option<f64>) -> Vec<CalibrationRow> {
    let mut order: Vec<String> = Vec::new();
    let mut tallies: BTreeMap<String, Tally> = BTreeMap::new();
    for (i, old) in runs.iter().enumerate() {
        for (j, new) in runs.iter().enumerate().skip(i + 1) {
            let others: Vec<BenchReport> = runs
                .iter()
                .enumerate()
                .filter(|(k, _)| *k != i && *k != j)
                .map(|(_, r)| (*r).clone())
                .collect();
            let history = History::of(others);
            for n in new
                .benchmarks
                .iter()
                .filter(|b| b.status == Status::Measured)
            {
                let Some(o) = old.benchmarks.iter().find(|b| {
                    b.id == n.id
                        && b.device_index() == n.device_index()
                        && b.status == Status::Measured
                }) else {
                    continue;
                };
                let (Ok(a), Ok(b)) = (o.repetition_samples(), n.repetition_samples()) else {
                    continue;
                };
                let floor = history.floor(n, &[old, new], super::reference::committed());
                let Some(estimate) = stats::estimate(&a, &b, &floor) else {
                    continue;
                };
                let r = estimate.ratio;
                let threshold = threshold.unwrap_or_else(|| stats::evidence_threshold(&floor));
                let label = n.label();
                if !tallies.contains_key(&label) {
                    order.push(label.clone());
                }
                let tally = tallies.entry(label).or_default();
                tally.side = Some(n.side);
                tally.verdicts.push(r.verdict(threshold));
                tally.changes.push((r.ratio - 1.0).abs());
                tally
                    .detectable
                    .push((1.0 + threshold) * r.ratio / r.low - 1.0);
                tally.threshold_for_none =
                    tally.threshold_for_none.max(r.low - 1.0).max(1.0 - r.high);
                tally.threshold_for_same =
                    tally.threshold_for_same.max(r.high - 1.0).max(1.0 - r.low);
            }
        }
    }
    order
        .into_iter()
        .filter_map(|id| {
            let tally = tallies.remove(&id)?;
            let count = |v: Verdict| tally.verdicts.iter().filter(|x| **x == v).count();
            let pairs = tally.verdicts.len();
            let (slower, faster) = (count(Verdict::Slower), count(Verdict::Faster));
            Some(CalibrationRow {
                id,
                side: tally.side?,
                pairs,
                slower,
                faster,
                same: count(Verdict::Same),
                unclear: count(Verdict::Unclear),
                below_threshold: count(Verdict::SlowerBelowThreshold)
                    + count(Verdict::FasterBelowThreshold),
                false_verdicts: (slower + faster) as f64 / pairs.max(1) as f64,
                widest_change: tally.changes.iter().copied().fold(0.0, f64::max),
                detectable: median_or_zero(tally.detectable),
                threshold_for_none: tally.threshold_for_none,
                threshold_for_same: tally.threshold_for_same,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run started at `started` with one CPU benchmark of three repetitions at `medians`.
    fn run(started: &str, medians: [f64; 3]) -> BenchReport {
        BenchReport::of_repetitions(started, Side::Cpu, &medians)
    }

    #[test]
    fn every_pair_is_tallied_and_the_thresholds_cover_the_widest_interval() {
        let runs = [
            run("2026-01-01T00:00:00Z", [100.0, 104.0, 98.0]),
            run("2026-01-01T00:01:00Z", [101.0, 99.0, 103.0]),
            run("2026-01-01T00:02:00Z", [97.0, 102.0, 100.0]),
            run("2026-01-01T00:03:00Z", [103.0, 100.0, 99.0]),
        ];
        let refs: Vec<&BenchReport> = runs.iter().collect();
        let rows = rows(&refs, Some(0.02));
        let [row] = rows.as_slice() else {
            panic!("one benchmark: {rows:?}")
        };
        assert_eq!(row.pairs, 6);
        assert_eq!(row.slower + row.faster + row.same + row.unclear, 6);
        assert_eq!((row.slower, row.faster), (0, 0), "{row:?}");
        assert_eq!(row.false_verdicts, 0.0);
        assert!(
            row.widest_change > 0.0 && row.widest_change < 0.05,
            "{row:?}"
        );
        assert!(row.detectable > 0.02, "{row:?}");
        // Intervals that all hold 1: no threshold makes a pair slower or faster, and only one
        // as wide as the widest interval's reach makes them all the same.
        assert_eq!(row.threshold_for_none, 0.0);
        assert!(row.threshold_for_same > row.widest_change, "{row:?}");
    }

    #[test]
    fn fewer_than_two_runs_or_another_kind_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("one.json");
        let one = run("2026-01-01T00:00:00Z", [1.0, 1.0, 1.0]);
        std::fs::write(&path, serde_json::to_vec(&one).unwrap()).unwrap();
        let error = calibrate(std::slice::from_ref(&path), Some(0.02)).unwrap_err();
        assert!(
            error.to_string().contains("at least two bench runs"),
            "{error}"
        );
        let scan = dir.path().join("scan.json");
        std::fs::write(
            &scan,
            r#"{"schema": "stackbench.scan/v1", "host": {"hostname": "h", "os": "l", "arch": "x", "stackbench_version": "0"}, "searched": [], "installations": [], "problems": []}"#,
        )
        .unwrap();
        let error = calibrate(&[path, scan], Some(0.02)).unwrap_err();
        assert!(
            error.to_string().contains("--calibrate reads bench runs"),
            "{error}"
        );
    }
}
