//! NCCL against the CUDA around it. NCCL links its own CUDA runtime statically and says which
//! in its banner (`NCCL version 2.27.7+cuda13.0`, read by the scan), so one built for a newer
//! CUDA than the driver supports cannot initialise, and one built for a newer major than the
//! runtime beside it is not the build the environment's programs were made with.

use super::finding::{Cause, Finding, Severity};
use super::{display_name, driver, wheel, Context};
use crate::catalog;
use crate::compat::{self, CudaVersion, DriverVerdict};
use crate::model::{Installation, Layout, Library};

pub fn check(ctx: &Context) -> Vec<Finding> {
    let host_driver = driver::host_driver_cuda(ctx);
    let driver = host_driver.as_ref().map(|(cuda, version)| Driver {
        cuda: *cuda,
        version: version.as_deref(),
    });
    ctx.scan
        .installations
        .iter()
        .filter(|i| i.layout != Layout::Driver)
        .flat_map(|i| {
            i.libraries
                .iter()
                .filter(|l| l.name == "nccl")
                .map(move |l| (i, l))
        })
        .filter_map(|(i, l)| mismatch(ctx, i, l, driver))
        .collect()
}

/// The driver the host's programs get: the CUDA it supports and its version string.
#[derive(Clone, Copy)]
struct Driver<'a> {
    cuda: CudaVersion,
    version: Option<&'a str>,
}

fn mismatch(
    ctx: &Context,
    installation: &Installation,
    library: &Library,
    driver: Option<Driver>,
) -> Option<Finding> {
    let built = library.built_for.as_ref()?;
    let built_for = CudaVersion::parse(&built.cuda)?;
    let answered = answered_version(ctx, library);
    let version = answered
        .as_ref()
        .map_or(built.version.as_str(), |(text, _)| text.as_str());
    let mut evidence = vec![format!("{} says \"{}\"", display_name(library), built.said)];
    evidence.extend(answered.as_ref().map(|(_, line)| line.clone()));
    let root = installation.root.display();
    let verdict = driver.map(|d| compat::runtime_on_driver(built_for, d.cuda, d.version));
    let needs = compat::minor_version_minimum(built_for.major)
        .map(|m| format!(" (>= {m})"))
        .unwrap_or_default();
    let runtime = runtime_beside(installation).filter(|r| r.major < built_for.major);
    let finding = if let Some(runtime) = runtime {
        evidence.push(format!("CUDA runtime beside it: CUDA {runtime}"));
        evidence.extend(driver.map(|d| driver_line(d)));
        // It runs only where the driver supports its own CUDA too.
        let severity = match verdict {
            Some(DriverVerdict::Supported | DriverVerdict::MinorVersionCompatible) => {
                Severity::Warning
            }
            _ => Severity::Error,
        };
        Finding::new(
            severity,
            Cause::NcclCudaMismatch,
            format!(
                "NCCL {version} in {root} was built for CUDA {built_for}, a newer major than the CUDA {runtime} runtime beside it: it brings its own CUDA {} runtime, which needs a driver for CUDA {}.x{needs}, and CUDA {} programs expect the NCCL for CUDA {}",
                built_for.major, built_for.major, runtime.major, runtime.major
            ),
            install(installation, library, runtime.major),
        )
    } else {
        let driver = driver.filter(|_| verdict == Some(DriverVerdict::TooOld))?;
        evidence.push(driver_line(driver));
        let upgrade = format!(
            "upgrade the NVIDIA driver{}",
            compat::minor_version_minimum(built_for.major)
                .map(|m| format!(" to {m} or newer"))
                .unwrap_or_default()
        );
        // A runtime of NCCL's major beside it needs the same driver; else an older NCCL does.
        let fix = match runtime_beside(installation) {
            Some(r) if r.major >= built_for.major => upgrade,
            _ => format!(
                "{upgrade}, or {}",
                install(installation, library, driver.cuda.major)
            ),
        };
        Finding::new(
            Severity::Error,
            Cause::NcclCudaMismatch,
            format!(
                "NCCL {version} in {root} was built for CUDA {built_for} and brings its own CUDA {built_for} runtime, which needs a driver for CUDA {}.x{needs}; driver {} supports CUDA {}: its communicators fail to initialise with cudaErrorInsufficientDriver (35)",
                built_for.major,
                driver.version.unwrap_or("here"),
                driver.cuda
            ),
            fix,
        )
    };
    Some(
        finding
            .library(display_name(library), library.path.clone())
            .installation(installation.root.clone())
            .evidence(evidence),
    )
}

/// What `ncclGetVersion` answered when the library was loaded: the version as people write it,
/// and the evidence line.
fn answered_version(ctx: &Context, library: &Library) -> Option<(String, String)> {
    let call = ctx
        .probes
        .iter()
        .flat_map(|p| &p.loads)
        .filter(|l| l.path == library.real_path || l.path == library.path)
        .flat_map(|l| &l.api)
        .find(|c| c.function == "ncclGetVersion" && c.status == Some(0))?;
    let (value, text) = (call.value?, call.text.clone()?);
    Some((text.clone(), format!("ncclGetVersion() = {value} ({text})")))
}

/// The CUDA runtime of the installation: its version, else the major its soname says.
fn runtime_beside(installation: &Installation) -> Option<CudaVersion> {
    let cudart = installation.libraries.iter().find(|l| l.name == "cudart")?;
    super::cuda_of(installation).or_else(|| {
        cudart
            .soname
            .as_deref()
            .and_then(compat::cuda_major_of_soname)
            .map(|major| CudaVersion::new(major, 0))
    })
}

fn driver_line(driver: Driver) -> String {
    format!(
        "driver {}: CUDA {}",
        driver.version.unwrap_or("(version unknown)"),
        driver.cuda
    )
}

/// The fix that puts the NCCL built for CUDA `major` in place of `library`.
fn install(installation: &Installation, library: &Library, major: u32) -> String {
    let root = &installation.root;
    match installation.layout {
        Layout::Pip => {
            let package = catalog::pip_package("nccl", major)
                .unwrap_or_else(|| format!("nvidia-nccl-cu{major}"));
            let wheels = wheel::wheels(root);
            let file = super::file_name(&library.path);
            // Every NCCL wheel installs the same nvidia/nccl/lib/libnccl.so.2: the other goes first.
            let remove = wheel::shipping(&wheels, &file)
                .map(|(w, _)| w.name.as_str())
                .filter(|name| *name != package)
                .map(|name| format!("pip uninstall -y {name} && "))
                .unwrap_or_default();
            format!(
                "{remove}pip install {package}   (into the environment of {})",
                root.display()
            )
        }
        Layout::Conda => format!(
            "conda install -p {} -c conda-forge nccl cuda-version={major}",
            root.display()
        ),
        _ => format!(
            "install the NCCL built for CUDA {major} in place of {}",
            library.path.display()
        ),
    }
}
