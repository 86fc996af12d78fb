//! The real GPU runs committed under `results/` (every visit's standard `bench --quick --repeat
//! 5`, each on another boot, often another card) as the evidence `compare` rests on: no two of
//! them, from one GPU model and stack, differ by a verdict; a run compared with itself is
//! neither slower nor "clocks differ"; and, each boot left out in turn (the compared run is no
//! evidence for its own floor), a change of the copy, the vector add (64 Mi elements and up)
//! and cuBLAS's f32 GEMM is called at the card's resolution, with no history on the host, from
//! floors learned from the other committed boots, each one cited: 1% on the copy and the vector
//! add, never `same`; 2% on cuBLAS's f32 GEMM, `slower`; 5% on all of them, `slower`. A run
//! of a GPU model with fewer than two other boots committed (the H200's first, 2026-11-29) has
//! no such evidence: its rows take the default floor, citing nothing.

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

/// The GPU model of a run: its devices' names.
fn model(run: &BenchReport) -> Vec<&str> {
    run.gpu.devices.iter().map(|d| d.name.as_str()).collect()
}

/// Whether two or more other boots of `run`'s GPU model are committed: the evidence of a
/// reference floor for it.
fn has_other_boots(run: &BenchReport, runs: &[(PathBuf, BenchReport)]) -> bool {
    let boots: std::collections::BTreeSet<Option<&str>> = runs
        .iter()
        .filter(|(_, other)| model(other) == model(run))
        .map(|(_, other)| other.host.boot_id.as_deref())
        .filter(|boot| *boot != run.host.boot_id.as_deref())
        .collect();
    boots.len() >= 2
}

/// A GPU model and its stack: driver, and each combination's library versions.
fn stack(run: &BenchReport) -> String {
    let gpus = model(run);
    let libraries: Vec<(String, Vec<String>)> = run
        .combinations
        .iter()
        .map(|c| (c.name.clone(), c.library_versions()))
        .collect();
    format!("{gpus:?} {:?} {libraries:?}", run.gpu.driver_version)
}

fn judge(old: &Path, new: &Path) -> CompareReport {
    let options = CompareOptions {
        threshold: None,
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

/// Each committed run whose GPU model has other boots committed (`with_evidence`), or has not,
/// against a copy of itself whose `rows` were made `factor` slower: the report, and the run's
/// own file as a reference floor would cite it.
fn slowed(
    factor: f64,
    rows: impl Fn(&str) -> bool,
    with_evidence: bool,
) -> Vec<(String, CompareReport)> {
    let dir = tempfile::tempdir().unwrap();
    let runs = committed();
    let picked: Vec<_> = (runs.iter())
        .filter(|(_, run)| has_other_boots(run, &runs) == with_evidence)
        .cloned()
        .collect();
    picked
        .into_iter()
        .map(|(path, run)| {
            let mut slower = run.clone();
            for result in &mut slower.benchmarks {
                if result.status == Status::Measured && rows(&result.id) {
                    result.samples_ns.iter_mut().for_each(|s| *s *= factor);
                }
            }
            let copy = dir.path().join(path.file_name().unwrap());
            std::fs::write(&copy, serde_json::to_vec(&slower).unwrap()).unwrap();
            let own = format!("results/{}", path.file_name().unwrap().to_string_lossy());
            (own, judge(&path, &copy))
        })
        .collect()
}

/// The rows of `report` that `rows` picks and were judged, after checking that each took a
/// reference floor from other boots than its own run's, and its threshold from that floor.
fn judged<'a>(
    own: &str,
    report: &'a CompareReport,
    rows: impl Fn(&str) -> bool,
) -> Vec<&'a stackbench::compare::model::BenchmarkRow> {
    let picked: Vec<_> = (report.benchmarks.iter())
        .filter(|row| rows(&row.id) && row.verdict.is_some())
        .collect();
    for row in &picked {
        let floor = row.floor.as_ref().expect("a floor");
        assert_eq!(
            floor.source,
            FloorSource::Reference,
            "{}: {floor:?}",
            row.id
        );
        assert!(floor.boots >= 2 && !floor.cited.is_empty(), "{floor:?}");
        assert!(
            !floor.cited.iter().any(|c| c == own),
            "{own} is no evidence for itself: {floor:?}"
        );
        assert!(floor.learned_on.is_some(), "{floor:?}");
        let threshold = row.threshold.expect("a threshold from the evidence");
        assert!(threshold >= 0.005, "{}: {threshold}", row.id);
    }
    picked
}

/// The copy and the vector add of 64 Mi elements and up: the memory-bound rows.
fn memory(id: &str) -> bool {
    headline(id) && !id.starts_with("matmul/")
}

/// cuBLAS's f32 GEMM.
fn sgemm(id: &str) -> bool {
    id.starts_with("matmul/") && id.contains("/cublas/f32/")
}

#[test]
fn a_one_percent_slowdown_of_the_copy_and_the_vector_add_is_called_never_same() {
    for (own, report) in slowed(1.01, memory, true) {
        let rows = judged(&own, &report, memory);
        assert_eq!(
            rows.len(),
            4,
            "{own}: copy and vector add, two combinations"
        );
        for row in rows {
            assert!(
                matches!(
                    row.verdict,
                    Some(Verdict::Slower | Verdict::SlowerBelowThreshold)
                ),
                "{own} {}: {row:?}",
                row.id
            );
        }
    }
}

#[test]
fn a_two_percent_slowdown_of_cublas_f32_is_slower() {
    for (own, report) in slowed(1.02, sgemm, true) {
        let rows = judged(&own, &report, sgemm);
        assert_eq!(rows.len(), 2, "{own}: two combinations");
        for row in rows {
            assert_eq!(
                row.verdict,
                Some(Verdict::Slower),
                "{own} {}: {row:?}",
                row.id
            );
        }
    }
}

#[test]
fn a_five_percent_slowdown_of_the_headline_rows_is_slower_from_cited_real_floors() {
    for (own, report) in slowed(1.05, headline, true) {
        let rows = judged(&own, &report, headline);
        assert!(rows.len() >= 6, "{own}: {} headline rows", rows.len());
        for row in rows {
            assert_eq!(row.verdict, Some(Verdict::Slower), "{}: {row:?}", row.id);
            let sees = row.could_see.expect("could see");
            assert!(
                sees < 0.05,
                "{}: could see ±{:.1}% only",
                row.id,
                100.0 * sees
            );
        }
        for row in report.benchmarks.iter().filter(|r| !headline(&r.id)) {
            assert_ne!(row.verdict, Some(Verdict::Slower), "{}: {row:?}", row.id);
        }
    }
}

#[test]
fn a_gpu_model_first_committed_once_takes_the_default_floor_citing_nothing() {
    let lone = slowed(1.05, headline, false);
    assert!(!lone.is_empty(), "a GPU model committed once (the H200)");
    for (own, report) in lone {
        let rows: Vec<_> = (report.benchmarks.iter())
            .filter(|row| headline(&row.id) && row.verdict.is_some())
            .collect();
        assert!(rows.len() >= 6, "{own}: {} headline rows", rows.len());
        for row in rows {
            let floor = row.floor.as_ref().expect("a floor");
            assert_eq!(floor.source, FloorSource::Default, "{own} {}", row.id);
            assert!(floor.cited.is_empty(), "{own} {}: {floor:?}", row.id);
        }
    }
}

/// Where the table of what the committed runs show sits in doc/statistics.md.
const TABLE_START: &str =
    "<!-- table: tests/results_reference.rs, STACKBENCH_BLESS=1 writes it -->\n";
const TABLE_END: &str = "<!-- end of table -->\n";

/// The table doc/statistics.md shows of the committed runs of the GPU model with the most
/// boots, per benchmark kind of `pip:torch` (`toolkit:cuda-13.0`'s in brackets where it
/// differs): the spread of the boots' figures, and the floor, threshold and resolution that a
/// run of another card of that model with no history of its own gets from all of them (the
/// newest run, as another boot, against itself).
fn reference_table() -> String {
    let all = committed();
    let most = (all.iter())
        .max_by_key(|(_, run)| all.iter().filter(|(_, r)| model(r) == model(run)).count())
        .map(|(_, run)| model(run))
        .unwrap();
    let runs: Vec<_> = (all.iter()).filter(|(_, run)| model(run) == most).collect();
    let dir = tempfile::tempdir().unwrap();
    let (_, newest) = runs.iter().max_by_key(|(_, r)| r.started.clone()).unwrap();
    let mut fourth = newest.clone();
    fourth.started = "2099-01-01T00:00:00Z".into();
    fourth.host.boot_id = Some("a-fourth-boot".into());
    let path = dir.path().join("fourth.json");
    std::fs::write(&path, serde_json::to_vec(&fourth).unwrap()).unwrap();
    let report = judge(&path, &path);
    let figure = |run: &BenchReport, id: &str| {
        let result = run.benchmarks.iter().find(|b| b.id == id)?;
        let logs: Vec<f64> = result.repetition_medians().iter().map(|m| m.ln()).collect();
        (!logs.is_empty()).then(|| (logs.iter().sum::<f64>() / logs.len() as f64).exp())
    };
    let spread = |id: &str| {
        let mut figures: Vec<f64> = runs.iter().filter_map(|(_, r)| figure(r, id)).collect();
        figures.sort_by(f64::total_cmp);
        let median = figures[figures.len() / 2];
        100.0 * (figures[figures.len() - 1] - figures[0]) / median
    };
    let row_of = |id: &str| report.benchmarks.iter().find(|b| b.id == id);
    let pct = |x: f64| format!("{:.2}%", 100.0 * x);
    let pair = |a: String, b: String| if a == b { a } else { format!("{a} ({b})") };
    let mut table = String::from(
        "| kind | spread across boots | floor between boots | between repetitions | threshold | \
         sees |\n| --- | --- | --- | --- | --- | --- |\n",
    );
    for torch in report.benchmarks.iter().filter(|b| {
        b.combination == "pip:torch"
            && b.floor
                .as_ref()
                .is_some_and(|f| f.source == FloorSource::Reference)
    }) {
        let toolkit_id = torch.id.replacen("/pip:torch/", "/toolkit:cuda-13.0/", 1);
        let toolkit = row_of(&toolkit_id).unwrap_or(torch);
        let cell = |f: &dyn Fn(&stackbench::compare::model::BenchmarkRow) -> String| {
            pair(f(torch), f(toolkit))
        };
        let floor = |r: &stackbench::compare::model::BenchmarkRow| r.floor.clone().unwrap();
        table.push_str(&format!(
            "| `{}` | {} | {} | {} | {} | {} |\n",
            torch.id.replacen("/pip:torch/", "/", 1),
            pair(
                format!("{:.2}%", spread(&torch.id)),
                format!("{:.2}%", spread(&toolkit_id))
            ),
            cell(&|r| pct(floor(r).between_runs)),
            cell(&|r| pct(floor(r).between_repetitions)),
            cell(&|r| format!("±{:.1}%", 100.0 * r.threshold.unwrap())),
            cell(&|r| format!("±{:.1}%", 100.0 * r.could_see.unwrap())),
        ));
    }
    table
}

#[test]
fn the_table_of_the_committed_runs_in_doc_statistics_is_what_they_give() {
    let doc = Path::new(env!("CARGO_MANIFEST_DIR")).join("doc/statistics.md");
    let text = std::fs::read_to_string(&doc).unwrap();
    let start = text.find(TABLE_START).expect("the table's start marker") + TABLE_START.len();
    let end = start
        + text[start..]
            .find(TABLE_END)
            .expect("the table's end marker");
    let table = reference_table();
    if std::env::var_os("STACKBENCH_BLESS").is_some() {
        std::fs::write(&doc, format!("{}{table}{}", &text[..start], &text[end..])).unwrap();
    } else {
        assert_eq!(
            text[start..end],
            table,
            "doc/statistics.md's table is not what the committed runs give: \
             STACKBENCH_BLESS=1 cargo test --test results_reference writes it"
        );
    }
}
