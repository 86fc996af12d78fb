//! `stackbench bench`: vector add and matmul on every CUDA combination, measured to nvbench's
//! standard (GUIDE.md section 7), and the CPU-side benchmarks that compare toolkits without a
//! GPU (NVRTC compilation, library load time).
//!
//! Each combination runs in a worker of its own (`stackbench __bench`, [`worker`]) with its
//! search path pinned as `check`'s are; [`client`] is the parent's end of it, [`suite`] the
//! order of one combination's benchmarks, [`plan`] their sizes and limits. Combinations run
//! one after another: two on one GPU would measure each other.

pub mod client;
pub mod files;
pub mod model;
pub mod plan;
pub mod protocol;
pub mod stats;
pub mod suite;
pub mod worker;

use crate::check::{self, combination, config, CheckError};
use crate::compat::ComputeCapability;
use crate::discover::{self, Host};
use crate::resolve::SearchContext;
use model::{BenchReport, BENCH_SCHEMA};
use plan::Depth;
use std::path::PathBuf;
use std::time::Duration;
use suite::{Progress, Settings};

/// The architecture compile benchmarks target when there is no device and no `--target`: the
/// H100's, so toolkits compare on the same work.
pub const DEFAULT_TARGET: ComputeCapability = ComputeCapability::new(9, 0);

/// How `bench` runs.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    pub discover: discover::Options,
    /// Take the driver's libraries from here instead of the system's.
    pub driver_dir: Option<PathBuf>,
    /// `--combination`: only these (all when empty).
    pub select: Vec<String>,
    /// Combinations from `stackbench.toml`.
    pub config: config::Config,
    /// The architecture to compile for when there is no device.
    pub target: Option<ComputeCapability>,
    /// The CUDA device ordinal.
    pub device: u32,
    pub depth: Depth,
    /// How long one worker command may take before it counts as hung.
    pub timeout: Duration,
    /// The stackbench executable that serves as worker (`__bench`, `__gpu`).
    pub worker: PathBuf,
}

/// Runs every selected combination's benchmarks, one combination at a time.
pub fn bench(
    options: &BenchOptions,
    host: &Host,
    progress: &dyn Progress,
) -> Result<BenchReport, CheckError> {
    let started = crate::timestamp::now();
    let scan = crate::scan::scan(&options.discover, host);
    let all = combination::combinations(
        &scan,
        &options.config.combinations,
        options.driver_dir.as_deref(),
        host.env.get("LD_LIBRARY_PATH").map(String::as_str),
        &SearchContext::host(Vec::new()),
    );
    let selected = check::select(all, &options.select, &scan)?;
    let gpu = crate::gpu::detect_with(&options.worker, options.driver_dir.as_deref());
    let arch = gpu
        .compute_capability()
        .or(options.target)
        .unwrap_or(DEFAULT_TARGET);
    let arch = format!("sm_{}{}", arch.major, arch.minor);
    let settings = Settings {
        depth: options.depth,
        arch: &arch,
        device: options.device,
        worker: &options.worker,
        timeout: options.timeout,
    };
    let mut combinations = Vec::with_capacity(selected.len());
    let mut benchmarks = Vec::new();
    for combination in &selected {
        let (run, results) = suite::run(combination, &settings, progress);
        combinations.push(run);
        benchmarks.extend(results);
    }
    Ok(BenchReport {
        schema: BENCH_SCHEMA.to_owned(),
        started,
        host: scan.host,
        gpu,
        target: arch,
        driver_dir: options.driver_dir.clone(),
        quick: options.depth == Depth::Quick,
        combinations,
        benchmarks,
    })
}
