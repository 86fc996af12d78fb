//! Each GPU figure's two shares: of the ceiling measured in the same run (`pct_of_peak`: the
//! device-to-device copy, the best cuBLAS GEMM of each precision) and of the card's theoretical
//! peak (`pct_of_spec`); and a saved run's shares given again as today's stackbench gives them.

use super::model::{BenchReport, BenchResult, Peaks, Spec};
use super::theoretical::{self, DeviceFacts};

/// A result's throughput as a percentage of its ceiling: vector add of the copy's bandwidth
/// (DRAM: not where the working set stayed in L2), a matmul of the best cuBLAS rate in its
/// precision. cuBLAS's GEMMs have none: they are the ceiling, and their share of themselves
/// says nothing (their share of the card is `pct_of_spec`).
pub fn pct_of_peak(result: &BenchResult, peaks: &Peaks) -> Option<f64> {
    let peak = match result.benchmark.as_str() {
        "vector_add" => peaks.copy_gbps,
        "matmul" if !sets_the_ceiling(result) => peaks
            .gemm_tflops
            .get(result.parameters.precision.as_deref()?)
            .copied(),
        _ => None,
    };
    percent_of(result, peak?)
}

/// A result's throughput as a percentage of the card's theoretical peak: the copy and vector
/// add of its memory bandwidth (not where the working set stayed in L2), a matmul of its
/// precision's dense compute.
pub fn pct_of_spec(result: &BenchResult, spec: &Spec) -> Option<f64> {
    let peak = match result.benchmark.as_str() {
        "copy" | "vector_add" => spec.memory_gbps,
        "matmul" => spec
            .tflops
            .get(result.parameters.precision.as_deref()?)
            .copied(),
        _ => None,
    };
    percent_of(result, peak?)
}

/// `result`'s throughput as a percentage of `peak`; none where its working set stayed in L2
/// (its rate is the cache's, not DRAM's) or where there is no figure or no peak.
fn percent_of(result: &BenchResult, peak: f64) -> Option<f64> {
    let value = result.throughput.as_ref()?.value;
    (!result.in_l2 && peak > 0.0).then(|| 100.0 * value / peak)
}

/// Whether `result` is one of the figures the run's GEMM ceiling is the best of.
fn sets_the_ceiling(result: &BenchResult) -> bool {
    result.benchmark == "matmul" && result.parameters.implementation.as_deref() == Some("cublas")
}

/// A saved run's shares as today's stackbench gives them: a combination that ran on a real GPU
/// and has no theoretical peaks (a file before schema minor 5) gets those of the GPU the file
/// names (from its name and compute capability: a known product's datasheet) and each row its
/// share of them, from its figure; a cuBLAS GEMM loses its share of itself (100%, in files
/// before minor 5); the other shares of the run's ceilings stay as measured. Its schema minor
/// stays the measuring run's: what that run did not measure (clocks, conditions) stays absent.
pub fn reassess(report: &mut BenchReport) {
    let gpu = report.gpu.devices.first().map(DeviceFacts::of_gpu);
    for combination in &mut report.combinations {
        let ran_on_a_gpu = combination.gpu_unavailable.is_none() && !combination.simulated;
        if combination.spec.is_none() && ran_on_a_gpu {
            combination.spec = gpu.as_ref().map(theoretical::peaks);
        }
        for result in (report.benchmarks.iter_mut()).filter(|r| r.combination == combination.name) {
            if sets_the_ceiling(result) {
                result.pct_of_peak = None;
            }
            if result.pct_of_spec.is_none() {
                result.pct_of_spec =
                    (combination.spec.as_ref()).and_then(|s| pct_of_spec(result, s));
            }
        }
    }
}
