//! A finding: one cause, its evidence, and the one thing to do about it.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// How much a finding matters.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Something will fail.
    Error,
    /// Something may fail, or will be slow, or is fragile.
    Warning,
    /// Worth knowing.
    Info,
}

/// Stable cause codes (GUIDE section 6). Only ever added to.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// A DT_NEEDED library cannot be found on the search path.
    MissingDependency,
    /// A library opened at run time with dlopen cannot be found: loads fine, fails at first use.
    MissingRuntimeDependency,
    /// A 32-bit (or 64-bit) copy where the other class is needed.
    WrongElfClass,
    /// A library for another machine (aarch64 on x86-64).
    WrongMachine,
    /// The resolved library does not define a symbol version this one needs.
    MissingSymbolVersion,
    /// The C library is older than a library needs (`GLIBC_2.xx` not found).
    GlibcTooOld,
    /// An undefined symbol or other dlopen failure.
    LoadFailed,
    /// Loading the library killed the worker process.
    LoadCrashed,
    /// Loading the library did not finish in time.
    LoadHung,
    /// No NVIDIA driver library (`libcuda.so.1`) is reachable.
    NoDriver,
    /// The reachable `libcuda` is a toolkit stub.
    StubDriver,
    /// A forward-compatibility `libcuda` from `cuda-X.Y/compat`.
    CompatDriver,
    /// The driver supports an older CUDA than a runtime needs.
    DriverTooOld,
    /// The runtime is newer than the driver within one major: works, with PTX limits.
    MinorVersionCompatibility,
    /// No GPU is present (the driver said so).
    NoDevice,
    /// cuDNN built for another CUDA major than the runtime beside it.
    CudnnCudaMismatch,
    /// One process's libraries come from different installations.
    MixedInstallations,
    /// The same soname in several places; one copy wins.
    Shadowed,
    /// No SASS and no usable PTX for the GPU.
    NoKernelsForGpu,
    /// Only PTX for the GPU: JIT compilation at first use.
    PtxJitOnly,
    /// An empty `LD_LIBRARY_PATH` entry (means the current directory).
    EmptySearchPathEntry,
    /// A relative `LD_LIBRARY_PATH` entry.
    RelativeSearchPathEntry,
    /// A world-writable directory on the search path.
    WorldWritableSearchPath,
    /// The scan could not read something (truncated, not ELF, loops, ...).
    ScanProblem,
    /// A Windows tree: its DLLs are read, not loaded, and the loader's search is simulated.
    WindowsStatic,
    /// A DLL found only on `PATH`, which Python 3.8 and later do not search.
    PythonDllSearchPath,
    /// A file a wheel's `RECORD` lists is missing or changed: the package must be reinstalled.
    DamagedInstallation,
    /// The loaded kernel module's version differs from the user-space driver's (`libcuda.so.1`,
    /// `libnvidia-ml.so.1`): "Driver/library version mismatch" until a reboot or module reload.
    KernelModuleMismatch,
    /// Another driver version's `libcuda` reachable before the current one, or left behind
    /// beside it (a runfile install over a package install).
    StaleDriverLibrary,
    /// An NVSwitch system without `nvidia-fabricmanager`, or with one of another version than
    /// the driver: error 802 for every CUDA program.
    FabricManager,
    /// A container the NVIDIA Container Toolkit gives no GPU, no `libcuda.so.1` or no NVML
    /// (`NVIDIA_VISIBLE_DEVICES`, `NVIDIA_DRIVER_CAPABILITIES`), or a CDI spec naming a driver
    /// version the host does not have.
    ContainerCapabilities,
    /// A `cuda-compat` `libcuda` on the search path older than the host's driver, or on a GPU
    /// forward compatibility does not support.
    CudaCompat,
    /// An installation not loaded because a user other than its owner could change it (a
    /// group- or world-writable step, files of two users): loading runs its code.
    UntrustedLocation,
    /// An installation of another user, not loaded since stackbench does not run as root.
    NotLoaded,
    /// An `LD_LIBRARY_PATH` entry that a user other than the one running could write, or
    /// another user's: every program of this user, root's included, would run what is there.
    UntrustedSearchPath,
    /// `CUDA_INJECTION64_PATH`, `NVTX_INJECTION64_PATH` or an NCCL plugin variable names a file
    /// another user can change: every CUDA or NCCL program of this user would run it.
    UntrustedCodeVariable,
    /// A `libcuda.so.1` is reachable but no NVIDIA kernel module is loaded, or its device
    /// nodes are missing: every CUDA call fails (after a driver upgrade before a reboot, in a
    /// container started without the GPU).
    NoKernelModule,
    /// A toolkit a build would take has no nvcc (`nvidia-cuda-nvcc-cu12` ships `ptxas` only).
    NoCompiler,
    /// A toolkit with nvcc but without `cuda.h`: "cuda.h: No such file or directory".
    NoHeaders,
    /// A toolkit's `cuda.h` is of another CUDA version than its nvcc or its libraries.
    HeadersMismatch,
    /// Nothing to link `-lcuda` against: no `stubs/libcuda.so`, no driver `libcuda.so`.
    NoLinkStub,
    /// The host compiler is outside what the toolkit's `crt/host_config.h` accepts.
    HostCompilerUnsupported,
    /// `CUDA_HOME`, `CUDA_PATH`, `CUDA_ROOT` or `CUDACXX` names no toolkit that can compile.
    CudaHomeInvalid,
    /// `CUDA_HOME`, `CUDA_PATH`, `CUDA_ROOT`, `CUDACXX` and the `nvcc` on `PATH` name
    /// different toolkits.
    CudaEnvConflict,
    /// Several different nvcc on `PATH`: the first wins, whatever the build meant.
    SeveralNvccOnPath,
    /// `LD_LIBRARY_PATH` holds CUDA libraries of different majors.
    MixedCudaSearchPath,
    /// nvcc without the cicc it runs for device code (pip's `nvidia-nvvm` not installed).
    NoNvvm,
    /// An `nvidia-nvvm` of a newer CUDA release than nvcc: ptxas rejects what its cicc writes.
    NvvmMismatch,
    /// `doctor --build`'s probe did not compile or link, for a reason no file showed.
    BuildProbeFailed,
    /// `CUDA_VISIBLE_DEVICES` hides every GPU.
    NoVisibleDevices,
    /// A framework (PyTorch, JAX, CuPy) built for a CUDA the host's driver cannot run.
    FrameworkCudaUnsupported,
    /// A GPU slower than its same-model peers in the node (or the fleet) beyond a robust bound.
    SlowDevice,
    /// A GPU with fewer active NVLinks than its peers or its model has.
    NvlinkInactive,
    /// The GPU fabric (NVSwitch, Fabric Manager) has not finished setting up, or failed.
    FabricNotReady,
    /// NVML or the topology says two GPUs should reach each other's memory; the driver refuses.
    PeerAccessDenied,
    /// A pair of GPUs copies far below its peer pairs.
    P2pDegraded,
    /// Bytes copied between GPUs, or between a GPU and the host, arrived changed.
    CopyCorrupted,
    /// NCCL moves data between GPUs through host memory or a network transport where the
    /// topology says they reach each other over NVLink or PCIe peer to peer.
    NcclTransportFallback,
    /// NCCL built for a newer CUDA than the driver supports, or a newer major than the runtime
    /// beside it (NCCL brings its own CUDA runtime, linked in).
    NcclCudaMismatch,
    /// NCCL between nodes would fall back to sockets: no rdma-core (`libibverbs.so.1`), no
    /// provider it can load, or a network plugin `NCCL_NET_PLUGIN` names that is not there.
    NcclNetFallback,
    /// Libraries built for another machine than this host's (an aarch64 environment on an
    /// x86_64 node): no program here can load them.
    ForeignArchitecture,
    /// NCCL says GPUDirect RDMA is disabled for a node's HCA (no `nvidia_peermem`, no DMA-BUF):
    /// traffic between nodes is staged through host memory.
    GdrDisabled,
    /// `NCCL_NET` names a network that does not start on a node (InfiniBand without
    /// rdma-core, a plugin that is not there): NCCL tries no other, and every communicator
    /// fails with "invalid usage" ("Failed to initialize any NET plugin").
    NcclNetUnavailable,
    /// Ranks of a multi-node job that never joined its rendezvous before the deadline.
    NcclRankMissing,
    /// An RDMA port (`/sys/class/infiniband/*/ports/*`) that is not ACTIVE.
    RdmaPortDown,
    /// `NCCL_SOCKET_IFNAME` selects no network interface of the host: NCCL cannot bootstrap.
    NcclInterfaceMissing,
    /// A collective's bus bandwidth across nodes far below what the nodes' active RDMA ports
    /// allow.
    NcclBandwidthLow,
    /// An RDMA device behind an IOMMU in translated mode (its group's type `DMA`/`DMA-FQ`, not
    /// `identity`): GPUDirect RDMA and peer traffic through it slow down or fail.
    IommuTranslated,
    /// PCIe ACS redirecting peer requests or completions on a bridge between a GPU and its
    /// nearest HCA: GPUDirect RDMA goes up through the root complex.
    AcsRedirect,
    /// A node of a multi-node job slow with each of its neighbours (`nccl.node_pairs`): its
    /// ports, its HCA, its GPU's PCIe link.
    NcclSlowNode,
    /// A pair of nodes slow together while each is fast with its other neighbour
    /// (`nccl.node_pairs`): a cable or a switch port between them.
    NcclSlowLink,
}

/// One finding of `doctor`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Finding {
    pub severity: Severity,
    pub cause: Cause,
    /// What happened, in one sentence.
    pub message: String,
    /// The library concerned (file name or soname).
    pub library: Option<String>,
    #[serde(default, with = "crate::pathname::option")]
    pub path: Option<PathBuf>,
    /// The installation the library belongs to.
    #[serde(default, with = "crate::pathname::option")]
    pub installation: Option<PathBuf>,
    /// The dependency that is missing or wrong, for dependency findings.
    pub missing: Option<String>,
    /// The library that needs `missing`.
    pub needed_by: Option<String>,
    /// Copies of `missing` elsewhere on the host.
    #[serde(with = "crate::pathname::list")]
    pub candidates: Vec<PathBuf>,
    /// What shows it: paths tried, loader messages, API answers.
    pub evidence: Vec<String>,
    /// The one command or setting that fixes it.
    pub fix: String,
    /// Findings with the same cause, installation and fix, folded into this one: each keeps
    /// what sets it apart (its library or the dependency it misses) and its own evidence.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub also: Vec<Folded>,
}

/// A finding folded into another with the same cause, installation and fix.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Folded {
    pub message: String,
    pub library: Option<String>,
    #[serde(default, with = "crate::pathname::option")]
    pub path: Option<PathBuf>,
    pub missing: Option<String>,
    pub needed_by: Option<String>,
    #[serde(with = "crate::pathname::list")]
    pub candidates: Vec<PathBuf>,
    pub evidence: Vec<String>,
}

impl Finding {
    /// A finding with the required parts; the rest is filled with the builder methods.
    pub fn new(severity: Severity, cause: Cause, message: String, fix: String) -> Finding {
        Finding {
            severity,
            cause,
            message,
            library: None,
            path: None,
            installation: None,
            missing: None,
            needed_by: None,
            candidates: Vec::new(),
            evidence: Vec::new(),
            fix,
            also: Vec::new(),
        }
    }

    pub fn library(mut self, name: impl Into<String>, path: impl Into<PathBuf>) -> Finding {
        self.library = Some(name.into());
        self.path = Some(path.into());
        self
    }

    pub fn installation(mut self, root: impl Into<PathBuf>) -> Finding {
        self.installation = Some(root.into());
        self
    }

    pub fn missing(mut self, name: impl Into<String>, needed_by: impl Into<String>) -> Finding {
        self.missing = Some(name.into());
        self.needed_by = Some(needed_by.into());
        self
    }

    pub fn candidates(mut self, candidates: Vec<PathBuf>) -> Finding {
        self.candidates = candidates;
        self
    }

    pub fn evidence(mut self, evidence: Vec<String>) -> Finding {
        self.evidence = evidence;
        self
    }

    /// This finding and each folded into it, as findings of their own (for flat tables and
    /// comparisons, which want one row per failure).
    pub fn unfolded(&self) -> Vec<Finding> {
        let head = Finding {
            also: Vec::new(),
            ..self.clone()
        };
        let folded: Vec<Finding> = self
            .also
            .iter()
            .map(|a| Finding {
                message: a.message.clone(),
                library: a.library.clone(),
                path: a.path.clone(),
                missing: a.missing.clone(),
                needed_by: a.needed_by.clone(),
                candidates: a.candidates.clone(),
                evidence: a.evidence.clone(),
                ..head.clone()
            })
            .collect();
        std::iter::once(head).chain(folded).collect()
    }

    /// Folds `other` (same cause, installation and fix) into this finding.
    pub fn fold(&mut self, other: Finding) {
        self.also.push(Folded {
            message: other.message,
            library: other.library,
            path: other.path,
            missing: other.missing,
            needed_by: other.needed_by,
            candidates: other.candidates,
            evidence: other.evidence,
        });
    }
}

impl Cause {
    /// Causes at the root of everything else: without a working driver nothing below it can
    /// be judged, so these come first among findings of one severity.
    pub fn is_root(self) -> bool {
        matches!(
            self,
            Cause::KernelModuleMismatch
                | Cause::NoKernelModule
                | Cause::StaleDriverLibrary
                | Cause::FabricManager
                | Cause::CudaCompat
                | Cause::NoDriver
                | Cause::StubDriver
                | Cause::CompatDriver
                | Cause::DriverTooOld
                | Cause::NoDevice
        )
    }
}

impl Cause {
    /// Among root causes, the order to show them in: the kernel module's mismatch first (it
    /// breaks NVML and every CUDA call), then the other causes of a driver upgrade, then the rest.
    pub fn root_rank(self) -> u8 {
        match self {
            Cause::KernelModuleMismatch | Cause::NoKernelModule => 0,
            Cause::StaleDriverLibrary | Cause::FabricManager | Cause::CudaCompat => 1,
            _ if self.is_root() => 2,
            _ => 3,
        }
    }

    /// The stable snake_case code, as in JSON.
    pub fn code(self) -> String {
        serde_json::to_value(self)
            .ok()
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_default()
    }
}

impl Severity {
    /// The stable name, as in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }
}
