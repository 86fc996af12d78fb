//! A report that is one table, in every format that suits one: terminal (aligned columns under
//! a headline, notes below), Markdown, CSV, and the report's own JSON. JUnit and OpenMetrics
//! have no place for such a table and say which formats do.

use super::format::Format;
use crate::error::OutputError;
use serde::Serialize;
use std::fmt::Write;

/// A table: its column names and its rows of cells, in order.
pub struct Table {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

/// A one-table report: what it is (`compare --calibrate`), its headline, the table, and notes
/// that explain the columns (terminal only).
pub struct Tabular<'a, R: Serialize> {
    pub command: &'static str,
    pub headline: String,
    pub table: Table,
    pub notes: &'a str,
    pub json: &'a R,
}

impl<R: Serialize> Tabular<'_, R> {
    /// The report in `format`.
    pub fn render(&self, format: Format) -> Result<Vec<u8>, OutputError> {
        let unsupported = |name| OutputError::Unsupported {
            format: name,
            report: self.command,
            instead: "terminal, markdown, csv or json",
        };
        let text = match format {
            Format::Json => return super::json::to_json(self.json),
            Format::Junit => return Err(unsupported("junit")),
            Format::Openmetrics => return Err(unsupported("openmetrics")),
            Format::Csv => return self.table.csv(),
            Format::Markdown if self.table.rows.is_empty() => {
                format!("# stackbench {}\n\n**{}**.\n", self.command, self.headline)
            }
            Format::Markdown => format!(
                "# stackbench {}\n\n**{}**.\n\n{}",
                self.command,
                self.headline,
                self.table.markdown()
            ),
            Format::Terminal => {
                let mut out = format!("stackbench {}: {}\n", self.command, self.headline);
                if !self.table.rows.is_empty() {
                    out.push('\n');
                    out.push_str(&self.table.aligned());
                }
                if !self.notes.is_empty() {
                    let _ = writeln!(out, "\n  {}", self.notes);
                }
                out
            }
        };
        Ok(text.into_bytes())
    }
}

impl Table {
    /// The table as aligned columns, two spaces in, for a terminal.
    pub fn aligned(&self) -> String {
        aligned(&self.header, &self.rows)
    }

    /// The table in Markdown, its first column as code.
    pub fn markdown(&self) -> String {
        let mut out = format!(
            "| {} |\n|{}\n",
            self.header.join(" | "),
            " --- |".repeat(self.header.len())
        );
        for row in &self.rows {
            let mut cells = row.clone();
            if let Some(first) = cells.first_mut() {
                *first = format!("`{first}`");
            }
            let _ = writeln!(out, "| {} |", cells.join(" | "));
        }
        out
    }

    /// The table as CSV, the header first.
    pub fn csv(&self) -> Result<Vec<u8>, OutputError> {
        let encode = |reason: String| OutputError::Encode {
            format: "csv",
            reason,
        };
        let mut writer = csv::Writer::from_writer(Vec::new());
        for record in std::iter::once(&self.header).chain(&self.rows) {
            writer
                .write_record(record)
                .map_err(|e| encode(e.to_string()))?;
        }
        writer.into_inner().map_err(|e| encode(e.to_string()))
    }
}

/// `rows` under `header` as columns padded to their widest cell, two spaces in, one line each.
pub fn aligned<S: AsRef<str>>(header: &[S], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.as_ref().chars().count()).collect();
    for row in rows {
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
        format!("  {}\n", padded.join("  ").trim_end())
    };
    let mut out = line(header.iter().map(AsRef::as_ref).collect());
    for row in rows {
        out.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    out
}
