//! Containers and the NVIDIA Container Toolkit: what the environment asks of the toolkit
//! (`NVIDIA_VISIBLE_DEVICES`, `NVIDIA_DRIVER_CAPABILITIES`; NVIDIA: "compute: required for CUDA
//! and OpenCL applications", "utility: required for using nvidia-smi and NVML", unset: "use
//! default driver capability: utility"), CDI specs naming a driver version the host no longer
//! has, and, in an image, the driver that is mounted only at run time.

use super::finding::{Cause, Finding, Severity};
use super::Context;
use crate::discover::container::{grants, ContainerFacts};

pub fn check(ctx: &Context) -> Vec<Finding> {
    let Some(facts) = ctx.container else {
        return Vec::new();
    };
    let mut findings = Vec::new();
    if in_gpu_container(ctx, facts) {
        findings.extend(visible_devices(facts));
        findings.extend(capabilities(facts));
    }
    findings.extend(cdi(ctx, facts));
    findings
}

/// A container meant for the GPU: its markers, and a CUDA image's environment or (read below
/// `--sysroot`) CUDA libraries in it. On this machine's own root, only the environment counts,
/// so a container that never asked for a GPU is left alone.
fn in_gpu_container(ctx: &Context, facts: &ContainerFacts) -> bool {
    !facts.markers.is_empty()
        && (facts.cuda_environment || (ctx.sysroot && !ctx.scan.installations.is_empty()))
}

/// The environment's variables and the container's markers, as evidence.
fn evidence(facts: &ContainerFacts) -> Vec<String> {
    let shown = |v: &Option<String>| match v {
        Some(v) => format!("\"{v}\""),
        None => "unset".into(),
    };
    let mut lines: Vec<String> = facts
        .markers
        .iter()
        .map(|m| format!("container: {m}"))
        .collect();
    lines.push(format!(
        "NVIDIA_VISIBLE_DEVICES={}",
        shown(&facts.visible_devices)
    ));
    lines.push(format!(
        "NVIDIA_DRIVER_CAPABILITIES={}",
        shown(&facts.capabilities)
    ));
    lines
}

/// `NVIDIA_VISIBLE_DEVICES`: unset, `void` or empty gives no GPU and no driver; `none` the
/// driver without a GPU.
fn visible_devices(facts: &ContainerFacts) -> Option<Finding> {
    let value = facts.visible_devices.as_deref().map(str::trim);
    let (severity, message) = match value {
        None => (Severity::Warning, "NVIDIA_VISIBLE_DEVICES is unset: the NVIDIA Container Toolkit gives this container no GPU and no driver (libcuda.so.1, nvidia-smi) unless it is started with --gpus"),
        Some("") | Some("void") => (Severity::Error, "NVIDIA_VISIBLE_DEVICES is empty or \"void\": the NVIDIA Container Toolkit treats the container as any other, with no GPU and no driver libraries"),
        Some("none") => (Severity::Warning, "NVIDIA_VISIBLE_DEVICES is \"none\": the driver's libraries are mounted but no GPU, so CUDA reports no device (cudaErrorNoDevice, 100)"),
        Some(_) => return None,
    };
    Some(
        Finding::new(
            severity,
            Cause::ContainerCapabilities,
            message.into(),
            "start the container with `--gpus all` (Docker) or set NVIDIA_VISIBLE_DEVICES=all (or the GPUs' indices or UUIDs) in its environment".into(),
        )
        .evidence(evidence(facts)),
    )
}

/// `NVIDIA_DRIVER_CAPABILITIES` without `compute` (no `libcuda.so.1`) or `utility` (no
/// `nvidia-smi`, no NVML).
fn capabilities(facts: &ContainerFacts) -> Option<Finding> {
    let given = facts.capabilities.as_deref();
    let compute = grants(given, "compute");
    let utility = grants(given, "utility");
    let (severity, message) = match (compute, utility) {
        (true, true) => return None,
        (false, true) => (Severity::Error, "NVIDIA_DRIVER_CAPABILITIES lacks compute: the NVIDIA Container Toolkit mounts no libcuda.so.1, so every CUDA program fails with \"CUDA driver version is insufficient\" (35)"),
        (true, false) => (Severity::Warning, "NVIDIA_DRIVER_CAPABILITIES lacks utility: the NVIDIA Container Toolkit mounts no nvidia-smi and no libnvidia-ml.so.1, so NVML (telemetry, GPU names) is unavailable"),
        (false, false) => (Severity::Error, "NVIDIA_DRIVER_CAPABILITIES lacks compute and utility: the NVIDIA Container Toolkit mounts no libcuda.so.1, no nvidia-smi and no NVML"),
    };
    Some(
        Finding::new(
            severity,
            Cause::ContainerCapabilities,
            message.into(),
            "set NVIDIA_DRIVER_CAPABILITIES=compute,utility in the container's environment (ENV in the Dockerfile, or `-e` / `--gpus 'all,\"capabilities=compute,utility\"'`)".into(),
        )
        .evidence(evidence(facts)),
    )
}

/// CDI specs whose mounts name a driver version other than the host's (the loaded module's,
/// else the driver library's), and the toolkit in CDI mode without a spec.
fn cdi(ctx: &Context, facts: &ContainerFacts) -> Vec<Finding> {
    let host = ctx.driver_files.and_then(|d| d.driver_version());
    let mut findings = Vec::new();
    for spec in &facts.cdi {
        let Some(host) = host else { break };
        if spec.versions.is_empty() || spec.versions.iter().any(|v| v == host) {
            continue;
        }
        let mut evidence = vec![format!(
            "{}: {}",
            spec.path.display(),
            spec.line.as_deref().unwrap_or("")
        )];
        evidence.extend(
            ctx.driver_files
                .map(|d| d.module_evidence())
                .unwrap_or_default(),
        );
        findings.push(
            Finding::new(
                Severity::Error,
                Cause::ContainerCapabilities,
                format!(
                    "the CDI spec {} names driver {} but the host's driver is {host}: containers started with its devices fail to start (the files it mounts are gone)",
                    spec.path.display(),
                    spec.versions.join(", ")
                ),
                format!(
                    "regenerate it for the installed driver: `sudo nvidia-ctk cdi generate --output={}`",
                    spec.path.display()
                ),
            )
            .library("cdi", spec.path.clone())
            .evidence(evidence),
        );
    }
    if facts.toolkit_mode.as_deref() == Some("cdi") && facts.cdi.is_empty() {
        findings.push(
            Finding::new(
                Severity::Error,
                Cause::ContainerCapabilities,
                "the NVIDIA Container Toolkit is in CDI mode but there is no CDI spec in /etc/cdi or /var/run/cdi: containers asking for a GPU fail to start".into(),
                "generate one: `sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml`".into(),
            )
            .evidence(vec![format!(
                "{}: mode = \"cdi\"",
                crate::discover::container::TOOLKIT_CONFIG
            )]),
        );
    }
    findings
}

/// In an image read below `--sysroot`, the toolkit mounts the host's `libcuda.so.1` at run
/// time: when the container asks for it (`compute`), no driver in the image is expected, and
/// the `no_driver` finding says so as information.
pub fn explain_missing_driver(ctx: &Context, findings: &mut [Finding]) {
    let Some(facts) = ctx.container else { return };
    let asked = facts.visible_devices.is_none()
        || facts
            .visible_devices
            .as_deref()
            .is_some_and(|v| !matches!(v.trim(), "" | "void"));
    if !ctx.sysroot
        || facts.markers.is_empty()
        || !grants(facts.capabilities.as_deref(), "compute")
        || !asked
    {
        return;
    }
    for finding in findings.iter_mut().filter(|f| f.cause == Cause::NoDriver) {
        finding.severity = Severity::Info;
        finding.message = "the image holds no libcuda.so.1: the NVIDIA Container Toolkit mounts the host's driver when the container starts (NVIDIA_DRIVER_CAPABILITIES includes compute)".into();
        finding.fix = "nothing in the image; run it with the NVIDIA Container Toolkit (`docker run --gpus all ...`)".into();
    }
}
