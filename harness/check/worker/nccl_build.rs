//! The CUDA NCCL was built for: its banner (`NCCL version 2.27.5+cuda12.9`), read from the file
//! the combination loads, as a detail of `nccl.load`; and `nccl.versions`, which holds it
//! against the combination's runtime and driver as `cudnn.versions` does for cuDNN. NCCL links
//! its own CUDA runtime, so the driver must support the CUDA it was built for.

use super::outcome::{Checked, Outcome};
use super::session::{not_installed, Session};
use crate::catalog;
use crate::check::protocol::Component;
use crate::compat::{self, CudaVersion, DriverVerdict};
use crate::elf;
use crate::model::BuiltFor;
use std::path::Path;

/// NCCL's banner in `path`, or why there is none.
fn banner(path: &Path) -> Result<BuiltFor, String> {
    let info = elf::read_path(path).map_err(|e| format!("{}: {e}", path.display()))?;
    info.built_for.ok_or_else(|| {
        format!(
            "{} holds no \"NCCL version X.Y.Z+cudaA.B\" string: it is not NCCL's library, or a build whose banner stackbench cannot read",
            path.display()
        )
    })
}

/// `nccl.load`'s outcome with the CUDA its library was built for, when the banner says.
pub fn with_built_for(outcome: Outcome, path: &Path) -> Outcome {
    match banner(path) {
        Ok(built) => outcome
            .detail("built_for_cuda", built.cuda)
            .detail("banner", built.said),
        Err(_) => outcome,
    }
}

/// `nccl.versions`.
pub fn versions(s: &mut Session) -> Checked {
    let Some(file) = s.request.file(Component::Nccl) else {
        return Ok(Outcome::skip(not_installed(Component::Nccl)));
    };
    let built = banner(&file.path).map_err(Outcome::fail)?;
    let details = |o: Outcome| {
        o.detail("version", built.version.clone())
            .detail("built_for_cuda", built.cuda.clone())
            .detail("banner", built.said.clone())
    };
    let Some(built_for) = CudaVersion::parse(&built.cuda) else {
        return Err(details(Outcome::fail(format!(
            "\"{}\": {} is not a CUDA version",
            built.said, built.cuda
        ))));
    };
    let text = &built.version;
    let Some(runtime) = s.runtime else {
        return Ok(details(Outcome::skip(format!(
            "NCCL {text} was built for CUDA {built_for}, but the combination's CUDA runtime version is unknown (cudart.load could not read it)"
        ))));
    };
    if built_for.major > runtime.major {
        let want = runtime.major;
        let package =
            catalog::pip_package("nccl", want).unwrap_or_else(|| format!("nvidia-nccl-cu{want}"));
        return Err(details(Outcome::fail(format!(
            "NCCL {text} was built for CUDA {built_for} (\"{}\"), a newer major than this combination's runtime, CUDA {runtime}: install the NCCL build for CUDA {want} (pip install {package})",
            built.said
        ))));
    }
    let Some(driver) = s.driver_cuda else {
        return Ok(details(Outcome::pass(format!(
            "NCCL {text} for CUDA {built_for}, runtime {runtime}; the driver's CUDA is unknown"
        ))));
    };
    let needs = compat::minor_version_minimum(built_for.major)
        .map(|m| format!(" (>= {m})"))
        .unwrap_or_default();
    match compat::runtime_on_driver(built_for, driver, None) {
        DriverVerdict::TooOld => Err(details(Outcome::fail(format!(
            "NCCL {text} was built for CUDA {built_for} and brings its own CUDA runtime, which needs a driver for CUDA {}.x{needs}; the driver supports CUDA {driver}: upgrade the driver, or install the NCCL build for CUDA {}",
            built_for.major, driver.major
        )))),
        DriverVerdict::MinorVersionCompatible => Ok(details(Outcome::pass(format!(
            "NCCL {text} for CUDA {built_for}, runtime {runtime}, on a driver for CUDA {driver} through minor-version compatibility"
        )))),
        DriverVerdict::Supported => Ok(details(Outcome::pass(format!(
            "NCCL {text} for CUDA {built_for}, runtime {runtime}, driver's CUDA {driver}"
        )))),
    }
}
