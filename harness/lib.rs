//! stackbench: find every CUDA installation on a host, read every library, and explain it.
//!
//! Data flows one way: `discover` finds library files, `elf` reads each without loading it,
//! `scan` groups them into installations, `report` renders the result in each format.

pub mod app;
pub mod catalog;
pub mod cli;
pub mod discover;
pub mod elf;
pub mod error;
pub mod model;
pub mod options;
pub mod output;
pub mod report;
pub mod scan;
pub mod symlink;
