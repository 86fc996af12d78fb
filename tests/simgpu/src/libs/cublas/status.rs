//! `cublasStatus_t`, numbered as `cublas_api.h` numbers it, with `cublasGetStatusName`'s and
//! `cublasGetStatusString`'s texts; cuBLASLt answers the same statuses.

use crate::driver::errors::Code;

/// A `cublasStatus_t`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Status(pub i32);

impl Status {
    pub const SUCCESS: Status = Status(0);
    pub const NOT_INITIALIZED: Status = Status(1);
    pub const ALLOC_FAILED: Status = Status(3);
    pub const INVALID_VALUE: Status = Status(7);
    pub const ARCH_MISMATCH: Status = Status(8);
    pub const MAPPING_ERROR: Status = Status(11);
    pub const EXECUTION_FAILED: Status = Status(13);
    pub const INTERNAL_ERROR: Status = Status(14);
    pub const NOT_SUPPORTED: Status = Status(15);
    pub const LICENSE_ERROR: Status = Status(16);

    /// `(name, description)`, NUL-terminated.
    pub fn texts(self) -> (&'static str, &'static str) {
        match self.0 {
            0 => ("CUBLAS_STATUS_SUCCESS\0", "success\0"),
            1 => (
                "CUBLAS_STATUS_NOT_INITIALIZED\0",
                "the library was not initialized\0",
            ),
            3 => (
                "CUBLAS_STATUS_ALLOC_FAILED\0",
                "the resource allocation failed\0",
            ),
            7 => (
                "CUBLAS_STATUS_INVALID_VALUE\0",
                "an invalid numeric value was used as an argument\0",
            ),
            8 => (
                "CUBLAS_STATUS_ARCH_MISMATCH\0",
                "an absent device architectural feature is required\0",
            ),
            11 => (
                "CUBLAS_STATUS_MAPPING_ERROR\0",
                "an access to GPU memory space failed\0",
            ),
            13 => (
                "CUBLAS_STATUS_EXECUTION_FAILED\0",
                "the GPU program failed to execute\0",
            ),
            14 => (
                "CUBLAS_STATUS_INTERNAL_ERROR\0",
                "an internal operation failed\0",
            ),
            15 => (
                "CUBLAS_STATUS_NOT_SUPPORTED\0",
                "the functionality requested is not supported\0",
            ),
            16 => ("CUBLAS_STATUS_LICENSE_ERROR\0", "licensing error\0"),
            _ => ("CUBLAS_STATUS_UNKNOWN\0", "unknown status\0"),
        }
    }

    /// The name without its NUL (for the trace).
    pub fn name(self) -> &'static str {
        self.texts().0.trim_end_matches('\0')
    }

    /// The status of a GEMM whose enqueue the driver refused: no context is
    /// `CUBLAS_STATUS_NOT_INITIALIZED`, a sticky device error `CUBLAS_STATUS_EXECUTION_FAILED`.
    pub fn from_driver(code: Code) -> Status {
        match code {
            Code::INVALID_CONTEXT | Code::NOT_INITIALIZED => Status::NOT_INITIALIZED,
            Code::INVALID_HANDLE => Status::INVALID_VALUE,
            _ => Status::EXECUTION_FAILED,
        }
    }
}

/// A `Result` as the status the C ABI returns.
pub fn code(result: Result<(), Status>) -> i32 {
    match result {
        Ok(()) => 0,
        Err(status) => status.0,
    }
}
