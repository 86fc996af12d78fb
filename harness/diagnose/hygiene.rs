//! Search-path hygiene: LD_LIBRARY_PATH entries that mean something other than intended.

use super::finding::{Cause, Finding, Severity};
use super::Context;
use crate::resolve::{self, HygieneKind};

pub fn check(ctx: &Context) -> Vec<Finding> {
    let Some(value) = ctx.ld_library_path else {
        return vec![];
    };
    let cleaned: Vec<&str> = value.split(':').filter(|e| e.starts_with('/')).collect();
    resolve::search_path_hygiene(value)
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
        .collect()
}
