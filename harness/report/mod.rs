//! Exporters: one module per format, all behind one trait that turns a report into bytes.
//! JSON is the canonical form; the others are views of it.

mod csv;
mod json;
mod markdown;
mod terminal;

use crate::cli::Format;
use crate::doctor::DoctorReport;
use crate::error::OutputError;
use crate::model::ScanReport;

/// Turns reports into the bytes of one format.
pub trait Exporter {
    /// The scan report in this format.
    fn scan(&self, report: &ScanReport) -> Result<Vec<u8>, OutputError>;
    /// The doctor report in this format.
    fn doctor(&self, report: &DoctorReport) -> Result<Vec<u8>, OutputError>;
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

/// Counts of findings by severity: errors, warnings, info.
fn severity_counts(report: &DoctorReport) -> [usize; 3] {
    use crate::diagnose::finding::Severity;
    let count = |s: Severity| report.findings.iter().filter(|f| f.severity == s).count();
    [
        count(Severity::Error),
        count(Severity::Warning),
        count(Severity::Info),
    ]
}

/// One line saying which GPU the report checked against.
fn gpu_line(report: &DoctorReport) -> String {
    let gpu = &report.gpu;
    let devices: Vec<String> = gpu
        .devices
        .iter()
        .map(|d| format!("{} (compute capability {})", d.name, d.compute_capability))
        .collect();
    let mut line = if devices.is_empty() {
        "no GPU".to_string()
    } else {
        devices.join(", ")
    };
    line.push_str(&format!(" [{}]", gpu.source));
    if let Some(v) = &gpu.driver_version {
        line.push_str(&format!(", kernel driver {v}"));
    }
    if let Some(note) = &gpu.note {
        line.push_str(&format!(": {note}"));
    }
    line
}
