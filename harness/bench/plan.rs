//! Which benchmarks a run holds, with their sizes, modes and limits: the full suite, or the
//! short one of `--quick`.

use super::model::{Key, Mode, Parameters, Side};
use super::protocol::{Implementation, Limits, Workload};
use crate::kernels::Kernel;
use crate::nccl::collective::Collective;
use crate::tolerance::Precision;

/// Vector add sizes, elements: 1 Mi to 256 Mi.
const VECTOR_ADD_SIZES: [u64; 5] = [1 << 20, 1 << 22, 1 << 24, 1 << 26, 1 << 28];
/// Matmul sides.
const MATMUL_SIZES: [u64; 4] = [1024, 2048, 4096, 8192];
/// The device-to-device copy that measures the memory ceiling: 1 GiB.
pub const COPY_BYTES: u64 = 1 << 30;
/// The precisions cuBLAS is timed in (FP8 through cuBLASLt).
const CUBLAS_PRECISIONS: [Precision; 5] = [
    Precision::F32,
    Precision::Tf32,
    Precision::F16,
    Precision::Bf16,
    Precision::Fp8,
];

/// How long and how many: the whole suite or `--quick`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Depth {
    Full,
    Quick,
}

/// One benchmark to run.
#[derive(Debug, Clone, PartialEq)]
pub struct Planned {
    pub key: Key,
    pub workload: Workload,
    /// Cold or batch, for GPU work.
    pub mode: Option<Mode>,
}

impl Depth {
    /// The stop rule's limits for GPU work (GUIDE.md section 7).
    pub fn gpu_limits(self) -> Limits {
        Limits::standard(match self {
            Depth::Full => 5.0,
            Depth::Quick => 2.0,
        })
    }

    /// The stop rule's limits for CPU work (compilation, loading), noisier by nature. A quick
    /// run's limit is short: it repeats three times, and the repetitions, not more samples of
    /// one, are what carry the variation between runs.
    pub fn cpu_limits(self) -> Limits {
        Limits::standard(match self {
            Depth::Full => 10.0,
            Depth::Quick => 1.0,
        })
    }

    /// How many times each combination's benchmarks run when `--repeat` is not given: 3 for
    /// `--quick`, 5 for the full suite.
    pub fn repetitions(self) -> u32 {
        match self {
            Depth::Full => 5,
            Depth::Quick => 3,
        }
    }

    fn modes(self) -> &'static [Mode] {
        match self {
            Depth::Full => &[Mode::Batch, Mode::Cold],
            Depth::Quick => &[Mode::Batch],
        }
    }

    fn vector_add_sizes(self) -> &'static [u64] {
        match self {
            Depth::Full => &VECTOR_ADD_SIZES,
            Depth::Quick => &VECTOR_ADD_SIZES[3..4],
        }
    }

    /// The matmul sides: a quick run's one size is the largest, except on a simulated device,
    /// which computes every GEMM on the host's CPU (an 8192³ one takes it about 15 s, four
    /// precisions a repetition) while its rate comes from the model at any size: there the
    /// smallest.
    fn matmul_sizes(self, simulated: bool) -> &'static [u64] {
        match (self, simulated) {
            (Depth::Full, _) => &MATMUL_SIZES,
            (Depth::Quick, false) => &MATMUL_SIZES[3..],
            (Depth::Quick, true) => &MATMUL_SIZES[..1],
        }
    }
}

fn key(combination: &str, benchmark: &'static str, side: Side, parameters: Parameters) -> Key {
    Key {
        combination: combination.to_owned(),
        benchmark,
        side,
        parameters,
    }
}

/// The GPU benchmarks of one combination, in the order they run: the copy ceiling first, then
/// vector add, then every matmul (cuBLAS per precision, then the NVRTC kernel), sized for a
/// `simulated` device where that differs.
pub fn gpu(combination: &str, depth: Depth, simulated: bool) -> Vec<Planned> {
    let mut planned = vec![Planned {
        key: key(
            combination,
            "copy",
            Side::Gpu,
            Parameters {
                size: Some(COPY_BYTES),
                implementation: Some("driver".into()),
                mode: Some(Mode::Batch),
                ..Parameters::default()
            },
        ),
        workload: Workload::Copy { bytes: COPY_BYTES },
        mode: Some(Mode::Batch),
    }];
    for &elements in depth.vector_add_sizes() {
        for &mode in depth.modes() {
            planned.push(Planned {
                key: key(
                    combination,
                    "vector_add",
                    Side::Gpu,
                    Parameters {
                        size: Some(elements),
                        precision: Some(Precision::F32.id().into()),
                        implementation: Some(Implementation::Nvrtc.name().into()),
                        mode: Some(mode),
                        ..Parameters::default()
                    },
                ),
                workload: Workload::VectorAdd { elements },
                mode: Some(mode),
            });
        }
    }
    let matmuls = CUBLAS_PRECISIONS
        .iter()
        .map(|&p| (Implementation::Cublas, p))
        .chain([(Implementation::Nvrtc, Precision::F32)]);
    for (implementation, precision) in matmuls {
        for &size in depth.matmul_sizes(simulated) {
            for &mode in depth.modes() {
                planned.push(Planned {
                    key: key(
                        combination,
                        "matmul",
                        Side::Gpu,
                        Parameters {
                            size: Some(size),
                            precision: Some(precision.id().into()),
                            implementation: Some(implementation.name().into()),
                            mode: Some(mode),
                            ..Parameters::default()
                        },
                    ),
                    workload: Workload::Matmul {
                        implementation,
                        precision,
                        size,
                    },
                    mode: Some(mode),
                });
            }
        }
    }
    planned
}

/// The largest NCCL size (nccl-tests' `-e`): 1 GiB on a GPU, as nccl-tests' sweeps go; 16 MiB on
/// a simulated one, whose NCCL computes every rank's output on the host's CPU.
pub fn nccl_largest(simulated: bool) -> u64 {
    if simulated {
        16 << 20
    } else {
        1 << 30
    }
}

impl Depth {
    /// Each NCCL size is this many times the last (nccl-tests' `-f`): 4 for the full suite (15
    /// sizes from 8 B to 1 GiB on a GPU), 64 for `--quick` (6); on a simulated GPU 8 and 64, up
    /// to 16 MiB (8 and 5 sizes).
    pub fn nccl_step(self, simulated: bool) -> usize {
        match (self, simulated) {
            (Depth::Full, false) => 4,
            (Depth::Full, true) => 8,
            (Depth::Quick, _) => crate::nccl::STEP,
        }
    }
}

/// The NCCL benchmarks of one combination, run once over every selected GPU together: each
/// collective at every size from 8 B to [`nccl_largest`] (nccl-tests' sweep), sized for a
/// `simulated` device where that differs. Ids read `nccl/<combination>/<collective>/<bytes>`.
pub fn nccl(combination: &str, depth: Depth, simulated: bool) -> Vec<Planned> {
    let largest = nccl_largest(simulated);
    let sizes = crate::nccl::collective::sizes(largest as usize, depth.nccl_step(simulated));
    let mut planned = Vec::new();
    for collective in Collective::ALL {
        for &bytes in &sizes {
            planned.push(Planned {
                key: key(
                    combination,
                    "nccl",
                    Side::Gpu,
                    Parameters {
                        size: Some(bytes as u64),
                        implementation: Some(collective.id().into()),
                        ..Parameters::default()
                    },
                ),
                workload: Workload::Collective {
                    collective,
                    bytes: bytes as u64,
                    buffers: largest,
                },
                mode: None,
            });
        }
    }
    planned
}

/// NVRTC compiling each kernel for `arch`: CPU work, no device needed.
pub fn compile(combination: &str, arch: &str) -> Vec<Planned> {
    Kernel::ALL
        .iter()
        .map(|&kernel| Planned {
            key: key(
                combination,
                "nvrtc_compile",
                Side::Cpu,
                Parameters {
                    implementation: Some(kernel.function().into()),
                    arch: Some(arch.to_owned()),
                    ..Parameters::default()
                },
            ),
            workload: Workload::Compile {
                kernel,
                arch: arch.to_owned(),
            },
            mode: None,
        })
        .collect()
}

/// The key of a combination's library load time.
pub fn load(combination: &str) -> Key {
    key(combination, "load", Side::Cpu, Parameters::default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn the_full_suite_covers_every_size_precision_and_mode() {
        let full = gpu("c", Depth::Full, false);
        // copy + 5 vector-add sizes x 2 modes + (5 cuBLAS precisions + NVRTC) x 4 sizes x 2 modes
        assert_eq!(full.len(), 1 + 10 + 48);
        let ids: HashSet<String> = full.iter().map(|p| p.key.id()).collect();
        assert_eq!(ids.len(), full.len(), "ids are unique");
        assert!(ids.contains("matmul/c/cublas/bf16/8192/batch"));
        assert!(ids.contains("matmul/c/cublas/fp8/1024/cold"));
        assert!(ids.contains("vector_add/c/nvrtc/f32/268435456/cold"));
        assert!(ids.contains("copy/c/driver/1073741824/batch"));
    }

    #[test]
    fn the_quick_suite_is_one_size_and_one_mode() {
        let quick = gpu("c", Depth::Quick, false);
        assert_eq!(quick.len(), 1 + 1 + 6);
        assert!(quick.iter().all(|p| p.mode == Some(Mode::Batch)));
        assert!(Depth::Quick.gpu_limits().time_limit_s < Depth::Full.gpu_limits().time_limit_s);
        let ids: HashSet<String> = quick.iter().map(|p| p.key.id()).collect();
        assert!(ids.contains("matmul/c/cublas/f32/8192/batch"));
    }

    #[test]
    fn a_simulated_device_s_quick_matmuls_are_the_smallest_size() {
        let quick = gpu("c", Depth::Quick, true);
        assert_eq!(quick.len(), 1 + 1 + 6);
        let sizes: HashSet<Option<u64>> = (quick.iter())
            .filter(|p| p.key.benchmark == "matmul")
            .map(|p| p.key.parameters.size)
            .collect();
        assert_eq!(sizes, HashSet::from([Some(1024)]));
        assert_eq!(gpu("c", Depth::Full, true), gpu("c", Depth::Full, false));
    }

    #[test]
    fn nccl_sweeps_every_collective_from_8_bytes_to_the_largest() {
        for (depth, simulated, sizes) in [
            (Depth::Full, false, 15),
            (Depth::Quick, false, 6),
            (Depth::Full, true, 8),
            (Depth::Quick, true, 5),
        ] {
            let planned = nccl("c", depth, simulated);
            assert_eq!(planned.len(), 4 * sizes, "{depth:?}, simulated {simulated}");
            let ids: HashSet<String> = planned.iter().map(|p| p.key.id()).collect();
            assert_eq!(ids.len(), planned.len(), "ids are unique");
            let largest = nccl_largest(simulated);
            for collective in ["all_reduce", "all_gather", "reduce_scatter", "broadcast"] {
                assert!(ids.contains(&format!("nccl/c/{collective}/8")));
                assert!(ids.contains(&format!("nccl/c/{collective}/{largest}")));
            }
            assert!(planned.iter().all(|p| matches!(
                p.workload,
                Workload::Collective { buffers, .. } if buffers == largest
            )));
        }
        let quick: Vec<Option<u64>> = (nccl("c", Depth::Quick, false).iter())
            .filter(|p| p.key.parameters.implementation.as_deref() == Some("broadcast"))
            .map(|p| p.key.parameters.size)
            .collect();
        let sizes = [8, 512, 32 << 10, 2 << 20, 128 << 20, 1 << 30];
        assert_eq!(quick, sizes.map(Some));
    }

    #[test]
    fn compile_rows_name_the_kernel_and_the_arch() {
        let ids: Vec<String> = compile("pip:venv-cu12", "sm_90")
            .iter()
            .map(|p| p.key.id())
            .collect();
        assert_eq!(
            ids,
            [
                "nvrtc_compile/pip:venv-cu12/vector_add/sm_90",
                "nvrtc_compile/pip:venv-cu12/matmul_tiled/sm_90"
            ]
        );
    }
}
