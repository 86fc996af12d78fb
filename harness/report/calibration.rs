//! `compare --calibrate` in every format that suits a table: terminal, Markdown, CSV and JSON.

use crate::cli::Format;
use crate::compare::calibrate::{CalibrationReport, CalibrationRow};
use crate::error::OutputError;
use crate::options::ReportOptions;
use std::fmt::Write;

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
    let mut header: Vec<&str> = HEADER.to_vec();
    header.push("threshold for none");
    header.push("threshold for same");
    let rows: Vec<Vec<String>> = report.benchmarks.iter().map(cells).collect();
    let text = match options.format {
        Format::Json => return super::json::to_json(report),
        Format::Junit => {
            return Err(OutputError::Unsupported {
                format: "junit",
                report: "calibration",
                instead: "terminal, markdown, csv or json",
            })
        }
        Format::Openmetrics => {
            return Err(OutputError::Unsupported {
                format: "openmetrics",
                report: "calibration",
                instead: "terminal, markdown, csv or json",
            })
        }
        Format::Csv => {
            let mut writer = csv::Writer::from_writer(Vec::new());
            let encode = |e: csv::Error| OutputError::Encode {
                format: "csv",
                reason: e.to_string(),
            };
            writer.write_record(&header).map_err(encode)?;
            for row in &rows {
                writer.write_record(row).map_err(encode)?;
            }
            return writer.into_inner().map_err(|e| OutputError::Encode {
                format: "csv",
                reason: e.to_string(),
            });
        }
        Format::Markdown => {
            let mut out = format!(
                "# stackbench compare --calibrate\n\n**{}**.\n\n| {} |\n|{}\n",
                headline(report),
                header.join(" | "),
                " --- |".repeat(header.len())
            );
            for row in &rows {
                let mut cells = row.clone();
                cells[0] = format!("`{}`", cells[0]);
                let _ = writeln!(out, "| {} |", cells.join(" | "));
            }
            out
        }
        Format::Terminal => {
            let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
            for row in &rows {
                for (width, cell) in widths.iter_mut().zip(row) {
                    *width = (*width).max(cell.chars().count());
                }
            }
            let line = |cells: Vec<&str>| {
                let padded: Vec<String> = cells
                    .iter()
                    .zip(&widths)
                    .map(|(cell, width)| format!("{cell:<width$}"))
                    .collect();
                format!("  {}", padded.join("  ").trim_end())
            };
            let mut out = format!("stackbench compare --calibrate: {}\n\n", headline(report));
            let _ = writeln!(out, "{}", line(header.clone()));
            for row in &rows {
                let _ = writeln!(out, "{}", line(row.iter().map(String::as_str).collect()));
            }
            out.push_str(
                "\n  detectable change: the median over pairs of the smallest slowdown each pair's \
                 interval would have called slower; threshold for none: the smallest --threshold \
                 at which no pair is slower or faster; threshold for same: the smallest at which \
                 every pair is the same\n",
            );
            out
        }
    };
    Ok(text.into_bytes())
}
