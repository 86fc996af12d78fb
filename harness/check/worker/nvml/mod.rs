//! The NVML checks: NVML (the driver's `libnvidia-ml.so.1`, by the path the request names)
//! initialises and agrees with the driver library the combination loaded, and every device is
//! healthy: persistence mode on, no uncorrected ECC errors, no pages pending retirement, no
//! pending or failed row remapping, clocks not throttled.
//!
//! This module owns the two entry points and NVML's initialisation with the reasons it fails.
//! Calls go through nvml-wrapper, which looks every symbol up on its own and turns a missing
//! one into an error, never a panic; the two calls it does not wrap (row remapping, clocks
//! event reasons) use its raw symbol table the same way. Turning readings into a verdict is
//! plain functions of plain data ([`versions::judge_agreement`], [`health::judge_health`]),
//! tested without NVML.

pub(crate) mod clocks;
mod errors;
mod findings;
pub(crate) mod health;
mod versions;

use super::driver::driver_file_version;
use super::outcome::{Call, Checked, LibraryError, Outcome};
use super::session::Session;
use crate::compat::CudaVersion;
use health::DeviceHealth;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::Nvml;
use std::path::Path;
use versions::{judge_agreement, kernel_module_version, Versions};

/// Where Linux says which NVIDIA kernel module is loaded.
const KERNEL_MODULE_VERSION: &str = "/proc/driver/nvidia/version";

/// `driver.nvml`: NVML initialises, and its driver and CUDA versions are those of the
/// combination's `libcuda.so.1`. The initialised NVML is kept for `driver.health`.
pub fn agreement(s: &mut Session) -> Checked {
    let Some(path) = s.request.nvml.clone() else {
        return Err(Outcome::fail(no_nvml(s.request.driver.as_deref())));
    };
    let kernel = crate::hostfs::read_to_string(
        std::path::Path::new(KERNEL_MODULE_VERSION),
        crate::hostfs::TEXT,
    )
    .ok()
    .and_then(|text| kernel_module_version(&text));
    let nvml_file = file_version(&path);
    let nvml = Nvml::builder()
        .lib_path(path.as_os_str())
        .init()
        .map_err(|e| init_failure(&path, nvml_file.as_deref(), kernel.as_deref(), &e))?;
    let nvml_driver = nvml
        .sys_driver_version()
        .call("nvmlSystemGetDriverVersion")?;
    let nvml_cuda = nvml.sys_cuda_driver_version();
    let devices = nvml.device_count().call("nvmlDeviceGetCount_v2")?;
    s.keep(nvml);
    let library = s.request.driver.clone();
    let versions = Versions {
        nvml_driver,
        nvml_cuda: nvml_cuda
            .as_ref()
            .ok()
            .and_then(|&v| u32::try_from(v).ok())
            .and_then(CudaVersion::from_api),
        library_driver: library.as_deref().and_then(file_version),
        library_cuda: s.driver_cuda,
        compat: library
            .as_deref()
            .is_some_and(|l| crate::diagnose::driver::is_under(l, "compat")),
        has_library: library.is_some(),
        devices,
    };
    let mut outcome = judge_agreement(&versions)
        .detail("nvml_path", path.display().to_string())
        .detail("device_count", devices);
    if let Some(version) = nvml_file {
        outcome = outcome.detail("nvml_library_version", version);
    }
    if let Some(version) = kernel {
        outcome = outcome.detail("kernel_module_version", version);
    }
    if let Err(e) = nvml_cuda {
        outcome = outcome.detail(
            "cuda_driver_version_error",
            format!("nvmlSystemGetCudaDriverVersion_v2: {}", e.describe()),
        );
    }
    Ok(outcome)
}

/// `driver.health`: every device NVML lists, read and judged.
pub fn health(s: &mut Session) -> Checked {
    let Some(nvml) = s.kept::<Nvml>() else {
        return Err(Outcome::fail(
            "NVML was not initialised (driver.nvml kept no handle)",
        ));
    };
    let count = nvml.device_count().call("nvmlDeviceGetCount_v2")?;
    let devices: Vec<DeviceHealth> = (0..count)
        .map(|index| health::read_device(nvml, index))
        .collect();
    Ok(health::judge_health(&devices))
}

/// Why there is no NVML to check, given the combination's `libcuda.so.1`.
fn no_nvml(driver: Option<&Path>) -> String {
    match driver {
        None => "no libnvidia-ml.so.1: NVIDIA driver not installed (the loader finds no \
                 libnvidia-ml.so.1 or libcuda.so.1); install the driver, or give --driver-dir DIR"
            .into(),
        Some(libcuda) => format!(
            "no libnvidia-ml.so.1 beside {} or on the loader's path: NVML comes with the driver; \
             install the driver's NVML (on Debian, libnvidia-ml1), or give --driver-dir DIR with \
             both libraries",
            libcuda.display()
        ),
    }
}

/// The failure of `nvmlInit_v2` (or of loading NVML), with the fix for the common causes.
fn init_failure(
    path: &Path,
    nvml_version: Option<&str>,
    kernel: Option<&str>,
    error: &NvmlError,
) -> Outcome {
    let shown = path.display();
    let reason = match error {
        NvmlError::LibloadingError(e) => format!("cannot load {shown}: {e}"),
        NvmlError::FailedToLoadSymbol(e) => format!(
            "{shown} does not export nvmlInit_v2 ({e}): not NVIDIA's NVML, or one too old to use"
        ),
        _ => {
            let call = format!("nvmlInit_v2: {}", error.describe());
            match init_fix(error, nvml_version, kernel) {
                Some(fix) => format!("{call}; {fix}"),
                None => call,
            }
        }
    };
    Outcome::fail(reason)
        .detail("nvml_path", shown.to_string())
        .detail("error_code", error.code())
        .detail("error_name", error.name())
}

/// What to do about an `nvmlInit_v2` error, for the causes people meet.
fn init_fix(error: &NvmlError, nvml_version: Option<&str>, kernel: Option<&str>) -> Option<String> {
    Some(match error {
        NvmlError::DriverNotLoaded => "the NVIDIA kernel module is not loaded: no GPU or driver \
             on this host, or it did not load; see dmesg"
            .to_owned(),
        NvmlError::LibRmVersionMismatch => format!(
            "{}: user-space libraries of one driver with the kernel module of another \
             (\"Driver/library version mismatch\"); reboot or reinstall the driver (with \
             --driver-dir, give the libraries of the driver that is running)",
            match (nvml_version, kernel) {
                (Some(n), Some(k)) =>
                    format!("libnvidia-ml.so.1 is {n} but the kernel module is {k}"),
                _ => "NVML and the kernel module are of different driver versions".into(),
            }
        ),
        NvmlError::NoPermission => "this user may not open the NVIDIA device files: check the \
             permissions of /dev/nvidiactl and /dev/nvidia* (often the video group), or give \
             the container the devices"
            .to_owned(),
        NvmlError::LibraryNotFound => "NVML could not load a library it needs: install the \
             complete user-space driver of the same version as libnvidia-ml.so.1"
            .to_owned(),
        _ => return None,
    })
}

/// The driver version in the real file name behind `path` (`libnvidia-ml.so.1` ->
/// `libnvidia-ml.so.535.261.03` -> `535.261.03`); `None` where the name carries none.
fn file_version(path: &Path) -> Option<String> {
    let real = crate::hostfs::real_path(path).unwrap_or_else(|_| path.to_path_buf());
    driver_file_version(&real)
}

/// "1 device", "2 devices".
fn count_devices(n: usize) -> String {
    match n {
        1 => "1 device".to_owned(),
        n => format!("{n} devices"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::protocol::CheckRequest;
    use crate::check::worker::fixtures::{fixture, DRIVER};
    use rstest::rstest;
    use serde_json::json;
    use std::path::PathBuf;

    fn request(nvml: Option<PathBuf>, driver: Option<PathBuf>) -> CheckRequest {
        CheckRequest {
            driver,
            nvml,
            ..CheckRequest::default()
        }
    }

    #[rstest]
    #[case::versions_known(
        NvmlError::LibRmVersionMismatch,
        Some("535.261.03"),
        Some("580.65.06"),
        "; libnvidia-ml.so.1 is 535.261.03 but the kernel module is 580.65.06: user-space \
         libraries of one driver with the kernel module of another (\"Driver/library version \
         mismatch\"); reboot or reinstall the driver (with --driver-dir, give the libraries of \
         the driver that is running)"
    )]
    #[case::versions_unknown(
        NvmlError::LibRmVersionMismatch,
        None,
        Some("580.65.06"),
        "; NVML and the kernel module are of different driver versions: user-space libraries \
         of one driver with the kernel module of another (\"Driver/library version mismatch\"); \
         reboot or reinstall the driver (with --driver-dir, give the libraries of the driver \
         that is running)"
    )]
    #[case::no_permission(
        NvmlError::NoPermission,
        None,
        None,
        "; this user may not open the NVIDIA device files: check the permissions of \
         /dev/nvidiactl and /dev/nvidia* (often the video group), or give the container the \
         devices"
    )]
    #[case::no_fix(NvmlError::Unknown, None, None, "")]
    fn init_failures_say_what_to_do(
        #[case] error: NvmlError,
        #[case] nvml: Option<&str>,
        #[case] kernel: Option<&str>,
        #[case] fix: &str,
    ) {
        let path = Path::new("/x/libnvidia-ml.so.1");
        let outcome = init_failure(path, nvml, kernel, &error);
        assert_eq!(
            outcome.reason,
            format!("nvmlInit_v2: {}{fix}", error.describe())
        );
        assert_eq!(outcome.details["nvml_path"], json!("/x/libnvidia-ml.so.1"));
        assert_eq!(outcome.details["error_name"], json!(error.name()));
    }

    #[test]
    fn no_nvml_is_a_failure_saying_so() {
        let mut s = Session::new(request(None, None));
        let outcome = agreement(&mut s).unwrap_err();
        assert!(
            outcome
                .reason
                .starts_with("no libnvidia-ml.so.1: NVIDIA driver not installed"),
            "{}",
            outcome.reason
        );
    }

    /// The Debian 535 driver's real NVML: without the kernel module (this machine, CI), init
    /// reports the module not loaded, with the fix.
    #[test]
    fn the_fixture_nvml_reports_the_kernel_module_missing() {
        let dir = fixture(DRIVER);
        let mut s = Session::new(request(
            Some(dir.join("libnvidia-ml.so.1")),
            Some(dir.join("libcuda.so.1")),
        ));
        let result = agreement(&mut s);
        if Path::new(KERNEL_MODULE_VERSION).exists() {
            // A host with a driver: init succeeds, or names the mismatch with the 535 library.
            if let Err(outcome) = result {
                assert!(
                    outcome.reason.starts_with("nvmlInit_v2: "),
                    "{}",
                    outcome.reason
                );
            }
            return;
        }
        let outcome = result.unwrap_err();
        assert_eq!(
            outcome.reason,
            "nvmlInit_v2: NVML_ERROR_DRIVER_NOT_LOADED (9): NVIDIA driver is not loaded; the \
             NVIDIA kernel module is not loaded: no GPU or driver on this host, or it did not \
             load; see dmesg"
        );
        assert_eq!(outcome.details["error_code"], json!(9));
        assert!(s.kept::<Nvml>().is_none());
        assert_eq!(
            file_version(&dir.join("libnvidia-ml.so.1")).as_deref(),
            Some("535.261.03")
        );
    }

    #[test]
    fn a_file_that_is_not_nvml_cannot_be_loaded() {
        let dir = tempfile::tempdir().unwrap();
        let fake = dir.path().join("libnvidia-ml.so.1");
        std::fs::write(&fake, b"not an ELF file").unwrap();
        let mut s = Session::new(request(Some(fake.clone()), None));
        let outcome = agreement(&mut s).unwrap_err();
        assert!(
            outcome
                .reason
                .starts_with(&format!("cannot load {}: ", fake.display())),
            "{}",
            outcome.reason
        );
    }

    #[test]
    fn health_without_nvml_fails_plainly() {
        let mut s = Session::new(request(None, None));
        assert_eq!(
            health(&mut s).unwrap_err().reason,
            "NVML was not initialised (driver.nvml kept no handle)"
        );
    }
}
