//! Each benchmark's noise floor on a host, learned from history: the earlier bench runs under
//! `--results` of the same build and environment (host, stackbench, GPU and driver, the
//! combination's library versions, `--quick` or not) as either run compared. From at least
//! [`MIN_RUNS`] such runs, the spread of their repetitions' log medians is split into the part
//! between runs and the part between one run's repetitions (a one-way random-effects model, as
//! Kalibera and Jones do for their levels); each is taken at its 90% upper confidence bound, so
//! that a few runs of history cannot make a floor too narrow. With less history, the stated
//! default of the benchmark's side.

use super::stats::{Floor, FloorSource};
use crate::bench::model::{BenchReport, Side, Status};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Fewest earlier runs a floor is learned from.
pub const MIN_RUNS: usize = 3;
/// The standard normal's 10% quantile: the confidence bounds are one-sided 90%.
const Z10: f64 = -1.281_552;

/// The earlier runs a comparison learns its floors from.
#[derive(Debug, Clone, Default)]
pub struct History {
    runs: Vec<BenchReport>,
}

/// The same run: the same host and start time (a copy of a compared file is no history).
fn same_run(a: &BenchReport, b: &BenchReport) -> bool {
    a.host.hostname == b.host.hostname && a.started == b.started
}

impl History {
    /// History of these runs.
    pub fn of(runs: Vec<BenchReport>) -> History {
        History { runs }
    }

    /// The bench runs among the JSON files directly in `dir`, except the files `compared` and
    /// any copy of their runs; files that are not readable bench runs are passed over.
    pub fn gather(dir: &Path, compared: &[(&Path, &BenchReport)]) -> History {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return History::default();
        };
        let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        let skip: BTreeSet<PathBuf> = compared.iter().map(|(p, _)| canonical(p)).collect();
        let mut paths: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .filter(|p| !skip.contains(&canonical(p)))
            .collect();
        paths.sort();
        let runs = paths
            .iter()
            .filter_map(|p| match super::load::read(p) {
                Ok(super::load::Run::Bench(run)) => Some(run),
                _ => None,
            })
            .filter(|run| !compared.iter().any(|(_, c)| same_run(run, c)))
            .collect();
        History { runs }
    }

    /// The floor of benchmark `id` (of `combination`, on `side`) for a comparison of `compared`.
    pub fn floor(
        &self,
        id: &str,
        combination: &str,
        side: Side,
        compared: &[&BenchReport],
    ) -> Floor {
        let wanted: BTreeSet<String> = compared
            .iter()
            .filter_map(|r| environment(r, combination))
            .collect();
        let groups: Vec<Vec<f64>> = self
            .runs
            .iter()
            .filter(|run| environment(run, combination).is_some_and(|e| wanted.contains(&e)))
            .filter_map(|run| run.benchmarks.iter().find(|b| b.id == id))
            .filter(|b| b.status == Status::Measured)
            .map(|b| {
                b.repetition_medians()
                    .into_iter()
                    .filter(|m| *m > 0.0 && m.is_finite())
                    .map(f64::ln)
                    .collect::<Vec<f64>>()
            })
            .filter(|logs| !logs.is_empty())
            .collect();
        learned(&groups).unwrap_or_else(|| Floor::default_for(side))
    }
}

/// What a run of `combination` was made on and with, as one comparable string; `None` when the
/// run has no such combination.
fn environment(run: &BenchReport, combination: &str) -> Option<String> {
    let c = run.combinations.iter().find(|c| c.name == combination)?;
    let gpus: Vec<&str> = run.gpu.devices.iter().map(|d| d.name.as_str()).collect();
    Some(format!(
        "{:?}",
        (
            &run.host.hostname,
            &run.host.stackbench_version,
            gpus,
            &run.gpu.driver_version,
            run.quick,
            c.simulated,
            &c.driver_cuda_version,
            c.library_versions(),
        )
    ))
}

/// The chi-square distribution's 10% quantile for `df` degrees of freedom (Wilson and
/// Hilferty's approximation).
fn chi_square_10(df: f64) -> f64 {
    let a = 2.0 / (9.0 * df);
    (df * (1.0 - a + Z10 * a.sqrt()).powi(3)).max(f64::MIN_POSITIVE)
}

/// A variance estimate with `df` degrees of freedom at its 90% upper confidence bound.
fn upper(variance: f64, df: f64) -> f64 {
    variance * df / chi_square_10(df)
}

/// The floor learned from each earlier run's repetitions' log medians; `None` for fewer than
/// [`MIN_RUNS`] runs.
fn learned(groups: &[Vec<f64>]) -> Option<Floor> {
    let k = groups.len();
    if k < MIN_RUNS {
        return None;
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let means: Vec<f64> = groups.iter().map(|g| mean(g)).collect();
    let grand = mean(&means);
    let between = means.iter().map(|m| (m - grand).powi(2)).sum::<f64>() / (k - 1) as f64;
    let df_within: usize = groups.iter().map(|g| g.len() - 1).sum();
    let squares: f64 = groups
        .iter()
        .zip(&means)
        .map(|(g, m)| g.iter().map(|x| (x - m).powi(2)).sum::<f64>())
        .sum();
    let (between_runs, between_repetitions) = if df_within >= 2 {
        let within = squares / df_within as f64;
        let per_run = groups.iter().map(|g| 1.0 / g.len() as f64).sum::<f64>() / k as f64;
        (
            upper((between - within * per_run).max(0.0), (k - 1) as f64),
            upper(within, df_within as f64),
        )
    } else {
        // Runs of one repetition each: all their spread counts as between runs.
        (upper(between, (k - 1) as f64), 0.0)
    };
    Some(Floor {
        source: FloorSource::History,
        between_runs: between_runs.sqrt(),
        between_repetitions: between_repetitions.sqrt(),
        runs: k,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn too_little_history_learns_nothing() {
        assert_eq!(learned(&[vec![0.0], vec![0.1]]), None);
    }

    #[test]
    fn spread_splits_into_between_runs_and_between_repetitions() {
        // Runs whose means differ by about 10% and whose repetitions agree within 1%.
        let groups: Vec<Vec<f64>> = [0.0, 0.1, -0.1, 0.05, -0.05]
            .iter()
            .map(|&m| vec![m - 0.01, m, m + 0.01])
            .collect();
        let floor = learned(&groups).unwrap();
        assert_eq!((floor.source, floor.runs), (FloorSource::History, 5));
        assert!(
            floor.between_runs > 0.07 && floor.between_runs < 0.2,
            "{floor:?}"
        );
        assert!(
            floor.between_repetitions > 0.009 && floor.between_repetitions < 0.02,
            "{floor:?}"
        );
    }

    #[test]
    fn runs_of_one_repetition_count_their_spread_between_runs() {
        let groups = vec![vec![0.0], vec![0.02], vec![-0.02], vec![0.0]];
        let floor = learned(&groups).unwrap();
        assert_eq!(floor.between_repetitions, 0.0);
        // The sample deviation is about 0.016; its 90% upper bound on three degrees of freedom
        // is a little over twice that.
        assert!(
            floor.between_runs > 0.03 && floor.between_runs < 0.05,
            "{floor:?}"
        );
    }

    #[test]
    fn the_chi_square_quantile_is_close_to_the_tables() {
        for (df, table) in [(2.0, 0.2107), (4.0, 1.0636), (10.0, 4.8652), (30.0, 20.599)] {
            let got = chi_square_10(df);
            assert!((got / table - 1.0).abs() < 0.08, "{df}: {got} vs {table}");
        }
    }
}
