//! The collectives stackbench runs, in nccl-tests' terms: what a "size" means for each, how
//! many elements each rank sends and receives, the bus factor that turns algorithm bandwidth
//! into bus bandwidth, and the host's answer every rank's output is verified against.
//!
//! Data is FP32 holding small integers, so every sum over up to 2^20 ranks is exact whatever
//! order NCCL adds in, and a result is right bit for bit or wrong.

use serde::{Deserialize, Serialize};

/// One of NCCL's collectives (sum as the reduction, rank 0 as broadcast's root).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Collective {
    AllReduce,
    AllGather,
    ReduceScatter,
    Broadcast,
}

/// How many elements each rank sends and receives, and the size nccl-tests reports for that.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    pub send: usize,
    pub recv: usize,
    /// nccl-tests' size, bytes: the largest buffer of one rank (all-gather's output,
    /// reduce-scatter's input, the one buffer of all-reduce and broadcast).
    pub bytes: usize,
}

/// FP32.
const ELEMENT: usize = 4;

impl Collective {
    pub const ALL: [Collective; 4] = [
        Collective::AllReduce,
        Collective::AllGather,
        Collective::ReduceScatter,
        Collective::Broadcast,
    ];

    /// `all_reduce`: the check's and the benchmark's name after `nccl.`.
    pub fn id(self) -> &'static str {
        match self {
            Collective::AllReduce => "all_reduce",
            Collective::AllGather => "all_gather",
            Collective::ReduceScatter => "reduce_scatter",
            Collective::Broadcast => "broadcast",
        }
    }

    /// The name NCCL prints in its INFO lines (`AllReduce`).
    pub fn nccl_name(self) -> &'static str {
        match self {
            Collective::AllReduce => "AllReduce",
            Collective::AllGather => "AllGather",
            Collective::ReduceScatter => "ReduceScatter",
            Collective::Broadcast => "Broadcast",
        }
    }

    /// The one whose [`id`](Self::id) is `id`.
    pub fn from_id(id: &str) -> Option<Collective> {
        Collective::ALL.into_iter().find(|c| c.id() == id)
    }

    /// The shape of a run asking for `bytes` over `ranks` GPUs, as nccl-tests rounds it: at
    /// least one element per rank.
    pub fn shape(self, bytes: usize, ranks: usize) -> Shape {
        let ranks = ranks.max(1);
        let (send, recv) = match self {
            Collective::AllReduce | Collective::Broadcast => {
                let count = (bytes / ELEMENT).max(1);
                (count, count)
            }
            Collective::AllGather => {
                let count = (bytes / ELEMENT / ranks).max(1);
                (count, count * ranks)
            }
            Collective::ReduceScatter => {
                let count = (bytes / ELEMENT / ranks).max(1);
                (count * ranks, count)
            }
        };
        Shape {
            send,
            recv,
            bytes: send.max(recv) * ELEMENT,
        }
    }

    /// nccl-tests' bus factor: bus bandwidth = algorithm bandwidth (size / time) x this, so
    /// that a collective's figure is comparable with the links' speed whatever the rank count.
    /// The one place stackbench holds them, from the summary of nccl-tests' `doc/PERFORMANCE.md`
    /// (github.com/NVIDIA/nccl-tests): all-reduce `2(n-1)/n`, all-gather and reduce-scatter
    /// `(n-1)/n` (their size the whole gathered or scattered array, as [`Shape::bytes`]),
    /// broadcast 1. The document gives NCCL's in-network all-reduce (NVLS) `(n-1)/(n+1)`;
    /// stackbench reports every all-reduce with `2(n-1)/n`, whatever algorithm NCCL chose.
    pub fn bus_factor(self, ranks: usize) -> f64 {
        let n = ranks.max(1) as f64;
        match self {
            Collective::AllReduce => 2.0 * (n - 1.0) / n,
            Collective::AllGather | Collective::ReduceScatter => (n - 1.0) / n,
            Collective::Broadcast => 1.0,
        }
    }

    /// What `rank` must hold at `index` of its output when every rank sent [`input`].
    pub fn expected(self, shape: Shape, ranks: usize, rank: usize, index: usize) -> f32 {
        match self {
            Collective::AllReduce => (0..ranks).map(|r| input(r, index)).sum(),
            Collective::Broadcast => input(0, index),
            Collective::ReduceScatter => (0..ranks)
                .map(|r| input(r, rank * shape.recv + index))
                .sum(),
            Collective::AllGather => input(index / shape.send, index % shape.send),
        }
    }
}

/// Element `index` of `rank`'s input: an integer in [-8, 8], different per rank and index so
/// that a result from the wrong rank, offset or reduction never verifies.
pub fn input(rank: usize, index: usize) -> f32 {
    ((index.wrapping_mul(7).wrapping_add(rank.wrapping_mul(5)) % 17) as f32) - 8.0
}

/// Sizes from 8 B up to `largest`, each `step` times the last, and `largest` itself.
pub fn sizes(largest: usize, step: usize) -> Vec<usize> {
    let mut sizes = Vec::new();
    let mut size = 8usize;
    while size < largest {
        sizes.push(size);
        size = size.saturating_mul(step.max(2));
    }
    sizes.push(largest);
    sizes
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rstest::rstest;

    /// nccl-tests' `doc/PERFORMANCE.md`, worked by hand: 2(n-1)/n, (n-1)/n, (n-1)/n, 1.
    #[rstest]
    #[case(Collective::AllReduce, 8, 1.75)]
    #[case(Collective::AllReduce, 2, 1.0)]
    #[case(Collective::AllGather, 8, 0.875)]
    #[case(Collective::ReduceScatter, 4, 0.75)]
    #[case(Collective::Broadcast, 8, 1.0)]
    #[case(Collective::AllReduce, 1, 0.0)]
    fn bus_factors_are_nccl_tests(#[case] c: Collective, #[case] n: usize, #[case] factor: f64) {
        assert!((c.bus_factor(n) - factor).abs() < 1e-12);
    }

    #[rstest]
    #[case(Collective::AllReduce, 1 << 20, 8, 1 << 18, 1 << 18)]
    #[case(Collective::AllGather, 1 << 20, 8, 1 << 15, 1 << 18)]
    #[case(Collective::ReduceScatter, 1 << 20, 8, 1 << 18, 1 << 15)]
    #[case(Collective::AllGather, 8, 8, 1, 8)]
    #[case(Collective::Broadcast, 8, 8, 2, 2)]
    fn shapes_follow_nccl_tests(
        #[case] c: Collective,
        #[case] bytes: usize,
        #[case] ranks: usize,
        #[case] send: usize,
        #[case] recv: usize,
    ) {
        let shape = c.shape(bytes, ranks);
        assert_eq!((shape.send, shape.recv), (send, recv));
    }

    #[test]
    fn all_gather_expects_each_rank_s_block_in_rank_order() {
        let shape = Collective::AllGather.shape(64, 4);
        assert_eq!(shape.send, 4);
        assert_eq!(Collective::AllGather.expected(shape, 4, 0, 9), input(2, 1));
    }

    #[test]
    fn sizes_run_from_8_bytes_to_the_largest() {
        assert_eq!(sizes(1 << 20, 512), vec![8, 4096, 1 << 20]);
        assert_eq!(sizes(8, 4), vec![8]);
    }

    proptest! {
        #[test]
        fn sums_of_inputs_are_exact(rank in 0usize..64, index in 0usize..1 << 30) {
            let v = input(rank, index);
            prop_assert!((-8.0..=8.0).contains(&v) && v.fract() == 0.0);
            let shape = Collective::AllReduce.shape(4 * (index + 1), 8);
            let sum = Collective::AllReduce.expected(shape, 8, 0, index);
            prop_assert_eq!(sum, (0..8).map(|r| input(r, index) as f64).sum::<f64>() as f32);
        }
    }
}
