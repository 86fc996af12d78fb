//! GPU code: does each library carry SASS for the GPU, or at least PTX the driver can JIT?

use super::finding::{Cause, Finding, Severity};
use super::{display_name, Context};
use crate::compat::{self, KernelSupport};
use crate::model::ProblemKind;

pub fn check(ctx: &Context) -> Vec<Finding> {
    let Some(gpu) = ctx.gpu else { return vec![] };
    let mut findings = Vec::new();
    for installation in &ctx.scan.installations {
        for library in installation
            .libraries
            .iter()
            .filter(|l| (!l.sass.is_empty() || !l.ptx.is_empty()) && !l.kernel_free)
            // An incomplete listing could miss the very target; its scan problem says so.
            .filter(|l| {
                !l.problems
                    .iter()
                    .any(|p| p.kind == ProblemKind::MalformedFatbin)
            })
        {
            let finding = match compat::kernel_support(gpu, &library.sass, &library.ptx) {
                KernelSupport::Sass { .. } => continue,
                KernelSupport::PtxJit { from } => Finding::new(
                    Severity::Warning,
                    Cause::PtxJitOnly,
                    format!(
                        "{} has no SASS for sm_{}{} (it has {}); the driver JIT-compiles its PTX ({from}) at first use: slow start, and it fails if the PTX is newer than the driver",
                        display_name(library), gpu.major, gpu.minor, library.sass.join(" ")
                    ),
                    format!("use a build of {} with SASS for sm_{}{} (a newer release), or keep the JIT cache (CUDA_CACHE_MAXSIZE) warm", library.name, gpu.major, gpu.minor),
                ),
                KernelSupport::None => Finding::new(
                    Severity::Error,
                    Cause::NoKernelsForGpu,
                    format!(
                        "{} has no kernels for sm_{}{}: SASS {}, PTX {}; its GPU functions fail with 'no kernel image is available for execution on the device'",
                        display_name(library), gpu.major, gpu.minor,
                        if library.sass.is_empty() { "none".to_string() } else { library.sass.join(" ") },
                        if library.ptx.is_empty() { "none".to_string() } else { library.ptx.join(" ") }
                    ),
                    format!("install a release of {} built for sm_{}{}", library.name, gpu.major, gpu.minor),
                ),
            };
            findings.push(
                finding
                    .library(display_name(library), library.path.clone())
                    .installation(installation.root.clone()),
            );
        }
    }
    findings
}
