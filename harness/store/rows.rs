//! The store's one long table: a row per benchmark of a bench run and per check of a check run,
//! each carrying its run's identity and environment, so that any query needs no other file.

use crate::bench::model::{BenchReport, BenchResult, Status as BenchStatus};
use crate::compare::load::Run;
use crate::doctor::DoctorReport;
use crate::gpu::{Gpu, GpuInfo};
use crate::schema::check::CheckReport;
use crate::schema::node::{Copy, Engine};

/// One row of the store.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Row {
    /// The run's id: its `run_id`, or for a file without one, `<command>:<host>:<started>`.
    pub run_id: String,
    /// `bench` or `check`.
    pub command: String,
    /// When the run started, RFC 3339 in UTC, as its file says.
    pub started: String,
    /// The same instant, microseconds since the Unix epoch (the Parquet timestamp).
    pub started_us: i64,
    pub host: String,
    pub boot_id: Option<String>,
    pub stackbench: String,
    /// NVML's index of the GPU the row ran on (dcgm-exporter's `gpu`), not CUDA's ordinal.
    pub gpu: Option<u32>,
    pub gpu_uuid: Option<String>,
    /// As dcgm-exporter writes it: `00000000:1B:00.0`.
    pub pci_bus_id: Option<String>,
    pub model: Option<String>,
    pub driver: Option<String>,
    /// The newest CUDA the driver supports (`cuDriverGetVersion`).
    pub cuda: Option<String>,
    pub combination: String,
    /// The combination's libraries and versions: `cudart 13.0, cublas 13.1.0`.
    pub libraries: String,
    /// `not locked`, or the clocks the run was locked at.
    pub clocks: String,
    pub simulated: bool,
    /// The benchmark's or check's id within its run (it holds the combination).
    pub row_id: String,
    /// The id without the combination: the same measurement across combinations and hosts.
    pub kind: String,
    /// A bench row's figure: the geometric mean of its repetitions' medians.
    pub figure: Option<f64>,
    /// `ns` for a bench row's figure.
    pub unit: Option<String>,
    /// `measured`, `skipped`, `failed`; `pass`, `warn`, `skip`, `fail`.
    pub status: String,
    /// Whether the output verified, where it was checked.
    pub verified: Option<bool>,
    pub q1: Option<f64>,
    pub q3: Option<f64>,
    /// The samples kept, whole nanoseconds.
    pub samples: Vec<i64>,
}

/// A bench or check run's rows (a doctor or scan run has none).
pub fn of_run(run: &Run) -> Vec<Row> {
    match run {
        Run::Bench(report) => of_bench(report),
        Run::Check(report) => of_check(report),
        Run::Doctor(report) => of_doctor(report),
        Run::Scan(_) => Vec::new(),
    }
}

/// A doctor run's rows: one for the run (`kind` `doctor`, `status` its worst severity, or
/// `clean`), then one per finding (`kind` its cause code, `status` its severity, `combination`
/// its installation, `row_id` `<cause>/<library or dependency>`), folded ones each a row.
pub fn of_doctor(run: &DoctorReport) -> Vec<Row> {
    let Some(of) = run
        .started
        .as_deref()
        .and_then(|started| Of::run(None, "doctor", started, &run.host))
    else {
        return Vec::new();
    };
    let base = of.row(&run.gpu, run.gpu.devices.first());
    let worst = (run.findings.iter()).map(|f| f.severity).min();
    let mut rows = vec![Row {
        row_id: "doctor".to_owned(),
        kind: "doctor".to_owned(),
        status: worst.map_or("clean", |s| s.name()).to_owned(),
        ..base.clone()
    }];
    for finding in &run.findings {
        let installation =
            (finding.installation.as_ref()).map_or_else(String::new, |p| p.display().to_string());
        let cause = finding.cause.code();
        let subjects = std::iter::once((&finding.library, &finding.missing))
            .chain((finding.also.iter()).map(|folded| (&folded.library, &folded.missing)));
        for (library, missing) in subjects {
            let subject = missing.as_ref().or(library.as_ref());
            rows.push(Row {
                combination: installation.clone(),
                row_id: subject.map_or_else(|| cause.clone(), |s| format!("{cause}/{s}")),
                kind: cause.clone(),
                status: finding.severity.name().to_owned(),
                ..base.clone()
            });
        }
    }
    rows
}

/// A bench run's rows, as the store keeps them; a run whose start time does not read as RFC 3339
/// has none (it could not be placed in time).
pub fn of_bench(run: &BenchReport) -> Vec<Row> {
    let Some(of) = Of::run(run.run_id.as_deref(), "bench", &run.started, &run.host) else {
        return Vec::new();
    };
    let clocks = crate::bench::clocks::setting(&run.clocks_locked);
    run.benchmarks
        .iter()
        .map(|result| {
            let combination = (run.combinations.iter()).find(|c| c.name == result.combination);
            let measured = result.status == BenchStatus::Measured;
            Row {
                cuda: combination.and_then(|c| c.driver_cuda_version.clone()),
                combination: result.combination.clone(),
                libraries: combination
                    .map_or_else(String::new, |c| c.library_versions().join(", ")),
                clocks: clocks.clone(),
                simulated: combination.map_or(run.simulated, |c| c.simulated),
                row_id: result.id.clone(),
                kind: crate::compare::reference::kind(result),
                figure: measured
                    .then(|| result.log_figure().map(f64::exp))
                    .flatten(),
                unit: measured.then(|| "ns".to_owned()),
                status: result.status.name().to_owned(),
                verified: result.verified.as_ref().map(|v| v.passed),
                q1: result.summary.map(|s| s.q1_ns),
                q3: result.summary.map(|s| s.q3_ns),
                samples: result
                    .samples_ns
                    .iter()
                    .map(|ns| ns.round() as i64)
                    .collect(),
                ..of.row(&run.gpu, gpu_of(&run.gpu, result))
            }
        })
        .collect()
}

/// A check run's rows: one per check of each combination, then one per copy the node's probe
/// measured (its figure in GB/s).
pub fn of_check(run: &CheckReport) -> Vec<Row> {
    let Some(of) = Of::run(None, "check", &run.started, &run.host) else {
        return Vec::new();
    };
    let mut rows = checks(&of, run);
    if let Some(node) = &run.node {
        rows.extend(node.copies.iter().map(|copy| copy_row(&of, run, copy)));
    }
    rows
}

/// The rows of each combination's checks.
fn checks(of: &Of, run: &CheckReport) -> Vec<Row> {
    run.combinations
        .iter()
        .flat_map(|c| c.checks.iter().map(move |check| (c, check)))
        .map(|(c, check)| {
            let gpu = match &check.device {
                Some(key) => by_key(&run.gpu, key),
                None => run.gpu.devices.first(),
            };
            let libraries: Vec<String> = (c.libraries.iter())
                .map(|l| format!("{} {}", l.component, l.version.as_deref().unwrap_or("?")))
                .collect();
            Row {
                combination: c.name.clone(),
                libraries: libraries.join(", "),
                clocks: crate::bench::clocks::setting(&[]),
                simulated: run.simulated,
                row_id: format!("{}/{}", c.name, check.id),
                kind: check.id.clone(),
                status: check.status.name().to_owned(),
                ..of.row(&run.gpu, gpu)
            }
        })
        .collect()
}

/// A copy of the node's probe: kind `node/copy/<engine>/<h2d|d2h|d2d|p2p>[/both]`, on the GPU
/// it copies to from the host, else the GPU it copies from.
fn copy_row(of: &Of, run: &CheckReport, copy: &Copy) -> Row {
    let end = |at: Option<u32>| at.map_or_else(|| "host".to_owned(), |i| i.to_string());
    let direction = match (copy.src, copy.dst) {
        (None, _) => "h2d",
        (Some(_), None) => "d2h",
        (Some(a), Some(b)) if a == b => "d2d",
        _ => "p2p",
    };
    let engine = match copy.engine {
        Engine::Ce => "ce",
        Engine::Sm => "sm",
    };
    let both = if copy.both_ways { "/both" } else { "" };
    let gpu = (copy.src.or(copy.dst)).and_then(|i| run.gpu.devices.iter().find(|g| g.index == i));
    Row {
        combination: "node".to_owned(),
        clocks: crate::bench::clocks::setting(&[]),
        simulated: run.simulated,
        row_id: format!(
            "node/copy/{engine}/{}-{}{both}",
            end(copy.src),
            end(copy.dst)
        ),
        kind: format!("node/copy/{engine}/{direction}{both}"),
        figure: copy.gbs,
        unit: copy.gbs.map(|_| GBS.to_owned()),
        status: match (copy.gbs, copy.verified) {
            (Some(_), true) => "measured",
            (Some(_), false) => "wrong",
            (None, _) => "failed",
        }
        .to_owned(),
        verified: copy.gbs.map(|_| copy.verified),
        ..of.row(&run.gpu, gpu)
    }
}

/// The unit of a copy's figure: 1e9 bytes a second, where more is better.
pub const GBS: &str = "GB/s";

impl Row {
    /// The row's cost as a log ([`log_cost`]); `None` without a positive figure.
    pub fn log_cost(&self) -> Option<f64> {
        let figure = self.figure.filter(|f| *f > 0.0 && f.is_finite())?;
        Some(log_cost(figure, self.unit.as_deref().unwrap_or("ns")))
    }
}

/// A figure's cost as a log, comparable across nodes and units: the log of a time, or of a
/// bandwidth's inverse, so that less is better either way.
pub fn log_cost(figure: f64, unit: &str) -> f64 {
    match unit {
        GBS => -figure.ln(),
        _ => figure.ln(),
    }
}

/// The figure of a log cost in `unit`: [`log_cost`]'s inverse.
pub fn figure(log_cost: f64, unit: &str) -> f64 {
    match unit {
        GBS => (-log_cost).exp(),
        _ => log_cost.exp(),
    }
}

/// What every row of one run shares.
struct Of<'a> {
    run_id: String,
    command: &'static str,
    started: &'a str,
    started_us: i64,
    host: &'a crate::model::HostInfo,
}

impl<'a> Of<'a> {
    /// The run's shared columns; `None` when its start time is not RFC 3339. Its id is its
    /// own, else one made of what names it in files without one: `<command>:<host>:<started>`.
    fn run(
        own: Option<&str>,
        command: &'static str,
        started: &'a str,
        host: &'a crate::model::HostInfo,
    ) -> Option<Of<'a>> {
        Some(Of {
            run_id: own.map_or_else(
                || format!("{command}:{}:{started}", host.hostname),
                str::to_owned,
            ),
            command,
            started,
            started_us: crate::timestamp::parse_rfc3339_us(started)?,
            host,
        })
    }

    /// A row of the run on `gpu` (of the run's `info`), its own columns empty.
    fn row(&self, info: &GpuInfo, gpu: Option<&Gpu>) -> Row {
        Row {
            run_id: self.run_id.clone(),
            command: self.command.to_owned(),
            started: self.started.to_owned(),
            started_us: self.started_us,
            host: self.host.hostname.clone(),
            boot_id: self.host.boot_id.clone(),
            stackbench: self.host.stackbench_version.clone(),
            gpu: gpu.map(|g| g.index),
            gpu_uuid: gpu.and_then(|g| g.uuid.clone()),
            pci_bus_id: gpu.and_then(|g| g.pci_bus_id.as_deref().map(crate::devices::dcgm_bus_id)),
            model: gpu.map(|g| g.name.clone()),
            driver: info.driver_version.clone(),
            ..Row::default()
        }
    }
}

/// The GPU (as NVML listed it) a result ran on: the one of its device's UUID, else of its CUDA
/// ordinal's place in the list; a one-GPU run's rows are its first GPU's.
fn gpu_of<'a>(info: &'a GpuInfo, result: &BenchResult) -> Option<&'a Gpu> {
    match &result.device {
        Some(key) => by_key(info, key),
        None if result.side == crate::bench::model::Side::Gpu => info.devices.first(),
        None => None,
    }
}

/// The GPU of `key`: by UUID where both have one, else the CUDA ordinal's place in the list.
fn by_key<'a>(info: &'a GpuInfo, key: &crate::devices::DeviceKey) -> Option<&'a Gpu> {
    let by_uuid = key
        .uuid
        .as_ref()
        .and_then(|uuid| (info.devices.iter()).find(|g| g.uuid.as_deref() == Some(uuid.as_str())));
    by_uuid.or_else(|| info.devices.get(key.index as usize))
}
