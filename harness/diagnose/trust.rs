//! The trust rule's findings: installations not loaded, and why (the rule is in
//! [`crate::trust`]).

use super::finding::{Cause, Finding, Severity};
use super::Context;
use crate::trust::Refusal;

pub fn check(ctx: &Context) -> Vec<Finding> {
    let mut findings = not_loaded(ctx);
    findings.extend(code_variables(ctx));
    findings
}

/// The code variables of the environment naming a file the user stackbench runs as may not
/// load: stackbench leaves them out of its workers, but every other program of that user runs
/// what they name.
fn code_variables(ctx: &Context) -> Vec<Finding> {
    let (Some(user), Some(host)) = (ctx.user, ctx.host) else {
        return Vec::new();
    };
    let vars = host.env.iter().map(|(k, v)| (k.as_str(), v.as_str()));
    let mut found = crate::trust::environment::untrusted_code(user.uid, vars);
    found.sort_by_key(|(name, _, _)| *name);
    found
        .into_iter()
        .map(|(name, value, distrust)| {
            Finding::new(
                Severity::Error,
                Cause::UntrustedCodeVariable,
                format!(
                    "{name}={value} names code that every CUDA or NCCL program{} loads, and {}; stackbench's workers do not get it",
                    crate::trust::identity::as_user(Some(user)),
                    distrust.describe()
                ),
                format!("unset {name}, or point it at a file only you or root can change ({})", distrust.fix()),
            )
            .library(name, value)
        })
        .collect()
}

/// Installations not loaded, and why.
fn not_loaded(ctx: &Context) -> Vec<Finding> {
    ctx.probes
        .iter()
        .filter_map(|probe| {
            let refusal = probe.not_loaded.as_ref()?;
            let (severity, cause) = match refusal {
                Refusal::NotOwned { .. } => (Severity::Info, Cause::NotLoaded),
                _ => (Severity::Error, Cause::UntrustedLocation),
            };
            Some(
                Finding::new(
                    severity,
                    cause,
                    format!("{}: {}", probe.root.display(), refusal.reason()),
                    refusal.fix(),
                )
                .installation(probe.root.clone()),
            )
        })
        .collect()
}
