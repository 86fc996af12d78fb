//! Which file names are CUDA libraries, and what their names say: component and version.

/// Components whose files stackbench inventories, by the stem of `lib<stem>.so`.
const COMPONENTS: &[&str] = &[
    "cuda",
    "cudart",
    "cublas",
    "cublasLt",
    "cupti",
    "nvrtc",
    "nvrtc-builtins",
    "nvrtc.alt",
    "nvrtc-builtins.alt",
    "nvJitLink",
    "nvjitlink",
    "cufft",
    "cufftw",
    "curand",
    "cusolver",
    "cusolverMg",
    "cusparse",
    "cusparseLt",
    "nccl",
    "nvidia-ml",
    "nvidia-ptxjitcompiler",
    "nvidia-nvvm",
    "nvToolsExt",
    "nvblas",
    "nvjpeg",
    "cufile",
    "nvperf_host",
    "nvperf_target",
    "pcsamplingutil",
    "checkpoint",
    "cudadebugger",
];

/// Families matched by prefix: every cuDNN and NPP sub-library.
const FAMILIES: &[&str] = &["cudnn", "npp"];

/// What a library file's name says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LibraryName {
    /// The stem: `cudart`, `cublasLt`, `cudnn_ops_infer`.
    pub component: String,
    /// The numbers after `.so.`: `12.9.79`, `8`, or empty for the development link `libx.so`.
    pub version: String,
}

/// Classifies a file name: `Some` when it is a CUDA shared library (`libcudart.so.12.9.79`)
/// or DLL (`cudart64_110.dll`).
pub fn classify(file_name: &str) -> Option<LibraryName> {
    if let Some(stem) = strip_dll(file_name) {
        return classify_dll(stem);
    }
    let rest = file_name.strip_prefix("lib")?;
    let (component, version) = match rest.split_once(".so") {
        Some((stem, "")) => (stem, ""),
        Some((stem, tail)) => (stem, tail.strip_prefix('.')?),
        None => return None,
    };
    let numeric = version
        .split('.')
        .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    if !(version.is_empty() || numeric) || !is_cuda_component(component) {
        return None;
    }
    Some(LibraryName {
        component: component.to_string(),
        version: version.to_string(),
    })
}

/// The name without `.dll` (in any case), when it ends so.
fn strip_dll(file_name: &str) -> Option<&str> {
    let at = file_name.len().checked_sub(4)?;
    file_name
        .get(at..)
        .filter(|ext| ext.eq_ignore_ascii_case(".dll"))
        .and_then(|_| file_name.get(..at))
}

/// What a Windows CUDA DLL's name says. The driver is `nvcuda.dll` and NVML `nvml.dll`; the
/// others are `<component>64_<version>` (`cublasLt64_12`, `cudnn_ops_infer64_8`), `32_` for
/// 32-bit builds (`cudart32_110`), or `<component>_<version>` (`nvJitLink_120_0`). The version
/// digits carry a minor where there are three (`110` is 11.0, the ABI of every CUDA 11 runtime;
/// `nvrtc64_112_0` is 11.2); CUPTI's is a date-like release (`cupti64_2022.3.0`).
fn classify_dll(stem: &str) -> Option<LibraryName> {
    let named = |component: &str, version: String| LibraryName {
        component: component.to_owned(),
        version,
    };
    match stem.to_ascii_lowercase().as_str() {
        "nvcuda" => return Some(named("cuda", String::new())),
        "nvml" => return Some(named("nvidia-ml", String::new())),
        _ => {}
    }
    let split = ["64_", "32_", "_"].iter().find_map(|marker| {
        stem.match_indices(marker).find_map(|(at, _)| {
            let (component, version) = (&stem[..at], &stem[at + marker.len()..]);
            let numeric = !version.is_empty()
                && version
                    .bytes()
                    .all(|b| b.is_ascii_digit() || b == b'_' || b == b'.')
                && version.starts_with(|c: char| c.is_ascii_digit());
            (numeric && is_cuda_component(component)).then_some((component, version))
        })
    });
    match split {
        Some((component, version)) => Some(named(component, dll_version(version))),
        None => is_cuda_component(stem).then(|| named(stem, String::new())),
    }
}

/// A DLL name's version as a dotted version: `110` -> `11.0`, `112_0` -> `11.2`, `12` -> `12`,
/// `2022.3.0` as it is.
fn dll_version(digits: &str) -> String {
    if digits.contains('.') {
        return digits.to_owned();
    }
    let major_minor = digits.split('_').next().unwrap_or(digits);
    if major_minor.len() >= 3 {
        let (major, minor) = major_minor.split_at(major_minor.len() - 1);
        format!("{major}.{minor}")
    } else {
        major_minor.to_owned()
    }
}

fn is_cuda_component(stem: &str) -> bool {
    COMPONENTS.contains(&stem)
        || FAMILIES.iter().any(|f| {
            stem.strip_prefix(f).is_some_and(|rest| {
                rest.is_empty()
                    || rest.starts_with('_')
                    || rest.starts_with(|c: char| c.is_ascii_alphabetic())
            })
        })
}

/// True for the driver's own libraries, which come with the driver rather than a toolkit.
pub fn is_driver_component(component: &str) -> bool {
    component == "cuda" || component.starts_with("nvidia-") || component == "cudadebugger"
}

/// How NVIDIA and conda-forge package a family of components: the key a runfile toolkit's
/// `version.json` gives its version under, the pip wheel's name without its `-cuXX` suffix, and
/// the conda-forge package. A family is its components, or a prefix ending in `*`.
struct Packaging {
    components: &'static [&'static str],
    version_key: Option<&'static str>,
    pip: Option<&'static str>,
    conda: Option<&'static str>,
}

const PACKAGING: &[Packaging] = &[
    Packaging {
        components: &["cudart"],
        version_key: Some("cuda_cudart"),
        pip: Some("nvidia-cuda-runtime"),
        conda: Some("cuda-cudart"),
    },
    Packaging {
        components: &["nvrtc", "nvrtc-builtins"],
        version_key: Some("cuda_nvrtc"),
        pip: Some("nvidia-cuda-nvrtc"),
        conda: Some("cuda-nvrtc"),
    },
    Packaging {
        components: &["nvrtc.alt", "nvrtc-builtins.alt"],
        version_key: Some("cuda_nvrtc"),
        pip: None,
        conda: None,
    },
    Packaging {
        components: &["cupti"],
        version_key: Some("cuda_cupti"),
        pip: Some("nvidia-cuda-cupti"),
        conda: Some("cuda-cupti"),
    },
    Packaging {
        components: &[
            "nvperf_host",
            "nvperf_target",
            "pcsamplingutil",
            "checkpoint",
        ],
        version_key: Some("cuda_cupti"),
        pip: None,
        conda: None,
    },
    Packaging {
        components: &["cublas", "cublasLt", "nvblas"],
        version_key: Some("libcublas"),
        pip: Some("nvidia-cublas"),
        conda: Some("libcublas"),
    },
    Packaging {
        components: &["cufft", "cufftw"],
        version_key: Some("libcufft"),
        pip: Some("nvidia-cufft"),
        conda: Some("libcufft"),
    },
    Packaging {
        components: &["curand"],
        version_key: Some("libcurand"),
        pip: Some("nvidia-curand"),
        conda: Some("libcurand"),
    },
    Packaging {
        components: &["cusolver", "cusolverMg"],
        version_key: Some("libcusolver"),
        pip: Some("nvidia-cusolver"),
        conda: Some("libcusolver"),
    },
    Packaging {
        components: &["cusparse"],
        version_key: Some("libcusparse"),
        pip: Some("nvidia-cusparse"),
        conda: Some("libcusparse"),
    },
    Packaging {
        components: &["nvJitLink", "nvjitlink"],
        version_key: Some("libnvjitlink"),
        pip: Some("nvidia-nvjitlink"),
        conda: Some("libnvjitlink"),
    },
    Packaging {
        components: &["nccl"],
        version_key: None,
        pip: Some("nvidia-nccl"),
        conda: Some("nccl"),
    },
    Packaging {
        components: &["nvjpeg"],
        version_key: Some("libnvjpeg"),
        pip: None,
        conda: None,
    },
    Packaging {
        components: &["cufile"],
        version_key: Some("gds"),
        pip: None,
        conda: None,
    },
    Packaging {
        components: &["nvToolsExt"],
        version_key: Some("cuda_nvtx"),
        pip: None,
        conda: None,
    },
    Packaging {
        components: &["npp*"],
        version_key: Some("libnpp"),
        pip: None,
        conda: None,
    },
    // cuDNN ships apart from the toolkit; its wheel keeps the `-cuXX` suffix in CUDA 13 too.
    Packaging {
        components: &["cudnn*"],
        version_key: None,
        pip: Some("nvidia-cudnn"),
        conda: Some("cudnn"),
    },
];

/// The packaging of a component's family.
fn packaging(component: &str) -> Option<&'static Packaging> {
    PACKAGING.iter().find(|p| {
        p.components.iter().any(|c| match c.strip_suffix('*') {
            Some(prefix) => component.starts_with(prefix),
            None => *c == component,
        })
    })
}

/// True for a file name of the driver's own libraries (`libcuda.so.1`, `nvcuda.dll`).
pub fn names_driver_library(file_name: &str) -> bool {
    classify(file_name).is_some_and(|n| is_driver_component(&n.component))
}

/// The `version.json` key a runfile toolkit uses for a component, if it lists it.
pub fn toolkit_component_key(component: &str) -> Option<&'static str> {
    packaging(component)?.version_key
}

/// The pip wheel that ships a component for a CUDA major (`cublasLt`, 12 -> `nvidia-cublas-cu12`).
pub fn pip_package(component: &str, cuda_major: u32) -> Option<String> {
    let base = packaging(component)?.pip?;
    // CUDA 13 wheels dropped the suffix, except cuDNN's and NCCL's (`nvidia-nccl-cu13`).
    let suffixed = cuda_major < 13 || component.starts_with("cudnn") || component == "nccl";
    Some(if suffixed {
        format!("{base}-cu{cuda_major}")
    } else {
        base.to_string()
    })
}

/// The conda-forge package that ships a component (`cublasLt` -> `libcublas`).
pub fn conda_package(component: &str) -> Option<&'static str> {
    packaging(component)?.conda
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case("libcudart.so.12.9.79", Some(("cudart", "12.9.79")))]
    #[case("libcudart.so.12", Some(("cudart", "12")))]
    #[case("libcudart.so", Some(("cudart", "")))]
    #[case("libcublasLt.so.11", Some(("cublasLt", "11")))]
    #[case("libcudnn_ops_infer.so.8", Some(("cudnn_ops_infer", "8")))]
    #[case("libcudnn.so.9.10.2", Some(("cudnn", "9.10.2")))]
    #[case("libcudnn_engines_precompiled.so.9", Some(("cudnn_engines_precompiled", "9")))]
    #[case("libcuda.so.535.261.03", Some(("cuda", "535.261.03")))]
    #[case("libnvidia-ml.so.1", Some(("nvidia-ml", "1")))]
    #[case("libnvrtc-builtins.so.12.9", Some(("nvrtc-builtins", "12.9")))]
    #[case("libnppc.so.12", Some(("nppc", "12")))]
    #[case("libnvrtc.alt.so.12", Some(("nvrtc.alt", "12")))]
    #[case("libcudart_static.a", None)]
    #[case("libcudart.so.12.bak", None)]
    #[case("libc.so.6", None)]
    #[case("libcudaxyz.so", None)]
    #[case("cudart.so", None)]
    #[case("cudart64_110.dll", Some(("cudart", "11.0")))]
    #[case("cudart32_110.dll", Some(("cudart", "11.0")))]
    #[case("cudart64_12.dll", Some(("cudart", "12")))]
    #[case("cublas64_11.dll", Some(("cublas", "11")))]
    #[case("cublasLt64_12.dll", Some(("cublasLt", "12")))]
    #[case("cudnn64_8.dll", Some(("cudnn", "8")))]
    #[case("cudnn_ops_infer64_8.dll", Some(("cudnn_ops_infer", "8")))]
    #[case("cudnn_cnn_infer64_8.dll", Some(("cudnn_cnn_infer", "8")))]
    #[case("cupti64_2022.3.0.dll", Some(("cupti", "2022.3.0")))]
    #[case("cupti64_100.dll", Some(("cupti", "10.0")))]
    #[case("nvrtc64_112_0.dll", Some(("nvrtc", "11.2")))]
    #[case("nvrtc-builtins64_118.dll", Some(("nvrtc-builtins", "11.8")))]
    #[case("nvJitLink_120_0.dll", Some(("nvJitLink", "12.0")))]
    #[case("nvcuda.dll", Some(("cuda", "")))]
    #[case("NVML.DLL", Some(("nvidia-ml", "")))]
    #[case("nvperf_host.dll", Some(("nvperf_host", "")))]
    #[case("zlibwapi.dll", None)]
    #[case("kernel32.dll", None)]
    #[case("cudart64_110.dll.bak", None)]
    fn classifies_file_names(#[case] name: &str, #[case] expected: Option<(&str, &str)>) {
        let got = classify(name);
        assert_eq!(
            got.as_ref()
                .map(|n| (n.component.as_str(), n.version.as_str())),
            expected
        );
    }

    #[rstest]
    #[case("cublasLt", 12, Some("nvidia-cublas-cu12"))]
    #[case("cublas", 13, Some("nvidia-cublas"))]
    #[case("cudnn_ops_infer", 11, Some("nvidia-cudnn-cu11"))]
    #[case("cudnn", 13, Some("nvidia-cudnn-cu13"))]
    #[case("nccl", 12, Some("nvidia-nccl-cu12"))]
    #[case("nccl", 13, Some("nvidia-nccl-cu13"))]
    #[case("cuda", 12, None)]
    fn pip_packages(#[case] component: &str, #[case] major: u32, #[case] expected: Option<&str>) {
        assert_eq!(pip_package(component, major).as_deref(), expected);
    }

    #[rstest]
    #[case("cudart", Some("cuda_cudart"), Some("cuda-cudart"))]
    #[case("nvrtc-builtins.alt", Some("cuda_nvrtc"), None)]
    #[case("pcsamplingutil", Some("cuda_cupti"), None)]
    #[case("nppial", Some("libnpp"), None)]
    #[case("cudnn_ops_infer", None, Some("cudnn"))]
    #[case("nccl", None, Some("nccl"))]
    #[case("cuda", None, None)]
    fn one_table_gives_the_toolkit_key_and_the_conda_package(
        #[case] component: &str,
        #[case] key: Option<&str>,
        #[case] conda: Option<&str>,
    ) {
        assert_eq!(toolkit_component_key(component), key);
        assert_eq!(conda_package(component), conda);
    }

    #[test]
    fn driver_components() {
        assert!(is_driver_component("cuda"));
        assert!(is_driver_component("nvidia-ml"));
        assert!(!is_driver_component("cudart"));
    }

    proptest::proptest! {
        #[test]
        fn any_file_name_classifies_without_panicking(name in "\\PC{0,40}") {
            let _ = classify(&name);
        }

        #[test]
        fn versioned_names_classify_back(index in 0..COMPONENTS.len(), version in "[0-9]{1,3}(\\.[0-9]{1,3}){0,3}") {
            let component = COMPONENTS[index];
            let named = classify(&format!("lib{component}.so.{version}"));
            proptest::prop_assert_eq!(named, Some(LibraryName { component: component.into(), version }));
        }
    }
}
