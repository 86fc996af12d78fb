//! Command-line definitions (clap) and nothing else; `options` validates what they give.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// Test harness and benchmark suite for NVIDIA GPU software stacks.
#[derive(Debug, Parser)]
#[command(name = "stackbench", version, about, propagate_version = true)]
pub struct Cli {
    /// When to colour the terminal report (NO_COLOR in the environment turns it off).
    #[arg(long, value_enum, global = true, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Find every CUDA installation and read every library in it without loading it.
    Scan(ScanArgs),
    /// The worker process that loads libraries for `doctor` (internal; reads a request on stdin).
    #[command(name = "__probe", hide = true)]
    Probe,
}

/// Where to look and how to report.
#[derive(Debug, Args)]
pub struct ScanArgs {
    /// Also search this directory, recursively (repeatable).
    #[arg(long = "root", value_name = "DIR")]
    pub roots: Vec<PathBuf>,
    /// Search only the --root directories, not the host's own places.
    #[arg(long, requires = "roots")]
    pub no_system: bool,
    /// Report format; json is the canonical, schema-tagged form.
    #[arg(long, value_enum, default_value_t = Format::Terminal)]
    pub format: Format,
    /// Write the report to this file (atomically) instead of standard output; `-` is standard output.
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Report formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Aligned tables for people, grouped by installation.
    Terminal,
    Json,
    Csv,
    Markdown,
}

/// When to use colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}
