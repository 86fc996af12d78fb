//! The reference the project ships: the real GPU runs committed under `results/` (each GPU
//! visit's standard `bench --quick --repeat 5`, every visit on another boot), embedded when
//! stackbench is built. Where a host has no history of its own, a benchmark's variation between
//! runs is learned from these runs of the same GPU model and benchmark kind across their boots,
//! with the same nested model as history ([`super::floor`]), and the files it came from are
//! cited; the stated default only where they hold too little.

use super::stats::{Floor, FloorSource};
use crate::bench::model::{BenchReport, BenchResult, Status};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

include!(concat!(env!("OUT_DIR"), "/reference_runs.rs"));

/// One committed run: its file under `results/`, and what it holds.
pub struct ReferenceRun {
    pub file: String,
    pub run: BenchReport,
}

/// The committed runs that are real bench runs (simulated ones, and files that do not read as
/// bench runs, are not evidence of a GPU).
pub fn committed() -> &'static [ReferenceRun] {
    static RUNS: OnceLock<Vec<ReferenceRun>> = OnceLock::new();
    RUNS.get_or_init(|| {
        REFERENCE_RUNS
            .iter()
            .filter_map(|(file, text)| {
                let run: BenchReport = serde_json::from_str(text).ok()?;
                (run.schema.starts_with("stackbench.bench/") && !run.simulated).then(|| {
                    ReferenceRun {
                        file: format!("results/{file}"),
                        run,
                    }
                })
            })
            .collect()
    })
}

/// A benchmark's kind: its id without its combination (`copy/driver/1073741824/batch`), so that
/// the same measurement of another combination or host compares.
pub fn kind(result: &BenchResult) -> String {
    let combination = format!("/{}/", result.combination);
    result.id.replacen(&combination, "/", 1)
}

/// The GPU model `result` ran on in `run`, by name.
pub fn gpu_model<'a>(run: &'a BenchReport, result: &BenchResult) -> Option<&'a str> {
    let index = result.device_index() as usize;
    run.gpu.devices.get(index).map(|d| d.name.as_str())
}

/// The floor of `result`'s kind on its GPU model, learned from `runs` across their boots, for a
/// comparison of `compared` (whose own runs, if committed, are left out, as history leaves them
/// out): `None` when fewer than two boots of the model measured the kind, or too few runs.
pub fn floor(
    runs: &[ReferenceRun],
    result: &BenchResult,
    model: &str,
    compared: &[&BenchReport],
) -> Option<Floor> {
    let wanted = kind(result);
    let mut groups: BTreeMap<String, Vec<Vec<f64>>> = BTreeMap::new();
    let mut boots: BTreeSet<&str> = BTreeSet::new();
    let mut cited: BTreeSet<&str> = BTreeSet::new();
    for ReferenceRun { file, run } in runs {
        if compared.iter().any(|c| super::floor::same_run(run, c)) {
            continue;
        }
        for other in &run.benchmarks {
            if other.status != Status::Measured
                || kind(other) != wanted
                || gpu_model(run, other) != Some(model)
            {
                continue;
            }
            let logs = super::floor::log_medians(other);
            if logs.is_empty() {
                continue;
            }
            // Runs of one combination on one stack are compared with each other only: a driver
            // or library change between them is a factor, never noise.
            let stack = run
                .combinations
                .iter()
                .find(|c| c.name == other.combination)
                .map(|c| (c.library_versions(), &c.driver_cuda_version));
            let group = format!(
                "{:?}",
                (
                    &other.combination,
                    &run.gpu.driver_version,
                    stack,
                    &run.clocks_locked
                )
            );
            groups.entry(group).or_default().push(logs);
            boots.insert(run.host.boot_id.as_deref().unwrap_or(&run.started));
            cited.insert(file);
        }
    }
    if boots.len() < 2 {
        return None;
    }
    let groups: Vec<Vec<Vec<f64>>> = groups.into_values().collect();
    let learned = super::floor::learned(&groups)?;
    Some(Floor {
        source: FloorSource::Reference,
        boots: boots.len(),
        cited: cited.into_iter().map(str::to_owned).collect(),
        ..learned
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::model::Side;

    /// A GPU run on boot `boot` of `model`, its one benchmark's repetitions at `medians`.
    fn run(boot: &str, minute: u32, model: &str, medians: [f64; 3]) -> ReferenceRun {
        let mut run = BenchReport::of_repetitions(
            &format!("2026-01-01T00:{minute:02}:00Z"),
            Side::Gpu,
            &medians,
        );
        run.host.boot_id = Some(boot.into());
        run.gpu.devices = vec![serde_json::from_value(serde_json::json!({
            "index": 0, "name": model, "compute_capability": "9.0"
        }))
        .unwrap()];
        ReferenceRun {
            file: format!("results/bench-{boot}.json"),
            run,
        }
    }

    #[test]
    fn boots_of_one_model_teach_the_floor_and_are_cited() {
        let h100 = "NVIDIA H100 80GB HBM3";
        // Three boots whose run means lie within 0.2% of each other, repetitions within 0.1%.
        let runs = [
            run("a", 1, h100, [100.0, 100.1, 99.9]),
            run("b", 2, h100, [100.2, 100.3, 100.1]),
            run("c", 3, h100, [99.9, 100.0, 99.8]),
        ];
        let probe = run("d", 9, h100, [100.0, 100.0, 100.0]).run;
        let result = &probe.benchmarks[0];
        let floor = floor(&runs, result, h100, &[&probe]).unwrap();
        assert_eq!(floor.source, FloorSource::Reference);
        assert_eq!((floor.runs, floor.boots), (3, 3));
        assert_eq!(
            floor.cited,
            [
                "results/bench-a.json",
                "results/bench-b.json",
                "results/bench-c.json"
            ]
        );
        assert!(
            floor.between_runs > 0.0005 && floor.between_runs < 0.01,
            "{floor:?}"
        );
        // Another model's runs say nothing of this one; one boot says nothing of reboots.
        assert!(super::floor(&runs, result, "NVIDIA A100-SXM4-80GB", &[&probe]).is_none());
        let one_boot = [
            run("a", 1, h100, [100.0, 100.1, 99.9]),
            run("a", 2, h100, [100.2, 100.3, 100.1]),
            run("a", 3, h100, [99.9, 100.0, 99.8]),
        ];
        assert!(super::floor(&one_boot, result, h100, &[&probe]).is_none());
        // A compared run that is itself committed is no evidence for its own comparison.
        let compared = &runs[0].run;
        let without = super::floor(&runs, result, h100, &[compared]);
        assert!(without.is_none(), "two runs left, too few: {without:?}");
    }

    #[test]
    fn a_kind_is_its_id_without_the_combination() {
        let probe = run("d", 9, "x", [1.0, 1.0, 1.0]).run;
        let mut result = probe.benchmarks[0].clone();
        result.id = "copy/pip:torch/driver/1073741824/batch".into();
        result.combination = "pip:torch".into();
        assert_eq!(kind(&result), "copy/driver/1073741824/batch");
    }
}
