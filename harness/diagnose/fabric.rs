//! NVSwitch systems (HGX) and the Fabric Manager: without `nvidia-fabricmanager` running, and
//! of the driver's own version, every CUDA program fails with CUDA_ERROR_SYSTEM_NOT_READY (802).

use super::finding::{Cause, Finding, Severity};
use super::Context;
use crate::discover::nvidia::{FABRIC_MANAGER, FABRIC_MANAGER_UNIT};

pub fn check(ctx: &Context) -> Vec<Finding> {
    let Some(facts) = ctx.driver_files else {
        return Vec::new();
    };
    if facts.nvswitch.is_empty() {
        return Vec::new();
    }
    let driver = facts.driver_version();
    let mut evidence: Vec<String> = facts
        .nvswitch
        .iter()
        .map(|p| format!("{}: NVSwitch present", p.display()))
        .collect();
    evidence.extend(facts.module_evidence());
    let install = match driver {
        Some(v) => format!(
            "install the Fabric Manager of driver {v} and start it: `sudo apt install nvidia-fabricmanager-{}={v}-1 && sudo systemctl enable --now nvidia-fabricmanager`",
            v.split('.').next().unwrap_or(v)
        ),
        None => "install the Fabric Manager of the driver's version (`nvidia-fabricmanager-<branch>`) and start it: `sudo systemctl enable --now nvidia-fabricmanager`".into(),
    };
    let Some(fm) = &facts.fabric_manager else {
        evidence.push(format!("{FABRIC_MANAGER}: missing"));
        return vec![Finding::new(
            Severity::Error,
            Cause::FabricManager,
            "this NVSwitch system has no nvidia-fabricmanager: every CUDA program fails with CUDA_ERROR_SYSTEM_NOT_READY (802) until the fabric is set up".into(),
            install,
        )
        .library("nv-fabricmanager", FABRIC_MANAGER)
        .evidence(evidence)];
    };
    evidence.push(format!(
        "{FABRIC_MANAGER}: present, package {}",
        fm.package.as_deref().unwrap_or("unknown")
    ));
    if let (Some(fm_version), Some(driver)) = (fm.version.as_deref(), driver) {
        if fm_version != driver {
            return vec![Finding::new(
                Severity::Error,
                Cause::FabricManager,
                format!("nvidia-fabricmanager is {fm_version} but the driver is {driver}: it refuses to start with another driver version, and every CUDA program fails with CUDA_ERROR_SYSTEM_NOT_READY (802)"),
                install,
            )
            .library("nv-fabricmanager", FABRIC_MANAGER)
            .evidence(evidence)];
        }
    }
    if !fm.enabled {
        evidence.push(format!("{FABRIC_MANAGER_UNIT}: missing"));
        return vec![Finding::new(
            Severity::Warning,
            Cause::FabricManager,
            "nvidia-fabricmanager is installed but not enabled at boot: after a reboot every CUDA program fails with CUDA_ERROR_SYSTEM_NOT_READY (802) until it is started".into(),
            "sudo systemctl enable --now nvidia-fabricmanager".into(),
        )
        .library("nv-fabricmanager", FABRIC_MANAGER)
        .evidence(evidence)];
    }
    Vec::new()
}
