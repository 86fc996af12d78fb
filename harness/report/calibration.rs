//! `compare --calibrate` in every format that suits a table: terminal, Markdown, CSV and JSON.

use super::format::ReportOptions;
use super::table::{Table, Tabular};
use crate::compare::calibrate::{CalibrationReport, CalibrationRow};
use crate::error::OutputError;

/// A fraction as a percentage with one decimal.
fn pct(fraction: f64) -> String {
    format!("{:.1}%", 100.0 * fraction)
}

/// The columns, named.
const HEADER: [&str; 10] = [
    "benchmark",
    "pairs",
    "slower",
    "faster",
    "same",
    "unclear",
    "below threshold",
    "false verdicts",
    "widest A/A change",
    "detectable change",
];

/// One row's cells, beside [`HEADER`] and the threshold for none.
fn cells(row: &CalibrationRow) -> Vec<String> {
    vec![
        row.id.clone(),
        row.pairs.to_string(),
        row.slower.to_string(),
        row.faster.to_string(),
        row.same.to_string(),
        row.unclear.to_string(),
        row.below_threshold.to_string(),
        pct(row.false_verdicts),
        pct(row.widest_change),
        pct(row.detectable),
        pct(row.threshold_for_none),
        pct(row.threshold_for_same),
    ]
}

/// What the table says, in a line.
fn headline(report: &CalibrationReport) -> String {
    let wrong: usize = report.benchmarks.iter().map(|b| b.slower + b.faster).sum();
    let verdicts: usize = report.benchmarks.iter().map(|b| b.pairs).sum();
    let at = match report.threshold {
        Some(t) => format!("a threshold of {}", pct(t)),
        None => "each row's threshold from its noise floor".to_owned(),
    };
    format!(
        "{} runs, {} pairs, {verdicts} verdicts at {at}: {wrong} false (slower or faster between \
         runs of one build)",
        report.files.len(),
        report.pairs,
    )
}

/// The calibration in the format `options` ask for.
pub fn calibration(
    options: &ReportOptions,
    report: &CalibrationReport,
) -> Result<Vec<u8>, OutputError> {
    let mut header: Vec<String> = HEADER.iter().map(|h| h.to_string()).collect();
    header.push("threshold for none".into());
    header.push("threshold for same".into());
    Tabular {
        command: "compare --calibrate",
        headline: headline(report),
        table: Table {
            header,
            rows: report.benchmarks.iter().map(cells).collect(),
        },
        notes: "detectable change: the median over pairs of the smallest slowdown each pair's \
                interval would have called slower; threshold for none: the smallest --threshold \
                at which no pair is slower or faster; threshold for same: the smallest at which \
                every pair is the same",
        json: report,
    }
    .render(options.format)
}
