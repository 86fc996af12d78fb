//! `CUptiResult`: the codes this CUPTI answers with, and their names and messages as
//! `cuptiGetResultString` and `cuptiGetErrorMessage` give them. The codes are those of CUDA
//! 13.0's `cupti_result.h` (0 to 46, and 999); the layout test compiles NVIDIA's header (CUDA
//! 12.9's, the newest in the fixtures) and checks the ones answered here.

/// `CUptiResult`, as the C ABI passes it.
pub type CUptiResult = i32;

/// A CUPTI status other than `CUPTI_SUCCESS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Error(pub CUptiResult);

impl Error {
    /// `CUPTI_ERROR_INVALID_PARAMETER`.
    pub const INVALID_PARAMETER: Error = Error(1);
    /// `CUPTI_ERROR_INVALID_OPERATION`: e.g. a flush before any buffer callbacks were registered.
    pub const INVALID_OPERATION: Error = Error(7);
    /// `CUPTI_ERROR_MAX_LIMIT_REACHED`: no more records in the buffer.
    pub const MAX_LIMIT_REACHED: Error = Error(12);
    /// `CUPTI_ERROR_NOT_COMPATIBLE`: `KERNEL` and `CONCURRENT_KERNEL` together.
    pub const NOT_COMPATIBLE: Error = Error(14);
    /// `CUPTI_ERROR_INVALID_KIND`: not an activity kind, or an incomplete record.
    pub const INVALID_KIND: Error = Error(21);
    /// `CUPTI_ERROR_NOT_SUPPORTED`.
    pub const NOT_SUPPORTED: Error = Error(27);
    /// `CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED`: another CUPTI client (Nsight Systems,
    /// Nsight Compute, DCGM, a sanitizer) holds CUPTI.
    pub const MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED: Error = Error(39);
    /// `CUPTI_ERROR_UNKNOWN`.
    pub const UNKNOWN: Error = Error(999);
}

/// `CUPTI_SUCCESS`, or the error's code.
pub fn status(result: Result<(), Error>) -> CUptiResult {
    match result {
        Ok(()) => 0,
        Err(Error(code)) => code,
    }
}

/// Every code CUDA 13.0's CUPTI names, with its name.
const NAMES: [(CUptiResult, &str); 48] = [
    (0, "CUPTI_SUCCESS\0"),
    (1, "CUPTI_ERROR_INVALID_PARAMETER\0"),
    (2, "CUPTI_ERROR_INVALID_DEVICE\0"),
    (3, "CUPTI_ERROR_INVALID_CONTEXT\0"),
    (4, "CUPTI_ERROR_INVALID_EVENT_DOMAIN_ID\0"),
    (5, "CUPTI_ERROR_INVALID_EVENT_ID\0"),
    (6, "CUPTI_ERROR_INVALID_EVENT_NAME\0"),
    (7, "CUPTI_ERROR_INVALID_OPERATION\0"),
    (8, "CUPTI_ERROR_OUT_OF_MEMORY\0"),
    (9, "CUPTI_ERROR_HARDWARE\0"),
    (10, "CUPTI_ERROR_PARAMETER_SIZE_NOT_SUFFICIENT\0"),
    (11, "CUPTI_ERROR_API_NOT_IMPLEMENTED\0"),
    (12, "CUPTI_ERROR_MAX_LIMIT_REACHED\0"),
    (13, "CUPTI_ERROR_NOT_READY\0"),
    (14, "CUPTI_ERROR_NOT_COMPATIBLE\0"),
    (15, "CUPTI_ERROR_NOT_INITIALIZED\0"),
    (16, "CUPTI_ERROR_INVALID_METRIC_ID\0"),
    (17, "CUPTI_ERROR_INVALID_METRIC_NAME\0"),
    (18, "CUPTI_ERROR_QUEUE_EMPTY\0"),
    (19, "CUPTI_ERROR_INVALID_HANDLE\0"),
    (20, "CUPTI_ERROR_INVALID_STREAM\0"),
    (21, "CUPTI_ERROR_INVALID_KIND\0"),
    (22, "CUPTI_ERROR_INVALID_EVENT_VALUE\0"),
    (23, "CUPTI_ERROR_DISABLED\0"),
    (24, "CUPTI_ERROR_INVALID_MODULE\0"),
    (25, "CUPTI_ERROR_INVALID_METRIC_VALUE\0"),
    (26, "CUPTI_ERROR_HARDWARE_BUSY\0"),
    (27, "CUPTI_ERROR_NOT_SUPPORTED\0"),
    (28, "CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED\0"),
    (29, "CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_ON_DEVICE\0"),
    (
        30,
        "CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_ON_NON_P2P_DEVICES\0",
    ),
    (31, "CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_WITH_MPS\0"),
    (32, "CUPTI_ERROR_CDP_TRACING_NOT_SUPPORTED\0"),
    (33, "CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED\0"),
    (34, "CUPTI_ERROR_CUDA_COMPILER_NOT_COMPATIBLE\0"),
    (35, "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES\0"),
    (36, "CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED\0"),
    (37, "CUPTI_ERROR_OPENACC_UNDEFINED_ROUTINE\0"),
    (38, "CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED\0"),
    (39, "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED\0"),
    (
        40,
        "CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES\0",
    ),
    (41, "CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED\0"),
    (42, "CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED\0"),
    (43, "CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED\0"),
    (44, "CUPTI_ERROR_SLI_DEVICE_NOT_SUPPORTED\0"),
    (45, "CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED\0"),
    (46, "CUPTI_ERROR_INVALID_CHIP_NAME\0"),
    (999, "CUPTI_ERROR_UNKNOWN\0"),
];

/// The name of `code` (`CUPTI_ERROR_INVALID_KIND`), NUL-terminated; `None` for a code CUPTI
/// does not know.
pub fn name(code: CUptiResult) -> Option<&'static str> {
    NAMES
        .iter()
        .find(|(c, _)| *c == code)
        .map(|(_, name)| *name)
}

/// What `code` means, NUL-terminated, for the codes this CUPTI answers with; the name for the
/// others it knows.
pub fn message(code: CUptiResult) -> Option<&'static str> {
    Some(match Error(code) {
        Error::INVALID_PARAMETER => "One or more of the parameters is invalid.\0",
        Error::INVALID_OPERATION => {
            "The operation is not allowed now: register the buffer callbacks with \
             cuptiActivityRegisterCallbacks first.\0"
        }
        Error::MAX_LIMIT_REACHED => "There are no more records in the buffer.\0",
        Error::NOT_COMPATIBLE => {
            "The activity kind cannot be enabled together with one already enabled \
             (CUPTI_ACTIVITY_KIND_KERNEL and CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL).\0"
        }
        Error::INVALID_KIND => "The activity kind is invalid, or the record is incomplete.\0",
        Error::NOT_SUPPORTED => {
            "This simulated CUPTI records kernels only (CUPTI_ACTIVITY_KIND_KERNEL and \
             CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL).\0"
        }
        Error::MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED => {
            "Another CUPTI client is subscribed: CUPTI allows one subscriber at a time, and \
             tools such as Nsight Systems, Nsight Compute and compute-sanitizer hold it.\0"
        }
        _ => return name(code),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_is_terminated_and_codes_are_unique() {
        let mut codes: Vec<_> = NAMES.iter().map(|(c, _)| *c).collect();
        codes.dedup();
        assert_eq!(codes.len(), NAMES.len());
        for (code, name) in NAMES {
            assert!(name.ends_with('\0') && !name[..name.len() - 1].contains('\0'));
            assert!(message(code).is_some_and(|m| m.ends_with('\0')), "{code}");
        }
        assert_eq!(name(47), None);
        assert_eq!(message(-1), None);
    }
}
