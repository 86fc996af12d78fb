//! `stackbench merge`: the results of many nodes (a fleet) in one table keyed by node, GPU,
//! driver and combination, the outliers first: a GPU whose benchmark is slower than its
//! same-model peers across the fleet (by [`crate::node::outlier`]'s rule, the one `bench` holds
//! a node's GPUs to), a node whose checks fail. Each GPU of a run over several is a member of
//! its own; GPUs of different models are never peers. Simulated runs are labelled so and form a
//! fleet of their own: a simulated figure never moves a real fleet's median, nor a real one a
//! simulated one's. A single node is a fleet of one: its table, with a note that it has no
//! peers. Two files of one hostname (nodes that share a host, or a rerun) are told apart by
//! their directories.

use crate::compare::load::{self, LoadError, Run};
use crate::devices::DeviceKey;
use crate::figures::median;
use crate::node::outlier;
use crate::schema::judgement::Judgement;
use crate::tags::MERGE_SCHEMA;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The fleet's results in one table.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MergeReport {
    pub schema: String,
    /// `bench` or `check`.
    pub kind: String,
    pub nodes: Vec<Node>,
    /// Outliers first, then by benchmark and node.
    pub rows: Vec<Row>,
    /// Every outlier, in words.
    pub outliers: Vec<String>,
    /// What the table cannot say, in words (a fleet of one has no peers).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// `--baseline`: every node's rows against the fleet's history; absent without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<Judgement>,
}

/// The note on a fleet of one node.
pub const ONE_NODE_NOTE: &str = "one node: a fleet of one has no peers, so no benchmark can be an outlier; its failing checks still are";

/// The note on a fleet of one node judged against a baseline.
pub const ONE_NODE_BASELINE_NOTE: &str =
    "one node: a fleet of one has no peers, so its benchmarks are held to the baseline alone";

/// One node's run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Node {
    #[serde(with = "crate::pathname")]
    pub path: PathBuf,
    pub hostname: String,
    pub gpu: Option<String>,
    pub driver: Option<String>,
    /// The run was on stackbench's simulated GPU: its figures are no GPU's.
    pub simulated: bool,
}

/// One node's figure for one benchmark, or its failing checks of one combination.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Row {
    pub node: String,
    /// The GPU's model: the row's device's, else the node's first GPU's.
    pub gpu: Option<String>,
    /// The GPU the figure was taken on, in a run over several GPUs; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<DeviceKey>,
    pub driver: Option<String>,
    /// The node's run was on the simulated GPU; its fleet is the simulated nodes'.
    pub simulated: bool,
    pub combination: String,
    /// The benchmark's id, or `checks` for a check row.
    pub id: String,
    /// The node's median, ns (bench).
    pub median_ns: Option<f64>,
    /// The median of the medians of every GPU of its model in the fleet, ns (bench).
    pub fleet_median_ns: Option<f64>,
    /// The row's median over the fleet's (bench).
    pub ratio: Option<f64>,
    /// Checks that failed on the node (check).
    pub failed_checks: Vec<String>,
    pub outlier: bool,
}

/// Why the fleet's files cannot be merged (exit status 2).
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error(transparent)]
    Baseline(#[from] crate::baseline::BaselineError),
    #[error("{}: a {kind} result; merge takes bench or check results", path.display())]
    Unsupported { path: PathBuf, kind: &'static str },
    #[error("{} is a {first} result and {} a {other} one: merge the same command's results", first_path.display(), path.display())]
    Mixed {
        first: &'static str,
        other: &'static str,
        first_path: PathBuf,
        path: PathBuf,
    },
    #[error("nothing to merge: give the result file of at least one node")]
    Empty,
}

/// Merges the result files in `paths`, one per node, each judged against the baseline in
/// `baseline` where one is given.
pub fn merge(paths: &[PathBuf], baseline: Option<&Path>) -> Result<MergeReport, MergeError> {
    if paths.is_empty() {
        return Err(MergeError::Empty);
    }
    let mut runs: Vec<(&Path, Run)> = Vec::with_capacity(paths.len());
    for path in paths {
        let run = load::read(path)?;
        if !matches!(run, Run::Bench(_) | Run::Check(_)) {
            return Err(MergeError::Unsupported {
                path: path.clone(),
                kind: run.kind(),
            });
        }
        if let Some((first_path, first)) = runs.first() {
            if first.kind() != run.kind() {
                return Err(MergeError::Mixed {
                    first: first.kind(),
                    other: run.kind(),
                    first_path: first_path.to_path_buf(),
                    path: path.clone(),
                });
            }
        }
        runs.push((path.as_path(), run));
    }
    let mut nodes: Vec<Node> = runs.iter().map(|(path, run)| node(path, run)).collect();
    name_shared_hosts(&mut nodes);
    let mut rows = Vec::new();
    for ((_, run), node) in runs.iter().zip(&nodes) {
        rows.extend(node_rows(run, node));
    }
    mark_outliers(&mut rows);
    rows.sort_by(|a, b| {
        b.outlier
            .cmp(&a.outlier)
            .then_with(|| a.id.cmp(&b.id))
            .then_with(|| a.node.cmp(&b.node))
    });
    let judgement = match baseline {
        Some(path) => {
            let nodes: Vec<(String, Vec<crate::store::rows::Row>)> = (runs.iter().zip(&nodes))
                .map(|((_, run), node)| (node.hostname.clone(), crate::store::rows::of_run(run)))
                .collect();
            Some(crate::baseline::judge::against(path, &nodes)?)
        }
        None => None,
    };
    let mut outliers: Vec<String> = rows
        .iter()
        .filter(|r| r.outlier)
        .map(|r| match r.ratio {
            Some(ratio) => format!(
                "{}{} {}: {:+.1}% from the median of the fleet's {} ({})",
                r.node,
                r.device.as_ref().map_or(String::new(), |d| format!(
                    " {}",
                    crate::bench::node::gpu_name(d)
                )),
                r.id,
                100.0 * (ratio - 1.0),
                r.gpu.as_deref().unwrap_or("GPUs of unknown model"),
                outlier::METHOD
            ),
            None => format!(
                "{} {}: failing checks {}",
                r.node,
                r.combination,
                r.failed_checks.join(", ")
            ),
        })
        .collect();
    for slower in judgement.iter().flat_map(Judgement::slower) {
        outliers.push(format!("{}: slower than its fleet", slower.line()));
    }
    let notes = match (nodes.len(), &judgement) {
        (1, None) => vec![ONE_NODE_NOTE.to_owned()],
        (1, Some(_)) => vec![ONE_NODE_BASELINE_NOTE.to_owned()],
        _ => Vec::new(),
    };
    Ok(MergeReport {
        schema: MERGE_SCHEMA.to_owned(),
        kind: runs[0].1.kind().to_owned(),
        nodes,
        rows,
        outliers,
        notes,
        baseline: judgement,
    })
}

/// Names each node of a hostname that several files share `hostname (directory)`, after the
/// directory its file is in (`results/run/sim1/check.json`: `vm (sim1)`); files of one
/// hostname in one directory (three runs under `results/`) after their file names instead
/// (`vm (bench-vm-h100-2026-11-26.json)`), so that runs side by side have names of their own.
fn name_shared_hosts(nodes: &mut [Node]) {
    let dir = |n: &Node| {
        n.path
            .parent()
            .and_then(Path::file_name)
            .map(|d| d.to_owned())
    };
    let mut hosts: BTreeMap<String, usize> = BTreeMap::new();
    let mut dirs: BTreeMap<(String, Option<std::ffi::OsString>), usize> = BTreeMap::new();
    for n in nodes.iter() {
        *hosts.entry(n.hostname.clone()).or_default() += 1;
        *dirs.entry((n.hostname.clone(), dir(n))).or_default() += 1;
    }
    for n in nodes.iter_mut().filter(|n| hosts[&n.hostname] > 1) {
        let key = (n.hostname.clone(), dir(n));
        let name = match &key.1 {
            Some(dir) if dirs[&key] == 1 => Some(dir.clone()),
            _ => n.path.file_name().map(|f| f.to_owned()),
        };
        if let Some(name) = name {
            n.hostname = format!("{} ({})", n.hostname, name.to_string_lossy());
        }
    }
}

fn node(path: &Path, run: &Run) -> Node {
    let gpu = run.gpu();
    Node {
        path: path.to_path_buf(),
        hostname: run.host().hostname.clone(),
        gpu: gpu.and_then(|g| g.devices.first()).map(|d| d.name.clone()),
        driver: gpu.and_then(|g| g.driver_version.clone()),
        simulated: run.simulated(),
    }
}

/// A node's rows: a figure per measured benchmark, or a row per combination with failures.
fn node_rows(run: &Run, node: &Node) -> Vec<Row> {
    let row = |combination: &str, id: &str| Row {
        node: node.hostname.clone(),
        gpu: node.gpu.clone(),
        device: None,
        driver: node.driver.clone(),
        simulated: node.simulated,
        combination: combination.to_owned(),
        id: id.to_owned(),
        median_ns: None,
        fleet_median_ns: None,
        ratio: None,
        failed_checks: Vec::new(),
        outlier: false,
    };
    match run {
        Run::Bench(r) => r
            .benchmarks
            .iter()
            .filter_map(|b| {
                Some(Row {
                    median_ns: Some(b.summary?.median_ns),
                    gpu: match &b.device {
                        Some(d) => Some(r.gpu_model(d)),
                        None => node.gpu.clone(),
                    },
                    device: b.device.clone(),
                    ..row(&b.combination, &b.id)
                })
            })
            .collect(),
        Run::Check(r) => r
            .combinations
            .iter()
            .map(|c| Row {
                failed_checks: c
                    .checks
                    .iter()
                    .filter(|k| k.status == crate::schema::check::Status::Fail)
                    .map(|k| k.id.clone())
                    .collect(),
                ..row(&c.name, "checks")
            })
            .collect(),
        Run::Doctor(_) | Run::Scan(_) => Vec::new(),
    }
}

/// The fleet a bench row is measured against: the rows of its benchmark on GPUs of its model,
/// simulated or real as it is.
type Fleet = (String, Option<String>, bool);

/// Sets each bench row's fleet median, ratio and outlier mark (a median time slower than its
/// fleet's by [`outlier::outliers`]); a check row with failures is an outlier.
fn mark_outliers(rows: &mut [Row]) {
    let fleet_of = |row: &Row| -> Fleet { (row.id.clone(), row.gpu.clone(), row.simulated) };
    let mut fleets: BTreeMap<Fleet, Vec<usize>> = BTreeMap::new();
    for (at, row) in rows.iter().enumerate() {
        if row.median_ns.is_some() {
            fleets.entry(fleet_of(row)).or_default().push(at);
        }
    }
    for row in rows.iter_mut().filter(|r| r.median_ns.is_none()) {
        row.outlier = !row.failed_checks.is_empty();
    }
    for members in fleets.values() {
        let costs: Vec<f64> = members
            .iter()
            .filter_map(|&at| rows[at].median_ns)
            .collect();
        let center = median(&mut costs.clone());
        let odd = outlier::outliers(&costs);
        for (k, &at) in members.iter().enumerate() {
            let row = &mut rows[at];
            row.fleet_median_ns = Some(center);
            row.ratio = (center > 0.0).then(|| costs[k] / center);
            row.outlier = odd.iter().any(|o| o.at == k);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bench row of `vector_add/c` on `node`'s GPU `device` of model `gpu`.
    fn on(node: &str, gpu: &str, device: Option<u32>, median: f64) -> Row {
        Row {
            node: node.into(),
            gpu: Some(gpu.into()),
            device: device.map(|index| DeviceKey {
                index,
                uuid: None,
                pci_bus_id: None,
            }),
            driver: None,
            simulated: false,
            combination: "c".into(),
            id: "vector_add/c".into(),
            median_ns: Some(median),
            fleet_median_ns: None,
            ratio: None,
            failed_checks: Vec::new(),
            outlier: false,
        }
    }

    fn outliers(rows: &mut [Row]) -> Vec<(String, Option<u32>)> {
        mark_outliers(rows);
        rows.iter()
            .filter(|r| r.outlier)
            .map(|r| (r.node.clone(), r.device.as_ref().map(|d| d.index)))
            .collect()
    }

    #[test]
    fn a_node_slower_than_the_fleet_s_spread_is_an_outlier_and_a_faster_one_or_two_nodes_are_not() {
        let fleet = |medians: &[f64]| -> Vec<Row> {
            (medians.iter().enumerate())
                .map(|(i, m)| on(&format!("n{i}"), "H100", None, *m))
                .collect()
        };
        let slow = outliers(&mut fleet(&[100.0, 101.0, 99.0, 100.5, 130.0]));
        assert_eq!(slow, [("n4".to_owned(), None)]);
        assert!(outliers(&mut fleet(&[100.0, 101.0, 99.0, 100.5, 70.0])).is_empty());
        // Two nodes say nothing about a spread.
        assert!(outliers(&mut fleet(&[100.0, 130.0])).is_empty());
        // A noisy fleet: 8% off is within its spread.
        assert!(outliers(&mut fleet(&[90.0, 110.0, 100.0, 95.0, 108.0])).is_empty());
    }

    #[test]
    fn each_gpu_is_a_member_and_only_gpus_of_its_model_are_its_peers() {
        // Two nodes of four GPUs: GPU 2 of n1 is 20% slower than the other seven H100s.
        let mut rows: Vec<Row> = (0..8)
            .map(|i| {
                let m = if i == 6 {
                    120.0
                } else {
                    100.0 + f64::from(i % 3)
                };
                on(if i < 4 { "n0" } else { "n1" }, "H100", Some(i % 4), m)
            })
            .collect();
        // Three A100s, twice as slow: their own fleet, never the H100s' outliers.
        rows.extend((0..3).map(|i| on("n2", "A100", Some(i), 200.0 + f64::from(i))));
        assert_eq!(outliers(&mut rows), [("n1".to_owned(), Some(2))]);
        let a100 = rows
            .iter()
            .find(|r| r.gpu.as_deref() == Some("A100"))
            .unwrap();
        assert_eq!(a100.fleet_median_ns, Some(201.0));
        let h100 = rows
            .iter()
            .find(|r| r.gpu.as_deref() == Some("H100"))
            .unwrap();
        assert!(h100.fleet_median_ns.unwrap() < 102.0);
    }

    #[test]
    fn simulated_nodes_never_share_a_fleet_median_with_real_ones() {
        let row = |node: &str, simulated: bool, median: f64| Row {
            node: node.into(),
            gpu: None,
            device: None,
            driver: None,
            simulated,
            combination: "c".into(),
            id: "vector_add/c".into(),
            median_ns: Some(median),
            fleet_median_ns: None,
            ratio: None,
            failed_checks: Vec::new(),
            outlier: false,
        };
        let mut rows = vec![
            row("a", false, 100.0),
            row("b", false, 101.0),
            row("c", false, 99.0),
            row("s1", true, 10.0),
            row("s2", true, 10.0),
            row("s3", true, 10.0),
        ];
        mark_outliers(&mut rows);
        for r in &rows {
            let fleet = if r.simulated { 10.0 } else { 100.0 };
            assert_eq!(r.fleet_median_ns, Some(fleet), "{r:?}");
            assert!(!r.outlier, "{r:?}");
        }
    }

    #[test]
    fn no_file_is_nothing_to_merge() {
        assert!(matches!(merge(&[], None), Err(MergeError::Empty)));
    }

    /// A bench run's JSON file at `path`: host `host`, one benchmark of median `median` ns.
    fn bench_file(path: &Path, host: &str, median: f64) {
        use crate::bench::model::{BenchReport, Side};
        let mut run = BenchReport::of_repetitions("2026-01-01T00:00:00Z", Side::Gpu, &[median]);
        run.host.hostname = host.into();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, serde_json::to_vec(&run).unwrap()).unwrap();
    }

    #[test]
    fn one_node_is_a_fleet_of_one_with_its_table_a_note_and_no_outlier() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("bench.json");
        bench_file(&file, "gpu-1", 100.0);
        let report = merge(&[file], None).unwrap();
        assert_eq!(report.nodes.len(), 1);
        assert_eq!(report.rows.len(), 1);
        assert_eq!(report.rows[0].node, "gpu-1");
        assert_eq!(report.rows[0].fleet_median_ns, report.rows[0].median_ns);
        assert_eq!(report.rows[0].ratio, Some(1.0));
        assert!(report.outliers.is_empty());
        assert_eq!(report.notes, [ONE_NODE_NOTE]);
    }

    #[test]
    fn nodes_of_one_hostname_are_named_by_their_directories_and_two_have_no_note() {
        let dir = tempfile::tempdir().unwrap();
        let files: Vec<PathBuf> = ["sim1", "sim2"]
            .iter()
            .map(|node| {
                let file = dir.path().join(node).join("bench.json");
                bench_file(&file, "vm", 100.0);
                file
            })
            .collect();
        let report = merge(&files, None).unwrap();
        let names: Vec<&str> = report.nodes.iter().map(|n| n.hostname.as_str()).collect();
        assert_eq!(names, ["vm (sim1)", "vm (sim2)"]);
        assert!(report.notes.is_empty());
    }

    #[test]
    fn nodes_of_one_hostname_in_one_directory_are_named_by_their_files() {
        let dir = tempfile::tempdir().unwrap();
        let files: Vec<PathBuf> = ["results/a.json", "results/b.json", "other/a.json"]
            .iter()
            .map(|name| {
                let file = dir.path().join(name);
                bench_file(&file, "vm", 100.0);
                file
            })
            .collect();
        let report = merge(&files, None).unwrap();
        let names: Vec<&str> = report.nodes.iter().map(|n| n.hostname.as_str()).collect();
        assert_eq!(names, ["vm (a.json)", "vm (b.json)", "vm (other)"]);
    }
}
