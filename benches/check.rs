//! `check` end to end. Target: a whole `check` under 30 s per combination on a GPU host.
//!
//! - `check/fixtures`: every fixture combination against Debian's 535 driver for `--target
//!   sm_90`, as CI runs it (no GPU: loading, versions, NVRTC compilation, coverage); where the
//!   fixtures are not built (a GPU host the binaries were copied to), it says so;
//! - `check/host`: every combination of this host, on its GPU; registered only where NVML sees
//!   one, since without a GPU it measures nothing the fixture run does not.
//!
//! - `check/simulated_node/1` and `/8`: the simulated GPU's combination on an HGX-like node of
//!   one GPU and of eight (where `ci/sim` has laid the simulator out): eight GPUs are checked at
//!   once, but the node probe's copy matrices grow with the pairs (56 ordered pairs, 4 copies
//!   each). Target: 8 GPUs at most twice the time of one.
//!
//! Each prints the slowest combination's own time beside criterion's figure for the whole run.

#[path = "../tests/common/mod.rs"]
mod common;

use common::{fixture, toolkits, toolkits_location, DRIVER_AMD64};
use criterion::{criterion_group, criterion_main, Criterion};
use stackbench::check::{self, CheckOptions, Selection};
use stackbench::compat::ComputeCapability;
use stackbench::discover::{Host, Options};
use std::path::PathBuf;
use std::time::Duration;

fn options(roots: Vec<PathBuf>, system: bool) -> CheckOptions {
    CheckOptions {
        selection: Selection::of(Options { roots, system }),
        timeout: Duration::from_secs(120),
        worker: common::stackbench_bin(),
    }
}

/// Runs `check` once and reports its slowest combination.
fn slowest(options: &CheckOptions, host: &Host) -> f64 {
    let report = check::check(options, host).expect("check runs");
    report
        .combinations
        .iter()
        .map(|c| c.duration_ms)
        .fold(0.0, f64::max)
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("check");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(20));

    if toolkits_location().join(".complete").is_file() {
        let mut fixtures = options(vec![toolkits()], false);
        fixtures.selection.driver_dir = Some(fixture(DRIVER_AMD64));
        fixtures.selection.target = Some(ComputeCapability::new(9, 0));
        eprintln!(
            "check/fixtures: slowest combination {:.0} ms",
            slowest(&fixtures, &Host::default())
        );
        group.bench_function("fixtures", |b| {
            b.iter(|| check::check(&fixtures, &Host::default()))
        });
    } else {
        eprintln!("check/fixtures: no fixture toolkits here (ci/fetch-toolkits builds them)");
    }

    if let Some(sim) = common::laid_out_simulator() {
        let dir = tempfile::tempdir().expect("temporary directory");
        for gpus in [1, 8] {
            let profile = dir.path().join(format!("node{gpus}.toml"));
            let numa: Vec<String> = (0..gpus).map(|i| (2 * i / gpus).to_string()).collect();
            std::fs::write(
                &profile,
                format!(
                    "[[device]]\nname = \"H100-like\"\n[node]\ngpus = {gpus}\nnvswitch = true\n\
                     pcie_gbs = 55.0\nnuma_node = [{}]\n",
                    numa.join(", ")
                ),
            )
            .expect("write the profile");
            let mut node = options(vec![sim.toolkit_dir.clone()], false);
            node.selection.driver_dir = Some(sim.driver_dir.clone());
            // The workers inherit the profile; nothing else in this process reads it.
            std::env::set_var("STACKBENCH_SIM_PROFILE", &profile);
            group.bench_function(format!("simulated_node/{gpus}"), |b| {
                b.iter(|| check::check(&node, &Host::default()))
            });
        }
        std::env::remove_var("STACKBENCH_SIM_PROFILE");
    } else {
        eprintln!("check/simulated_node: the simulator is not laid out (run ci/sim)");
    }

    if !stackbench::gpu::detect(
        &common::stackbench_bin(),
        &stackbench::trust::Policy::strict(),
    )
    .devices
    .is_empty()
    {
        let host = options(Vec::new(), true);
        eprintln!(
            "check/host: slowest combination {:.0} ms",
            slowest(&host, &Host::current())
        );
        group.bench_function("host", |b| b.iter(|| check::check(&host, &Host::current())));
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
