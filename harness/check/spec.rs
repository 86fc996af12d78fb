//! The checks, as data: each one's id, the library it belongs to, what it verifies and which
//! checks it needs. The order here is the order they run in; reports group them by library, in
//! the order each library first appears.

use crate::schema::check::{CheckResult, Status};
use std::collections::BTreeMap;

/// Where a check runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// In the combination's worker process (it loads or calls a library).
    Worker,
    /// In stackbench itself, from what the worker reported (nothing is loaded).
    Parent,
}

/// One conformance check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spec {
    /// `<library>.<check>`.
    pub id: &'static str,
    /// The group: the part of the stack it exercises.
    pub library: &'static str,
    /// One line saying what passing means.
    pub title: &'static str,
    /// Checks that must pass (or warn) first; otherwise this one is skipped.
    pub needs: &'static [&'static str],
    pub side: Side,
}

const fn worker(
    id: &'static str,
    library: &'static str,
    title: &'static str,
    needs: &'static [&'static str],
) -> Spec {
    Spec {
        id,
        library,
        title,
        needs,
        side: Side::Worker,
    }
}

/// The device, set up first: a fresh worker restores a check's needs in their order, and a
/// compilation takes its architecture from the device.
const DEVICE: &str = "driver.devices";

/// Every check, in running order.
pub const SPECS: &[Spec] = &[
    worker(
        "driver.library",
        "driver",
        "libcuda.so.1 is present, is not a stub, has the right ELF class and loads",
        &[],
    ),
    worker(
        "driver.init",
        "driver",
        "cuInit(0) succeeds",
        &["driver.library"],
    ),
    worker(
        DEVICE,
        "driver",
        "every device reports a name, UUID, compute capability and memory; a context is created",
        &["driver.init"],
    ),
    worker(
        "driver.nvml",
        "driver",
        "NVML initialises and agrees with the driver library on the driver version",
        &[],
    ),
    worker(
        "driver.health",
        "driver",
        "persistence mode on; no ECC errors, retired pages, pending row remapping or throttling",
        &["driver.nvml"],
    ),
    worker(
        "cudart.load",
        "cudart",
        "libcudart loads and reports its version",
        &[],
    ),
    worker(
        "driver.version",
        "driver",
        "the driver supports the combination's CUDA runtime (NVIDIA's compatibility rules)",
        &["driver.library", "cudart.load"],
    ),
    worker(
        "cudart.memcpy",
        "cudart",
        "set the device, allocate, copy a buffer there and back, and get it back unchanged",
        &["cudart.load", DEVICE],
    ),
    worker(
        "nvrtc.load",
        "nvrtc",
        "libnvrtc loads and reports its version",
        &[],
    ),
    worker(
        "nvrtc.compile_vector_add",
        "nvrtc",
        "NVRTC compiles the vector-add kernel for the device's architecture (or --target)",
        &["nvrtc.load"],
    ),
    worker(
        "nvrtc.compile_matmul",
        "nvrtc",
        "NVRTC compiles the tiled matmul kernel for the device's architecture (or --target)",
        &["nvrtc.load"],
    ),
    worker(
        "nvrtc.launch_vector_add",
        "nvrtc",
        "the compiled vector add loads through the driver, runs, and matches the CPU",
        &[DEVICE, "nvrtc.compile_vector_add"],
    ),
    worker(
        "nvrtc.launch_matmul",
        "nvrtc",
        "the compiled tiled matmul loads through the driver, runs, and matches the CPU",
        &[DEVICE, "nvrtc.compile_matmul"],
    ),
    worker(
        "cublas.load",
        "cublas",
        "libcublas loads and reports its version",
        &[],
    ),
    worker(
        "cublas.handle",
        "cublas",
        "cublasCreate succeeds",
        &["cublas.load", DEVICE],
    ),
    worker(
        "cublas.sgemm",
        "cublas",
        "SGEMM matches the CPU within the FP32 tolerance",
        &["cublas.handle"],
    ),
    worker(
        "cublas.gemm_fp16",
        "cublas",
        "FP16 GEMM (FP32 accumulation) matches the CPU within the FP16 tolerance",
        &["cublas.handle"],
    ),
    worker(
        "cublas.gemm_bf16",
        "cublas",
        "BF16 GEMM (FP32 accumulation) matches the CPU within the BF16 tolerance",
        &["cublas.handle"],
    ),
    worker(
        "cublasLt.load",
        "cublasLt",
        "libcublasLt loads and reports its version",
        &[],
    ),
    worker(
        "cublasLt.handle",
        "cublasLt",
        "cublasLtCreate succeeds",
        &["cublasLt.load", DEVICE],
    ),
    worker(
        "cublasLt.matmul",
        "cublasLt",
        "cublasLtMatmul (FP32, heuristic algorithm) matches the CPU within the FP32 tolerance",
        &["cublasLt.handle"],
    ),
    worker(
        "cublasLt.matmul_fp8",
        "cublasLt",
        "FP8 (E4M3, scaled) cublasLtMatmul matches the CPU within the BF16 tolerance",
        &["cublasLt.handle"],
    ),
    worker(
        "cudnn.load",
        "cudnn",
        "libcudnn loads and reports its version",
        &[],
    ),
    worker(
        "cudnn.versions",
        "cudnn",
        "cudnnGetVersion and cudnnGetCudartVersion agree with the combination's CUDA runtime",
        &["cudnn.load", "cudart.load"],
    ),
    worker(
        "cudnn.handle",
        "cudnn",
        "cudnnCreate succeeds",
        &["cudnn.load", DEVICE],
    ),
    worker(
        "cudnn.conv_forward",
        "cudnn",
        "a small convolution forward matches the CPU within the FP32 tolerance",
        &["cudnn.handle"],
    ),
    worker(
        "cupti.load",
        "cupti",
        "libcupti loads and reports its version",
        &[],
    ),
    worker(
        "cupti.activity",
        "cupti",
        "the Activity API records the vector-add launch with its name and a duration above zero",
        &["cupti.load", "nvrtc.launch_vector_add"],
    ),
    worker(
        "cufft.load",
        "cufft",
        "libcufft loads and reports its version",
        &[],
    ),
    worker(
        "cufft.c2c",
        "cufft",
        "a small complex-to-complex FFT matches the CPU's DFT",
        &["cufft.load", DEVICE],
    ),
    worker(
        "curand.load",
        "curand",
        "libcurand loads and reports its version",
        &[],
    ),
    worker(
        "curand.generate",
        "curand",
        "a generator fills a buffer with uniform numbers in (0, 1] with the expected mean",
        &["curand.load", DEVICE],
    ),
    worker(
        "nccl.load",
        "nccl",
        "libnccl loads and reports its version",
        &[],
    ),
    worker(
        "nccl.versions",
        "nccl",
        "the CUDA NCCL was built for (its banner) suits the combination's runtime and the driver",
        &["nccl.load", "cudart.load", "driver.library"],
    ),
    worker(
        "nccl.init",
        "nccl",
        "ncclCommInitAll makes one communicator per selected GPU",
        &["nccl.load", DEVICE],
    ),
    worker(
        "nccl.all_reduce",
        "nccl",
        "all-reduce (sum) matches the host bit for bit on every GPU, 8 B to 1 GiB",
        &["nccl.init"],
    ),
    worker(
        "nccl.all_gather",
        "nccl",
        "all-gather matches the host bit for bit on every GPU, 8 B to 1 GiB",
        &["nccl.init"],
    ),
    worker(
        "nccl.reduce_scatter",
        "nccl",
        "reduce-scatter (sum) matches the host bit for bit on every GPU, 8 B to 1 GiB",
        &["nccl.init"],
    ),
    worker(
        "nccl.broadcast",
        "nccl",
        "broadcast from GPU 0 matches the host bit for bit on every GPU, 8 B to 1 GiB",
        &["nccl.init"],
    ),
    worker(
        "nccl.node_pairs",
        "nccl",
        "across nodes: an all-reduce between each pair of neighbouring nodes names a slow node or link",
        &["nccl.init"],
    ),
    worker(
        "nccl.transport",
        "nccl",
        "NCCL's INFO lines name a peer-to-peer transport for every ring edge",
        &["nccl.init"],
    ),
    Spec {
        id: "coverage.kernels",
        library: "coverage",
        title: "every loaded library has SASS for the GPU, or PTX it can JIT-compile",
        needs: &[],
        side: Side::Parent,
    },
    Spec {
        id: "combination.isolated",
        library: "combination",
        title: "every CUDA library mapped came from the combination's own directories",
        needs: &[],
        side: Side::Parent,
    },
];

/// The checks that use the GPU itself, run once per device in a run over several (the others
/// load and ask libraries, the same whichever device is current).
pub const PER_DEVICE: &[&str] = &[
    DEVICE,
    "cudart.memcpy",
    "nvrtc.launch_vector_add",
    "nvrtc.launch_matmul",
    "cublas.sgemm",
    "cublas.gemm_fp16",
    "cublas.gemm_bf16",
    "cublasLt.matmul",
    "cublasLt.matmul_fp8",
    "cudnn.conv_forward",
    "cupti.activity",
    "cufft.c2c",
    "curand.generate",
];

/// The check with this id.
pub fn spec(id: &str) -> Option<&'static Spec> {
    SPECS.iter().find(|s| s.id == id)
}

impl CheckResult {
    /// A result of check `id` (its library from the check list), with no duration or details.
    pub fn new(id: &str, status: Status, reason: impl Into<String>) -> CheckResult {
        let library =
            spec(id).map_or_else(|| id.split('.').next().unwrap_or_default(), |s| s.library);
        CheckResult {
            id: id.to_owned(),
            library: library.to_owned(),
            status,
            reason: reason.into(),
            duration_ms: 0.0,
            details: BTreeMap::new(),
            device: None,
        }
    }
}

/// Whether a check can run given the results so far: `Err` with the skip's reason when a check
/// it needs did not pass. The reason names the check needed and, when that one was itself
/// skipped, where the chain started ("needs driver.devices; driver.init failed: cuInit: ...").
pub fn unmet_need(spec: &Spec, settled: &[CheckResult]) -> Result<(), String> {
    for need in spec.needs {
        let Some(result) = settled.iter().find(|r| r.id == *need) else {
            return Err(format!("needs {need}, which did not run"));
        };
        if !result.status.satisfies() {
            let (root, cause) = root_cause(result, settled);
            return Err(if root == *need {
                format!("needs {need}, which {cause}")
            } else {
                format!("needs {need}; {root} {cause}")
            });
        }
    }
    Ok(())
}

/// The first check in a chain of skips that did not itself skip for want of another, and
/// "failed: <cause>" or "skipped: <reason>" for it.
fn root_cause<'a>(result: &'a CheckResult, settled: &'a [CheckResult]) -> (&'a str, String) {
    let mut current = result;
    for _ in 0..SPECS.len() {
        let next = spec(&current.id)
            .into_iter()
            .flat_map(|s| s.needs)
            .filter_map(|need| settled.iter().find(|r| r.id == *need))
            .find(|r| !r.status.satisfies());
        match next {
            Some(upstream) if current.status == Status::Skip => current = upstream,
            _ => break,
        }
    }
    let verb = match current.status {
        Status::Skip => "was skipped",
        _ => "failed",
    };
    // The cause, without the fix that follows it: the failed check's own reason has that.
    let cause = current.reason.split("; ").next().unwrap_or_default();
    (&current.id, format!("{verb}: {cause}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(id: &str, status: Status, reason: &str) -> CheckResult {
        CheckResult::new(id, status, reason)
    }

    /// Whether `id` is the device check or needs it, directly or through its needs.
    fn needs_the_device(id: &str) -> bool {
        id == DEVICE || spec(id).is_some_and(|s| s.needs.iter().any(|n| needs_the_device(n)))
    }

    #[test]
    fn per_device_checks_are_worker_checks_that_need_the_device() {
        for id in PER_DEVICE {
            let spec = spec(id).unwrap_or_else(|| panic!("{id}: no such check"));
            assert_eq!(spec.side, Side::Worker, "{id}");
            assert!(needs_the_device(id), "{id}");
        }
    }

    #[test]
    fn ids_are_unique_grouped_and_needs_come_first() {
        for (index, spec) in SPECS.iter().enumerate() {
            assert_eq!(
                spec.id.split_once('.').map(|(group, _)| group),
                Some(spec.library),
                "{} is named after its library",
                spec.id
            );
            assert_eq!(
                SPECS.iter().filter(|s| s.id == spec.id).count(),
                1,
                "{} is unique",
                spec.id
            );
            for need in spec.needs {
                let at = SPECS.iter().position(|s| s.id == *need);
                assert!(
                    at.is_some_and(|at| at < index),
                    "{} needs {need}, which must run before it",
                    spec.id
                );
            }
        }
    }

    #[test]
    fn a_skip_names_the_check_needed_and_where_the_chain_started() {
        let settled = [
            result("driver.library", Status::Pass, "ok"),
            result(
                "driver.init",
                Status::Fail,
                "cuInit: CUDA_ERROR_NO_DEVICE (100); check CUDA_VISIBLE_DEVICES",
            ),
            result("driver.devices", Status::Skip, "needs driver.init"),
        ];
        let cublas = spec("cublas.handle").unwrap();
        let with_load = [
            &settled[..],
            &[result("cublas.load", Status::Pass, "12.9.1")],
        ]
        .concat();
        assert_eq!(
            unmet_need(cublas, &with_load).unwrap_err(),
            "needs driver.devices; driver.init failed: cuInit: CUDA_ERROR_NO_DEVICE (100)"
        );
        let absent = [
            &settled[..],
            &[result(
                "cublas.load",
                Status::Skip,
                "cuBLAS is not installed in this combination",
            )],
        ]
        .concat();
        assert_eq!(
            unmet_need(cublas, &absent).unwrap_err(),
            "needs cublas.load, which was skipped: cuBLAS is not installed in this combination"
        );
        assert_eq!(
            unmet_need(spec("driver.devices").unwrap(), &settled).unwrap_err(),
            "needs driver.init, which failed: cuInit: CUDA_ERROR_NO_DEVICE (100)"
        );
        assert!(unmet_need(spec("driver.init").unwrap(), &settled).is_ok());
        assert_eq!(
            unmet_need(spec("cudart.memcpy").unwrap(), &settled).unwrap_err(),
            "needs cudart.load, which did not run"
        );
    }
}
