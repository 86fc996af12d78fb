//! A run over several GPUs as one node: each GPU benchmark's figure on every GPU of one model
//! side by side, and the GPU that is the odd one out among them (`slow_device`), by the robust
//! rule of [`crate::node::outlier`] on median times (higher is worse). GPUs of different
//! models are never each other's peers; with fewer than three of a model nothing is claimed.

use super::model::{BenchReport, BenchResult, NodeFinding, Side, SlowBenchmark, Status};
use crate::devices::DeviceKey;
use crate::node::outlier::{self, Outlier};

/// The finding's code.
pub const SLOW_DEVICE: &str = "slow_device";

/// One GPU benchmark of one combination on every GPU of one model that measured it.
#[derive(Debug)]
pub struct Peers<'a> {
    pub combination: &'a str,
    pub id: &'a str,
    /// The GPUs' model, as NVML names it.
    pub model: String,
    /// Each GPU's result, in the order the run has them.
    pub members: Vec<&'a BenchResult>,
    /// The members beyond the bound (`at` indexes `members`).
    pub odd: Vec<Outlier>,
    /// The median of the members' medians, ns.
    pub median_ns: f64,
}

/// The measured median time of a GPU result keyed by device.
fn median_ns(result: &BenchResult) -> Option<f64> {
    let keyed = result.side == Side::Gpu && result.device.is_some();
    (keyed && result.status == Status::Measured)
        .then_some(result.summary?.median_ns)
        .filter(|m| m.is_finite() && *m > 0.0)
}

/// Every group of peers in the run, in the order their benchmarks first appear.
pub fn peers(report: &BenchReport) -> Vec<Peers<'_>> {
    let mut groups: Vec<Peers> = Vec::new();
    for result in &report.benchmarks {
        let (Some(_), Some(device)) = (median_ns(result), &result.device) else {
            continue;
        };
        let model = report.gpu_model(device);
        let at = groups.iter().position(|g| {
            g.combination == result.combination && g.id == result.id && g.model == model
        });
        match at {
            Some(at) => groups[at].members.push(result),
            None => groups.push(Peers {
                combination: &result.combination,
                id: &result.id,
                model,
                members: vec![result],
                odd: Vec::new(),
                median_ns: 0.0,
            }),
        }
    }
    for group in &mut groups {
        let costs: Vec<f64> = group.members.iter().filter_map(|r| median_ns(r)).collect();
        group.odd = outlier::outliers(&costs);
        group.median_ns = crate::figures::median(&mut costs.clone());
    }
    groups
}

/// `GPU 2 (GPU-..., 0000:3d:00.0)`.
pub fn gpu_name(device: &DeviceKey) -> String {
    let ids: Vec<&str> = [device.uuid.as_deref(), device.pci_bus_id.as_deref()]
        .into_iter()
        .flatten()
        .collect();
    if ids.is_empty() {
        format!("GPU {}", device.index)
    } else {
        format!("GPU {} ({})", device.index, ids.join(", "))
    }
}

/// A `slow_device` finding for each GPU that is the odd one out on one benchmark or more.
pub fn slow_devices(report: &BenchReport) -> Vec<NodeFinding> {
    let mut findings: Vec<NodeFinding> = Vec::new();
    for group in peers(report) {
        for odd in &group.odd {
            let result = group.members[odd.at];
            let Some(device) = &result.device else {
                continue;
            };
            let slow = SlowBenchmark {
                id: result.id.clone(),
                ratio: odd.ratio,
                median_ns: median_ns(result).unwrap_or_default(),
                peers_median_ns: group.median_ns,
            };
            let at = findings
                .iter()
                .position(|f| f.device.index == device.index && f.gpu == group.model);
            match at {
                Some(at) => findings[at].benchmarks.push(slow),
                None => findings.push(NodeFinding {
                    code: SLOW_DEVICE.to_owned(),
                    gpu: group.model.clone(),
                    device: device.clone(),
                    benchmarks: vec![slow],
                    message: String::new(),
                    fix: String::new(),
                }),
            }
        }
    }
    for finding in &mut findings {
        finding
            .benchmarks
            .sort_by(|a, b| b.ratio.total_cmp(&a.ratio));
        let peers = peer_count(report, &finding.gpu);
        let worst = &finding.benchmarks[0];
        let count = finding.benchmarks.len();
        finding.message = format!(
            "{} {} is slower than the other GPUs of its model in this run ({peers} in all) on \
             {count} benchmark{}, its median time up to {:.1}% above theirs ({}); the rule: {}",
            finding.gpu,
            gpu_name(&finding.device),
            if count == 1 { "" } else { "s" },
            100.0 * (worst.ratio - 1.0),
            worst.id,
            outlier::METHOD
        );
        let i = finding.device.index;
        finding.fix = format!(
            "check its clocks, temperature and power with `nvidia-smi -q -d CLOCK,TEMPERATURE,POWER \
             -i {i}`; compare with `stackbench bench --devices {i}` after a reset"
        );
    }
    findings.sort_by_key(|f| f.device.index);
    findings
}

/// How many GPUs of `model` the run measured on.
fn peer_count(report: &BenchReport, model: &str) -> usize {
    let mut seen: Vec<u32> = Vec::new();
    for result in &report.benchmarks {
        if let Some(device) = &result.device {
            if !seen.contains(&device.index) && report.gpu_model(device) == model {
                seen.push(device.index);
            }
        }
    }
    seen.len()
}

/// The node table of one combination and one GPU model: rows the benchmarks, columns the GPUs.
#[derive(Debug, PartialEq)]
pub struct NodeTable<'a> {
    pub combination: &'a str,
    pub model: String,
    pub devices: Vec<DeviceKey>,
    pub rows: Vec<NodeRow<'a>>,
}

/// One benchmark across the GPUs: each GPU's result, if it has one, and whether it is the odd
/// one out.
#[derive(Debug, PartialEq)]
pub struct NodeRow<'a> {
    /// A result of the row, for its name and parameters.
    pub first: &'a BenchResult,
    pub cells: Vec<Option<(&'a BenchResult, bool)>>,
}

/// A node table for each combination and GPU model with two GPUs or more, in the run's order.
pub fn tables(report: &BenchReport) -> Vec<NodeTable<'_>> {
    let groups = peers(report);
    let mut tables: Vec<NodeTable> = Vec::new();
    for result in &report.benchmarks {
        let Some(device) = &result.device else {
            continue;
        };
        let model = report.gpu_model(device);
        let at = match (tables.iter())
            .position(|t| t.combination == result.combination && t.model == model)
        {
            Some(at) => at,
            None => {
                tables.push(NodeTable {
                    combination: &result.combination,
                    model,
                    devices: Vec::new(),
                    rows: Vec::new(),
                });
                tables.len() - 1
            }
        };
        let table = &mut tables[at];
        if !table.devices.iter().any(|d| d.index == device.index) {
            table.devices.push(device.clone());
        }
        if !table.rows.iter().any(|r| r.first.id == result.id) {
            table.rows.push(NodeRow {
                first: result,
                cells: Vec::new(),
            });
        }
    }
    tables.retain(|t| t.devices.len() > 1);
    for table in &mut tables {
        table.devices.sort_by_key(|d| d.index);
        for row in &mut table.rows {
            let group = groups.iter().find(|g| {
                g.combination == table.combination && g.id == row.first.id && g.model == table.model
            });
            row.cells = (table.devices.iter())
                .map(|device| {
                    let result = report.benchmarks.iter().find(|r| {
                        r.id == row.first.id
                            && r.device.as_ref().map(|d| d.index) == Some(device.index)
                    })?;
                    let odd = group.is_some_and(|g| {
                        g.odd.iter().any(|o| std::ptr::eq(g.members[o.at], result))
                    });
                    Some((result, odd))
                })
                .collect();
        }
    }
    tables
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::model::{Key, Parameters};
    use crate::gpu::{Gpu, GpuInfo};

    fn gpu(index: u32, name: &str) -> Gpu {
        Gpu {
            index,
            name: name.into(),
            compute_capability: "9.0".into(),
            uuid: Some(format!("GPU-{index}")),
            pci_bus_id: Some(format!("00000000:{:02X}:00.0", 0x17 + index)),
            memory_bytes: None,
            memory_clock_mhz: None,
        }
    }

    /// `benchmark` of combination `c` measured at `ns` on GPU `index`.
    fn on(index: u32, benchmark: &'static str, ns: f64) -> BenchResult {
        let key = Key {
            combination: "c".into(),
            benchmark,
            side: Side::Gpu,
            parameters: Parameters {
                size: Some(1024),
                ..Parameters::default()
            },
        };
        let samples: Vec<f64> = (0..20)
            .map(|i| ns * (1.0 + 0.001 * f64::from(i % 3)))
            .collect();
        BenchResult {
            summary: crate::bench::stats::summarize(&samples),
            samples_ns: samples,
            device: Some(DeviceKey {
                index,
                uuid: Some(format!("GPU-{index}")),
                pci_bus_id: Some(format!("0000:{:02x}:00.0", 0x17 + index)),
            }),
            ..BenchResult::from_key(key)
        }
    }

    /// A run on `models` (one GPU each) of `copy` and `matmul`, each at `times[i]` x 1000 ns on
    /// GPU i (matmul 2x).
    fn node(models: &[&str], times: &[f64]) -> BenchReport {
        let mut benchmarks = Vec::new();
        for (i, t) in times.iter().enumerate() {
            benchmarks.push(on(i as u32, "copy", 1000.0 * t));
            benchmarks.push(on(i as u32, "matmul", 2000.0 * t));
        }
        let mut report = BenchReport::of(false, benchmarks);
        report.gpu = GpuInfo {
            source: "nvml".into(),
            devices: (models.iter().enumerate())
                .map(|(i, m)| gpu(i as u32, m))
                .collect(),
            driver_version: None,
            note: None,
        };
        report
    }

    #[test]
    fn a_gpu_fifteen_percent_slower_than_three_peers_is_a_slow_device() {
        let report = node(&["H100"; 4], &[1.0, 1.01, 1.15, 0.99]);
        let findings = slow_devices(&report);
        let [finding] = findings.as_slice() else {
            panic!("one finding: {findings:?}")
        };
        assert_eq!(finding.code, "slow_device");
        assert_eq!(finding.gpu, "H100");
        assert_eq!(finding.device.index, 2);
        assert_eq!(finding.device.uuid.as_deref(), Some("GPU-2"));
        assert_eq!(finding.benchmarks.len(), 2);
        for slow in &finding.benchmarks {
            assert!((slow.ratio - 1.15 / 1.005).abs() < 0.01, "{slow:?}");
        }
        assert!(
            finding.message.contains("GPU 2 (GPU-2, 0000:19:00.0)"),
            "{}",
            finding.message
        );
        assert!(finding.message.contains(outlier::METHOD));
        assert!(finding
            .fix
            .contains("nvidia-smi -q -d CLOCK,TEMPERATURE,POWER -i 2"));
        assert!(finding.fix.contains("stackbench bench --devices 2"));
    }

    #[test]
    fn healthy_nodes_and_one_or_two_gpus_claim_nothing() {
        assert!(slow_devices(&node(&["H100"; 4], &[1.0, 1.02, 0.98, 1.01])).is_empty());
        assert!(slow_devices(&node(&["H100"; 2], &[1.0, 2.0])).is_empty());
        assert!(slow_devices(&node(&["H100"], &[1.0])).is_empty());
    }

    #[test]
    fn gpus_of_another_model_are_never_peers() {
        // Two A100s twice as slow as three H100s: no H100 and no A100 is the odd one out.
        let report = node(
            &["H100", "H100", "H100", "A100", "A100"],
            &[1.0, 1.0, 1.01, 2.0, 2.02],
        );
        assert!(slow_devices(&report).is_empty());
        let groups = peers(&report);
        assert_eq!(groups.len(), 4, "copy and matmul per model");
        assert!(groups.iter().all(|g| g.odd.is_empty()));
        // One slow H100 among them is still found, against the H100s only.
        let report = node(
            &["H100", "H100", "H100", "H100", "A100"],
            &[1.0, 1.0, 1.3, 1.01, 2.0],
        );
        let found: Vec<u32> = slow_devices(&report)
            .iter()
            .map(|f| f.device.index)
            .collect();
        assert_eq!(found, [2]);
    }

    #[test]
    fn the_table_sets_each_benchmark_on_every_gpu_side_by_side_marking_the_odd_one() {
        let report = node(&["H100"; 4], &[1.0, 1.01, 1.15, 0.99]);
        let tables = tables(&report);
        let [table] = tables.as_slice() else {
            panic!("one table: {tables:?}")
        };
        assert_eq!((table.combination, table.model.as_str()), ("c", "H100"));
        let indices: Vec<u32> = table.devices.iter().map(|d| d.index).collect();
        assert_eq!(indices, [0, 1, 2, 3]);
        let names: Vec<&str> = table
            .rows
            .iter()
            .map(|r| r.first.benchmark.as_str())
            .collect();
        assert_eq!(names, ["copy", "matmul"]);
        for row in &table.rows {
            let marked: Vec<bool> = row.cells.iter().map(|c| c.unwrap().1).collect();
            assert_eq!(marked, [false, false, true, false]);
        }
        // One GPU: no table.
        assert!(tables_of(&node(&["H100"], &[1.0])).is_empty());
    }

    fn tables_of(report: &BenchReport) -> Vec<String> {
        tables(report).iter().map(|t| t.model.clone()).collect()
    }
}
