//! The reporting layer: which version APIs to call for a library, and each answer as an [`ApiCall`]
//! with its value decoded for people. The table is keyed by component (`cudart`, `cublasLt`, ...).

use super::calls::{self, Call};
use super::decode;
use super::dl::Library;
use super::ApiCall;

impl ApiCall {
    fn new(function: &str) -> ApiCall {
        ApiCall {
            function: function.to_owned(),
            status: None,
            value: None,
            text: None,
        }
    }
}

/// The error-name lookup of one library family.
type Namer<'a> = &'a dyn Fn(i64) -> Option<String>;

/// A call returning a status and, on success, a value: the value decoded, or the error's name.
fn valued<T>(
    function: &str,
    call: Call<T>,
    value: impl Fn(T) -> (i64, Option<String>),
    name: Namer,
) -> Option<ApiCall> {
    let mut report = ApiCall::new(function);
    match call? {
        Ok(v) => {
            let (number, text) = value(v);
            report.status = Some(0);
            report.value = Some(number);
            report.text = text;
        }
        Err(code) => {
            report.status = Some(i64::from(code));
            report.text = name(i64::from(code));
        }
    }
    Some(report)
}

/// A call returning only a status: its name as the text.
fn status_only(function: &str, call: Call<()>, name: Namer) -> Option<ApiCall> {
    let code = match call? {
        Ok(()) => 0,
        Err(code) => i64::from(code),
    };
    let mut report = ApiCall::new(function);
    report.status = Some(code);
    report.text = name(code);
    Some(report)
}

/// A `size_t f(void)` call: no status, the value decoded.
fn plain(function: &str, value: Option<usize>, text: impl Fn(i64) -> String) -> Option<ApiCall> {
    let v = i64::try_from(value?).unwrap_or(i64::MAX);
    let mut report = ApiCall::new(function);
    report.value = Some(v);
    report.text = Some(text(v));
    Some(report)
}

fn cuda(v: i32) -> (i64, Option<String>) {
    (i64::from(v), Some(decode::cuda_version(i64::from(v))))
}

fn count(v: i32) -> (i64, Option<String>) {
    (i64::from(v), None)
}

fn triple((major, minor, patch): (i32, i32, i32)) -> (i64, Option<String>) {
    (
        decode::triple_value(major.into(), minor.into(), patch.into()),
        Some(format!("{major}.{minor}.{patch}")),
    )
}

fn pair<T: Into<i64> + std::fmt::Display>((major, minor): (T, T)) -> (i64, Option<String>) {
    let text = format!("{major}.{minor}");
    (
        decode::major_minor_value(major.into(), minor.into()),
        Some(text),
    )
}

fn nccl(v: i32) -> (i64, Option<String>) {
    (i64::from(v), Some(decode::nccl_version(i64::from(v))))
}

fn thousands(v: i32) -> (i64, Option<String>) {
    (i64::from(v), Some(decode::thousands(i64::from(v))))
}

/// The calls made so far; `observe` runs after each one (the worker looks at what got mapped).
struct Record<'a> {
    calls: Vec<ApiCall>,
    observe: &'a mut dyn FnMut(),
}

impl Record<'_> {
    fn push(&mut self, call: Option<ApiCall>) {
        self.calls.extend(call);
        (self.observe)();
    }
}

/// Calls the version APIs that fit `component` (the file name between `lib` and `.so`) and
/// reports each one the library exports; an unknown component gets no calls. `observe` runs after
/// each call.
pub fn version_calls(component: &str, lib: &Library, observe: &mut dyn FnMut()) -> Vec<ApiCall> {
    let component = component.strip_suffix(".alt").unwrap_or(component);
    let mut out = Record {
        calls: Vec::new(),
        observe,
    };
    match component {
        "cuda" => {
            let name = |code: i64| {
                i32::try_from(code)
                    .ok()
                    .and_then(|c| calls::cu_get_error_name(lib, c))
                    .or_else(|| {
                        crate::compat::driver_error(code as i32)
                            .and_then(|e| e.driver_name)
                            .map(str::to_owned)
                    })
            };
            out.push(valued(
                "cuDriverGetVersion",
                calls::cu_driver_get_version(lib),
                cuda,
                &name,
            ));
            let init = calls::cu_init(lib);
            let initialised = matches!(init, Some(Ok(())));
            out.push(status_only("cuInit", init, &name));
            if initialised {
                out.push(valued(
                    "cuDeviceGetCount",
                    calls::cu_device_get_count(lib),
                    count,
                    &name,
                ));
            }
        }
        "cudart" => {
            let name = |code: i64| {
                i32::try_from(code)
                    .ok()
                    .and_then(|c| calls::cuda_get_error_name(lib, c))
                    .or_else(|| {
                        crate::compat::runtime_error(code as i32)
                            .and_then(|e| e.runtime_name)
                            .map(str::to_owned)
                    })
            };
            out.push(valued(
                "cudaRuntimeGetVersion",
                calls::cuda_runtime_get_version(lib),
                cuda,
                &name,
            ));
            out.push(valued(
                "cudaDriverGetVersion",
                calls::cuda_driver_get_version(lib),
                cuda,
                &name,
            ));
            out.push(valued(
                "cudaGetDeviceCount",
                calls::cuda_get_device_count(lib),
                count,
                &name,
            ));
        }
        "cublas" => {
            let name = |code: i64| {
                i32::try_from(code)
                    .ok()
                    .and_then(|c| calls::cublas_get_status_name(lib, c))
            };
            out.push(valued(
                "cublasGetProperty",
                calls::cublas_get_property(lib),
                triple,
                &name,
            ));
            out.push(plain(
                "cublasGetCudartVersion",
                calls::cublas_get_cudart_version(lib),
                decode::cuda_version,
            ));
        }
        "cublasLt" => {
            out.push(plain(
                "cublasLtGetVersion",
                calls::cublas_lt_get_version(lib),
                decode::ten_thousands,
            ));
            out.push(plain(
                "cublasLtGetCudartVersion",
                calls::cublas_lt_get_cudart_version(lib),
                decode::cuda_version,
            ));
        }
        c if c.starts_with("cudnn") => {
            out.push(plain(
                "cudnnGetVersion",
                calls::cudnn_get_version(lib),
                decode::cudnn_version,
            ));
            out.push(plain(
                "cudnnGetCudartVersion",
                calls::cudnn_get_cudart_version(lib),
                decode::cuda_version,
            ));
        }
        "cupti" => {
            let name = |code: i64| {
                i32::try_from(code)
                    .ok()
                    .and_then(|c| calls::cupti_get_result_string(lib, c))
            };
            let version = |v: u32| (i64::from(v), None);
            out.push(valued(
                "cuptiGetVersion",
                calls::cupti_get_version(lib),
                version,
                &name,
            ));
        }
        "nvrtc" => {
            let name = |code: i64| {
                i32::try_from(code)
                    .ok()
                    .and_then(|c| calls::nvrtc_get_error_string(lib, c))
            };
            out.push(valued(
                "nvrtcVersion",
                calls::nvrtc_version(lib),
                pair,
                &name,
            ));
        }
        "nvJitLink" => {
            out.push(valued(
                "nvJitLinkVersion",
                calls::nvjitlink_version(lib),
                pair,
                &|_| None,
            ));
        }
        "cufft" => out.push(valued(
            "cufftGetVersion",
            calls::cufft_get_version(lib),
            thousands,
            &|_| None,
        )),
        "curand" => out.push(valued(
            "curandGetVersion",
            calls::curand_get_version(lib),
            thousands,
            &|_| None,
        )),
        "nccl" => out.push(valued(
            "ncclGetVersion",
            calls::nccl_get_version(lib),
            nccl,
            &|code| {
                i32::try_from(code)
                    .ok()
                    .and_then(|c| calls::nccl_get_error_string(lib, c))
            },
        )),
        "cusparse" => out.push(valued(
            "cusparseGetProperty",
            calls::cusparse_get_property(lib),
            triple,
            &|_| None,
        )),
        "nvidia-ml" => {
            let name = |code: i64| {
                i32::try_from(code)
                    .ok()
                    .and_then(|c| calls::nvml_error_string(lib, c))
            };
            let init = calls::nvml_init(lib);
            let initialised = matches!(init, Some(Ok(())));
            out.push(status_only("nvmlInit_v2", init, &name));
            if initialised {
                let driver = |text: String| (0, Some(text));
                if let Some(mut call) = valued(
                    "nvmlSystemGetDriverVersion",
                    calls::nvml_system_get_driver_version(lib),
                    driver,
                    &name,
                ) {
                    call.value = None;
                    out.push(Some(call));
                }
                out.push(status_only(
                    "nvmlShutdown",
                    calls::nvml_shutdown(lib),
                    &name,
                ));
            }
        }
        _ => {}
    }
    out.calls
}
