//! `<library>.load`: open a component's library as a program of the combination would, and ask
//! it its version through its own API (the probe's `sys` layer: version getters only, safe for
//! every CUDA and cuDNN major).

use super::outcome::{Checked, Outcome};
use super::session::{not_installed, Session};
use crate::check::protocol::Component;
use crate::compat::CudaVersion;
use crate::probe::{calls, decode, dl::Library};
use std::ffi::c_int;

/// Loads `component`; a component the combination does not have is skipped.
pub fn load(s: &mut Session, component: Component) -> Checked {
    let Some(file) = s.request.file(component).cloned() else {
        return Ok(Outcome::skip(not_installed(component)));
    };
    let library = s.library(component).map_err(Outcome::fail)?;
    let answer = ask_version(component, library);
    let from = |what: &str| {
        format!(
            "{} {what} from {}",
            file.path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            file.path
                .parent()
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        )
    };
    let outcome = match answer {
        Answer::Version { text, value } => {
            if component == Component::Cudart {
                s.runtime = CudaVersion::from_api(value as u32);
            }
            Outcome::pass(from(&text))
                .detail("version", text)
                .detail("api_version", value)
        }
        Answer::Missing(function) => {
            return Err(Outcome::fail(format!(
                "{} does not export {function}: it is not a {} library",
                file.path.display(),
                component.title()
            )))
        }
        Answer::Failed { function, error } => {
            let said = format!("{function}: {error}");
            let Some(version) = file.version.clone() else {
                return Err(Outcome::fail(said));
            };
            // CUDA 11's cudaRuntimeGetVersion initialises the driver and fails without a device;
            // the package still says which runtime this is.
            if component == Component::Cudart {
                s.runtime = CudaVersion::parse(&version);
            }
            Outcome::pass(from(&format!("{version} (the package's version; {said})")))
                .detail("version", version)
                .detail("api_error", said)
        }
    };
    let outcome = match component {
        Component::Nccl => super::nccl_build::with_built_for(outcome, &file.path),
        _ => outcome,
    };
    Ok(outcome.detail("path", file.path.display().to_string()))
}

/// What a library said when asked its version.
enum Answer {
    /// As people write it (`12.9.1`), and the API's number.
    Version { text: String, value: i64 },
    /// It does not export the function: not the library it is named as.
    Missing(&'static str),
    /// The function returned an error (its name where the library gives one).
    Failed {
        function: &'static str,
        error: String,
    },
}

/// Calls `component`'s version API on `lib`.
fn ask_version(component: Component, lib: &Library) -> Answer {
    let named = |code: c_int, name: Option<String>| match name {
        Some(name) => format!("{name} ({code})"),
        None => format!("status {code}"),
    };
    let version = |function: &'static str,
                   answer: Option<Result<(i64, String), c_int>>,
                   name: &dyn Fn(c_int) -> Option<String>| match answer {
        None => Answer::Missing(function),
        Some(Ok((value, text))) => Answer::Version { text, value },
        Some(Err(code)) => Answer::Failed {
            function,
            error: named(code, name(code)),
        },
    };
    let no_name = |_: c_int| None;
    match component {
        Component::Cudart => version(
            "cudaRuntimeGetVersion",
            calls::cuda_runtime_get_version(lib)
                .map(|r| r.map(|v| (v.into(), decode::cuda_version(v.into())))),
            &|code| calls::cuda_get_error_name(lib, code),
        ),
        Component::Nvrtc => version(
            "nvrtcVersion",
            calls::nvrtc_version(lib).map(|r| {
                r.map(|(major, minor)| {
                    (
                        decode::major_minor_value(major.into(), minor.into()),
                        format!("{major}.{minor}"),
                    )
                })
            }),
            &|code| calls::nvrtc_get_error_string(lib, code),
        ),
        Component::Cublas => version(
            "cublasGetProperty",
            calls::cublas_get_property(lib).map(|r| {
                r.map(|(major, minor, patch)| {
                    (
                        decode::triple_value(major.into(), minor.into(), patch.into()),
                        format!("{major}.{minor}.{patch}"),
                    )
                })
            }),
            &|code| calls::cublas_get_status_name(lib, code),
        ),
        Component::CublasLt => version(
            "cublasLtGetVersion",
            calls::cublas_lt_get_version(lib)
                .map(|v| Ok((v as i64, decode::ten_thousands(v as i64)))),
            &no_name,
        ),
        Component::Cudnn => version(
            "cudnnGetVersion",
            calls::cudnn_get_version(lib).map(|v| Ok((v as i64, decode::cudnn_version(v as i64)))),
            &no_name,
        ),
        Component::Cupti => version(
            "cuptiGetVersion",
            calls::cupti_get_version(lib)
                .map(|r| r.map(|v| (v.into(), format!("API version {v}")))),
            &|code| calls::cupti_get_result_string(lib, code),
        ),
        Component::Cufft => version(
            "cufftGetVersion",
            calls::cufft_get_version(lib)
                .map(|r| r.map(|v| (v.into(), decode::thousands(v.into())))),
            &no_name,
        ),
        Component::Curand => version(
            "curandGetVersion",
            calls::curand_get_version(lib)
                .map(|r| r.map(|v| (v.into(), decode::thousands(v.into())))),
            &no_name,
        ),
        Component::Nccl => version(
            "ncclGetVersion",
            calls::nccl_get_version(lib)
                .map(|r| r.map(|v| (v.into(), decode::nccl_version(v.into())))),
            &|code| calls::nccl_get_error_string(lib, code),
        ),
    }
}
