//! `stackbench report`'s model: every run under `results/` (or the files given) gathered into
//! one history. Each benchmark's median and interquartile range run after run, one series per
//! combination, each point carrying the driver and library versions behind it; each check
//! run's matrix; every run's counts. The HTML, Markdown and JSON views are in `report`.

use crate::bench::model::{BenchReport, Side};
use crate::compare::load::{self, LoadError, Run};
use crate::roofline::Roofline;
use crate::schema::check::{CheckReport, Status};
use crate::tags::HISTORY_SCHEMA;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

/// Schemas of stackbench's own files that are made from runs rather than being runs.
const DERIVED: [&str; 3] = [
    crate::tags::COMPARE_SCHEMA,
    crate::tags::MERGE_SCHEMA,
    HISTORY_SCHEMA,
];

/// Every run, its benchmarks over time and its check matrices.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct History {
    pub schema: String,
    /// When the history was gathered, RFC 3339 in UTC.
    pub generated: String,
    /// The runs read, oldest first.
    pub runs: Vec<RunEntry>,
    /// Files that were not read as runs, with the reason.
    pub passed_over: Vec<PassedOver>,
    /// One per benchmark (its parameters, not its combination), in the order first measured.
    pub charts: Vec<Chart>,
    /// One per check run, oldest first.
    pub matrices: Vec<CheckMatrix>,
    /// One per GPU model, from its newest bench run with theoretical peaks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rooflines: Vec<Roofline>,
}

/// One run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RunEntry {
    #[serde(with = "crate::pathname")]
    pub path: PathBuf,
    /// `bench`, `check`, `doctor` or `scan`.
    pub kind: String,
    /// When it started (bench, check), else when its file was written.
    pub when: String,
    pub hostname: String,
    /// The GPUs' names, empty when the run saw none.
    pub gpus: Vec<String>,
    /// The kernel driver's version.
    pub driver: Option<String>,
    pub stackbench_version: String,
    /// What it found, counted: `measured 28`, `failed 0`; `pass 41`, `fail 2`; `error 1`.
    pub counts: Vec<(String, usize)>,
    /// It ran on stackbench's simulated driver (bench, check). Absent (false) otherwise.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub simulated: bool,
}

/// A file that is not in the history, and why.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PassedOver {
    #[serde(with = "crate::pathname")]
    pub path: PathBuf,
    pub reason: String,
}

/// One benchmark across runs.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Chart {
    /// The benchmark and its parameters: `matmul/cublas/bf16/8192/batch`.
    pub benchmark: String,
    pub side: Side,
    /// The rate's unit (`GB/s`, `TFLOP/s`) when every point has a rate: then it is charted in
    /// rates, higher is better.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
    pub series: Vec<Series>,
}

/// One combination's figures for a benchmark, oldest first. Figures from the simulated driver
/// are a series of their own, labelled so, never a point on a real GPU's line.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Series {
    /// The combination, with the GPU when the runs were made on more than one kind, and
    /// `(simulated)` for the simulated driver's figures where the GPU's name does not say so.
    pub label: String,
    pub points: Vec<Point>,
}

/// One run's figure.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Point {
    /// The run, as an index into `runs`.
    pub run: usize,
    pub median_ns: f64,
    pub q1_ns: f64,
    pub q3_ns: f64,
    /// The versions behind the figure: `driver 580.65.06 (CUDA 13.0), cudart 12.9.79, ...`.
    pub versions: String,
    /// The versions differ from the series' previous point (the first point's are new).
    pub versions_changed: bool,
    /// The figure is the simulated driver's, not a GPU's. Absent (false) otherwise.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub simulated: bool,
    /// The run's measured repetitions (`bench --repeat`); absent for a run of one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repetitions: Option<usize>,
    /// The lowest and the highest of its repetitions' medians: the spread between runs of the
    /// point; absent for a run of one repetition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spread_ns: Option<(f64, f64)>,
    /// The rate at the median, in the chart's unit; absent for figures that are times.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
}

/// One check run: a row per check, a column per combination.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CheckMatrix {
    /// The run, as an index into `runs`.
    pub run: usize,
    /// The run was on the simulated driver. Absent (false) otherwise.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub simulated: bool,
    pub combinations: Vec<String>,
    pub rows: Vec<MatrixRow>,
    /// The run's node: its GPUs, copy matrices and findings, when it had GPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<crate::schema::node::NodeReport>,
}

/// One check in every combination.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MatrixRow {
    pub library: String,
    pub check: String,
    /// One per combination; `None` where the combination has no such check.
    pub cells: Vec<Option<MatrixCell>>,
}

/// How one check went in one combination.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MatrixCell {
    pub status: Status,
    pub reason: String,
}

/// Why there is no history to show (exit status 2).
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error("cannot read the results directory {}: {source}; give --results DIR or the files", dir.display())]
    Dir {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("no run to report: {looked_in} held no readable stackbench result ({passed_over} file(s) passed over); run `stackbench bench` or `check` first, or give their result files")]
    Empty {
        /// `results` (the directory), or `the 3 files given`.
        looked_in: String,
        passed_over: usize,
    },
}

/// The JSON files directly in `dir`, by name.
pub fn files_in(dir: &Path) -> Result<Vec<PathBuf>, HistoryError> {
    let entries = crate::hostfs::read_dir(dir).map_err(|source| HistoryError::Dir {
        dir: dir.to_path_buf(),
        source,
    })?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    Ok(files)
}

/// The files `report` was given, each directory among them standing for the JSON files
/// directly in it (as `--results` does); a file named twice is read once.
pub fn expand(paths: &[PathBuf]) -> Result<Vec<PathBuf>, HistoryError> {
    let mut files: Vec<PathBuf> = Vec::new();
    for path in paths {
        let found = if path.is_dir() {
            files_in(path)?
        } else {
            vec![path.clone()]
        };
        for file in found {
            if !files.contains(&file) {
                files.push(file);
            }
        }
    }
    Ok(files)
}

/// Reads every file in `paths` that is a run; the others are passed over with the reason.
pub fn gather(paths: &[PathBuf]) -> History {
    let mut runs: Vec<(String, PathBuf, Run)> = Vec::new();
    let mut passed_over = Vec::new();
    for path in paths {
        match load::read(path) {
            Ok(mut run) => {
                // Runs before the theoretical peaks are set against them as today's are.
                if let Run::Bench(report) = &mut run {
                    crate::bench::shares::reassess(report);
                }
                runs.push((load::when(&run, path), path.clone(), run))
            }
            Err(error) => passed_over.push(PassedOver {
                path: path.clone(),
                reason: reason(error),
            }),
        }
    }
    runs.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    let entries = runs
        .iter()
        .map(|(when, path, run)| entry(when, path, run))
        .collect();
    let bench: Vec<(usize, &BenchReport)> = runs
        .iter()
        .enumerate()
        .filter_map(|(at, (_, _, run))| match run {
            Run::Bench(report) => Some((at, report)),
            _ => None,
        })
        .collect();
    let matrices = runs
        .iter()
        .enumerate()
        .filter_map(|(at, (_, _, run))| match run {
            Run::Check(report) => Some(matrix(at, report)),
            _ => None,
        })
        .collect();
    History {
        schema: HISTORY_SCHEMA.to_owned(),
        generated: crate::timestamp::now(),
        runs: entries,
        passed_over,
        charts: charts(&bench),
        matrices,
        rooflines: rooflines(&bench),
    }
}

/// Each GPU model's roofline, from its newest bench run that has one, in the order the models
/// were first measured.
fn rooflines(bench: &[(usize, &BenchReport)]) -> Vec<Roofline> {
    let mut rooflines: Vec<Roofline> = Vec::new();
    for &(run, report) in bench {
        let Some(roofline) = crate::roofline::of(report, run) else {
            continue;
        };
        match rooflines.iter_mut().find(|r| r.gpu == roofline.gpu) {
            Some(older) => *older = roofline,
            None => rooflines.push(roofline),
        }
    }
    rooflines
}

/// A load error as a reason to pass a file over; stackbench's own comparisons, merges and
/// histories are named as what they are.
fn reason(error: LoadError) -> String {
    match error {
        LoadError::UnknownSchema { path, schema, .. } if DERIVED.contains(&schema.as_str()) => {
            format!(
                "{}: a {schema} file, made from runs, not a run itself",
                path.display()
            )
        }
        error => error.to_string(),
    }
}

fn entry(when: &str, path: &Path, run: &Run) -> RunEntry {
    let host = run.host();
    let gpu = run.gpu();
    RunEntry {
        path: path.to_path_buf(),
        kind: run.kind().to_owned(),
        when: when.to_owned(),
        hostname: host.hostname.clone(),
        gpus: gpu
            .map(|g| g.devices.iter().map(|d| d.name.clone()).collect())
            .unwrap_or_default(),
        driver: gpu.and_then(|g| g.driver_version.clone()),
        stackbench_version: host.stackbench_version.clone(),
        counts: counts(run),
        simulated: run.simulated(),
    }
}

fn counts(run: &Run) -> Vec<(String, usize)> {
    let named = |names: &[&str], counts: &[usize]| {
        names
            .iter()
            .zip(counts)
            .map(|(name, n)| ((*name).to_owned(), *n))
            .collect()
    };
    match run {
        Run::Bench(r) => named(&["measured", "skipped", "failed"], &r.counts()),
        Run::Check(r) => named(&["pass", "warn", "skip", "fail"], &r.counts()),
        Run::Doctor(r) => named(&["error", "warning", "info"], &r.severity_counts()),
        Run::Scan(r) => named(
            &["installations", "libraries"],
            &[
                r.installations.len(),
                r.installations.iter().map(|i| i.libraries.len()).sum(),
            ],
        ),
    }
}

/// The benchmark charts of the bench runs, each `(index into runs, report)`, oldest first.
fn charts(bench: &[(usize, &BenchReport)]) -> Vec<Chart> {
    let gpu_kinds: BTreeSet<String> = bench.iter().map(|(_, r)| gpu_name(r)).collect();
    let mut charts: Vec<Chart> = Vec::new();
    let mut chart_at: HashMap<String, usize> = HashMap::new();
    for &(run, report) in bench {
        for result in &report.benchmarks {
            let Some(summary) = result.summary else {
                continue;
            };
            let mut name = vec![result.benchmark.clone()];
            name.extend(result.parameters.parts());
            let name = name.join("/");
            let at = *chart_at.entry(name.clone()).or_insert_with(|| {
                charts.push(Chart {
                    benchmark: name,
                    side: result.side,
                    unit: result.throughput.as_ref().map(|t| t.unit.clone()),
                    series: Vec::new(),
                });
                charts.len() - 1
            });
            let rate = (result.throughput.as_ref())
                .filter(|t| charts[at].unit.as_ref() == Some(&t.unit))
                .map(|t| t.value);
            if rate.is_none() {
                charts[at].unit = None;
            }
            let label = if gpu_kinds.len() > 1 {
                format!("{} on {}", result.combination, gpu_name(report))
            } else {
                result.combination.clone()
            };
            let simulated = report
                .combinations
                .iter()
                .find(|c| c.name == result.combination)
                .map_or(report.simulated, |c| c.simulated);
            let label = if simulated && !label.to_lowercase().contains("simulated") {
                format!("{label} (simulated)")
            } else {
                label
            };
            let series = &mut charts[at].series;
            let series = match series.iter().position(|s| s.label == label) {
                Some(i) => &mut series[i],
                None => {
                    series.push(Series {
                        label,
                        points: Vec::new(),
                    });
                    series.last_mut().expect("just pushed")
                }
            };
            let versions = versions(report, &result.combination);
            let versions_changed = series.points.last().is_none_or(|p| p.versions != versions);
            let medians = result.repetition_medians();
            let spread = (medians.len() > 1).then(|| {
                let low = medians.iter().copied().fold(f64::INFINITY, f64::min);
                let high = medians.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                (low, high)
            });
            series.points.push(Point {
                run,
                median_ns: summary.median_ns,
                q1_ns: summary.q1_ns,
                q3_ns: summary.q3_ns,
                versions,
                versions_changed,
                simulated,
                repetitions: spread.map(|_| medians.len()),
                spread_ns: spread,
                rate,
            });
        }
    }
    charts
}

fn gpu_name(report: &BenchReport) -> String {
    report
        .gpu
        .devices
        .first()
        .map_or_else(|| "no GPU".to_owned(), |d| d.name.clone())
}

/// The driver and library versions of `combination` in `report`, in one line.
fn versions(report: &BenchReport, combination: &str) -> String {
    let mut parts = Vec::new();
    let run = report.combinations.iter().find(|c| c.name == combination);
    let driver_api = run.and_then(|c| c.driver_cuda_version.as_deref());
    match (&report.gpu.driver_version, driver_api) {
        (Some(driver), Some(api)) => parts.push(format!("driver {driver} (CUDA {api})")),
        (Some(driver), None) => parts.push(format!("driver {driver}")),
        (None, Some(api)) => parts.push(format!("driver CUDA {api}")),
        (None, None) => {}
    }
    if let Some(run) = run {
        parts.extend(
            run.libraries
                .iter()
                .map(|l| format!("{} {}", l.component, l.version.as_deref().unwrap_or("?"))),
        );
    }
    parts.join(", ")
}

/// The check matrix of the run at `run`: a row per check, grouped by library.
fn matrix(run: usize, report: &CheckReport) -> CheckMatrix {
    let rows = report
        .check_groups()
        .into_iter()
        .flat_map(|(library, ids)| ids.into_iter().map(move |id| (library, id)))
        .map(|(library, id)| MatrixRow {
            library: library.to_owned(),
            check: id.to_owned(),
            cells: report
                .combinations
                .iter()
                .map(|c| {
                    c.check(id).map(|r| MatrixCell {
                        status: r.status,
                        reason: r.reason.clone(),
                    })
                })
                .collect(),
        })
        .collect();
    CheckMatrix {
        run,
        simulated: report.simulated,
        combinations: report.combinations.iter().map(|c| c.name.clone()).collect(),
        rows,
        node: report.node.clone(),
    }
}
