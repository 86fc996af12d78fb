//! What differs between two runs of one kind: the environment, each benchmark's samples, each
//! check's outcome, the findings and the libraries.

use super::floor::{History, Sides};
use super::model::{BenchmarkRow, Change, CheckChange, CheckRow, Item};
use super::reference::ReferenceRun;
use super::stats::{self, Estimate, FloorSource, Ratio, Verdict};
use crate::bench::model::{BenchReport, BenchResult, Status as BenchStatus};
use crate::diagnose::finding::Finding;
use crate::gpu::GpuInfo;
use crate::model::{HostInfo, Installation};
use crate::schema::check::{CheckReport, Status};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// `old` and `new` as a change, when they differ.
fn change(what: impl Into<String>, old: Option<String>, new: Option<String>) -> Option<Change> {
    (old != new).then(|| Change {
        what: what.into(),
        old,
        new,
    })
}

/// The GPUs by name, joined.
fn gpu_names(gpu: &GpuInfo) -> Option<String> {
    let names: Vec<&str> = gpu.devices.iter().map(|d| d.name.as_str()).collect();
    (!names.is_empty()).then(|| names.join(", "))
}

/// GPU, kernel driver and stackbench version.
pub fn host_changes(
    old: (&HostInfo, Option<&GpuInfo>),
    new: (&HostInfo, Option<&GpuInfo>),
) -> Vec<Change> {
    let mut changes = Vec::new();
    if let (Some(a), Some(b)) = (old.1, new.1) {
        changes.extend(change("GPU", gpu_names(a), gpu_names(b)));
        changes.extend(change(
            "driver",
            a.driver_version.clone(),
            b.driver_version.clone(),
        ));
    }
    changes.extend(change(
        "stackbench",
        Some(old.0.stackbench_version.clone()),
        Some(new.0.stackbench_version.clone()),
    ));
    changes
}

/// Whether each run was on stackbench's simulated driver, when they differ: the first thing a
/// comparison of a simulated run with a real one says.
pub fn simulated_change(old: bool, new: bool) -> Option<Change> {
    let kind = |simulated: bool| {
        Some(if simulated {
            "SIMULATED GPU (stackbench's simulated driver)".to_owned()
        } else {
            "a real GPU".to_owned()
        })
    };
    change("ran on", kind(old), kind(new))
}

/// The component name under which a combination's driver library (`libcuda.so.1`) is compared
/// beside its CUDA libraries: a run with another `--driver-dir`, or whose driver no longer loads,
/// is a changed environment.
const DRIVER: &str = "driver library";

/// A path as the environment table shows it.
fn shown(path: &Path) -> String {
    path.display().to_string()
}

/// `--driver-dir`, when the runs took the driver from different places.
fn driver_dir_change(old: &Option<PathBuf>, new: &Option<PathBuf>) -> Option<Change> {
    change(
        "driver directory (--driver-dir)",
        old.as_deref().map(shown),
        new.as_deref().map(shown),
    )
}

/// Each library's version and path per combination, where they differ.
fn library_changes(
    old: BTreeMap<(String, String), (Option<String>, Option<String>)>,
    new: BTreeMap<(String, String), (Option<String>, Option<String>)>,
) -> Vec<Change> {
    let keys: BTreeSet<&(String, String)> = old.keys().chain(new.keys()).collect();
    let mut changes = Vec::new();
    for key @ (combination, component) in keys {
        let (old_version, old_path) = old.get(key).cloned().unwrap_or_default();
        let (new_version, new_path) = new.get(key).cloned().unwrap_or_default();
        changes.extend(change(
            format!("{combination} {component} version"),
            old_version,
            new_version,
        ));
        changes.extend(change(
            format!("{combination} {component} path"),
            old_path,
            new_path,
        ));
    }
    changes
}

/// The bench runs' environment changes, libraries included.
pub fn bench_environment(old: &BenchReport, new: &BenchReport) -> Vec<Change> {
    let libraries = |r: &BenchReport| {
        r.combinations
            .iter()
            .flat_map(|c| {
                let driver = (
                    (c.name.clone(), DRIVER.to_owned()),
                    (
                        c.driver_cuda_version.clone(),
                        c.driver.as_deref().map(shown),
                    ),
                );
                c.libraries
                    .iter()
                    .map(|l| {
                        (
                            (c.name.clone(), l.component.clone()),
                            (l.version.clone(), Some(shown(&l.path))),
                        )
                    })
                    .chain([driver])
            })
            .collect()
    };
    let mut changes = host_changes((&old.host, Some(&old.gpu)), (&new.host, Some(&new.gpu)));
    changes.extend(driver_dir_change(&old.driver_dir, &new.driver_dir));
    if old.clocks_locked != new.clocks_locked {
        changes.push(Change {
            what: "clocks".to_owned(),
            old: Some(crate::bench::clocks::describe(&old.clocks_locked)),
            new: Some(crate::bench::clocks::describe(&new.clocks_locked)),
        });
    }
    changes.extend(library_changes(libraries(old), libraries(new)));
    changes
}

/// The check runs' environment changes, libraries included.
pub fn check_environment(old: &CheckReport, new: &CheckReport) -> Vec<Change> {
    let libraries = |r: &CheckReport| {
        r.combinations
            .iter()
            .flat_map(|c| {
                let driver = (
                    (c.name.clone(), DRIVER.to_owned()),
                    c.driver.as_ref().map_or((None, None), |d| {
                        (d.version.clone(), Some(shown(&d.real_path)))
                    }),
                );
                c.libraries
                    .iter()
                    .map(|l| {
                        let path = l.mapped.as_deref().or(l.resolved.as_deref());
                        (
                            (c.name.clone(), l.component.clone()),
                            (l.version.clone(), path.map(shown)),
                        )
                    })
                    .chain([driver])
            })
            .collect()
    };
    let mut changes = host_changes((&old.host, Some(&old.gpu)), (&new.host, Some(&new.gpu)));
    changes.extend(driver_dir_change(&old.driver_dir, &new.driver_dir));
    changes.extend(library_changes(libraries(old), libraries(new)));
    changes
}

/// What a row's clocks say: whether they differ between the runs, each run's mean SM clock
/// during its samples, and, for a kind bound by the SM clock, the row judged in cycles (time ×
/// that clock, as nvbench's robust compare confirms a time verdict on a throttled kernel) where
/// a sample ran throttled or the clocks differ. A memory-bound kind's time does not follow the
/// SM clock, so its cycles would read a lower clock at the same time as "faster": none is given.
struct Clocks {
    differ: bool,
    old_mhz: Option<f64>,
    new_mhz: Option<f64>,
    cycles: Option<Ratio>,
}

/// The clocks of a row measured as `old` and `new` (either may be missing), its time ratio
/// `ratio` and the `threshold`: the clocks differ when the mean clocks during the samples (the
/// highest, in runs that did not record a mean) are further apart than the threshold. A sample
/// run throttled alone does not make them differ: a run compared with itself never does.
fn clocks(
    old: Option<&BenchResult>,
    new: Option<&BenchResult>,
    ratio: Option<Ratio>,
    threshold: f64,
) -> Clocks {
    let (a, b) = (
        old.and_then(|r| r.telemetry.as_ref()),
        new.and_then(|r| r.telemetry.as_ref()),
    );
    let mean = |t: Option<&crate::bench::model::Telemetry>| t.and_then(|t| t.sm_clock_mhz_mean);
    let highest = |t: Option<&crate::bench::model::Telemetry>| {
        t.and_then(|t| t.sm_clock_mhz_max).map(f64::from)
    };
    let apart = |x: f64, y: f64| (x - y).abs() > threshold * x.max(y);
    let (old_mhz, new_mhz) = (mean(a), mean(b));
    let differ = match (old_mhz, new_mhz, highest(a), highest(b)) {
        (Some(x), Some(y), _, _) => apart(x, y),
        (_, _, Some(x), Some(y)) => apart(x, y),
        _ => false,
    };
    let throttled = [a, b]
        .into_iter()
        .flatten()
        .any(|t| !t.throttled_samples.is_empty());
    let by_sm_clock = (new.or(old))
        .and_then(BenchResult::bound)
        .is_some_and(|b| b.by_sm_clock());
    let cycles = match (ratio, old_mhz, new_mhz) {
        (Some(r), Some(x), Some(y)) if by_sm_clock && (throttled || differ) && x > 0.0 => {
            let clock = y / x;
            Some(Ratio {
                ratio: r.ratio * clock,
                low: r.low * clock,
                high: r.high * clock,
            })
        }
        _ => None,
    };
    Clocks {
        differ,
        old_mhz,
        new_mhz,
        cycles,
    }
}

/// Why a compute-bound row whose time changed is unclear: its cycles (time × the SM clock) do
/// not show the change the same way, so the clock, not the code, may have made it.
fn why_unconfirmed(time: Verdict, cycles: Verdict, clocks: &Clocks) -> String {
    let mhz = |m: Option<f64>| m.map_or("unrecorded".to_owned(), |m| format!("{m:.0} MHz"));
    format!(
        "{} in time but {} in cycles: the SM clock averaged {} in the old run and {} in the new, \
         so the clock may have made the change; lock the clocks (bench --lock-clocks) on both \
         runs to judge it",
        time.name(),
        cycles.name(),
        mhz(clocks.old_mhz),
        mhz(clocks.new_mhz)
    )
}

/// The smallest change the row's interval could call at `threshold`, either way: a change of
/// that size with an interval as wide as this one lies wholly beyond the threshold.
fn could_see(ratio: &Ratio, threshold: f64) -> f64 {
    let slower = (1.0 + threshold) * ratio.ratio / ratio.low - 1.0;
    let faster = 1.0 - (1.0 - threshold) * ratio.ratio / ratio.high;
    slower.max(faster)
}

/// The result, if it was measured and has samples.
fn measured(result: Option<&BenchResult>) -> Option<&BenchResult> {
    result.filter(|r| r.status == BenchStatus::Measured && !r.samples_ns.is_empty())
}

/// What would settle an unclear row with `old` and `new` repetitions: more of them, unless the
/// floor's variation between runs set the interval, which no number of repetitions narrows.
fn settle(old: usize, new: usize, between_runs: Option<FloorSource>) -> String {
    match between_runs {
        Some(FloorSource::Default) => format!(
            "more repetitions do not narrow the variation between runs, here the stated default's: \
             {} earlier runs of this build under --results teach this host's own, or set \
             --threshold from `stackbench compare --calibrate`",
            super::floor::MIN_RUNS
        ),
        Some(FloorSource::HistoryOneBoot) => {
            "more repetitions do not narrow the variation between runs, here at least what spans \
             reboots because the history under --results was all made on one boot: runs after \
             a reboot teach this host's variation across reboots"
                .to_owned()
        }
        Some(FloorSource::Reference) => format!(
            "more repetitions do not narrow the variation between runs, here the one the \
             committed real runs of this GPU model showed across boots: {} earlier runs of this \
             build under --results teach this host's own",
            super::floor::MIN_RUNS
        ),
        Some(FloorSource::History) => {
            "more repetitions do not narrow the variation between runs this host showed: set \
             --threshold from `stackbench compare --calibrate` over A/A runs of it"
                .to_owned()
        }
        None => {
            let fewer = old.min(new);
            let more = if fewer < 5 { 5 } else { 2 * fewer };
            format!("run both with --repeat {more}")
        }
    }
}

/// Why a row is unclear, and what would settle it.
fn why_unclear(
    estimate: &Estimate,
    floor: &stats::Floor,
    threshold: f64,
    reps: (usize, usize),
) -> String {
    let (old, new) = reps;
    let ratio = estimate.ratio;
    let pct = 100.0 * threshold;
    let wide = (ratio.high / ratio.low).ln() > 2.0 * (1.0 + threshold).ln();
    let cause = if old.min(new) < 2 {
        format!(
            "too few repetitions (old {old}, new {new}): the variation between runs is the noise \
             floor's"
        )
    } else if wide {
        format!(
            "the interval is wider than ±{pct:.1}%, so it can show neither a change nor sameness"
        )
    } else {
        format!("the interval reaches across ±{pct:.1}%")
    };
    let set = if estimate.floor_set {
        "; the noise floor set it"
    } else {
        ""
    };
    let between_runs = (estimate.floor_set && floor.between_runs > 0.0 && old.min(new) >= 2)
        .then_some(floor.source);
    format!("{cause}{set}; {}", settle(old, new, between_runs))
}

/// The comparison of one row measured in both runs: its estimate and the repetitions behind
/// each side; `None` when either side's samples do not make a figure.
fn judged(
    old: &BenchResult,
    new: &BenchResult,
    floor: &stats::Floor,
) -> Option<(Estimate, usize, usize)> {
    let (a, b) = (
        old.repetition_samples().ok()?,
        new.repetition_samples().ok()?,
    );
    let estimate = stats::estimate(&a, &b, floor)?;
    Some((estimate, a.len(), b.len()))
}

/// The comparison of one row on every run of each side's environment (`sides`), with the
/// repetitions behind the compared rows `o` and `n`; a side made on one boot is held to the
/// variation that spans reboots.
fn judged_on_runs(
    sides: &Sides,
    (o, n): (&BenchResult, &BenchResult),
    compared: &[&BenchReport],
    reference: &[ReferenceRun],
) -> Option<(Estimate, usize, usize)> {
    let spans = (sides.one_boot).then(|| super::floor::spans_boots(n, compared, reference));
    let count = |r: &BenchResult| r.repetition_samples().map_or(1, |r| r.len());
    stats::estimate_runs(&sides.old, &sides.new, spans.as_ref()).map(|e| (e, count(o), count(n)))
}

/// Every benchmark of either run, matched by id (which holds the combination and the
/// parameters) and GPU (its ordinal: a result without one, from a one-GPU run, is GPU 0's), in
/// the new run's order, then the old run's leftovers; rows measured in neither run and ending
/// the same way in both (skipped twice) are left out. Each row measured in both is judged on
/// its repetitions, its interval held to the noise floor `history` (else `reference`) gives it,
/// at `threshold`, else at the threshold its floor's evidence gives it.
pub fn benchmarks(
    old: &BenchReport,
    new: &BenchReport,
    threshold: Option<f64>,
    history: &History,
    reference: &[ReferenceRun],
) -> Vec<BenchmarkRow> {
    let key = |r: &BenchResult| (r.id.clone(), r.device_index());
    let by_key: BTreeMap<(String, u32), &BenchResult> =
        old.benchmarks.iter().map(|r| (key(r), r)).collect();
    // Whether each run's combination of a row ran on the simulated driver.
    let simulated = |report: &BenchReport, result: Option<&BenchResult>| {
        result.map(|r| {
            report
                .combinations
                .iter()
                .find(|c| c.name == r.combination)
                .map_or(report.simulated, |c| c.simulated)
        })
    };
    let in_new: BTreeSet<(String, u32)> = new.benchmarks.iter().map(key).collect();
    let pairs = new
        .benchmarks
        .iter()
        .map(|n| (by_key.get(&key(n)).copied(), Some(n)))
        .chain(
            old.benchmarks
                .iter()
                .filter(|o| !in_new.contains(&key(o)))
                .map(|o| (Some(o), None)),
        );
    pairs
        .filter_map(|(o, n)| {
            let any = n.or(o)?;
            // Not measured in either run, and ended the same way: nothing to compare.
            let status = |r: Option<&BenchResult>| r.map(|r| r.status);
            if measured(o).is_none() && measured(n).is_none() && status(o) == status(n) {
                return None;
            }
            let (floor, judged, sides) = match (measured(o), measured(n)) {
                (Some(o), Some(n)) => {
                    let floor = history.floor(n, &[old, new], reference);
                    let sides = history.sides(n, (old, o), (new, n));
                    let judged = match &sides {
                        Some(sides) => judged_on_runs(sides, (o, n), &[old, new], reference),
                        None => judged(o, n, &floor),
                    };
                    (Some(floor), judged, sides)
                }
                _ => (None, None, None),
            };
            let ratio = judged.map(|(e, _, _)| e.ratio);
            let row_threshold = threshold.or_else(|| {
                floor
                    .as_ref()
                    .filter(|_| judged.is_some())
                    .map(stats::evidence_threshold)
            });
            let at = row_threshold.unwrap_or(stats::MIN_THRESHOLD);
            let clocks = clocks(measured(o), measured(n), ratio, at);
            let in_time = ratio.map(|r| r.verdict(at));
            let in_cycles = clocks.cycles.map(|r| r.verdict(at));
            let unconfirmed = match (in_time, in_cycles) {
                (Some(time), Some(cycles)) if !time.confirmed_by(cycles) => {
                    Some(why_unconfirmed(time, cycles, &clocks))
                }
                _ => None,
            };
            let verdict = in_time.map(|v| match unconfirmed {
                Some(_) => Verdict::Unclear,
                None => v,
            });
            let why = unconfirmed.or_else(|| match (verdict, judged, &floor) {
                (Some(Verdict::Unclear), Some((e, a, b)), Some(floor)) => {
                    Some(why_unclear(&e, floor, at, (a, b)))
                }
                _ => None,
            });
            Some(BenchmarkRow {
                id: any.id.clone(),
                combination: any.combination.clone(),
                device: n
                    .and_then(|n| n.device.clone())
                    .or_else(|| o?.device.clone()),
                old_status: o.map(|r| r.status.name().to_owned()),
                new_status: n.map(|r| r.status.name().to_owned()),
                old_median_ns: o.and_then(|r| r.summary).map(|s| s.median_ns),
                new_median_ns: n.and_then(|r| r.summary).map(|s| s.median_ns),
                verdict,
                ratio,
                threshold: row_threshold.filter(|_| threshold.is_none()),
                could_see: ratio.map(|r| could_see(&r, at)),
                clocks_differ: clocks.differ,
                old_sm_clock_mhz: clocks.old_mhz,
                new_sm_clock_mhz: clocks.new_mhz,
                cycles_verdict: in_cycles,
                cycles: clocks.cycles,
                simulated_vs_real: matches!(
                    (simulated(old, o), simulated(new, n)),
                    (Some(a), Some(b)) if a != b
                ),
                old_figure_ns: judged.map(|(e, _, _)| e.figures.0),
                new_figure_ns: judged.map(|(e, _, _)| e.figures.1),
                old_repetitions: judged.map(|(_, a, _)| a),
                new_repetitions: judged.map(|(_, _, b)| b),
                environment_runs: sides
                    .filter(|_| judged.is_some())
                    .map(|s| (s.old.len(), s.new.len())),
                floor: floor.filter(|_| judged.is_some()),
                floor_set: judged.is_some_and(|(e, _, _)| e.floor_set),
                why,
                old_busbw_gbps: busbw(o),
                new_busbw_gbps: busbw(n),
                disturbed: disturbed(o, n),
            })
        })
        .collect()
}

/// What disturbed a row's GPU(s) in each run, by run (`old run: ...; new run: ...`); `None`
/// when nothing did in either.
fn disturbed(old: Option<&BenchResult>, new: Option<&BenchResult>) -> Option<String> {
    let side = |run: &str, result: Option<&BenchResult>| {
        let found: Vec<String> = result?
            .conditions
            .iter()
            .filter(|c| !c.disturbance().is_empty())
            .map(|c| c.short())
            .collect();
        (!found.is_empty()).then(|| format!("{run} run: {}", found.join("; ")))
    };
    let sides: Vec<String> = [side("old", old), side("new", new)]
        .into_iter()
        .flatten()
        .collect();
    (!sides.is_empty()).then(|| sides.join("; "))
}

/// An NCCL result's bus bandwidth, GB/s.
fn busbw(result: Option<&BenchResult>) -> Option<f64> {
    result?.nccl.as_ref()?.busbw_gbps
}

/// Every check whose outcome differs between the runs, matched by combination and id.
pub fn checks(old: &CheckReport, new: &CheckReport) -> Vec<CheckRow> {
    let index = |r: &CheckReport| -> BTreeMap<(String, String), (Status, String)> {
        r.combinations
            .iter()
            .flat_map(|c| {
                c.checks
                    .iter()
                    .map(move |k| ((c.name.clone(), k.id.clone()), (k.status, k.reason.clone())))
            })
            .collect()
    };
    let (a, b) = (index(old), index(new));
    let keys: BTreeSet<&(String, String)> = a.keys().chain(b.keys()).collect();
    let mut rows = Vec::new();
    for key in keys {
        let (o, n) = (a.get(key), b.get(key));
        let change = match (o, n) {
            (None, Some(_)) => CheckChange::Appeared,
            (Some(_), None) => CheckChange::Disappeared,
            (Some((os, or)), Some((ns, nr))) => match (os, ns) {
                (Status::Pass | Status::Warn, Status::Fail) => CheckChange::Regression,
                (Status::Fail, Status::Pass | Status::Warn) => CheckChange::Fixed,
                (Status::Fail, Status::Fail) if or != nr => CheckChange::NewReason,
                _ if os != ns => CheckChange::Status,
                _ => continue,
            },
            (None, None) => continue,
        };
        rows.push(CheckRow {
            combination: key.0.clone(),
            id: key.1.clone(),
            change,
            old_status: o.map(|(s, _)| s.name().to_owned()),
            new_status: n.map(|(s, _)| s.name().to_owned()),
            old_reason: o.map(|(_, r)| r.clone()),
            new_reason: n.map(|(_, r)| r.clone()),
        });
    }
    rows
}

/// What is in one list and not the other: `appeared` (in `new` only), then `disappeared`.
fn items(old: BTreeSet<String>, new: BTreeSet<String>) -> Vec<Item> {
    let item = |change: &str, what: &String| Item {
        change: change.to_owned(),
        what: what.clone(),
    };
    new.difference(&old)
        .map(|w| item("appeared", w))
        .chain(old.difference(&new).map(|w| item("disappeared", w)))
        .collect()
}

/// A finding in a line: severity, cause, library and path.
pub fn finding_line(f: &Finding) -> String {
    let mut line = format!("{:?} {}", f.severity, f.cause.code()).to_lowercase();
    if let Some(library) = &f.library {
        line.push_str(&format!(" {library}"));
    }
    if let Some(path) = f.path.as_ref().or(f.installation.as_ref()) {
        line.push_str(&format!(" ({})", path.display()));
    }
    line
}

/// Findings that appeared or disappeared, each folded finding on its own.
pub fn findings(old: &[Finding], new: &[Finding]) -> Vec<Item> {
    let lines = |f: &[Finding]| {
        f.iter()
            .flat_map(Finding::unfolded)
            .map(|f| finding_line(&f))
            .collect()
    };
    items(lines(old), lines(new))
}

/// Libraries (component, version, path) that appeared or disappeared.
pub fn libraries(old: &[Installation], new: &[Installation]) -> Vec<Item> {
    let lines = |i: &[Installation]| {
        i.iter()
            .flat_map(|i| &i.libraries)
            .map(|l| {
                format!(
                    "{} {} {}",
                    l.name,
                    l.version.as_deref().unwrap_or("?"),
                    l.path.display()
                )
            })
            .collect()
    };
    items(lines(old), lines(new))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_say_what_appeared_and_what_went() {
        let set = |v: &[&str]| v.iter().map(|s| s.to_string()).collect();
        let got = items(set(&["a", "b"]), set(&["b", "c"]));
        let got: Vec<(&str, &str)> = got
            .iter()
            .map(|i| (i.change.as_str(), i.what.as_str()))
            .collect();
        assert_eq!(got, [("appeared", "c"), ("disappeared", "a")]);
    }

    /// A bench run of combination `c` (on the simulated driver or not) with one vector add
    /// measured at `ns` per run.
    fn bench_run(simulated: bool, ns: f64) -> BenchReport {
        use crate::bench::model::{Key, Parameters, Side};
        let key = Key {
            combination: "c".into(),
            benchmark: "vector_add",
            side: Side::Gpu,
            parameters: Parameters {
                size: Some(1 << 20),
                ..Parameters::default()
            },
        };
        let samples: Vec<f64> = (0..40)
            .map(|i| ns * (1.0 + 0.001 * f64::from(i % 5)))
            .collect();
        let result = BenchResult {
            summary: crate::bench::stats::summarize(&samples),
            samples_ns: samples,
            ..BenchResult::from_key(key)
        };
        BenchReport::of(simulated, vec![result])
    }

    #[test]
    fn a_simulated_run_against_a_real_one_is_a_change_and_marks_its_rows() {
        let (real, simulated) = (bench_run(false, 1000.0), bench_run(true, 2000.0));
        let change = simulated_change(false, true).expect("a change");
        assert_eq!(change.what, "ran on");
        assert_eq!(change.old.as_deref(), Some("a real GPU"));
        assert_eq!(
            change.new.as_deref(),
            Some("SIMULATED GPU (stackbench's simulated driver)")
        );
        assert_eq!(simulated_change(true, true), None);
        let rows = benchmarks(&real, &simulated, Some(0.02), &History::default(), &[]);
        assert_eq!(rows.len(), 1);
        assert!(rows[0].simulated_vs_real, "{:?}", rows[0]);
        assert_eq!(rows[0].verdict, Some(super::super::stats::Verdict::Slower));
        let same_kind = benchmarks(
            &simulated,
            &bench_run(true, 2000.0),
            Some(0.02),
            &History::default(),
            &[],
        );
        assert!(!same_kind[0].simulated_vs_real);
        let json = serde_json::to_value(&same_kind[0]).unwrap();
        assert!(json.get("simulated_vs_real").is_none(), "{json}");
    }

    /// A run of one f32 cuBLAS matmul (compute-bound) at `ns` per run, its SM clock averaging
    /// `mhz` during its samples.
    fn matmul_run(ns: f64, mhz: f64) -> BenchReport {
        use crate::bench::model::{Key, Parameters, Side, Telemetry};
        let mut report = bench_run(false, ns);
        let row = report.benchmarks.pop().unwrap();
        let key = Key {
            combination: "c".into(),
            benchmark: "matmul",
            side: Side::Gpu,
            parameters: Parameters {
                size: Some(8192),
                precision: Some("f32".into()),
                implementation: Some("cublas".into()),
                ..Parameters::default()
            },
        };
        report.benchmarks.push(BenchResult {
            telemetry: Some(Telemetry {
                sm_clock_mhz_mean: Some(mhz),
                ..Telemetry::default()
            }),
            samples_ns: row.samples_ns,
            summary: row.summary,
            ..BenchResult::from_key(key)
        });
        report
    }

    #[test]
    fn a_compute_bound_change_in_time_counts_only_where_the_cycles_confirm_it() {
        let verdict = |new: BenchReport| {
            let rows = benchmarks(
                &matmul_run(1000.0, 1980.0),
                &new,
                Some(0.02),
                &History::default(),
                &[],
            );
            (rows[0].verdict, rows[0].cycles_verdict, rows[0].why.clone())
        };
        // 25% slower in time at a 20% lower clock: the same cycles, so the clock may have made
        // it. (One repetition a side: the stated floor's interval, about ±9%, cannot show them
        // the same either.)
        let (time, cycles, why) = verdict(matmul_run(1250.0, 1584.0));
        assert_eq!(
            (time, cycles),
            (Some(Verdict::Unclear), Some(Verdict::Unclear))
        );
        let why = why.unwrap_or_default();
        assert!(
            why.contains("slower in time but unclear in cycles")
                && why.contains("1980 MHz in the old run and 1584 MHz in the new")
                && why.contains("--lock-clocks"),
            "{why}"
        );
        // 50% slower in time at a 10% lower clock: slower in cycles too.
        let (time, cycles, _) = verdict(matmul_run(1500.0, 1782.0));
        assert_eq!(
            (time, cycles),
            (Some(Verdict::Slower), Some(Verdict::Slower))
        );
        // The same clock: the cycles are not judged, and the time stands.
        let (time, cycles, _) = verdict(matmul_run(1250.0, 1980.0));
        assert_eq!((time, cycles), (Some(Verdict::Slower), None));
    }

    /// `bench_run`'s one row on each GPU of `devices`, at `ns[i]` on the i-th.
    fn node_run(devices: &[u32], ns: &[f64]) -> BenchReport {
        let mut report = bench_run(false, 1.0);
        let row = report.benchmarks.pop().unwrap();
        for (&index, &ns) in devices.iter().zip(ns) {
            let mut on = bench_run(false, ns).benchmarks.pop().unwrap();
            on.device = Some(crate::devices::DeviceKey {
                index,
                uuid: Some(format!("GPU-{index}")),
                pci_bus_id: None,
            });
            report.benchmarks.push(BenchResult {
                id: row.id.clone(),
                ..on
            });
        }
        report
    }

    #[test]
    fn gpus_match_by_ordinal_and_a_one_gpu_run_s_rows_are_gpu_0_s() {
        use super::super::stats::Verdict;
        let history = History::default();
        // GPU 1 is 30% slower in the new run; GPU 0 is unchanged.
        let old = node_run(&[0, 1], &[1000.0, 1000.0]);
        let new = node_run(&[0, 1], &[1000.0, 1300.0]);
        let rows = benchmarks(&old, &new, Some(0.02), &history, &[]);
        let got: Vec<(Option<u32>, Option<Verdict>)> = rows
            .iter()
            .map(|r| (r.device.as_ref().map(|d| d.index), r.verdict))
            .collect();
        assert_eq!(got.len(), 2, "{rows:?}");
        assert_eq!(got[1], (Some(1), Some(Verdict::Slower)));
        assert_ne!(got[0].1, Some(Verdict::Slower));
        // An old file of one GPU (no device) matches the new run's GPU 0; GPU 1 is new.
        let one = bench_run(false, 1000.0);
        let rows = benchmarks(&one, &new, Some(0.02), &history, &[]);
        assert_eq!(rows.len(), 2);
        assert!(rows[0].old_median_ns.is_some() && rows[0].new_median_ns.is_some());
        assert_eq!(rows[1].old_status, None);
        assert_eq!(rows[1].device.as_ref().map(|d| d.index), Some(1));
        // And GPU 3 of a run over GPUs 2 and 3 matches nothing of it.
        let other = node_run(&[2, 3], &[1000.0, 1000.0]);
        let rows = benchmarks(&one, &other, Some(0.02), &history, &[]);
        assert_eq!(rows.len(), 3, "none matched: {rows:?}");
    }

    #[test]
    fn only_differences_are_changes() {
        assert!(change("driver", Some("580".into()), Some("580".into())).is_none());
        let c = change("driver", Some("550".into()), Some("580".into())).unwrap();
        assert_eq!(
            (c.old.as_deref(), c.new.as_deref()),
            (Some("550"), Some("580"))
        );
    }
}
