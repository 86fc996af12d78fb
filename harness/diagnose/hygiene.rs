//! Search-path hygiene: LD_LIBRARY_PATH entries that mean something other than intended, and
//! entries the trust rule ([`crate::trust`]) would not let the user running search.

use super::finding::{Cause, Finding, Severity};
use super::Context;
use crate::resolve::{self, HygieneKind};
use crate::trust::{self, Distrust, Writers};
use std::path::Path;

pub fn check(ctx: &Context) -> Vec<Finding> {
    let Some(value) = ctx.ld_library_path else {
        return vec![];
    };
    let root = ctx.user.is_some_and(|u| u.is_root());
    let cleaned: Vec<&str> = value.split(':').filter(|e| e.starts_with('/')).collect();
    let mut findings: Vec<Finding> = resolve::search_path_hygiene(value)
        .into_iter()
        .filter_map(|issue| {
            let (cause, message) = match issue.kind {
                HygieneKind::Empty => (
                    Cause::EmptySearchPathEntry,
                    "LD_LIBRARY_PATH has an empty entry, which the loader reads as the current directory: libraries there win over installed ones".to_string(),
                ),
                HygieneKind::Relative => (
                    Cause::RelativeSearchPathEntry,
                    format!("LD_LIBRARY_PATH entry `{}` is relative: what it finds depends on the current directory", issue.entry),
                ),
                // For root an untrusted entry is an error, said below.
                HygieneKind::WorldWritable if root => return None,
                HygieneKind::WorldWritable => (
                    Cause::WorldWritableSearchPath,
                    format!("{} on LD_LIBRARY_PATH is world-writable: anyone can plant a library that every CUDA program loads", issue.entry),
                ),
                HygieneKind::Missing => return None,
            };
            let fix = match issue.kind {
                HygieneKind::WorldWritable => format!("chmod o-w {}", issue.entry),
                _ => format!("export LD_LIBRARY_PATH={}", cleaned.join(":")),
            };
            Some(Finding::new(Severity::Warning, cause, message, fix).evidence(vec![format!("LD_LIBRARY_PATH={value}")]))
        })
        .collect();
    if let Some(user) = ctx.user {
        findings.extend(untrusted_entries(value, user));
    }
    findings
}

/// The absolute entries of `value` that `user` may not search by the trust rule: an error when
/// `user` is root (every program root runs with it would run another user's code as root), a
/// warning otherwise; world-writable ones of an ordinary user are the hygiene warning above.
fn untrusted_entries(value: &str, user: &trust::Identity) -> Vec<Finding> {
    crate::search_path::split_search_path(value)
        .into_iter()
        .filter(|entry| entry.starts_with('/'))
        .filter_map(|entry| {
            let distrust = trust::search_distrust(Path::new(&entry), user.uid)?;
            let world = matches!(
                distrust,
                Distrust::Writable {
                    by: Writers::Everyone,
                    ..
                }
            );
            if world && !user.is_root() {
                return None;
            }
            let severity = match user.is_root() {
                true => Severity::Error,
                false => Severity::Warning,
            };
            Some(
                Finding::new(
                    severity,
                    Cause::UntrustedSearchPath,
                    format!(
                        "{entry} on LD_LIBRARY_PATH: {}, so whoever that is can plant a library that every program of {} loads; stackbench's workers leave it out",
                        distrust.describe(),
                        user.label()
                    ),
                    distrust.fix(),
                )
                .evidence(vec![format!("LD_LIBRARY_PATH={value}")]),
            )
        })
        .collect()
}
