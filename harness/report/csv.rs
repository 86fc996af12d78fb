//! CSV: the scan as one row per library (its installation's columns repeated), the doctor as one
//! row per finding, the check as one row per check of each combination, the bench as one row per
//! benchmark with the environment repeated (rows of many runs concatenate); for spreadsheets and
//! diffs.

use super::{driver_version, Exporter};
use crate::bench::model::{BenchReport, BenchResult};
use crate::compare::model::CompareReport;
use crate::diagnose::finding::Finding;
use crate::doctor::DoctorReport;
use crate::error::OutputError;
use crate::merge::MergeReport;
use crate::model::{Installation, Library, ScanReport};
use crate::pathname::Shown;
use crate::schema::check::CheckReport;

pub struct Csv;

const SCAN_HEADER: &[&str] = &[
    "root",
    "layout",
    "cuda_version",
    "driver_version",
    "name",
    "version",
    "soname",
    "path",
    "real_path",
    "elf_class",
    "machine",
    "needed",
    "runpath",
    "dlopen_deps",
    "sass",
    "ptx",
    "problems",
];

const DOCTOR_HEADER: &[&str] = &[
    "severity",
    "cause",
    "library",
    "path",
    "installation",
    "missing",
    "needed_by",
    "candidates",
    "message",
    "fix",
    "evidence",
];

const CHECK_HEADER: &[&str] = &[
    "combination",
    "cuda_version",
    "driver_version",
    "gpu",
    "check",
    "library",
    "status",
    "reason",
    "duration_ms",
    "simulated",
    "device",
    "device_uuid",
    "device_pci_bus_id",
];

const BENCH_HEADER: &[&str] = &[
    "id",
    "combination",
    "benchmark",
    "size",
    "precision",
    "implementation",
    "mode",
    "arch",
    "status",
    "median_ns",
    "q1_ns",
    "q3_ns",
    "min_ns",
    "max_ns",
    "noise",
    "samples",
    "throughput",
    "unit",
    "pct_of_peak",
    "pct_of_spec",
    "verified",
    "max_relative_error",
    "cupti_kernel_ns",
    "event_over_cupti",
    "sm_clock_mhz_min",
    "sm_clock_mhz_max",
    "throttled_samples",
    "stopped_by",
    "reason",
    "host",
    "gpu",
    "driver_version",
    "cuda_version",
    "started",
    "in_l2",
    "simulated",
    "device",
    "device_uuid",
    "device_pci_bus_id",
    "nccl_gpus",
    "algbw_gbps",
    "busbw_gbps",
    "conditions",
];

const COMPARE_HEADER: &[&str] = &[
    "section",
    "key",
    "old",
    "new",
    "verdict",
    "ratio",
    "ratio_low",
    "ratio_high",
    "clocks_differ",
    "detail",
    "simulated",
    "floor",
    "could_see",
    "cycles_verdict",
    "threshold",
];

fn encode(e: impl std::fmt::Display) -> OutputError {
    OutputError::Encode {
        format: "csv",
        reason: e.to_string(),
    }
}

fn table(header: &[&str], rows: impl Iterator<Item = Vec<String>>) -> Result<Vec<u8>, OutputError> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    writer.write_record(header).map_err(encode)?;
    for row in rows {
        writer.write_record(row).map_err(encode)?;
    }
    writer.into_inner().map_err(encode)
}

impl Exporter for Csv {
    fn scan(&self, report: &ScanReport) -> Result<Vec<u8>, OutputError> {
        let rows = report
            .installations
            .iter()
            .flat_map(|i| i.libraries.iter().map(move |l| library_row(i, l)));
        table(SCAN_HEADER, rows)
    }

    fn doctor(&self, report: &DoctorReport) -> Result<Vec<u8>, OutputError> {
        let path =
            |p: &Option<std::path::PathBuf>| p.as_ref().map(|p| p.shown()).unwrap_or_default();
        // One row per failure: folded findings are unfolded.
        let rows = report.findings.iter().flat_map(Finding::unfolded).map(|f| {
            vec![
                f.severity.name().to_string(),
                f.cause.code(),
                f.library.clone().unwrap_or_default(),
                path(&f.path),
                path(&f.installation),
                f.missing.clone().unwrap_or_default(),
                f.needed_by.clone().unwrap_or_default(),
                f.candidates
                    .iter()
                    .map(|c| c.shown())
                    .collect::<Vec<_>>()
                    .join(" "),
                f.message.clone(),
                f.fix.clone(),
                f.evidence.join("; "),
            ]
        });
        table(DOCTOR_HEADER, rows)
    }

    fn bench(&self, report: &BenchReport) -> Result<Vec<u8>, OutputError> {
        table(
            BENCH_HEADER,
            report.benchmarks.iter().map(|r| bench_row(report, r)),
        )
    }

    fn compare(&self, report: &CompareReport) -> Result<Vec<u8>, OutputError> {
        // Which run was on the simulated GPU, on every row: its figures are no GPU's.
        let simulated = match (report.old.simulated, report.new.simulated) {
            (true, true) => "both",
            (true, false) => "old",
            (false, true) => "new",
            (false, false) => "",
        };
        // A benchmark row adds where its floor came from, the smallest change it could call,
        // its verdict in cycles and the threshold it took from its floor.
        let row = |cells: [String; 10], bench: Option<&crate::compare::model::BenchmarkRow>| {
            let mut cells = cells.to_vec();
            cells.push(simulated.to_owned());
            cells.push(bench.map(super::compare::floor_cell).unwrap_or_default());
            cells.push(opt(bench.and_then(|b| b.could_see)));
            cells.push(opt(bench.and_then(|b| b.cycles_verdict).map(|v| v.name())));
            cells.push(opt(bench.and_then(|b| b.threshold)));
            cells
        };
        let environment = report.environment.iter().map(|c| {
            row(
                [
                    "environment".into(),
                    c.what.clone(),
                    opt(c.old.as_ref()),
                    opt(c.new.as_ref()),
                    String::new(),
                    String::new(),
                    String::new(),
                    String::new(),
                    String::new(),
                    String::new(),
                ],
                None,
            )
        });
        let benchmarks = report.benchmarks.iter().map(|b| {
            row(
                [
                    "benchmark".into(),
                    b.label(),
                    opt(b.old_median_ns),
                    opt(b.new_median_ns),
                    opt(b.verdict.map(|v| v.name())),
                    opt(b.ratio.map(|r| r.ratio)),
                    opt(b.ratio.map(|r| r.low)),
                    opt(b.ratio.map(|r| r.high)),
                    b.clocks_differ.to_string(),
                    format!(
                        "{} -> {}",
                        b.old_status.as_deref().unwrap_or("-"),
                        b.new_status.as_deref().unwrap_or("-")
                    ),
                ],
                Some(b),
            )
        });
        let checks = report.checks.iter().map(|c| {
            row(
                [
                    "check".into(),
                    format!("{} {}", c.combination, c.id),
                    opt(c.old_status.as_ref()),
                    opt(c.new_status.as_ref()),
                    super::compare::check_change(c).to_owned(),
                    String::new(),
                    String::new(),
                    String::new(),
                    String::new(),
                    super::compare::reason(c).to_owned(),
                ],
                None,
            )
        });
        let items = |section: &'static str, list: &'static str| {
            let source = if list == "findings" {
                &report.findings
            } else {
                &report.libraries
            };
            source.iter().map(move |i| {
                row(
                    [
                        section.into(),
                        i.what.clone(),
                        String::new(),
                        String::new(),
                        i.change.clone(),
                        String::new(),
                        String::new(),
                        String::new(),
                        String::new(),
                        String::new(),
                    ],
                    None,
                )
            })
        };
        table(
            COMPARE_HEADER,
            environment
                .chain(benchmarks)
                .chain(checks)
                .chain(items("finding", "findings"))
                .chain(items("library", "libraries")),
        )
    }

    fn merge(&self, report: &MergeReport) -> Result<Vec<u8>, OutputError> {
        let header = [
            "node",
            "gpu",
            "driver",
            "combination",
            "id",
            "median_ns",
            "fleet_median_ns",
            "ratio",
            "failed_checks",
            "outlier",
            "simulated",
            "device",
            "device_uuid",
            "device_pci_bus_id",
        ];
        table(
            &header,
            report.rows.iter().map(|r| {
                vec![
                    r.node.clone(),
                    opt(r.gpu.as_ref()),
                    opt(r.driver.as_ref()),
                    r.combination.clone(),
                    r.id.clone(),
                    opt(r.median_ns),
                    opt(r.fleet_median_ns),
                    opt(r.ratio),
                    r.failed_checks.join(" "),
                    r.outlier.to_string(),
                    r.simulated.to_string(),
                    opt(r.device.as_ref().map(|d| d.index)),
                    opt(r.device.as_ref().and_then(|d| d.uuid.as_ref())),
                    opt(r.device.as_ref().and_then(|d| d.pci_bus_id.as_ref())),
                ]
            }),
        )
    }

    fn check(&self, report: &CheckReport) -> Result<Vec<u8>, OutputError> {
        let gpu = report
            .gpu
            .devices
            .first()
            .map(|d| d.name.clone())
            .unwrap_or_default();
        let rows = report.combinations.iter().flat_map(|c| {
            let cuda = c.cuda_version.clone().unwrap_or_default();
            let driver = driver_version(report, c).unwrap_or_default().to_string();
            let gpu = gpu.clone();
            c.checks.iter().map(move |check| {
                let device = check.device.as_ref();
                let gpu = device
                    .and_then(|d| report.gpu.devices.iter().find(|g| g.index == d.index))
                    .map_or_else(|| gpu.clone(), |g| g.name.clone());
                vec![
                    c.name.clone(),
                    cuda.clone(),
                    driver.clone(),
                    gpu,
                    check.id.clone(),
                    check.library.clone(),
                    check.status.name().to_string(),
                    check.reason.clone(),
                    format!("{:.3}", check.duration_ms),
                    c.simulated.to_string(),
                    opt(device.map(|d| d.index)),
                    opt(device.and_then(|d| d.uuid.as_ref())),
                    opt(device.and_then(|d| d.pci_bus_id.as_ref())),
                ]
            })
        });
        table(CHECK_HEADER, rows)
    }
}

/// An optional value as a cell: empty when absent.
fn opt(value: Option<impl ToString>) -> String {
    value.map(|v| v.to_string()).unwrap_or_default()
}

/// One benchmark's row: its key, its figures, and the environment that produced them.
fn bench_row(report: &BenchReport, r: &BenchResult) -> Vec<String> {
    let p = &r.parameters;
    let s = r.summary.as_ref();
    let combination = report.combinations.iter().find(|c| c.name == r.combination);
    let cuda = combination.and_then(|c| c.cuda_version.clone());
    let telemetry = r.telemetry.as_ref();
    let nccl = r.nccl.as_ref();
    vec![
        r.id.clone(),
        r.combination.clone(),
        r.benchmark.clone(),
        opt(p.size),
        opt(p.precision.as_ref()),
        opt(p.implementation.as_ref()),
        opt(p.mode.map(|m| m.name())),
        opt(p.arch.as_ref()),
        r.status.name().to_owned(),
        opt(s.map(|s| s.median_ns)),
        opt(s.map(|s| s.q1_ns)),
        opt(s.map(|s| s.q3_ns)),
        opt(s.map(|s| s.min_ns)),
        opt(s.map(|s| s.max_ns)),
        opt(s.map(|s| s.noise)),
        r.samples_taken
            .unwrap_or(r.samples_ns.len() as u64)
            .to_string(),
        opt(r.throughput.as_ref().map(|t| t.value)),
        opt(r.throughput.as_ref().map(|t| t.unit.clone())),
        opt(r.pct_of_peak),
        opt(r.pct_of_spec),
        opt(r.verified.as_ref().map(|v| v.passed)),
        opt(r.verified.as_ref().map(|v| v.max_relative_error)),
        opt(r.cupti.as_ref().map(|c| c.kernel_ns)),
        opt(r.cupti.as_ref().map(|c| c.event_over_cupti)),
        opt(telemetry.and_then(|t| t.sm_clock_mhz_min)),
        opt(telemetry.and_then(|t| t.sm_clock_mhz_max)),
        opt(telemetry.map(|t| t.throttled_samples.len())),
        opt(r.stopped_by.map(super::bench::stopped_by)),
        opt(r.reason.as_ref()),
        report.host.hostname.clone(),
        match &r.device {
            Some(d) => report.gpu_model(d),
            None => opt(report.gpu.devices.first().map(|d| d.name.clone())),
        },
        opt(report.gpu.driver_version.as_ref()),
        opt(cuda),
        report.started.clone(),
        r.in_l2.to_string(),
        combination
            .map_or(report.simulated, |c| c.simulated)
            .to_string(),
        opt(r.device.as_ref().map(|d| d.index)),
        opt(r.device.as_ref().and_then(|d| d.uuid.as_ref())),
        opt(r.device.as_ref().and_then(|d| d.pci_bus_id.as_ref())),
        opt(nccl.map(|n| n.devices.len())),
        opt(nccl.and_then(|n| n.algbw_gbps)),
        opt(nccl.and_then(|n| n.busbw_gbps)),
        conditions(r),
    ]
}

/// A result's GPU state in short: `clean`, or what disturbed each GPU it ran on (`GPU 0 busy:
/// 2 other processes (...)`); empty when none was read.
fn conditions(r: &BenchResult) -> String {
    match r.conditions.as_slice() {
        [] => String::new(),
        [one] => one.short(),
        several => several
            .iter()
            .map(|c| format!("GPU {} {}", c.before.index, c.short()))
            .collect::<Vec<_>>()
            .join("; "),
    }
}

fn library_row(installation: &Installation, library: &Library) -> Vec<String> {
    let text = |v: &Option<String>| v.clone().unwrap_or_default();
    let problems: Vec<String> = library.problems.iter().map(|p| p.message.clone()).collect();
    vec![
        installation.root.shown(),
        installation.layout.name().to_string(),
        text(&installation.cuda_version),
        text(&installation.driver_version),
        library.name.clone(),
        text(&library.version),
        text(&library.soname),
        library.path.shown(),
        library.real_path.shown(),
        text(&library.elf_class),
        text(&library.machine),
        library.needed.join(" "),
        library.runpath.join(":"),
        library.dlopen_deps.join(" "),
        library.sass.join(" "),
        library.ptx.join(" "),
        problems.join("; "),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::model::{BenchResult, Key, Parameters, Side};

    /// The `simulated` cell of each row of a bench CSV.
    fn simulated_cells(report: &BenchReport) -> Vec<String> {
        let csv = Csv.bench(report).unwrap();
        let mut reader = csv::Reader::from_reader(csv.as_slice());
        let at = (reader.headers().unwrap().iter())
            .position(|h| h == "simulated")
            .expect("a simulated column");
        reader
            .records()
            .map(|r| r.unwrap()[at].to_owned())
            .collect()
    }

    #[test]
    fn every_bench_row_says_whether_it_ran_on_the_simulated_gpu() {
        let result = || {
            BenchResult::from_key(Key {
                combination: "c".into(),
                benchmark: "vector_add",
                side: Side::Gpu,
                parameters: Parameters::default(),
            })
        };
        let simulated = BenchReport::of(true, vec![result(), result()]);
        assert_eq!(simulated_cells(&simulated), ["true", "true"]);
        let real = BenchReport::of(false, vec![result()]);
        assert_eq!(simulated_cells(&real), ["false"]);
    }
}
