//! `stackbench merge`: the results of many nodes (a fleet) in one table keyed by node, GPU,
//! driver and combination, the outliers first: a node whose benchmark is beyond the fleet's
//! spread, a node whose checks fail. Simulated runs are labelled so and form a fleet of their
//! own: a simulated figure never moves a real fleet's median, nor a real one a simulated one's.

use crate::compare::load::{self, LoadError, Run};
use crate::compare::stats::median;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Schema tag of the merged table.
pub const MERGE_SCHEMA: &str = "stackbench.merge/v1";

/// How far from the fleet a figure must be to stand out, at least (0.05 is 5%), whatever the
/// spread.
pub const MIN_DEVIATION: f64 = 0.05;

/// Nodes needed before a spread means anything.
const MIN_NODES: usize = 3;

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
}

/// One node's run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Node {
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
    pub gpu: Option<String>,
    pub driver: Option<String>,
    /// The node's run was on the simulated GPU; its fleet is the simulated nodes'.
    pub simulated: bool,
    pub combination: String,
    /// The benchmark's id, or `checks` for a check row.
    pub id: String,
    /// The node's median, ns (bench).
    pub median_ns: Option<f64>,
    /// The fleet's median of the nodes' medians, ns (bench).
    pub fleet_median_ns: Option<f64>,
    /// The node's median over the fleet's (bench).
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
    #[error("{}: a {kind} result; merge takes bench or check results", path.display())]
    Unsupported { path: PathBuf, kind: &'static str },
    #[error("{} is a {first} result and {} a {other} one: merge the same command's results", first_path.display(), path.display())]
    Mixed {
        first: &'static str,
        other: &'static str,
        first_path: PathBuf,
        path: PathBuf,
    },
    #[error("nothing to merge: give the result files of two or more nodes")]
    TooFew,
}

/// Whether `value` stands out from `all` (which holds it): beyond [`MIN_DEVIATION`] of the
/// fleet's median and beyond three scaled median absolute deviations, with at least
/// [`MIN_NODES`] nodes.
pub fn stands_out(value: f64, all: &[f64]) -> bool {
    if all.len() < MIN_NODES {
        return false;
    }
    let center = median(&mut all.to_vec());
    if center <= 0.0 {
        return false;
    }
    let mut deviations: Vec<f64> = all.iter().map(|x| (x - center).abs()).collect();
    let mad = 1.4826 * median(&mut deviations);
    let off = (value - center).abs();
    off > MIN_DEVIATION * center && off > 3.0 * mad
}

/// Merges the result files in `paths`, one per node.
pub fn merge(paths: &[PathBuf]) -> Result<MergeReport, MergeError> {
    if paths.len() < 2 {
        return Err(MergeError::TooFew);
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
    let nodes: Vec<Node> = runs.iter().map(|(path, run)| node(path, run)).collect();
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
    let outliers = rows
        .iter()
        .filter(|r| r.outlier)
        .map(|r| match r.ratio {
            Some(ratio) => format!(
                "{} {}: {:+.1}% from the fleet's median",
                r.node,
                r.id,
                100.0 * (ratio - 1.0)
            ),
            None => format!(
                "{} {}: failing checks {}",
                r.node,
                r.combination,
                r.failed_checks.join(", ")
            ),
        })
        .collect();
    Ok(MergeReport {
        schema: MERGE_SCHEMA.to_owned(),
        kind: runs[0].1.kind().to_owned(),
        nodes,
        rows,
        outliers,
    })
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
                    .filter(|k| k.status == crate::check::model::Status::Fail)
                    .map(|k| k.id.clone())
                    .collect(),
                ..row(&c.name, "checks")
            })
            .collect(),
        Run::Doctor(_) | Run::Scan(_) => Vec::new(),
    }
}

/// Sets each bench row's fleet median, ratio and outlier mark (its fleet: the rows of its
/// benchmark, simulated or real as it is); a check row with failures is an outlier.
fn mark_outliers(rows: &mut [Row]) {
    let mut fleet: BTreeMap<(String, bool), Vec<f64>> = BTreeMap::new();
    for row in rows.iter() {
        if let Some(m) = row.median_ns {
            fleet
                .entry((row.id.clone(), row.simulated))
                .or_default()
                .push(m);
        }
    }
    for row in rows.iter_mut() {
        match (row.median_ns, fleet.get(&(row.id.clone(), row.simulated))) {
            (Some(m), Some(all)) => {
                let center = median(&mut all.clone());
                row.fleet_median_ns = Some(center);
                row.ratio = (center > 0.0).then(|| m / center);
                row.outlier = stands_out(m, all);
            }
            _ => row.outlier = !row.failed_checks.is_empty(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_beyond_the_spread_stands_out() {
        let fleet = [100.0, 101.0, 99.0, 100.5, 130.0];
        assert!(stands_out(130.0, &fleet));
        assert!(!stands_out(101.0, &fleet));
        // Two nodes say nothing about a spread.
        assert!(!stands_out(130.0, &[100.0, 130.0]));
        // A noisy fleet: 8% off is within its spread.
        assert!(!stands_out(108.0, &[90.0, 110.0, 100.0, 95.0, 108.0]));
    }

    #[test]
    fn simulated_nodes_never_share_a_fleet_median_with_real_ones() {
        let row = |node: &str, simulated: bool, median: f64| Row {
            node: node.into(),
            gpu: None,
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
    fn one_file_is_too_few() {
        assert!(matches!(
            merge(&[PathBuf::from("a.json")]),
            Err(MergeError::TooFew)
        ));
    }
}
