//! The real GPU runs committed under `results/` (every visit's standard `bench --quick --repeat
//! 5`, each on another boot, often another card) as the evidence `compare` rests on: no two of
//! them, from one GPU model and stack, differ by a verdict; a run compared with itself is
//! neither slower nor "clocks differ"; and a 5% slowdown of the copy, the vector add (64 Mi
//! elements and up) and cuBLAS's f32 GEMM is called `slower` on each of those rows, with no
//! history on the host, from floors learned from the other committed runs, each one cited.

// Tests read the files they make and the checkout's own: std's readers are theirs (clippy.toml).
#![allow(clippy::disallowed_methods)]

use stackbench::bench::model::{BenchReport, Status};
use stackbench::compare::model::CompareReport;
use stackbench::compare::stats::{FloorSource, Verdict};
use stackbench::compare::{compare, CompareOptions, FailOn};
use std::path::{Path, PathBuf};

/// Every committed bench run of a real GPU, with its path.
fn committed() -> Vec<(PathBuf, BenchReport)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("results");
    let mut runs: Vec<(PathBuf, BenchReport)> = std::fs::read_dir(&dir)
        .expect("results/")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            name.starts_with("bench-") && name.ends_with(".json")
        })
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            let run: BenchReport =
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            (p, run)
        })
        .filter(|(_, run)| !run.simulated)
        .collect();
    runs.sort_by(|a, b| a.0.cmp(&b.0));
    runs
}

/// A GPU model and its stack: driver, and each combination's library versions.
fn stack(run: &BenchReport) -> String {
    let gpus: Vec<&str> = run.gpu.devices.iter().map(|d| d.name.as_str()).collect();
    let libraries: Vec<(String, Vec<String>)> = run
        .combinations
        .iter()
        .map(|c| (c.name.clone(), c.library_versions()))
        .collect();
    format!("{gpus:?} {:?} {libraries:?}", run.gpu.driver_version)
}

fn judge(old: &Path, new: &Path) -> CompareReport {
    let options = CompareOptions {
        threshold: 0.02,
        fail_on: vec![FailOn::Slower, FailOn::Failure],
        allow_different_gpus: false,
        history: None,
    };
    compare(old, new, &options)
        .unwrap_or_else(|e| panic!("{} {}: {e}", old.display(), new.display()))
}

/// Rows with a `slower` or `faster` verdict, as `id: verdict (ratio)`.
fn called(report: &CompareReport) -> Vec<String> {
    report
        .benchmarks
        .iter()
        .filter(|b| matches!(b.verdict, Some(Verdict::Slower | Verdict::Faster)))
        .map(|b| format!("{}: {:?} ({:?})", b.id, b.verdict, b.ratio))
        .collect()
}

#[test]
fn two_or_more_boots_of_one_gpu_model_and_stack_are_committed() {
    let runs = committed();
    let h100: Vec<&BenchReport> = runs
        .iter()
        .map(|(_, r)| r)
        .filter(|r| r.gpu.devices.iter().any(|d| d.name.contains("H100")))
        .collect();
    let boots: std::collections::BTreeSet<Option<&str>> =
        h100.iter().map(|r| r.host.boot_id.as_deref()).collect();
    assert!(boots.len() >= 2 && !boots.contains(&None), "{boots:?}");
}

#[test]
fn no_pair_of_committed_runs_of_one_stack_differs_by_a_verdict() {
    let runs = committed();
    let mut pairs = 0;
    for (i, (old_path, old)) in runs.iter().enumerate() {
        for (new_path, new) in &runs[i..] {
            if stack(old) != stack(new) {
                continue;
            }
            for (a, b) in [(old_path, new_path), (new_path, old_path)] {
                let report = judge(a, b);
                assert_eq!(
                    called(&report),
                    Vec::<String>::new(),
                    "{} against {}",
                    a.display(),
                    b.display()
                );
                if a == b {
                    let differ: Vec<&str> = (report.benchmarks.iter())
                        .filter(|r| r.clocks_differ)
                        .map(|r| r.id.as_str())
                        .collect();
                    assert!(
                        differ.is_empty(),
                        "a run against itself: clocks differ on {differ:?}"
                    );
                }
                pairs += 1;
            }
        }
    }
    assert!(pairs >= 6, "{pairs} comparisons");
}

/// The rows a GPU engineer's regression would show first: the copy, the vector add of 64 Mi
/// elements and up, and cuBLAS's f32 GEMM.
fn headline(id: &str) -> bool {
    let elements = |id: &str| {
        id.split('/')
            .filter_map(|part| part.parse::<u64>().ok())
            .next()
            .unwrap_or(0)
    };
    id.starts_with("copy/")
        || (id.starts_with("vector_add/") && elements(id) >= 64 << 20)
        || (id.starts_with("matmul/") && id.contains("/cublas/f32/"))
}

#[test]
fn a_five_percent_slowdown_of_the_headline_rows_is_slower_from_cited_real_floors() {
    let dir = tempfile::tempdir().unwrap();
    for (path, run) in committed() {
        let mut slower = run.clone();
        for result in &mut slower.benchmarks {
            if result.status == Status::Measured && headline(&result.id) {
                result.samples_ns.iter_mut().for_each(|s| *s *= 1.05);
            }
        }
        let copy = dir.path().join(path.file_name().unwrap());
        std::fs::write(&copy, serde_json::to_vec(&slower).unwrap()).unwrap();
        let report = judge(&path, &copy);
        let mut headlines = 0;
        for row in &report.benchmarks {
            if !headline(&row.id) || row.verdict.is_none() {
                assert_ne!(row.verdict, Some(Verdict::Slower), "{}: {row:?}", row.id);
                continue;
            }
            headlines += 1;
            assert_eq!(row.verdict, Some(Verdict::Slower), "{}: {row:?}", row.id);
            let floor = row.floor.as_ref().expect("a floor");
            assert_eq!(
                floor.source,
                FloorSource::Reference,
                "{}: {floor:?}",
                row.id
            );
            let own = format!("results/{}", path.file_name().unwrap().to_string_lossy());
            assert!(floor.boots >= 2 && !floor.cited.is_empty(), "{floor:?}");
            assert!(
                !floor.cited.contains(&own),
                "{own} is no evidence for itself: {floor:?}"
            );
            let sees = row.could_see.expect("could see");
            assert!(
                sees < 0.05,
                "{}: could see ±{:.1}% only",
                row.id,
                100.0 * sees
            );
        }
        assert!(
            headlines >= 6,
            "{}: {headlines} headline rows",
            path.display()
        );
    }
}
