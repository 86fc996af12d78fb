//! Exporters: one module per format, all behind one trait that turns a report into bytes.
//! JSON is the canonical form; the others are views of it.

mod csv;
mod json;
mod markdown;
mod terminal;

use crate::cli::Format;
use crate::error::OutputError;
use crate::model::ScanReport;

/// Turns reports into the bytes of one format.
pub trait Exporter {
    /// The scan report in this format.
    fn scan(&self, report: &ScanReport) -> Result<Vec<u8>, OutputError>;
}

/// The exporter for a format; `color` matters to the terminal report only.
pub fn exporter(format: Format, color: bool) -> Box<dyn Exporter> {
    match format {
        Format::Terminal => Box::new(terminal::Terminal { color }),
        Format::Json => Box::new(json::Json),
        Format::Csv => Box::new(csv::Csv),
        Format::Markdown => Box::new(markdown::Markdown),
    }
}

/// A list for one table cell: items joined by a space, `-` when empty.
fn cell(items: &[String]) -> String {
    if items.is_empty() {
        "-".to_string()
    } else {
        items.join(" ")
    }
}

/// SASS and PTX targets in short form: `sm 50 60 90a`, `compute 90`.
fn archs(items: &[String], prefix: &str) -> String {
    if items.is_empty() {
        return "-".to_string();
    }
    let numbers: Vec<&str> = items
        .iter()
        .map(|a| a.strip_prefix(prefix).unwrap_or(a))
        .collect();
    format!("{} {}", prefix.trim_end_matches('_'), numbers.join(" "))
}
