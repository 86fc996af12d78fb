//! What the bench report's views share: each result's cells (its key, its figure, its
//! spread), the combinations' lines, and the benchmarks that were not measured, grouped by
//! reason so that a host without a GPU says so once.

use crate::bench::collectives::NcclTable;
use crate::bench::model::{
    BenchReport, BenchResult, CombinationRun, NodeFinding, Status, StopReason,
};
use crate::bench::node::NodeTable;

/// A time for people: `812 ns`, `1.23 µs`, `4.56 ms`, `1.20 s`; the unit is chosen after
/// rounding (999.7 ns is `1.00 µs`), and what is not a time is `-`.
pub fn duration(ns: f64) -> String {
    match ns {
        ns if !ns.is_finite() => "-".to_owned(),
        ns if ns < 999.5 => format!("{ns:.0} ns"),
        ns if ns < 999_995.0 => format!("{:.2} µs", ns / 1e3),
        ns if ns < 999_995_000.0 => format!("{:.2} ms", ns / 1e6),
        ns => format!("{:.2} s", ns / 1e9),
    }
}

/// A size as the benchmark counts it: elements in Mi (`64 Mi`), a matrix side (`8192`), bytes
/// in GiB or MiB.
pub fn size(result: &BenchResult) -> String {
    let Some(size) = result.parameters.size else {
        return "-".to_owned();
    };
    match result.benchmark.as_str() {
        "vector_add" if size % (1 << 20) == 0 => format!("{} Mi", size >> 20),
        "copy" if size % (1 << 30) == 0 => format!("{} GiB", size >> 30),
        "copy" => format!("{} MiB", size >> 20),
        _ => size.to_string(),
    }
}

/// The parameters other than the size, joined: `cublas bf16 batch`, `vector_add sm_90`.
pub fn variant(result: &BenchResult) -> String {
    let p = &result.parameters;
    let parts: Vec<&str> = [
        p.implementation.as_deref(),
        p.precision.as_deref(),
        p.arch.as_deref(),
        p.mode.map(|m| m.name()),
    ]
    .into_iter()
    .flatten()
    .collect();
    if parts.is_empty() {
        "-".to_owned()
    } else {
        parts.join(" ")
    }
}

/// What a repeated run adds to the headline: `; 3 repetitions of each combination, in fresh
/// workers (figures over all their samples)`; nothing for a run of one.
pub fn repetitions(report: &BenchReport) -> String {
    if report.repeat > 1 {
        format!(
            "; {} repetitions of each combination, in fresh workers (figures over all their \
             samples)",
            report.repeat
        )
    } else {
        String::new()
    }
}

/// The rate (`2870.1 GB/s`), or the median time for work that has no rate.
pub fn figure(result: &BenchResult) -> String {
    match (&result.throughput, &result.summary) {
        (Some(t), _) => format!("{:.1} {}", t.value, t.unit),
        (None, Some(s)) => duration(s.median_ns),
        (None, None) => "-".to_owned(),
    }
}

/// The median and the interquartile range: `1.21 ms (1.20 ms – 1.23 ms)`.
pub fn spread(result: &BenchResult) -> (String, String) {
    match &result.summary {
        Some(s) => (
            duration(s.median_ns),
            format!("{} – {}", duration(s.q1_ns), duration(s.q3_ns)),
        ),
        None => ("-".to_owned(), "-".to_owned()),
    }
}

/// The noise as a percentage with two decimals.
pub fn noise(result: &BenchResult) -> String {
    result
        .summary
        .map_or("-".to_owned(), |s| format!("{:.2}%", 100.0 * s.noise))
}

/// `87.5%`, or `-`.
pub fn percent(value: Option<f64>) -> String {
    value.map_or("-".to_owned(), |v| format!("{v:.1}%"))
}

/// A result's share of its ceiling: `87.5%`, `in L2`, or `-` ([`share`]).
pub fn of_peak(result: &BenchResult) -> String {
    share(result, result.pct_of_peak)
}

/// A result's share of the card's theoretical peak: `70.1%`, `in L2`, or `-` ([`share`]).
pub fn of_spec(result: &BenchResult) -> String {
    share(result, result.pct_of_spec)
}

/// `pct` of `result` as a cell: `in L2` where its working set never left the cache (a DRAM
/// figure says nothing of it), else the percentage or `-`.
fn share(result: &BenchResult, pct: Option<f64>) -> String {
    match result.in_l2 {
        true => "in L2".to_owned(),
        false => percent(pct),
    }
}

/// `yes`, `NO`, or `-` for work with nothing to verify.
pub fn verified(result: &BenchResult) -> &'static str {
    match &result.verified {
        Some(v) if v.passed => "yes",
        Some(_) => "NO",
        None => "-",
    }
}

/// How many samples ran throttled, `0/40`, or `-` without telemetry.
pub fn throttled(result: &BenchResult) -> String {
    result.telemetry.as_ref().map_or("-".to_owned(), |t| {
        format!("{}/{}", t.throttled_samples.len(), result.samples_ns.len())
    })
}

/// Why sampling stopped, as the JSON says it: `noise`, `time_limit`.
pub fn stopped_by(reason: StopReason) -> &'static str {
    match reason {
        StopReason::Noise => "noise",
        StopReason::TimeLimit => "time_limit",
        StopReason::SampleCount => "sample_count",
    }
}

/// Why sampling stopped, or `-`.
pub fn stopped(result: &BenchResult) -> &'static str {
    result.stopped_by.map_or("-", stopped_by)
}

/// The GPUs' state the run was measured in, in a line: `GPU state: clean before and after`,
/// or each disturbed GPU (`GPU 0: busy: 2 other processes (pid ...)`) and whether
/// `--allow-busy` let it be measured; `None` when the run read no GPU's state.
pub fn conditions(report: &BenchReport) -> Option<String> {
    if report.benchmarks.iter().all(|b| b.conditions.is_empty()) {
        return None;
    }
    let disturbed = report.disturbed_devices();
    if disturbed.is_empty() {
        return Some("GPU state: clean before and after".to_owned());
    }
    let allowed = if report.allow_busy {
        " (measured with --allow-busy)"
    } else {
        ""
    };
    Some(format!(
        "GPU state{allowed}: {}; its figures are not the software's alone",
        disturbed.join("; ")
    ))
}

/// `12 measured, 28 skipped, 0 failed`.
pub fn counts(report: &BenchReport) -> String {
    let [measured, skipped, failed] = report.counts();
    format!("{measured} measured, {skipped} skipped, {failed} failed")
}

/// A combination's libraries with their versions: `cudart 12.9, cublas 12.9.1.4`.
pub fn libraries(run: &CombinationRun) -> String {
    let listed = run.library_versions();
    if listed.is_empty() {
        "-".to_owned()
    } else {
        listed.join(", ")
    }
}

/// A combination's ceilings: `copy 2987.1 GB/s; bf16 781.2, f16 760.4 TFLOP/s`, or `-`.
pub fn peaks(run: &CombinationRun) -> String {
    let mut parts = Vec::new();
    if let Some(copy) = run.peaks.copy_gbps {
        parts.push(format!("copy {copy:.1} GB/s"));
    }
    if !run.peaks.gemm_tflops.is_empty() {
        let gemms: Vec<String> = run
            .peaks
            .gemm_tflops
            .iter()
            .map(|(precision, tflops)| format!("{precision} {tflops:.1}"))
            .collect();
        parts.push(format!("{} TFLOP/s", gemms.join(", ")));
    }
    if parts.is_empty() {
        "-".to_owned()
    } else {
        parts.join("; ")
    }
}

/// The NCCL table's header: nccl-tests' columns (out-of-place), then how each row was taken.
pub const NCCL_HEADER: [&str; 12] = [
    "collective",
    "size (B)",
    "count (elements)",
    "type",
    "redop",
    "root",
    "time (us)",
    "algbw (GB/s)",
    "busbw (GB/s)",
    "noise",
    "verified",
    "stopped by",
];

/// The NCCL table's title: `NCCL over 8 GPUs (0, 1, 2, 3, 4, 5, 6, 7)`, or across nodes
/// `NCCL across 2 nodes, 8 ranks (sim1: GPUs 0, 1, 2, 3; ...)`, and how to read it.
pub fn nccl_title(table: &NcclTable) -> String {
    let devices: Vec<String> = table.devices.iter().map(u32::to_string).collect();
    if !table.hosts.is_empty() {
        let mut nodes: Vec<(&str, Vec<String>)> = Vec::new();
        for (host, device) in table.hosts.iter().zip(&devices) {
            match nodes.iter_mut().find(|(h, _)| h == host) {
                Some((_, gpus)) => gpus.push(device.clone()),
                None => nodes.push((host, vec![device.clone()])),
            }
        }
        let placement: Vec<String> = (nodes.iter())
            .map(|(host, gpus)| format!("{host}: GPUs {}", gpus.join(", ")))
            .collect();
        return format!(
            "NCCL across {} node{}, {} ranks ({}), as nccl-tests prints it (out-of-place): time \
             the median of samples each the slowest rank's, from CUDA events on every rank's \
             stream; algbw = size / time, busbw = algbw x the collective's bus factor",
            nodes.len(),
            if nodes.len() == 1 { "" } else { "s" },
            table.hosts.len(),
            placement.join("; ")
        );
    }
    format!(
        "NCCL over {} GPU{} ({}), as nccl-tests prints it (out-of-place): time the slowest GPU's \
         median, from CUDA events on every GPU's stream; algbw = size / time, busbw = algbw x \
         the collective's bus factor",
        devices.len(),
        if devices.len() == 1 { "" } else { "s" },
        devices.join(", ")
    )
}

/// The NCCL table's rows, in nccl-tests' formats: the time in µs with two decimals, the
/// bandwidths in GB/s with two.
pub fn nccl_rows(table: &NcclTable) -> Vec<Vec<String>> {
    let two = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v:.2}"));
    (table.rows.iter())
        .filter_map(|r| Some((r, r.nccl.as_ref()?)))
        .map(|(r, f)| {
            vec![
                r.parameters.implementation.clone().unwrap_or_default(),
                r.parameters.size.map_or("-".to_owned(), |s| s.to_string()),
                f.count.to_string(),
                f.datatype.clone(),
                f.redop.clone(),
                f.root.to_string(),
                two(r.summary.map(|s| s.median_ns / 1e3)),
                two(f.algbw_gbps),
                two(f.busbw_gbps),
                noise(r),
                verified(r).to_owned(),
                stopped(r).to_owned(),
            ]
        })
        .collect()
}

/// The GPU a result ran on in a run over several (`GPU 3`), `-` for the rest.
pub fn device(result: &BenchResult) -> String {
    result
        .device
        .as_ref()
        .map_or("-".to_owned(), |d| format!("GPU {}", d.index))
}

/// The node table's header: `benchmark`, `size`, `variant`, then `GPU 0`, `GPU 1`, ...
pub fn node_header(table: &NodeTable) -> Vec<String> {
    ["benchmark", "size", "variant"]
        .into_iter()
        .map(str::to_owned)
        .chain(table.devices.iter().map(|d| format!("GPU {}", d.index)))
        .collect()
}

/// One row of the node table: the benchmark's name, size and variant, then each GPU's cell
/// with whether it is the odd one out.
pub type NodeCells = (Vec<String>, Vec<(String, bool)>);

/// A node table's rows: each benchmark's name, size and variant, then each GPU's figure (as
/// the combination's table gives it) or how it ended, with whether it is the odd one out.
pub fn node_rows(table: &NodeTable) -> Vec<NodeCells> {
    table
        .rows
        .iter()
        .map(|row| {
            let r = row.first;
            let key = vec![r.benchmark.clone(), size(r), variant(r)];
            let cells = (row.cells.iter())
                .map(|cell| match cell {
                    Some((r, odd)) if r.status == Status::Measured => (figure(r), *odd),
                    Some((r, _)) => (r.status.name().to_owned(), false),
                    None => ("-".to_owned(), false),
                })
                .collect();
            (key, cells)
        })
        .collect()
}

/// The node table's title: `4 GPUs (H100), each benchmark's figure per GPU`.
pub fn node_title(table: &NodeTable) -> String {
    format!(
        "{} GPUs ({}), each benchmark's figure per GPU",
        table.devices.len(),
        table.model
    )
}

/// What the node table's mark means: the rule, on median times.
pub fn node_legend(mark: &str) -> String {
    format!(
        "{mark} the odd one out: its median time {}",
        crate::node::outlier::METHOD
    )
}

/// A `slow_device` finding's benchmarks with their ratios: `copy/c/driver/1073741824/batch
/// +15.0%, ...`.
pub fn slow_benchmarks(finding: &NodeFinding) -> String {
    let listed: Vec<String> = (finding.benchmarks.iter())
        .map(|b| format!("{} {:+.1}%", b.id, 100.0 * (b.ratio - 1.0)))
        .collect();
    listed.join(", ")
}

/// Benchmarks that were not measured, grouped by how they ended and why: failures first.
#[derive(Debug, PartialEq)]
pub struct Unmeasured<'a> {
    pub status: Status,
    pub reason: &'a str,
    /// Each benchmark's id, with its GPU in a run over several.
    pub ids: Vec<String>,
    pub combinations: Vec<&'a str>,
}

/// Every skipped and failed benchmark, one group per (status, reason), failures first, each in
/// order of first appearance.
pub fn unmeasured(report: &BenchReport) -> Vec<Unmeasured<'_>> {
    let mut groups: Vec<Unmeasured> = Vec::new();
    for status in [Status::Failed, Status::Skipped] {
        for result in report.benchmarks.iter().filter(|r| r.status == status) {
            let reason = result.reason.as_deref().unwrap_or("no reason given");
            let at = match groups
                .iter()
                .position(|g| g.status == status && g.reason == reason)
            {
                Some(at) => at,
                None => {
                    groups.push(Unmeasured {
                        status,
                        reason,
                        ids: Vec::new(),
                        combinations: Vec::new(),
                    });
                    groups.len() - 1
                }
            };
            let group = &mut groups[at];
            group.ids.push(result.label());
            if !group.combinations.contains(&result.combination.as_str()) {
                group.combinations.push(&result.combination);
            }
        }
    }
    groups
}

impl Unmeasured<'_> {
    /// `failed`, `skipped`.
    pub fn verb(&self) -> &'static str {
        match self.status {
            Status::Failed => "failed",
            _ => "skipped",
        }
    }

    /// The benchmarks it covers: their ids when there are few, else a count and the
    /// combinations (`28 benchmarks of conda:cu13, pip:venv-cu12`).
    pub fn which(&self) -> String {
        if self.ids.len() <= 3 {
            self.ids.join(", ")
        } else {
            format!(
                "{} benchmarks of {}",
                self.ids.len(),
                self.combinations.join(", ")
            )
        }
    }
}

/// A combination's theoretical peaks: `memory 3352 GB/s; bf16 989.4, f32 66.9 TFLOP/s`, why
/// there are none for compute, or `-` where no device came up.
pub fn spec(run: &CombinationRun) -> String {
    let Some(spec) = &run.spec else {
        return "-".to_owned();
    };
    let mut parts = Vec::new();
    if let Some(memory) = spec.memory_gbps {
        parts.push(format!("memory {memory:.0} GB/s"));
    }
    let shown = ["f32", "tf32", "f16", "bf16", "fp8"];
    let tflops: Vec<String> = shown
        .iter()
        .filter_map(|p| Some(format!("{p} {:.1}", spec.tflops.get(*p)?)))
        .collect();
    if !tflops.is_empty() {
        parts.push(format!("{} TFLOP/s", tflops.join(", ")));
    }
    parts.extend(spec.missing.clone());
    match parts.is_empty() {
        true => "-".to_owned(),
        false => parts.join("; "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::model::{Key, Parameters, Side};

    fn result(id_size: u64, status: Status, reason: &str, combination: &str) -> BenchResult {
        let key = Key {
            combination: combination.into(),
            benchmark: "vector_add",
            side: Side::Gpu,
            parameters: Parameters {
                size: Some(id_size),
                ..Parameters::default()
            },
        };
        match status {
            Status::Failed => BenchResult::failed(key, reason),
            _ => BenchResult::skipped(key, reason),
        }
    }

    #[test]
    fn times_read_in_their_unit() {
        assert_eq!(duration(812.4), "812 ns");
        assert_eq!(duration(1234.0), "1.23 µs");
        assert_eq!(duration(4.561e6), "4.56 ms");
        assert_eq!(duration(1.2e9), "1.20 s");
        assert_eq!(duration(999.7), "1.00 µs");
        assert_eq!(duration(999_999.0), "1.00 ms");
        assert_eq!(duration(f64::NAN), "-");
    }

    #[test]
    fn unmeasured_benchmarks_group_by_reason_failures_first() {
        let failed = [result(1 << 20, Status::Failed, "died", "a")];
        let skipped = (1..=4).map(|i| {
            let combination = if i < 3 { "a" } else { "b" };
            result(i << 20, Status::Skipped, "no GPU", combination)
        });
        let report = BenchReport::of(false, skipped.chain(failed).collect());
        let groups = unmeasured(&report);
        assert_eq!(groups.len(), 2);
        assert_eq!((groups[0].verb(), groups[0].reason), ("failed", "died"));
        assert_eq!(groups[0].which(), "vector_add/a/1048576");
        assert_eq!(groups[1].which(), "4 benchmarks of a, b");
        assert_eq!(size(&report.benchmarks[3]), "4 Mi");
    }
}
