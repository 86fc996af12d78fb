//! A collective's modelled time before noise (the formula in [`super`]'s doc), its protocol and
//! the name of its kernel.

use super::reference::Shape;
use super::types::Function;

/// A collective's fixed cost, seconds.
pub const LATENCY: f64 = 8e-6;

/// The largest size (`count x type size`) NCCL's tuning gives to the LL protocol here.
pub const LL_MAX_BYTES: usize = 64 << 10;

/// The bytes each edge of the ring carries, counted from the ring algorithm's steps (not from
/// nccl-tests' size and bus factor, which the harness uses: the two must agree). With `n` ranks
/// and `count` elements per call:
///
/// - all-reduce: a reduce-scatter then an all-gather around the ring, `2 (n - 1)` steps, each
///   moving one `n`-th of the buffer;
/// - all-gather: `n - 1` steps, each passing one rank's `count` elements on;
/// - reduce-scatter: `n - 1` steps, each passing a partial sum of one rank's `count` elements;
/// - broadcast: the root's `count` elements down the chain, pipelined, once over every edge;
/// - one rank: nothing crosses a link.
pub fn edge_bytes(shape: &Shape) -> f64 {
    let n = shape.nranks;
    if n < 2 {
        return 0.0;
    }
    let bytes = (shape.count * shape.datatype.size()) as f64;
    let steps = (n - 1) as f64;
    match shape.function {
        Function::AllReduce => 2.0 * steps * bytes / n as f64,
        Function::AllGather | Function::ReduceScatter => steps * bytes,
        Function::Broadcast => bytes,
    }
}

/// `LATENCY + edge_bytes / edge rate`, seconds, on a ring whose slowest edge moves `bus_gbs`
/// GB/s (every edge works at once, so the slowest one sets the time).
pub fn seconds(shape: &Shape, bus_gbs: f64) -> f64 {
    let bytes = edge_bytes(shape);
    if bytes == 0.0 {
        return LATENCY;
    }
    LATENCY + bytes / (bus_gbs * 1e9)
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
    fn each_edge_carries_what_the_ring_s_steps_move() {
        let shape = Shape {
            function: Function::AllReduce,
            datatype: DataType::Float32,
            op: RedOp::Sum,
            count: 1 << 20,
            nranks: 8,
            root: 0,
        };
        // 14 steps of 4 MiB / 8 each.
        let expected = LATENCY + 14.0 * f64::from(1 << 19) / 450e9;
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
        // 7 steps of one rank's 64 bytes.
        assert_eq!(edge_bytes(&gather), 7.0 * 64.0);
        assert_eq!(kernel(&gather), "ncclDevKernel_AllGather_RING_LL");
        let broadcast = Shape {
            function: Function::Broadcast,
            ..shape
        };
        assert_eq!(edge_bytes(&broadcast), 4.0 * f64::from(1 << 20));
        assert_eq!(seconds(&Shape { nranks: 1, ..shape }, 1.0), LATENCY);
    }
}
