//! A generated fleet whose truth is known, for the store's tests and benchmark: nodes × nights
//! of bench runs made from a committed H100 run, written into a store through the code
//! `stackbench ingest` uses. Each node is its own card (an offset within the spread measured
//! between the committed runs' boots), each night its own boot (noise of the same size); a
//! share of the nodes take a new driver on one night, which costs the copy a set fraction; a few
//! nodes are broken, slower than their peers on every row.
//!
//! Runs are trimmed to the rows a fleet test reads (the copy, the vector add and the cuBLAS
//! GEMMs of one combination) and to a few samples each: 90,000 full runs are 80 GB of JSON.

#![allow(clippy::disallowed_methods)]

use stackbench::bench::model::{BenchReport, BenchResult, Status};
use stackbench::compare::load::Run;
use stackbench::store::Store;
use std::path::Path;

/// The committed run the fleet is made from.
pub const BASE_RUN: &str = "results/bench-vm-h100-2026-11-27.json";
/// The combination kept.
pub const COMBINATION: &str = "toolkit:cuda-13.0";
/// The first night's first run: 2026-08-01T02:00:00Z; node n starts n seconds later.
const FIRST_NIGHT: u64 = 1_785_549_600;
/// The drivers before and after the change.
pub const OLD_DRIVER: &str = "570.195.03";
pub const NEW_DRIVER: &str = "580.95.05";

/// What the fleet is.
#[derive(Debug, Clone)]
pub struct Spec {
    pub nodes: usize,
    pub nights: usize,
    /// Every node whose index modulo 10 is below this takes the new driver (3: 30%).
    pub changed_tenths: usize,
    /// The night the changed nodes take the new driver.
    pub change_night: usize,
    /// What the new driver costs the copy (0.015: 1.5% slower).
    pub copy_cost: f64,
    /// The broken nodes, by index, and how much slower they are on every row.
    pub broken: Vec<usize>,
    pub broken_cost: f64,
    /// Each node's offset and each night's noise, as relative standard deviations.
    pub node_sigma: f64,
    pub night_sigma: f64,
    /// Samples kept a row.
    pub samples: usize,
}

impl Spec {
    /// The fleet issue 52 describes: 1,000 nodes × 90 nights, 30% on a new driver from night
    /// 60 that costs the copy 1.5%, nodes 17, 423 and 871 8% slow.
    pub fn issue() -> Spec {
        Spec {
            nodes: 1000,
            nights: 90,
            changed_tenths: 3,
            change_night: 60,
            copy_cost: 0.015,
            broken: vec![17, 423, 871],
            broken_cost: 0.08,
            node_sigma: 0.0008,
            night_sigma: 0.0008,
            samples: 8,
        }
    }

    /// The host name of node `n`.
    pub fn host(n: usize) -> String {
        format!("node-{n:04}")
    }

    /// Whether node `n` runs the new driver on `night`.
    pub fn upgraded(&self, n: usize, night: usize) -> bool {
        n % 10 < self.changed_tenths && night >= self.change_night
    }
}

/// SplitMix64 with Box-Muller normals: the same spec makes the same fleet.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn uniform(&mut self) -> f64 {
        ((self.next() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    fn normal(&mut self) -> f64 {
        let (u, v) = (self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }
}

/// The committed run trimmed to the fleet's rows, each to `samples` samples, without
/// repetitions (a row's figure is then its median).
pub fn base(samples: usize) -> BenchReport {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(BASE_RUN);
    let text = std::fs::read_to_string(&path).expect("the committed H100 run");
    let mut run: BenchReport = serde_json::from_str(&text).expect("a bench run");
    run.combinations.retain(|c| c.name == COMBINATION);
    run.benchmarks.retain(|b| {
        b.combination == COMBINATION
            && b.status == Status::Measured
            && (b.benchmark == "copy"
                || b.benchmark == "vector_add"
                || (b.benchmark == "matmul"
                    && b.parameters.implementation.as_deref() == Some("cublas")))
    });
    for row in &mut run.benchmarks {
        let median = row.summary.expect("a summary").median_ns;
        row.samples_ns = (0..samples)
            .map(|i| median * (1.0 + 0.001 * (i as f64 - samples as f64 / 2.0) / samples as f64))
            .collect();
        row.samples_taken = Some(samples as u64);
        row.repetitions.clear();
        row.telemetry = None;
        row.conditions.clear();
        row.cupti = None;
    }
    run.findings.clear();
    run
}

/// `row` with every time multiplied by `factor`.
fn scaled(row: &BenchResult, factor: f64) -> BenchResult {
    let mut row = row.clone();
    row.samples_ns.iter_mut().for_each(|s| *s *= factor);
    if let Some(summary) = row.summary.as_mut() {
        summary.median_ns *= factor;
        summary.q1_ns *= factor;
        summary.q3_ns *= factor;
        summary.min_ns *= factor;
        summary.max_ns *= factor;
    }
    row
}

/// Night `night`'s run on node `n`: its own ids, host, GPU and boot; its rows scaled by the
/// node's offset, the night's noise, the driver's cost and the node's breakage.
pub fn run(
    spec: &Spec,
    base: &BenchReport,
    offsets: &[f64],
    n: usize,
    night: usize,
) -> BenchReport {
    let mut random = Random((n as u64) << 32 | night as u64);
    let mut run = base.clone();
    let upgraded = spec.upgraded(n, night);
    run.run_id = Some(format!("00000000-{n:04x}-4{night:03x}-8000-000000000000"));
    run.started = stackbench::timestamp::rfc3339(FIRST_NIGHT + night as u64 * 86_400 + n as u64);
    run.host.hostname = Spec::host(n);
    run.host.boot_id = Some(format!("b0000000-{n:04x}-4{night:03x}-8000-000000000000"));
    run.gpu.driver_version = Some(if upgraded { NEW_DRIVER } else { OLD_DRIVER }.to_owned());
    if let Some(gpu) = run.gpu.devices.first_mut() {
        gpu.uuid = Some(format!("GPU-{n:08x}-0000-4000-8000-000000000000"));
        gpu.pci_bus_id = Some("0000:1b:00.0".into());
    }
    let broken = spec.broken.contains(&n);
    run.benchmarks = base
        .benchmarks
        .iter()
        .map(|row| {
            let mut factor = (offsets[n] + spec.night_sigma * random.normal()).exp();
            if upgraded && row.benchmark == "copy" {
                factor *= 1.0 + spec.copy_cost;
            }
            if broken {
                factor *= 1.0 + spec.broken_cost;
            }
            scaled(row, factor)
        })
        .collect();
    run
}

/// Each node's offset (a log), drawn once.
pub fn offsets(spec: &Spec) -> Vec<f64> {
    let mut random = Random(0x0FF5E7);
    (0..spec.nodes)
        .map(|_| spec.node_sigma * random.normal())
        .collect()
}

/// The fleet written into `store`, a night at a time; the runs added.
pub fn generate(spec: &Spec, store: &Store) -> usize {
    let base = base(spec.samples);
    let offsets = offsets(spec);
    let mut added = 0;
    for night in 0..spec.nights {
        let runs: Vec<Run> = (0..spec.nodes)
            .map(|n| Run::Bench(run(spec, &base, &offsets, n, night)))
            .collect();
        added += stackbench::store::ingest::add(store, &runs)
            .expect("ingest a night")
            .runs;
    }
    added
}
