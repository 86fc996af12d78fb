//! `bench --repeat N`: one combination's N runs (each in fresh worker processes) made into one
//! set of rows. Each row keeps every repetition apart (`repetitions`, their samples one after
//! another in `samples_ns`), so that `compare` can bootstrap repetitions and then samples; its
//! summary and rate are those of all the samples together.

use super::model::{BenchResult, CombinationRun, Peaks, Repetition, Status, StopReason, Telemetry};
use super::stats;
use std::collections::BTreeMap;

/// The median of `values`, `None` when there are none.
fn median_of(mut values: Vec<f64>) -> Option<f64> {
    (!values.is_empty()).then(|| crate::figures::median(&mut values))
}

/// One repetition's record of `result`.
fn repetition(result: &BenchResult) -> Repetition {
    Repetition {
        status: result.status,
        reason: result.reason.clone(),
        samples: result.samples_ns.len(),
        samples_taken: result.samples_taken,
        median_ns: result.summary.map(|s| s.median_ns),
        noise: result.summary.map(|s| s.noise),
        stopped_by: result.stopped_by,
    }
}

/// The ceilings of every repetition: each the median of the repetitions'.
fn peaks(runs: &[CombinationRun]) -> Peaks {
    let copy = median_of(runs.iter().filter_map(|r| r.peaks.copy_gbps).collect());
    let mut gemm: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for run in runs {
        for (precision, tflops) in &run.peaks.gemm_tflops {
            gemm.entry(precision.clone()).or_default().push(*tflops);
        }
    }
    Peaks {
        copy_gbps: copy,
        gemm_tflops: gemm
            .into_iter()
            .filter_map(|(p, v)| median_of(v).map(|m| (p, m)))
            .collect(),
    }
}

/// `pick` of both when both are there, else the one that is.
fn either<T>(a: Option<T>, b: Option<T>, pick: fn(T, T) -> T) -> Option<T> {
    match (a, b) {
        (Some(a), Some(b)) => Some(pick(a, b)),
        (a, b) => a.or(b),
    }
}

/// NVML's readings of every repetition together; throttled samples indexed into the pooled
/// samples.
fn telemetry(measured: &[&BenchResult]) -> Option<Telemetry> {
    let mut merged: Option<Telemetry> = None;
    let mut offset = 0;
    // Each repetition's mean clock, weighted by its samples.
    let (mut clock_sum, mut clock_weight) = (0.0, 0.0);
    for result in measured {
        if let Some(t) = &result.telemetry {
            if let Some(mean) = t.sm_clock_mhz_mean {
                let weight = result.samples_ns.len().max(1) as f64;
                clock_sum += mean * weight;
                clock_weight += weight;
            }
            let m = merged.get_or_insert_with(Telemetry::default);
            m.readings += t.readings;
            m.sm_clock_mhz_min = either(m.sm_clock_mhz_min, t.sm_clock_mhz_min, u32::min);
            m.sm_clock_mhz_max = either(m.sm_clock_mhz_max, t.sm_clock_mhz_max, u32::max);
            m.temperature_c_max = either(m.temperature_c_max, t.temperature_c_max, u32::max);
            m.power_w_max = either(m.power_w_max, t.power_w_max, f64::max);
            for reason in &t.throttle_reasons {
                if !m.throttle_reasons.contains(reason) {
                    m.throttle_reasons.push(reason.clone());
                }
            }
            m.throttled_samples
                .extend(t.throttled_samples.iter().map(|i| i + offset));
        }
        offset += result.samples_ns.len();
    }
    if let Some(m) = merged.as_mut() {
        m.sm_clock_mhz_mean = (clock_weight > 0.0).then(|| clock_sum / clock_weight);
    }
    merged
}

/// One row from its repetitions (in the order they ran): the pooled samples of the measured
/// ones, their summary and rate; the first repetition's record when none was measured.
fn row(repetitions: &[&BenchResult]) -> Option<BenchResult> {
    let first = *repetitions.first()?;
    let records: Vec<Repetition> = repetitions.iter().map(|r| repetition(r)).collect();
    let measured: Vec<&BenchResult> = repetitions
        .iter()
        .copied()
        .filter(|r| r.status == Status::Measured && !r.samples_ns.is_empty())
        .collect();
    let Some(base) = measured.first() else {
        // Nothing measured: the row is what the first repetition was, every sample gone.
        let mut row = first.clone();
        row.samples_ns.clear();
        row.repetitions = records
            .into_iter()
            .map(|r| Repetition { samples: 0, ..r })
            .collect();
        return Some(row);
    };
    let samples: Vec<f64> = measured
        .iter()
        .flat_map(|r| r.samples_ns.iter().copied())
        .collect();
    let summary = stats::summarize(&samples);
    // A rate is work over the median: the same work over the pooled median.
    let throughput = base.throughput.clone().and_then(|t| {
        let work = t.value * base.summary?.median_ns;
        let median = summary?.median_ns;
        (median > 0.0).then(|| super::model::Throughput {
            value: work / median,
            ..t
        })
    });
    let mut reasons: Vec<String> = Vec::new();
    for result in &measured {
        if let Some(reason) = &result.reason {
            if !reasons.contains(reason) {
                reasons.push(reason.clone());
            }
        }
    }
    for (at, result) in repetitions.iter().enumerate() {
        if result.status != Status::Measured {
            reasons.push(format!(
                "repetition {} of {} {}: {}",
                at + 1,
                repetitions.len(),
                result.status.name(),
                result.reason.as_deref().unwrap_or("no reason given")
            ));
        }
    }
    let samples_taken: Vec<u64> = measured.iter().filter_map(|r| r.samples_taken).collect();
    let stopped_by = if measured
        .iter()
        .any(|r| r.stopped_by == Some(StopReason::TimeLimit))
    {
        Some(StopReason::TimeLimit)
    } else {
        base.stopped_by
    };
    Some(BenchResult {
        reason: (!reasons.is_empty()).then(|| reasons.join("; ")),
        summary,
        samples_taken: (!samples_taken.is_empty()).then(|| samples_taken.iter().sum()),
        host_median_ns: median_of(measured.iter().filter_map(|r| r.host_median_ns).collect()),
        throughput,
        pct_of_peak: median_of(measured.iter().filter_map(|r| r.pct_of_peak).collect()),
        pct_of_spec: median_of(measured.iter().filter_map(|r| r.pct_of_spec).collect()),
        telemetry: telemetry(&measured),
        stopped_by,
        samples_ns: samples,
        repetitions: records
            .into_iter()
            .map(|r| {
                if r.status == Status::Measured {
                    r
                } else {
                    Repetition { samples: 0, ..r }
                }
            })
            .collect(),
        ..(*base).clone()
    })
}

/// One combination's repetitions (each a run of its whole suite on one GPU, in the order they
/// ran) as one run: the first repetition's versions, the median ceilings, and each benchmark's
/// row per GPU in the first repetition's order (then any only later ones had).
pub fn merge(
    runs: Vec<(CombinationRun, Vec<BenchResult>)>,
) -> Option<(CombinationRun, Vec<BenchResult>)> {
    let mut order: Vec<(String, Option<u32>)> = Vec::new();
    let mut by_key: BTreeMap<(String, Option<u32>), Vec<&BenchResult>> = BTreeMap::new();
    for (_, results) in &runs {
        for result in results {
            let key = (result.id.clone(), result.device.as_ref().map(|d| d.index));
            let entry = by_key.entry(key.clone()).or_default();
            if entry.is_empty() {
                order.push(key);
            }
            entry.push(result);
        }
    }
    let rows: Vec<BenchResult> = (order.iter())
        .filter_map(|key| row(by_key.get(key)?))
        .collect();
    let combinations: Vec<CombinationRun> = runs.iter().map(|(c, _)| c.clone()).collect();
    let mut combination = combinations.first()?.clone();
    combination.peaks = peaks(&combinations);
    combination.spec = combinations.iter().find_map(|c| c.spec.clone());
    Some((combination, rows))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::model::{Key, Parameters, Side, Throughput};

    fn key(id: &str) -> Key {
        Key {
            combination: "c".into(),
            benchmark: "load",
            side: Side::Cpu,
            parameters: Parameters {
                implementation: Some(id.into()),
                ..Parameters::default()
            },
        }
    }

    fn measured(id: &str, samples: &[f64], gbps: f64) -> BenchResult {
        BenchResult {
            samples_ns: samples.to_vec(),
            samples_taken: Some(samples.len() as u64),
            summary: stats::summarize(samples),
            throughput: Some(Throughput {
                value: gbps,
                unit: "GB/s".into(),
            }),
            stopped_by: Some(StopReason::Noise),
            ..BenchResult::from_key(key(id))
        }
    }

    fn run(results: Vec<BenchResult>) -> (CombinationRun, Vec<BenchResult>) {
        let combination = CombinationRun {
            name: "c".into(),
            ..CombinationRun::default()
        };
        (combination, results)
    }

    #[test]
    fn repetitions_are_kept_apart_and_pooled() {
        let (_, rows) = merge(vec![
            run(vec![measured("a", &[10.0, 12.0, 11.0], 1.1)]),
            run(vec![BenchResult::failed(key("a"), "hung")]),
            run(vec![measured("a", &[20.0, 22.0], 0.5)]),
        ])
        .unwrap();
        let [row] = rows.as_slice() else {
            panic!("one row: {rows:?}")
        };
        assert_eq!(row.status, Status::Measured);
        assert_eq!(row.samples_ns, [10.0, 12.0, 11.0, 20.0, 22.0]);
        let counts: Vec<usize> = row.repetitions.iter().map(|r| r.samples).collect();
        assert_eq!(counts, [3, 0, 2]);
        assert_eq!(row.repetitions[1].status, Status::Failed);
        assert_eq!(row.samples_taken, Some(5));
        assert_eq!(row.repetition_medians(), [11.0, 21.0]);
        let slices = row.repetition_samples().unwrap();
        assert_eq!(slices, [&[10.0, 12.0, 11.0][..], &[20.0, 22.0][..]]);
        // 1.1 GB/s at a median of 11 ns is the same work at the pooled median of 12 ns.
        let rate = row.throughput.as_ref().unwrap().value;
        assert!((rate - 1.1 * 11.0 / 12.0).abs() < 1e-12, "{rate}");
        assert!(row
            .reason
            .as_deref()
            .unwrap()
            .contains("repetition 2 of 3 failed: hung"));
    }

    #[test]
    fn each_gpu_s_repetitions_make_a_row_of_their_own() {
        let on = |index: u32, samples: &[f64]| BenchResult {
            device: Some(crate::devices::DeviceKey {
                index,
                uuid: None,
                pci_bus_id: None,
            }),
            ..measured("a", samples, 1.0)
        };
        // Two repetitions, each a pass over GPU 0 and a pass over GPU 1.
        let (_, rows) = merge(vec![
            run(vec![on(0, &[10.0, 10.0])]),
            run(vec![on(1, &[20.0, 20.0])]),
            run(vec![on(0, &[11.0, 11.0])]),
            run(vec![on(1, &[21.0, 21.0])]),
        ])
        .unwrap();
        let got: Vec<(u32, Vec<f64>)> = rows
            .iter()
            .map(|r| (r.device_index(), r.repetition_medians()))
            .collect();
        assert_eq!(got, [(0, vec![10.0, 11.0]), (1, vec![20.0, 21.0])]);
    }

    #[test]
    fn a_row_never_measured_is_its_first_repetition() {
        let (_, rows) = merge(vec![
            run(vec![BenchResult::skipped(key("a"), "no GPU")]),
            run(vec![BenchResult::skipped(key("a"), "no GPU")]),
        ])
        .unwrap();
        assert_eq!(rows[0].status, Status::Skipped);
        assert_eq!(rows[0].reason.as_deref(), Some("no GPU"));
        assert_eq!(rows[0].repetitions.len(), 2);
        assert!(rows[0].repetition_samples().unwrap().is_empty());
    }

    #[test]
    fn samples_that_do_not_add_up_to_the_repetitions_are_refused() {
        let (_, mut rows) = merge(vec![
            run(vec![measured("a", &[1.0, 2.0], 1.0)]),
            run(vec![measured("a", &[1.0, 2.0], 1.0)]),
        ])
        .unwrap();
        rows[0].samples_ns.pop();
        let error = rows[0].repetition_samples().unwrap_err();
        assert_eq!((error.counted, error.kept), (4, 3));
    }
}
