//! What the comparison's views share: each row's cells, in words.

use super::bench::duration;
use crate::compare::model::{BenchmarkRow, Change, CheckChange, CheckRow, CompareReport};

/// `old → new`, `-` for a missing side.
pub fn change_text(change: &Change) -> String {
    format!(
        "{} → {}",
        change.old.as_deref().unwrap_or("-"),
        change.new.as_deref().unwrap_or("-")
    )
}

/// A median, or `-`.
pub fn median(value: Option<f64>) -> String {
    value.map_or("-".to_owned(), duration)
}

/// The change in percent (`+3.1%`) and its interval (`+2.4% … +3.9%`), or why there is none
/// (`failed → measured`).
pub fn ratio_cells(row: &BenchmarkRow) -> (String, String) {
    let pct = |r: f64| format!("{:+.1}%", 100.0 * (r - 1.0));
    match row.ratio {
        Some(r) => (pct(r.ratio), format!("{} … {}", pct(r.low), pct(r.high))),
        None => (
            format!(
                "{} → {}",
                row.old_status.as_deref().unwrap_or("-"),
                row.new_status.as_deref().unwrap_or("-")
            ),
            "-".to_owned(),
        ),
    }
}

/// The verdict, with a mark when the clocks differ.
pub fn verdict(row: &BenchmarkRow) -> String {
    let verdict = row.verdict.map_or("-", |v| v.name());
    if row.clocks_differ {
        format!("{verdict} (clocks differ)")
    } else {
        verdict.to_owned()
    }
}

/// `regression`, `fixed`, `new reason`, ...
pub fn check_change(row: &CheckRow) -> &'static str {
    match row.change {
        CheckChange::Regression => "regression",
        CheckChange::Fixed => "fixed",
        CheckChange::NewReason => "new reason",
        CheckChange::Status => "status",
        CheckChange::Appeared => "appeared",
        CheckChange::Disappeared => "disappeared",
    }
}

/// `pass → fail`.
pub fn statuses(row: &CheckRow) -> String {
    format!(
        "{} → {}",
        row.old_status.as_deref().unwrap_or("-"),
        row.new_status.as_deref().unwrap_or("-")
    )
}

/// The reason worth showing: the new one, else the old one.
pub fn reason(row: &CheckRow) -> &str {
    row.new_reason
        .as_deref()
        .or(row.old_reason.as_deref())
        .unwrap_or("")
}

/// The headline: `3 regressions` or `no regression`, and the verdict counts for benchmarks.
pub fn headline(report: &CompareReport) -> String {
    let regressions = match report.regressions.len() {
        0 => "no regression".to_owned(),
        1 => "1 regression".to_owned(),
        n => format!("{n} regressions"),
    };
    if report.benchmarks.is_empty() {
        return regressions;
    }
    let count = |name: &str| {
        report
            .benchmarks
            .iter()
            .filter(|r| r.verdict.is_some_and(|v| v.name() == name))
            .count()
    };
    format!(
        "{regressions}; {} slower, {} faster, {} same, {} unclear",
        count("slower"),
        count("faster"),
        count("same"),
        count("unclear")
    )
}
