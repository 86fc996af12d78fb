//! `stackbench bench`: vector add and matmul on every CUDA combination, measured to nvbench's
//! standard (GUIDE.md section 7), and the CPU-side benchmarks that compare toolkits without a
//! GPU (NVRTC compilation, library load time).
//!
//! Each combination runs in a worker of its own (`stackbench __bench`, [`worker`]) with its
//! search path pinned as `check`'s are; [`client`] is the parent's end of it, [`suite`] the
//! order of one combination's benchmarks, [`plan`] their sizes and limits. Combinations run
//! one after another: two on one GPU would measure each other. So do GPUs: each selected GPU
//! gets the GPU benchmarks in turn (two at once would share the host's CPU, PCIe root
//! complexes and power budget), the CPU-side ones run once, on the first; [`node`] sets the
//! GPUs of one model side by side. A combination with NCCL then gets one pass over all the
//! GPUs together ([`collectives`]).

pub mod across;
pub mod client;
pub mod clocks;
pub mod collectives;
pub mod conditions;
pub mod model;
pub mod node;
pub mod plan;
pub mod protocol;
pub mod repeat;
pub mod shares;
pub mod stats;
pub mod suite;
pub mod theoretical;
pub mod worker;

use crate::check::{self, CheckError};
use crate::compat::ComputeCapability;
use crate::discover::Host;
use crate::tags::{BENCH_SCHEMA, BENCH_SCHEMA_MINOR};
use model::{BenchReport, BenchResult};
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
    pub selection: check::Selection,
    pub depth: Depth,
    /// How long one worker command may take before it counts as hung.
    pub timeout: Duration,
    /// The stackbench executable that serves as worker (`__bench`, `__gpu`).
    pub worker: PathBuf,
    /// How many times each combination's benchmarks run (`--repeat`), at least 1.
    pub repeat: u32,
    /// `--filter`: only the benchmarks whose id holds one of these (all when empty).
    pub filter: Vec<String>,
    /// `--allow-busy`: measure GPUs other programs compute on.
    pub allow_busy: bool,
    /// `--lock-clocks`: lock the GPUs' clocks while measuring (root).
    pub lock_clocks: bool,
}

/// Why `bench` did not run (exit status 2).
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error(transparent)]
    Check(#[from] CheckError),
    #[error(transparent)]
    Busy(#[from] conditions::Busy),
    #[error(transparent)]
    Clocks(#[from] clocks::LockError),
}

/// What a run works on: the host's fingerprint, the selected combinations, the GPU, and the
/// architecture NVRTC compiles for.
pub struct Scope {
    pub selected: check::Selected,
    /// `sm_90`: the device's, else `--target`, else [`DEFAULT_TARGET`].
    pub arch: String,
}

/// Scans the host and picks the combinations to benchmark.
pub fn scope(options: &BenchOptions, host: &Host) -> Result<Scope, CheckError> {
    let selected = options.selection.resolve(host, &options.worker)?;
    let arch = selected
        .gpu
        .compute_capability()
        .or(options.selection.target)
        .unwrap_or(DEFAULT_TARGET);
    Ok(Scope {
        selected,
        arch: format!("sm_{}{}", arch.major, arch.minor),
    })
}

impl BenchOptions {
    /// The suite's settings for the pass over the `at`th selected device of `scope` (the
    /// first: device 0 when none was selected): the CPU-side benchmarks on the first pass
    /// only, GPU results keyed by device where there are several.
    pub fn settings<'a>(&'a self, scope: &'a Scope, at: usize) -> Settings<'a> {
        let devices = &scope.selected.devices;
        Settings {
            depth: self.depth,
            arch: &scope.arch,
            device: devices.get(at).copied().unwrap_or(0),
            cpu_side: at == 0,
            keyed: devices.len() > 1,
            filter: &self.filter,
            worker: &self.worker,
            timeout: self.timeout,
        }
    }
}

/// The progress of one repetition on one device: the combination's name says which.
struct Repetition<'a> {
    progress: &'a dyn Progress,
    at: u32,
    of: u32,
    /// The GPU of this pass, in a run over several.
    device: Option<u32>,
}

impl Progress for Repetition<'_> {
    fn update(&self, combination: &str, done: usize, total: usize, last: &BenchResult) {
        let mut name = combination.to_owned();
        if let Some(device) = self.device {
            name.push_str(&format!(" on GPU {device}"));
        }
        if self.of > 1 {
            name.push_str(&format!(" (repetition {} of {})", self.at, self.of));
        }
        self.progress.update(&name, done, total, last);
    }
}

/// Runs every selected combination's benchmarks, one combination and one GPU at a time,
/// `repeat` times over, interleaved (A B C A B C): each repetition in fresh workers, so that
/// the variation between runs shows in the results. Over several GPUs, a GPU slower than its
/// same-model peers is a finding ([`node::slow_devices`]). Each selected GPU's state is read
/// before and after ([`conditions`]): one another program computes on is refused unless
/// `--allow-busy`, and every result records its GPU's.
pub fn bench(
    options: &BenchOptions,
    host: &Host,
    progress: &dyn Progress,
) -> Result<BenchReport, BenchError> {
    let started = crate::timestamp::now();
    let scope = scope(options, host)?;
    let before = read_conditions(options, &scope);
    if !options.allow_busy {
        conditions::refuse_busy(before.as_deref().unwrap_or_default())?;
    }
    // Held until the report is made: dropping it resets the clocks.
    let (_lock, mut clocks_locked) = match options.lock_clocks {
        true => {
            let devices = match scope.selected.devices.as_slice() {
                [] if scope.selected.gpu.listed_by_nvml() => vec![0],
                listed => listed.to_vec(),
            };
            let (guard, locked) = clocks::lock(
                &options.worker,
                options.selection.driver_dir.as_deref(),
                &options.selection.trust,
                &devices,
                &scope.selected.gpu,
            )?;
            (Some(guard), locked)
        }
        false => (None, Vec::new()),
    };
    let passes = scope.selected.devices.len().max(1);
    let repeat = options.repeat.max(1);
    let mut runs: Vec<Vec<_>> = scope
        .selected
        .combinations
        .iter()
        .map(|_| Vec::new())
        .collect();
    for at in 1..=repeat {
        for (combination, runs) in scope.selected.combinations.iter().zip(&mut runs) {
            for pass in 0..passes {
                let settings = options.settings(&scope, pass);
                // The first pass always runs: it says what the combination is.
                if pass > 0 && !suite::wanted(combination, &settings) {
                    continue;
                }
                let progress = Repetition {
                    progress,
                    at,
                    of: repeat,
                    device: settings.keyed.then_some(settings.device),
                };
                runs.push(suite::run(combination, &settings, &progress));
            }
            let settings = options.settings(&scope, 0);
            if collectives::has_nccl(combination) && collectives::wanted(combination, &settings) {
                let progress = Repetition {
                    progress,
                    at,
                    of: repeat,
                    device: None,
                };
                runs.push(collectives::run(
                    combination,
                    &settings,
                    &scope.selected,
                    &progress,
                ));
            }
        }
    }
    let after = match before {
        Some(_) => read_conditions(options, &scope),
        None => None,
    };
    let readings = conditions::Readings {
        before: before.unwrap_or_default(),
        after: after.unwrap_or_default(),
    };
    let first = scope.selected.devices.first().copied().unwrap_or(0);
    let mut combinations = Vec::with_capacity(runs.len());
    let mut benchmarks = Vec::new();
    for (run, mut results) in runs.into_iter().filter_map(repeat::merge) {
        combinations.push(run);
        results.iter_mut().for_each(collectives::refigure);
        for result in &mut results {
            result.conditions = ran_on(result, first)
                .into_iter()
                .filter_map(|index| readings.of(index))
                .collect();
        }
        benchmarks.extend(results);
    }
    clocks::held_below(&mut clocks_locked, &benchmarks);
    let mut report = BenchReport {
        schema: BENCH_SCHEMA.to_owned(),
        schema_minor: BENCH_SCHEMA_MINOR,
        run_id: crate::run_id::new(),
        repeat,
        started,
        host: scope.selected.host.clone(),
        gpu: scope.selected.gpu.clone(),
        target: scope.arch.clone(),
        driver_dir: options.selection.driver_dir.clone(),
        quick: options.depth == Depth::Quick,
        load_untrusted: options.selection.trust.load_untrusted,
        allow_busy: options.allow_busy,
        clocks_locked,
        simulated: combinations.iter().any(|c| c.simulated),
        combinations,
        benchmarks,
        findings: Vec::new(),
        rerendered: None,
        job: None,
    };
    report.findings = node::slow_devices(&report);
    Ok(report)
}

/// The state of the selected GPUs now, where NVML lists them; `None` without NVML, or when it
/// did not answer.
fn read_conditions(options: &BenchOptions, scope: &Scope) -> Option<Vec<conditions::DeviceState>> {
    if !scope.selected.gpu.listed_by_nvml() {
        return None;
    }
    let selection = &options.selection;
    conditions::read(
        &options.worker,
        selection.driver_dir.as_deref(),
        &selection.trust,
        &scope.selected.devices,
    )
}

/// The GPUs a result ran on: a collective's ranks, a GPU benchmark's device, else `first` (a
/// one-GPU run's, and the CPU-side benchmarks', which ran beside the first selected GPU).
fn ran_on(result: &BenchResult, first: u32) -> Vec<u32> {
    if let Some(nccl) = &result.nccl {
        return nccl.devices.clone();
    }
    vec![result.device.as_ref().map_or(first, |d| d.index)]
}
