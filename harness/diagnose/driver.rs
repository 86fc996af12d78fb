//! The driver: is a `libcuda.so.1` reachable, is it a real one, of the right class, and new
//! enough for every runtime on the host; and what the runtimes themselves said when asked.

use super::finding::{Cause, Finding, Severity};
use super::{export_search_path, Context};
use crate::compat::{self, CudaVersion, DriverVerdict};
use crate::model::{Installation, Layout};
use crate::probe::LoadReport;
use crate::resolve::{self, AttemptResult, Requester};
use std::path::{Path, PathBuf};

pub const DRIVER_SONAME: &str = "libcuda.so.1";

/// The driver the host's programs get.
struct Driver {
    path: PathBuf,
    version: Option<String>,
    cuda: Option<CudaVersion>,
}

pub fn check(ctx: &Context) -> Vec<Finding> {
    let mut findings = Vec::new();
    let resolution = resolve_driver(ctx);
    let evidence: Vec<String> = resolution.attempts.iter().map(|a| a.describe()).collect();
    let right_copies: Vec<PathBuf> = ctx
        .copies_of(DRIVER_SONAME)
        .into_iter()
        .filter(|(_, l)| {
            l.elf_class.as_deref() == Some(ctx.search.class.as_str())
                && l.machine.as_deref() == Some(ctx.search.machine.as_str())
                && !is_stub_or_compat(&l.path)
        })
        .map(|(_, l)| l.path.clone())
        .collect();
    for attempt in &resolution.attempts {
        if let AttemptResult::WrongClass { found } | AttemptResult::WrongMachine { found } =
            &attempt.result
        {
            let severity = if resolution.found.is_some() {
                Severity::Warning
            } else {
                Severity::Error
            };
            let cause = match attempt.result {
                AttemptResult::WrongMachine { .. } => Cause::WrongMachine,
                _ => Cause::WrongElfClass,
            };
            let setting = attempt.via.describe();
            let fix = match right_copies.first() {
                Some(copy) => format!(
                    "take {} off {setting} (it is for {found} programs) and use the {} copy at {}",
                    dir_display(&attempt.path),
                    ctx.search.class,
                    copy.display()
                ),
                None => format!(
                    "take {} off {setting} and install the {} driver library",
                    dir_display(&attempt.path),
                    ctx.search.machine
                ),
            };
            findings.push(
                Finding::new(
                    severity,
                    cause,
                    format!(
                        "{} on the search path is {found}, not {} {}: the loader skips it",
                        attempt.path.display(),
                        ctx.search.class,
                        ctx.search.machine
                    ),
                    fix,
                )
                .library(DRIVER_SONAME, attempt.path.clone())
                .missing(DRIVER_SONAME, "every CUDA program")
                .candidates(right_copies.clone())
                .evidence(evidence.clone()),
            );
        }
    }
    let Some(found) = resolution.real.clone().or(resolution.found.clone()) else {
        let fix = if right_copies.is_empty() {
            "install the NVIDIA driver (e.g. `apt install nvidia-driver` or NVIDIA's .run installer); in a container, start it with the NVIDIA Container Toolkit (`--gpus all`)".to_string()
        } else {
            let fix = export_search_path(&right_copies, "a driver library");
            match too_new_for(ctx, &right_copies[0]) {
                Some(note) => format!("{fix}; {note}"),
                None => fix,
            }
        };
        let mut finding = no_driver_evidence(String::new())
            .candidates(right_copies)
            .evidence(evidence);
        finding.fix = fix;
        let runtimes = ctx
            .scan
            .installations
            .iter()
            .flat_map(|i| &i.libraries)
            .any(|l| l.name == "cudart");
        if !runtimes {
            finding.message = "no NVIDIA driver library (libcuda.so.1) is reachable: no CUDA program can use a GPU here".into();
        }
        findings.push(finding);
        findings.extend(runtime_answers(ctx, None));
        return findings;
    };
    let driver = describe_driver(ctx, &found);
    if is_under(&found, "stubs") {
        findings.push(
            Finding::new(
                Severity::Error,
                Cause::StubDriver,
                format!("the libcuda.so.1 the loader finds is a toolkit stub ({}): CUDA calls fail with CUDA_ERROR_STUB_LIBRARY (34)", found.display()),
                format!("take {} off LD_LIBRARY_PATH; stubs are for linking only", dir_display(&found)),
            )
            .library(DRIVER_SONAME, found.clone())
            .evidence(evidence.clone()),
        );
    } else if is_under(&found, "compat") {
        findings.push(
            Finding::new(
                Severity::Warning,
                Cause::CompatDriver,
                format!("the libcuda.so.1 the loader finds is a forward-compatibility package ({}): it works only on data-centre GPUs and with a matching kernel driver (errors 803, 804 otherwise)", found.display()),
                "keep cuda-compat only on data-centre GPUs; elsewhere take its directory off LD_LIBRARY_PATH and upgrade the driver instead".into(),
            )
            .library(DRIVER_SONAME, found.clone())
            .evidence(evidence.clone()),
        );
    }
    if let Some(driver_cuda) = driver.cuda {
        for installation in ctx
            .scan
            .installations
            .iter()
            .filter(|i| i.layout != Layout::Driver)
        {
            findings.extend(runtime_on_driver(installation, &driver, driver_cuda));
        }
    }
    findings.extend(runtime_answers(ctx, Some(&driver)));
    findings
}

/// What a fix that puts `copy` on the search path must say: the runtimes on the host it is too
/// old for (`driver 535.261.03 supports CUDA 12.2: too old for the CUDA 13.0 runtime in X`).
fn too_new_for(ctx: &Context, copy: &Path) -> Option<String> {
    let version = ctx
        .copies_of(DRIVER_SONAME)
        .into_iter()
        .find(|(_, l)| l.path == copy)
        .and_then(|(_, l)| l.version.clone())?;
    let driver_cuda = compat::driver_cuda_version(&version)?;
    let too_new: Vec<String> = ctx
        .scan
        .installations
        .iter()
        .filter(|i| i.libraries.iter().any(|l| l.name == "cudart"))
        .filter_map(|i| {
            let runtime = super::cuda_of(i)?;
            let verdict = compat::runtime_on_driver(runtime, driver_cuda, Some(&version));
            (verdict == DriverVerdict::TooOld)
                .then(|| format!("the CUDA {runtime} runtime in {}", i.root.display()))
        })
        .collect();
    (!too_new.is_empty()).then(|| {
        format!(
            "but that driver ({version}) supports CUDA {driver_cuda} only: too old for {} (driver_too_old follows; those need a newer driver installed)",
            too_new.join(", ")
        )
    })
}

/// On a host with no NVIDIA hardware at all, no driver is expected: a build container, a CI
/// runner or a login node builds CUDA code without one. There a driver missing altogether (no
/// copy of it anywhere on the host) is a note, and
/// the findings that matter on such a host (a build's) decide the exit status. It takes sysfs
/// listing PCI functions and none of them NVIDIA's, on this machine's own root and outside WSL
/// (whose GPU is no PCI function there). sysfs is not namespaced, so a container on a GPU host
/// started without `--gpus` still sees the host's GPUs and keeps the error and its fix.
pub fn explain_expected_absence(ctx: &Context, findings: &mut [Finding]) {
    let Some(facts) = ctx.driver_files.filter(|_| !ctx.sysroot) else {
        return;
    };
    let no_nvidia_hardware = facts.nvidia_pci.as_ref().is_some_and(Vec::is_empty) && !facts.wsl_gpu;
    if !no_nvidia_hardware {
        return;
    }
    // A driver's library somewhere on the host (found, not reachable) says CUDA is meant to run
    // here: that finding stands.
    let nothing_installed =
        |f: &&mut Finding| f.cause == Cause::NoDriver && f.candidates.is_empty();
    for finding in findings.iter_mut().filter(nothing_installed) {
        finding.severity = Severity::Info;
        finding.message = "no NVIDIA GPU on this host (no PCI device of NVIDIA's, vendor 0x10de, in /sys/bus/pci/devices) and no driver: none is needed to build CUDA code here, and CUDA programs run only on a host with a GPU".into();
        finding.fix = "nothing to do on this host; on a GPU host, install the NVIDIA driver".into();
    }
}

/// The one "no driver" finding; every rule that meets the missing driver adds its evidence to it.
pub fn no_driver_evidence(evidence: String) -> Finding {
    Finding::new(
        Severity::Error,
        Cause::NoDriver,
        "no NVIDIA driver library (libcuda.so.1) is reachable: every CUDA runtime reports error 35 (cudaErrorInsufficientDriver) and no GPU code can run".into(),
        "install the NVIDIA driver (e.g. `apt install nvidia-driver` or NVIDIA's .run installer); in a container, start it with the NVIDIA Container Toolkit (`--gpus all`)".into(),
    )
    .missing(DRIVER_SONAME, "every CUDA program")
    .evidence(if evidence.is_empty() { vec![] } else { vec![evidence] })
}

/// How the loader resolves `libcuda.so.1` for any program on the host (no RPATH of its own).
fn resolve_driver(ctx: &Context) -> resolve::Resolution {
    let anywhere = Requester {
        path: PathBuf::from("/"),
        rpath: vec![],
        runpath: vec![],
    };
    resolve::resolve(DRIVER_SONAME, &anywhere, ctx.search)
}

/// The real `libcuda.so.1` the host's programs get (its final file), when it is a driver's and
/// not a toolkit's stub or compat copy.
pub fn reachable_driver(ctx: &Context) -> Option<PathBuf> {
    let resolution = resolve_driver(ctx);
    resolution
        .real
        .or(resolution.found)
        .filter(|found| !is_stub_or_compat(found))
}

/// The CUDA version the driver the host's programs get supports, and its version string.
pub fn host_driver_cuda(ctx: &Context) -> Option<(CudaVersion, Option<String>)> {
    let driver = describe_driver(ctx, &reachable_driver(ctx)?);
    Some((driver.cuda?, driver.version))
}

fn describe_driver(ctx: &Context, found: &Path) -> Driver {
    let version = found
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_prefix("libcuda.so."))
        .filter(|v| v.contains('.'))
        .map(String::from);
    let from_api = ctx
        .probes
        .iter()
        .flat_map(|p| &p.loads)
        .filter(|l| l.path == found)
        .flat_map(|l| &l.api)
        .find(|c| c.function == "cuDriverGetVersion" && c.status == Some(0))
        .and_then(|c| c.value)
        .and_then(|v| u32::try_from(v).ok().and_then(CudaVersion::from_api));
    let cuda = from_api.or_else(|| version.as_deref().and_then(compat::driver_cuda_version));
    Driver {
        path: found.to_path_buf(),
        version,
        cuda,
    }
}

/// The CUDA runtime of one installation against the driver.
fn runtime_on_driver(
    installation: &Installation,
    driver: &Driver,
    driver_cuda: CudaVersion,
) -> Option<Finding> {
    let runtime = installation.libraries.iter().find(|l| l.name == "cudart")?;
    let runtime_version = super::cuda_of(installation)?;
    let driver_text = driver
        .version
        .clone()
        .unwrap_or_else(|| driver.path.display().to_string());
    match compat::runtime_on_driver(runtime_version, driver_cuda, driver.version.as_deref()) {
        DriverVerdict::Supported => None,
        DriverVerdict::MinorVersionCompatible => Some(
            Finding::new(
                Severity::Warning,
                Cause::MinorVersionCompatibility,
                format!(
                    "CUDA {runtime_version} runtime in {} runs on driver {driver_text} (CUDA {driver_cuda}) through minor-version compatibility: PTX built by the newer toolkit (NVRTC, JIT) fails with cudaErrorUnsupportedPtxVersion (222)",
                    installation.root.display()
                ),
                format!("upgrade the driver to one for CUDA {runtime_version} or newer, or compile GPU code for SASS (sm_XX) rather than PTX"),
            )
            .library("libcudart", runtime.path.clone())
            .installation(installation.root.clone()),
        ),
        DriverVerdict::TooOld => Some(
            Finding::new(
                Severity::Error,
                Cause::DriverTooOld,
                format!(
                    "CUDA {runtime_version} runtime in {} needs a driver for CUDA {}.x ({}); driver {driver_text} supports CUDA {driver_cuda}: \"CUDA driver version is insufficient for CUDA runtime version\" (error 35)",
                    installation.root.display(),
                    runtime_version.major,
                    compat::minor_version_minimum(runtime_version.major).map(|m| format!(">= {m}")).unwrap_or_else(|| "a newer driver".into())
                ),
                format!(
                    "upgrade the NVIDIA driver{}, or use a CUDA {}.x runtime in this environment",
                    compat::minor_version_minimum(runtime_version.major).map(|m| format!(" to {m} or newer")).unwrap_or_default(),
                    driver_cuda.major
                ),
            )
            .library("libcudart", runtime.path.clone())
            .installation(installation.root.clone())
            .evidence(vec![format!("driver: {}", driver.path.display())]),
        ),
    }
}

/// What each runtime's `cudaGetDeviceCount` answered, explained.
fn runtime_answers(ctx: &Context, driver: Option<&Driver>) -> Vec<Finding> {
    let mut findings = Vec::new();
    for probe in ctx.probes {
        for load in &probe.loads {
            let Some(call) = load.api.iter().find(|c| c.function == "cudaGetDeviceCount") else {
                continue;
            };
            let Some(status) = call.status.filter(|s| *s != 0) else {
                continue;
            };
            if status == 35 && driver.is_none() {
                findings.push(no_driver_evidence(format!(
                    "{} answered cudaGetDeviceCount with 35 (cudaErrorInsufficientDriver)",
                    load.path.display()
                )));
                continue;
            }
            let explained = compat::runtime_error(status as i32);
            let name = explained
                .and_then(|e| e.runtime_name)
                .unwrap_or("unknown error");
            let meaning = explained
                .map(|e| e.meaning)
                .unwrap_or("not in stackbench's table");
            let mut evidence = vec![format!(
                "cudaGetDeviceCount() = {status} ({name}: {meaning})"
            )];
            evidence.extend(loaded_driver(load));
            let (severity, cause, fix) = match status {
                100 => (Severity::Info, Cause::NoDevice, "run on a host with an NVIDIA GPU (or pass the GPU into the container)".to_string()),
                34 => (Severity::Error, Cause::StubDriver, "take the toolkit's stubs directory off LD_LIBRARY_PATH".to_string()),
                803 | 804 => (Severity::Error, Cause::CompatDriver, "remove cuda-compat from the search path or upgrade the kernel driver to match it".to_string()),
                35 => (Severity::Error, Cause::DriverTooOld, explained.map(|e| e.fix.to_string()).unwrap_or_default()),
                _ => (Severity::Warning, Cause::LoadFailed, explained.map(|e| e.fix.to_string()).unwrap_or_else(|| "see the CUDA runtime API documentation for this error code".into())),
            };
            findings.push(
                Finding::new(
                    severity,
                    cause,
                    format!(
                        "{} answered cudaGetDeviceCount with {status} ({name}): {meaning}",
                        load.path.display()
                    ),
                    fix,
                )
                .library("libcudart", load.path.clone())
                .installation(probe.root.clone())
                .evidence(evidence),
            );
        }
    }
    findings
}

/// Which libcuda the worker mapped while loading a runtime, as evidence.
fn loaded_driver(load: &LoadReport) -> Option<String> {
    let object = load
        .loaded
        .iter()
        .find(|o| o.name.starts_with("libcuda.so"))?;
    Some(format!("driver loaded: {}", object.path.display()))
}

/// A toolkit's link-time stub or forward-compatibility copy: never the driver to point people at.
pub fn is_stub_or_compat(path: &Path) -> bool {
    is_under(path, "stubs") || is_under(path, "compat")
}

/// Whether `path` lies directly in a directory named `dir_name` (`stubs`, `compat`).
pub fn is_under(path: &Path, dir_name: &str) -> bool {
    path.parent()
        .and_then(|d| d.file_name())
        .is_some_and(|n| n == dir_name)
}

fn dir_display(path: &Path) -> String {
    path.parent()
        .map(|d| d.display().to_string())
        .unwrap_or_default()
}
