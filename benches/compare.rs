//! `compare` of two runs of the full suite with 5 repetitions each (target: under 1 s), from
//! synthetic result files: one combination's 62 rows (the 59 GPU rows of the full suite, two
//! compile rows and the load row), each repetition 1024 kept samples, as `bench` keeps at most.
//! Beside it, one row's two-level bootstrap alone: the cost that grows with rows and samples.

use criterion::{criterion_group, criterion_main, Criterion};
use stackbench::bench::model::{
    BenchReport, BenchResult, CombinationRun, Repetition, Side, Status,
};
use stackbench::bench::plan::{self, Depth};
use stackbench::compare::stats::{self, Floor};
use stackbench::compare::{self as comparing, CompareOptions, FailOn};
use stackbench::tags::{BENCH_SCHEMA, BENCH_SCHEMA_MINOR};
use std::path::Path;
use std::time::Duration;

/// Repetitions per run.
const REPETITIONS: usize = 5;
/// Kept samples per repetition: the most `bench` keeps.
const SAMPLES: usize = 1024;

/// `count` samples around `median`, spread by a deterministic 1% ripple.
fn samples(median: f64, count: usize, seed: usize) -> Vec<f64> {
    (0..count)
        .map(|i| {
            median * (1.0 + 0.01 * (((i * 7919 + seed * 104_729) % 1000) as f64 / 500.0 - 1.0))
        })
        .collect()
}

/// A full-suite run of one combination, every row `REPETITIONS` repetitions of `SAMPLES`,
/// `factor` times as slow as the first.
fn run(started: &str, factor: f64) -> BenchReport {
    let combination = "pip:venv-cu12";
    let keys = plan::gpu(combination, Depth::Full, false)
        .into_iter()
        .chain(plan::compile(combination, "sm_90"))
        .map(|p| p.key)
        .chain([plan::load(combination)]);
    let benchmarks = keys
        .enumerate()
        .map(|(row, key)| {
            let mut all = Vec::with_capacity(REPETITIONS * SAMPLES);
            let mut repetitions = Vec::with_capacity(REPETITIONS);
            for r in 0..REPETITIONS {
                let median = factor * 1e6 * (1.0 + row as f64) * (1.0 + 0.004 * r as f64);
                let mine = samples(median, SAMPLES, row * REPETITIONS + r);
                repetitions.push(Repetition {
                    status: Status::Measured,
                    reason: None,
                    samples: mine.len(),
                    samples_taken: Some(mine.len() as u64),
                    median_ns: Some(median),
                    noise: Some(0.006),
                    stopped_by: None,
                });
                all.extend(mine);
            }
            BenchResult {
                summary: stackbench::bench::stats::summarize(&all),
                samples_ns: all,
                repetitions,
                ..BenchResult::from_key(key)
            }
        })
        .collect();
    BenchReport {
        schema: BENCH_SCHEMA.into(),
        schema_minor: BENCH_SCHEMA_MINOR,
        repeat: REPETITIONS as u32,
        started: started.into(),
        host: stackbench::model::HostInfo {
            hostname: "bench-host".into(),
            os: "linux".into(),
            arch: "x86_64".into(),
            stackbench_version: "0".into(),
            boot_id: None,
        },
        gpu: stackbench::gpu::GpuInfo::none("synthetic"),
        simulated: false,
        target: "sm_90".into(),
        driver_dir: None,
        quick: false,
        load_untrusted: false,
        allow_busy: false,
        clocks_locked: Vec::new(),
        combinations: vec![CombinationRun {
            name: combination.into(),
            ..CombinationRun::default()
        }],
        benchmarks,
        findings: Vec::new(),
        rerendered: None,
        job: None,
        run_id: None,
    }
}

fn write(dir: &Path, name: &str, report: &BenchReport) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_vec(report).expect("encode")).expect("write");
    path
}

fn compare(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let (old_run, new_run) = (
        run("2026-01-01T00:00:00Z", 1.0),
        run("2026-01-01T01:00:00Z", 1.03),
    );
    let old = write(dir.path(), "old.json", &old_run);
    let new = write(dir.path(), "new.json", &new_run);
    let options = CompareOptions {
        threshold: None,
        fail_on: vec![FailOn::Slower],
        allow_different_gpus: false,
        history: Some(dir.path().to_path_buf()),
    };
    let report = comparing::compare(&old, &new, &options).expect("compare");
    assert_eq!(report.benchmarks.len(), 62);
    let mut group = c.benchmark_group("compare");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(20));
    group.bench_function("full_suite_5_repetitions", |b| {
        b.iter(|| comparing::compare(&old, &new, &options).expect("compare"))
    });
    let row = |r: &BenchReport| {
        r.benchmarks[0]
            .repetition_samples()
            .expect("repetitions")
            .iter()
            .map(|s| s.to_vec())
            .collect::<Vec<Vec<f64>>>()
    };
    let (a, b) = (row(&old_run), row(&new_run));
    let (a, b): (Vec<&[f64]>, Vec<&[f64]>) = (
        a.iter().map(Vec::as_slice).collect(),
        b.iter().map(Vec::as_slice).collect(),
    );
    let floor = Floor::default_for(Side::Gpu);
    group.bench_function("one_row_bootstrap", |bench| {
        bench.iter(|| stats::estimate(&a, &b, &floor).expect("estimate"))
    });
    group.finish();
}

criterion_group!(benches, compare);
criterion_main!(benches);
