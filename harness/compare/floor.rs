//! Each benchmark's noise floor on a host, learned from history: the earlier bench runs under
//! `--results` of the same build and environment (host, stackbench, GPU and its memory clock,
//! driver, the combination's library versions, `--quick` or not, clocks locked or not) as
//! either run compared. The
//! runs of each environment are compared with each other only, so that a driver change between
//! the compared runs is a factor and never noise; their spreads are pooled. From at least
//! [`MIN_RUNS`] runs of one environment (or two of each of two), the spread of the repetitions'
//! log medians is split into the part between runs and the part between one run's repetitions
//! (a nested random-effects model, as Kalibera and Jones do for their levels); each is taken at
//! its 90% upper confidence bound, so that a few runs of history cannot make a floor too
//! narrow. With less history, a GPU figure's floor is learned the same way from the real runs of
//! its GPU model committed under `results/`, across their boots ([`super::reference`]); with
//! none, the stated default of the benchmark's side.

use super::reference::{self, ReferenceRun};
use super::stats::{mean, Floor, FloorSource};
use crate::bench::model::{BenchReport, BenchResult, Side, Status};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Fewest earlier runs a floor is learned from.
pub const MIN_RUNS: usize = 3;
/// The confidence bounds are one-sided 90%: the lower tail's probability.
const LOWER: f64 = 0.10;

/// The earlier runs a comparison learns its floors from.
#[derive(Debug, Clone, Default)]
pub struct History {
    runs: Vec<BenchReport>,
}

/// The same run (a copy of a compared file is no history): the same run id; for files without
/// one (before schema minor 8), the same host and start time.
pub(super) fn same_run(a: &BenchReport, b: &BenchReport) -> bool {
    match (&a.run_id, &b.run_id) {
        (Some(x), Some(y)) => x == y,
        _ => a.host.hostname == b.host.hostname && a.started == b.started,
    }
}

impl History {
    /// History of these runs.
    pub fn of(runs: Vec<BenchReport>) -> History {
        History { runs }
    }

    /// The bench runs among the JSON files directly in `dir`, except the files `compared` and
    /// any copy of their runs; files that are not readable bench runs are passed over.
    pub fn gather(dir: &Path, compared: &[(&Path, &BenchReport)]) -> History {
        let Ok(entries) = crate::hostfs::read_dir(dir) else {
            return History::default();
        };
        let canonical = |p: &Path| crate::hostfs::real_path(p).unwrap_or_else(|_| p.to_path_buf());
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

    /// The floor of `result`'s benchmark (its id, on its GPU) for a comparison of `compared`:
    /// learned from the earlier runs of the compared runs' environments, each environment's
    /// spread taken about its own mean; without enough of them, for a GPU figure, from the
    /// committed real runs of its GPU model (`reference`); else the stated default. History
    /// made on one boot says nothing of the variation across reboots, so when a compared run
    /// was made on another boot its variation between runs is never taken below what spans
    /// reboots: the reference's, else the stated default.
    pub fn floor(
        &self,
        result: &BenchResult,
        compared: &[&BenchReport],
        reference: &[ReferenceRun],
    ) -> Floor {
        let (id, combination) = (&result.id, &result.combination);
        let wanted: BTreeSet<String> = compared
            .iter()
            .filter_map(|r| environment(r, combination))
            .collect();
        let mut environments: BTreeMap<String, Vec<Vec<f64>>> = BTreeMap::new();
        let mut boots: BTreeSet<Option<&str>> = BTreeSet::new();
        for run in &self.runs {
            let Some(environment) = environment(run, combination).filter(|e| wanted.contains(e))
            else {
                continue;
            };
            let Some(result) = (run.benchmarks.iter())
                .find(|b| &b.id == id && b.device_index() == result.device_index())
                .filter(|b| b.status == Status::Measured)
            else {
                continue;
            };
            let logs = result.log_medians();
            if logs.is_empty() {
                continue;
            }
            environments.entry(environment).or_default().push(logs);
            boots.insert(run.host.boot_id.as_deref());
        }
        let groups: Vec<Vec<Vec<f64>>> = environments.into_values().collect();
        let spans_boots = spans_boots(result, compared, reference);
        let Some(floor) = learned(&groups) else {
            return spans_boots;
        };
        let compared_boots: BTreeSet<Option<&str>> =
            compared.iter().map(|r| r.host.boot_id.as_deref()).collect();
        if boots.len() >= 2 || compared_boots.is_subset(&boots) {
            floor
        } else {
            Floor {
                source: FloorSource::HistoryOneBoot,
                between_runs: floor.between_runs.max(spans_boots.between_runs),
                ..floor
            }
        }
    }
}

/// The variation between runs that spans reboots for `result`'s benchmark in a comparison of
/// `compared`: for a GPU figure, the committed real runs' of its GPU model (`reference`), else
/// the stated default of its side.
pub(super) fn spans_boots(
    result: &BenchResult,
    compared: &[&BenchReport],
    reference: &[ReferenceRun],
) -> Floor {
    let model = compared
        .iter()
        .find_map(|run| reference::gpu_model(run, result));
    model
        .filter(|_| result.side == Side::Gpu)
        .and_then(|model| reference::floor(reference, result, model, compared))
        .unwrap_or_else(|| Floor::default_for(result.side))
}

/// The earlier runs of each compared run's own environment, when the two differ (a driver
/// upgrade): each side's runs as the figures of `result`'s benchmark (its repetitions' mean log
/// median), and whether all of one side's runs were made on one boot.
pub struct Sides {
    pub old: Vec<f64>,
    pub new: Vec<f64>,
    pub one_boot: bool,
}

impl History {
    /// The runs of each side's environment (the compared runs among them) for `result`'s
    /// benchmark, when the compared runs' environments differ and each has at least two earlier
    /// runs: a driver change with history on both sides is judged on all of them, not on one
    /// run against one other held to their spread.
    pub fn sides(
        &self,
        result: &BenchResult,
        (old, old_result): (&BenchReport, &BenchResult),
        (new, new_result): (&BenchReport, &BenchResult),
    ) -> Option<Sides> {
        let combination = &result.combination;
        let (old_env, new_env) = (
            environment(old, combination)?,
            environment(new, combination)?,
        );
        if old_env == new_env {
            return None;
        }
        let side = |wanted: &str, compared: (&BenchReport, &BenchResult)| {
            let mut figures = vec![compared.1.log_figure()?];
            let mut boots = BTreeSet::from([compared.0.host.boot_id.clone()]);
            for run in &self.runs {
                if environment(run, combination).as_deref() != Some(wanted) {
                    continue;
                }
                let found = (run.benchmarks.iter())
                    .find(|b| b.id == result.id && b.device_index() == result.device_index())
                    .filter(|b| b.status == Status::Measured)
                    .and_then(BenchResult::log_figure);
                if let Some(f) = found {
                    figures.push(f);
                    boots.insert(run.host.boot_id.clone());
                }
            }
            (figures.len() >= MIN_RUNS)
                .then_some((figures, boots.len() < 2 || boots.contains(&None)))
        };
        let ((old, old_one_boot), (new, new_one_boot)) = (
            side(&old_env, (old, old_result))?,
            side(&new_env, (new, new_result))?,
        );
        Some(Sides {
            old,
            new,
            one_boot: old_one_boot || new_one_boot,
        })
    }
}

/// What a run of `combination` was made on and with, as one comparable string; `None` when the
/// run has no such combination.
fn environment(run: &BenchReport, combination: &str) -> Option<String> {
    let c = run.combinations.iter().find(|c| c.name == combination)?;
    let gpus: Vec<(&str, Option<u32>)> = (run.gpu.devices.iter())
        .map(|d| (d.name.as_str(), d.memory_clock_mhz))
        .collect();
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
            crate::bench::clocks::setting(&run.clocks_locked),
        )
    ))
}

/// The chi-square distribution's quantile at probability `p` for `df` degrees of freedom.
fn chi_square(df: f64, p: f64) -> f64 {
    use statrs::distribution::{ChiSquared, ContinuousCDF};
    ChiSquared::new(df.max(f64::MIN_POSITIVE))
        .map_or(f64::MIN_POSITIVE, |c| c.inverse_cdf(p))
        .max(f64::MIN_POSITIVE)
}

/// A variance estimate with `df` degrees of freedom at its 90% upper confidence bound.
fn upper(variance: f64, df: f64) -> f64 {
    variance * df / chi_square(df, LOWER)
}

/// The 90% upper confidence bound of the variance component `s1 - c s2` (the between-run
/// variance: the run means' variance `s1`, on `df1` degrees of freedom, less the part `c s2`
/// their repetitions explain, `s2` on `df2`), by Graybill and Wang's modified large-sample
/// method ("Confidence intervals on nonnegative linear combinations of variances", JASA 1980).
/// Its square-root term keeps it above the point estimate, so a point estimate below 0 (run
/// means that agree better than their repetitions would have them) still bounds the variation
/// above 0, as it must: a few runs that happened to agree do not show that runs never differ.
/// Only where the means agree so closely that even the bound is below 0 is it taken as 0, and
/// the interval is then the repetitions' alone.
fn upper_between(s1: f64, df1: f64, s2: f64, df2: f64, c: f64) -> f64 {
    let h1 = df1 / chi_square(df1, LOWER) - 1.0;
    let g2 = 1.0 - df2 / chi_square(df2, 1.0 - LOWER);
    let point = s1 - c * s2;
    (point + ((h1 * s1).powi(2) + (g2 * c * s2).powi(2)).sqrt()).max(0.0)
}

/// The floor learned from earlier runs, grouped by environment: each run as its repetitions'
/// log medians. Run means are compared only with the runs of their own environment (a driver
/// change is a factor, never noise) and the spreads pooled; `None` with fewer degrees of
/// freedom between runs than [`MIN_RUNS`] runs of one environment give.
pub(super) fn learned(environments: &[Vec<Vec<f64>>]) -> Option<Floor> {
    let runs: Vec<&Vec<f64>> = environments.iter().flatten().collect();
    let used = environments.iter().filter(|e| !e.is_empty()).count();
    let df_between = runs.len().checked_sub(used)?;
    if df_between + 1 < MIN_RUNS {
        return None;
    }
    let squares_between: f64 = environments
        .iter()
        .filter(|e| !e.is_empty())
        .map(|environment| {
            let means: Vec<f64> = environment.iter().map(|r| mean(r)).collect();
            let centre = mean(&means);
            means.iter().map(|m| (m - centre).powi(2)).sum::<f64>()
        })
        .sum();
    let s1 = squares_between / df_between as f64;
    let df_within: usize = runs.iter().map(|r| r.len() - 1).sum();
    let squares_within: f64 = runs
        .iter()
        .map(|r| {
            let m = mean(r);
            r.iter().map(|x| (x - m).powi(2)).sum::<f64>()
        })
        .sum();
    let (between_runs, between_repetitions) = if df_within >= 2 {
        let s2 = squares_within / df_within as f64;
        let c = runs.iter().map(|r| 1.0 / r.len() as f64).sum::<f64>() / runs.len() as f64;
        (
            upper_between(s1, df_between as f64, s2, df_within as f64, c),
            upper(s2, df_within as f64),
        )
    } else {
        // Runs of one repetition each: all their spread counts as between runs.
        (upper(s1, df_between as f64), 0.0)
    };
    Some(Floor {
        source: FloorSource::History,
        between_runs: between_runs.sqrt(),
        between_repetitions: between_repetitions.sqrt(),
        runs: runs.len(),
        boots: 0,
        cited: Vec::new(),
        learned_on: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::model::Side;

    /// Runs whose repetitions lie at `mean` ± `spread`.
    fn runs(means: &[f64], spread: f64) -> Vec<Vec<f64>> {
        means
            .iter()
            .map(|&m| vec![m - spread, m, m + spread])
            .collect()
    }

    #[test]
    fn too_little_history_learns_nothing() {
        assert_eq!(learned(&[vec![vec![0.0], vec![0.1]]]), None);
        // Two environments of two runs have two degrees of freedom between runs: enough.
        let two = runs(&[0.0, 0.01], 0.001);
        assert!(learned(&[two.clone(), two]).is_some());
    }

    #[test]
    fn spread_splits_into_between_runs_and_between_repetitions() {
        // Runs whose means differ by about 10% and whose repetitions agree within 1%.
        let groups = runs(&[0.0, 0.1, -0.1, 0.05, -0.05], 0.01);
        let floor = learned(&[groups]).unwrap();
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
    fn a_driver_change_is_a_factor_never_noise() {
        // Three runs on each driver, 8% apart, each driver's runs within 0.5% of each other.
        let old = runs(&[0.0, 0.004, -0.004], 0.003);
        let new = runs(&[0.077, 0.081, 0.073], 0.003);
        let apart = learned(&[old.clone(), new.clone()]).unwrap();
        assert!(apart.between_runs < 0.02, "{apart:?}");
        // Pooled into one spread, the change itself reads as variation between runs.
        let pooled = learned(&[[old, new].concat()]).unwrap();
        assert!(pooled.between_runs > 0.04, "{pooled:?}");
    }

    #[test]
    fn runs_that_happened_to_agree_still_bound_the_variation_between_runs_above_zero() {
        // The run means agree better than their repetitions would have them: the point
        // estimate of the variation between runs is below 0, yet three runs cannot show that
        // runs never differ.
        let groups = runs(&[0.0, 0.004, -0.004], 0.01);
        let floor = learned(&[groups]).unwrap();
        assert!(floor.between_runs > 0.008, "{floor:?}");
    }

    #[test]
    fn runs_started_in_one_second_are_two_runs_and_a_copy_is_one() {
        let mut a = run_on("boot", 0, [1.0, 1.0, 1.0]);
        let mut b = a.clone();
        a.run_id = Some("a".into());
        b.run_id = Some("b".into());
        assert!(!same_run(&a, &b), "two runs started in one second");
        assert!(same_run(&a, &a.clone()), "a copy of one run");
        // Files without an id are known by their host and start time.
        b.run_id = None;
        assert!(same_run(&a, &b));
        b.started = "2026-01-01T00:01:00Z".into();
        assert!(!same_run(&a, &b));
    }

    /// A GPU run on boot `boot`, started at minute `minute`, its three repetitions at `medians`.
    fn run_on(boot: &str, minute: u32, medians: [f64; 3]) -> BenchReport {
        let mut run = BenchReport::of_repetitions(
            &format!("2026-01-01T00:{minute:02}:00Z"),
            Side::Gpu,
            &medians,
        );
        run.host.boot_id = Some(boot.into());
        run
    }

    #[test]
    fn history_of_one_boot_is_not_taken_to_span_a_reboot() {
        // Three quiet runs, all on boot a: they learn a floor below the stated default.
        let quiet = |boot: &str, minute| run_on(boot, minute, [100.0, 100.2, 99.8]);
        let history = History::of(vec![quiet("a", 1), quiet("a", 2), quiet("a", 3)]);
        let floor = |old: &BenchReport, new: &BenchReport| {
            history.floor(&old.benchmarks[0], &[old, new], &[])
        };
        let default = Floor::default_for(Side::Gpu).between_runs;
        let same_boot = floor(&quiet("a", 10), &quiet("a", 11));
        assert_eq!(same_boot.source, FloorSource::History);
        assert!(same_boot.between_runs < default, "{same_boot:?}");
        // A run after a reboot: the floor is held to the default between runs, and says so.
        let rebooted = floor(&quiet("a", 10), &quiet("b", 11));
        assert_eq!(rebooted.source, FloorSource::HistoryOneBoot);
        assert_eq!(rebooted.between_runs, default);
        assert_eq!(rebooted.between_repetitions, same_boot.between_repetitions);
        // History that spans boots speaks for reboots.
        let spanning = History::of(vec![quiet("a", 1), quiet("b", 2), quiet("c", 3)]);
        let old = quiet("a", 10);
        let new = quiet("d", 11);
        let learned = spanning.floor(&old.benchmarks[0], &[&old, &new], &[]);
        assert_eq!(learned.source, FloorSource::History);
    }

    #[test]
    fn a_driver_change_with_history_on_both_sides_is_judged_on_every_run() {
        let on = |driver: &str, boot: &str, minute, at: f64| {
            let mut run = run_on(boot, minute, [at, at * 1.002, at * 0.998]);
            run.gpu.driver_version = Some(driver.into());
            run
        };
        // Two earlier runs on each driver, each on its own boot, the new driver 8% slower.
        let history = History::of(vec![
            on("570", "a", 1, 100.4),
            on("570", "b", 2, 99.6),
            on("580", "c", 3, 108.3),
            on("580", "d", 4, 107.7),
        ]);
        let (old, new) = (on("570", "e", 5, 100.0), on("580", "f", 6, 108.0));
        let (o, n) = (&old.benchmarks[0], &new.benchmarks[0]);
        let sides = history.sides(n, (&old, o), (&new, n)).expect("both sides");
        assert_eq!(
            (sides.old.len(), sides.new.len(), sides.one_boot),
            (3, 3, false)
        );
        let e = super::super::stats::estimate_runs(&sides.old, &sides.new, None).unwrap();
        assert!(e.ratio.low > 1.05 && e.ratio.high < 1.11, "{e:?}");
        // One earlier run a side is too few; one environment is no driver change.
        let thin = History::of(vec![on("570", "a", 1, 100.4), on("580", "c", 3, 108.3)]);
        assert!(thin.sides(n, (&old, o), (&new, n)).is_none());
        let same = on("570", "g", 7, 100.1);
        assert!(history
            .sides(n, (&old, o), (&same, &same.benchmarks[0]))
            .is_none());
    }

    #[test]
    fn runs_of_one_repetition_count_their_spread_between_runs() {
        let groups = vec![vec![0.0], vec![0.02], vec![-0.02], vec![0.0]];
        let floor = learned(&[groups]).unwrap();
        assert_eq!(floor.between_repetitions, 0.0);
        // The sample deviation is about 0.016; its 90% upper bound on three degrees of freedom
        // is a little over twice that.
        assert!(
            floor.between_runs > 0.03 && floor.between_runs < 0.05,
            "{floor:?}"
        );
    }

    #[test]
    fn the_chi_square_quantiles_are_the_tables_even_at_one_degree_of_freedom() {
        // The printed 10% and 90% quantiles; at one and two degrees of freedom, where a boot
        // floor's few boots leave it, Wilson and Hilferty's approximation was 8% off.
        for (df, low, high) in [
            (1.0, 0.015_79, 2.7055),
            (2.0, 0.2107, 4.6052),
            (4.0, 1.0636, 7.7794),
            (10.0, 4.8652, 15.987),
            (30.0, 20.599, 40.256),
        ] {
            let (l, h) = (chi_square(df, LOWER), chi_square(df, 1.0 - LOWER));
            assert!((l / low - 1.0).abs() < 1e-3, "{df}: {l} vs {low}");
            assert!((h / high - 1.0).abs() < 1e-3, "{df}: {h} vs {high}");
        }
    }
}
