//! Exporters: one module per format, all behind one trait that turns a report into bytes.
//! JSON is the canonical form; the others are views of it.

mod baseline;
mod bench;
mod calibration;
mod compare;
mod csv;
pub mod files;
mod fleet;
pub mod format;
mod html;
mod json;
mod junit;
mod markdown;
mod node;
mod openmetrics;
mod roofline_svg;
mod svg;
mod table;
mod terminal;

use crate::bench::model::BenchReport;
use crate::compare::model::CompareReport;
use crate::doctor::DoctorReport;
use crate::error::OutputError;
use crate::gpu::GpuInfo;
use crate::history::{Chart, History, RunEntry};
use crate::merge::MergeReport;
use crate::model::ScanReport;
use crate::schema::check::{CheckReport, CombinationReport, LibraryUse, Status};
use format::{Format, PageFormat, ReportOptions};
use std::path::Path;

/// Turns reports into the bytes of one format.
pub trait Exporter {
    /// The scan report in this format.
    fn scan(&self, report: &ScanReport) -> Result<Vec<u8>, OutputError>;
    /// The doctor report in this format.
    fn doctor(&self, report: &DoctorReport) -> Result<Vec<u8>, OutputError>;
    /// The check report in this format.
    fn check(&self, report: &CheckReport) -> Result<Vec<u8>, OutputError>;
    /// The bench report in this format.
    fn bench(&self, report: &BenchReport) -> Result<Vec<u8>, OutputError>;
    /// The comparison of two runs in this format.
    fn compare(&self, report: &CompareReport) -> Result<Vec<u8>, OutputError>;
    /// A fleet's merged results in this format.
    fn merge(&self, report: &MergeReport) -> Result<Vec<u8>, OutputError>;
}

/// The exporter for a format; `color` matters to the terminal report only.
pub fn exporter(format: Format, color: bool) -> Box<dyn Exporter> {
    exporter_for(&ReportOptions {
        format,
        destination: crate::output::Destination::Stdout,
        color,
        verbose: false,
    })
}

/// The exporter the options ask for; colour and verbosity matter to the terminal report only.
pub fn exporter_for(options: &ReportOptions) -> Box<dyn Exporter> {
    match options.format {
        Format::Terminal => Box::new(terminal::Terminal {
            color: options.color,
            verbose: options.verbose,
        }),
        Format::Json => Box::new(json::Json),
        Format::Csv => Box::new(csv::Csv),
        Format::Markdown => Box::new(markdown::Markdown),
        Format::Junit => Box::new(junit::Junit),
        Format::Openmetrics => Box::new(openmetrics::Openmetrics),
    }
}

pub use baseline::baseline;
pub use calibration::calibration;
pub use fleet::{fleet, ingest};

/// The history of runs (`stackbench report`) as a page: HTML with charts, Markdown without, or
/// JSON.
pub fn history(format: PageFormat, history: &History) -> Result<Vec<u8>, OutputError> {
    Ok(match format {
        PageFormat::Html => html::history(history).into_bytes(),
        PageFormat::Markdown => markdown::history(history).into_bytes(),
        PageFormat::Json => json::to_json(history)?,
    })
}

/// `12 runs (8 bench, 4 check) from 2026-11-01T02:00:00Z to 2026-11-23T02:00:00Z on 2 hosts;
/// gathered 2026-11-23T06:00:00Z`.
fn history_headline(history: &History) -> String {
    let mut kinds: Vec<(&str, usize)> = Vec::new();
    for run in &history.runs {
        match kinds.iter_mut().find(|(kind, _)| *kind == run.kind) {
            Some((_, n)) => *n += 1,
            None => kinds.push((&run.kind, 1)),
        }
    }
    let kinds: Vec<String> = kinds
        .iter()
        .map(|(kind, n)| format!("{n} {kind}"))
        .collect();
    let hosts: std::collections::BTreeSet<&str> =
        history.runs.iter().map(|r| r.hostname.as_str()).collect();
    let span = match (history.runs.first(), history.runs.last()) {
        (Some(first), Some(last)) => format!(" from {} to {}", first.when, last.when),
        _ => String::new(),
    };
    let simulated = history.runs.iter().filter(|r| r.simulated).count();
    let simulated = match simulated {
        0 => String::new(),
        n => format!(
            " ({n} on the {SIMULATED_GPU}: their figures are a model's, charted apart as \
             \"(simulated)\")"
        ),
    };
    format!(
        "{} ({}){span} on {}{simulated}; gathered {}",
        count(history.runs.len(), "run"),
        kinds.join(", "),
        count(hosts.len(), "host"),
        history.generated
    )
}

/// A run's GPUs for a cell, `(SIMULATED GPU)` after them when it ran on the simulated driver.
fn run_gpus(run: &RunEntry) -> String {
    let names = gpus(&run.gpus);
    if run.simulated {
        format!("{names} ({SIMULATED_GPU})")
    } else {
        names
    }
}

/// ` (SIMULATED GPU)` after a check matrix's heading when its run was.
fn matrix_mark(matrix: &crate::history::CheckMatrix) -> String {
    if matrix.simulated {
        format!(" ({SIMULATED_GPU})")
    } else {
        String::new()
    }
}

/// A run's counts in one line: `28 measured, 0 skipped, 0 failed`.
fn history_counts(run: &RunEntry) -> String {
    let counts: Vec<String> = run
        .counts
        .iter()
        .map(|(what, n)| format!("{n} {what}"))
        .collect();
    counts.join(", ")
}

/// GPU names for a cell: `NVIDIA H100 80GB HBM3`, or `no GPU`.
fn gpus(names: &[String]) -> String {
    if names.is_empty() {
        "no GPU".to_owned()
    } else {
        names.join(", ")
    }
}

/// The distinct sets of versions behind a chart's points, in the order first seen; a set's
/// mark is its place in this list.
fn version_sets(chart: &Chart) -> Vec<&str> {
    let mut sets: Vec<&str> = Vec::new();
    for point in chart.series.iter().flat_map(|s| s.points.iter()) {
        if !sets.contains(&point.versions.as_str()) {
            sets.push(&point.versions);
        }
    }
    sets
}

/// The mark of a set of versions in `sets`: `v1`, `v2`, ...
fn version_mark(sets: &[&str], versions: &str) -> String {
    let at = sets.iter().position(|s| *s == versions).unwrap_or(0);
    format!("v{}", at + 1)
}

/// A list for one table cell: items joined by a space, `-` when empty.
fn cell(items: &[String]) -> String {
    if items.is_empty() {
        "-".to_string()
    } else {
        items.join(" ")
    }
}

/// SASS and PTX targets in short form: `sm 50 60 90a`, `compute 90`.
fn archs(items: &[String], prefix: &str) -> String {
    if items.is_empty() {
        return "-".to_string();
    }
    let numbers: Vec<&str> = items
        .iter()
        .map(|a| a.strip_prefix(prefix).unwrap_or(a))
        .collect();
    format!("{} {}", prefix.trim_end_matches('_'), numbers.join(" "))
}

/// One line saying which GPU a report checked against.
fn gpu_line(gpu: &GpuInfo) -> String {
    let devices: Vec<String> = gpu
        .devices
        .iter()
        .map(|d| format!("{} (compute capability {})", d.name, d.compute_capability))
        .collect();
    let mut line = if devices.is_empty() {
        "no GPU".to_string()
    } else {
        devices.join(", ")
    };
    line.push_str(&format!(" [{}]", gpu.source));
    if let Some(v) = &gpu.driver_version {
        line.push_str(&format!(", kernel driver {v}"));
    }
    if let Some(note) = &gpu.note {
        line.push_str(&format!(": {note}"));
    }
    line
}

/// A merged row's cells: node, GPU, driver, combination, benchmark, median, the fleet's median,
/// the difference from it, and the failing checks.
fn merge_cells(row: &crate::merge::Row) -> Vec<String> {
    let dash = |v: Option<&String>| v.cloned().unwrap_or_else(|| "-".to_owned());
    let time = |v: Option<f64>| v.map_or("-".to_owned(), bench::duration);
    let gpu = match &row.device {
        Some(d) => format!("{} (GPU {})", dash(row.gpu.as_ref()), d.index),
        None => dash(row.gpu.as_ref()),
    };
    vec![
        row.node.clone(),
        gpu,
        dash(row.driver.as_ref()),
        row.combination.clone(),
        row.id.clone(),
        time(row.median_ns),
        time(row.fleet_median_ns),
        row.ratio
            .map_or("-".to_owned(), |r| format!("{:+.1}%", 100.0 * (r - 1.0))),
        if row.failed_checks.is_empty() {
            "-".to_owned()
        } else {
            row.failed_checks.join(" ")
        },
        if row.outlier { "OUTLIER" } else { "" }.to_owned(),
    ]
}

/// The merged table's header, as [`merge_cells`] fills it.
const MERGE_HEADER: [&str; 10] = [
    "node",
    "GPU",
    "driver",
    "combination",
    "benchmark",
    "median",
    "fleet median",
    "from fleet",
    "failed checks",
    "outlier",
];

/// `1 combination`, `3 combinations`: a count with its noun.
fn count(n: usize, noun: &str) -> String {
    match (n, noun.strip_suffix('y')) {
        (1, _) => format!("{n} {noun}"),
        (_, Some(stem)) => format!("{n} {stem}ies"),
        _ => format!("{n} {noun}s"),
    }
}

/// The check report's counts, in the order every format gives them:
/// `3 combinations, 41 passed, 3 warnings, 20 skipped` and the failures apart (`9 failed`),
/// so a format can stress them.
fn check_counts(report: &CheckReport) -> (String, String) {
    let [pass, warn, skip, fail] = report.counts();
    (
        format!(
            "{}, {pass} passed, {}, {skip} skipped",
            count(report.combinations.len(), "combination"),
            count(warn, "warning")
        ),
        format!("{fail} failed"),
    )
}

/// The first line of a report made with `--load-untrusted`.
pub const LOAD_UNTRUSTED: &str = "warning: --load-untrusted: libraries were loaded whoever could write them, as the user running stackbench; the trust rule was off";

/// The words every human-readable report of a run on stackbench's simulated driver starts with.
pub const SIMULATED_GPU: &str = "SIMULATED GPU";

/// What a report of a run on the simulated driver says first: `SIMULATED GPU: ...`, naming the
/// combinations that ran on it when not all of them did; `None` for a real run.
fn simulated_banner<'a>(
    simulated: bool,
    combinations: impl Iterator<Item = (&'a str, bool)>,
    what: &str,
) -> Option<String> {
    if !simulated {
        return None;
    }
    let all: Vec<(&str, bool)> = combinations.collect();
    let which: Vec<&str> = all.iter().filter(|(_, s)| *s).map(|(n, _)| *n).collect();
    let scope = if which.len() == all.len() {
        String::new()
    } else {
        format!(" ({})", which.join(", "))
    };
    Some(format!(
        "{SIMULATED_GPU}{scope}: {what} ran on stackbench's simulated driver (tests/simgpu), not \
         on a GPU"
    ))
}

/// [`simulated_banner`] of a check report.
fn check_simulated(report: &CheckReport) -> Option<String> {
    simulated_banner(
        report.simulated,
        report
            .combinations
            .iter()
            .map(|c| (c.name.as_str(), c.simulated)),
        "these checks",
    )
}

/// [`simulated_banner`] of a bench report.
fn bench_simulated(report: &BenchReport) -> Option<String> {
    simulated_banner(
        report.simulated,
        report
            .combinations
            .iter()
            .map(|c| (c.name.as_str(), c.simulated)),
        "these benchmarks",
    )
}

/// The GPU line of a check report: [`gpu_line`] and the `--target` compiled for.
fn check_gpu_line(report: &CheckReport) -> String {
    let mut line = gpu_line(&report.gpu);
    if let Some(target) = &report.target {
        line.push_str(&format!("; --target {target}"));
    }
    line
}

/// Whether a skip only follows from something shown elsewhere: a check it needs did not pass
/// ("needs ..."), or the library is not installed in the combination ("no cuFFT in this
/// combination (libcufft.so.*)"). Reports list the other skips' reasons.
fn routine_skip(reason: &str) -> bool {
    reason.starts_with("needs ")
        || (reason.starts_with("no ") && reason.contains(" in this combination (lib"))
}

/// A failure, warning or notable skip, with every combination that has the same check end
/// the same way for the same reason (a host's problem is listed once, not per combination).
#[derive(Debug, PartialEq)]
struct Notice<'a> {
    status: Status,
    /// The check's label: its id, with the GPU in a run over several.
    id: String,
    reason: &'a str,
    combinations: Vec<&'a str>,
}

impl Notice<'_> {
    /// The combinations it concerns: `all combinations` when there are several and it
    /// concerns each, else their names joined by `, ` (each passed through `name`).
    fn scope(&self, total: usize, name: impl Fn(&str) -> String) -> String {
        if total > 1 && self.combinations.len() == total {
            "all combinations".to_string()
        } else {
            let names: Vec<String> = self.combinations.iter().map(|c| name(c)).collect();
            names.join(", ")
        }
    }
}

/// The report's failures, then its warnings, then its skips that are not routine (see
/// [`routine_skip`]); within each, in order of first appearance.
fn notices(report: &CheckReport) -> Vec<Notice<'_>> {
    let mut notices: Vec<Notice> = Vec::new();
    for status in [Status::Fail, Status::Warn, Status::Skip] {
        for combination in &report.combinations {
            for check in combination.checks.iter().filter(|c| c.status == status) {
                if status == Status::Skip && routine_skip(&check.reason) {
                    continue;
                }
                let id = check.label();
                let same = notices
                    .iter_mut()
                    .find(|n| n.status == status && n.id == id && n.reason == check.reason);
                match same {
                    Some(notice) => notice.combinations.push(&combination.name),
                    None => notices.push(Notice {
                        status,
                        id,
                        reason: &check.reason,
                        combinations: vec![&combination.name],
                    }),
                }
            }
        }
    }
    notices
}

/// The driver version a combination ran with: its `libcuda.so.1`'s, else the kernel driver's.
fn driver_version<'a>(
    report: &'a CheckReport,
    combination: &'a CombinationReport,
) -> Option<&'a str> {
    combination
        .driver
        .as_ref()
        .and_then(|d| d.version.as_deref())
        .or(report.gpu.driver_version.as_deref())
}

/// The file a library was mapped from, else where a program of the combination finds it.
fn library_path(library: &LibraryUse) -> Option<&Path> {
    library.mapped.as_deref().or(library.resolved.as_deref())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::protocol::Component;
    use crate::check::worker::session::not_installed;
    use crate::model::HostInfo;
    use crate::schema::check::{CheckResult, Origin};
    use crate::tags::CHECK_SCHEMA;
    use rstest::rstest;

    /// `--load-untrusted` is the first line of every text report of check and bench, and of
    /// none without it.
    #[test]
    fn load_untrusted_is_the_first_line_of_the_text_reports() {
        let exporters: [Box<dyn Exporter>; 2] = [
            Box::new(terminal::Terminal {
                color: false,
                verbose: false,
            }),
            Box::new(markdown::Markdown),
        ];
        for loaded in [false, true] {
            let check = CheckReport {
                load_untrusted: loaded,
                ..report(Vec::new())
            };
            let bench = crate::bench::model::BenchReport {
                load_untrusted: loaded,
                ..crate::bench::model::BenchReport::of(false, Vec::new())
            };
            for exporter in &exporters {
                for text in [exporter.check(&check), exporter.bench(&bench)] {
                    let text = String::from_utf8(text.unwrap()).unwrap();
                    let first = text.lines().next().unwrap_or_default();
                    assert_eq!(first.contains(LOAD_UNTRUSTED), loaded, "{text}");
                }
            }
        }
    }

    fn result(id: &str, status: Status, reason: &str) -> CheckResult {
        CheckResult {
            duration_ms: 1.0,
            ..CheckResult::new(id, status, reason)
        }
    }

    pub(super) fn combination(name: &str, checks: Vec<CheckResult>) -> CombinationReport {
        CombinationReport {
            name: name.into(),
            origin: Origin::Installation,
            root: None,
            layout: None,
            cuda_version: None,
            search_path: String::new(),
            driver: None,
            libraries: Vec::new(),
            checks,
            duration_ms: 0.0,
            simulated: false,
            loaded_as: None,
            environment: Vec::new(),
            left_out: Vec::new(),
        }
    }

    fn report(combinations: Vec<CombinationReport>) -> CheckReport {
        CheckReport {
            schema: CHECK_SCHEMA.into(),
            started: "2026-01-01T00:00:00Z".into(),
            host: HostInfo {
                hostname: "h".into(),
                os: "linux".into(),
                arch: "x86_64".into(),
                stackbench_version: "0".into(),
                boot_id: None,
            },
            gpu: GpuInfo::none("no NVML"),
            target: None,
            driver_dir: None,
            simulated: false,
            load_untrusted: false,
            combinations,
            node: None,
            baseline: None,
        }
    }

    #[test]
    fn a_simulated_run_says_so_and_names_its_combinations_when_not_all_ran_on_it() {
        let mut run = report(vec![combination("a", vec![]), combination("b", vec![])]);
        assert_eq!(check_simulated(&run), None);
        run.simulated = true;
        run.combinations[1].simulated = true;
        assert_eq!(
            check_simulated(&run).as_deref(),
            Some(
                "SIMULATED GPU (b): these checks ran on stackbench's simulated driver \
                 (tests/simgpu), not on a GPU"
            )
        );
        run.combinations[0].simulated = true;
        assert!(check_simulated(&run)
            .unwrap()
            .starts_with("SIMULATED GPU: these checks"));
    }

    #[test]
    fn groups_follow_first_appearance_across_combinations() {
        let pass = |id| result(id, Status::Pass, "ok");
        let r = report(vec![
            combination(
                "a",
                vec![
                    pass("driver.init"),
                    pass("cudart.load"),
                    pass("driver.version"),
                ],
            ),
            combination(
                "b",
                vec![
                    pass("nvrtc.load"),
                    pass("driver.library"),
                    pass("cudart.load"),
                ],
            ),
        ]);
        assert_eq!(
            r.check_groups(),
            vec![
                (
                    "driver",
                    vec!["driver.init", "driver.version", "driver.library"]
                ),
                ("cudart", vec!["cudart.load"]),
                ("nvrtc", vec!["nvrtc.load"]),
            ]
        );
    }

    #[rstest]
    #[case(
        "needs driver.init, which failed: cuInit: CUDA_ERROR_NO_DEVICE (100)",
        true
    )]
    #[case(
        "needs cublas.handle; cublas.load was skipped: no cuBLAS in this combination",
        true
    )]
    #[case(
        "BF16 GEMM needs compute capability 8.0 or newer; this GPU is 7.0",
        false
    )]
    #[case(
        "no device and no --target: give --target sm_XX to compile without a GPU",
        false
    )]
    #[case(
        "no library with GPU code was loaded (the checks that load them did not run)",
        false
    )]
    fn routine_skips(#[case] reason: &str, #[case] routine: bool) {
        assert_eq!(routine_skip(reason), routine, "{reason}");
    }

    #[test]
    fn a_library_not_installed_is_a_routine_skip() {
        for component in Component::ALL {
            assert!(routine_skip(&not_installed(component)), "{component:?}");
        }
    }

    #[test]
    fn notices_collapse_across_combinations_failures_first() {
        let no_device = "cuInit: CUDA_ERROR_NO_DEVICE (100)";
        let r = report(vec![
            combination(
                "a",
                vec![
                    result("driver.health", Status::Warn, "persistence mode off"),
                    result("driver.init", Status::Fail, no_device),
                    result("cudart.memcpy", Status::Skip, "needs driver.devices"),
                ],
            ),
            combination(
                "b",
                vec![
                    result("driver.health", Status::Warn, "persistence mode off"),
                    result(
                        "driver.init",
                        Status::Fail,
                        "cuInit: CUDA_ERROR_UNKNOWN (999)",
                    ),
                    result("cublas.gemm_bf16", Status::Skip, "BF16 GEMM needs 8.0"),
                ],
            ),
        ]);
        let notices = notices(&r);
        let seen: Vec<(Status, &str, &[&str])> = notices
            .iter()
            .map(|n| (n.status, n.id.as_str(), n.combinations.as_slice()))
            .collect();
        assert_eq!(
            seen,
            vec![
                (Status::Fail, "driver.init", &["a"][..]),
                (Status::Fail, "driver.init", &["b"][..]),
                (Status::Warn, "driver.health", &["a", "b"][..]),
                (Status::Skip, "cublas.gemm_bf16", &["b"][..]),
            ]
        );
        assert_eq!(notices[2].scope(2, str::to_owned), "all combinations");
        assert_eq!(notices[0].scope(2, |n| format!("`{n}`")), "`a`");
        assert_eq!(notices[2].scope(3, str::to_owned), "a, b");
    }

    #[rstest]
    #[case(1, "warning", "1 warning")]
    #[case(0, "warning", "0 warnings")]
    #[case(3, "warning", "3 warnings")]
    #[case(1, "note", "1 note")]
    #[case(1, "library", "1 library")]
    #[case(17, "library", "17 libraries")]
    fn counts_have_their_plural(#[case] n: usize, #[case] noun: &str, #[case] text: &str) {
        assert_eq!(count(n, noun), text);
    }
}
