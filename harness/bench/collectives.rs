//! The NCCL benchmarks of one combination: one pass over every selected GPU together (a
//! collective is the node's, not a GPU's), in a worker of its own whose request names them all
//! (`CheckRequest.devices`), after the GPUs' own passes. Each collective at each size is
//! verified once bit for bit, then timed as nccl-tests times it, and its figures given in
//! nccl-tests' terms ([`NcclFigures`]): algorithm bandwidth (size / time) and bus bandwidth
//! (algbw x the collective's bus factor).

use super::model::{BenchReport, BenchResult, CombinationRun, NcclFigures, Status, Throughput};
use super::plan::{self, Planned};
use super::suite::{self, Progress, Settings};
use crate::check::combination::Combination;
use crate::check::protocol::Component;
use crate::check::Selected;
use crate::nccl::collective::Collective;

/// The checks the NCCL worker runs first: the driver and every GPU, then libnccl.
const SETUP: [&str; 6] = [
    "driver.library",
    "driver.init",
    "driver.version",
    "driver.devices",
    "driver.nvml",
    "nccl.load",
];

/// Whether `combination` has NCCL (a `libnccl.so.2` among its files).
pub fn has_nccl(combination: &Combination) -> bool {
    (combination.components.iter()).any(|f| f.component == Component::Nccl)
}

/// Whether `--filter` keeps any NCCL benchmark of `combination`, at a GPU's sizes or the
/// simulator's.
pub fn wanted(combination: &Combination, settings: &Settings) -> bool {
    [false, true].into_iter().any(|simulated| {
        plan::nccl(&combination.name, settings.depth, simulated)
            .iter()
            .any(|p| settings.wants(&p.key.id()))
    })
}

/// Why the collectives are not measured on `selected`'s GPUs without starting a worker: NVML
/// lists the GPUs and only one is selected. A collective among one rank is a copy within one
/// GPU: it measures no link, and nccl-tests' bus bandwidth of one rank is zero.
pub fn alone(selected: &Selected) -> Option<String> {
    (selected.gpu.listed_by_nvml() && selected.devices.len() == 1).then(|| {
        "one GPU selected: NCCL's collectives measure the links between two or more (--devices all on a node with several)".to_owned()
    })
}

/// Runs the NCCL benchmarks of `combination` over `selected`'s devices (in rank order) in one
/// worker: the combination as that worker saw it, and a result per collective and size; every
/// row skipped, and no worker started, when the GPU is [`alone`].
pub fn run(
    combination: &Combination,
    settings: &Settings,
    selected: &Selected,
    progress: &dyn Progress,
) -> (CombinationRun, Vec<BenchResult>) {
    let name = combination.name.as_str();
    let devices = &selected.devices;
    if let Some(why) = alone(selected) {
        let run = suite::combination_run(combination, &[], None);
        let planned = plan::nccl(name, settings.depth, run.simulated);
        let results = (planned.iter())
            .filter(|p| settings.wants(&p.key.id()))
            .map(|p| BenchResult::inapplicable(p.key.clone(), why.clone()))
            .collect();
        return (run, results);
    }
    let mut request = suite::request(combination, settings, &SETUP);
    request.devices = devices.to_vec();
    let start = || {
        super::client::Client::start(
            combination,
            request.clone(),
            settings.worker,
            settings.timeout,
        )
    };
    let mut client = start();
    let setup = client.as_ref().map(|c| c.setup.clone()).unwrap_or_default();
    let run = suite::combination_run(combination, &setup, None);
    let mut planned: Vec<Planned> = plan::nccl(name, settings.depth, run.simulated);
    planned.retain(|p| settings.wants(&p.key.id()));
    let unavailable = match &client {
        Err(why) => Some(why.clone()),
        Ok(_) => suite::unmet(&setup, "driver.devices")
            .map(|why| format!("no GPU: {why}"))
            .or_else(|| suite::unmet(&setup, "nccl.load")),
    };
    let ranks = request.gpus();
    let label = format!("{name} (NCCL over {} GPUs)", ranks.len());
    let mut results = Vec::with_capacity(planned.len());
    for item in &planned {
        let mut result = match (&unavailable, &mut client) {
            (Some(why), _) => BenchResult::skipped(item.key.clone(), why.clone()),
            (None, Err(why)) => BenchResult::failed(item.key.clone(), why.clone()),
            (None, Ok(c)) => suite::measure(c, item, settings.depth.gpu_limits(), settings.timeout),
        };
        if client.as_mut().is_ok_and(|c| !c.is_alive()) {
            client = start();
        }
        describe(&mut result, &ranks, &[]);
        progress.update(&label, results.len() + 1, planned.len(), &result);
        results.push(result);
    }
    (run, results)
}

/// Gives an NCCL result (`nccl/...`, its collective the implementation) its nccl-tests
/// figures over `devices` (of `hosts`, across nodes): count, type, reduction, root and bus
/// factor, and the bandwidths of its median ([`refigure`]).
pub fn describe(result: &mut BenchResult, devices: &[u32], hosts: &[String]) {
    let (Some(collective), Some(size)) = (collective(result), result.parameters.size) else {
        return;
    };
    let reduces = matches!(
        collective,
        Collective::AllReduce | Collective::ReduceScatter
    );
    result.nccl = Some(NcclFigures {
        devices: devices.to_vec(),
        hosts: hosts.to_vec(),
        count: size / 4,
        datatype: "float".to_owned(),
        redop: if reduces { "sum" } else { "none" }.to_owned(),
        root: if collective == Collective::Broadcast {
            0
        } else {
            -1
        },
        algbw_gbps: None,
        busbw_gbps: None,
        bus_factor: collective.bus_factor(devices.len()),
    });
    refigure(result);
}

/// The collective of an NCCL result.
fn collective(result: &BenchResult) -> Option<Collective> {
    (result.benchmark == "nccl")
        .then_some(result.parameters.implementation.as_deref())
        .flatten()
        .and_then(Collective::from_id)
}

/// Sets an NCCL result's bandwidths from its median time, as nccl-tests computes them: algbw =
/// size / time, busbw = algbw x the bus factor (GB/s, 1e9 bytes); its throughput is the busbw.
/// Rows merged from repetitions call it again on their pooled median.
pub fn refigure(result: &mut BenchResult) {
    let median = (result.status == Status::Measured)
        .then_some(result.summary.map(|s| s.median_ns))
        .flatten()
        .filter(|m| *m > 0.0);
    let (Some(figures), Some(size)) = (result.nccl.as_mut(), result.parameters.size) else {
        return;
    };
    figures.algbw_gbps = median.map(|ns| size as f64 / ns);
    figures.busbw_gbps = figures.algbw_gbps.map(|a| a * figures.bus_factor);
    result.throughput = figures.busbw_gbps.map(|value| Throughput {
        value,
        unit: "GB/s busbw".to_owned(),
    });
}

/// One combination's measured NCCL results over one set of GPUs: what a user holds beside
/// nccl-tests' output.
#[derive(Debug, PartialEq)]
pub struct NcclTable<'a> {
    pub combination: &'a str,
    /// The GPUs, in rank order.
    pub devices: &'a [u32],
    /// Across nodes: each rank's node, in rank order; empty within one.
    pub hosts: &'a [String],
    /// Each collective's rows in the order they ran (collective by collective, sizes rising).
    pub rows: Vec<&'a BenchResult>,
}

/// A table per combination (and set of GPUs) of the run's measured NCCL results.
pub fn tables(report: &BenchReport) -> Vec<NcclTable<'_>> {
    let mut tables: Vec<NcclTable> = Vec::new();
    for result in &report.benchmarks {
        let Some(figures) = result.nccl.as_ref() else {
            continue;
        };
        if result.status != Status::Measured {
            continue;
        }
        let same = |t: &&mut NcclTable| {
            t.combination == result.combination
                && t.devices == figures.devices.as_slice()
                && t.hosts == figures.hosts.as_slice()
        };
        match tables.iter_mut().find(same) {
            Some(table) => table.rows.push(result),
            None => tables.push(NcclTable {
                combination: &result.combination,
                devices: &figures.devices,
                hosts: &figures.hosts,
                rows: vec![result],
            }),
        }
    }
    tables
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::model::{Key, Parameters, Side, Summary};

    fn result(collective: &str, size: u64, median_ns: f64) -> BenchResult {
        let key = Key {
            combination: "c".into(),
            benchmark: "nccl",
            side: Side::Gpu,
            parameters: Parameters {
                size: Some(size),
                implementation: Some(collective.into()),
                ..Parameters::default()
            },
        };
        BenchResult {
            summary: Some(Summary {
                median_ns,
                q1_ns: median_ns,
                q3_ns: median_ns,
                min_ns: median_ns,
                max_ns: median_ns,
                noise: 0.0,
            }),
            ..BenchResult::from_key(key)
        }
    }

    #[test]
    fn bandwidths_are_nccl_tests_algbw_and_busbw() {
        // 1 GiB all-reduced over 8 GPUs in 5 ms: algbw 214.7 GB/s, busbw x 2·7/8.
        let mut r = result("all_reduce", 1 << 30, 5e6);
        describe(&mut r, &[0, 1, 2, 3, 4, 5, 6, 7], &[]);
        let f = r.nccl.clone().unwrap();
        let algbw = (1u64 << 30) as f64 / 5e6;
        assert!((f.algbw_gbps.unwrap() - algbw).abs() < 1e-9);
        assert!((f.busbw_gbps.unwrap() - algbw * 1.75).abs() < 1e-9);
        assert_eq!(r.throughput.unwrap().value, f.busbw_gbps.unwrap());
        assert_eq!((f.count, f.datatype.as_str()), (1 << 28, "float"));
        assert_eq!((f.redop.as_str(), f.root), ("sum", -1));
        // All-gather's bus factor is (n-1)/n; broadcast's 1, from root 0, reducing nothing.
        let mut gather = result("all_gather", 1 << 20, 1e4);
        describe(&mut gather, &[0, 1, 2, 3], &[]);
        let f = gather.nccl.unwrap();
        assert!((f.busbw_gbps.unwrap() / f.algbw_gbps.unwrap() - 0.75).abs() < 1e-12);
        assert_eq!(f.redop, "none");
        let mut broadcast = result("broadcast", 8, 1e4);
        describe(&mut broadcast, &[0, 1], &[]);
        let f = broadcast.nccl.unwrap();
        assert_eq!((f.root, f.bus_factor), (0, 1.0));
    }

    #[test]
    fn a_table_holds_a_combination_s_measured_rows_over_its_gpus() {
        let mut rows = vec![
            result("all_reduce", 8, 1e4),
            result("all_reduce", 1 << 20, 2e4),
            BenchResult {
                status: Status::Skipped,
                ..result("broadcast", 8, 1e4)
            },
        ];
        rows.iter_mut().for_each(|r| describe(r, &[0, 1], &[]));
        let mut other = result("all_gather", 8, 1e4);
        other.combination = "d".into();
        describe(&mut other, &[0, 1], &[]);
        rows.push(other);
        rows.push(result("copy", 8, 1e4));
        let report = BenchReport::of(false, rows);
        let tables = tables(&report);
        assert_eq!(tables.len(), 2);
        assert_eq!(
            (tables[0].combination, tables[0].devices),
            ("c", &[0, 1][..])
        );
        let sizes: Vec<Option<u64>> = tables[0].rows.iter().map(|r| r.parameters.size).collect();
        assert_eq!(sizes, [Some(8), Some(1 << 20)]);
        assert_eq!(tables[1].combination, "d");
    }

    #[test]
    fn what_was_not_measured_has_no_bandwidth_and_other_benchmarks_no_figures() {
        let mut failed = BenchResult {
            status: Status::Failed,
            ..result("reduce_scatter", 1 << 20, 1e4)
        };
        describe(&mut failed, &[0, 1], &[]);
        let f = failed.nccl.unwrap();
        assert_eq!((f.algbw_gbps, f.busbw_gbps), (None, None));
        assert!(failed.throughput.is_none());
        let mut copy = result("all_reduce", 8, 1e4);
        copy.benchmark = "copy".into();
        describe(&mut copy, &[0, 1], &[]);
        assert!(copy.nccl.is_none());
    }
}
