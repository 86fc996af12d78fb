//! `stackbench compare OLD NEW`: two runs of one kind (bench, check, doctor or scan) side by
//! side. First what changed in the environment (GPU, driver, stackbench, each library's version
//! and path); then, for benchmarks, a verdict per row from the raw samples (a bootstrap interval
//! of the ratio of medians that must be wholly beyond the threshold: significance and size);
//! for checks, what newly fails, what was fixed and what fails for a new reason; for doctor and
//! scan, the findings and libraries that appeared or disappeared.

pub mod calibrate;
mod diff;
pub mod floor;
pub mod load;
pub mod model;
#[cfg(test)]
mod power;
pub mod reference;
pub mod stats;

use crate::tags::COMPARE_SCHEMA;
use load::{LoadError, Run};
use model::{CompareReport, RunInfo};
use serde::{Deserialize, Serialize};
use stats::Verdict;
use std::path::{Path, PathBuf};

/// What counts as a regression (exit status 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum FailOn {
    /// A benchmark slower beyond the threshold.
    Slower,
    /// A benchmark whose change may exceed the threshold.
    Unclear,
    /// A check that passed and now fails, or a benchmark measured before that now fails.
    Failure,
    /// An error finding that was not there before (doctor).
    Finding,
    /// A library that is gone (doctor, scan).
    Library,
    /// A benchmark slower (or unclear, with `unclear`) even where either run measured it on
    /// a disturbed GPU (other processes on it, clocks held back, ECC errors growing); without
    /// it such a row is shown, not counted.
    Disturbed,
}

/// How `compare` judges.
#[derive(Debug, Clone)]
pub struct CompareOptions {
    /// The size a benchmark's change must exceed (0.02 is 2%) on every row; `None` for each
    /// row's own, from its noise floor's evidence.
    pub threshold: Option<f64>,
    /// What counts as a regression.
    pub fail_on: Vec<FailOn>,
    /// Compare runs made on different GPUs.
    pub allow_different_gpus: bool,
    /// Where earlier runs are, to learn each benchmark's noise floor from (`--results`).
    pub history: Option<PathBuf>,
}

/// Why two runs cannot be compared (exit status 2).
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error(transparent)]
    Latest(#[from] load::LatestError),
    #[error("{} is a {old} result and {} a {new} one: compare two runs of the same command", old_path.display(), new_path.display())]
    DifferentKinds {
        old: &'static str,
        new: &'static str,
        old_path: PathBuf,
        new_path: PathBuf,
    },
    #[error("the runs are of different GPUs ({old} and {new}): their figures do not compare; give --allow-different-gpus to compare them anyway")]
    DifferentGpus { old: String, new: String },
}

/// The GPU names of a run, for the same-GPU rule; `None` for runs without a GPU record.
fn gpus(run: &Run) -> Option<String> {
    let gpu = run.gpu()?;
    let names: Vec<&str> = gpu.devices.iter().map(|d| d.name.as_str()).collect();
    Some(names.join(", "))
}

fn info(path: &Path, run: &Run) -> RunInfo {
    RunInfo {
        path: path.to_path_buf(),
        started: run.started().map(str::to_owned),
        hostname: run.host().hostname.clone(),
        simulated: run.simulated(),
    }
}

/// Compares the runs in `old` and `new`.
pub fn compare(
    old_path: &Path,
    new_path: &Path,
    options: &CompareOptions,
) -> Result<CompareReport, CompareError> {
    let (old, new) = (load::read(old_path)?, load::read(new_path)?);
    if old.kind() != new.kind() {
        return Err(CompareError::DifferentKinds {
            old: old.kind(),
            new: new.kind(),
            old_path: old_path.to_path_buf(),
            new_path: new_path.to_path_buf(),
        });
    }
    if let (Some(a), Some(b)) = (gpus(&old), gpus(&new)) {
        if a != b && !options.allow_different_gpus {
            let none = |s: String| if s.is_empty() { "no GPU".to_owned() } else { s };
            return Err(CompareError::DifferentGpus {
                old: none(a),
                new: none(b),
            });
        }
    }
    let mut report = CompareReport {
        schema: COMPARE_SCHEMA.to_owned(),
        kind: old.kind().to_owned(),
        threshold: options.threshold,
        old: info(old_path, &old),
        new: info(new_path, &new),
        upgrade: upgrade(&old, &new),
        environment: Vec::new(),
        benchmarks: Vec::new(),
        checks: Vec::new(),
        findings: Vec::new(),
        libraries: Vec::new(),
        regressions: Vec::new(),
    };
    report
        .environment
        .extend(diff::simulated_change(old.simulated(), new.simulated()));
    match (&old, &new) {
        (Run::Bench(a), Run::Bench(b)) => {
            report.environment.extend(diff::bench_environment(a, b));
            let history = options
                .history
                .as_deref()
                .map_or_else(floor::History::default, |dir| {
                    floor::History::gather(dir, &[(old_path, a), (new_path, b)])
                });
            report.benchmarks =
                diff::benchmarks(a, b, options.threshold, &history, reference::committed());
        }
        (Run::Check(a), Run::Check(b)) => {
            report.environment.extend(diff::check_environment(a, b));
            report.checks = diff::checks(a, b);
        }
        (Run::Doctor(a), Run::Doctor(b)) => {
            report.environment.extend(diff::host_changes(
                (&a.host, Some(&a.gpu)),
                (&b.host, Some(&b.gpu)),
            ));
            report.findings = diff::findings(&a.findings, &b.findings);
            report.libraries = diff::libraries(&a.installations, &b.installations);
        }
        (Run::Scan(a), Run::Scan(b)) => {
            report
                .environment
                .extend(diff::host_changes((&a.host, None), (&b.host, None)));
            report.libraries = diff::libraries(&a.installations, &b.installations);
        }
        _ => {}
    }
    report.regressions = regressions(&report, &options.fail_on);
    Ok(report)
}

/// The driver a run used: NVML's version, else the first driver library version a check run
/// recorded; and the kernel module a check run saw loaded.
fn driver(run: &Run) -> (Option<String>, Option<String>) {
    let drivers = match run {
        Run::Check(r) => r
            .combinations
            .iter()
            .filter_map(|c| c.driver.as_ref())
            .collect(),
        _ => Vec::new(),
    };
    let version = (run.gpu().and_then(|g| g.driver_version.clone()))
        .or_else(|| drivers.iter().find_map(|d| d.version.clone()));
    let module = drivers.iter().find_map(|d| d.kernel_module.clone());
    (version, module)
}

/// The driver change between `old` and `new`, if their drivers differ.
fn upgrade(old: &Run, new: &Run) -> Option<model::Upgrade> {
    let ((Some(a), old_module), (Some(b), new_module)) = (driver(old), driver(new)) else {
        return None;
    };
    (a != b || old_module != new_module).then_some(model::Upgrade {
        old: a,
        new: b,
        old_module,
        new_module,
    })
}

/// Every change that counts under `fail_on`, in words.
fn regressions(report: &CompareReport, fail_on: &[FailOn]) -> Vec<String> {
    let counts = |kind: FailOn| fail_on.contains(&kind);
    let mut found = Vec::new();
    for row in &report.benchmarks {
        // A simulated figure against a GPU's is a model against a measurement: its verdict is
        // shown with a note, never counted against the new run.
        // A figure taken beside another program, or under throttled clocks, is that
        // disturbance's as much as the software's: shown with it, counted only when asked.
        let judged =
            !row.simulated_vs_real && (row.disturbed.is_none() || counts(FailOn::Disturbed));
        let slower = judged && row.verdict == Some(Verdict::Slower) && counts(FailOn::Slower);
        let unclear = judged && row.verdict == Some(Verdict::Unclear) && counts(FailOn::Unclear);
        if slower || unclear {
            let ratio = row.ratio.map_or(0.0, |r| 100.0 * (r.ratio - 1.0));
            let busbw = row.busbw().map(|b| format!("; {b}")).unwrap_or_default();
            found.push(format!(
                "{}: {} ({ratio:+.1}%{busbw})",
                row.label(),
                row.verdict.map_or("", Verdict::name)
            ));
        }
        let broke = row.old_status.as_deref() == Some("measured")
            && row.new_status.as_deref() == Some("failed");
        if broke && counts(FailOn::Failure) {
            found.push(format!("{}: measured before, fails now", row.label()));
        }
    }
    if counts(FailOn::Failure) {
        found.extend(
            report
                .checks
                .iter()
                .filter(|c| c.change == model::CheckChange::Regression)
                .map(|c| match &report.upgrade {
                    Some(u) => format!(
                        "{} {}: fails now, after the {}",
                        c.combination,
                        c.id,
                        u.text()
                    ),
                    None => format!("{} {}: fails now", c.combination, c.id),
                }),
        );
    }
    if counts(FailOn::Finding) {
        found.extend(
            report
                .findings
                .iter()
                .filter(|i| i.change == "appeared" && i.what.starts_with("error "))
                .map(|i| format!("new finding: {}", i.what)),
        );
    }
    if counts(FailOn::Library) {
        found.extend(
            report
                .libraries
                .iter()
                .filter(|i| i.change == "disappeared")
                .map(|i| format!("library gone: {}", i.what)),
        );
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::BenchmarkRow;

    /// A comparison with one row three times as slow, judged `slower`.
    fn slower_row(simulated_vs_real: bool) -> CompareReport {
        let run = |simulated: bool| RunInfo {
            path: "run.json".into(),
            started: None,
            hostname: "h".into(),
            simulated,
        };
        CompareReport {
            schema: COMPARE_SCHEMA.into(),
            kind: "bench".into(),
            threshold: Some(0.02),
            old: run(false),
            new: run(simulated_vs_real),
            upgrade: None,
            environment: Vec::new(),
            benchmarks: vec![BenchmarkRow {
                id: "copy/c/1073741824".into(),
                combination: "c".into(),
                device: None,
                old_status: Some("measured".into()),
                new_status: Some("measured".into()),
                old_median_ns: Some(1.0),
                new_median_ns: Some(3.0),
                ratio: Some(stats::Ratio {
                    ratio: 3.0,
                    low: 2.9,
                    high: 3.1,
                }),
                verdict: Some(Verdict::Slower),
                threshold: None,
                environment_runs: None,
                clocks_differ: false,
                simulated_vs_real,
                could_see: None,
                old_sm_clock_mhz: None,
                new_sm_clock_mhz: None,
                cycles: None,
                cycles_verdict: None,
                old_figure_ns: None,
                new_figure_ns: None,
                old_repetitions: Some(1),
                new_repetitions: Some(1),
                floor: None,
                floor_set: false,
                why: None,
                old_busbw_gbps: None,
                new_busbw_gbps: None,
                disturbed: None,
            }],
            checks: Vec::new(),
            findings: Vec::new(),
            libraries: Vec::new(),
            regressions: Vec::new(),
        }
    }

    #[test]
    fn a_simulated_figure_against_a_real_one_is_never_a_regression() {
        let fail_on = [FailOn::Slower, FailOn::Unclear, FailOn::Failure];
        assert_eq!(
            regressions(&slower_row(false), &fail_on),
            ["copy/c/1073741824: slower (+200.0%)"]
        );
        assert!(regressions(&slower_row(true), &fail_on).is_empty());
    }

    #[test]
    fn a_row_measured_disturbed_counts_only_when_asked() {
        let mut report = slower_row(false);
        report.benchmarks[0].disturbed = Some("new run: busy: 2 other processes".into());
        let fail_on = [FailOn::Slower, FailOn::Unclear, FailOn::Failure];
        assert!(regressions(&report, &fail_on).is_empty());
        assert_eq!(
            regressions(&report, &[FailOn::Slower, FailOn::Disturbed]),
            ["copy/c/1073741824: slower (+200.0%)"]
        );
    }

    #[test]
    fn an_nccl_row_slower_names_its_collective_size_and_busbw_drop() {
        let mut report = slower_row(false);
        let row = &mut report.benchmarks[0];
        row.id = "nccl/c/all_reduce/16777216".into();
        (row.old_busbw_gbps, row.new_busbw_gbps) = (Some(400.9), Some(133.6));
        assert_eq!(
            regressions(&report, &[FailOn::Slower]),
            ["nccl/c/all_reduce/16777216: slower (+200.0%; busbw 400.90 → 133.60 GB/s)"]
        );
    }
}
