//! The reference the project ships: the real GPU runs committed under `results/` (each GPU
//! visit's standard `bench --quick --repeat 5`, every visit on another boot), embedded when
//! stackbench is built. Where a host has no history of its own, a benchmark's variation between
//! runs is learned from these runs of the same GPU model, driver and clock state across their
//! boots, each boot one replicate ([`floor`]), with the same nested model as history
//! ([`super::floor`]), and the files it came from are cited; the stated default only where
//! they hold too little.

use super::stats::{mean, Floor, FloorSource};
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

/// The stack a row measured on, as far as a reference floor is concerned: the driver and the
/// clock state (`locked at SM 1755 MHz on GPU 0`, `not locked`), and the versions of the
/// libraries its kind rests on in its combination ([`BenchResult::rests_on`]). The other
/// libraries of a combination do not move the row; a combination is a fixed factor within a
/// boot, centred away ([`floor`]).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Stack {
    /// `driver 580.95.05, clocks not locked`.
    base: String,
    /// `cublas 13.1.0, cublasLt 13.1.0`; empty for a row that rests on the driver alone.
    libraries: String,
}

/// The stack `result` of `run` measured on.
fn stack(run: &BenchReport, result: &BenchResult) -> Stack {
    let base = format!(
        "driver {}, clocks {}",
        run.gpu.driver_version.as_deref().unwrap_or("unknown"),
        crate::bench::clocks::setting(&run.clocks_locked)
    );
    let rests_on = result.rests_on();
    let libraries = (run.combinations.iter())
        .find(|c| c.name == result.combination)
        .map(|c| {
            let versions: Vec<String> = (c.libraries.iter())
                .filter(|l| rests_on.contains(&l.component.as_str()))
                .map(|l| format!("{} {}", l.component, l.version.as_deref().unwrap_or("?")))
                .collect();
            versions.join(", ")
        })
        .unwrap_or_default();
    Stack { base, libraries }
}

/// One reference group's runs, by boot, then combination: each as its repetitions' log medians.
type Boots = BTreeMap<String, BTreeMap<String, Vec<f64>>>;

/// A reference group: a benchmark kind on a stack.
type Group = (String, Stack);

/// A group's boots as replicates: the combinations measured on every one of its boots, each
/// centred on its own mean over those boots (its stack is a fixed factor), averaged repetition
/// by repetition into one run per boot. `None` when fewer than two boots remain.
fn per_boot(boots: &Boots) -> Option<Vec<Vec<f64>>> {
    let everywhere: Vec<&String> = boots
        .values()
        .next()?
        .keys()
        .filter(|c| boots.values().all(|b| b.contains_key(*c)))
        .collect();
    if boots.len() < 2 || everywhere.is_empty() {
        return None;
    }
    let centre: BTreeMap<&String, f64> = everywhere
        .iter()
        .map(|&c| {
            let means: Vec<f64> = boots.values().map(|b| mean(&b[c])).collect();
            (c, mean(&means))
        })
        .collect();
    Some(
        boots
            .values()
            .map(|boot| {
                let reps = everywhere.iter().map(|c| boot[*c].len()).min().unwrap_or(0);
                (0..reps)
                    .map(|i| {
                        let sum: f64 = everywhere.iter().map(|c| boot[*c][i] - centre[c]).sum();
                        sum / everywhere.len() as f64
                    })
                    .collect()
            })
            .collect(),
    )
}

/// The floor of `result`'s kind on its GPU model, learned from `runs` for a comparison of
/// `compared` (whose own runs, if committed, are left out, as history leaves them out).
///
/// Replicates are boots: the combinations of one boot share its card and its boot's state, so
/// their deviations move together; each boot counts once (its combinations centred and
/// averaged, [`per_boot`]), and the variation between boots has the boots' degrees of freedom.
/// Three committed boots leave two when one is compared, one degree of freedom per kind, so the
/// variation between boots is pooled over the kinds bound by the same resource (the copy and
/// the vector add, by the card's memory; the f32 matmuls, by its SMs' f32 pipes; the
/// tensor-core matmuls, by its tensor cores and power cap), each kind about its own mean;
/// the variation between repetitions is each combination's own, pooled the same way. A floor
/// applies only to the GPU model, driver, clock state and library versions it was learned on,
/// those a compared run measured the kind with (a driver or cuBLAS change is a factor, never
/// noise), and says so. `None` when the row's kind was not measured on two boots of that stack,
/// or the kinds hold too few boots.
pub fn floor(
    runs: &[ReferenceRun],
    result: &BenchResult,
    model: &str,
    compared: &[&BenchReport],
) -> Option<Floor> {
    let bound = result.bound()?;
    let wanted = kind(result);
    let of_bound = |run: &BenchReport, other: &BenchResult| {
        other.bound() == Some(bound) && gpu_model(run, other) == Some(model)
    };
    // Each kind of the bound on the stacks the compared runs measured it on.
    let measured: BTreeSet<Group> = compared
        .iter()
        .flat_map(|run| {
            (run.benchmarks.iter())
                .filter(|other| of_bound(run, other))
                .map(|other| (kind(other), stack(run, other)))
        })
        .collect();
    let mut groups: BTreeMap<Group, Boots> = BTreeMap::new();
    let mut cited: BTreeMap<Group, BTreeSet<&str>> = BTreeMap::new();
    for ReferenceRun { file, run } in runs {
        if compared.iter().any(|c| super::floor::same_run(run, c)) {
            continue;
        }
        let boot = run.host.boot_id.as_deref().unwrap_or(&run.started);
        for other in &run.benchmarks {
            if other.status != Status::Measured || !of_bound(run, other) {
                continue;
            }
            let group = (kind(other), stack(run, other));
            if !measured.contains(&group) {
                continue;
            }
            let logs = other.log_medians();
            if logs.is_empty() {
                continue;
            }
            (groups.entry(group.clone()).or_default())
                .entry(boot.to_owned())
                .or_default()
                .insert(other.combination.clone(), logs);
            cited.entry(group).or_default().insert(file);
        }
    }
    let own = groups.iter().find(|((k, _), _)| *k == wanted)?;
    let on = own.0 .1.clone();
    per_boot(own.1)?;
    let pooled: Vec<(&Group, Vec<Vec<f64>>)> = groups
        .iter()
        .filter(|((_, s), _)| s.base == on.base)
        .filter_map(|(group, boots)| Some((group, per_boot(boots)?)))
        .collect();
    let between_boots =
        super::floor::learned(&pooled.iter().map(|(_, b)| b.clone()).collect::<Vec<_>>())?;
    let runs_of_combinations: Vec<Vec<Vec<f64>>> = pooled
        .iter()
        .flat_map(|(group, _)| {
            let mut by_combination: BTreeMap<&String, Vec<Vec<f64>>> = BTreeMap::new();
            for combinations in groups[*group].values() {
                for (c, logs) in combinations {
                    by_combination.entry(c).or_default().push(logs.clone());
                }
            }
            by_combination.into_values()
        })
        .collect();
    let repetitions = super::floor::learned(&runs_of_combinations)?;
    let boots: BTreeSet<&String> = pooled
        .iter()
        .flat_map(|(group, _)| groups[*group].keys())
        .collect();
    let files: BTreeSet<&str> = pooled
        .iter()
        .flat_map(|(group, _)| cited[*group].iter().copied())
        .collect();
    Some(Floor {
        source: FloorSource::Reference,
        between_runs: between_boots.between_runs,
        between_repetitions: repetitions.between_repetitions,
        runs: files.len(),
        boots: boots.len(),
        cited: files.into_iter().map(str::to_owned).collect(),
        learned_on: Some(format!(
            "{model}, {}{}; the variation between boots of {} {} kind{} pooled, each on the \
             library versions the compared runs measured it with",
            on.base,
            if on.libraries.is_empty() {
                String::new()
            } else {
                format!(", {}", on.libraries)
            },
            pooled.len(),
            bound.name(),
            if pooled.len() == 1 { "" } else { "s" }
        )),
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
        run.benchmarks[0].benchmark = "copy".into();
        run.gpu.driver_version = Some("580.95.05".into());
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
        assert!(without.is_none(), "two boots left, too few: {without:?}");
        // Nor does another driver's: a floor applies to the stack it was learned on.
        let mut upgraded = probe.clone();
        upgraded.gpu.driver_version = Some("590.1".into());
        assert!(super::floor(&runs, result, h100, &[&upgraded]).is_none());
        // A host-side figure is the host's, not the card's.
        let mut load = result.clone();
        load.benchmark = "load".into();
        assert!(super::floor(&runs, &load, h100, &[&probe]).is_none());
    }

    #[test]
    fn the_combinations_of_one_boot_are_one_replicate() {
        let h100 = "NVIDIA H100 80GB HBM3";
        // Two boots, each with two combinations whose figures moved together with the boot.
        let boot = |name: &str, minute, at: f64| {
            let mut one = run(name, minute, h100, [at, at * 1.001, at * 0.999]);
            let mut other = one.run.benchmarks[0].clone();
            other.combination = "other".into();
            let combination = format!("/{}/", one.run.benchmarks[0].combination);
            other.id = other.id.replacen(&combination, "/other/", 1);
            one.run.benchmarks.push(other);
            let mut combination = one.run.combinations[0].clone();
            combination.name = "other".into();
            one.run.combinations.push(combination);
            one
        };
        let runs = [boot("a", 1, 100.0), boot("b", 2, 100.3)];
        let probe = run("d", 9, h100, [100.0, 100.0, 100.0]).run;
        // Four runs of a combination each, but two boots: one degree of freedom between boots,
        // too few; counted as four runs they were enough.
        let floor = floor(&runs, &probe.benchmarks[0], h100, &[&probe]);
        assert!(floor.is_none(), "{floor:?}");
        let third = boot("c", 3, 99.8);
        let runs = [boot("a", 1, 100.0), boot("b", 2, 100.3), third];
        let floor = super::floor(&runs, &probe.benchmarks[0], h100, &[&probe]).unwrap();
        assert_eq!((floor.runs, floor.boots), (3, 3), "{floor:?}");
    }

    /// `run`'s one benchmark made a cuBLAS f32 matmul (or left a copy), its combination
    /// holding cuBLAS and cuBLASLt `cublas` and NVRTC `nvrtc`.
    fn on_libraries(mut one: ReferenceRun, gemm: bool, cublas: &str, nvrtc: &str) -> ReferenceRun {
        use crate::bench::model::LibraryVersion;
        let library = |component: &str, version: &str| LibraryVersion {
            component: component.into(),
            path: format!("/lib/{component}.so").into(),
            version: Some(version.into()),
        };
        one.run.combinations[0].libraries = vec![
            library("cublas", cublas),
            library("cublasLt", cublas),
            library("nvrtc", nvrtc),
        ];
        if gemm {
            let row = &mut one.run.benchmarks[0];
            row.benchmark = "matmul".into();
            row.parameters.implementation = Some("cublas".into());
            row.parameters.precision = Some("f32".into());
        }
        one
    }

    #[test]
    fn a_floor_applies_to_the_library_versions_its_kind_rests_on() {
        let h100 = "NVIDIA H100 80GB HBM3";
        let committed = |gemm: bool| {
            [
                ("a", [100.0, 100.1, 99.9]),
                ("b", [100.2, 100.3, 100.1]),
                ("c", [99.9, 100.0, 99.8]),
            ]
            .into_iter()
            .enumerate()
            .map(|(i, (boot, medians))| {
                on_libraries(
                    run(boot, i as u32, h100, medians),
                    gemm,
                    "12.9.1.4",
                    "12.9.86",
                )
            })
            .collect::<Vec<_>>()
        };
        let probe = |gemm: bool, cublas: &str, nvrtc: &str| {
            on_libraries(run("d", 9, h100, [100.0; 3]), gemm, cublas, nvrtc).run
        };
        let floor_of = |runs: &[ReferenceRun], probe: &BenchReport| {
            super::floor(runs, &probe.benchmarks[0], h100, &[probe])
        };
        let gemms = committed(true);
        let same = floor_of(&gemms, &probe(true, "12.9.1.4", "13.0.88")).expect("a floor");
        let learned_on = same.learned_on.unwrap_or_default();
        assert!(
            learned_on.contains("cublas 12.9.1.4, cublasLt 12.9.1.4"),
            "{learned_on}"
        );
        // Another cuBLAS is another stack for a GEMM.
        assert_eq!(floor_of(&gemms, &probe(true, "13.1.0", "12.9.86")), None);
        // A copy rests on the driver alone: no library version changes its stack.
        let copies = committed(false);
        assert!(floor_of(&copies, &probe(false, "13.1.0", "13.0.88")).is_some());
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
