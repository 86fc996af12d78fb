//! After a driver upgrade: the kernel module still loaded is not the user-space driver's
//! (`kernel_module_mismatch`), or another version's `libcuda` is reachable before the current
//! one or left beside it (`stale_driver_library`). Read from the driver's own files
//! ([`crate::discover::nvidia`]), never by loading them.

use super::finding::{Cause, Finding, Severity};
use super::Context;
use crate::discover::nvidia::{first_real, DriverFacts, DriverFile};

/// The fix for a module that is not the installed driver's.
const RELOAD: &str = "reboot, or reload the NVIDIA kernel modules so the loaded one is the installed driver's: `sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia && sudo modprobe nvidia` (stop what uses the GPU first: nvidia-persistenced, nvidia-fabricmanager, dcgm)";

pub fn check(ctx: &Context) -> Vec<Finding> {
    let Some(facts) = ctx.driver_files else {
        return Vec::new();
    };
    let mut findings = Vec::new();
    findings.extend(module_mismatch(facts));
    findings.extend(shadowing_copy(facts));
    findings.extend(left_behind(facts));
    findings
}

/// The module against the user-space `libcuda.so.1` and `libnvidia-ml.so.1` the loader takes;
/// not when a copy of the module's version is reachable after another (that one is stale).
fn module_mismatch(facts: &DriverFacts) -> Option<Finding> {
    let module = facts.module_version()?;
    let differs = |files: &[DriverFile]| {
        let first = first_real(files)?;
        let version = first.version()?;
        let later_matches = files
            .iter()
            .filter(|f| !f.is_compat())
            .any(|f| f.version() == Some(module));
        (version != module && !later_matches).then(|| (first.clone(), version.to_owned()))
    };
    let libcuda = differs(&facts.libcuda);
    let nvml = differs(&facts.nvml);
    let (file, version) = libcuda.clone().or(nvml.clone())?;
    let name = file
        .path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut evidence = facts.module_evidence();
    evidence.extend(libcuda.iter().map(|(f, _)| f.describe()));
    evidence.extend(nvml.iter().map(|(f, _)| f.describe()));
    Some(
        Finding::new(
            Severity::Error,
            Cause::KernelModuleMismatch,
            format!(
                "the loaded NVIDIA kernel module is {module} but the user-space driver is {version} ({name} at {}): nvidia-smi and NVML fail with \"Failed to initialize NVML: Driver/library version mismatch\" and cuInit with CUDA_ERROR_SYSTEM_DRIVER_MISMATCH (803)",
                file.path.display()
            ),
            RELOAD.into(),
        )
        .library(name, file.path.clone())
        .evidence(evidence),
    )
}

/// A `libcuda.so.1` of another version than the current driver's found first, with the
/// current one's copy later on the search.
fn shadowing_copy(facts: &DriverFacts) -> Option<Finding> {
    let real: Vec<&DriverFile> = facts.libcuda.iter().filter(|f| !f.is_compat()).collect();
    let first = real.first()?;
    let first_version = first.version()?;
    let current = match facts.module_version() {
        Some(module) => real.iter().find(|f| f.version() == Some(module))?,
        None => real
            .iter()
            .find(|f| f.version().is_some_and(|v| v != first_version))?,
    };
    let current_version = current.version()?;
    if current_version == first_version {
        return None;
    }
    let (severity, whose) = match facts.module_version() {
        Some(_) => (Severity::Error, "the loaded kernel module's version"),
        None => (Severity::Warning, "another driver version"),
    };
    let dir = first
        .path
        .parent()
        .map(|d| d.display().to_string())
        .unwrap_or_default();
    let fix = if first.via == "LD_LIBRARY_PATH" {
        format!(
            "take {dir} off LD_LIBRARY_PATH: the driver's own libcuda.so.1 is in {}",
            current
                .path
                .parent()
                .map(|d| d.display().to_string())
                .unwrap_or_default()
        )
    } else {
        format!(
            "remove the stale copy ({} and the file it names, {}), then run `sudo ldconfig`",
            first.path.display(),
            first.real.display()
        )
    };
    let mut evidence = facts.module_evidence();
    evidence.extend(real.iter().map(|f| f.describe()));
    Some(
        Finding::new(
            severity,
            Cause::StaleDriverLibrary,
            format!(
                "a libcuda.so.1 of driver {first_version} ({}, via {}) is found before {current_version}, {whose} ({}): every CUDA program gets the old one",
                first.path.display(),
                first.via,
                current.path.display()
            ),
            fix,
        )
        .library("libcuda.so.1", first.path.clone())
        .candidates(vec![current.path.clone()])
        .evidence(evidence),
    )
}

/// Versioned `libcuda.so.X.Y.Z` files of versions no `libcuda.so.1` on the search is, left in
/// the loader's directories (a runfile install over a package install, or the reverse).
fn left_behind(facts: &DriverFacts) -> Option<Finding> {
    let taken = first_real(&facts.libcuda)?;
    let version = taken.version()?;
    let others: Vec<&(std::path::PathBuf, String)> = facts
        .libcuda_files
        .iter()
        // A version some libcuda.so.1 on the search is: the copy's own finding says it.
        .filter(|(_, v)| {
            !facts
                .libcuda
                .iter()
                .any(|f| f.version() == Some(v.as_str()))
        })
        .collect();
    if others.is_empty() {
        return None;
    }
    let listed: Vec<String> = others
        .iter()
        .map(|(p, _)| p.display().to_string())
        .collect();
    let mut versions: Vec<&str> = others.iter().map(|(_, v)| v.as_str()).collect();
    versions.dedup();
    let mut evidence = vec![format!("loaded: {}", taken.describe())];
    evidence.extend(
        others
            .iter()
            .map(|(p, v)| format!("{}: driver {v}, left behind", p.display())),
    );
    Some(
        Finding::new(
            Severity::Warning,
            Cause::StaleDriverLibrary,
            format!(
                "driver {version}'s libcuda.so.1 has files of driver {} beside it in the loader's directories: left behind by an install over another (runfile over package, or the reverse); a link or ld.so.cache entry to them brings the old driver back",
                versions.join(", ")
            ),
            format!("remove them, then run `sudo ldconfig`: sudo rm {}", listed.join(" ")),
        )
        .library("libcuda.so", others[0].0.clone())
        .evidence(evidence),
    )
}
