//! Looking up the functions of the own `sys` layers (cuDNN's, cuFFT's, CUPTI's) with `dlsym`: each by its
//! C name, as the signature its layer declares, and the failure that names the first one a
//! library does not export.

use super::outcome::Outcome;
use crate::probe::dl::Library;
use std::ffi::CStr;

/// The function `name` of `lib` as `F`, or `name` when `lib` does not export it.
///
/// # Safety
/// `F` must be an `unsafe extern "C" fn` pointer type with the symbol's real C signature.
pub unsafe fn find<F: Copy>(lib: &Library, name: &'static CStr) -> Result<F, &'static CStr> {
    // SAFETY: by the caller's contract.
    unsafe { lib.function::<F>(name) }.ok_or(name)
}

/// The failure for a `library` that does not export the function `name`, and what that says
/// about it: `libcufft does not export cufftPlan1d: not a cuFFT library`.
pub fn missing(library: &str, name: &CStr, why: &str) -> Outcome {
    Outcome::fail(format!(
        "{library} does not export {}: {why}",
        name.to_string_lossy()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::worker::fixtures::{fixture, DRIVER};
    use crate::schema::check::Status;

    type DriverGetVersion = unsafe extern "C" fn(*mut std::ffi::c_int) -> std::ffi::c_int;

    #[test]
    fn finds_what_a_library_exports_and_names_what_it_does_not() {
        let lib = Library::open(&fixture(DRIVER).join("libcuda.so.1")).unwrap();
        // SAFETY: only looked up, never called; cuDriverGetVersion has this signature.
        let found = unsafe { find::<DriverGetVersion>(&lib, c"cuDriverGetVersion") };
        assert!(found.is_ok());
        // SAFETY: as above.
        let absent = unsafe { find::<DriverGetVersion>(&lib, c"cufftPlan1d") };
        assert_eq!(absent.err(), Some(c"cufftPlan1d"));
    }

    #[test]
    fn a_missing_function_is_a_failure_that_names_it() {
        let failure = missing("libcufft", c"cufftPlan1d", "not a cuFFT library");
        assert_eq!(
            (failure.status, failure.reason.as_str()),
            (
                Status::Fail,
                "libcufft does not export cufftPlan1d: not a cuFFT library"
            )
        );
    }
}
