//! A roofline per GPU: each kernel's achieved rate at its arithmetic intensity, against the
//! memory roof (bandwidth × intensity) and the compute roofs of each precision (Williams,
//! Waterman and Patterson, 2009), from a bench run's figures and its theoretical peaks.

use crate::bench::model::{BenchReport, BenchResult, Spec, Status};
use serde::{Deserialize, Serialize};

/// One GPU's roofline, from one bench run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Roofline {
    /// The GPU's name.
    pub gpu: String,
    /// The run, as an index into the history's runs.
    pub run: usize,
    pub spec: Spec,
    pub points: Vec<Kernel>,
}

/// One kernel's figure on it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Kernel {
    /// `matmul/cublas/bf16/8192 (pip:torch)`
    pub label: String,
    /// The precision whose roof it is under (`bf16`; `f32` for a vector add).
    pub precision: String,
    /// FLOP per byte of DRAM traffic, at the least traffic the kernel needs.
    pub intensity: f64,
    /// Achieved TFLOP/s.
    pub tflops: f64,
}

/// The roofline of `report`'s first GPU, when the run has its theoretical peaks, compute and
/// memory, and measured a kernel that computes (a vector add or a matmul).
pub fn of(report: &BenchReport, run: usize) -> Option<Roofline> {
    let gpu = report.gpu.devices.first()?.name.clone();
    let spec = (report.combinations.iter())
        .find_map(|c| c.spec.clone())
        .filter(|s| s.memory_gbps.is_some() && !s.tflops.is_empty())?;
    let points: Vec<Kernel> = report.benchmarks.iter().filter_map(kernel).collect();
    (!points.is_empty()).then_some(Roofline {
        gpu,
        run,
        spec,
        points,
    })
}

/// A measured result as a point: a vector add reads two floats and writes one for one FLOP
/// (1/12 FLOP per byte); an N³ GEMM does 2N³ FLOPs over at least its three N² matrices.
fn kernel(result: &BenchResult) -> Option<Kernel> {
    if result.status != Status::Measured || result.in_l2 {
        return None;
    }
    let throughput = result.throughput.as_ref()?;
    let parameters = &result.parameters;
    let (precision, intensity, tflops) = match result.benchmark.as_str() {
        "vector_add" => ("f32".to_owned(), 1.0 / 12.0, throughput.value / 12.0 / 1e3),
        "matmul" => {
            let precision = parameters.precision.clone()?;
            let bytes = matrix_bytes(&precision)?;
            let n = parameters.size? as f64;
            (precision, 2.0 * n / bytes, throughput.value)
        }
        _ => return None,
    };
    let mut label = vec![result.benchmark.clone()];
    label.extend(parameters.parts());
    Some(Kernel {
        label: format!("{} ({})", label.join("/"), result.combination),
        precision,
        intensity,
        tflops,
    })
}

/// The bytes per element of a GEMM's three matrices together, in `precision`: both inputs and
/// the output in their format, but FP8's output is BF16 (as stackbench's FP8 GEMM writes it).
fn matrix_bytes(precision: &str) -> Option<f64> {
    match precision {
        "f64" => Some(24.0),
        "f32" | "tf32" => Some(12.0),
        "f16" | "bf16" => Some(6.0),
        "fp8" => Some(4.0),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::model::{Key, Mode, Parameters, Side, Throughput};

    fn measured(benchmark: &'static str, precision: &str, size: u64, value: f64) -> BenchResult {
        let key = Key {
            combination: "c".into(),
            benchmark,
            side: Side::Gpu,
            parameters: Parameters {
                size: Some(size),
                precision: Some(precision.into()),
                implementation: Some("cublas".into()),
                mode: Some(Mode::Batch),
                ..Parameters::default()
            },
        };
        BenchResult {
            status: Status::Measured,
            throughput: Some(Throughput {
                value,
                unit: String::new(),
            }),
            ..BenchResult::from_key(key)
        }
    }

    #[test]
    fn each_kernel_sits_at_its_arithmetic_intensity() {
        let gemm = kernel(&measured("matmul", "bf16", 8192, 690.0)).unwrap();
        assert!((gemm.intensity - 8192.0 / 3.0).abs() < 1e-9);
        assert_eq!((gemm.tflops, gemm.precision.as_str()), (690.0, "bf16"));
        // E4M3 inputs (1 byte each), a BF16 output (2): 2N³ FLOPs over 4N² bytes.
        let fp8 = kernel(&measured("matmul", "fp8", 8192, 1200.0)).unwrap();
        assert!((fp8.intensity - 8192.0 / 2.0).abs() < 1e-9);
        let add = kernel(&measured("vector_add", "f32", 1 << 26, 2844.0)).unwrap();
        assert!((add.intensity - 1.0 / 12.0).abs() < 1e-12);
        assert!((add.tflops - 0.237).abs() < 1e-9);
        assert!(kernel(&measured("copy", "", 1 << 30, 3000.0)).is_none());
        let mut in_l2 = measured("vector_add", "f32", 1 << 20, 9000.0);
        in_l2.in_l2 = true;
        assert!(kernel(&in_l2).is_none());
    }
}
