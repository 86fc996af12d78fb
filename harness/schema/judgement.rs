//! A run, or a fleet's runs, judged against a baseline: the `baseline` field of a check report
//! and of a merged table. `baseline::judge` makes it; reports and merges read it.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// A run, or a fleet's runs, judged against a baseline.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Judgement {
    /// The baseline file.
    #[serde(with = "crate::pathname")]
    pub baseline: PathBuf,
    /// What the baseline was learned from: `1000 nodes, 60000 runs, <from> to <to>`.
    pub learned_from: String,
    /// Every row judged, the slowest first (`baseline::judge::against` orders them once all are in).
    pub rows: Vec<Against>,
    /// Measured rows the baseline has no entry for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unjudged: Vec<Unjudged>,
}

/// Where a node's row stands against its fleet.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Standing {
    Within,
    Slower,
    Faster,
}

/// One row of a node against the baseline.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Against {
    /// The node: its host name (as `merge` names it).
    pub host: String,
    /// The row's id in its run, and the benchmark it is across runs.
    pub id: String,
    pub kind: String,
    /// NVML's index of the GPU (dcgm-exporter's `gpu`), its UUID and its PCI bus id as
    /// dcgm-exporter writes it (`00000000:1B:00.0`).
    pub gpu: Option<u32>,
    pub gpu_uuid: Option<String>,
    pub pci_bus_id: Option<String>,
    pub model: Option<String>,
    pub figure: f64,
    pub unit: String,
    /// The baseline's median node, and its range.
    pub expected: f64,
    pub low: f64,
    pub high: f64,
    /// The row's cost over the baseline's (time over time, or the expected bandwidth over
    /// the row's): above 1 is slower, whatever the unit.
    pub slowdown: f64,
    /// How many of the baseline's robust standard deviations the row lies from its median
    /// node (positive: slower); absent where the fleet's nodes did not differ at all.
    pub deviations: Option<f64>,
    /// The nodes the baseline learned the entry from.
    pub nodes: usize,
    pub standing: Standing,
}

/// A measured row the baseline has no entry for.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Unjudged {
    pub host: String,
    pub id: String,
    /// What the baseline lacks.
    pub why: String,
}

impl Judgement {
    /// The rows slower than their fleet.
    pub fn slower(&self) -> impl Iterator<Item = &Against> {
        self.rows.iter().filter(|r| r.standing == Standing::Slower)
    }
}

impl Against {
    /// `node-0017 GPU 0 (00000000:1B:00.0) copy/dtod/256MiB: +8.0% from the baseline's 1000
    /// nodes (12.3 robust deviations)`.
    pub fn line(&self) -> String {
        let gpu = match (self.gpu, &self.pci_bus_id) {
            (Some(gpu), Some(bus)) => format!(" GPU {gpu} ({bus})"),
            (Some(gpu), None) => format!(" GPU {gpu}"),
            _ => String::new(),
        };
        format!(
            "{}{gpu} {}: {} from the baseline's {} nodes{}",
            self.host,
            self.id,
            crate::figures::pct(self.slowdown),
            self.nodes,
            self.deviations
                .map_or_else(String::new, |d| format!(" ({d:+.1} robust deviations)"))
        )
    }
}
