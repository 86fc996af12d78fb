//! NVML's errors as failures read: the `nvmlReturn_t` code and C name behind each of
//! nvml-wrapper's `NvmlError` variants (and the codes newer than its enum), with the library's
//! text.

use crate::check::worker::outcome::LibraryError;
use nvml_wrapper::error::NvmlError;

impl LibraryError for NvmlError {
    fn code(&self) -> i64 {
        status(self).map_or(-1, |(code, _)| i64::from(code))
    }

    fn name(&self) -> String {
        status(self).map_or_else(|| "nvml-wrapper".to_owned(), |(_, name)| name.to_owned())
    }

    fn text(&self) -> Option<String> {
        match self {
            NvmlError::UnexpectedVariant(_) => None,
            _ => Some(self.to_string()),
        }
    }

    fn describe(&self) -> String {
        match (status(self), self.text()) {
            (Some((code, name)), Some(text)) => format!("{name} ({code}): {text}"),
            (Some((code, name)), None) => format!("{name} ({code})"),
            (None, _) => self.to_string(),
        }
    }
}

/// The `nvmlReturn_t` code and C name behind an error; `None` for nvml-wrapper's own errors
/// (a library that would not load, a missing symbol, text that is not UTF-8).
#[allow(deprecated)] // AlreadyInitialized: NVML no longer returns it, but it is still a code
fn status(error: &NvmlError) -> Option<(u32, &'static str)> {
    use NvmlError as E;
    Some(match error {
        E::Uninitialized => (1, "NVML_ERROR_UNINITIALIZED"),
        E::InvalidArg => (2, "NVML_ERROR_INVALID_ARGUMENT"),
        E::NotSupported => (3, "NVML_ERROR_NOT_SUPPORTED"),
        E::NoPermission => (4, "NVML_ERROR_NO_PERMISSION"),
        E::AlreadyInitialized => (5, "NVML_ERROR_ALREADY_INITIALIZED"),
        E::NotFound => (6, "NVML_ERROR_NOT_FOUND"),
        E::InsufficientSize(_) => (7, "NVML_ERROR_INSUFFICIENT_SIZE"),
        E::InsufficientPower => (8, "NVML_ERROR_INSUFFICIENT_POWER"),
        E::DriverNotLoaded => (9, "NVML_ERROR_DRIVER_NOT_LOADED"),
        E::Timeout => (10, "NVML_ERROR_TIMEOUT"),
        E::IrqIssue => (11, "NVML_ERROR_IRQ_ISSUE"),
        E::LibraryNotFound => (12, "NVML_ERROR_LIBRARY_NOT_FOUND"),
        E::FunctionNotFound => (13, "NVML_ERROR_FUNCTION_NOT_FOUND"),
        E::CorruptedInfoROM => (14, "NVML_ERROR_CORRUPTED_INFOROM"),
        E::GpuLost => (15, "NVML_ERROR_GPU_IS_LOST"),
        E::ResetRequired => (16, "NVML_ERROR_RESET_REQUIRED"),
        E::OperatingSystem => (17, "NVML_ERROR_OPERATING_SYSTEM"),
        E::LibRmVersionMismatch => (18, "NVML_ERROR_LIB_RM_VERSION_MISMATCH"),
        E::InUse => (19, "NVML_ERROR_IN_USE"),
        E::InsufficientMemory => (20, "NVML_ERROR_MEMORY"),
        E::NoData => (21, "NVML_ERROR_NO_DATA"),
        E::VgpuEccNotSupported => (22, "NVML_ERROR_VGPU_ECC_NOT_SUPPORTED"),
        E::Unknown => (999, "NVML_ERROR_UNKNOWN"),
        E::UnexpectedVariant(code) => (*code, newer_status_name(*code)),
        _ => return None,
    })
}

/// Names of the codes newer than nvml-wrapper's enum (nvml.h of CUDA 12.x/13.x).
fn newer_status_name(code: u32) -> &'static str {
    match code {
        23 => "NVML_ERROR_INSUFFICIENT_RESOURCES",
        24 => "NVML_ERROR_FREQ_NOT_SUPPORTED",
        25 => "NVML_ERROR_ARGUMENT_VERSION_MISMATCH",
        26 => "NVML_ERROR_DEPRECATED",
        27 => "NVML_ERROR_NOT_READY",
        28 => "NVML_ERROR_GPU_NOT_FOUND",
        29 => "NVML_ERROR_INVALID_STATE",
        30 => "NVML_ERROR_RESET_TYPE_NOT_SUPPORTED",
        _ => "NVML_ERROR",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case(
        NvmlError::DriverNotLoaded,
        "NVML_ERROR_DRIVER_NOT_LOADED (9): NVIDIA driver is not loaded"
    )]
    #[case(
        NvmlError::UnexpectedVariant(25),
        "NVML_ERROR_ARGUMENT_VERSION_MISMATCH (25)"
    )]
    #[case(NvmlError::FailedToLoadSymbol("nope".into()), "function symbol failed to load: nope")]
    fn errors_describe_themselves(#[case] error: NvmlError, #[case] expected: &str) {
        assert_eq!(error.describe(), expected);
    }
}
