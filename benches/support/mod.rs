//! What the criterion benchmarks share: the combinations they run on, each with a persistent
//! bench worker (`stackbench __bench`, its search path pinned as `check` pins it), and the
//! `iter_custom` timing that asks the worker for N runs and gets their GPU time (CUDA events)
//! or, for CPU work, their host time.
//!
//! GPU benchmarks use the host's own combinations and register only where a device came up,
//! and the simulated GPU's combination where `ci/sim` laid it out; otherwise they print why
//! they were not registered. CPU benchmarks also use the fixture
//! toolkits when `ci/fetch-toolkits` has built them, against Debian's 535 driver.

#![allow(dead_code)]

#[path = "../../tests/common/mod.rs"]
pub mod common;

use stackbench::bench::client::Client;
use stackbench::bench::plan::Depth;
use stackbench::bench::protocol::{Command, Reply, Workload};
use stackbench::bench::{self, model::Verification, suite, BenchOptions};
use stackbench::check::{combination::Combination, Selection};
use stackbench::discover::{Host, Options};
use stackbench::schema::check::CombinationReport;
use std::path::PathBuf;
use std::time::Duration;

/// How long one worker command may take.
const TIMEOUT: Duration = Duration::from_secs(300);

/// Whether criterion was given `--quick` (`cargo bench --bench matmul -- --quick`): then the
/// GPU benchmarks also take one size each, the one `stackbench bench --quick` measures, and
/// shorter warm-ups and measurements, so that every configuration has a figure in minutes.
pub fn quick() -> bool {
    std::env::args().any(|arg| arg == "--quick")
}

/// The sizes to measure: all of `sizes`, or with [`quick`] only `standard`.
pub fn sizes(sizes: &[u64], standard: u64) -> Vec<u64> {
    match quick() {
        true => vec![standard],
        false => sizes.to_vec(),
    }
}

/// A GPU benchmark group's times: 3 s of measurement after criterion's warm-up, or with
/// [`quick`] 1 s after a 1 s warm-up and at most 20 samples.
pub fn gpu_times<M: criterion::measurement::Measurement>(
    group: &mut criterion::BenchmarkGroup<'_, M>,
) {
    match quick() {
        true => group
            .warm_up_time(Duration::from_secs(1))
            .measurement_time(Duration::from_secs(1))
            .sample_size(20),
        false => group.measurement_time(Duration::from_secs(3)),
    };
}

/// One combination and its worker.
pub struct Target {
    pub name: String,
    pub combination: Combination,
    pub client: Client,
    /// The architecture NVRTC compiles for (`sm_90`).
    pub arch: String,
    worker: PathBuf,
    /// Why its GPU benchmarks cannot run, when they cannot.
    pub no_gpu: Option<String>,
}

fn options(roots: Vec<PathBuf>, system: bool, driver_dir: Option<PathBuf>) -> BenchOptions {
    BenchOptions {
        selection: Selection {
            driver_dir,
            ..Selection::of(Options { roots, system })
        },
        depth: Depth::Full,
        timeout: TIMEOUT,
        worker: common::stackbench_bin(),
        repeat: 1,
        filter: Vec::new(),
        allow_busy: false,
        lock_clocks: false,
    }
}

/// Starts a worker per combination of `options`; says on stderr what could not start.
fn targets(label: &str, options: &BenchOptions, host: &Host) -> Vec<Target> {
    let scope = match bench::scope(options, host) {
        Ok(scope) => scope,
        Err(e) => {
            eprintln!("{label}: nothing registered here: {e}");
            return Vec::new();
        }
    };
    let settings = options.settings(&scope, 0);
    scope
        .selected
        .combinations
        .iter()
        .filter_map(|c| match suite::start(c, &settings) {
            Ok(client) => {
                let no_gpu = client
                    .setup
                    .iter()
                    .find(|r| r.id == "driver.devices")
                    .filter(|r| !r.status.satisfies())
                    .map(|r| r.reason.clone());
                Some(Target {
                    name: c.name.clone(),
                    combination: c.clone(),
                    client,
                    arch: scope.arch.clone(),
                    worker: options.worker.clone(),
                    no_gpu,
                })
            }
            Err(e) => {
                eprintln!("{label}/{}: not registered: {e}", c.name);
                None
            }
        })
        .collect()
}

/// The host's combinations whose device came up, and the simulated GPU's where `ci/sim` laid
/// it out (its figures are the simulator's model, and its combination and report say so); for
/// the others, and for a host without a GPU, a line saying why `bench` registers nothing.
pub fn gpu_targets(bench: &str) -> Vec<Target> {
    let options = options(Vec::new(), true, None);
    let gpu = stackbench::gpu::detect(&options.worker, &options.selection.trust);
    let mut all = Vec::new();
    if gpu.devices.is_empty() {
        eprintln!(
            "{bench}: GPU benchmarks not registered: no GPU ({}); the CPU-side ones are in \
             `cargo bench --bench toolkits`",
            gpu.note.as_deref().unwrap_or("NVML lists no device")
        );
    } else {
        all.extend(targets(bench, &options, &Host::current()));
    }
    match common::laid_out_simulator() {
        Some(sim) => {
            let simulated = self::options(vec![sim.toolkit_dir], false, Some(sim.driver_dir));
            all.extend(targets(bench, &simulated, &Host::default()));
        }
        // On a GPU host the simulator is nothing a user misses.
        None if gpu.devices.is_empty() => {
            eprintln!("{bench}: no simulated GPU here either (ci/sim lays it out)")
        }
        None => {}
    }
    all.into_iter()
        .filter(|t| match &t.no_gpu {
            None => true,
            Some(why) => {
                eprintln!("{bench}/{}: not registered: {why}", t.name);
                false
            }
        })
        .collect()
}

/// The combinations found below `roots` (no host scan), with `driver_dir`'s driver.
pub fn targets_below(bench: &str, roots: Vec<PathBuf>, driver_dir: PathBuf) -> Vec<Target> {
    targets(
        bench,
        &options(roots, false, Some(driver_dir)),
        &Host::default(),
    )
}

/// Every combination for CPU-side benchmarks: the fixture toolkits' (when built) and the host's.
pub fn cpu_targets(bench: &str) -> Vec<Target> {
    let mut all = Vec::new();
    if common::toolkits_location().join(".complete").is_file() {
        all.extend(targets_below(
            bench,
            vec![common::toolkits()],
            common::fixture(common::DRIVER_AMD64),
        ));
    } else {
        eprintln!("{bench}: no fixture toolkits here (ci/fetch-toolkits builds them)");
    }
    // The host's scan can find the fixtures too (a checkout below /home or /opt): a combination
    // is registered once, under criterion's rule that ids are unique.
    for target in targets(bench, &options(Vec::new(), true, None), &Host::current()) {
        match all.iter().any(|t| t.name == target.name) {
            true => eprintln!(
                "{bench}/{}: registered once, from the fixtures",
                target.name
            ),
            false => all.push(target),
        }
    }
    all
}

/// Prepares `workload` in the worker and verifies its output; why not, when it cannot be timed
/// (among them, a workload beyond what the simulated GPU runs).
pub fn prepare(client: &mut Client, workload: &Workload) -> Result<Option<Verification>, String> {
    let simulated = CombinationReport::ran_simulated(&client.setup);
    if let Some(why) = suite::beyond_the_simulator(simulated, workload) {
        return Err(why);
    }
    match client.ask(
        &Command::Prepare {
            workload: workload.clone(),
        },
        TIMEOUT,
    )? {
        Reply::Prepared {
            verification: Some(v),
        } if !v.passed => Err(format!(
            "output differs from the CPU's: relative error {:.2e} beyond {:.0e}",
            v.max_relative_error, v.tolerance
        )),
        Reply::Prepared { verification } => Ok(verification),
        Reply::Failed { reason } => Err(reason),
        other => Err(format!("unexpected answer {other:?}")),
    }
}

/// The time of `iterations` runs of the prepared `workload`, for `iter_custom`. A worker that
/// dies mid-benchmark ends the benchmark run with the reason.
pub fn time(client: &mut Client, workload: &Workload, iterations: u64) -> Duration {
    let command = Command::Time {
        workload: workload.clone(),
        iterations,
    };
    match client.ask(&command, TIMEOUT) {
        Ok(Reply::Timed { time_ns }) => Duration::from_secs_f64(time_ns / 1e9),
        Ok(Reply::Failed { reason }) => panic!("timing failed: {reason}"),
        Ok(other) => panic!("unexpected answer {other:?}"),
        Err(why) => panic!("{why}"),
    }
}

/// The targets whose libraries all load, for the `load` benchmark; a line on stderr for each
/// of the others, with why (a venv whose cudart cannot find a dependency is a host's, not a
/// reason to end the benchmark run).
pub fn loadable(bench: &str, targets: Vec<Target>) -> Vec<Target> {
    targets
        .into_iter()
        .filter(|t| match load_once(t) {
            Ok(_) => true,
            Err(why) => {
                eprintln!("{bench}/{}: not registered: {why}", t.name);
                false
            }
        })
        .collect()
}

/// One fresh worker's time to open every library of the target's combination, or why they did
/// not all open.
pub fn load_once(target: &Target) -> Result<Duration, String> {
    let settings = suite::Settings {
        depth: Depth::Full,
        arch: &target.arch,
        device: 0,
        cpu_side: true,
        keyed: false,
        filter: &[],
        worker: &target.worker,
        timeout: TIMEOUT,
    };
    suite::load_once(&target.combination, &settings).map(|ns| Duration::from_secs_f64(ns / 1e9))
}
