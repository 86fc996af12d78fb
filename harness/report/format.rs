//! The formats a report is rendered in, and how a rendered report is written: the renderers
//! own them, and the command line only chooses among them.

use crate::output::Destination;
use clap::ValueEnum;

/// Formats of `report`'s page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PageFormat {
    /// One self-contained page with inline SVG charts.
    Html,
    /// The same tables without the charts (pull requests, `$GITHUB_STEP_SUMMARY`).
    Markdown,
    /// The gathered history, `stackbench.history/v1`.
    Json,
}

/// Report formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Aligned tables for people, grouped by installation.
    Terminal,
    Json,
    Csv,
    Markdown,
    /// JUnit XML, one testsuite per combination (`check` only).
    Junit,
    /// Prometheus text for node_exporter's textfile collector (`doctor`, `check`, `bench`,
    /// `merge`): gauges with dcgm-exporter's GPU labels, for a fleet's dashboards and alerts.
    Openmetrics,
}

/// How a report is written.
#[derive(Debug, Clone)]
pub struct ReportOptions {
    pub format: Format,
    pub destination: Destination,
    pub color: bool,
    /// Every evidence line and the full library tables in the terminal's doctor report.
    pub verbose: bool,
}
