//! `bench --nodes`: NCCL's collectives across the nodes of a job, swept as nccl-tests sweeps
//! them. Every rank runs `check --nodes`' worker with a [`Sweep`]: once each collective is
//! verified bit for bit on every rank, every rank times it at each size of the sweep, the same
//! number of samples on all (a collective completes only when every rank calls it), and rank 0
//! takes each sample's slowest rank. Rank 0 makes of the job's results one bench run: a row
//! per collective and size, keyed by the job's shape (`2n16r`), with the checks the rows stand
//! on and what they found (`nccl_net_fallback`, ...), so that `compare` holds two jobs' runs
//! against each other as it holds two nodes'.

use super::collectives;
use super::model::{
    BenchReport, BenchResult, CombinationRun, JobRun, Key, LibraryVersion, Parameters, Side,
    StopReason, Verification, BITS,
};
use super::plan::Depth;
use super::{BenchError, BenchOptions};
use crate::cluster::{findings::RankNet, Sweep, SweepSize, WorldRequest};
use crate::discover::Host;
use crate::nccl::collective::{self, Collective};
use crate::schema::check::{CheckReport, CheckResult, CombinationReport, Status};
use crate::tags::{BENCH_SCHEMA, BENCH_SCHEMA_MINOR};
use serde::de::DeserializeOwned;

/// Samples of each size: nccl-tests takes one (of `-n` runs); ten give `compare` a spread.
const SAMPLES: u32 = 10;
/// With `--quick`.
const QUICK_SAMPLES: u32 = 5;

/// This process's rank of a `bench --nodes` job: the job's run on rank 0, this rank's view of
/// it on the others.
pub fn run(
    options: &BenchOptions,
    host: &Host,
    world: &WorldRequest,
) -> Result<BenchReport, BenchError> {
    let started = crate::timestamp::now();
    let sweep = sweep(options.depth);
    let world = WorldRequest {
        sweep: Some(sweep),
        ..world.clone()
    };
    let check = crate::check::CheckOptions {
        selection: options.selection.clone(),
        timeout: options.timeout,
        worker: options.worker.clone(),
    };
    let checked = crate::check::check_nodes(&check, host, &world)?;
    Ok(of_job(checked, sweep, options.depth, started))
}

/// The sweep of `depth`: the sizes of a node's NCCL benchmarks on a GPU (nccl-tests' `-f` 4
/// for the full suite, 64 for `--quick`), up to the largest size `check --nodes` verifies.
fn sweep(depth: Depth) -> Sweep {
    Sweep {
        step: depth.nccl_step(false),
        samples: match depth {
            Depth::Full => SAMPLES,
            Depth::Quick => QUICK_SAMPLES,
        },
    }
}

/// The bench run of a job from its `check --nodes` report (rank 0's: the job's).
fn of_job(checked: CheckReport, sweep: Sweep, depth: Depth, started: String) -> BenchReport {
    let combination = checked.combinations.first();
    let checks: Vec<CheckResult> = combination.map_or_else(Vec::new, |c| c.checks.clone());
    let hosts: Vec<String> = detail(&checks, "nccl.init", "hosts").unwrap_or_default();
    let said: Vec<RankNet> = detail(&checks, "nccl.transport", "ranks").unwrap_or_default();
    let devices = devices(&hosts, &said);
    let job = format!("{}n{}r", crate::cluster::node_count(&hosts), hosts.len());
    let name = combination.map_or_else(String::new, |c| c.name.clone());
    let sizes = collective::sizes(crate::nccl::largest(checked.simulated), sweep.step);
    let mut benchmarks = Vec::new();
    for c in Collective::ALL {
        let check = checks.iter().find(|r| r.id == format!("nccl.{}", c.id()));
        let swept: Vec<SweepSize> = check
            .and_then(|r| r.details.get("sweep"))
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_default();
        for &requested in &sizes {
            let shape = c.shape(requested, hosts.len());
            let key = Key {
                combination: name.clone(),
                benchmark: "nccl",
                side: Side::Gpu,
                parameters: Parameters {
                    size: Some(shape.bytes as u64),
                    implementation: Some(c.id().to_owned()),
                    job: Some(job.clone()),
                    ..Parameters::default()
                },
            };
            let samples = swept.iter().find(|s| s.bytes == shape.bytes);
            let mut result = row(key, check, samples, shape.recv * hosts.len());
            collectives::describe(&mut result, &devices, &hosts);
            benchmarks.push(result);
        }
    }
    let findings = (checked.node.as_ref()).map_or_else(Vec::new, |n| n.findings.clone());
    BenchReport {
        schema: BENCH_SCHEMA.to_owned(),
        schema_minor: BENCH_SCHEMA_MINOR,
        run_id: crate::run_id::new(),
        repeat: 1,
        started,
        host: checked.host,
        gpu: checked.gpu,
        simulated: checked.simulated,
        target: checked.target.unwrap_or_else(|| {
            let t = super::DEFAULT_TARGET;
            format!("sm_{}{}", t.major, t.minor)
        }),
        driver_dir: checked.driver_dir,
        quick: depth == Depth::Quick,
        load_untrusted: checked.load_untrusted,
        allow_busy: false,
        clocks_locked: Vec::new(),
        combinations: combination.map(combination_run).into_iter().collect(),
        benchmarks,
        findings: Vec::new(),
        rerendered: None,
        job: Some(JobRun {
            hosts,
            checks,
            findings,
        }),
    }
}

/// One collective's row at one size: measured from the job's `samples` when its check passed
/// (every rank's output verified bit for bit, `compared` elements in all), else failed or
/// skipped as the check was, with its reason.
fn row(
    key: Key,
    check: Option<&CheckResult>,
    samples: Option<&SweepSize>,
    compared: usize,
) -> BenchResult {
    let Some(check) = check else {
        return BenchResult::failed(key, "the job ran no check of this collective");
    };
    match (check.status, samples) {
        (Status::Skip, _) => BenchResult::skipped(key, check.reason.clone()),
        (status, _) if !status.satisfies() => BenchResult::failed(key, check.reason.clone()),
        (_, None) => BenchResult::failed(
            key,
            "verified, but rank 0 holds no samples of this size from every rank",
        ),
        (_, Some(samples)) => BenchResult {
            summary: super::stats::summarize(&samples.samples_ns),
            samples_taken: Some(samples.samples_ns.len() as u64),
            samples_ns: samples.samples_ns.clone(),
            stopped_by: Some(StopReason::SampleCount),
            verified: Some(Verification {
                passed: true,
                precision: BITS.to_owned(),
                max_relative_error: 0.0,
                tolerance: 0.0,
                compared,
            }),
            ..BenchResult::from_key(key)
        },
    }
}

/// Each rank's GPU, by rank: as the rank said in `nccl.transport`, else its place among its
/// node's ranks (the GPU a rank takes when none are selected).
fn devices(hosts: &[String], said: &[RankNet]) -> Vec<u32> {
    (hosts.iter().enumerate())
        .map(|(rank, host)| {
            let local = hosts[..rank].iter().filter(|h| *h == host).count() as u32;
            (said.iter())
                .find(|n| n.rank as usize == rank)
                .map_or(local, |n| n.device)
        })
        .collect()
}

/// The versions behind the job's figures: rank 0's combination.
fn combination_run(c: &CombinationReport) -> CombinationRun {
    let driver_cuda = detail::<String>(&c.checks, "driver.version", "driver_cuda");
    CombinationRun {
        name: c.name.clone(),
        cuda_version: c.cuda_version.clone(),
        driver: c.driver.as_ref().map(|d| d.path.clone()),
        driver_cuda_version: driver_cuda,
        libraries: (c.libraries.iter())
            .map(|l| LibraryVersion {
                component: l.component.clone(),
                path: (l.mapped.clone().or_else(|| l.resolved.clone())).unwrap_or_default(),
                version: l.version.clone(),
            })
            .collect(),
        simulated: c.simulated,
        ..CombinationRun::default()
    }
}

/// Detail `key` of check `id`, read as `T`.
fn detail<T: DeserializeOwned>(checks: &[CheckResult], id: &str, key: &str) -> Option<T> {
    let value = checks.iter().find(|r| r.id == id)?.details.get(key)?;
    serde_json::from_value(value.clone()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(id: &str, status: Status, details: serde_json::Value) -> CheckResult {
        serde_json::from_value(json!({
            "id": id, "library": "nccl", "status": status, "reason": format!("{id} said so"),
            "duration_ms": 1.0, "details": details
        }))
        .unwrap()
    }

    #[test]
    fn a_rank_s_gpu_is_what_it_said_else_its_place_on_its_node() {
        let hosts: Vec<String> = ["a", "a", "b", "b"].map(String::from).to_vec();
        let said = vec![RankNet {
            rank: 1,
            host: "a".into(),
            device: 5,
            network: None,
            verbs: None,
            net: Vec::new(),
            forced: None,
        }];
        assert_eq!(devices(&hosts, &said), [0, 5, 0, 1]);
    }

    #[test]
    fn rows_are_measured_from_the_job_s_samples_and_fail_or_skip_as_their_check_did() {
        let key = || Key {
            combination: "c".into(),
            benchmark: "nccl",
            side: Side::Gpu,
            parameters: Parameters {
                size: Some(1 << 20),
                implementation: Some("all_reduce".into()),
                job: Some("2n4r".into()),
                ..Parameters::default()
            },
        };
        let samples = SweepSize {
            bytes: 1 << 20,
            samples_ns: vec![30.0, 10.0, 20.0],
        };
        let passed = check("nccl.all_reduce", Status::Pass, json!({}));
        let measured = row(key(), Some(&passed), Some(&samples), 4);
        assert_eq!(measured.id, "nccl/c/all_reduce/1048576/2n4r");
        assert_eq!(measured.summary.unwrap().median_ns, 20.0);
        assert_eq!(measured.samples_taken, Some(3));
        assert!(measured.verified.unwrap().passed);
        let failed = check("nccl.all_reduce", Status::Fail, json!({}));
        let row_failed = row(key(), Some(&failed), Some(&samples), 4);
        assert_eq!(
            (row_failed.status, row_failed.reason.as_deref()),
            (
                super::super::model::Status::Failed,
                Some("nccl.all_reduce said so")
            )
        );
        assert!(row_failed.summary.is_none());
        let skipped = check("nccl.all_reduce", Status::Skip, json!({}));
        let row_skipped = row(key(), Some(&skipped), None, 4);
        assert_eq!(row_skipped.status, super::super::model::Status::Skipped);
        let unsampled = row(key(), Some(&passed), None, 4);
        assert_eq!(unsampled.status, super::super::model::Status::Failed);
    }
}
