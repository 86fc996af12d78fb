//! `stackbench baseline`: what a fleet expects of a node, learned from its history. Per GPU
//! model, stack (driver, libraries, clock setting, simulated or real) and benchmark (or copy of
//! check's node probe): the median node's figure, the robust spread between nodes, and the
//! range a node may lie in and still be one of them, by the rule `compare --fleet` names a
//! node beyond its group with. `check --baseline` and `merge --baseline` judge a node against
//! the file ([`judge`]).

pub mod judge;

use crate::fleet::select::Selector;
use crate::fleet::{node_costs, Node, Spread};
use crate::store::rows::{self, Row};
use crate::store::{Columns, Store, StoreError};
use crate::tags::BASELINE_SCHEMA;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A fleet's expectations, the file `check --baseline` and `merge --baseline` read.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Baseline {
    pub schema: String,
    /// The store it was learned from, and the selector that took its rows.
    #[serde(with = "crate::pathname")]
    pub store: PathBuf,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub select: Option<String>,
    /// The least change that counts (a fraction): a node is beyond its fleet only where it is
    /// also beyond twice this.
    pub threshold: f64,
    /// The robust standard deviations a node may lie from the median node.
    pub deviations: f64,
    pub runs: usize,
    pub nodes: usize,
    /// The first and last start times of the runs, RFC 3339.
    pub from: String,
    pub to: String,
    /// One per model, stack and benchmark with at least three nodes, in key order.
    pub entries: Vec<Entry>,
    /// What had too few nodes for a spread, in words.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<String>,
}

/// What an entry is the expectation of.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord)]
pub struct Key {
    pub model: String,
    pub driver: String,
    /// The combination's libraries and versions (`cudart 13.0, cublas 13.1.0`); empty for the
    /// node probe's copies, which use the driver alone.
    pub libraries: String,
    /// `not locked`, or the clocks the runs were locked at.
    pub clocks: String,
    pub simulated: bool,
    /// The benchmark without its combination (`copy/dtod/256MiB`, `node/copy/ce/h2d`).
    pub kind: String,
}

impl Key {
    /// The model as a reader knows it: `NVIDIA H100 80GB HBM3`, or with `(simulated)`.
    pub fn model_name(&self) -> String {
        if self.simulated {
            format!("{} (simulated)", self.model)
        } else {
            self.model.clone()
        }
    }

    /// The key of a store row.
    pub fn of(row: &Row) -> Key {
        Key {
            model: row.model.clone().unwrap_or_default(),
            driver: row.driver.clone().unwrap_or_default(),
            libraries: row.libraries.clone(),
            clocks: row.clocks.clone(),
            simulated: row.simulated,
            kind: row.kind.clone(),
        }
    }
}

/// The fleet's expectation of one benchmark on one model and stack.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Entry {
    #[serde(flatten)]
    pub key: Key,
    /// `ns` (less is better) or `GB/s` (more is better).
    pub unit: String,
    pub nodes: usize,
    /// The median node's figure (each node's figure is the median over its runs).
    pub expected: f64,
    /// The robust standard deviation between nodes, relative (of the log figures).
    pub spread: f64,
    /// The figures a node may have and still be one of the fleet.
    pub low: f64,
    pub high: f64,
}

impl Entry {
    /// The spread as [`Spread`] has it: the log cost of the median node and the deviation.
    pub fn spread(&self) -> Spread {
        Spread {
            centre: rows::log_cost(self.expected, &self.unit),
            sigma: self.spread,
        }
    }
}

/// Why a baseline could not be made or read.
#[derive(Debug, thiserror::Error)]
pub enum BaselineError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(
        "the store {store} holds no measured row{selected} with at least 3 nodes to learn from \
         ({rows} measured rows in all); fill it with `stackbench ingest`, or widen --select"
    )]
    Nothing {
        store: PathBuf,
        selected: String,
        rows: usize,
    },
    #[error("cannot read the baseline {}: {source}; give the file `stackbench baseline --format json -o FILE` wrote", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{} is no baseline ({reason}); give the file `stackbench baseline --format json -o FILE` wrote", path.display())]
    NotBaseline { path: PathBuf, reason: String },
}

/// The baseline of the measured rows `select` takes (all, without one) from `store`, at
/// `threshold` (a fraction; [`crate::compare::stats::MIN_THRESHOLD`] without one).
pub fn derive(
    store: &Path,
    select: Option<&Selector>,
    threshold: Option<f64>,
) -> Result<Baseline, BaselineError> {
    let all = Store::at(store).read(Columns::Figures)?;
    let measured: Vec<&Row> = all
        .iter()
        .filter(|r| r.status == "measured" && r.verified != Some(false) && r.log_cost().is_some())
        .collect();
    let rows: Vec<&Row> = (measured.iter().copied())
        .filter(|r| select.is_none_or(|s| s.matches(r)))
        .collect();
    let threshold = threshold.unwrap_or(crate::compare::stats::MIN_THRESHOLD);
    let units: BTreeMap<Key, &str> = rows
        .iter()
        .filter_map(|r| Some((Key::of(r), r.unit.as_deref()?)))
        .collect();
    let mut entries = Vec::new();
    let mut left_out = Vec::new();
    for (key, nodes) in node_costs(&rows, Key::of) {
        let costs: Vec<f64> = nodes.values().copied().collect();
        let unit = units.get(&key).copied().unwrap_or("ns");
        match Spread::of(&costs) {
            Some(spread) => {
                let limit = spread.limit(threshold);
                let (a, b) = (
                    rows::figure(spread.centre - limit, unit),
                    rows::figure(spread.centre + limit, unit),
                );
                entries.push(Entry {
                    unit: unit.to_owned(),
                    nodes: costs.len(),
                    expected: rows::figure(spread.centre, unit),
                    spread: spread.sigma,
                    low: a.min(b),
                    high: a.max(b),
                    key,
                });
            }
            None => left_out.push(format!(
                "{} on {} (driver {}): {} node(s)",
                key.kind,
                key.model,
                key.driver,
                costs.len()
            )),
        }
    }
    if entries.is_empty() {
        return Err(BaselineError::Nothing {
            store: store.to_path_buf(),
            selected: select.map_or_else(String::new, |s| format!(" that {s} takes")),
            rows: measured.len(),
        });
    }
    let runs: BTreeSet<&str> = rows.iter().map(|r| r.run_id.as_str()).collect();
    let nodes: BTreeSet<Node> = rows.iter().map(|r| crate::fleet::node(r)).collect();
    let first = rows.iter().min_by_key(|r| r.started_us);
    let last = rows.iter().max_by_key(|r| r.started_us);
    Ok(Baseline {
        schema: BASELINE_SCHEMA.to_owned(),
        store: store.to_path_buf(),
        select: select.map(ToString::to_string),
        threshold,
        deviations: crate::fleet::OUTLIER_DEVIATIONS,
        runs: runs.len(),
        nodes: nodes.len(),
        from: first.map(|r| r.started.clone()).unwrap_or_default(),
        to: last.map(|r| r.started.clone()).unwrap_or_default(),
        entries,
        left_out,
    })
}

impl Baseline {
    /// The baseline saved in `path`.
    pub fn read(path: &Path) -> Result<Baseline, BaselineError> {
        let bytes =
            crate::hostfs::read(path, crate::hostfs::RESULTS).map_err(|e| BaselineError::Read {
                path: path.to_path_buf(),
                source: e.into(),
            })?;
        let not = |reason: String| BaselineError::NotBaseline {
            path: path.to_path_buf(),
            reason,
        };
        let value: serde_json::Value =
            serde_json::from_slice(&bytes).map_err(|e| not(format!("not JSON: {e}")))?;
        match value.get("schema").and_then(|s| s.as_str()) {
            Some(BASELINE_SCHEMA) => {}
            Some(other) => return Err(not(format!("its schema is {other}"))),
            None => return Err(not("it has no schema tag".to_owned())),
        }
        let mut baseline: Baseline =
            serde_json::from_value(value).map_err(|e| not(e.to_string()))?;
        baseline.entries.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(baseline)
    }

    /// What it was learned from: `1000 nodes, 60000 runs, <from> to <to> (driver=570.*)`.
    pub fn learned_from(&self) -> String {
        format!(
            "{} nodes, {} runs, {} to {}{}",
            self.nodes,
            self.runs,
            self.from,
            self.to,
            (self.select.as_ref()).map_or_else(String::new, |s| format!(" ({s})"))
        )
    }

    /// The entry of `key`.
    pub fn entry(&self, key: &Key) -> Option<&Entry> {
        self.entries
            .binary_search_by(|e| e.key.cmp(key))
            .ok()
            .map(|at| &self.entries[at])
    }
}
