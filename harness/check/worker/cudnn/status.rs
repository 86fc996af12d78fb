//! cuDNN's status codes in both numberings (8: 0 to 14; 9: a category in the thousands plus a
//! specific error), their C names and what they mean, and the [`Status`] a failed call becomes,
//! read with the library's own error functions while it still remembers why.

use super::sys::{self, RawStatus};
use crate::check::worker::outcome::LibraryError;
use std::ffi::{c_char, CStr};

/// How a cuDNN numbers its statuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Numbering {
    /// cuDNN 8 (and 7): 0 to 14.
    V8,
    /// cuDNN 9: a category in the thousands plus a specific error (1001, 2000, 3000, ...).
    V9,
    /// A major this build does not know.
    Unknown,
}

/// cuDNN 8's `cudnnStatus_t` (`cudnn_ops_infer.h`).
const V8_NAMES: &[(i64, &str)] = &[
    (0, "CUDNN_STATUS_SUCCESS"),
    (1, "CUDNN_STATUS_NOT_INITIALIZED"),
    (2, "CUDNN_STATUS_ALLOC_FAILED"),
    (3, "CUDNN_STATUS_BAD_PARAM"),
    (4, "CUDNN_STATUS_INTERNAL_ERROR"),
    (5, "CUDNN_STATUS_INVALID_VALUE"),
    (6, "CUDNN_STATUS_ARCH_MISMATCH"),
    (7, "CUDNN_STATUS_MAPPING_ERROR"),
    (8, "CUDNN_STATUS_EXECUTION_FAILED"),
    (9, "CUDNN_STATUS_NOT_SUPPORTED"),
    (10, "CUDNN_STATUS_LICENSE_ERROR"),
    (11, "CUDNN_STATUS_RUNTIME_PREREQUISITE_MISSING"),
    (12, "CUDNN_STATUS_RUNTIME_IN_PROGRESS"),
    (13, "CUDNN_STATUS_RUNTIME_FP_OVERFLOW"),
    (14, "CUDNN_STATUS_VERSION_MISMATCH"),
];

/// cuDNN 9's `cudnnStatus_t` (`cudnn_graph.h` of 9.28; the deprecated aliases share these
/// values, except `CUDNN_STATUS_INVALID_VALUE`, 2001).
const V9_NAMES: &[(i64, &str)] = &[
    (0, "CUDNN_STATUS_SUCCESS"),
    (1001, "CUDNN_STATUS_NOT_INITIALIZED"),
    (1002, "CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH"),
    (1003, "CUDNN_STATUS_SERIALIZATION_VERSION_MISMATCH"),
    (1004, "CUDNN_STATUS_DEPRECATED"),
    (1005, "CUDNN_STATUS_LICENSE_ERROR"),
    (1006, "CUDNN_STATUS_RUNTIME_IN_PROGRESS"),
    (1007, "CUDNN_STATUS_RUNTIME_FP_OVERFLOW"),
    (1008, "CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED"),
    (2000, "CUDNN_STATUS_BAD_PARAM"),
    (2001, "CUDNN_STATUS_INVALID_VALUE"),
    (2002, "CUDNN_STATUS_BAD_PARAM_NULL_POINTER"),
    (2003, "CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER"),
    (2004, "CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED"),
    (2005, "CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND"),
    (2006, "CUDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT"),
    (2007, "CUDNN_STATUS_BAD_PARAM_STREAM_MISMATCH"),
    (2008, "CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH"),
    (2009, "CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES"),
    (2010, "CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE"),
    (2011, "CUDNN_STATUS_BAD_PARAM_CUDA_GRAPH_MISMATCH"),
    (2012, "CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE"),
    (3000, "CUDNN_STATUS_NOT_SUPPORTED"),
    (3001, "CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN"),
    (3002, "CUDNN_STATUS_NOT_SUPPORTED_SHAPE"),
    (3003, "CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE"),
    (3004, "CUDNN_STATUS_NOT_SUPPORTED_LAYOUT"),
    (3005, "CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER"),
    (3006, "CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDART"),
    (3007, "CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH"),
    (
        3008,
        "CUDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING",
    ),
    (3009, "CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE"),
    (
        3010,
        "CUDNN_STATUS_NOT_SUPPORTED_SHARED_MEMORY_INSUFFICIENT",
    ),
    (3011, "CUDNN_STATUS_NOT_SUPPORTED_PADDING"),
    (3012, "CUDNN_STATUS_NOT_SUPPORTED_BAD_LAUNCH_PARAM"),
    (3013, "CUDNN_STATUS_NOT_SUPPORTED_CUDA_GRAPH_NATIVE_API"),
    (3014, "CUDNN_STATUS_NOT_SUPPORTED_INVALID_DYNAMIC_SHAPE"),
    (4000, "CUDNN_STATUS_INTERNAL_ERROR"),
    (4001, "CUDNN_STATUS_INTERNAL_ERROR_COMPILATION_FAILED"),
    (4002, "CUDNN_STATUS_INTERNAL_ERROR_UNEXPECTED_VALUE"),
    (4003, "CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED"),
    (4004, "CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED"),
    (4005, "CUDNN_STATUS_INTERNAL_ERROR_BAD_LAUNCH_PARAM"),
    (4006, "CUDNN_STATUS_INTERNAL_ERROR_TEXTURE_CREATION_FAILED"),
    (5000, "CUDNN_STATUS_EXECUTION_FAILED"),
    (5001, "CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER"),
    (5002, "CUDNN_STATUS_EXECUTION_FAILED_CUBLAS"),
    (5003, "CUDNN_STATUS_EXECUTION_FAILED_CUDART"),
    (5004, "CUDNN_STATUS_EXECUTION_FAILED_CURAND"),
];

/// The C name of status `code` in `numbering`, if this build knows it.
pub fn status_name(numbering: Numbering, code: i64) -> Option<&'static str> {
    let table = match numbering {
        Numbering::V8 => V8_NAMES,
        Numbering::V9 => V9_NAMES,
        Numbering::Unknown => return None,
    };
    table
        .iter()
        .find(|(c, _)| *c == code)
        .map(|(_, name)| *name)
}

/// What a status means where cuDNN's own words (cuDNN 8 has none beyond the name) would leave a
/// person guessing; from NVIDIA's `cudnnStatus_t` documentation.
fn meaning(name: &str) -> Option<&'static str> {
    Some(match name {
        "CUDNN_STATUS_NOT_INITIALIZED" => {
            "cuDNN could not initialise: usually no usable GPU, a driver too old for the CUDA \
             runtime cuDNN was built for, or a CUDA runtime that could not start"
        }
        "CUDNN_STATUS_ALLOC_FAILED" => "cuDNN could not allocate memory",
        "CUDNN_STATUS_ARCH_MISMATCH" | "CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH" => {
            "this cuDNN build has no kernels for the GPU's compute capability"
        }
        "CUDNN_STATUS_EXECUTION_FAILED" => "a cuDNN kernel failed to run on the GPU",
        "CUDNN_STATUS_VERSION_MISMATCH" | "CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH" => {
            "cuDNN's sub-libraries are of different versions"
        }
        "CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED"
        | "CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE" => {
            "a cuDNN sub-library (or a library it needs) could not be loaded"
        }
        "CUDNN_STATUS_RUNTIME_PREREQUISITE_MISSING"
        | "CUDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING" => {
            "a library cuDNN needs at run time (cuBLAS, NVRTC) is missing or too old"
        }
        _ => return None,
    })
}

/// A failed cuDNN call's status, named and described while the library still remembers why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    /// The code as the library returned it.
    pub code: i64,
    /// Its C name in the library's numbering (`CUDNN_STATUS_NOT_SUPPORTED`).
    pub name: String,
    /// cuDNN 9's `cudnnGetLastErrorString`, else what the status means.
    pub text: Option<String>,
}

impl LibraryError for Status {
    fn code(&self) -> i64 {
        self.code
    }
    fn name(&self) -> String {
        self.name.clone()
    }
    fn text(&self) -> Option<String> {
        self.text.clone()
    }
}

/// The library's own error functions and its numbering: what turns a code into a [`Status`].
#[derive(Clone, Copy)]
pub struct Errors {
    /// How the library numbers its statuses.
    numbering: Numbering,
    error_string: Option<sys::GetErrorString>,
    last_error_string: Option<sys::GetLastErrorString>,
}

impl Errors {
    /// From the functions [`sys::Api::load`] found.
    pub fn new(numbering: Numbering, api: &sys::Api) -> Errors {
        Errors {
            numbering,
            error_string: api.error_string,
            last_error_string: api.last_error_string,
        }
    }

    /// `code` as a failure. Call it right after the failing call: cuDNN 9 keeps only the
    /// thread's last error.
    pub fn status(&self, code: RawStatus) -> Status {
        let last = self.last_error_string.and_then(|f| {
            let mut buffer = [0 as c_char; 2048];
            // SAFETY: the buffer is writable for its whole length, which is what is passed.
            unsafe { f(buffer.as_mut_ptr(), buffer.len()) };
            // The function writes a NUL within max_size; the last byte is zero regardless.
            buffer[buffer.len() - 1] = 0;
            // SAFETY: NUL-terminated within the buffer (forced above).
            let text = unsafe { CStr::from_ptr(buffer.as_ptr()) }.to_string_lossy();
            // One line, as reasons are.
            let text: Vec<&str> = text
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect();
            (!text.is_empty()).then(|| text.join("; "))
        });
        let said = self.error_string.and_then(|f| {
            // SAFETY: cudnnGetErrorString returns a static string (or null) for any code.
            let text = unsafe { f(code) };
            // SAFETY: a non-null result is NUL-terminated and static.
            (!text.is_null()).then(|| {
                unsafe { CStr::from_ptr(text) }
                    .to_string_lossy()
                    .into_owned()
            })
        });
        let code = i64::from(code);
        let name = status_name(self.numbering, code)
            .map(str::to_owned)
            .or(said)
            .unwrap_or_else(|| "CUDNN_STATUS_UNKNOWN".to_owned());
        let text = last.or_else(|| meaning(&name).map(str::to_owned));
        Status { code, name, text }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::worker::outcome::{debug_name, Call};
    use cudarc::cudnn::sys::cudnnStatus_t as S;
    use rstest::rstest;

    #[rstest]
    #[case(Numbering::V8, 0, Some("CUDNN_STATUS_SUCCESS"))]
    #[case(Numbering::V8, 1, Some("CUDNN_STATUS_NOT_INITIALIZED"))]
    #[case(Numbering::V8, 3, Some("CUDNN_STATUS_BAD_PARAM"))]
    #[case(Numbering::V8, 9, Some("CUDNN_STATUS_NOT_SUPPORTED"))]
    #[case(Numbering::V8, 14, Some("CUDNN_STATUS_VERSION_MISMATCH"))]
    #[case(Numbering::V8, 15, None)]
    #[case(Numbering::V8, 3000, None)]
    #[case(Numbering::V9, 1001, Some("CUDNN_STATUS_NOT_INITIALIZED"))]
    #[case(Numbering::V9, 1008, Some("CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED"))]
    #[case(Numbering::V9, 2001, Some("CUDNN_STATUS_INVALID_VALUE"))]
    #[case(Numbering::V9, 3000, Some("CUDNN_STATUS_NOT_SUPPORTED"))]
    #[case(
        Numbering::V9,
        3014,
        Some("CUDNN_STATUS_NOT_SUPPORTED_INVALID_DYNAMIC_SHAPE")
    )]
    #[case(Numbering::V9, 5002, Some("CUDNN_STATUS_EXECUTION_FAILED_CUBLAS"))]
    #[case(Numbering::V9, 3, None)]
    #[case(Numbering::V9, 3015, None)]
    #[case(Numbering::Unknown, 0, None)]
    fn statuses_are_named_in_their_own_numbering(
        #[case] numbering: Numbering,
        #[case] code: i64,
        #[case] name: Option<&str>,
    ) {
        assert_eq!(status_name(numbering, code), name);
    }

    /// Every variant of cudarc's `cudnn-09021` status enum.
    const CUDARC_STATUSES: &[S] = &[
        S::CUDNN_STATUS_SUCCESS,
        S::CUDNN_STATUS_NOT_INITIALIZED,
        S::CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH,
        S::CUDNN_STATUS_SERIALIZATION_VERSION_MISMATCH,
        S::CUDNN_STATUS_DEPRECATED,
        S::CUDNN_STATUS_LICENSE_ERROR,
        S::CUDNN_STATUS_RUNTIME_IN_PROGRESS,
        S::CUDNN_STATUS_RUNTIME_FP_OVERFLOW,
        S::CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED,
        S::CUDNN_STATUS_BAD_PARAM,
        S::CUDNN_STATUS_BAD_PARAM_NULL_POINTER,
        S::CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER,
        S::CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED,
        S::CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND,
        S::CUDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT,
        S::CUDNN_STATUS_BAD_PARAM_STREAM_MISMATCH,
        S::CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH,
        S::CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES,
        S::CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE,
        S::CUDNN_STATUS_BAD_PARAM_CUDA_GRAPH_MISMATCH,
        S::CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE,
        S::CUDNN_STATUS_NOT_SUPPORTED,
        S::CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN,
        S::CUDNN_STATUS_NOT_SUPPORTED_SHAPE,
        S::CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE,
        S::CUDNN_STATUS_NOT_SUPPORTED_LAYOUT,
        S::CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER,
        S::CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDART,
        S::CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH,
        S::CUDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING,
        S::CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE,
        S::CUDNN_STATUS_NOT_SUPPORTED_SHARED_MEMORY_INSUFFICIENT,
        S::CUDNN_STATUS_NOT_SUPPORTED_PADDING,
        S::CUDNN_STATUS_NOT_SUPPORTED_BAD_LAUNCH_PARAM,
        S::CUDNN_STATUS_NOT_SUPPORTED_CUDA_GRAPH_NATIVE_API,
        S::CUDNN_STATUS_NOT_SUPPORTED_INVALID_DYNAMIC_SHAPE,
        S::CUDNN_STATUS_INTERNAL_ERROR,
        S::CUDNN_STATUS_INTERNAL_ERROR_COMPILATION_FAILED,
        S::CUDNN_STATUS_INTERNAL_ERROR_UNEXPECTED_VALUE,
        S::CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED,
        S::CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED,
        S::CUDNN_STATUS_INTERNAL_ERROR_BAD_LAUNCH_PARAM,
        S::CUDNN_STATUS_INTERNAL_ERROR_TEXTURE_CREATION_FAILED,
        S::CUDNN_STATUS_EXECUTION_FAILED,
        S::CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER,
        S::CUDNN_STATUS_EXECUTION_FAILED_CUBLAS,
        S::CUDNN_STATUS_EXECUTION_FAILED_CUDART,
        S::CUDNN_STATUS_EXECUTION_FAILED_CURAND,
        S::CUDNN_STATUS_INVALID_VALUE,
    ];

    #[test]
    fn cudarcs_enum_is_exactly_the_cudnn_9_numbering() {
        // Routing cuDNN 9.0-9.28 through cudarc is sound only if every code those releases
        // return is a variant: the same codes, by the same names, as the 9.28 header's.
        let mut cudarc: Vec<(i64, String)> = CUDARC_STATUSES
            .iter()
            .map(|s| (*s as i64, debug_name(s)))
            .collect();
        cudarc.sort();
        let mut ours: Vec<(i64, String)> = V9_NAMES
            .iter()
            .map(|(c, n)| (*c, (*n).to_owned()))
            .collect();
        ours.sort();
        assert_eq!(cudarc, ours);
    }

    #[test]
    fn a_status_without_the_librarys_functions_is_still_named_and_explained() {
        let errors = Errors {
            numbering: Numbering::V8,
            error_string: None,
            last_error_string: None,
        };
        let status = errors.status(1);
        assert_eq!(status.name, "CUDNN_STATUS_NOT_INITIALIZED");
        assert_eq!(status.code, 1);
        assert!(status
            .text
            .as_deref()
            .unwrap_or_default()
            .contains("could not initialise"));
        let failed: Result<(), Status> = Err(errors.status(9));
        assert_eq!(
            failed.call("cudnnConvolutionForward").unwrap_err().reason,
            "cudnnConvolutionForward: CUDNN_STATUS_NOT_SUPPORTED (9)"
        );
        let unknown = Errors {
            numbering: Numbering::Unknown,
            ..errors
        }
        .status(77);
        assert_eq!(unknown.name, "CUDNN_STATUS_UNKNOWN");
    }

    unsafe extern "C" fn fake_error_string(_: RawStatus) -> *const c_char {
        c"CUDNN_STATUS_SOMETHING_NEW".as_ptr()
    }

    unsafe extern "C" fn fake_last_error(message: *mut c_char, max_size: usize) {
        let text = c"cudnnCreate: libcudnn_cnn.so.9: cannot open shared object file";
        let bytes = text.to_bytes_with_nul();
        let n = bytes.len().min(max_size);
        // SAFETY: the caller gives a buffer of max_size bytes; n is at most that.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr().cast(), message, n) };
    }

    unsafe extern "C" fn fake_multiline_error(message: *mut c_char, max_size: usize) {
        let bytes = c"first line\n\n  second line  \n".to_bytes_with_nul();
        // SAFETY: the caller gives a buffer of max_size bytes, more than this text.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr().cast(), message, bytes.len().min(max_size))
        };
    }

    #[test]
    fn a_last_error_of_several_lines_becomes_one() {
        let errors = Errors {
            numbering: Numbering::V9,
            error_string: None,
            last_error_string: Some(fake_multiline_error),
        };
        assert_eq!(
            errors.status(3000).text.as_deref(),
            Some("first line; second line")
        );
    }

    #[test]
    fn cudnn_9s_last_error_is_the_text_and_the_librarys_name_fills_gaps() {
        let errors = Errors {
            numbering: Numbering::V9,
            error_string: Some(fake_error_string),
            last_error_string: Some(fake_last_error),
        };
        let status = errors.status(1008);
        assert_eq!(
            status.describe(),
            "CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED (1008): cudnnCreate: libcudnn_cnn.so.9: cannot open shared object file"
        );
        assert_eq!(errors.status(3099).name, "CUDNN_STATUS_SOMETHING_NEW");
    }
}
