//! What live loading showed: libraries that failed to load (with the loader's own words),
//! crashed or hung while loading, or pulled their dependencies from another installation; and
//! which were not loaded, and why.

use super::finding::{Cause, Finding, Severity};
use super::{file_name, Context, InstallationProbe, Skip};
use crate::catalog;
use crate::model::Layout;
use crate::probe::{LoadOutcome, LoadReport};
use std::path::{Path, PathBuf};

/// Trail lines kept as evidence for a failure.
const TRAIL_LINES: usize = 12;

pub fn check(ctx: &Context) -> Vec<Finding> {
    let mut findings = Vec::new();
    for probe in ctx.probes {
        findings.extend(skipped(probe));
        for load in &probe.loads {
            findings.extend(outcome(probe, load));
            findings.extend(mixed(ctx, probe, load));
        }
    }
    findings
}

fn outcome(probe: &InstallationProbe, load: &LoadReport) -> Option<Finding> {
    let name = file_name(&load.path);
    let trail: Vec<String> = load
        .search_trail
        .iter()
        .rev()
        .take(TRAIL_LINES)
        .rev()
        .cloned()
        .collect();
    let finding = match &load.outcome {
        LoadOutcome::Loaded => return None,
        LoadOutcome::Failed { error } => match failed(&name, error) {
            Failure::Host(finding) => return Some(finding),
            Failure::Library(finding) => finding,
        },
        LoadOutcome::Crashed { signal_name, exit_code, .. } => Finding::new(
            Severity::Error,
            Cause::LoadCrashed,
            match (signal_name, exit_code) {
                (Some(signal), _) => format!("loading {name} killed the process with {signal}"),
                (None, Some(code)) => format!("loading {name} ended the process with exit status {code}"),
                _ => format!("loading {name} ended the process"),
            },
            format!("{name}'s initialisation crashes: reinstall it, and check that the libraries it loads come from the same release"),
        ),
        // Nothing of it was verified: never "no errors".
        LoadOutcome::NotProbed { reason } => Finding::new(
            Severity::Error,
            Cause::LoadFailed,
            format!("{name} was not loaded: {reason}"),
            "run doctor again; if it repeats, run with --no-load for the static analysis".into(),
        ),
        LoadOutcome::TimedOut { after_ms } => Finding::new(
            Severity::Error,
            Cause::LoadHung,
            format!("loading {name} did not finish within {after_ms} ms"),
            format!("{name}'s initialisation hangs (often a driver or device-node wait): run `LD_DEBUG=libs` on a program that loads it to see where"),
        ),
    };
    let mut finding = finding
        .library(name, load.path.clone())
        .installation(probe.root.clone());
    finding.evidence.extend(trail);
    Some(finding)
}

/// The libraries of `probe`'s installation left out of its worker by design, one note for each
/// reason, so that none goes unsaid (the others have findings of their own, [`Skip::note`]).
fn skipped(probe: &InstallationProbe) -> Vec<Finding> {
    let mut by_reason: Vec<(&Skip, Vec<&Path>)> = Vec::new();
    for skipped in &probe.skipped {
        match by_reason.iter_mut().find(|(r, _)| **r == skipped.reason) {
            Some((_, paths)) => paths.push(&skipped.path),
            None => by_reason.push((&skipped.reason, vec![&skipped.path])),
        }
    }
    by_reason
        .into_iter()
        .filter_map(|(reason, paths)| {
            let (why, fix) = reason.note()?;
            let names: Vec<String> = paths.iter().map(|p| file_name(p)).collect();
            let finding = Finding::new(
                Severity::Info,
                Cause::NotLoaded,
                format!("{} not loaded: {why}", names.join(", ")),
                fix,
            );
            Some(
                finding
                    .installation(probe.root.clone())
                    .evidence(paths.iter().map(|p| p.display().to_string()).collect()),
            )
        })
        .collect()
}

/// A load failure is about the library itself, or about the host's driver (one finding for
/// the whole host, which this failure adds its evidence to).
enum Failure {
    Library(Finding),
    Host(Finding),
}

/// A dlopen failure, classified by the loader's message.
fn failed(name: &str, error: &str) -> Failure {
    let seen = vec![format!("dlopen: {error}")];
    let is_driver = |lib: &str| {
        catalog::classify(lib).is_some_and(|n| catalog::is_driver_component(&n.component))
    };
    if let Some((culprit, _)) = error.split_once(": wrong ELF class") {
        let culprit = culprit
            .rsplit('/')
            .next()
            .unwrap_or(culprit)
            .trim()
            .to_string();
        if culprit == name {
            return Failure::Library(
                Finding::new(
                    Severity::Error,
                    Cause::WrongElfClass,
                    format!("{name} cannot load: {error}"),
                    "use the copy built for this machine's word size (x86-64 programs need ELF64 libraries)".into(),
                )
                .evidence(seen),
            );
        }
        let finding = Finding::new(
            Severity::Error,
            Cause::WrongElfClass,
            format!("{name} cannot load: its dependency {culprit} resolves to a copy of the wrong ELF class"),
            format!("put the {} build of {culprit} first on the search path", std::env::consts::ARCH),
        )
        .evidence(vec![format!("{name}: {error}")]);
        return if is_driver(&culprit) {
            let mut host = finding
                .library(culprit.clone(), PathBuf::new())
                .missing(culprit, "every CUDA program");
            host.severity = Severity::Info;
            Failure::Host(host)
        } else {
            Failure::Library(finding.missing(culprit, name))
        };
    }
    if error.contains("cannot open shared object file") {
        let missing = error
            .split(": cannot open shared object file")
            .next()
            .unwrap_or(error);
        let missing = missing
            .rsplit(": ")
            .next()
            .unwrap_or(missing)
            .trim()
            .to_string();
        if is_driver(&missing) {
            return Failure::Host(super::driver::no_driver_evidence(format!(
                "{name} cannot load without it: {error}"
            )));
        }
        return Failure::Library(
            Finding::new(
                Severity::Error,
                Cause::MissingDependency,
                format!("{name} cannot load: {missing} is not on its search path"),
                format!("install {missing} or add its directory to LD_LIBRARY_PATH"),
            )
            .missing(missing, name)
            .evidence(seen),
        );
    }
    if error.contains("version `") && error.contains("not found") {
        let cause = if error.contains("GLIBC_") {
            Cause::GlibcTooOld
        } else {
            Cause::MissingSymbolVersion
        };
        return Failure::Library(
            Finding::new(
                Severity::Error,
                cause,
                format!("{name} cannot load: {error}"),
                "put the release of the named library that defines this version first on the search path".into(),
            )
            .evidence(seen),
        );
    }
    Failure::Library(
        Finding::new(
            Severity::Error,
            Cause::LoadFailed,
            format!("{name} cannot load: {error}"),
            "the library or one of its dependencies is incompatible with the others loaded; reinstall them from one release".into(),
        )
        .evidence(seen),
    )
}

/// CUDA libraries that a library of one installation pulled in from another (drivers aside).
fn mixed(ctx: &Context, probe: &InstallationProbe, load: &LoadReport) -> Option<Finding> {
    let foreign: Vec<String> = load
        .loaded
        .iter()
        .filter(|o| {
            catalog::classify(&file_name(&o.path))
                .is_some_and(|n| !catalog::is_driver_component(&n.component))
        })
        .filter_map(|o| {
            let home = ctx.installation_of(&o.path)?;
            (home.root != probe.root && home.layout != Layout::Driver)
                .then(|| format!("{} from {}", o.path.display(), home.root.display()))
        })
        .collect();
    if foreign.is_empty() {
        return None;
    }
    let name = file_name(&load.path);
    Some(
        Finding::new(
            Severity::Warning,
            Cause::MixedInstallations,
            format!("{name} from {} loads CUDA libraries from another installation", probe.root.display()),
            format!("make {} self-contained (install the missing wheels/packages there) or drop the other installation from LD_LIBRARY_PATH", probe.root.display()),
        )
        .library(name, load.path.clone())
        .installation(probe.root.clone())
        .evidence(foreign),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A worker that could not start verified nothing: an error, never "no errors".
    #[test]
    fn a_library_no_worker_loaded_is_an_error() {
        let probe = InstallationProbe {
            root: PathBuf::from("/venv"),
            loads: Vec::new(),
            loaded_as: None,
            not_loaded: None,
            left_out: Vec::new(),
            environment: Vec::new(),
            skipped: Vec::new(),
        };
        let load = LoadReport {
            path: PathBuf::from("/venv/libcudart.so.12"),
            outcome: LoadOutcome::NotProbed {
                reason: "cannot start the probe worker: Exec format error".into(),
            },
            loaded: Vec::new(),
            search_trail: Vec::new(),
            api: Vec::new(),
            millis: 0,
            messages: Vec::new(),
        };
        let finding = outcome(&probe, &load).expect("a finding");
        assert_eq!(finding.severity, Severity::Error);
        assert_eq!(finding.cause, Cause::LoadFailed);
        assert!(
            finding.message.contains("Exec format error"),
            "{}",
            finding.message
        );
    }
}
