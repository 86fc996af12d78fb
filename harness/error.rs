//! The harness's own failures (exit status 2), each saying what to do about it.
//! Findings about the host are not errors: they are results.

use std::path::PathBuf;

/// A report that could not be written.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    #[error("cannot write the report to {}: {source}; check that its directory exists and is writable", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write the report to standard output: {0}")]
    Stdout(std::io::Error),
    #[error("cannot encode the report as {format}: {reason}")]
    Encode {
        format: &'static str,
        reason: String,
    },
    #[error("--format {format} is not available for {report} reports; use {instead}")]
    Unsupported {
        format: &'static str,
        report: &'static str,
        instead: &'static str,
    },
}
