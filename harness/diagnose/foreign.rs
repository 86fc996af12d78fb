//! Libraries built for another machine than this host's: an aarch64 venv on an x86_64 node
//! (made on a Grace node and shared over a network home), an image pulled for the other
//! platform. glibc passes over such a library as if it were not there, so every program fails
//! with the "cannot open shared object file" of a missing one; this says why.

use super::finding::{Cause, Finding, Severity};
use super::Context;
use crate::model::{Installation, Layout};

/// At most this many libraries are named one by one in the evidence.
const NAMED: usize = 8;

pub fn check(ctx: &Context) -> Vec<Finding> {
    ctx.scan
        .installations
        .iter()
        .filter_map(|installation| {
            let foreign = installation.foreign()?;
            let host = crate::machine::OWN_MACHINE;
            let machines = foreign.machines.join(" and ");
            let example = (foreign.libraries.first())
                .and_then(|l| l.soname.clone())
                .unwrap_or_else(|| "a library".into());
            let message = format!(
                "{}; the loader passes over such a library, so a program fails with '{example}: cannot open shared object file' as if it were missing",
                foreign.describe()
            );
            let mut evidence: Vec<String> = (foreign.libraries.iter().take(NAMED))
                .map(|l| {
                    let class = l.elf_class.as_deref().unwrap_or("ELF");
                    let machine = l.machine.as_deref().unwrap_or("?");
                    format!("{}: {class} {machine}", l.path.display())
                })
                .collect();
            if foreign.libraries.len() > NAMED {
                evidence.push(format!(
                    "(+{} more built for {machines})",
                    foreign.libraries.len() - NAMED
                ));
            }
            evidence.extend(installation.platforms.iter().take(NAMED).cloned());
            let fix = if foreign.whole {
                whole_fix(installation, &machines, host)
            } else {
                format!(
                    "reinstall here the packages that hold them, which takes the {host} builds: a file copied from {machines} does not run on {host}"
                )
            };
            let mut finding = Finding::new(Severity::Error, Cause::ForeignArchitecture, message, fix)
                .installation(installation.root.clone())
                .evidence(evidence);
            if let [only] = foreign.libraries.as_slice() {
                finding = finding.library(super::display_name(only), only.path.clone());
            }
            Some(finding)
        })
        .collect()
}

/// The likely cause of a whole installation of another machine, by how it was installed, and
/// what makes one for this host.
fn whole_fix(installation: &Installation, machines: &str, host: &str) -> String {
    match installation.layout {
        Layout::Pip => format!(
            "the environment was made on {machines} (a network home both kinds of node share) and cannot serve {host}: create it again on this node and `pip install` its packages here, which takes the {host} wheels; keep one environment per architecture"
        ),
        Layout::Conda => format!(
            "the environment was made on {machines} (a conda directory both kinds of node share) and cannot serve {host}: `conda create` it again on this node, which takes the {} packages; keep one environment per architecture",
            conda_subdir(host)
        ),
        _ => format!(
            "these are files for {machines} (an image pulled for the other platform, a copy from another node): pull the image for this platform (`docker pull --platform {} IMAGE`), or install the {host} build",
            docker_platform(host)
        ),
    }
}

/// Conda's name for the platform of machine `machine`.
fn conda_subdir(machine: &str) -> String {
    match machine {
        "x86_64" => "linux-64".into(),
        other => format!("linux-{other}"),
    }
}

/// Docker's name for the platform of machine `machine`.
fn docker_platform(machine: &str) -> String {
    match machine {
        "x86_64" => "linux/amd64".into(),
        "aarch64" => "linux/arm64".into(),
        other => format!("linux/{other}"),
    }
}
