//! Prometheus metrics of a report (`--format openmetrics`), for node_exporter's textfile
//! collector: a health check writes a `*.prom` file, Prometheus scrapes it with the node's other
//! metrics, and alerts read `stackbench_check_status{status="fail"} == 1`. Every family is a
//! gauge named `stackbench_...` in base units; GPUs carry dcgm-exporter's labels (`gpu`,
//! `UUID`, `pci_bus_id`, `Hostname`) so dashboards join them with `DCGM_FI_DEV_*`, except the
//! model, `model_name`: promtool's lint refuses dcgm-exporter's camel-case `modelName`. Runs on
//! the simulated GPU say so in a `simulated` label. Doctor, check, bench and merge reports have
//! metrics; a scan or a comparison of two runs is no node's state, so this format refuses them.

mod exposition;

use super::Exporter;
use crate::bench::model::{self as bench, BenchReport, BenchResult};
use crate::compare::model::CompareReport;
use crate::devices::{dcgm_bus_id, DeviceKey};
use crate::diagnose::finding::{Finding, Severity};
use crate::doctor::DoctorReport;
use crate::error::OutputError;
use crate::gpu::{Gpu, GpuInfo};
use crate::merge::MergeReport;
use crate::model::{HostInfo, ScanReport};
use crate::schema::check::{self as check, CheckReport};
use crate::schema::judgement::{Judgement, Standing};
use exposition::{Exposition, Family, Labels};
use std::collections::BTreeMap;

/// The Prometheus text exporter.
pub struct Openmetrics;

/// Every family, in the order the text has them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Metric {
    RunInfo,
    GpuInfo,
    CombinationInfo,
    LibraryInfo,
    DoctorFindings,
    DoctorCauseFindings,
    DoctorInstallations,
    DoctorLibraries,
    CheckResults,
    CheckStatus,
    CheckNodeFindings,
    NcclBusBytesPerSecond,
    NcclTransportInfo,
    BenchResults,
    BenchStatus,
    BenchMedianSeconds,
    BenchBytesPerSecond,
    BenchFlopPerSecond,
    BenchMeasuredPeakRatio,
    BenchTheoreticalPeakRatio,
    BenchFindings,
    BenchJobFindings,
    MergeNodeInfo,
    MergeMedianSeconds,
    MergeFleetMedianSeconds,
    MergeFleetRatio,
    MergeFailedChecks,
    MergeOutlier,
    BaselineRatio,
    BaselineSlower,
}

impl Family for Metric {
    fn name(self) -> &'static str {
        match self {
            Metric::RunInfo => "stackbench_run_info",
            Metric::GpuInfo => "stackbench_gpu_info",
            Metric::CombinationInfo => "stackbench_combination_info",
            Metric::LibraryInfo => "stackbench_library_info",
            Metric::DoctorFindings => "stackbench_doctor_findings",
            Metric::DoctorCauseFindings => "stackbench_doctor_cause_findings",
            Metric::DoctorInstallations => "stackbench_doctor_installations",
            Metric::DoctorLibraries => "stackbench_doctor_libraries",
            Metric::CheckResults => "stackbench_check_results",
            Metric::CheckStatus => "stackbench_check_status",
            Metric::CheckNodeFindings => "stackbench_check_node_findings",
            Metric::NcclBusBytesPerSecond => "stackbench_nccl_bus_bytes_per_second",
            Metric::NcclTransportInfo => "stackbench_nccl_transport_info",
            Metric::BenchResults => "stackbench_bench_results",
            Metric::BenchStatus => "stackbench_bench_status",
            Metric::BenchMedianSeconds => "stackbench_bench_median_seconds",
            Metric::BenchBytesPerSecond => "stackbench_bench_bytes_per_second",
            Metric::BenchFlopPerSecond => "stackbench_bench_flop_per_second",
            Metric::BenchMeasuredPeakRatio => "stackbench_bench_measured_peak_ratio",
            Metric::BenchTheoreticalPeakRatio => "stackbench_bench_theoretical_peak_ratio",
            Metric::BenchFindings => "stackbench_bench_findings",
            Metric::BenchJobFindings => "stackbench_bench_job_findings",
            Metric::MergeNodeInfo => "stackbench_merge_node_info",
            Metric::MergeMedianSeconds => "stackbench_merge_median_seconds",
            Metric::MergeFleetMedianSeconds => "stackbench_merge_fleet_median_seconds",
            Metric::MergeFleetRatio => "stackbench_merge_fleet_ratio",
            Metric::MergeFailedChecks => "stackbench_merge_failed_checks",
            Metric::MergeOutlier => "stackbench_merge_outlier",
            Metric::BaselineRatio => "stackbench_baseline_ratio",
            Metric::BaselineSlower => "stackbench_baseline_slower",
        }
    }

    fn help(self) -> &'static str {
        match self {
            Metric::RunInfo => "A stackbench run, always 1: the command, stackbench's version, the host, the kernel driver and whether it ran on the simulated GPU.",
            Metric::GpuInfo => "A GPU the run saw through NVML, always 1, labelled as dcgm-exporter labels it.",
            Metric::CombinationInfo => "A combination the run used (a driver and one installation's libraries), always 1, with its CUDA runtime and driver versions.",
            Metric::LibraryInfo => "A CUDA library a combination loaded, always 1, with its version.",
            Metric::DoctorFindings => "Findings of doctor by severity (error, warning, info).",
            Metric::DoctorCauseFindings => "Findings of doctor by cause code and severity; only the causes found.",
            Metric::DoctorInstallations => "CUDA installations doctor found.",
            Metric::DoctorLibraries => "CUDA libraries doctor found in those installations.",
            Metric::CheckResults => "Checks of each combination by status (pass, warn, skip, fail).",
            Metric::CheckStatus => "Each check's result: 1 for its status (pass, warn, skip, fail), 0 for the others.",
            Metric::CheckNodeFindings => "Findings about the node's GPUs together (links, fabric, peer copies), or about a job across nodes (check --nodes), by cause code and severity.",
            Metric::NcclBusBytesPerSecond => "check --nodes: a collective's bus bandwidth across the job (nccl-tests' definition, the slowest rank's time), bytes per second.",
            Metric::NcclTransportInfo => "check --nodes: a transport NCCL used from one node to another (or within one), always 1.",
            Metric::BenchResults => "Benchmarks of each combination by status (measured, skipped, failed).",
            Metric::BenchStatus => "Each benchmark's result: 1 for its status (measured, skipped, failed), 0 for the others.",
            Metric::BenchMedianSeconds => "A benchmark's median time per sample, seconds.",
            Metric::BenchBytesPerSecond => "A benchmark's bandwidth at its median, bytes per second (NCCL collectives: nccl-tests' bus bandwidth).",
            Metric::BenchFlopPerSecond => "A benchmark's floating-point rate at its median, operations per second.",
            Metric::BenchMeasuredPeakRatio => "A benchmark's rate as a share of the card's ceiling measured in the same run (device-to-device copy, best GEMM), 0-1.",
            Metric::BenchTheoreticalPeakRatio => "A benchmark's rate as a share of the card's theoretical peak, 0-1.",
            Metric::BenchFindings => "Findings about the run's GPUs together, by code (slow_device: slower than its same-model peers).",
            Metric::BenchJobFindings => "bench --nodes: findings about the job across nodes (nccl_net_fallback, gdr_disabled, nccl_slow_node, ...), by cause code and severity.",
            Metric::MergeNodeInfo => "A node of the merged fleet, always 1: its GPU model, driver and whether it ran on the simulated GPU.",
            Metric::MergeMedianSeconds => "A node's median time for a benchmark, seconds.",
            Metric::MergeFleetMedianSeconds => "The median of the medians of every GPU of the row's model in the fleet, seconds.",
            Metric::MergeFleetRatio => "A node's median over its fleet's median (1.15 is 15% slower).",
            Metric::MergeFailedChecks => "Checks that failed on a node, per combination.",
            Metric::MergeOutlier => "1 when the row is an outlier (a benchmark slower than its fleet, failing checks), else 0.",
            Metric::BaselineRatio => "A node's cost over its baseline's median node (time over time, or the expected bandwidth over the node's): above 1 is slower.",
            Metric::BaselineSlower => "1 when the node's row is slower than its baseline's range (beyond its robust deviations and twice its threshold), else 0.",
        }
    }
}

/// Why scan and compare reports have no metrics.
fn unsupported(report: &'static str) -> OutputError {
    OutputError::Unsupported {
        format: "openmetrics",
        report,
        instead: "json, csv, markdown or terminal",
    }
}

impl Exporter for Openmetrics {
    fn scan(&self, _report: &ScanReport) -> Result<Vec<u8>, OutputError> {
        Err(unsupported("scan"))
    }

    fn compare(&self, _report: &CompareReport) -> Result<Vec<u8>, OutputError> {
        Err(unsupported("compare"))
    }

    fn doctor(&self, report: &DoctorReport) -> Result<Vec<u8>, OutputError> {
        let mut out = Exposition::new();
        let host = host(&report.host);
        run(&mut out, "doctor", &report.host, &report.gpu, None);
        gpus(&mut out, &scope(&host, "doctor"), &report.gpu);
        let [errors, warnings, infos] = report.severity_counts();
        for (severity, n) in [
            (Severity::Error, errors),
            (Severity::Warning, warnings),
            (Severity::Info, infos),
        ] {
            let labels = host.clone().with("severity", severity.name());
            out.add(Metric::DoctorFindings, &labels, n as f64);
        }
        findings(
            &mut out,
            Metric::DoctorCauseFindings,
            &host,
            &report.findings,
        );
        let libraries: usize = (report.installations.iter())
            .map(|i| i.libraries.len())
            .sum();
        let installations = report.installations.len() as f64;
        out.add(Metric::DoctorInstallations, &host, installations);
        out.add(Metric::DoctorLibraries, &host, libraries as f64);
        text(out)
    }

    fn check(&self, report: &CheckReport) -> Result<Vec<u8>, OutputError> {
        let mut out = Exposition::new();
        let host = host(&report.host);
        run(
            &mut out,
            "check",
            &report.host,
            &report.gpu,
            Some(report.simulated),
        );
        let scope = scope(&host, "check");
        gpus(&mut out, &scope, &report.gpu);
        for c in &report.combinations {
            let versions = |base: &Labels| {
                let driver = super::driver_version(report, c);
                combination(
                    base,
                    &c.name,
                    c.cuda_version.as_deref(),
                    driver,
                    c.simulated,
                )
            };
            out.add(Metric::CombinationInfo, &versions(&scope), 1.0);
            for l in &c.libraries {
                let labels = library(&scope, &c.name, &l.component, l.version.as_deref());
                out.add(Metric::LibraryInfo, &labels, 1.0);
            }
            let combination = versions(&host);
            for status in CHECK_STATUSES {
                let n = c.checks.iter().filter(|k| k.status == status).count();
                let labels = per_combination(&host, &c.name, c.simulated);
                out.add(
                    Metric::CheckResults,
                    &labels.with("status", status.name()),
                    n as f64,
                );
            }
            nodes(&mut out, &combination, &c.checks);
            for k in &c.checks {
                let labels = combination
                    .clone()
                    .with("check", &k.id)
                    .and(&device(&report.gpu, k.device.as_ref()));
                for status in CHECK_STATUSES {
                    let one = flag_value(k.status == status);
                    out.add(
                        Metric::CheckStatus,
                        &labels.clone().with("status", status.name()),
                        one,
                    );
                }
            }
        }
        if let Some(node) = &report.node {
            findings(&mut out, Metric::CheckNodeFindings, &host, &node.findings);
        }
        if let Some(judgement) = &report.baseline {
            baseline(&mut out, judgement);
        }
        text(out)
    }

    fn bench(&self, report: &BenchReport) -> Result<Vec<u8>, OutputError> {
        let mut out = Exposition::new();
        let host = host(&report.host);
        run(
            &mut out,
            "bench",
            &report.host,
            &report.gpu,
            Some(report.simulated),
        );
        let scope = scope(&host, "bench");
        gpus(&mut out, &scope, &report.gpu);
        let kernel_driver = report.gpu.driver_version.as_deref();
        let mut combinations: BTreeMap<&str, Labels> = BTreeMap::new();
        for c in &report.combinations {
            let versions = |base: &Labels| {
                let cuda = c.cuda_version.as_deref();
                combination(base, &c.name, cuda, kernel_driver, c.simulated)
            };
            let info =
                versions(&scope).maybe("driver_cuda_version", c.driver_cuda_version.as_deref());
            out.add(Metric::CombinationInfo, &info, 1.0);
            for l in &c.libraries {
                let labels = library(&scope, &c.name, &l.component, l.version.as_deref());
                out.add(Metric::LibraryInfo, &labels, 1.0);
            }
            let labels = versions(&host);
            for status in BENCH_STATUSES {
                let n = (report.benchmarks.iter())
                    .filter(|b| b.combination == c.name && b.status == status)
                    .count();
                let labels = per_combination(&host, &c.name, c.simulated);
                out.add(
                    Metric::BenchResults,
                    &labels.with("status", status.name()),
                    n as f64,
                );
            }
            combinations.insert(&c.name, labels);
        }
        for b in &report.benchmarks {
            let combination = combinations.get(b.combination.as_str()).cloned();
            let base = combination
                .unwrap_or_else(|| per_combination(&host, &b.combination, report.simulated));
            bench_row(&mut out, &base.and(&row(report, b)), b);
        }
        for f in &report.findings {
            let labels = host
                .clone()
                .with("code", &f.code)
                .and(&device(&report.gpu, Some(&f.device)));
            out.add(Metric::BenchFindings, &labels, 1.0);
        }
        if let Some(job) = &report.job {
            findings(&mut out, Metric::BenchJobFindings, &host, &job.findings);
        }
        text(out)
    }

    fn merge(&self, report: &MergeReport) -> Result<Vec<u8>, OutputError> {
        let mut out = Exposition::new();
        let simulated = report.nodes.iter().any(|n| n.simulated);
        let run = Labels::default()
            .with("command", "merge")
            .with("kind", &report.kind)
            .with("version", env!("CARGO_PKG_VERSION"))
            .with("simulated", flag(simulated));
        out.add(Metric::RunInfo, &run, 1.0);
        for n in &report.nodes {
            let labels = Labels::default()
                .with("Hostname", &n.hostname)
                .maybe("model_name", n.gpu.as_deref())
                .maybe("driver_version", n.driver.as_deref())
                .with("simulated", flag(n.simulated));
            out.add(Metric::MergeNodeInfo, &labels, 1.0);
        }
        for r in &report.rows {
            let mut labels = Labels::default()
                .with("Hostname", &r.node)
                .with("combination", &r.combination)
                .and(&device_key(r.device.as_ref()))
                .maybe("model_name", r.gpu.as_deref())
                .maybe("driver_version", r.driver.as_deref())
                .with("simulated", flag(r.simulated));
            match r.median_ns {
                Some(median) => {
                    let benchmark = r.id.split('/').next().unwrap_or_default();
                    labels = labels.with("benchmark", benchmark).with("id", &r.id);
                    out.add(Metric::MergeMedianSeconds, &labels, seconds(median));
                    if let Some(fleet) = r.fleet_median_ns {
                        out.add(Metric::MergeFleetMedianSeconds, &labels, seconds(fleet));
                    }
                    if let Some(ratio) = r.ratio {
                        out.add(Metric::MergeFleetRatio, &labels, ratio);
                    }
                }
                None => {
                    let failed = r.failed_checks.len() as f64;
                    out.add(Metric::MergeFailedChecks, &labels, failed);
                }
            }
            out.add(Metric::MergeOutlier, &labels, flag_value(r.outlier));
        }
        if let Some(judgement) = &report.baseline {
            baseline(&mut out, judgement);
        }
        text(out)
    }
}

/// Every check status, in the order reports count them.
const CHECK_STATUSES: [check::Status; 4] = [
    check::Status::Pass,
    check::Status::Warn,
    check::Status::Skip,
    check::Status::Fail,
];

/// Every benchmark status.
const BENCH_STATUSES: [bench::Status; 3] = [
    bench::Status::Measured,
    bench::Status::Skipped,
    bench::Status::Failed,
];

/// The text as bytes.
fn text(out: Exposition<Metric>) -> Result<Vec<u8>, OutputError> {
    out.into_text().map(String::into_bytes)
}

/// 1 for true, 0 for false: a sample's value.
fn flag_value(value: bool) -> f64 {
    f64::from(u8::from(value))
}

/// `"true"` or `"false"`, as a label says a flag.
fn flag(value: bool) -> &'static str {
    if value {
        "true"
    } else {
        "false"
    }
}

/// Nanoseconds as seconds.
fn seconds(ns: f64) -> f64 {
    ns / 1e9
}

/// The host's label, named as dcgm-exporter names it.
fn host(info: &HostInfo) -> Labels {
    Labels::default().with("Hostname", &info.hostname)
}

/// The host and the command, for the families every command writes: node_exporter refuses a
/// series that two files give, so a node's check and bench files must not share one.
fn scope(host: &Labels, command: &str) -> Labels {
    host.clone().with("command", command)
}

/// The run's info sample; `simulated` where the command can run on the simulated GPU.
fn run(
    out: &mut Exposition<Metric>,
    command: &str,
    info: &HostInfo,
    gpu: &GpuInfo,
    simulated: Option<bool>,
) {
    let labels = host(info)
        .with("command", command)
        .with("version", &info.stackbench_version)
        .maybe("driver_version", gpu.driver_version.as_deref())
        .maybe("simulated", simulated.map(flag));
    out.add(Metric::RunInfo, &labels, 1.0);
}

/// Each row judged against a baseline: its ratio to the fleet and whether it is slower,
/// labelled as dcgm-exporter labels its GPU (`gpu` is NVML's index) to join its series.
fn baseline(out: &mut Exposition<Metric>, judgement: &Judgement) {
    for row in &judgement.rows {
        let labels = Labels::default()
            .with("Hostname", &row.host)
            .maybe("gpu", row.gpu.map(|g| g.to_string()).as_deref())
            .maybe("UUID", row.gpu_uuid.as_deref())
            .maybe("pci_bus_id", row.pci_bus_id.as_deref())
            .maybe("model_name", row.model.as_deref())
            .with("kind", &row.kind)
            .with("id", &row.id);
        out.add(Metric::BaselineRatio, &labels, row.slowdown);
        let slower = row.standing == Standing::Slower;
        out.add(Metric::BaselineSlower, &labels, flag_value(slower));
    }
}

/// A GPU's labels, as dcgm-exporter's: `gpu` (the index), `UUID`, `pci_bus_id`, and the model.
fn gpu_labels(gpu: &Gpu) -> Labels {
    Labels::default()
        .with("gpu", gpu.index.to_string())
        .maybe("UUID", gpu.uuid.as_deref())
        .maybe(
            "pci_bus_id",
            gpu.pci_bus_id.as_deref().map(dcgm_bus_id).as_deref(),
        )
        .with("model_name", &gpu.name)
}

/// An info sample per GPU NVML listed (none for a `--target`, which is no GPU).
fn gpus(out: &mut Exposition<Metric>, host: &Labels, info: &GpuInfo) {
    if info.source != "nvml" {
        return;
    }
    for gpu in &info.devices {
        let labels = host
            .clone()
            .and(&gpu_labels(gpu))
            .with("compute_capability", &gpu.compute_capability);
        out.add(Metric::GpuInfo, &labels, 1.0);
    }
}

/// A device key's labels: `gpu`, `UUID`, `pci_bus_id`; none without a key.
fn device_key(key: Option<&DeviceKey>) -> Labels {
    match key {
        Some(key) => Labels::default()
            .with("gpu", key.index.to_string())
            .maybe("UUID", key.uuid.as_deref())
            .maybe(
                "pci_bus_id",
                key.pci_bus_id.as_deref().map(dcgm_bus_id).as_deref(),
            ),
        None => Labels::default(),
    }
}

/// The GPU a result ran on: its device key's, with the model NVML gave that GPU; without a key
/// (a run on one GPU), the GPU when NVML listed exactly one; else no labels.
fn device(info: &GpuInfo, key: Option<&DeviceKey>) -> Labels {
    let listed = |index: u32| {
        (info.source == "nvml")
            .then(|| info.devices.iter().find(|g| g.index == index))
            .flatten()
    };
    match key {
        Some(key) => match listed(key.index) {
            Some(gpu) => Labels::default()
                .and(&device_key(Some(key)))
                .with("model_name", &gpu.name),
            None => device_key(Some(key)),
        },
        None if info.devices.len() == 1 => listed(info.devices[0].index)
            .map(gpu_labels)
            .unwrap_or_default(),
        None => Labels::default(),
    }
}

/// A combination's labels on its own series: host, name and whether it ran simulated.
fn per_combination(host: &Labels, name: &str, simulated: bool) -> Labels {
    host.clone()
        .with("combination", name)
        .with("simulated", flag(simulated))
}

/// A combination's labels with the versions behind its results.
fn combination(
    host: &Labels,
    name: &str,
    cuda_version: Option<&str>,
    driver_version: Option<&str>,
    simulated: bool,
) -> Labels {
    host.clone()
        .with("combination", name)
        .maybe("cuda_version", cuda_version)
        .maybe("driver_version", driver_version)
        .with("simulated", flag(simulated))
}

/// A library's info labels.
fn library(host: &Labels, combination: &str, component: &str, version: Option<&str>) -> Labels {
    host.clone()
        .with("combination", combination)
        .with("library", component)
        .maybe("version", version)
}

/// Findings counted by cause and severity, in the order of their codes.
/// `check --nodes`' figures of the job: each collective's bus bandwidth, and each pair of
/// nodes' transports.
fn nodes(out: &mut Exposition<Metric>, combination: &Labels, checks: &[check::CheckResult]) {
    for k in checks {
        if let Some(gbs) = k.details.get("bus_gbs").and_then(|v| v.as_f64()) {
            let labels = combination.clone().with("check", &k.id);
            out.add(Metric::NcclBusBytesPerSecond, &labels, gbs * 1e9);
        }
        let pairs = (k.details.get("pairs").and_then(|v| v.as_array())).into_iter();
        for pair in pairs.flatten() {
            let text = |key: &str| pair[key].as_str().unwrap_or_default().to_owned();
            for via in pair["via"].as_array().into_iter().flatten() {
                let labels = combination
                    .clone()
                    .with("from_host", text("from_host"))
                    .with("to_host", text("to_host"))
                    .with("via", via.as_str().unwrap_or_default());
                out.add(Metric::NcclTransportInfo, &labels, 1.0);
            }
        }
    }
}

fn findings(out: &mut Exposition<Metric>, metric: Metric, host: &Labels, findings: &[Finding]) {
    let mut counts: BTreeMap<(String, Severity), usize> = BTreeMap::new();
    for f in findings {
        *counts.entry((f.cause.code(), f.severity)).or_default() += 1;
    }
    for ((cause, severity), n) in counts {
        let labels = host
            .clone()
            .with("cause", cause)
            .with("severity", severity.name());
        out.add(metric, &labels, n as f64);
    }
}

/// What sets a benchmark row apart within its combination: the benchmark, its id and
/// parameters, and the GPU a GPU-side one ran on.
fn row(report: &BenchReport, b: &BenchResult) -> Labels {
    let p = &b.parameters;
    let labels = Labels::default()
        .with("benchmark", &b.benchmark)
        .with("id", &b.id)
        .maybe("implementation", p.implementation.as_deref())
        .maybe("precision", p.precision.as_deref())
        .with("size", p.size.map(|s| s.to_string()).unwrap_or_default())
        .maybe("mode", p.mode.map(bench::Mode::name))
        .maybe("arch", p.arch.as_deref())
        .maybe("job", p.job.as_deref());
    match b.side {
        bench::Side::Gpu => labels.and(&device(&report.gpu, b.device.as_ref())),
        bench::Side::Cpu => labels,
    }
}

/// A benchmark row's samples: its status, and what it measured.
fn bench_row(out: &mut Exposition<Metric>, labels: &Labels, b: &BenchResult) {
    for status in BENCH_STATUSES {
        let one = flag_value(b.status == status);
        out.add(
            Metric::BenchStatus,
            &labels.clone().with("status", status.name()),
            one,
        );
    }
    if b.status != bench::Status::Measured {
        return;
    }
    if let Some(summary) = &b.summary {
        out.add(
            Metric::BenchMedianSeconds,
            labels,
            seconds(summary.median_ns),
        );
    }
    if let Some(t) = &b.throughput {
        match t.unit.split(' ').next() {
            Some("GB/s") => out.add(Metric::BenchBytesPerSecond, labels, t.value * 1e9),
            Some("TFLOP/s") => out.add(Metric::BenchFlopPerSecond, labels, t.value * 1e12),
            _ => {}
        }
    }
    if let Some(pct) = b.pct_of_peak {
        out.add(Metric::BenchMeasuredPeakRatio, labels, pct / 100.0);
    }
    if let Some(pct) = b.pct_of_spec {
        out.add(Metric::BenchTheoreticalPeakRatio, labels, pct / 100.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::model::{Key, Parameters, Summary, Throughput};
    use crate::diagnose::finding::Cause;
    use crate::schema::check::{CheckResult, CombinationReport};
    use crate::tags::CHECK_SCHEMA;
    use std::collections::HashSet;

    /// Every family.
    const ALL: [Metric; 28] = [
        Metric::RunInfo,
        Metric::GpuInfo,
        Metric::CombinationInfo,
        Metric::LibraryInfo,
        Metric::DoctorFindings,
        Metric::DoctorCauseFindings,
        Metric::DoctorInstallations,
        Metric::DoctorLibraries,
        Metric::CheckResults,
        Metric::CheckStatus,
        Metric::CheckNodeFindings,
        Metric::BenchResults,
        Metric::BenchStatus,
        Metric::BenchMedianSeconds,
        Metric::BenchBytesPerSecond,
        Metric::BenchFlopPerSecond,
        Metric::BenchMeasuredPeakRatio,
        Metric::BenchTheoreticalPeakRatio,
        Metric::BenchFindings,
        Metric::BenchJobFindings,
        Metric::MergeNodeInfo,
        Metric::MergeMedianSeconds,
        Metric::MergeFleetMedianSeconds,
        Metric::MergeFleetRatio,
        Metric::MergeFailedChecks,
        Metric::MergeOutlier,
        Metric::BaselineRatio,
        Metric::BaselineSlower,
    ];

    /// dcgm-exporter's label names that are not snake case.
    const DCGM_LABELS: [&str; 2] = ["UUID", "Hostname"];

    /// The sample lines of `text` as `(series, value)`, after checking what the textfile
    /// collector and `promtool check metrics` ask: each family's `# HELP` and `# TYPE gauge`
    /// before its samples, which are together; names and label names valid (labels in snake
    /// case but dcgm-exporter's); no timestamp; no series twice; `# EOF` last.
    fn samples(text: &str) -> Vec<(String, String)> {
        let body = text.strip_suffix("# EOF\n").expect("ends with # EOF");
        let mut families: Vec<&str> = Vec::new();
        let mut series = HashSet::new();
        let mut samples = Vec::new();
        let mut lines = body.lines().peekable();
        while let Some(line) = lines.next() {
            let name = line.strip_prefix("# HELP ").expect(line).split(' ').next();
            let name = name.unwrap();
            assert!(
                valid_name(name) && name.starts_with("stackbench_"),
                "{name}"
            );
            assert!(!families.contains(&name), "{name} is not contiguous");
            families.push(name);
            assert_eq!(lines.next(), Some(format!("# TYPE {name} gauge").as_str()));
            while let Some(sample) = lines.next_if(|l| !l.starts_with('#')) {
                let (labels, value) = split_sample(sample);
                assert!(labels.starts_with(name), "{sample} outside {name}");
                let rest = &labels[name.len()..];
                assert!(rest.is_empty() || rest.starts_with('{'), "{sample}");
                for label in label_names(rest) {
                    let snake = label
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c == '_' || c.is_ascii_digit());
                    assert!(
                        valid_name(&label) && (snake || DCGM_LABELS.contains(&label.as_str())),
                        "{label}"
                    );
                }
                assert!(
                    value.parse::<f64>().is_ok() || ["NaN", "+Inf", "-Inf"].contains(&value),
                    "{sample}: a value and no timestamp"
                );
                assert!(series.insert(labels.to_owned()), "{labels} twice");
                samples.push((labels.to_owned(), value.to_owned()));
            }
        }
        samples
    }

    /// A metric or label name: `[a-zA-Z_][a-zA-Z0-9_]*`, not `__`-reserved.
    fn valid_name(name: &str) -> bool {
        let mut chars = name.chars();
        chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !name.starts_with("__")
    }

    /// `name{labels}` and the value of a sample line, reading quoted values with escapes.
    fn split_sample(line: &str) -> (&str, &str) {
        let (mut quoted, mut escaped) = (false, false);
        for (at, c) in line.char_indices() {
            match c {
                _ if escaped => escaped = false,
                '\\' if quoted => escaped = true,
                '"' => quoted = !quoted,
                ' ' if !quoted => return (&line[..at], &line[at + 1..]),
                _ => {}
            }
        }
        panic!("no value: {line}")
    }

    /// The label names of `{a="1",b="2"}`.
    fn label_names(labels: &str) -> Vec<String> {
        let (mut quoted, mut escaped, mut names, mut name) =
            (false, false, Vec::new(), String::new());
        for c in labels.trim_start_matches('{').trim_end_matches('}').chars() {
            match c {
                _ if escaped => escaped = false,
                '\\' if quoted => escaped = true,
                '"' => quoted = !quoted,
                '=' if !quoted => names.push(std::mem::take(&mut name)),
                ',' if !quoted => {}
                c if !quoted => name.push(c),
                _ => {}
            }
        }
        names
    }

    fn render(bytes: Result<Vec<u8>, OutputError>) -> String {
        String::from_utf8(bytes.unwrap()).unwrap()
    }

    /// The value of the one sample whose series starts with `name{` and holds every label.
    fn value(text: &str, name: &str, labels: &[&str]) -> String {
        let found: Vec<(String, String)> = samples(text)
            .into_iter()
            .filter(|(s, _)| s.starts_with(&format!("{name}{{")))
            .filter(|(s, _)| labels.iter().all(|l| s.contains(l)))
            .collect();
        assert_eq!(found.len(), 1, "{name} {labels:?}: {found:?}\n{text}");
        found[0].1.clone()
    }

    fn gpu(index: u32) -> Gpu {
        Gpu {
            index,
            name: "NVIDIA H100 80GB HBM3".into(),
            compute_capability: "9.0".into(),
            uuid: Some(format!("GPU-{index}")),
            pci_bus_id: Some(format!("0000:1{index}:00.0")),
            memory_bytes: None,
            memory_clock_mhz: None,
        }
    }

    /// NVML's view of a node of `n` GPUs of one model.
    fn nvml(n: u32) -> GpuInfo {
        GpuInfo {
            source: "nvml".into(),
            devices: (0..n).map(gpu).collect(),
            driver_version: Some("580.95.05".into()),
            note: None,
        }
    }

    fn key(index: u32) -> DeviceKey {
        DeviceKey {
            index,
            uuid: Some(format!("GPU-{index}")),
            pci_bus_id: Some(format!("0000:1{index}:00.0")),
        }
    }

    fn host(hostname: &str) -> HostInfo {
        HostInfo {
            hostname: hostname.into(),
            os: "linux".into(),
            arch: "x86_64".into(),
            stackbench_version: "0.1.0".into(),
            boot_id: None,
        }
    }

    /// The report module's test combination, with a CUDA version for the labels.
    fn checks(name: &str, checks: Vec<CheckResult>) -> CombinationReport {
        CombinationReport {
            cuda_version: Some("13.0".into()),
            ..crate::report::tests::combination(name, checks)
        }
    }

    fn check_report(gpu: GpuInfo, combinations: Vec<CombinationReport>) -> CheckReport {
        CheckReport {
            schema: CHECK_SCHEMA.into(),
            started: "2026-01-01T00:00:00Z".into(),
            host: host("node-1"),
            gpu,
            target: None,
            driver_dir: None,
            simulated: false,
            load_untrusted: false,
            combinations,
            node: None,
            baseline: None,
        }
    }

    fn on(index: u32, result: CheckResult) -> CheckResult {
        CheckResult {
            device: Some(key(index)),
            ..result
        }
    }

    #[test]
    fn every_family_has_a_stackbench_snake_case_name_in_base_units_and_no_total() {
        let names: HashSet<&str> = ALL.iter().map(|m| m.name()).collect();
        assert_eq!(names.len(), ALL.len());
        for metric in ALL {
            let name = metric.name();
            assert!(
                valid_name(name) && name.starts_with("stackbench_"),
                "{name}"
            );
            assert_eq!(name, name.to_ascii_lowercase());
            assert!(!name.ends_with("_total"), "{name} is a gauge");
            for abbreviation in ["_ms", "_ns", "_gb", "_pct", "_percent", "_tflops"] {
                assert!(!name.contains(abbreviation), "{name}: base units");
            }
            assert!(metric.help().ends_with('.'), "{name}");
        }
    }

    /// A doctor report of host `node-1` that found nothing.
    fn doctor_report() -> DoctorReport {
        serde_json::from_value(serde_json::json!({
            "schema": crate::tags::DOCTOR_SCHEMA,
            "host": host("node-1"),
            "gpu": GpuInfo::none("no NVML"),
            "loaded": true,
            "findings": [],
            "probes": [],
            "searched": [],
            "installations": [],
            "problems": [],
        }))
        .unwrap()
    }

    #[test]
    fn a_check_s_status_is_1_for_its_status_and_0_for_the_others() {
        let report = check_report(
            GpuInfo::none("no NVML"),
            vec![checks(
                "pip:venv",
                vec![
                    CheckResult::new("driver.init", check::Status::Fail, "cuInit: 100"),
                    CheckResult::new("cudart.load", check::Status::Pass, "ok"),
                ],
            )],
        );
        let text = render(Openmetrics.check(&report));
        for (check, status, one) in [
            ("driver.init", "fail", "1"),
            ("driver.init", "pass", "0"),
            ("driver.init", "warn", "0"),
            ("driver.init", "skip", "0"),
            ("cudart.load", "pass", "1"),
            ("cudart.load", "fail", "0"),
        ] {
            let labels = [
                &format!("check=\"{check}\"")[..],
                &format!("status=\"{status}\""),
            ];
            assert_eq!(value(&text, "stackbench_check_status", &labels), one);
        }
        let fail = ["status=\"fail\"", "combination=\"pip:venv\""];
        assert_eq!(value(&text, "stackbench_check_results", &fail), "1");
        let pass = ["status=\"pass\"", "simulated=\"false\""];
        assert_eq!(value(&text, "stackbench_check_results", &pass), "1");
    }

    #[test]
    fn label_values_are_escaped() {
        let mut report = check_report(GpuInfo::none("no NVML"), vec![checks("c", vec![])]);
        report.host = host("a\"b\\c\nd");
        let text = render(Openmetrics.check(&report));
        samples(&text);
        assert!(text.contains(r#"Hostname="a\"b\\c\nd""#), "{text}");
    }

    #[test]
    fn two_gpus_of_one_model_and_two_combinations_give_every_series_once() {
        let pass = |id| CheckResult::new(id, check::Status::Pass, "ok");
        let per_gpu = |name| {
            checks(
                name,
                vec![
                    pass("cudart.load"),
                    on(0, pass("cublas.sgemm")),
                    on(1, pass("cublas.sgemm")),
                ],
            )
        };
        let report = check_report(nvml(2), vec![per_gpu("a"), per_gpu("b")]);
        let text = render(Openmetrics.check(&report));
        let status = samples(&text)
            .into_iter()
            .filter(|(s, _)| s.starts_with("stackbench_check_status{"))
            .count();
        assert_eq!(status, 2 * 3 * 4, "{text}");
        assert_eq!(value(&text, "stackbench_gpu_info", &["gpu=\"1\""]), "1");
        let second = [
            "combination=\"b\"",
            "gpu=\"1\"",
            "UUID=\"GPU-1\"",
            "status=\"pass\"",
        ];
        assert_eq!(value(&text, "stackbench_check_status", &second), "1");

        let row = |combination: &str, index: u32| BenchResult {
            summary: Some(Summary {
                median_ns: 2e6,
                q1_ns: 2e6,
                q3_ns: 2e6,
                min_ns: 2e6,
                max_ns: 2e6,
                noise: 0.0,
            }),
            device: Some(key(index)),
            ..BenchResult::from_key(Key {
                combination: combination.into(),
                benchmark: "matmul",
                side: bench::Side::Gpu,
                parameters: Parameters {
                    size: Some(1024),
                    ..Parameters::default()
                },
            })
        };
        let mut bench = BenchReport::of(false, vec![row("c", 0), row("c", 1), row("d", 0)]);
        bench.gpu = nvml(2);
        bench.combinations.push(bench::CombinationRun {
            name: "d".into(),
            ..bench::CombinationRun::default()
        });
        let text = render(Openmetrics.bench(&bench));
        let medians = samples(&text)
            .into_iter()
            .filter(|(s, _)| s.starts_with("stackbench_bench_median_seconds{"))
            .count();
        assert_eq!(medians, 3, "{text}");
    }

    /// node_exporter refuses a series two files of its directory give.
    #[test]
    fn the_files_of_doctor_check_and_bench_of_one_node_share_no_series() {
        let library = crate::schema::check::LibraryUse {
            component: "cudart".into(),
            name: "libcudart.so.13".into(),
            version: Some("13.0".into()),
            resolved: None,
            mapped: None,
            inside: true,
        };
        let mut combination = checks("c", vec![]);
        combination.libraries.push(library);
        let check = check_report(nvml(1), vec![combination]);
        let mut bench = BenchReport::of(false, vec![]);
        bench.host = check.host.clone();
        bench.gpu = nvml(1);
        bench.combinations[0].libraries.push(bench::LibraryVersion {
            component: "cudart".into(),
            path: "libcudart.so.13".into(),
            version: Some("13.0".into()),
        });
        bench.combinations[0].cuda_version = Some("13.0".into());
        let mut doctor = doctor_report();
        doctor.gpu = nvml(1);
        let mut series = HashSet::new();
        for text in [
            render(Openmetrics.doctor(&doctor)),
            render(Openmetrics.check(&check)),
            render(Openmetrics.bench(&bench)),
        ] {
            for (labels, _) in samples(&text) {
                assert!(series.insert(labels.clone()), "{labels} in two files");
            }
        }
        assert!(series
            .iter()
            .any(|s| s.starts_with("stackbench_library_info{")));
    }

    #[test]
    fn a_bench_row_gives_its_rate_in_base_units_and_its_shares_as_ratios() {
        let key = Key {
            combination: "c".into(),
            benchmark: "copy",
            side: bench::Side::Gpu,
            parameters: Parameters::default(),
        };
        let copy = BenchResult {
            summary: Some(Summary {
                median_ns: 1e6,
                q1_ns: 1e6,
                q3_ns: 1e6,
                min_ns: 1e6,
                max_ns: 1e6,
                noise: 0.0,
            }),
            throughput: Some(Throughput {
                value: 2500.0,
                unit: "GB/s".into(),
            }),
            pct_of_peak: Some(50.0),
            pct_of_spec: Some(75.0),
            ..BenchResult::from_key(key.clone())
        };
        let matmul = BenchResult {
            throughput: Some(Throughput {
                value: 60.0,
                unit: "TFLOP/s".into(),
            }),
            ..BenchResult::from_key(Key {
                benchmark: "matmul",
                ..key.clone()
            })
        };
        let skipped = BenchResult::skipped(
            Key {
                benchmark: "vector_add",
                ..key
            },
            "no GPU",
        );
        let report = BenchReport::of(true, vec![copy, matmul, skipped]);
        let text = render(Openmetrics.bench(&report));
        let copy = ["benchmark=\"copy\"", "simulated=\"true\""];
        assert_eq!(
            value(&text, "stackbench_bench_median_seconds", &copy),
            "0.001"
        );
        assert_eq!(
            value(&text, "stackbench_bench_bytes_per_second", &copy),
            "2500000000000"
        );
        assert_eq!(
            value(&text, "stackbench_bench_measured_peak_ratio", &copy),
            "0.5"
        );
        assert_eq!(
            value(&text, "stackbench_bench_theoretical_peak_ratio", &copy),
            "0.75"
        );
        let matmul = ["benchmark=\"matmul\""];
        assert_eq!(
            value(&text, "stackbench_bench_flop_per_second", &matmul),
            "60000000000000"
        );
        let skipped = ["benchmark=\"vector_add\"", "status=\"skipped\""];
        assert_eq!(value(&text, "stackbench_bench_status", &skipped), "1");
        assert!(!text.contains("stackbench_bench_median_seconds{Hostname=\"h\",combination=\"c\",simulated=\"true\",benchmark=\"vector_add\""));
        assert_eq!(
            value(&text, "stackbench_bench_results", &["status=\"measured\""]),
            "2"
        );
    }

    #[test]
    fn doctor_counts_findings_by_severity_and_by_cause() {
        let finding = |severity, cause| Finding::new(severity, cause, "m".into(), "f".into());
        let mut report = doctor_report();
        report.findings = vec![
            finding(Severity::Error, Cause::MissingDependency),
            finding(Severity::Error, Cause::MissingDependency),
            finding(Severity::Warning, Cause::WrongElfClass),
        ];
        let text = render(Openmetrics.doctor(&report));
        let count = |name, labels: &[&str]| value(&text, name, labels);
        assert_eq!(
            count("stackbench_doctor_findings", &["severity=\"error\""]),
            "2"
        );
        assert_eq!(
            count("stackbench_doctor_findings", &["severity=\"info\""]),
            "0"
        );
        let missing = ["cause=\"missing_dependency\"", "severity=\"error\""];
        assert_eq!(count("stackbench_doctor_cause_findings", &missing), "2");
        let class = ["cause=\"wrong_elf_class\"", "severity=\"warning\""];
        assert_eq!(count("stackbench_doctor_cause_findings", &class), "1");
    }

    #[test]
    fn a_scan_is_refused_with_the_formats_that_have_it() {
        let scan: ScanReport = serde_json::from_value(serde_json::json!({
            "schema": crate::tags::SCAN_SCHEMA,
            "host": host("h"),
            "searched": [],
            "installations": [],
            "problems": [],
        }))
        .unwrap();
        let error = Openmetrics.scan(&scan).unwrap_err().to_string();
        assert_eq!(
            error,
            "--format openmetrics is not available for scan reports; use json, csv, markdown or terminal"
        );
    }
}
