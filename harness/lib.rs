//! stackbench: find every CUDA installation on a host, read every library, and explain it.
//!
//! Data flows one way: `discover` finds library files, `elf` reads each without loading it,
//! `scan` groups them into installations; `doctor` adds live loading (`probe`, in a worker
//! process), the loader's search (`resolve`) and NVIDIA's rules (`compat`), and `diagnose`
//! turns them into findings (`build` reads what a build of CUDA code would find); `check` runs conformance checks per combination of driver and
//! libraries in worker processes; `bench` times vector add and matmul per combination to
//! nvbench's standard, and NVRTC compilation and library loading on the CPU; `compare` sets two
//! runs side by side, `merge` sets a fleet's runs in one table, and `history` gathers every
//! run for a page of them over time; `report` renders every report in each format.
//!
//! The modules stand in layers, and an import only points down them: doc/architecture.md
//! draws them, and `tests/layering.rs` holds them.

// Unit tests make and read their own files; the host's are read through `hostfs` (clippy.toml).
#![cfg_attr(test, allow(clippy::disallowed_methods))]

pub mod app;
pub mod baseline;
pub mod bench;
pub mod catalog;
pub mod check;
pub mod cli;
pub mod cluster;
pub mod command;
pub mod compare;
pub mod compat;
pub mod contain;
pub mod devices;
pub mod diagnose;
pub mod discover;
pub mod doctor;
pub mod e4m3;
pub mod elf;
pub mod error;
pub mod exit;
pub mod figures;
pub mod fleet;
pub mod gpu;
pub mod history;
pub mod hostfs;
pub mod init;
pub mod kernels;
pub mod lifetime;
pub mod machine;
pub mod merge;
pub mod model;
pub mod nccl;
pub mod node;
pub mod options;
pub mod output;
pub mod pathname;
pub mod pe;
pub mod probe;
pub mod process;
pub mod progress;
pub mod report;
pub mod resolve;
pub mod roofline;
pub mod run_id;
pub mod scan;
pub mod schema;
pub mod search_path;
pub mod store;
pub mod symlink;
pub mod tags;
pub mod timestamp;
pub mod tolerance;
pub mod toolchain;
pub mod trust;
pub mod version;
