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

/// Classifies a file name: `Some` when it is a CUDA shared library (`libcudart.so.12.9.79`).
pub fn classify(file_name: &str) -> Option<LibraryName> {
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

/// The `version.json` key a runfile toolkit uses for a component, if it lists it.
pub fn toolkit_component_key(component: &str) -> Option<&'static str> {
    Some(match component {
        "cudart" => "cuda_cudart",
        "nvrtc" | "nvrtc-builtins" | "nvrtc.alt" | "nvrtc-builtins.alt" => "cuda_nvrtc",
        "cupti" | "nvperf_host" | "nvperf_target" | "pcsamplingutil" | "checkpoint" => "cuda_cupti",
        "cublas" | "cublasLt" | "nvblas" => "libcublas",
        "cufft" | "cufftw" => "libcufft",
        "curand" => "libcurand",
        "cusolver" | "cusolverMg" => "libcusolver",
        "cusparse" => "libcusparse",
        "nvJitLink" | "nvjitlink" => "libnvjitlink",
        "nvjpeg" => "libnvjpeg",
        "cufile" => "gds",
        "nvToolsExt" => "cuda_nvtx",
        c if c.starts_with("npp") => "libnpp",
        _ => return None,
    })
}

/// The pip wheel that ships a component for a CUDA major (`cublasLt`, 12 -> `nvidia-cublas-cu12`).
pub fn pip_package(component: &str, cuda_major: u32) -> Option<String> {
    let base = match component {
        "cudart" => "nvidia-cuda-runtime",
        "nvrtc" | "nvrtc-builtins" => "nvidia-cuda-nvrtc",
        "cupti" => "nvidia-cuda-cupti",
        "cublas" | "cublasLt" | "nvblas" => "nvidia-cublas",
        "cufft" | "cufftw" => "nvidia-cufft",
        "curand" => "nvidia-curand",
        "cusolver" | "cusolverMg" => "nvidia-cusolver",
        "cusparse" => "nvidia-cusparse",
        "nvJitLink" | "nvjitlink" => "nvidia-nvjitlink",
        "nccl" => "nvidia-nccl",
        c if c.starts_with("cudnn") => return Some(format!("nvidia-cudnn-cu{cuda_major}")),
        _ => return None,
    };
    // CUDA 13 wheels dropped the suffix (cuDNN keeps it, above).
    Some(if cuda_major >= 13 {
        base.to_string()
    } else {
        format!("{base}-cu{cuda_major}")
    })
}

/// The conda-forge package that ships a component (`cublasLt` -> `libcublas`).
pub fn conda_package(component: &str) -> Option<&'static str> {
    Some(match component {
        "cudart" => "cuda-cudart",
        "nvrtc" | "nvrtc-builtins" => "cuda-nvrtc",
        "cupti" => "cuda-cupti",
        "cublas" | "cublasLt" | "nvblas" => "libcublas",
        "cufft" | "cufftw" => "libcufft",
        "curand" => "libcurand",
        "cusolver" | "cusolverMg" => "libcusolver",
        "cusparse" => "libcusparse",
        "nvJitLink" | "nvjitlink" => "libnvjitlink",
        "nccl" => "nccl",
        c if c.starts_with("cudnn") => "cudnn",
        _ => return None,
    })
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
    #[case("cuda", 12, None)]
    fn pip_packages(#[case] component: &str, #[case] major: u32, #[case] expected: Option<&str>) {
        assert_eq!(pip_package(component, major).as_deref(), expected);
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
