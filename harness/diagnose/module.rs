//! The kernel module, live: a `libcuda.so.1` the loader reaches is only half a driver. Without
//! the NVIDIA kernel module (`/proc/driver/nvidia`, `/sys/module/nvidia`), or without its device
//! nodes (`/dev/nvidiactl`, `/dev/nvidiaN`), every CUDA call fails: after a driver package
//! upgrade before the reboot, with the module blacklisted, in a container started without the
//! GPU. WSL 2 has no such module and reaches the GPU through `/dev/dxg`: nothing to say there.

use super::driver::DRIVER_SONAME;
use super::finding::{Cause, Finding, Severity};
use super::Context;
use crate::discover::nvidia::{PROC_VERSION, SYS_VERSION};

pub fn check(ctx: &Context) -> Option<Finding> {
    let facts = ctx.driver_files?;
    if ctx.sysroot || facts.wsl_gpu {
        return None;
    }
    let found = super::driver::reachable_driver(ctx)?;
    let version = facts
        .libcuda
        .iter()
        .find(|f| f.real == found || f.path == found)
        .and_then(|f| f.version())
        .map(|v| format!(" (driver {v})"))
        .unwrap_or_default();
    if facts.modules.is_empty() {
        return Some(
            Finding::new(
                Severity::Error,
                Cause::NoKernelModule,
                format!("a libcuda.so.1{version} is reachable but no NVIDIA kernel module is loaded: every CUDA call fails"),
                "load it (`modprobe nvidia`, or reboot after a driver upgrade); in a container, start it with `--gpus all`".into(),
            )
            .library(DRIVER_SONAME, found)
            .evidence(vec![format!("{PROC_VERSION}: absent"), format!("{SYS_VERSION}: absent")]),
        );
    }
    if facts.device_nodes.is_empty() {
        let mut evidence = vec!["/dev/nvidiactl, /dev/nvidia0: absent".to_string()];
        evidence.extend(facts.module_evidence());
        return Some(
            Finding::new(
                Severity::Error,
                Cause::NoKernelModule,
                format!("the NVIDIA kernel module is loaded but its device nodes (/dev/nvidiactl, /dev/nvidiaN) are missing: CUDA finds no GPU for the libcuda.so.1{version} reachable here"),
                "create them (`nvidia-modprobe -c 0 -u`, or `nvidia-smi` once as root); in a container, start it with `--gpus all`".into(),
            )
            .library(DRIVER_SONAME, found)
            .evidence(evidence),
        );
    }
    None
}
