//! Validated options: command-line arguments checked and turned into what the commands need.

use crate::cli::{ColorChoice, Format, ScanArgs};
use crate::discover;
use crate::error::OptionsError;
use std::io::IsTerminal;
use std::path::PathBuf;

/// Where a report goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    Stdout,
    File(PathBuf),
}

/// What `scan` needs, checked.
#[derive(Debug, Clone)]
pub struct ScanOptions {
    pub discover: discover::Options,
    pub format: Format,
    pub destination: Destination,
    pub color: bool,
}

impl ScanOptions {
    /// Checks the arguments: every `--root` must be a readable directory.
    pub fn from_args(args: ScanArgs, color: ColorChoice) -> Result<ScanOptions, OptionsError> {
        for root in &args.roots {
            discover::check_root(root).map_err(|problem| OptionsError::BadRoot {
                path: root.clone(),
                reason: problem.message,
            })?;
        }
        let destination = match args.output {
            Some(path) if path.as_os_str() != "-" => Destination::File(path),
            _ => Destination::Stdout,
        };
        let color = use_color(color, &destination);
        Ok(ScanOptions {
            discover: discover::Options {
                roots: args.roots,
                system: !args.no_system,
            },
            format: args.format,
            destination,
            color,
        })
    }
}

/// Colour only for a terminal on standard output, and never when `NO_COLOR` is set.
fn use_color(choice: ColorChoice, destination: &Destination) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            *destination == Destination::Stdout
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                && std::io::stdout().is_terminal()
        }
    }
}
