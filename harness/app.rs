//! The commands: arguments in, a report out, and the exit status that says what was found.

use crate::cli::{Cli, Command};
use crate::discover::Host;
use crate::options::ScanOptions;
use crate::{output, report, scan};
use clap::Parser;
use std::ffi::OsString;
use std::process::ExitCode;

/// Everything was as it should be.
pub const EXIT_CLEAN: u8 = 0;
/// The run completed and found problems or failures.
pub const EXIT_FINDINGS: u8 = 1;
/// stackbench itself failed.
pub const EXIT_HARNESS: u8 = 2;

/// Runs the command line `args`; errors are the harness's own failures.
pub fn run(args: impl IntoIterator<Item = OsString>) -> anyhow::Result<ExitCode> {
    let cli = Cli::try_parse_from(args).unwrap_or_else(|e| e.exit());
    match cli.command {
        Command::Scan(args) => {
            let options = ScanOptions::from_args(args, cli.color)?;
            let report = scan::scan(&options.discover, &Host::current());
            let bytes = report::exporter(options.format, options.color).scan(&report)?;
            output::write(&options.destination, &bytes)?;
            let status = if report.all_problems().next().is_some() {
                EXIT_FINDINGS
            } else {
                EXIT_CLEAN
            };
            Ok(ExitCode::from(status))
        }
        Command::Probe => Ok(crate::probe::worker::run()),
    }
}
