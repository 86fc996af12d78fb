//! The trust rule's findings: installations not loaded, and why (the rule is in
//! [`crate::trust`]).

use super::finding::{Cause, Finding, Severity};
use super::Context;
use crate::trust::Refusal;

pub fn check(ctx: &Context) -> Vec<Finding> {
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
