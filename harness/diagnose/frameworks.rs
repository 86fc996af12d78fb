//! Frameworks (PyTorch, JAX, CuPy) against the host's driver: one built for a CUDA major the
//! driver cannot run fails at its first CUDA call, whatever the libraries beside it say; and a
//! damaged wheel is named with the framework that needs it.

use super::finding::{Cause, Finding, Severity};
use super::Context;
use crate::compat::{self, CudaVersion, DriverVerdict};
use crate::discover::frameworks::Framework;

pub fn check(ctx: &Context) -> Vec<Finding> {
    let Some((driver_cuda, driver_version)) = super::driver::host_driver_cuda(ctx) else {
        return Vec::new();
    };
    ctx.frameworks
        .iter()
        .filter_map(|f| {
            let cuda = f.cuda.as_deref()?;
            // A bare major (`12`) is judged as its first release: any driver of that major's
            // minimum runs it.
            let built = CudaVersion::parse(cuda)
                .or_else(|| cuda.parse().ok().map(|m| CudaVersion::new(m, 0)))?;
            let verdict = compat::runtime_on_driver(built, driver_cuda, driver_version.as_deref());
            (verdict == DriverVerdict::TooOld)
                .then(|| too_old(f, cuda, driver_cuda, driver_version.as_deref()))
        })
        .collect()
}

fn too_old(f: &Framework, cuda: &str, driver_cuda: CudaVersion, driver: Option<&str>) -> Finding {
    let major = cuda.split('.').next().unwrap_or(cuda);
    let minimum = major
        .parse()
        .ok()
        .and_then(compat::minor_version_minimum)
        .map(|m| format!(" ({m} or newer)"))
        .unwrap_or_default();
    Finding::new(
        Severity::Error,
        Cause::FrameworkCudaUnsupported,
        format!(
            "{} {} in {} was built for CUDA {cuda}; the driver{} supports CUDA {driver_cuda}: its first CUDA call fails (\"CUDA driver version is insufficient\", or torch.cuda.is_available() is False)",
            f.package,
            f.version,
            f.site_packages.display(),
            driver.map(|d| format!(" {d}")).unwrap_or_default()
        ),
        format!(
            "upgrade the NVIDIA driver to one for CUDA {major}.x{minimum}, or install a {} build for CUDA {}.x",
            f.name, driver_cuda.major
        ),
    )
    .installation(f.site_packages.clone())
    .evidence(vec![format!("{}: CUDA {cuda}", f.source.display())])
}

/// Each damaged-wheel finding in an environment that holds a framework says which framework
/// needs the wheel.
pub fn name_in_damaged(ctx: &Context, findings: &mut [Finding]) {
    for finding in findings
        .iter_mut()
        .filter(|f| f.cause == Cause::DamagedInstallation)
    {
        let users: Vec<String> = ctx
            .frameworks
            .iter()
            .filter(|f| finding.installation.as_deref() == Some(f.site_packages.as_path()))
            .map(|f| format!("{} {}", f.package, f.version))
            .collect();
        if !users.is_empty() {
            finding.message = format!(
                "{} ({} in this environment depends on it)",
                finding.message,
                users.join(", ")
            );
        }
    }
}
