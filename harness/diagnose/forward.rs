//! `cuda-compat`: a forward-compatibility `libcuda` (`/usr/local/cuda-X.Y/compat`) on the
//! loader's search. NVIDIA's rule: "Forward Compatibility is applicable only for systems with
//! NVIDIA Data Center GPUs, select NGC Server Ready SKUs of RTX cards, Jetson boards", and it is
//! "mainly intended to support applications built on newer CUDA Toolkits to run on systems
//! installed with an older NVIDIA Linux GPU driver". An older compat driver than the host's
//! gives CUDA_ERROR_SYSTEM_DRIVER_MISMATCH (803); a GeForce GPU gives
//! CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE (804).

use super::finding::{Cause, Finding, Severity};
use super::Context;
use crate::discover::nvidia::version_key;

/// NVIDIA's rule, quoted in each finding's evidence.
const RULE: &str = "NVIDIA (CUDA Compatibility, Forward Compatibility): \"Forward Compatibility is applicable only for systems with: NVIDIA Data Center GPUs; Select NGC Server Ready SKUs of RTX cards; Jetson boards.\" It is \"mainly intended to support applications built on newer CUDA Toolkits to run on systems installed with an older NVIDIA Linux GPU driver\"";

pub fn check(ctx: &Context) -> Vec<Finding> {
    let Some(facts) = ctx.driver_files else {
        return Vec::new();
    };
    // Only a compat copy the loader takes before the real driver is used.
    let Some(compat) = facts.libcuda.iter().take_while(|f| f.is_compat()).next() else {
        return Vec::new();
    };
    let Some(compat_version) = compat.version() else {
        return Vec::new();
    };
    let host = facts.driver_version();
    let dir = compat
        .path
        .parent()
        .map(|d| d.display().to_string())
        .unwrap_or_default();
    let fix = match compat.via.as_str() {
        "LD_LIBRARY_PATH" => format!("take {dir} off LD_LIBRARY_PATH: the host's driver is the one to use"),
        _ => format!("take {dir} off the loader's search (remove its ld.so.conf.d entry, then `sudo ldconfig`): the host's driver is the one to use"),
    };
    let mut evidence = vec![compat.describe()];
    evidence.extend(facts.module_evidence());
    let mut findings = Vec::new();
    if let Some(host) = host.filter(|h| version_key(compat_version) < version_key(h)) {
        let mut evidence = evidence.clone();
        evidence.push(RULE.into());
        findings.push(
            Finding::new(
                Severity::Error,
                Cause::CudaCompat,
                format!("the cuda-compat libcuda.so.1 ({compat_version}, {}) is older than the host's driver {host}: it must not be used; CUDA calls fail with CUDA_ERROR_SYSTEM_DRIVER_MISMATCH (803)", compat.path.display()),
                fix.clone(),
            )
            .library("libcuda.so.1", compat.path.clone())
            .evidence(evidence),
        );
    }
    let geforce: Vec<&(std::path::PathBuf, String)> = facts
        .gpus
        .iter()
        .filter(|(_, model)| model.contains("GeForce"))
        .collect();
    if let Some((file, model)) = geforce.first() {
        evidence.push(format!("{}: Model: {model}", file.display()));
        evidence.push(RULE.into());
        findings.push(
            Finding::new(
                Severity::Error,
                Cause::CudaCompat,
                format!("the cuda-compat libcuda.so.1 ({compat_version}, {}) is used on {model}, a GPU forward compatibility does not support: CUDA calls fail with CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE (804)", compat.path.display()),
                fix,
            )
            .library("libcuda.so.1", compat.path.clone())
            .evidence(evidence),
        );
    }
    findings
}
