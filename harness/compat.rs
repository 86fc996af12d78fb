//! NVIDIA's compatibility rules as data.
//!
//! Owns the tables behind every compatibility verdict (GUIDE.md section 5): which CUDA version a
//! driver branch supports, the minor-version-compatibility minimums, the CUDA error codes, which
//! GPU code (SASS or PTX) runs on which compute capability, and which CUDA major a library name
//! belongs to. Each rule is a table plus a small function that reads it; nothing else here
//! decides anything.
//!
//! Sources (checked 2025/2026):
//! - driver table and minimums: CUDA Toolkit Release Notes, "Table 2 CUDA Toolkit and Minimum
//!   Required Driver Version for CUDA Minor Version Compatibility" and "Table 3 CUDA Toolkit and
//!   Corresponding Driver Versions" (release notes of CUDA 13.2 Update 2), and the CUDA
//!   Compatibility guide, "Minor Version Compatibility";
//! - error codes: `cudaError` (runtime API) and `CUresult` (driver API) in the CUDA 12.9 headers
//!   (as bound by cudarc 0.19);
//! - SASS/PTX rules: CUDA C++ Programming Guide (binary and PTX compatibility) and NVIDIA's
//!   "Blackwell and CUDA 12.9 introduce family-specific architecture features".

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

// ---- CUDA versions ------------------------------------------------------------------------------

/// A CUDA version, major and minor (`12.2`). Serialised as the string `"12.2"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CudaVersion {
    pub major: u32,
    pub minor: u32,
}

impl CudaVersion {
    /// `major.minor`.
    pub const fn new(major: u32, minor: u32) -> Self {
        CudaVersion { major, minor }
    }

    /// Parses `12.9`, `12.9.79` or `12.9.1` (anything after the minor is ignored). A bare major
    /// (`12`) is not a version here: `None`.
    pub fn parse(text: &str) -> Option<Self> {
        let mut parts = text.trim().split('.');
        let major = parts.next()?.parse().ok()?;
        let minor = parts.next()?.parse().ok()?;
        Some(CudaVersion { major, minor })
    }

    /// Decodes the integer of `cuDriverGetVersion` / `cudaRuntimeGetVersion` /
    /// `cudaDriverGetVersion` (`1000 * major + 10 * minor`: 12020 is 12.2). Zero, which
    /// `cudaDriverGetVersion` reports when no driver is installed, is `None`.
    pub fn from_api(version: u32) -> Option<Self> {
        (version > 0).then(|| CudaVersion::new(version / 1000, (version % 1000) / 10))
    }

    /// The API integer for this version (12.2 is 12020).
    pub fn to_api(self) -> u32 {
        self.major * 1000 + self.minor * 10
    }
}

impl fmt::Display for CudaVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// Why a string is not a CUDA version.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a CUDA version; expected MAJOR.MINOR such as 12.2")]
pub struct ParseCudaVersionError(pub String);

impl FromStr for CudaVersion {
    type Err = ParseCudaVersionError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        CudaVersion::parse(s).ok_or_else(|| ParseCudaVersionError(s.to_owned()))
    }
}

impl Serialize for CudaVersion {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for CudaVersion {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

// ---- driver versions ----------------------------------------------------------------------------

/// Compares two dotted driver versions numerically, component by component (`535.54.03` <
/// `535.104.05`; a missing component counts as smaller: `580` < `580.65.06`). `None` when either
/// is not a dotted list of numbers.
pub fn compare_driver_versions(a: &str, b: &str) -> Option<Ordering> {
    Some(driver_components(a)?.cmp(&driver_components(b)?))
}

fn driver_components(version: &str) -> Option<Vec<u32>> {
    version
        .trim()
        .split('.')
        .map(|part| part.parse().ok())
        .collect()
}

/// One driver branch and the newest CUDA version its `cuDriverGetVersion` reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DriverBranch {
    /// The driver's major version (`535`).
    pub branch: u32,
    /// What `cuDriverGetVersion` (and `nvidia-smi`'s "CUDA Version") reports for this branch.
    pub cuda: CudaVersion,
    /// The first driver of the branch that a CUDA toolkit release names as its minimum, from
    /// Table 3 of the release notes; `None` where no toolkit shipped with the branch.
    pub first_toolkit_driver: Option<&'static str>,
}

const fn branch(branch: u32, major: u32, minor: u32, first: Option<&'static str>) -> DriverBranch {
    DriverBranch {
        branch,
        cuda: CudaVersion::new(major, minor),
        first_toolkit_driver: first,
    }
}

/// Driver branches, oldest first, with the CUDA version each supports. From the release notes'
/// "CUDA Toolkit and Corresponding Driver Versions" table (the branch of each toolkit's minimum
/// Linux x86_64 driver). R565 shipped with no toolkit: its drivers report 12.7 (as `nvidia-smi`
/// shows for 565.57.01) although there is no CUDA 12.7 toolkit.
pub const DRIVER_BRANCHES: &[DriverBranch] = &[
    branch(410, 10, 0, Some("410.48")),
    branch(418, 10, 1, Some("418.39")),
    branch(440, 10, 2, Some("440.33")),
    branch(450, 11, 0, Some("450.36.06")),
    branch(455, 11, 1, Some("455.23")),
    branch(460, 11, 2, Some("460.27.03")),
    branch(465, 11, 3, Some("465.19.01")),
    branch(470, 11, 4, Some("470.42.01")),
    branch(495, 11, 5, Some("495.29.05")),
    branch(510, 11, 6, Some("510.39.01")),
    branch(515, 11, 7, Some("515.43.04")),
    branch(520, 11, 8, Some("520.61.05")),
    branch(525, 12, 0, Some("525.60.13")),
    branch(530, 12, 1, Some("530.30.02")),
    branch(535, 12, 2, Some("535.54.03")),
    branch(545, 12, 3, Some("545.23.06")),
    branch(550, 12, 4, Some("550.54.14")),
    branch(555, 12, 5, Some("555.42.02")),
    branch(560, 12, 6, Some("560.28.03")),
    branch(565, 12, 7, None),
    branch(570, 12, 8, Some("570.26")),
    branch(575, 12, 9, Some("575.51.03")),
    branch(580, 13, 0, Some("580.65.06")),
    branch(590, 13, 1, Some("590.44.01")),
    branch(595, 13, 2, Some("595.45.04")),
];

/// The newest CUDA version a driver supports, from its version string (`535.261.03` -> 12.2):
/// the entry of the largest branch in [`DRIVER_BRANCHES`] not above the driver's major. For a
/// driver newer than the table this is a lower bound. `None` for drivers older than the table
/// or strings that do not start with a number.
pub fn driver_cuda_version(driver_version: &str) -> Option<CudaVersion> {
    let major: u32 = driver_version.trim().split('.').next()?.parse().ok()?;
    DRIVER_BRANCHES
        .iter()
        .rev()
        .find(|b| b.branch <= major)
        .map(|b| b.cuda)
}

/// The minimum driver for CUDA minor version compatibility within one CUDA major.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MinorVersionMinimum {
    pub cuda_major: u32,
    /// Every runtime of this major runs (with limits) on drivers from this one on.
    pub min_driver: &'static str,
}

/// Minor version compatibility (CUDA 11 and later): Table 2 of the release notes gives the
/// branches (>= 450, >= 525, >= 580); the exact versions are the first drivers NVIDIA names for
/// it (450.80.02 per the table's footnote, 525.60.13 of CUDA 12.0 GA). CUDA 10 and older had no
/// minor version compatibility.
pub const MINOR_VERSION_MINIMUMS: &[MinorVersionMinimum] = &[
    MinorVersionMinimum {
        cuda_major: 11,
        min_driver: "450.80.02",
    },
    MinorVersionMinimum {
        cuda_major: 12,
        min_driver: "525.60.13",
    },
    MinorVersionMinimum {
        cuda_major: 13,
        min_driver: "580",
    },
];

/// The minimum driver for minor version compatibility of a CUDA major, if it has one.
pub fn minor_version_minimum(cuda_major: u32) -> Option<&'static str> {
    MINOR_VERSION_MINIMUMS
        .iter()
        .find(|m| m.cuda_major == cuda_major)
        .map(|m| m.min_driver)
}

/// Whether a CUDA runtime can run on a driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DriverVerdict {
    /// The driver supports the runtime's version (or a newer one).
    Supported,
    /// The runtime is a newer minor of the major the driver supports, and the driver meets the
    /// major's minimum: it works, but features of the newer minor may be missing (error 36) and
    /// PTX from the newer toolkit (NVRTC output included) may fail with
    /// `cudaErrorUnsupportedPtxVersion` (222).
    MinorVersionCompatible,
    /// The driver is too old: `cudaErrorInsufficientDriver` (35).
    TooOld,
}

impl DriverVerdict {
    /// The runtime error code this verdict leads to at initialisation, if any.
    pub fn error_code(self) -> Option<i32> {
        match self {
            DriverVerdict::TooOld => Some(35),
            DriverVerdict::Supported | DriverVerdict::MinorVersionCompatible => None,
        }
    }
}

/// Whether `runtime` (from `cudaRuntimeGetVersion` or the library's version) runs on a driver
/// that supports `driver_cuda` (from `cuDriverGetVersion` or [`driver_cuda_version`]).
///
/// A newer major is [`DriverVerdict::TooOld`]; a newer minor of the same major is
/// [`DriverVerdict::MinorVersionCompatible`] when `driver_version` meets the major's minimum in
/// [`MINOR_VERSION_MINIMUMS`], else too old. Without a driver version string (or with one that
/// does not parse) the minimum cannot be checked and is assumed met.
pub fn runtime_on_driver(
    runtime: CudaVersion,
    driver_cuda: CudaVersion,
    driver_version: Option<&str>,
) -> DriverVerdict {
    if runtime <= driver_cuda {
        return DriverVerdict::Supported;
    }
    if runtime.major != driver_cuda.major {
        return DriverVerdict::TooOld;
    }
    let Some(minimum) = minor_version_minimum(runtime.major) else {
        return DriverVerdict::TooOld;
    };
    match driver_version.and_then(|v| compare_driver_versions(v, minimum)) {
        Some(Ordering::Less) => DriverVerdict::TooOld,
        _ => DriverVerdict::MinorVersionCompatible,
    }
}

// ---- error codes --------------------------------------------------------------------------------

/// One CUDA error code: its names in the runtime and driver APIs, what it means and what to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CudaError {
    pub code: i32,
    /// The `cudaError` name, where the runtime API has this code.
    pub runtime_name: Option<&'static str>,
    /// The `CUresult` name, where the driver API has this code.
    pub driver_name: Option<&'static str>,
    pub meaning: &'static str,
    pub fix: &'static str,
}

/// The error codes stackbench explains. Runtime and driver codes share numbers where both exist;
/// 35 exists only in the runtime API.
pub const CUDA_ERRORS: &[CudaError] = &[
    CudaError {
        code: 3,
        runtime_name: Some("cudaErrorInitializationError"),
        driver_name: Some("CUDA_ERROR_NOT_INITIALIZED"),
        meaning: "the CUDA driver could not be initialised (cuInit failed or was not called)",
        fix: "check that the NVIDIA kernel module is loaded (/proc/driver/nvidia/version, /dev/nvidia*) and that libcuda.so.1 is the driver's own, of the same version as the kernel module",
    },
    CudaError {
        code: 34,
        runtime_name: Some("cudaErrorStubLibrary"),
        driver_name: Some("CUDA_ERROR_STUB_LIBRARY"),
        meaning: "the libcuda that was loaded is the link-time stub from a toolkit's lib64/stubs, not the driver",
        fix: "remove the stubs directory from LD_LIBRARY_PATH, RPATH/RUNPATH and ld.so.conf so that the driver's libcuda.so.1 is found",
    },
    CudaError {
        code: 35,
        runtime_name: Some("cudaErrorInsufficientDriver"),
        driver_name: None,
        meaning: "the installed driver is older than the CUDA runtime (a newer CUDA major, or below the major's minimum driver)",
        fix: "install a driver whose CUDA version (nvidia-smi, cuDriverGetVersion) is at least the runtime's major, or use a runtime of the driver's CUDA major; on data-centre GPUs the cuda-compat package is another way",
    },
    CudaError {
        code: 36,
        runtime_name: Some("cudaErrorCallRequiresNewerDriver"),
        driver_name: Some("CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER"),
        meaning: "the API call needs a newer driver than the installed one (a feature of a newer minor under minor version compatibility)",
        fix: "upgrade the driver to the branch of the runtime's toolkit, or avoid the call",
    },
    CudaError {
        code: 46,
        runtime_name: Some("cudaErrorDevicesUnavailable"),
        driver_name: Some("CUDA_ERROR_DEVICE_UNAVAILABLE"),
        meaning: "the devices are busy or unavailable (exclusive-process compute mode, or in use)",
        fix: "check the compute mode (nvidia-smi -q -d COMPUTE) and the processes holding the GPU",
    },
    CudaError {
        code: 100,
        runtime_name: Some("cudaErrorNoDevice"),
        driver_name: Some("CUDA_ERROR_NO_DEVICE"),
        meaning: "the driver found no CUDA-capable device",
        fix: "check CUDA_VISIBLE_DEVICES, the container's GPU access (--gpus, device nodes) and nvidia-smi",
    },
    CudaError {
        code: 209,
        runtime_name: Some("cudaErrorNoKernelImageForDevice"),
        driver_name: Some("CUDA_ERROR_NO_BINARY_FOR_GPU"),
        meaning: "the code has neither SASS for this GPU's compute capability nor PTX it can be JIT-compiled from",
        fix: "use a build of the library that targets this GPU's architecture (or carries PTX for an older one)",
    },
    CudaError {
        code: 218,
        runtime_name: Some("cudaErrorInvalidPtx"),
        driver_name: Some("CUDA_ERROR_INVALID_PTX"),
        meaning: "the driver's JIT compiler failed to compile the PTX",
        fix: "upgrade the driver, or use SASS built for this GPU",
    },
    CudaError {
        code: 221,
        runtime_name: Some("cudaErrorJitCompilerNotFound"),
        driver_name: Some("CUDA_ERROR_JIT_COMPILER_NOT_FOUND"),
        meaning: "PTX needs JIT compilation but the driver's JIT compiler library (libnvidia-ptxjitcompiler.so.1) is missing",
        fix: "install the driver's libnvidia-ptxjitcompiler, of the same version as libcuda",
    },
    CudaError {
        code: 222,
        runtime_name: Some("cudaErrorUnsupportedPtxVersion"),
        driver_name: Some("CUDA_ERROR_UNSUPPORTED_PTX_VERSION"),
        meaning: "the PTX was produced by a newer toolkit than the driver's JIT compiler understands (typical under minor version compatibility, e.g. NVRTC output)",
        fix: "upgrade the driver to the toolkit's branch, or generate PTX/SASS with a toolkit no newer than the driver",
    },
    CudaError {
        code: 802,
        runtime_name: Some("cudaErrorSystemNotReady"),
        driver_name: Some("CUDA_ERROR_SYSTEM_NOT_READY"),
        meaning: "the system is not ready for CUDA (on NVSwitch systems: the fabric manager is not running)",
        fix: "start nvidia-fabricmanager (same version as the driver) and check its log",
    },
    CudaError {
        code: 803,
        runtime_name: Some("cudaErrorSystemDriverMismatch"),
        driver_name: Some("CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"),
        meaning: "the user-mode libcuda and the kernel-mode driver do not match (often a cuda-compat libcuda from .../compat/ used with a kernel driver it does not support)",
        fix: "make libcuda.so.1 the one installed with the kernel driver, or use a cuda-compat package made for this driver branch",
    },
    CudaError {
        code: 804,
        runtime_name: Some("cudaErrorCompatNotSupportedOnDevice"),
        driver_name: Some("CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE"),
        meaning: "forward compatibility (a cuda-compat libcuda) was used on a GPU that does not support it; it works only on data-centre GPUs",
        fix: "remove .../compat from the library path and upgrade the driver instead",
    },
    CudaError {
        code: 999,
        runtime_name: Some("cudaErrorUnknown"),
        driver_name: Some("CUDA_ERROR_UNKNOWN"),
        meaning: "an unknown internal error",
        fix: "check dmesg for NVIDIA Xid messages and the driver installation; retry with a reboot if the GPU fell off the bus",
    },
];

/// The runtime API (`cudaError`) code `code`, if the table has it.
pub fn runtime_error(code: i32) -> Option<&'static CudaError> {
    CUDA_ERRORS
        .iter()
        .find(|e| e.code == code && e.runtime_name.is_some())
}

/// The driver API (`CUresult`) code `code`, if the table has it.
pub fn driver_error(code: i32) -> Option<&'static CudaError> {
    CUDA_ERRORS
        .iter()
        .find(|e| e.code == code && e.driver_name.is_some())
}

// ---- SASS and PTX -------------------------------------------------------------------------------

/// A GPU's compute capability (`9.0` for H100).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ComputeCapability {
    pub major: u32,
    pub minor: u32,
}

impl ComputeCapability {
    pub const fn new(major: u32, minor: u32) -> Self {
        ComputeCapability { major, minor }
    }

    /// Parses a compute capability (`9.0`) or a target naming one (`sm_90`, `compute_86`).
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        if let Some((major, minor)) = text.split_once('.') {
            return Some(ComputeCapability::new(
                major.parse().ok()?,
                minor.parse().ok()?,
            ));
        }
        parse_target(text).map(|target| target.cc)
    }
}

impl fmt::Display for ComputeCapability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// SASS (machine code for one architecture) or PTX (virtual ISA, JIT-compiled by the driver).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CodeKind {
    Sass,
    Ptx,
}

/// The suffix of a target: none, `a` (architecture-specific, since Hopper) or `f`
/// (family-specific, since CUDA 12.9 with Blackwell).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TargetVariant {
    Generic,
    Family,
    ArchSpecific,
}

/// A parsed GPU code target (`sm_90a`, `compute_100f`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GpuTarget {
    pub kind: CodeKind,
    pub cc: ComputeCapability,
    pub variant: TargetVariant,
}

/// Parses `sm_90`, `sm_90a`, `sm_100f`, `compute_90`, `compute_120a`, also written as nvcc and
/// cuobjdump write them (`--target sm_90`, `-arch=sm_86`, `arch = sm_80`). The last digit is the
/// minor, the digits before it the major (`sm_120` is 12.0). `None` for anything else.
pub fn parse_target(text: &str) -> Option<GpuTarget> {
    let token = text
        .rsplit(|c: char| c.is_whitespace() || c == '=')
        .find(|t| !t.is_empty())?
        .to_ascii_lowercase();
    let (kind, rest) = if let Some(rest) = token.strip_prefix("sm_") {
        (CodeKind::Sass, rest)
    } else if let Some(rest) = token.strip_prefix("compute_") {
        (CodeKind::Ptx, rest)
    } else {
        return None;
    };
    let (digits, variant) = match rest.as_bytes().last()? {
        b'a' => (&rest[..rest.len() - 1], TargetVariant::ArchSpecific),
        b'f' => (&rest[..rest.len() - 1], TargetVariant::Family),
        _ => (rest, TargetVariant::Generic),
    };
    if digits.len() < 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (major, minor) = digits.split_at(digits.len() - 1);
    Some(GpuTarget {
        kind,
        cc: ComputeCapability::new(major.parse().ok()?, minor.parse().ok()?),
        variant,
    })
}

/// Which devices each kind of target runs on, as data: `(kind, variant, rule)`.
///
/// - SASS `sm_XY` runs on compute capability X.Z with Z >= Y (same major only);
/// - `sm_XYa` / `compute_XYa` (architecture-specific) run only on exactly X.Y;
/// - `sm_XYf` / `compute_XYf` (family-specific, CUDA 12.9+) run on the same family, X.Z with
///   Z >= Y (`sm_100f` on 10.0 and 10.3, not on 11.0 or 12.0);
/// - PTX `compute_XY` JIT-compiles for every device of compute capability >= X.Y.
pub const TARGET_RULES: &[(CodeKind, TargetVariant, RunsOn)] = &[
    (
        CodeKind::Sass,
        TargetVariant::Generic,
        RunsOn::SameMajorNewerMinor,
    ),
    (
        CodeKind::Sass,
        TargetVariant::Family,
        RunsOn::SameMajorNewerMinor,
    ),
    (CodeKind::Sass, TargetVariant::ArchSpecific, RunsOn::Exactly),
    (CodeKind::Ptx, TargetVariant::Generic, RunsOn::AnyNewer),
    (
        CodeKind::Ptx,
        TargetVariant::Family,
        RunsOn::SameMajorNewerMinor,
    ),
    (CodeKind::Ptx, TargetVariant::ArchSpecific, RunsOn::Exactly),
];

/// The set of compute capabilities a target runs on, relative to the target's own X.Y.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunsOn {
    /// Exactly X.Y.
    Exactly,
    /// X.Z with Z >= Y.
    SameMajorNewerMinor,
    /// Any compute capability >= X.Y.
    AnyNewer,
}

impl GpuTarget {
    /// Whether code for this target runs (SASS) or JIT-compiles (PTX) on a device of `cc`.
    pub fn runs_on(&self, cc: ComputeCapability) -> bool {
        let rule = TARGET_RULES
            .iter()
            .find(|(kind, variant, _)| *kind == self.kind && *variant == self.variant)
            .map(|(_, _, rule)| *rule)
            .unwrap_or(RunsOn::Exactly);
        match rule {
            RunsOn::Exactly => cc == self.cc,
            RunsOn::SameMajorNewerMinor => cc.major == self.cc.major && cc.minor >= self.cc.minor,
            RunsOn::AnyNewer => cc >= self.cc,
        }
    }
}

/// How a library's GPU code can run on a device.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "via", rename_all = "snake_case")]
pub enum KernelSupport {
    /// Ready machine code: the best SASS entry that runs on the device.
    Sass { arch: String },
    /// No SASS fits; the driver JIT-compiles this PTX at first use (slow first launch, and the
    /// driver must understand the PTX version).
    PtxJit { from: String },
    /// Neither: `cudaErrorNoKernelImageForDevice` (209) at first launch.
    None,
}

/// How code with these SASS (`sm_86`, `sm_90a`) and PTX (`compute_90`) targets runs on a device
/// of `cc`: the newest fitting SASS (the more specific variant on a tie), else the newest PTX the
/// driver can JIT-compile, else [`KernelSupport::None`]. Names that do not parse are ignored.
pub fn kernel_support(cc: ComputeCapability, sass: &[String], ptx: &[String]) -> KernelSupport {
    let best = |names: &[String], kind: CodeKind| {
        names
            .iter()
            .filter_map(|name| Some((parse_target(name)?, name)))
            .filter(|(t, _)| t.kind == kind && t.runs_on(cc))
            .max_by_key(|(t, _)| (t.cc, t.variant))
            .map(|(_, name)| name.clone())
    };
    if let Some(arch) = best(sass, CodeKind::Sass) {
        KernelSupport::Sass { arch }
    } else if let Some(from) = best(ptx, CodeKind::Ptx) {
        KernelSupport::PtxJit { from }
    } else {
        KernelSupport::None
    }
}

// ---- what NVRTC generates for a device ----------------------------------------------------------

/// What a runtime compiler (NVRTC) should generate so that its code runs on a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "image", rename_all = "snake_case")]
pub enum NvrtcCode {
    /// A CUBIN: SASS for `arch` (`sm_90`), the device's own architecture or, where NVRTC cannot
    /// build that one, the newest older minor of the device's major it can (SASS for `sm_80`
    /// runs on 8.9).
    Cubin { arch: ComputeCapability },
    /// PTX for the virtual architecture `arch` (`compute_120`): no SASS this NVRTC can build runs
    /// on the device, so it emits PTX for the newest architecture it knows at or below the
    /// device's and the driver JIT-compiles it at load, as for any GPU newer than its toolkit.
    Ptx { arch: ComputeCapability },
    /// Nothing runs: the device is older than every architecture this NVRTC knows (`sm_35` on
    /// NVRTC 12, whose oldest is `sm_50`).
    None,
}

impl NvrtcCode {
    /// The `--gpu-architecture` value: `sm_90` or `compute_120`; `None` for [`NvrtcCode::None`].
    pub fn target(self) -> Option<String> {
        match self {
            NvrtcCode::Cubin { arch } => Some(format!("sm_{}{}", arch.major, arch.minor)),
            NvrtcCode::Ptx { arch } => Some(format!("compute_{}{}", arch.major, arch.minor)),
            NvrtcCode::None => None,
        }
    }
}

/// What NVRTC generates for a device of `cc`, given the architectures it can build SASS for
/// (`nvrtcGetSupportedArchs`), by the rules of [`TARGET_RULES`]:
///
/// 1. a CUBIN for the newest supported `sm_XY` that runs on the device: the device's own, else an
///    older minor of its major (SASS for `sm_XY` runs on X.Z with Z >= Y);
/// 2. else PTX for the newest supported `compute_XY` at or below the device (PTX JIT-compiles
///    for every newer GPU): the path of a GPU newer than its toolkit (device 15.0, NVRTC up to
///    12.0: `compute_120`), also taken by a device between two architectures NVRTC knows when
///    neither one's SASS runs on it;
/// 3. else nothing: the device is older than all of them.
pub fn nvrtc_code(cc: ComputeCapability, supported: &[ComputeCapability]) -> NvrtcCode {
    let sass = GpuTarget {
        kind: CodeKind::Sass,
        cc,
        variant: TargetVariant::Generic,
    };
    let runs = |arch: &ComputeCapability, kind: CodeKind| {
        GpuTarget {
            kind,
            cc: *arch,
            ..sass
        }
        .runs_on(cc)
    };
    if let Some(arch) = supported.iter().filter(|a| runs(a, CodeKind::Sass)).max() {
        NvrtcCode::Cubin { arch: *arch }
    } else if let Some(arch) = supported.iter().filter(|a| runs(a, CodeKind::Ptx)).max() {
        NvrtcCode::Ptx { arch: *arch }
    } else {
        NvrtcCode::None
    }
}

/// `CUDA_ERROR_UNSUPPORTED_PTX_VERSION`, the driver's answer to PTX newer than its JIT.
pub const UNSUPPORTED_PTX_VERSION: i32 = 222;

/// `CUDA_ERROR_INVALID_PTX`, the driver's answer to PTX its JIT cannot compile.
pub const INVALID_PTX: i32 = 218;

/// Why PTX from NVRTC `nvrtc` (`12.9`) did not load on a driver that supports CUDA `driver`
/// (`cuModuleLoadData`: [`UNSUPPORTED_PTX_VERSION`]), and what to do.
pub fn ptx_newer_than_driver(nvrtc: Option<&str>, driver: Option<CudaVersion>) -> String {
    format!(
        "the PTX from NVRTC {} is newer than this driver's JIT (driver supports CUDA {}): use a \
         toolkit no newer than the driver, or upgrade the driver",
        nvrtc.unwrap_or("(version unknown)"),
        driver.map_or_else(|| "?".to_owned(), |d| d.to_string())
    )
}

// ---- CUDA majors of library names -----------------------------------------------------------------

/// How a library's soname number relates to the CUDA major that ships it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SonameRule {
    /// The soname's first number is the CUDA major (`libcublasLt.so.12` is CUDA 12).
    SameAsCuda,
    /// Its own numbering: `(soname number, CUDA majors that ship it)`.
    Own(&'static [(u32, &'static [u32])]),
}

/// Libraries whose soname tells the CUDA major, by name stem (before `.so`). Majors covered:
/// 10 to 13. The stems under [`SonameRule::Own`] follow their own versions:
/// - cuFFT: 10.x in CUDA 10.1-11.x, 11.x in CUDA 12, 12.x in CUDA 13;
/// - cuSPARSE: 10 in CUDA 10, 11 in CUDA 11, 12 in CUDA 12 and 13 (cuSPARSE 12.6 in CUDA 13);
/// - cuSOLVER: 10 in CUDA 10-11.0, 11 in CUDA 11.1-12.x, 12 in CUDA 13;
/// - cuRAND: 10 in every CUDA from 10 to 13 (tells nothing).
///
/// CUPTI's soname carries the CUDA major (`libcupti.so.11.8`, `.so.12`, `.so.13`) but its file
/// names use the year (`libcupti.so.2025.2.1`): numbers of 100 and more are not CUDA majors.
pub const SONAME_MAJORS: &[(&str, SonameRule)] = &[
    ("libcudart", SonameRule::SameAsCuda),
    ("libcublas", SonameRule::SameAsCuda),
    ("libcublasLt", SonameRule::SameAsCuda),
    ("libnvblas", SonameRule::SameAsCuda),
    ("libnvrtc", SonameRule::SameAsCuda),
    ("libnvrtc.alt", SonameRule::SameAsCuda),
    ("libnvrtc-builtins", SonameRule::SameAsCuda),
    ("libnvrtc-builtins.alt", SonameRule::SameAsCuda),
    ("libnvJitLink", SonameRule::SameAsCuda),
    ("libcupti", SonameRule::SameAsCuda),
    ("libnvjpeg", SonameRule::SameAsCuda),
    ("libnppc", SonameRule::SameAsCuda),
    ("libnppial", SonameRule::SameAsCuda),
    ("libnppicc", SonameRule::SameAsCuda),
    ("libnppidei", SonameRule::SameAsCuda),
    ("libnppif", SonameRule::SameAsCuda),
    ("libnppig", SonameRule::SameAsCuda),
    ("libnppim", SonameRule::SameAsCuda),
    ("libnppist", SonameRule::SameAsCuda),
    ("libnppisu", SonameRule::SameAsCuda),
    ("libnppitc", SonameRule::SameAsCuda),
    ("libnpps", SonameRule::SameAsCuda),
    ("libcufft", SonameRule::Own(CUFFT)),
    ("libcufftw", SonameRule::Own(CUFFT)),
    (
        "libcusparse",
        SonameRule::Own(&[(10, &[10]), (11, &[11]), (12, &[12, 13])]),
    ),
    (
        "libcusolver",
        SonameRule::Own(&[(10, &[10, 11]), (11, &[11, 12]), (12, &[13])]),
    ),
    ("libcurand", SonameRule::Own(&[(10, &[10, 11, 12, 13])])),
];

const CUFFT: &[(u32, &[u32])] = &[(10, &[10, 11]), (11, &[12]), (12, &[13])];

/// Every CUDA major that ships a library of this name (a soname, a file name or a path:
/// `libcufft.so.11` -> `[12]`, `libcusparse.so.12` -> `[12, 13]`). Empty when the name is not in
/// [`SONAME_MAJORS`] or carries no number (`libnvrtc.so`).
pub fn cuda_majors_of_soname(name: &str) -> Vec<u32> {
    let file = name.rsplit('/').next().unwrap_or(name);
    let Some((stem, version)) = file.split_once(".so.") else {
        return Vec::new();
    };
    let Some(number) = version
        .split('.')
        .next()
        .and_then(|n| n.parse::<u32>().ok())
    else {
        return Vec::new();
    };
    match SONAME_MAJORS
        .iter()
        .find(|(s, _)| *s == stem)
        .map(|(_, r)| r)
    {
        Some(SonameRule::SameAsCuda) if number < 100 => vec![number],
        Some(SonameRule::Own(table)) => table
            .iter()
            .find(|(n, _)| *n == number)
            .map(|(_, majors)| majors.to_vec())
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// The CUDA major of a library name when exactly one CUDA major ships it (`libcublasLt.so.12`
/// -> 12, `libcudart.so.11.0` -> 11, `libcufft.so.11` -> 12); `None` when unknown or ambiguous
/// (`libcusparse.so.12`, `libcurand.so.10`).
pub fn cuda_major_of_soname(name: &str) -> Option<u32> {
    match cuda_majors_of_soname(name).as_slice() {
        [major] => Some(*major),
        _ => None,
    }
}

/// The one CUDA major all these names agree on, ignoring names that tell nothing: what a cuDNN
/// library was built for, from the names it needs or opens (cuDNN 8.9 for CUDA 12 opens
/// `libcublasLt.so.12`). `None` when no name tells, or when the names disagree.
pub fn cuda_major_of_names<'a>(names: impl IntoIterator<Item = &'a str>) -> Option<u32> {
    let mut candidates: Option<Vec<u32>> = None;
    for majors in names.into_iter().map(cuda_majors_of_soname) {
        if majors.is_empty() {
            continue;
        }
        candidates = Some(match candidates {
            None => majors,
            Some(current) => current.into_iter().filter(|m| majors.contains(m)).collect(),
        });
    }
    match candidates?.as_slice() {
        [major] => Some(*major),
        _ => None,
    }
}

/// The CUDA major of `cudnnGetCudartVersion()` (12020 -> 12, 11080 -> 11): the CUDA runtime
/// cuDNN was built against, in the `1000 * major + 10 * minor` encoding.
pub fn cudnn_cudart_major(cudnn_get_cudart_version: usize) -> u32 {
    (cudnn_get_cudart_version / 1000) as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn v(major: u32, minor: u32) -> CudaVersion {
        CudaVersion::new(major, minor)
    }

    fn cc(major: u32, minor: u32) -> ComputeCapability {
        ComputeCapability::new(major, minor)
    }

    fn strings(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[rstest]
    #[case("12.2", Some(v(12, 2)))]
    #[case("12.9.79", Some(v(12, 9)))]
    #[case(" 11.8 ", Some(v(11, 8)))]
    #[case("13.0.1", Some(v(13, 0)))]
    #[case("12", None)]
    #[case("12.x", None)]
    #[case("", None)]
    #[case("v12.2", None)]
    fn parses_versions(#[case] text: &str, #[case] expected: Option<CudaVersion>) {
        assert_eq!(CudaVersion::parse(text), expected);
        assert_eq!(text.parse::<CudaVersion>().ok(), expected);
    }

    #[rstest]
    #[case(12020, Some(v(12, 2)))]
    #[case(11080, Some(v(11, 8)))]
    #[case(13000, Some(v(13, 0)))]
    #[case(12090, Some(v(12, 9)))]
    #[case(10010, Some(v(10, 1)))]
    #[case(0, None)]
    fn decodes_api_versions(#[case] api: u32, #[case] expected: Option<CudaVersion>) {
        assert_eq!(CudaVersion::from_api(api), expected);
        if let Some(version) = expected {
            assert_eq!(version.to_api(), api);
        }
    }

    #[test]
    fn version_displays_and_serialises_as_a_string() {
        assert_eq!(v(12, 2).to_string(), "12.2");
        assert_eq!(serde_json::to_string(&v(12, 2)).unwrap(), "\"12.2\"");
        assert_eq!(
            serde_json::from_str::<CudaVersion>("\"12.9.79\"").unwrap(),
            v(12, 9)
        );
        assert!(serde_json::from_str::<CudaVersion>("\"twelve\"").is_err());
        assert!(v(12, 10) > v(12, 9));
        assert!(v(13, 0) > v(12, 9));
    }

    #[rstest]
    #[case("535.54.03", "535.104.05", Some(Ordering::Less))]
    #[case("580", "580.65.06", Some(Ordering::Less))]
    #[case("580.65.06", "580", Some(Ordering::Greater))]
    #[case("450.80.02", "450.80.02", Some(Ordering::Equal))]
    #[case("525.60.13", "525.147.05", Some(Ordering::Less))]
    #[case("535.x", "535", None)]
    fn compares_driver_versions(
        #[case] a: &str,
        #[case] b: &str,
        #[case] expected: Option<Ordering>,
    ) {
        assert_eq!(compare_driver_versions(a, b), expected);
    }

    #[rstest]
    #[case("535.261.03", Some(v(12, 2)))]
    #[case("535.54.03", Some(v(12, 2)))]
    #[case("450.80.02", Some(v(11, 0)))]
    #[case("470.256.02", Some(v(11, 4)))]
    #[case("525.60.13", Some(v(12, 0)))]
    #[case("545.23.08", Some(v(12, 3)))]
    #[case("565.57.01", Some(v(12, 7)))]
    #[case("570.124.06", Some(v(12, 8)))]
    #[case("575.57.08", Some(v(12, 9)))]
    #[case("580.65.06", Some(v(13, 0)))]
    #[case("590.48.01", Some(v(13, 1)))]
    #[case("595.71.05", Some(v(13, 2)))]
    #[case("610.43.02", Some(v(13, 2)))] // newer than the table: a lower bound
    #[case("390.157", None)]
    #[case("not a driver", None)]
    fn maps_drivers_to_cuda(#[case] driver: &str, #[case] expected: Option<CudaVersion>) {
        assert_eq!(driver_cuda_version(driver), expected);
    }

    #[test]
    fn driver_table_is_ordered_and_consistent() {
        for pair in DRIVER_BRANCHES.windows(2) {
            assert!(pair[0].branch < pair[1].branch, "{pair:?}");
            assert!(pair[0].cuda < pair[1].cuda, "{pair:?}");
        }
        for b in DRIVER_BRANCHES {
            if let Some(first) = b.first_toolkit_driver {
                assert_eq!(driver_cuda_version(first), Some(b.cuda), "{b:?}");
            }
        }
        // No CUDA 12.7 toolkit: the branch that reports it has no toolkit driver.
        let r565 = DRIVER_BRANCHES.iter().find(|b| b.cuda == v(12, 7)).unwrap();
        assert_eq!(r565.first_toolkit_driver, None);
    }

    #[rstest]
    #[case::same(v(12, 2), v(12, 2), Some("535.261.03"), DriverVerdict::Supported)]
    #[case::older_minor(v(12, 0), v(12, 2), Some("535.261.03"), DriverVerdict::Supported)]
    #[case::older_major(v(11, 8), v(12, 2), Some("535.261.03"), DriverVerdict::Supported)]
    #[case::newer_minor(
        v(12, 9),
        v(12, 2),
        Some("535.261.03"),
        DriverVerdict::MinorVersionCompatible
    )]
    #[case::newer_major(v(13, 0), v(12, 2), Some("535.261.03"), DriverVerdict::TooOld)]
    #[case::below_minimum_11(v(11, 8), v(11, 0), Some("450.51.06"), DriverVerdict::TooOld)]
    #[case::at_minimum_11(
        v(11, 8),
        v(11, 0),
        Some("450.80.02"),
        DriverVerdict::MinorVersionCompatible
    )]
    #[case::minimum_12(
        v(12, 9),
        v(12, 0),
        Some("525.60.13"),
        DriverVerdict::MinorVersionCompatible
    )]
    #[case::below_minimum_12(v(12, 9), v(12, 0), Some("525.53"), DriverVerdict::TooOld)]
    #[case::minimum_13(
        v(13, 2),
        v(13, 0),
        Some("580.65.06"),
        DriverVerdict::MinorVersionCompatible
    )]
    #[case::no_version(v(12, 9), v(12, 2), None, DriverVerdict::MinorVersionCompatible)]
    #[case::no_minor_compat_before_11(v(10, 2), v(10, 1), Some("418.39"), DriverVerdict::TooOld)]
    fn judges_runtime_on_driver(
        #[case] runtime: CudaVersion,
        #[case] driver_cuda: CudaVersion,
        #[case] driver: Option<&str>,
        #[case] expected: DriverVerdict,
    ) {
        assert_eq!(runtime_on_driver(runtime, driver_cuda, driver), expected);
    }

    #[test]
    fn verdicts_name_their_error_and_serialise() {
        assert_eq!(DriverVerdict::TooOld.error_code(), Some(35));
        assert_eq!(DriverVerdict::MinorVersionCompatible.error_code(), None);
        assert_eq!(
            serde_json::to_string(&DriverVerdict::MinorVersionCompatible).unwrap(),
            "\"minor_version_compatible\""
        );
    }

    #[rstest]
    #[case(
        3,
        Some("cudaErrorInitializationError"),
        Some("CUDA_ERROR_NOT_INITIALIZED")
    )]
    #[case(34, Some("cudaErrorStubLibrary"), Some("CUDA_ERROR_STUB_LIBRARY"))]
    #[case(35, Some("cudaErrorInsufficientDriver"), None)]
    #[case(
        36,
        Some("cudaErrorCallRequiresNewerDriver"),
        Some("CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER")
    )]
    #[case(100, Some("cudaErrorNoDevice"), Some("CUDA_ERROR_NO_DEVICE"))]
    #[case(
        209,
        Some("cudaErrorNoKernelImageForDevice"),
        Some("CUDA_ERROR_NO_BINARY_FOR_GPU")
    )]
    #[case(
        222,
        Some("cudaErrorUnsupportedPtxVersion"),
        Some("CUDA_ERROR_UNSUPPORTED_PTX_VERSION")
    )]
    #[case(
        803,
        Some("cudaErrorSystemDriverMismatch"),
        Some("CUDA_ERROR_SYSTEM_DRIVER_MISMATCH")
    )]
    #[case(
        804,
        Some("cudaErrorCompatNotSupportedOnDevice"),
        Some("CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE")
    )]
    #[case(999, Some("cudaErrorUnknown"), Some("CUDA_ERROR_UNKNOWN"))]
    #[case(12345, None, None)]
    fn names_error_codes(
        #[case] code: i32,
        #[case] runtime: Option<&str>,
        #[case] driver: Option<&str>,
    ) {
        assert_eq!(runtime_error(code).and_then(|e| e.runtime_name), runtime);
        assert_eq!(driver_error(code).and_then(|e| e.driver_name), driver);
    }

    #[test]
    fn error_table_is_unique_and_explained() {
        for (i, e) in CUDA_ERRORS.iter().enumerate() {
            assert!(CUDA_ERRORS[..i].iter().all(|o| o.code != e.code), "{e:?}");
            assert!(e.runtime_name.is_some() || e.driver_name.is_some());
            assert!(!e.meaning.is_empty() && !e.fix.is_empty());
        }
    }

    #[rstest]
    #[case("sm_90", CodeKind::Sass, 9, 0, TargetVariant::Generic)]
    #[case("sm_90a", CodeKind::Sass, 9, 0, TargetVariant::ArchSpecific)]
    #[case("sm_100f", CodeKind::Sass, 10, 0, TargetVariant::Family)]
    #[case("sm_120", CodeKind::Sass, 12, 0, TargetVariant::Generic)]
    #[case("sm_121a", CodeKind::Sass, 12, 1, TargetVariant::ArchSpecific)]
    #[case("compute_90", CodeKind::Ptx, 9, 0, TargetVariant::Generic)]
    #[case("compute_103f", CodeKind::Ptx, 10, 3, TargetVariant::Family)]
    #[case("--target sm_86", CodeKind::Sass, 8, 6, TargetVariant::Generic)]
    #[case("-arch=sm_75", CodeKind::Sass, 7, 5, TargetVariant::Generic)]
    #[case("SM_80", CodeKind::Sass, 8, 0, TargetVariant::Generic)]
    fn parses_targets(
        #[case] text: &str,
        #[case] kind: CodeKind,
        #[case] major: u32,
        #[case] minor: u32,
        #[case] variant: TargetVariant,
    ) {
        assert_eq!(
            parse_target(text),
            Some(GpuTarget {
                kind,
                cc: cc(major, minor),
                variant
            })
        );
    }

    #[rstest]
    #[case("sm_")]
    #[case("sm_9")]
    #[case("sm_90b")]
    #[case("lto_90")]
    #[case("compute_x0")]
    #[case("")]
    fn rejects_other_targets(#[case] text: &str) {
        assert_eq!(parse_target(text), None);
    }

    #[rstest]
    // SASS: same major, minor at least the target's.
    #[case("sm_80", cc(8, 0), true)]
    #[case("sm_80", cc(8, 6), true)]
    #[case("sm_80", cc(8, 9), true)]
    #[case("sm_86", cc(8, 0), false)]
    #[case("sm_80", cc(9, 0), false)]
    #[case("sm_90", cc(10, 0), false)]
    // Architecture-specific: exactly that one.
    #[case("sm_90a", cc(9, 0), true)]
    #[case("sm_100a", cc(10, 3), false)]
    #[case("compute_90a", cc(9, 0), true)]
    #[case("compute_90a", cc(10, 0), false)]
    // Family-specific: later minors of the same family.
    #[case("sm_100f", cc(10, 0), true)]
    #[case("sm_100f", cc(10, 3), true)]
    #[case("sm_103f", cc(10, 0), false)]
    #[case("sm_100f", cc(11, 0), false)]
    #[case("sm_120f", cc(12, 1), true)]
    #[case("compute_100f", cc(10, 3), true)]
    #[case("compute_100f", cc(12, 0), false)]
    // PTX: every device at least as new.
    #[case("compute_90", cc(9, 0), true)]
    #[case("compute_90", cc(12, 0), true)]
    #[case("compute_90", cc(8, 9), false)]
    fn applies_target_rules(
        #[case] target: &str,
        #[case] device: ComputeCapability,
        #[case] runs: bool,
    ) {
        assert_eq!(parse_target(target).unwrap().runs_on(device), runs);
    }

    #[rstest]
    #[case::sass_exact(cc(9, 0), &["sm_80", "sm_86", "sm_90"], &["compute_90"], KernelSupport::Sass { arch: "sm_90".into() })]
    #[case::sass_newest_minor(cc(8, 9), &["sm_80", "sm_86", "sm_90"], &["compute_90"], KernelSupport::Sass { arch: "sm_86".into() })]
    #[case::ptx_on_newer_major(cc(10, 0), &["sm_80", "sm_86", "sm_90"], &["compute_90"], KernelSupport::PtxJit { from: "compute_90".into() })]
    #[case::ptx_on_h100(cc(9, 0), &["sm_50", "sm_86"], &["compute_90"], KernelSupport::PtxJit { from: "compute_90".into() })]
    #[case::newest_ptx(cc(12, 0), &[], &["compute_80", "compute_90"], KernelSupport::PtxJit { from: "compute_90".into() })]
    #[case::arch_specific_preferred(cc(9, 0), &["sm_90", "sm_90a"], &[], KernelSupport::Sass { arch: "sm_90a".into() })]
    #[case::arch_specific_only_exact(cc(10, 3), &["sm_100a"], &["compute_100a"], KernelSupport::None)]
    #[case::family(cc(10, 3), &["sm_100f"], &[], KernelSupport::Sass { arch: "sm_100f".into() })]
    #[case::nothing_fits(cc(7, 5), &["sm_80"], &["compute_80"], KernelSupport::None)]
    #[case::junk_ignored(cc(8, 0), &["garbage", "sm_80"], &[], KernelSupport::Sass { arch: "sm_80".into() })]
    fn picks_kernels(
        #[case] device: ComputeCapability,
        #[case] sass: &[&str],
        #[case] ptx: &[&str],
        #[case] expected: KernelSupport,
    ) {
        assert_eq!(
            kernel_support(device, &strings(sass), &strings(ptx)),
            expected
        );
    }

    #[test]
    fn kernel_support_serialises_with_a_tag() {
        assert_eq!(
            serde_json::to_value(KernelSupport::PtxJit {
                from: "compute_90".into()
            })
            .unwrap(),
            serde_json::json!({"via": "ptx_jit", "from": "compute_90"})
        );
        assert_eq!(
            serde_json::to_value(KernelSupport::None).unwrap(),
            serde_json::json!({"via": "none"})
        );
    }

    /// `(major, minor)` pairs as compute capabilities.
    fn ccs(pairs: &[(u32, u32)]) -> Vec<ComputeCapability> {
        pairs
            .iter()
            .map(|&(major, minor)| cc(major, minor))
            .collect()
    }

    /// NVRTC 12.9's `nvrtcGetSupportedArchs`, 5.0 to 12.1.
    const NVRTC_12_9: &[(u32, u32)] = &[
        (5, 0),
        (5, 2),
        (5, 3),
        (6, 0),
        (6, 1),
        (6, 2),
        (7, 0),
        (7, 2),
        (7, 5),
        (8, 0),
        (8, 6),
        (8, 7),
        (8, 9),
        (9, 0),
        (10, 0),
        (10, 1),
        (10, 3),
        (12, 0),
        (12, 1),
    ];

    /// What NVRTC generates, by CUDA's rules: SASS where some SASS it can build runs on the
    /// device, PTX for the newest older architecture when none does (the JIT path of a GPU newer
    /// than its toolkit), nothing for a device older than all it knows.
    #[rstest]
    // The device's own SASS.
    #[case::h100_on_an_nvrtc_up_to_9_0((9, 0), &[(5, 0), (8, 0), (9, 0)], "cubin", Some("sm_90"))]
    #[case::h100_on_nvrtc_12_9((9, 0), NVRTC_12_9, "cubin", Some("sm_90"))]
    // A device newer than every architecture: PTX for the newest, JIT-compiled by the driver.
    #[case::newer_than_the_newest((15, 0), &[(8, 0), (9, 0), (12, 0)], "ptx", Some("compute_120"))]
    #[case::newer_than_nvrtc_12_9((15, 0), NVRTC_12_9, "ptx", Some("compute_121"))]
    #[case::next_major((10, 0), &[(8, 0), (9, 0)], "ptx", Some("compute_90"))]
    // An unknown minor of a known major: SASS of the older minor runs on it (sm_80 on 8.9)...
    #[case::older_minor_sass_runs((8, 9), &[(8, 0), (9, 0)], "cubin", Some("sm_80"))]
    #[case::newest_older_minor((8, 9), &[(8, 0), (8, 6), (9, 0)], "cubin", Some("sm_86"))]
    #[case::newer_minor_than_the_newest((12, 3), NVRTC_12_9, "cubin", Some("sm_121"))]
    // ... but SASS of a newer minor does not (sm_86 on 8.0), nor of another major (sm_90 on
    // 10.0 above); between majors with no SASS of its own, PTX from the older one JIT-compiles.
    #[case::only_newer_minors((8, 0), &[(8, 6), (9, 0)], "none", None)]
    #[case::between_majors((11, 0), &[(10, 0), (12, 0)], "ptx", Some("compute_100"))]
    // Older than the oldest: nothing runs (sm_35 on NVRTC 12), as before.
    #[case::kepler_on_nvrtc_12((3, 5), NVRTC_12_9, "none", None)]
    #[case::older_than_the_oldest((3, 5), &[(5, 0), (9, 0)], "none", None)]
    #[case::no_architectures((9, 0), &[], "none", None)]
    fn what_nvrtc_generates_for_a_device(
        #[case] device: (u32, u32),
        #[case] supported: &[(u32, u32)],
        #[case] image: &str,
        #[case] target: Option<&str>,
    ) {
        let code = nvrtc_code(cc(device.0, device.1), &ccs(supported));
        assert_eq!(
            serde_json::to_value(code).unwrap()["image"],
            image,
            "{code:?}"
        );
        assert_eq!(code.target().as_deref(), target, "{code:?}");
        // Whatever is chosen runs on the device by the target rules.
        if let Some(target) = code.target() {
            assert!(parse_target(&target)
                .unwrap()
                .runs_on(cc(device.0, device.1)));
        }
    }

    #[test]
    fn ptx_newer_than_the_driver_says_what_to_do() {
        assert_eq!(
            ptx_newer_than_driver(Some("12.9"), Some(v(12, 2))),
            "the PTX from NVRTC 12.9 is newer than this driver's JIT (driver supports CUDA \
             12.2): use a toolkit no newer than the driver, or upgrade the driver"
        );
        assert!(driver_error(UNSUPPORTED_PTX_VERSION)
            .and_then(|e| e.driver_name)
            .is_some_and(|n| n == "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"));
    }

    #[rstest]
    #[case("libcublas.so.12", &[12])]
    #[case("libcublasLt.so.11", &[11])]
    #[case("libcudart.so.12", &[12])]
    #[case("libcudart.so.11.0", &[11])]
    #[case("libcudart.so.12.9.79", &[12])]
    #[case("libnvrtc.so.12", &[12])]
    #[case("libnvrtc.so.11.2", &[11])]
    #[case("libnvrtc-builtins.so.13.0", &[13])]
    #[case("libnvJitLink.so.12", &[12])]
    #[case("libcupti.so.11.8", &[11])]
    #[case("libcupti.so.2025.2.1", &[])]
    #[case("libcufft.so.10", &[10, 11])]
    #[case("libcufft.so.11", &[12])]
    #[case("libcufft.so.12", &[13])]
    #[case("libcusparse.so.12", &[12, 13])]
    #[case("libcusolver.so.11", &[11, 12])]
    #[case("libcurand.so.10", &[10, 11, 12, 13])]
    #[case("/opt/x/lib/libcublasLt.so.12", &[12])]
    #[case("libnvrtc.so", &[])]
    #[case("libcuda.so.1", &[])]
    #[case("libcudnn.so.8", &[])]
    fn knows_cuda_majors_of_sonames(#[case] name: &str, #[case] majors: &[u32]) {
        assert_eq!(cuda_majors_of_soname(name), majors);
        let single = (majors.len() == 1).then(|| majors[0]);
        assert_eq!(cuda_major_of_soname(name), single);
    }

    #[rstest]
    #[case::cudnn8_cu12(&["libcublas.so.12", "libcublasLt.so.12", "libnvrtc.so", "libcuda.so.1"], Some(12))]
    #[case::cudnn8_cu11(&["libcublasLt.so.11", "libcudart.so.11.0"], Some(11))]
    #[case::narrowed(&["libcusparse.so.12", "libcufft.so.11"], Some(12))]
    #[case::ambiguous(&["libcusparse.so.12"], None)]
    #[case::disagree(&["libcublas.so.11", "libcublasLt.so.12"], None)]
    #[case::nothing(&["libz.so.1", "libcuda.so.1"], None)]
    fn agrees_on_a_major(#[case] names: &[&str], #[case] expected: Option<u32>) {
        assert_eq!(cuda_major_of_names(names.iter().copied()), expected);
    }

    #[rstest]
    #[case(12020, 12)]
    #[case(11080, 11)]
    #[case(13000, 13)]
    #[case(10020, 10)]
    fn reads_cudnn_cudart_versions(#[case] version: usize, #[case] major: u32) {
        assert_eq!(cudnn_cudart_major(version), major);
    }

    proptest::proptest! {
        #[test]
        fn version_and_target_parsers_never_panic(text in "\\PC{0,24}") {
            let _ = CudaVersion::parse(&text);
            let _ = ComputeCapability::parse(&text);
            let _ = parse_target(&text);
            let _ = driver_cuda_version(&text);
            let _ = cuda_major_of_soname(&text);
        }

        #[test]
        fn api_versions_round_trip(major in 1u32..100, minor in 0u32..10) {
            let version = CudaVersion::new(major, minor);
            proptest::prop_assert_eq!(CudaVersion::from_api(version.to_api()), Some(version));
        }
    }
}
