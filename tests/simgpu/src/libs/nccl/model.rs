//! A collective's modelled time before noise (the formula in [`super`]'s doc), its protocol and
//! the name of its kernel.

use super::reference::Shape;
use super::types::Function;

/// A collective's fixed cost, seconds.
pub const LATENCY: f64 = 8e-6;

/// The largest size (`count x type size`) NCCL's tuning gives to the LL protocol here.
pub const LL_MAX_BYTES: usize = 64 << 10;

/// Bytes as nccl-tests' `size` counts them: all-gather's whole output, reduce-scatter's whole
/// input, else one rank's buffer.
pub fn size(shape: &Shape) -> f64 {
    let element = shape.datatype.size() as f64;
    match shape.function {
        Function::AllGather | Function::ReduceScatter => {
            (shape.nranks * shape.count) as f64 * element
        }
        Function::AllReduce | Function::Broadcast => shape.count as f64 * element,
    }
}

/// nccl-tests' bus factor: bus bytes per byte of [`size`] (0 for one rank).
pub fn bus_factor(function: Function, nranks: usize) -> f64 {
    if nranks < 2 {
        return 0.0;
    }
    let n = nranks as f64;
    match function {
        Function::AllReduce => 2.0 * (n - 1.0) / n,
        Function::AllGather | Function::ReduceScatter => (n - 1.0) / n,
        Function::Broadcast => 1.0,
    }
}

/// `LATENCY + bus_bytes / bus_bandwidth`, seconds, on a ring whose slowest edge moves
/// `bus_gbs` GB/s.
pub fn seconds(shape: &Shape, bus_gbs: f64) -> f64 {
    let bus_bytes = bus_factor(shape.function, shape.nranks) * size(shape);
    if bus_bytes == 0.0 {
        return LATENCY;
    }
    LATENCY + bus_bytes / (bus_gbs * 1e9)
}

/// NCCL's protocol for the collective: `LL` up to [`LL_MAX_BYTES`], else `SIMPLE`.
pub fn protocol(shape: &Shape) -> &'static str {
    if shape.count * shape.datatype.size() <= LL_MAX_BYTES {
        "LL"
    } else {
        "SIMPLE"
    }
}

/// The kernel NCCL launches for it (`ncclDevKernel_AllReduce_Sum_f32_RING_LL`).
pub fn kernel(shape: &Shape) -> String {
    let function = shape.function.name();
    let protocol = protocol(shape);
    if shape.function.reduces() {
        let (op, datatype) = (shape.op.kernel_name(), shape.datatype.kernel_suffix());
        format!("ncclDevKernel_{function}_{op}_{datatype}_RING_{protocol}")
    } else {
        format!("ncclDevKernel_{function}_RING_{protocol}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::libs::nccl::types::{DataType, RedOp};

    #[test]
    fn an_eight_gpu_all_reduce_follows_nccl_tests_bus_factor() {
        let shape = Shape {
            function: Function::AllReduce,
            datatype: DataType::Float32,
            op: RedOp::Sum,
            count: 1 << 20,
            nranks: 8,
            root: 0,
        };
        let expected = LATENCY + 1.75 * 4.0 * f64::from(1 << 20) / 450e9;
        assert!((seconds(&shape, 450.0) - expected).abs() < 1e-15);
        assert_eq!(protocol(&shape), "SIMPLE");
        assert_eq!(
            kernel(&shape),
            "ncclDevKernel_AllReduce_Sum_f32_RING_SIMPLE"
        );
        let gather = Shape {
            function: Function::AllGather,
            count: 16,
            ..shape
        };
        assert_eq!(size(&gather), 8.0 * 64.0);
        assert_eq!(kernel(&gather), "ncclDevKernel_AllGather_RING_LL");
        assert_eq!(seconds(&Shape { nranks: 1, ..shape }, 1.0), LATENCY);
    }
}
