//! cuDNN 8's sub-libraries, loaded before cuDNN loads them.
//!
//! cuDNN 8's `libcudnn.so.8` opens `libcudnn_ops_infer.so.8` and `libcudnn_cnn_infer.so.8` on
//! first use, and those open cuBLAS and cuBLASLt of their CUDA major at run time (names in their
//! read-only data, not in `DT_NEEDED`). When one cannot be loaded, cuDNN 8 prints "Could not load
//! library ..." and calls `abort()`: the worker dies, the later checks with it, and the reason is
//! left on stderr. So before a check calls into a sub-library, it finds each file the way the
//! loader will find it for cuDNN (objects already mapped first, then the loader's search with
//! the requesting library's `DT_RUNPATH` and `$ORIGIN`) and loads it itself: a failure becomes
//! the check's reason, with the loader's own message. The loader then hands cuDNN the same
//! objects (it matches loaded objects by soname).

use crate::catalog;
use crate::compat;
use crate::elf;
use crate::probe::dl::{self, Library};
use crate::resolve::{self, Requester, SearchContext};
use std::path::{Path, PathBuf};

/// cuDNN 8's library of handles, tensors and filters (`cudnnCreate` lives there).
pub const OPS: &str = "libcudnn_ops_infer.so.8";

/// cuDNN 8's convolution library.
pub const CNN: &str = "libcudnn_cnn_infer.so.8";

/// Why a sub-library (or what it opens) cannot be loaded, and what to install.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unloadable {
    /// `libcudnn_ops_infer.so.8 opens libcublas.so.12 at run time, and libcublas.so.12: cannot
    /// open shared object file: ... (searched LD_LIBRARY_PATH, DT_RUNPATH)`.
    pub why: String,
    /// `pip install nvidia-cublas-cu12`, where a package is known.
    pub fix: Option<String>,
}

/// Run-time dependencies cuDNN 8 cannot go on without: cuBLAS and cuBLASLt. (`libnvrtc.so`,
/// also named, serves run-time fusion only; `libcuda.so.1` is the driver, checked elsewhere.)
fn required(name: &str) -> bool {
    name.starts_with("libcublas")
}

/// Where `name` is for `requester`: an object already mapped under that soname (the loader
/// reuses it), else the loader's search.
fn locate(name: &str, requester: &Requester, ctx: &SearchContext) -> Result<PathBuf, String> {
    let mapped = dl::mapped_objects()
        .into_iter()
        .find(|m| m.soname.as_deref() == Some(name) && !m.name.as_os_str().is_empty());
    if let Some(mapped) = mapped {
        return Ok(mapped.name);
    }
    let resolution = resolve::resolve(name, requester, ctx);
    if let Some(found) = resolution.found {
        return Ok(found);
    }
    let mut steps: Vec<&str> = Vec::new();
    for attempt in &resolution.attempts {
        let step = attempt.via.describe();
        if !steps.contains(&step) {
            steps.push(step);
        }
    }
    let error = resolution
        .error
        .unwrap_or_else(|| format!("{name}: not found"));
    Err(if steps.is_empty() {
        error
    } else {
        format!("{error} (searched {})", steps.join(", "))
    })
}

/// The object at `path` as a requester: its path (for `$ORIGIN`) and search paths.
fn requester(path: &Path) -> Result<(Requester, Vec<String>), String> {
    let info = elf::read_path(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok((
        Requester {
            path: path.to_path_buf(),
            rpath: info.rpath,
            runpath: info.runpath,
        },
        info.dlopen_names,
    ))
}

/// The files cuDNN 8 will load for sub-library `name`, in order: the sub-library as `shim`
/// (`libcudnn.so.8`, built for CUDA `cuda_major`) finds it, then the cuBLAS libraries it opens
/// at run time as it finds them. Nothing is loaded here.
pub fn plan(
    shim: &Path,
    name: &str,
    cuda_major: Option<u32>,
    ctx: &SearchContext,
) -> Result<Vec<PathBuf>, Unloadable> {
    let (shim_requester, _) = requester(shim).map_err(|why| Unloadable { why, fix: None })?;
    let sub = locate(name, &shim_requester, ctx).map_err(|error| Unloadable {
        why: format!("{} opens {name} on first use, and {error}", file_name(shim)),
        fix: cuda_major
            .and_then(|m| catalog::pip_package("cudnn", m))
            .map(|p| format!("reinstall cuDNN 8 whole (pip install {p})")),
    })?;
    let (sub_requester, opens) = requester(&sub).map_err(|why| Unloadable { why, fix: None })?;
    let mut files = vec![sub.clone()];
    for dependency in opens.iter().filter(|n| required(n)) {
        let found = locate(dependency, &sub_requester, ctx).map_err(|error| Unloadable {
            why: format!("{name} opens {dependency} at run time, and {error}"),
            fix: compat::cuda_major_of_soname(dependency)
                .and_then(|m| catalog::pip_package("cublas", m))
                .map(|p| format!("install the cuBLAS it was built with (pip install {p})")),
        })?;
        files.push(found);
    }
    Ok(files)
}

/// Loads `files` (from [`plan`]) in order; the failure is the loader's message.
pub fn load(files: &[PathBuf]) -> Result<(), Unloadable> {
    for file in files {
        Library::open(file).map_err(|error| Unloadable {
            why: format!("{} cannot be loaded: {error}", file_name(file)),
            fix: None,
        })?;
    }
    Ok(())
}

/// A path's file name, for reasons.
fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::worker::fixtures::fixture;

    /// Nothing on the search path, no cache, no default directories: only what the libraries'
    /// own `$ORIGIN` paths reach.
    fn alone() -> SearchContext {
        SearchContext::bare("ELF64", "x86_64")
    }

    /// Asserts that `unloadable` gives its reason from `why` on, and `fix`.
    fn assert_says(unloadable: &Unloadable, why: &str, fix: &str) {
        assert!(unloadable.why.starts_with(why), "{}", unloadable.why);
        assert_eq!(unloadable.fix.as_deref(), Some(fix));
    }

    const CUDNN8_CU12: &str =
        "venv-cudnn8-cu12-cublas11/lib/python3.11/site-packages/nvidia/cudnn/lib/libcudnn.so.8";
    const CUDNN8_CU11: &str =
        "venv-cu11/lib/python3.11/site-packages/nvidia/cudnn/lib/libcudnn.so.8";

    #[test]
    fn a_complete_cudnn_8_plans_its_sub_library_and_cublas() {
        let files = plan(&fixture(CUDNN8_CU11), OPS, Some(11), &alone())
            .expect("everything is in the venv");
        let names: Vec<String> = files.iter().map(|f| file_name(f)).collect();
        assert_eq!(
            names,
            [
                "libcudnn_ops_infer.so.8",
                "libcublas.so.11",
                "libcublasLt.so.11"
            ]
        );
        // Reached through the sub-library's DT_RUNPATH ($ORIGIN/../../cublas/lib).
        assert!(
            files[1]
                .to_string_lossy()
                .contains("/nvidia/cudnn/lib/../../cublas/lib/"),
            "{files:?}"
        );
    }

    #[test]
    fn cudnn_8_for_cuda_12_beside_cublas_11_is_caught_before_cudnn_aborts() {
        let unloadable = plan(&fixture(CUDNN8_CU12), OPS, Some(12), &alone()).unwrap_err();
        assert_says(
            &unloadable,
            "libcudnn_ops_infer.so.8 opens libcublas.so.12 at run time, and libcublas.so.12: cannot open shared object file",
            "install the cuBLAS it was built with (pip install nvidia-cublas-cu12)",
        );
        assert!(
            unloadable.why.contains("(searched DT_RUNPATH)"),
            "{}",
            unloadable.why
        );
    }

    #[test]
    fn the_convolution_library_needs_no_cublas_of_its_own() {
        let files = plan(&fixture(CUDNN8_CU12), CNN, Some(12), &alone())
            .expect("cnn_infer is beside the shim");
        assert_eq!(files.len(), 1);
        assert_eq!(file_name(&files[0]), CNN);
    }

    #[test]
    fn a_missing_sub_library_names_the_package() {
        let dir = tempfile::tempdir().unwrap();
        let shim = dir.path().join("libcudnn.so.8");
        std::fs::copy(fixture(CUDNN8_CU12), &shim).unwrap();
        assert_says(
            &plan(&shim, OPS, Some(12), &alone()).unwrap_err(),
            "libcudnn.so.8 opens libcudnn_ops_infer.so.8 on first use, and libcudnn_ops_infer.so.8: cannot open shared object file",
            "reinstall cuDNN 8 whole (pip install nvidia-cudnn-cu12)",
        );
    }

    #[test]
    fn run_time_dependencies_that_matter() {
        assert!(required("libcublas.so.12"));
        assert!(required("libcublasLt.so.11"));
        assert!(!required("libnvrtc.so"));
        assert!(!required("libcuda.so.1"));
    }
}
