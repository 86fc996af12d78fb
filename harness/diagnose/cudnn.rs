//! cuDNN against the CUDA runtime beside it: one cuDNN build per CUDA major.

use super::finding::{Cause, Finding, Severity};
use super::{display_name, Context};
use crate::catalog;
use crate::compat;
use crate::model::{Installation, Library};

pub fn check(ctx: &Context) -> Vec<Finding> {
    ctx.scan
        .installations
        .iter()
        .filter_map(|i| mismatch(ctx, i))
        .collect()
}

fn mismatch(ctx: &Context, installation: &Installation) -> Option<Finding> {
    let runtime_major = installation
        .libraries
        .iter()
        .find(|l| l.name == "cudart")
        .and_then(|l| l.soname.as_deref().and_then(compat::cuda_major_of_soname))
        .or_else(|| super::cuda_of(installation).map(|v| v.major))?;
    let cudnn: Vec<&Library> = installation
        .libraries
        .iter()
        .filter(|l| l.name.starts_with("cudnn"))
        .collect();
    for library in cudnn {
        let Some((built_for, evidence)) = built_for(ctx, library) else {
            continue;
        };
        if built_for == runtime_major {
            continue;
        }
        let version = library.version.clone().unwrap_or_default();
        let package = catalog::pip_package(&library.name, runtime_major)
            .unwrap_or_else(|| format!("cuDNN for CUDA {runtime_major}"));
        return Some(
            Finding::new(
                Severity::Error,
                Cause::CudnnCudaMismatch,
                format!(
                    "cuDNN {version} in {} was built for CUDA {built_for}, but the CUDA runtime beside it is CUDA {runtime_major}",
                    installation.root.display()
                ),
                format!("install the cuDNN build for CUDA {runtime_major}: {package}"),
            )
            .library(display_name(library), library.path.clone())
            .installation(installation.root.clone())
            .evidence(vec![evidence]),
        );
    }
    None
}

/// The CUDA major a cuDNN library was built for: its own answer (`cudnnGetCudartVersion`) when
/// it was loaded, else the CUDA sonames it opens.
fn built_for(ctx: &Context, library: &Library) -> Option<(u32, String)> {
    let answered = ctx
        .probes
        .iter()
        .flat_map(|p| &p.loads)
        .filter(|l| l.path == library.real_path)
        .flat_map(|l| &l.api)
        .find(|c| c.function == "cudnnGetCudartVersion")
        .and_then(|c| c.value);
    if let Some(value) = answered {
        let major = compat::cudnn_cudart_major(value as usize);
        return Some((major, format!("cudnnGetCudartVersion() = {value}")));
    }
    // The CUDA libraries it names must agree on one major.
    let names: Vec<&str> = library
        .dlopen_deps
        .iter()
        .chain(&library.needed)
        .map(String::as_str)
        .collect();
    let major = compat::cuda_major_of_names(names.iter().copied())?;
    let telling: Vec<&str> = names
        .into_iter()
        .filter(|n| compat::cuda_major_of_soname(n) == Some(major))
        .collect();
    Some((major, format!("opens {}", telling.join(" "))))
}
