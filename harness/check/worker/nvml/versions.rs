//! What `driver.nvml` compares: the driver and CUDA versions NVML reports against those of the
//! combination's `libcuda.so.1` (and the loaded kernel module's), and the verdict on them.

use super::count_devices;
use crate::check::worker::outcome::Outcome;
use crate::compat::{compare_driver_versions, CudaVersion};
use serde_json::json;
use std::cmp::Ordering;

/// The loaded kernel module's version from `/proc/driver/nvidia/version` (`NVRM version:
/// NVIDIA UNIX x86_64 Kernel Module  535.261.03  ...`, or `... Open Kernel Module for x86_64
/// 580.65.06 ...`): the first word that is a driver version, numbers joined by dots.
pub fn kernel_module_version(text: &str) -> Option<String> {
    let line = text.lines().find(|l| l.starts_with("NVRM version:"))?;
    line.split_whitespace()
        .find(|word| word.contains('.') && compare_driver_versions(word, word).is_some())
        .map(str::to_owned)
}

/// What `driver.nvml` compares.
#[derive(Debug, Clone, PartialEq)]
pub struct Versions {
    /// `nvmlSystemGetDriverVersion`: the running driver's version.
    pub nvml_driver: String,
    /// `nvmlSystemGetCudaDriverVersion_v2` (NVML asks the `libcuda.so.1` it loads).
    pub nvml_cuda: Option<CudaVersion>,
    /// Whether the combination has a `libcuda.so.1`.
    pub has_library: bool,
    /// The version in the real file name of the combination's `libcuda.so.1`.
    pub library_driver: Option<String>,
    /// `cuDriverGetVersion` of the combination's `libcuda.so.1` (`driver.library`).
    pub library_cuda: Option<CudaVersion>,
    /// Whether that `libcuda.so.1` is a forward-compatibility one (in a `compat` directory).
    pub compat: bool,
    /// `nvmlDeviceGetCount_v2`.
    pub devices: u32,
}

/// The verdict of `driver.nvml` on its readings.
pub fn judge_agreement(v: &Versions) -> Outcome {
    let nvml = &v.nvml_driver;
    let cuda = |c: Option<CudaVersion>| c.map_or_else(|| "?".to_owned(), |c| c.to_string());
    let mut details = serde_json::Map::new();
    details.insert("driver_version".into(), json!(nvml));
    details.insert("cuda_driver_version".into(), json!(cuda(v.nvml_cuda)));
    if let Some(library) = &v.library_driver {
        details.insert("libcuda_version".into(), json!(library));
    }
    let with_details = |outcome: Outcome| {
        details
            .iter()
            .fold(outcome, |o, (key, value)| o.detail(key, value.clone()))
    };
    if let Some(failure) = disagreement(v) {
        return with_details(failure);
    }
    let devices = count_devices(v.devices as usize);
    let supports = match v.nvml_cuda.or(v.library_cuda) {
        Some(c) => format!(" (CUDA {c})"),
        None => String::new(),
    };
    let reason = match (&v.library_driver, v.has_library) {
        (Some(library), _) if v.compat => format!(
            "NVML reports driver {nvml}{supports}; the forward-compatibility libcuda.so.1 \
             {library} is newer, as it must be; {devices}"
        ),
        (Some(_), _) => {
            format!("NVML reports driver {nvml}{supports}, as libcuda.so.1 is; {devices}")
        }
        (None, true) => format!(
            "NVML reports driver {nvml}{supports}; libcuda.so.1's file name carries no version \
             to compare with; {devices}"
        ),
        (None, false) => format!(
            "NVML reports driver {nvml}{supports}; no libcuda.so.1 in this combination to \
             compare with; {devices}"
        ),
    };
    with_details(Outcome::pass(reason))
}

/// The failure when NVML and the combination's `libcuda.so.1` are of different drivers (a
/// forward-compatibility `libcuda.so.1` must be the newer), or support different CUDA versions.
fn disagreement(v: &Versions) -> Option<Outcome> {
    let nvml = &v.nvml_driver;
    if let Some(library) = v.library_driver.as_ref().filter(|l| *l != nvml) {
        let newer = compare_driver_versions(library, nvml) == Some(Ordering::Greater);
        match (v.compat, newer) {
            (true, true) => {}
            (true, false) => {
                return Some(Outcome::fail(format!(
                    "NVML reports driver {nvml} but the forward-compatibility libcuda.so.1 is \
                     {library}, not newer than it: a compat package older than the running \
                     driver fails with CUDA_ERROR_SYSTEM_DRIVER_MISMATCH (803); take its \
                     directory off the search path"
                )))
            }
            (false, _) => {
                return Some(Outcome::fail(format!(
                    "NVML reports driver {nvml} but libcuda.so.1 is {library}: user-space \
                     libraries of one driver with the kernel module of another (\"Driver/library \
                     version mismatch\"); reboot or reinstall the driver"
                )))
            }
        }
    }
    match (v.nvml_cuda, v.library_cuda) {
        (Some(nvml_cuda), Some(library_cuda)) if nvml_cuda != library_cuda => {
            Some(Outcome::fail(format!(
                "NVML's libcuda.so.1 supports CUDA {nvml_cuda} but the combination's supports \
                 {library_cuda}: NVML loaded another driver's libcuda.so.1 than the combination; \
                 keep one driver's libraries on the search path"
            )))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::check::Status;
    use rstest::rstest;

    fn versions() -> Versions {
        Versions {
            nvml_driver: "535.261.03".into(),
            nvml_cuda: Some(CudaVersion::new(12, 2)),
            has_library: true,
            library_driver: Some("535.261.03".into()),
            library_cuda: Some(CudaVersion::new(12, 2)),
            compat: false,
            devices: 1,
        }
    }

    #[rstest]
    #[case::agree(
        versions(),
        Status::Pass,
        "NVML reports driver 535.261.03 (CUDA 12.2), as libcuda.so.1 is; 1 device"
    )]
    #[case::mismatch(
        Versions { nvml_driver: "550.54.15".into(), ..versions() },
        Status::Fail,
        "NVML reports driver 550.54.15 but libcuda.so.1 is 535.261.03: user-space libraries of \
         one driver with the kernel module of another (\"Driver/library version mismatch\"); \
         reboot or reinstall the driver"
    )]
    #[case::cuda_mismatch(
        Versions { nvml_cuda: Some(CudaVersion::new(12, 4)), ..versions() },
        Status::Fail,
        "NVML's libcuda.so.1 supports CUDA 12.4 but the combination's supports 12.2: NVML loaded \
         another driver's libcuda.so.1 than the combination; keep one driver's libraries on the \
         search path"
    )]
    #[case::compat_newer(
        Versions { library_driver: Some("550.54.15".into()), compat: true, devices: 2, ..versions() },
        Status::Pass,
        "NVML reports driver 535.261.03 (CUDA 12.2); the forward-compatibility libcuda.so.1 \
         550.54.15 is newer, as it must be; 2 devices"
    )]
    #[case::compat_newer_by_number(
        Versions { nvml_driver: "580.9.1".into(), library_driver: Some("580.65.06".into()), compat: true, ..versions() },
        Status::Pass,
        "NVML reports driver 580.9.1 (CUDA 12.2); the forward-compatibility libcuda.so.1 \
         580.65.06 is newer, as it must be; 1 device"
    )]
    #[case::compat_older(
        Versions { library_driver: Some("470.82.01".into()), compat: true, ..versions() },
        Status::Fail,
        "NVML reports driver 535.261.03 but the forward-compatibility libcuda.so.1 is \
         470.82.01, not newer than it: a compat package older than the running driver fails \
         with CUDA_ERROR_SYSTEM_DRIVER_MISMATCH (803); take its directory off the search path"
    )]
    #[case::unversioned_file(
        Versions { library_driver: None, nvml_cuda: None, ..versions() },
        Status::Pass,
        "NVML reports driver 535.261.03 (CUDA 12.2); libcuda.so.1's file name carries no \
         version to compare with; 1 device"
    )]
    #[case::no_libcuda(
        Versions { library_driver: None, has_library: false, library_cuda: None, nvml_cuda: None, devices: 0, ..versions() },
        Status::Pass,
        "NVML reports driver 535.261.03; no libcuda.so.1 in this combination to compare with; \
         0 devices"
    )]
    fn agreement_verdicts(#[case] v: Versions, #[case] status: Status, #[case] reason: &str) {
        let outcome = judge_agreement(&v);
        assert_eq!((outcome.status, outcome.reason.as_str()), (status, reason));
        assert_eq!(outcome.details["driver_version"], json!(v.nvml_driver));
    }

    #[rstest]
    #[case::proprietary(
        "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.261.03  Wed Jun  4 17:40:39 UTC 2025\n\
         GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n",
        Some("535.261.03")
    )]
    #[case::open(
        "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.65.06  Release Build  (dvs-builder@U16-I3-B03-4-3)  Sun Jul 27 06:54:38 UTC 2025\n",
        Some("580.65.06")
    )]
    #[case::other("something else\n", None)]
    fn kernel_module_versions(#[case] text: &str, #[case] expected: Option<&str>) {
        assert_eq!(kernel_module_version(text).as_deref(), expected);
    }
}
