//! What one check function returns, and the one way library errors become failures: the
//! function called, the error's name and code, and the library's own text for it.

use crate::schema::check::Status;
use crate::tolerance::{self, Comparison, Precision};
use serde_json::Value;
use std::collections::BTreeMap;

/// A check's verdict, reason and details, before the worker times and sends it.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub status: Status,
    pub reason: String,
    pub details: BTreeMap<String, Value>,
}

/// What a check function returns: `Err` is a failure raised with `?` part-way through.
pub type Checked = Result<Outcome, Outcome>;

impl Outcome {
    fn new(status: Status, reason: impl Into<String>) -> Outcome {
        Outcome {
            status,
            reason: reason.into(),
            details: BTreeMap::new(),
        }
    }

    pub fn pass(reason: impl Into<String>) -> Outcome {
        Outcome::new(Status::Pass, reason)
    }

    pub fn warn(reason: impl Into<String>) -> Outcome {
        Outcome::new(Status::Warn, reason)
    }

    pub fn fail(reason: impl Into<String>) -> Outcome {
        Outcome::new(Status::Fail, reason)
    }

    pub fn skip(reason: impl Into<String>) -> Outcome {
        Outcome::new(Status::Skip, reason)
    }

    /// Adds one detail (a version, a measured error, a device's name).
    pub fn detail(mut self, key: &str, value: impl Into<Value>) -> Outcome {
        self.details.insert(key.to_owned(), value.into());
        self
    }

    /// Adds every detail of `other` (kept from an earlier step of the same check).
    pub fn details_from(mut self, other: &BTreeMap<String, Value>) -> Outcome {
        for (key, value) in other {
            self.details
                .entry(key.clone())
                .or_insert_with(|| value.clone());
        }
        self
    }
}

/// The verdict on a GPU result compared with its CPU reference: a pass within the tolerance, a
/// failure beyond it, with the figures as details. `what` names the computation ("SGEMM
/// 96x112 by 112x80").
pub fn verified(what: &str, comparison: Comparison) -> Checked {
    let outcome = if comparison.passed() {
        Outcome::pass(format!("{what} matches the CPU: {comparison}"))
    } else {
        Outcome::fail(format!("{what} differs from the CPU: {comparison}"))
    }
    .detail("relative_error", comparison.relative_error)
    .detail("tolerance", comparison.tolerance);
    if comparison.passed() {
        Ok(outcome)
    } else {
        Err(outcome)
    }
}

/// Compares a GPU result with its CPU reference at `precision` and judges it as [`verified`]
/// does; results of different lengths are a failure.
pub fn verify(what: &str, got: &[f64], want: &[f64], precision: Precision) -> Checked {
    let comparison =
        tolerance::compare(got, want, precision).map_err(|e| Outcome::fail(e.to_string()))?;
    verified(what, comparison)
}

/// Adds details to a check's outcome, whether it passed or failed.
pub trait Finish {
    /// `add` applied to the pass or to the failure.
    fn finish(self, add: impl Fn(Outcome) -> Outcome) -> Checked;
}

impl Finish for Checked {
    fn finish(self, add: impl Fn(Outcome) -> Outcome) -> Checked {
        self.map(&add).map_err(add)
    }
}

/// A library error as people read it: `CUDA_ERROR_NO_DEVICE (100): no CUDA-capable device is
/// detected`. Each library's error type says how to name itself.
pub trait LibraryError {
    /// The status's numeric code.
    fn code(&self) -> i64;
    /// The status's C name (`CUBLAS_STATUS_NOT_INITIALIZED`).
    fn name(&self) -> String;
    /// The library's own description, where it has one.
    fn text(&self) -> Option<String>;

    /// `NAME (code): text`.
    fn describe(&self) -> String {
        match self.text() {
            Some(text) if !text.is_empty() && text != self.name() => {
                format!("{} ({}): {text}", self.name(), self.code())
            }
            _ => format!("{} ({})", self.name(), self.code()),
        }
    }
}

/// Turns a library call's error into this check's failure, naming the function called.
pub trait Call<T> {
    /// `Err(fail("cuInit: CUDA_ERROR_NO_DEVICE (100): ..."))` on error.
    fn call(self, function: &str) -> Result<T, Outcome>;
}

impl<T, E: LibraryError> Call<T> for Result<T, E> {
    fn call(self, function: &str) -> Result<T, Outcome> {
        self.map_err(|e| {
            Outcome::fail(format!("{function}: {}", e.describe()))
                .detail("error_code", e.code())
                .detail("error_name", e.name())
        })
    }
}

/// Implements [`LibraryError`] for a cudarc error type wrapping a status enum (`.0`): the code
/// is the enum's value, the name its variant's (bindgen keeps the C names), the text what
/// `$meaning` (status -> `Option<&'static str>`) says.
macro_rules! status_error {
    ($error:ty, $meaning:expr) => {
        impl $crate::check::worker::outcome::LibraryError for $error {
            fn code(&self) -> i64 {
                self.0 as i64
            }

            fn name(&self) -> String {
                $crate::check::worker::outcome::debug_name(&self.0)
            }

            fn text(&self) -> Option<String> {
                ($meaning)(self.0).map(str::to_owned)
            }
        }
    };
}
pub(crate) use status_error;

/// The name of a status from a cudarc enum's `Debug` form (`CUDA_ERROR_NO_DEVICE`).
pub fn debug_name(status: &impl std::fmt::Debug) -> String {
    format!("{status:?}")
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fake(i64, Option<&'static str>);

    impl LibraryError for Fake {
        fn code(&self) -> i64 {
            self.0
        }
        fn name(&self) -> String {
            "FAKE_ERROR".into()
        }
        fn text(&self) -> Option<String> {
            self.1.map(str::to_owned)
        }
    }

    #[test]
    fn verdicts_on_comparisons() {
        let comparison = |relative_error| Comparison {
            relative_error,
            worst_index: 3,
            tolerance: 1e-4,
        };
        let good = verified("SGEMM 2x2 by 2x2", comparison(1e-7)).unwrap();
        assert_eq!(good.status, Status::Pass);
        assert!(good
            .reason
            .starts_with("SGEMM 2x2 by 2x2 matches the CPU: relative error"));
        assert_eq!(good.details["tolerance"], 1e-4);
        let bad = verified("SGEMM", comparison(1e-2)).unwrap_err();
        assert_eq!(bad.status, Status::Fail);
        assert!(
            bad.reason.contains("differs from the CPU"),
            "{}",
            bad.reason
        );
        let short = verify("x", &[1.0], &[1.0, 2.0], Precision::F32).unwrap_err();
        assert_eq!(short.reason, "the result has 1 elements, the reference 2");
        let tagged = verify("x", &[1.0], &[2.0], Precision::F32).finish(|o| o.detail("n", 1));
        assert_eq!(tagged.unwrap_err().details["n"], 1);
    }

    #[test]
    fn failures_name_the_call_and_the_error() {
        let failed: Result<(), Fake> = Err(Fake(7, Some("it broke")));
        let outcome = failed.call("fooCreate").unwrap_err();
        assert_eq!(outcome.status, Status::Fail);
        assert_eq!(outcome.reason, "fooCreate: FAKE_ERROR (7): it broke");
        assert_eq!(outcome.details["error_code"], 7);
        let bare: Result<(), Fake> = Err(Fake(3, None));
        assert_eq!(bare.call("f").unwrap_err().reason, "f: FAKE_ERROR (3)");
        let ok: Result<u8, Fake> = Ok(1);
        assert_eq!(ok.call("f"), Ok(1));
    }
}
