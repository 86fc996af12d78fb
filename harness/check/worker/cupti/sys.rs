//! CUPTI's C interface as this check calls it, looked up with `dlsym`: the raw signatures, the
//! status and activity-kind values, the table of functions found in one library, and a status
//! as people read it (the library's own name and message for it).
//!
//! Statuses are read as `int`, never as cudarc's `CUptiResult`: CUPTI 13.0 knows code 46,
//! `CUPTI_ERROR_INVALID_CHIP_NAME`, which cudarc's CUDA 12.9 enum lacks. The signatures, the
//! buffer callbacks' included, are the same in every CUPTI of CUDA 11.x, 12.x and 13.x (cudarc
//! binds them unconditionally for 11.4 to 13.4), and the CUPTI of CUDA 11.8, 12.9 and 13.0 export
//! every function here but `cuptiGetErrorMessage` (CUDA 12.2 on), which 11.8 lacks (checked on
//! the fixture libraries by the tests).

use super::super::outcome::{LibraryError, Outcome};
use super::super::symbols::{find, missing};
use crate::probe::dl::Library;
use std::ffi::{c_char, c_int, c_void, CStr};

/// `CUptiResult`, read as its `int`.
pub type Status = c_int;

/// `CUPTI_SUCCESS`.
pub const SUCCESS: Status = 0;
/// `CUPTI_ERROR_MAX_LIMIT_REACHED`: `cuptiActivityGetNextRecord` found no more records.
pub const MAX_LIMIT_REACHED: Status = 12;
/// `CUPTI_ERROR_NOT_INITIALIZED`.
pub const NOT_INITIALIZED: Status = 15;
/// `CUPTI_ERROR_HARDWARE_BUSY`.
pub const HARDWARE_BUSY: Status = 26;
/// `CUPTI_ERROR_INSUFFICIENT_PRIVILEGES`.
pub const INSUFFICIENT_PRIVILEGES: Status = 35;
/// `CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED`.
pub const MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED: Status = 39;
/// `CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES`.
pub const VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES: Status = 40;

/// `CUPTI_ACTIVITY_KIND_KERNEL` (a `CUpti_ActivityKind`, passed as `int`).
pub const KIND_KERNEL: u32 = 3;
/// `CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL`.
pub const KIND_CONCURRENT_KERNEL: u32 = 10;
/// `CUPTI_ACTIVITY_FLAG_FLUSH_FORCED`: deliver incomplete buffers too.
pub const FLAG_FLUSH_FORCED: u32 = 1;

/// `void (*CUpti_BuffersCallbackRequestFunc)(uint8_t **buffer, size_t *size,
/// size_t *maxNumRecords)`: CUPTI asks for an empty buffer.
pub type BufferRequested =
    unsafe extern "C" fn(buffer: *mut *mut u8, size: *mut usize, max_num_records: *mut usize);

/// `void (*CUpti_BuffersCallbackCompleteFunc)(CUcontext context, uint32_t streamId,
/// uint8_t *buffer, size_t size, size_t validSize)`: CUPTI hands a full buffer back.
pub type BufferCompleted = unsafe extern "C" fn(
    context: *mut c_void,
    stream_id: u32,
    buffer: *mut u8,
    size: usize,
    valid_size: usize,
);

/// `CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc,
/// CUpti_BuffersCallbackCompleteFunc)`.
///
/// # Safety
/// The callbacks must follow CUPTI's buffer contract; they run on CUPTI's threads.
pub type RegisterCallbacks = unsafe extern "C" fn(
    requested: Option<BufferRequested>,
    completed: Option<BufferCompleted>,
) -> Status;

/// `CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind)`; also `cuptiActivityDisable`.
///
/// # Safety
/// The symbol must really have this signature.
pub type Kind = unsafe extern "C" fn(kind: u32) -> Status;

/// `CUptiResult cuptiActivityFlushAll(uint32_t flag)`.
///
/// # Safety
/// The symbol must really have this signature; the completion callback may run on the
/// calling thread before it returns.
pub type FlushAll = unsafe extern "C" fn(flag: u32) -> Status;

/// `CUptiResult cuptiActivityGetNextRecord(uint8_t *buffer, size_t validBufferSizeBytes,
/// CUpti_Activity **record)`: `*record` null gives the first record, else the one after it.
///
/// # Safety
/// `buffer` must hold `valid` bytes of records CUPTI wrote; `record` must be valid to read
/// and write.
pub type NextRecord =
    unsafe extern "C" fn(buffer: *mut u8, valid: usize, record: *mut *mut u8) -> Status;

/// `CUptiResult cuptiGetResultString(CUptiResult result, const char **str)`; also
/// `cuptiGetErrorMessage`.
///
/// # Safety
/// `text` must be valid for writing one pointer; the string it receives is static.
pub type Text = unsafe extern "C" fn(result: Status, text: *mut *const c_char) -> Status;

/// A CUPTI status other than success, with the library's own name and message for it.
#[derive(Debug, Clone, PartialEq)]
pub struct CuptiError {
    code: Status,
    name: Option<String>,
    message: Option<String>,
}

impl LibraryError for CuptiError {
    fn code(&self) -> i64 {
        self.code.into()
    }

    fn name(&self) -> String {
        self.name
            .clone()
            .unwrap_or_else(|| "unknown CUPTI status".to_owned())
    }

    fn text(&self) -> Option<String> {
        let message = self
            .message
            .as_deref()
            .filter(|m| Some(*m) != self.name.as_deref());
        match (message, meaning(self.code)) {
            (Some(message), _) => Some(message.to_owned()),
            (None, meaning) => meaning.map(str::to_owned),
        }
    }
}

/// What a status means where CUPTI's own text says no more than its name.
fn meaning(code: Status) -> Option<&'static str> {
    Some(match code {
        NOT_INITIALIZED => {
            "CUPTI could not initialise: usually a driver older than this CUPTI's CUDA version"
        }
        HARDWARE_BUSY => "the profiling hardware is in use by another client",
        MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED => "another CUPTI client is already subscribed",
        _ => return None,
    })
}

/// The CUPTI functions this check calls, looked up in the combination's library (which is never
/// closed, so the pointers stay valid).
#[derive(Clone, Copy)]
pub struct Api {
    pub register_callbacks: RegisterCallbacks,
    pub enable: Kind,
    pub disable: Kind,
    pub flush_all: FlushAll,
    pub next_record: NextRecord,
    pub result_string: Text,
    /// CUDA 12.2 and later.
    pub error_message: Option<Text>,
}

impl Api {
    /// Every function, or a failure naming the first one `lib` does not export.
    pub fn resolve(lib: &Library) -> Result<Api, Outcome> {
        Api::load(lib).map_err(|name| {
            missing(
                "libcupti",
                name,
                "not a CUPTI library, or one older than CUDA 11",
            )
        })
    }

    /// Looks every function up in `lib`; `Err` names the first one it does not export.
    fn load(lib: &Library) -> Result<Api, &'static CStr> {
        // SAFETY: each type in this module is the function's C signature from NVIDIA's CUPTI
        // headers.
        unsafe {
            Ok(Api {
                register_callbacks: find(lib, c"cuptiActivityRegisterCallbacks")?,
                enable: find(lib, c"cuptiActivityEnable")?,
                disable: find(lib, c"cuptiActivityDisable")?,
                flush_all: find(lib, c"cuptiActivityFlushAll")?,
                next_record: find(lib, c"cuptiActivityGetNextRecord")?,
                result_string: find(lib, c"cuptiGetResultString")?,
                error_message: lib.function(c"cuptiGetErrorMessage"),
            })
        }
    }

    /// `code` with the library's name and message for it.
    pub fn error(&self, code: Status) -> CuptiError {
        /// One of CUPTI's text functions for `code`, if it knows the code.
        fn text(function: Text, code: Status) -> Option<String> {
            let mut text: *const c_char = std::ptr::null();
            // SAFETY: `text` is a valid pointer to write; CUPTI stores a static string there.
            let status = unsafe { function(code, &mut text) };
            if status != SUCCESS || text.is_null() {
                return None;
            }
            // SAFETY: on success a NUL-terminated static string.
            let text = unsafe { CStr::from_ptr(text) }.to_string_lossy();
            // One line: CUPTI's longer messages end in a newline.
            let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
            (!text.is_empty() && text != "<unknown>").then_some(text)
        }
        CuptiError {
            code,
            name: text(self.result_string, code),
            message: self.error_message.and_then(|f| text(f, code)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::worker::fixtures::{fixture, DRIVER};
    use crate::probe::calls;
    use rstest::rstest;

    #[test]
    fn errors_name_themselves_without_the_library() {
        let bare = CuptiError {
            code: 47,
            name: None,
            message: None,
        };
        assert_eq!(bare.describe(), "unknown CUPTI status (47)");
        let known = CuptiError {
            code: 15,
            name: Some("CUPTI_ERROR_NOT_INITIALIZED".into()),
            message: Some("CUPTI_ERROR_NOT_INITIALIZED".into()),
        };
        assert_eq!(
            known.describe(),
            "CUPTI_ERROR_NOT_INITIALIZED (15): CUPTI could not initialise: usually a driver older \
             than this CUPTI's CUDA version"
        );
    }

    #[rstest]
    #[case::cuda_11_8(
        "venv-cu11/lib/python3.11/site-packages/nvidia/cuda_cupti/lib/libcupti.so.11.8",
        18
    )]
    #[case::cuda_12_9(
        "venv-cu12/lib/python3.11/site-packages/nvidia/cuda_cupti/lib/libcupti.so.12",
        28
    )]
    #[case::cuda_13_0("conda/envs/cu13/lib/libcupti.so.13", 130_001)]
    fn every_cupti_exports_the_calls_and_names_the_codes(#[case] path: &str, #[case] version: u32) {
        let lib = Library::open(&fixture(path)).unwrap();
        let api = Api::resolve(&lib).unwrap_or_else(|o| panic!("{}", o.reason));
        assert_eq!(calls::cupti_get_version(&lib), Some(Ok(version)));
        for (code, name) in [
            (SUCCESS, "CUPTI_SUCCESS"),
            (MAX_LIMIT_REACHED, "CUPTI_ERROR_MAX_LIMIT_REACHED"),
            (NOT_INITIALIZED, "CUPTI_ERROR_NOT_INITIALIZED"),
            (HARDWARE_BUSY, "CUPTI_ERROR_HARDWARE_BUSY"),
            (
                INSUFFICIENT_PRIVILEGES,
                "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES",
            ),
            (
                MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED,
                "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED",
            ),
            (
                VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES,
                "CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES",
            ),
        ] {
            assert_eq!(api.error(code).name(), name, "{path}");
        }
        // A code this CUPTI does not know reads as a number, not as undefined behaviour.
        assert_eq!(api.error(4711).describe(), "unknown CUPTI status (4711)");
        assert_eq!(api.error_message.is_some(), version >= 28, "{path}");
    }

    #[test]
    fn a_library_that_is_not_cupti_is_named_as_such() {
        let driver = Library::open(&fixture(DRIVER).join("libcuda.so.1")).unwrap();
        let failure = Api::resolve(&driver).err().expect("libcuda is not CUPTI");
        assert_eq!(
            failure.reason,
            "libcupti does not export cuptiActivityRegisterCallbacks: not a CUPTI library, or one \
             older than CUDA 11"
        );
    }
}
