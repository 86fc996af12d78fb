//! The harness's own failures (exit status 2), each saying what to do about it.
//! Findings about the host are not errors: they are results.

use std::path::PathBuf;

/// Arguments that cannot be acted on.
#[derive(Debug, thiserror::Error)]
pub enum OptionsError {
    #[error("--root {}: {reason}; give an existing, readable directory", path.display())]
    BadRoot { path: PathBuf, reason: String },
    #[error("--sysroot {}: {reason}; give the directory that stands for / (a copy of a host's file system)", path.display())]
    BadSysroot { path: PathBuf, reason: String },
    #[error("--timeout {0}: give a number of seconds above 0 and at most 3600, e.g. --timeout 10")]
    BadTimeout(f64),
    #[error("--target {0}: give a GPU architecture such as sm_90, sm_86 or 9.0")]
    BadTarget(String),
    #[error("{0}")]
    BadDevices(String),
    #[error("--driver-dir {}: no libcuda.so.1 there; give the directory that holds the driver's libcuda.so.1 (and libnvidia-ml.so.1)", .0.display())]
    BadDriverDir(PathBuf),
    #[error("--format junit: JUnit reports check's results only; give --format terminal, json, csv or markdown")]
    JunitNotForBench,
    #[error("--threshold {0}: give a percentage above 0 and below 100, e.g. --threshold 2")]
    BadThreshold(f64),
    #[error("compare needs two runs: give OLD and NEW result files, or --latest bench|check|doctor|scan")]
    NoRunsToCompare,
    #[error(transparent)]
    Config(#[from] crate::check::config::ConfigError),
    #[error(transparent)]
    BadSelector(#[from] crate::fleet::select::SelectorError),
    #[error(transparent)]
    World(#[from] crate::cluster::world::WorldError),
    #[error("--rendezvous {0}: give HOST:PORT, rank 0's address and a free port, e.g. --rendezvous node01:29500")]
    BadRendezvous(String),
    #[error("--join-within {0}: give a number of seconds above 0 and at most 3600, e.g. --join-within 60")]
    BadJoinWithin(f64),
    #[error("STACKBENCH_RENDEZVOUS_TOKEN: give every rank the same secret of 16 to 256 bytes, e.g. export STACKBENCH_RENDEZVOUS_TOKEN=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \\n')")]
    BadToken,
    #[error("check --nodes: no rendezvous: set MASTER_ADDR (and MASTER_PORT) to rank 0's node, or give --rendezvous HOST:PORT")]
    NoRendezvous,
    #[error("cannot find stackbench's own executable to start worker processes ({0}); run it by its path, or use --no-load")]
    NoExecutable(std::io::Error),
}

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
