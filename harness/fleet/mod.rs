//! `stackbench compare --fleet OLD NEW`: the question a fleet upgrades on. Across every node the
//! two selectors take from the store (`driver=570.*` against `driver=580.*`), per benchmark: the
//! shift of the group median with an interval from the spread between nodes (the nodes are the
//! replicates; each node's figure is the median of its runs), judged by the same rules as
//! `compare`; and, per group, the nodes whose figure lies beyond their own group's, which are
//! broken nodes, not a driver's regression.

pub mod nights;
pub mod select;

use crate::compare::stats::{self, Ratio, Verdict};
use crate::figures::pct;
use crate::store::rows::Row;
use crate::store::{Columns, Store, StoreError};
use crate::tags::FLEET_SCHEMA;
use select::Selector;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// A node's figure further from its group's median than this many robust standard deviations
/// (1.4826 × the median absolute deviation) marks it, where it is also beyond twice the
/// threshold: a node among a thousand passes five deviations by chance about once in three
/// thousand comparisons of a row.
pub const OUTLIER_DEVIATIONS: f64 = 5.0;

/// Bins of each drawn distribution.
pub const BINS: usize = 24;

/// What `compare --fleet` was asked.
#[derive(Debug, Clone)]
pub struct FleetOptions {
    pub store: PathBuf,
    pub old: Selector,
    pub new: Selector,
    /// `--threshold`; by default [`stats::MIN_THRESHOLD`], nvbench's least gap: a fleet's
    /// intervals are narrow, so the threshold says what matters.
    pub threshold: Option<f64>,
}

/// Why a fleet comparison could not be made.
#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(
        "the selector {selector} takes no measured bench row from the store {store} ({rows} rows \
         in all); check it against the store's drivers ({drivers}), or fill the store with \
         `stackbench ingest`"
    )]
    NothingSelected {
        selector: String,
        store: PathBuf,
        rows: usize,
        drivers: String,
    },
}

/// The fleet comparison.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct FleetReport {
    pub schema: String,
    #[serde(with = "crate::pathname")]
    pub store: PathBuf,
    pub old: Group,
    pub new: Group,
    /// `--threshold`, when given; else each row carries the one it was judged at.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threshold: Option<f64>,
    /// One per benchmark measured in both groups, in id order.
    pub rows: Vec<FleetRow>,
    /// Nodes beyond their own group on some row, slowest first.
    pub outliers: Vec<Outlier>,
    /// Benchmarks the new group is slower on, in a line each.
    pub regressions: Vec<String>,
}

/// One side's selection.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Group {
    pub selector: Selector,
    /// Nodes (a host's GPU) with at least one measured row.
    pub nodes: usize,
    pub runs: usize,
    pub drivers: Vec<String>,
    pub models: Vec<String>,
    /// The first and last start times, RFC 3339.
    pub from: String,
    pub to: String,
    /// Some of its rows ran on stackbench's simulated GPU: their figures are a model's.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub simulated: bool,
}

/// One benchmark across both groups.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct FleetRow {
    pub id: String,
    pub old_nodes: usize,
    pub new_nodes: usize,
    /// Each group's median node figure, ns.
    pub old_median_ns: f64,
    pub new_median_ns: f64,
    /// New median over old, with its 99% interval; absent with too few nodes.
    pub ratio: Option<Ratio>,
    pub verdict: Option<Verdict>,
    pub threshold: f64,
    /// Why there is no verdict.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// Each group's node figures over the old median, binned on one shared axis.
    pub distribution: Distribution,
}

/// Both groups' node figures as histograms on one axis, as ratios to the old group's median.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Distribution {
    /// The axis' ends (ratios to the old median); the bins divide it evenly.
    pub low: f64,
    pub high: f64,
    pub old: Vec<usize>,
    pub new: Vec<usize>,
}

/// A node beyond its group on at least one benchmark.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Outlier {
    /// `old` or `new`.
    pub group: String,
    pub host: String,
    /// NVML's index, the UUID and the PCI bus id of the GPU, as dcgm-exporter labels it.
    pub gpu: Option<u32>,
    pub gpu_uuid: Option<String>,
    pub pci_bus_id: Option<String>,
    /// Each benchmark it is beyond its group on, with its figure over the group's median.
    pub rows: Vec<(String, f64)>,
}

/// A node: its host and its GPU (UUID, NVML index).
pub type Node = (String, Option<String>, Option<u32>);

/// One group's node figures (log ns) per benchmark, with what names each node.
struct Figures {
    by_row: BTreeMap<String, BTreeMap<Node, f64>>,
    labels: BTreeMap<Node, (Option<String>, Option<u32>)>,
}

/// Compares the groups `options` select from its store.
pub fn compare(options: &FleetOptions) -> Result<FleetReport, FleetError> {
    let store = Store::at(&options.store);
    let rows: Vec<Row> = store
        .read(Columns::Figures)?
        .into_iter()
        .filter(|r| r.command == "bench" && r.status == "measured" && r.figure.is_some())
        .collect();
    let side = |selector: &Selector| -> Result<(Group, Figures), FleetError> {
        let taken: Vec<&Row> = rows.iter().filter(|r| selector.matches(r)).collect();
        if taken.is_empty() {
            let drivers: std::collections::BTreeSet<&str> =
                rows.iter().filter_map(|r| r.driver.as_deref()).collect();
            return Err(FleetError::NothingSelected {
                selector: selector.to_string(),
                store: options.store.clone(),
                rows: rows.len(),
                drivers: drivers.into_iter().collect::<Vec<_>>().join(", "),
            });
        }
        Ok((group(selector, &taken), figures(&taken)))
    };
    let (old, old_figures) = side(&options.old)?;
    let (new, new_figures) = side(&options.new)?;
    let threshold = options.threshold.unwrap_or(stats::MIN_THRESHOLD);
    let mut fleet_rows = Vec::new();
    for (id, old_nodes) in &old_figures.by_row {
        let Some(new_nodes) = new_figures.by_row.get(id) else {
            continue;
        };
        fleet_rows.push(row(id, old_nodes, new_nodes, threshold));
    }
    let mut outliers = Vec::new();
    for (name, figures) in [("old", &old_figures), ("new", &new_figures)] {
        outliers.extend(beyond(name, figures, threshold));
    }
    outliers.sort_by(|a, b| {
        let worst = |o: &Outlier| o.rows.iter().map(|r| r.1).fold(0.0, f64::max);
        worst(b)
            .total_cmp(&worst(a))
            .then_with(|| a.host.cmp(&b.host))
    });
    let regressions = fleet_rows
        .iter()
        .filter(|r| r.verdict == Some(Verdict::Slower))
        .filter_map(|r| {
            let ratio = r.ratio?;
            Some(format!(
                "{}: {:+.2}% across {} nodes against {} ({} .. {})",
                r.id,
                100.0 * (ratio.ratio - 1.0),
                r.new_nodes,
                r.old_nodes,
                pct(ratio.low),
                pct(ratio.high)
            ))
        })
        .collect();
    Ok(FleetReport {
        schema: FLEET_SCHEMA.to_owned(),
        store: options.store.clone(),
        old,
        new,
        threshold: options.threshold,
        rows: fleet_rows,
        outliers,
        regressions,
    })
}

impl FleetReport {
    /// Whether the fleet found something: a slower benchmark, or a node beyond its group.
    pub fn has_findings(&self) -> bool {
        !self.regressions.is_empty() || !self.outliers.is_empty()
    }
}

/// A group's summary.
fn group(selector: &Selector, rows: &[&Row]) -> Group {
    let set = |f: &dyn Fn(&Row) -> Option<String>| distinct(rows, f);
    let nodes: std::collections::BTreeSet<Node> = rows.iter().map(|r| node(r)).collect();
    let runs: std::collections::BTreeSet<&str> = rows.iter().map(|r| r.run_id.as_str()).collect();
    let first = rows.iter().min_by_key(|r| r.started_us);
    let last = rows.iter().max_by_key(|r| r.started_us);
    Group {
        selector: selector.clone(),
        nodes: nodes.len(),
        runs: runs.len(),
        drivers: set(&|r| r.driver.clone()),
        models: set(&|r| r.model.clone()),
        from: first.map(|r| r.started.clone()).unwrap_or_default(),
        to: last.map(|r| r.started.clone()).unwrap_or_default(),
        simulated: rows.iter().any(|r| r.simulated),
    }
}

/// The distinct values `f` takes on `rows`, in order.
fn distinct(rows: &[&Row], f: &dyn Fn(&Row) -> Option<String>) -> Vec<String> {
    let set: std::collections::BTreeSet<String> = rows.iter().filter_map(|r| f(r)).collect();
    set.into_iter().collect()
}

/// The node a row ran on: its host and its GPU (by UUID, else NVML's index).
pub fn node(row: &Row) -> Node {
    (row.host.clone(), row.gpu_uuid.clone(), row.gpu)
}

/// Each benchmark's figures per node: the median over the node's runs of the log figure.
fn figures(rows: &[&Row]) -> Figures {
    let mut labels = BTreeMap::new();
    for row in rows {
        labels
            .entry(node(row))
            .or_insert_with(|| (row.pci_bus_id.clone(), row.gpu));
    }
    Figures {
        by_row: node_costs(rows, |r| r.row_id.clone()),
        labels,
    }
}

/// Per `key` of the rows, each node's cost: the median over its runs of the row's log cost
/// (time, or bandwidth's inverse: [`Row::log_cost`]).
pub fn node_costs<K: Ord>(
    rows: &[&Row],
    key: impl Fn(&Row) -> K,
) -> BTreeMap<K, BTreeMap<Node, f64>> {
    let mut runs: BTreeMap<K, BTreeMap<Node, Vec<f64>>> = BTreeMap::new();
    for row in rows {
        if let Some(cost) = row.log_cost() {
            (runs.entry(key(row)).or_default())
                .entry(node(row))
                .or_default()
                .push(cost);
        }
    }
    runs.into_iter()
        .map(|(key, nodes)| {
            let nodes = nodes
                .into_iter()
                .map(|(node, mut logs)| (node, crate::figures::median(&mut logs)))
                .collect();
            (key, nodes)
        })
        .collect()
}

/// Where a group's nodes lie on one row: the median of their log costs and their robust
/// standard deviation (1.4826 × the median absolute deviation).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    pub centre: f64,
    pub sigma: f64,
}

impl Spread {
    /// The spread of `values` (logs); `None` below [`stats::MIN_NODES`].
    pub fn of(values: &[f64]) -> Option<Spread> {
        if values.len() < stats::MIN_NODES {
            return None;
        }
        let centre = crate::figures::median(&mut values.to_vec());
        let mut deviations: Vec<f64> = values.iter().map(|v| (v - centre).abs()).collect();
        Some(Spread {
            centre,
            sigma: 1.4826 * crate::figures::median(&mut deviations),
        })
    }

    /// How far (a log) a node may lie from the centre and still be one of the group: beyond
    /// [`OUTLIER_DEVIATIONS`] robust deviations and twice the threshold it is not.
    pub fn limit(&self, threshold: f64) -> f64 {
        (OUTLIER_DEVIATIONS * self.sigma).max((1.0 + 2.0 * threshold).ln())
    }
}

/// The figures of a group's nodes.
fn values(nodes: &BTreeMap<Node, f64>) -> Vec<f64> {
    nodes.values().copied().collect()
}

/// One benchmark judged across the groups.
fn row(
    id: &str,
    old_nodes: &BTreeMap<Node, f64>,
    new_nodes: &BTreeMap<Node, f64>,
    threshold: f64,
) -> FleetRow {
    let (old, new) = (values(old_nodes), values(new_nodes));
    let ratio = stats::median_shift(&old, &new);
    let old_median = crate::figures::median(&mut old.clone());
    let new_median = crate::figures::median(&mut new.clone());
    FleetRow {
        id: id.to_owned(),
        old_nodes: old.len(),
        new_nodes: new.len(),
        old_median_ns: old_median.exp(),
        new_median_ns: new_median.exp(),
        verdict: ratio.map(|r| r.verdict(threshold)),
        ratio,
        threshold,
        why: ratio.is_none().then(|| {
            format!(
                "too few nodes (old {}, new {}): the interval comes from the spread between \
                 nodes, which needs at least {} a group",
                old.len(),
                new.len(),
                stats::MIN_NODES
            )
        }),
        distribution: distribution(old_median, &old, &new),
    }
}

/// Both groups' values (logs) binned on one axis from the lower to the upper 0.5% of either,
/// as ratios to `centre` (a log).
fn distribution(centre: f64, old: &[f64], new: &[f64]) -> Distribution {
    let mut all: Vec<f64> = old.iter().chain(new).map(|v| v - centre).collect();
    all.sort_by(f64::total_cmp);
    let at = |q: f64| stats::nearest_quantile(&all, q);
    let (low, high) = (at(0.005), at(0.995));
    let width = (high - low).max(1e-9);
    let bins = |values: &[f64]| {
        let mut counts = vec![0; BINS];
        for v in values {
            let x = ((v - centre - low) / width * BINS as f64).floor();
            counts[(x.max(0.0) as usize).min(BINS - 1)] += 1;
        }
        counts
    };
    Distribution {
        low: low.exp(),
        high: high.exp(),
        old: bins(old),
        new: bins(new),
    }
}

/// The nodes of a group beyond its median on some benchmark: further than
/// [`OUTLIER_DEVIATIONS`] robust deviations and twice the threshold.
fn beyond(name: &str, figures: &Figures, threshold: f64) -> Vec<Outlier> {
    let mut found: BTreeMap<&Node, Vec<(String, f64)>> = BTreeMap::new();
    for (id, nodes) in &figures.by_row {
        let Some(spread) = Spread::of(&values(nodes)) else {
            continue;
        };
        let (centre, limit) = (spread.centre, spread.limit(threshold));
        for (node, v) in nodes {
            if (v - centre).abs() > limit {
                found
                    .entry(node)
                    .or_default()
                    .push((id.clone(), (v - centre).exp()));
            }
        }
    }
    found
        .into_iter()
        .map(|(node, rows)| {
            let (pci_bus_id, gpu) = figures.labels.get(node).cloned().unwrap_or_default();
            Outlier {
                group: name.to_owned(),
                host: node.0.clone(),
                gpu,
                gpu_uuid: node.1.clone(),
                pci_bus_id,
                rows,
            }
        })
        .collect()
}
