//! Command-line definitions (clap) and nothing else; `options` validates what they give.
//!
//! Help text only here: each visible subcommand's first doc paragraph is its one-line purpose,
//! its options are grouped under the headings of its guide page's "Options" section
//! (doc/<command>.md, checked by tests/cli_help.rs), and its help ends with that page's path.

use crate::report::format::{Format, PageFormat};
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// Test harness and benchmark suite for NVIDIA GPU software stacks.
#[derive(Debug, Parser)]
#[command(
    name = "stackbench",
    version,
    about,
    propagate_version = true,
    after_help = "Start with `stackbench doctor`. Guide: doc/README.md"
)]
pub struct Cli {
    /// When to colour the terminal report (NO_COLOR in the environment turns it off).
    #[arg(long, value_enum, global = true, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands, in the order a user meets them (`stackbench --help` lists them so).
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Explain every CUDA library load failure on this host, with its cause and one fix.
    ///
    /// Finds every CUDA installation, loads every library as a program of its installation
    /// would (in a worker process), and explains every failure with its cause, the evidence and
    /// one fix; also whether each toolkit can build CUDA code. With `-- COMMAND`, runs a program
    /// and explains what it loads; with --program, resolves one program without running it; with
    /// --sysroot, reads an image or another machine's file system.
    #[command(after_help = "Guide: doc/doctor.md")]
    Doctor(DoctorArgs),
    /// Conformance tests for every CUDA combination on the host: does each one work?
    ///
    /// Loads every library, initialises the driver and each handle, compiles and launches
    /// kernels, profiles, verifies the results against the CPU, on every GPU of the node (with
    /// its links, copies and NCCL). With --quick, a node health check in seconds.
    #[command(after_help = "Guide: doc/check.md")]
    Check(CheckArgs),
    /// Benchmarks for every CUDA combination, with the versions behind each figure.
    ///
    /// Copy, vector add, matmul and NCCL collectives on the GPU (CUDA events, verified outputs,
    /// set against the card's own measured ceilings), NVRTC compile and library load times on
    /// the CPU; writes results/bench-<host>-<gpu>-<date>.{json,csv,md}.
    #[command(after_help = "Guide: doc/bench.md")]
    Bench(BenchArgs),
    /// Two runs of one command side by side: what changed, and is it a regression?
    ///
    /// For bench, check, doctor and scan results: what changed in the environment, and per
    /// benchmark a verdict (slower, faster, same, unclear) from the raw samples, per check what
    /// newly fails; exit 1 on a regression. --calibrate reads A/A runs to set --threshold.
    #[command(after_help = "Guide: doc/compare.md")]
    Compare(CompareArgs),
    /// Every run under results/ on one page: medians run after run, and each check matrix.
    ///
    /// Each benchmark's median and interquartile range run after run, one line per
    /// combination, marked where driver or library versions changed, and each check run's
    /// matrix. Self-contained HTML with inline SVG charts, or the same as Markdown without the
    /// charts, or JSON.
    #[command(after_help = "Guide: doc/report.md")]
    Report(HistoryArgs),
    /// The results of many nodes in one table, the outliers first.
    ///
    /// Bench or check files, one per node, keyed by node, GPU, driver and combination; a GPU
    /// slower than its same-model peers, or a node whose checks fail, is an outlier: exit 1.
    #[command(after_help = "Guide: doc/merge.md")]
    Merge(MergeArgs),
    /// Append runs to the history store: one long Parquet table that DuckDB reads as it is.
    ///
    /// The doctor, check and bench runs among the files given (a directory stands for the JSON
    /// files directly in it), each once: a run the store holds already is left as it is.
    /// Partitioned by day, Hive-style; `compare --fleet` and DuckDB, ClickHouse or pandas query
    /// it.
    #[command(after_help = "Guide: doc/ingest.md")]
    Ingest(IngestArgs),
    /// What a fleet expects of a node, learned from the store: the file --baseline reads.
    ///
    /// Per GPU model, stack (driver, libraries, clocks) and benchmark, or copy of check's node
    /// probe: the median node's figure, the robust spread between nodes, and the range a node
    /// may lie in and still be one of them. `check --baseline` and `merge --baseline` judge a
    /// node against it; save it with `--format json -o FILE`.
    #[command(after_help = "Guide: doc/baseline.md")]
    Baseline(BaselineArgs),
    /// Find every CUDA installation and read every library in it, without loading it.
    ///
    /// Each library's version, ELF class, dependencies, search paths, the libraries it opens at
    /// run time and the GPU code it carries; damaged input is reported, never fatal.
    #[command(after_help = "Guide: doc/scan.md")]
    Scan(ScanArgs),
    /// The worker process that loads libraries for `doctor` (internal; reads a request on stdin).
    #[command(name = "__probe", hide = true)]
    Probe,
    /// Asks NVML for the host's GPUs and prints them as JSON (internal).
    #[command(name = "__gpu", hide = true)]
    Gpu,
    /// Reads the state of the listed GPUs (`0,3`) from NVML for `bench` and prints it as JSON
    /// (internal).
    #[command(name = "__gpu-state", hide = true)]
    GpuState { devices: String },
    /// Holds (`hold`: locks, then resets when its standard input closes) or resets (`reset`)
    /// the listed GPUs' clocks (UUIDs or ordinals) for `bench --lock-clocks`, answering in JSON
    /// lines (internal).
    #[command(name = "__clocks", hide = true)]
    Clocks { action: String, devices: String },
    /// Probes the node's GPUs, links and copies for `check` and prints them as JSON (internal;
    /// the request is the argument).
    #[command(name = "__node", hide = true)]
    Node { request: String },
    /// The worker process that runs one combination's checks (internal; reads a request on stdin).
    #[command(name = "__check", hide = true)]
    CheckWorker,
    /// The worker process that runs one combination's benchmarks (internal; reads a setup line,
    /// then one command per line, on stdin).
    #[command(name = "__bench", hide = true)]
    BenchWorker,
}

/// Where to look.
#[derive(Debug, Args)]
pub struct SearchArgs {
    /// Also search this directory, recursively (repeatable).
    #[arg(long = "root", value_name = "DIR", help_heading = "Where to look")]
    pub roots: Vec<PathBuf>,
    /// Search only the --root directories, not the host's own places.
    #[arg(long, requires = "roots", help_heading = "Where to look")]
    pub no_system: bool,
}

/// How to report.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Report format; json is the canonical, schema-tagged form.
    #[arg(long, value_enum, default_value_t = Format::Terminal, help_heading = "Output")]
    pub format: Format,
    /// Write the report to this file (atomically) instead of standard output; `-` is standard output.
    #[arg(long, short, value_name = "FILE", help_heading = "Output")]
    pub output: Option<PathBuf>,
}

/// Arguments of `scan`.
#[derive(Debug, Args)]
pub struct ScanArgs {
    #[command(flatten)]
    pub search: SearchArgs,
    /// Read DIR as the host's `/`: every place the host's own search names (/etc/ld.so.cache,
    /// /usr/local/cuda*, /opt, /home, VIRTUAL_ENV, ...) is read below it. For a copy of another
    /// machine's file system.
    #[arg(
        long,
        value_name = "DIR",
        conflicts_with = "no_system",
        help_heading = "Where to look"
    )]
    pub sysroot: Option<PathBuf>,
    #[command(flatten)]
    pub report: ReportArgs,
}

/// Arguments of `doctor`.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    #[command(flatten)]
    pub search: SearchArgs,
    /// Read DIR as the host's `/` (an image unpacked with `docker export | tar -x`, a node's
    /// file system from a support bundle): /proc/driver/nvidia, /sys/module/nvidia,
    /// /etc/ld.so.cache, /usr/local/cuda*, /etc/cdi, ... are read below it, links followed
    /// inside it. Static analysis only: nothing is loaded or run from it.
    #[arg(
        long,
        value_name = "DIR",
        conflicts_with_all = ["no_system", "command", "program"],
        help_heading = "Where to look"
    )]
    pub sysroot: Option<PathBuf>,
    /// Explain one program rather than the host: an executable or a shared object
    /// (libtorch_cuda.so, a Python extension module), resolved as its loader would resolve it
    /// here (its RPATH/RUNPATH, LD_LIBRARY_PATH, ld.so.cache), without running it.
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with = "command",
        help_heading = "A program instead of the host"
    )]
    pub program: Option<PathBuf>,
    /// With a COMMAND: keep its output rather than passing it through to standard error.
    #[arg(
        long,
        short,
        requires = "command",
        help_heading = "A program instead of the host"
    )]
    pub quiet: bool,
    /// Run this program and explain the CUDA libraries it loads or fails to load (after `--`:
    /// `stackbench doctor -- python3 -c "import torch"`). Its exit status is reported; stackbench's
    /// follows the findings.
    #[arg(
        last = true,
        value_name = "COMMAND",
        help_heading = "A program instead of the host"
    )]
    pub command: Vec<String>,
    /// Static analysis only: load nothing (for trees one should not execute code from).
    #[arg(long, help_heading = "Loading and trust")]
    pub no_load: bool,
    /// Load libraries whoever could write them, as ourselves (the trust rule off: see
    /// doc/doctor.md, "Who loads what"); the report's first line warns of it.
    #[arg(long, conflicts_with = "no_load", help_heading = "Loading and trust")]
    pub load_untrusted: bool,
    /// Seconds one library may take to load before it counts as hung (default 10); with a
    /// COMMAND, seconds the command may run before it is stopped (default 600).
    #[arg(long, value_name = "SECONDS", help_heading = "Loading and trust")]
    pub timeout: Option<f64>,
    /// The GPU to check GPU code against when the host has none, e.g. `sm_90` or `9.0`.
    #[arg(long, value_name = "SM", help_heading = "What to check")]
    pub target: Option<String>,
    /// Check each file of an environment's NVIDIA wheels against its RECORD's SHA-256, not only
    /// its size (slow: cuDNN's libraries are hundreds of MB).
    #[arg(long, help_heading = "What to check")]
    pub verify_hashes: bool,
    /// Compile and link a small probe (a kernel, cuda.h, -lcuda) with each toolkit's nvcc, as
    /// the toolkit's owner, in a private temporary directory, at most 120 s a step: only then
    /// does a toolkit say "can compile: yes" (also done for a COMMAND that builds: pip install,
    /// setup.py, make, cmake, ninja, nvcc).
    #[arg(long, conflicts_with_all = ["no_load", "sysroot"], help_heading = "What to check")]
    pub build: bool,
    /// The PATH a native Windows program runs with, as Windows writes it (`C:\a;C:\b`); drive
    /// paths are read under /mnt/<drive>, where WSL mounts them.
    #[arg(long, value_name = "PATH", help_heading = "Windows trees")]
    pub windows_path: Option<String>,
    /// A directory a Python program adds with os.add_dll_directory (repeatable).
    #[arg(
        long = "dll-directory",
        value_name = "DIR",
        help_heading = "Windows trees"
    )]
    pub dll_directories: Vec<String>,
    /// CUDA_PATH, whose bin TensorFlow and PyTorch add to the DLL search.
    #[arg(long, value_name = "DIR", help_heading = "Windows trees")]
    pub cuda_path: Option<String>,
    #[command(flatten)]
    pub report: ReportArgs,
    /// Show every evidence line of each finding and every installation's library table
    /// (the terminal report shows two lines and one line per installation; JSON has all).
    #[arg(long, short, help_heading = "Output")]
    pub verbose: bool,
}

/// Which combinations `check` and `bench` run, against which driver and device.
#[derive(Debug, Args)]
pub struct CombinationArgs {
    /// Only this combination (repeatable); names as the report shows them.
    #[arg(
        long = "combination",
        value_name = "NAME",
        help_heading = "Which combinations and GPUs"
    )]
    pub combinations: Vec<String>,
    /// Combinations to add, from this file (default: ./stackbench.toml when it exists).
    #[arg(
        long,
        value_name = "FILE",
        help_heading = "Which combinations and GPUs"
    )]
    pub config: Option<PathBuf>,
    /// Take libcuda.so.1 (and NVML) from this directory instead of the system's driver, to run
    /// the same toolkits against another driver.
    #[arg(long, value_name = "DIR", help_heading = "Which combinations and GPUs")]
    pub driver_dir: Option<PathBuf>,
    /// The GPU architecture to compile for and check GPU code against when there is no device,
    /// e.g. `sm_90`.
    #[arg(long, value_name = "SM", help_heading = "Which combinations and GPUs")]
    pub target: Option<String>,
    /// The GPUs to run on: `all` (the default), or ordinals, UUIDs or PCI bus ids separated by
    /// commas (`0,3`, `GPU-8f3c...`, `0000:17:00.0`). Ordinals count in PCI bus order, as
    /// nvidia-smi does.
    #[arg(
        long,
        value_name = "all|LIST",
        conflicts_with = "device",
        help_heading = "Which combinations and GPUs"
    )]
    pub devices: Option<String>,
    /// Only this GPU (the same as `--devices N`).
    #[arg(
        long,
        value_name = "ORDINAL",
        help_heading = "Which combinations and GPUs"
    )]
    pub device: Option<u32>,
    /// Load libraries whoever could write them, as ourselves (the trust rule off: see
    /// doc/doctor.md, "Who loads what"); the report's first line warns of it.
    #[arg(long, help_heading = "Loading and trust")]
    pub load_untrusted: bool,
}

/// Arguments of `check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub search: SearchArgs,
    /// A node health check in seconds (Slurm's HealthCheckProgram, a readiness probe): the
    /// driver, every GPU through the driver and NVML, NVML's health and one verified kernel
    /// per GPU, in one combination. Prints one line (`healthy: ...`, `unhealthy: GPU 0 (...):
    /// cause`, `could not run: ...`); exits 0 healthy, 1 unhealthy (drain), 2 could not run.
    #[arg(long, conflicts_with = "from", help_heading = "What to run")]
    pub quick: bool,
    /// NCCL across nodes: this process is one rank of a job, one per GPU (under Slurm, torchrun
    /// or a Kubernetes Indexed Job); rank 0 writes the job's report
    ///
    /// The ranks meet at a rendezvous, verify all-reduce, all-gather, reduce-scatter and
    /// broadcast across the job, time their bus bandwidth and report every pair of nodes'
    /// transport; the report names the node and cause of a fallback to sockets.
    #[arg(long, conflicts_with_all = ["from", "quick", "baseline"], help_heading = "What to run")]
    pub nodes: bool,
    /// Run nothing: report the check run saved in FILE (what `check --format json` wrote) in
    /// --format, with the exit status that run had; one run gives JSON, Markdown and JUnit.
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with_all = ["roots", "driver_dir", "combinations", "config", "target", "device", "devices", "timeout"],
        help_heading = "What to run"
    )]
    pub from: Option<PathBuf>,
    /// Seconds one check may take before it counts as hung.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = 120.0,
        help_heading = "What to run"
    )]
    pub timeout: f64,
    #[command(flatten)]
    pub across: AcrossArgs,
    #[command(flatten)]
    pub combinations: CombinationArgs,
    /// Judge the node's copies against this baseline (`stackbench baseline` wrote it): a copy
    /// slower than its fleet is a failure (exit 1).
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with = "quick",
        help_heading = "Against a baseline"
    )]
    pub baseline: Option<PathBuf>,
    #[command(flatten)]
    pub report: ReportArgs,
}

/// How the ranks of a job across nodes meet (`check --nodes`, `bench --nodes`).
#[derive(Debug, Args)]
pub struct AcrossArgs {
    /// Where rank 0 listens for the other ranks. Default: MASTER_ADDR:MASTER_PORT (port 29500
    /// when unset), else the Slurm step's first node.
    #[arg(
        long,
        value_name = "HOST:PORT",
        requires = "nodes",
        help_heading = "Across nodes"
    )]
    pub rendezvous: Option<String>,
    /// Seconds the ranks wait for each other; then rank 0 stops the job and names the ranks
    /// that never joined, and where the scheduler placed them.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = 120.0,
        requires = "nodes",
        help_heading = "Across nodes"
    )]
    pub join_within: f64,
    /// The one network NCCL may use between nodes, on every rank (NCCL_NET): IB makes an
    /// InfiniBand that does not start an error at init, not a silent fallback to sockets;
    /// Socket measures the sockets' path. Default: NCCL's choice, or the job's NCCL_NET.
    #[arg(
        long,
        value_name = "NETWORK",
        value_parser = ["IB", "Socket"],
        requires = "nodes",
        help_heading = "Across nodes"
    )]
    pub net: Option<String>,
}

/// Arguments of `bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    #[command(flatten)]
    pub search: SearchArgs,
    /// A short run: one size per benchmark, batch mode only, shorter time limits.
    #[arg(long, help_heading = "What to run")]
    pub quick: bool,
    /// NCCL across nodes: this process is one rank of a job, one per GPU (under Slurm, torchrun
    /// or a Kubernetes Indexed Job); rank 0 writes the job's run
    ///
    /// The ranks meet as `check --nodes`' do and verify each collective across the job, then
    /// time all-reduce, all-gather, reduce-scatter and broadcast at every size of nccl-tests'
    /// sweep, the same samples on every rank; each sample is the slowest rank's. Rows are keyed
    /// by the job's shape (`2n16r`: 2 nodes, 16 ranks), so that compare holds two jobs' runs
    /// against each other.
    #[arg(
        long,
        conflicts_with_all = ["from", "repeat", "filter", "lock_clocks"],
        help_heading = "What to run"
    )]
    pub nodes: bool,
    #[command(flatten)]
    pub across: AcrossArgs,
    /// Run nothing: report the bench run saved in FILE (a JSON file `bench` wrote) in
    /// --format, its shares computed again as this stackbench computes them (a file without
    /// theoretical peaks gets those of the GPU it names), with the exit status that run had;
    /// writes no files.
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with_all = ["roots", "driver_dir", "combinations", "config", "target", "quick", "repeat", "filter", "lock_clocks"],
        help_heading = "What to run"
    )]
    pub from: Option<PathBuf>,
    /// Run each combination's benchmarks N times, each in fresh worker processes, interleaved
    /// with the other combinations' (A B C A B C): compare needs the variation between runs.
    /// Default: 3 with --quick, else 5.
    #[arg(
        long,
        value_name = "N",
        value_parser = clap::value_parser!(u32).range(1..=100),
        help_heading = "What to run"
    )]
    pub repeat: Option<u32>,
    /// Run only the benchmarks whose id holds this text (repeatable: any of them), as
    /// criterion's filter: `--filter matmul/ --filter cublas/bf16`.
    #[arg(long, value_name = "TEXT", help_heading = "What to run")]
    pub filter: Vec<String>,
    /// Lock the GPUs' SM clocks at their TDP (base) clock and memory clocks at their default
    /// applications clock while measuring (root), as nvbench does, and reset them after,
    /// however the run ends; the run records the lock as read back, and compare treats locked
    /// and unlocked runs as different environments.
    #[arg(long, help_heading = "What to run")]
    pub lock_clocks: bool,
    /// Seconds one benchmark's worker command may take before it counts as hung.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = 300.0,
        help_heading = "What to run"
    )]
    pub timeout: f64,
    /// Which combinations; without a device and --target, NVRTC compiles for sm_90.
    #[command(flatten)]
    pub combinations: CombinationArgs,
    /// Measure GPUs that other programs compute on (without it, bench refuses them: exit 2,
    /// naming the processes). Every result records the processes and the GPU's state.
    #[arg(long, help_heading = "Busy GPUs and skips")]
    pub allow_busy: bool,
    /// Exit 0 even when benchmarks were skipped (no GPU): for hosts meant to run only the
    /// CPU-side benchmarks. Without it a skipped benchmark exits 1.
    #[arg(long, help_heading = "Busy GPUs and skips")]
    pub allow_skip: bool,
    /// Write the result files into this directory.
    #[arg(
        long,
        value_name = "DIR",
        default_value = "results",
        help_heading = "Output"
    )]
    pub results: PathBuf,
    /// The format of the report on standard output (the files are always JSON, CSV and Markdown).
    #[arg(long, value_enum, default_value_t = Format::Terminal, help_heading = "Output")]
    pub format: Format,
    /// Write the report to this file (atomically) instead of standard output; `-` is standard
    /// output.
    #[arg(long, short, value_name = "FILE", help_heading = "Output")]
    pub output: Option<PathBuf>,
}

/// Arguments of `compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The earlier run's result file (JSON).
    #[arg(
        required_unless_present_any = ["latest", "calibrate", "fleet"],
        requires = "new",
        display_order = 0,
        help_heading = "Which runs"
    )]
    pub old: Option<PathBuf>,
    /// The later run's result file (JSON).
    #[arg(display_order = 1, help_heading = "Which runs")]
    pub new: Option<PathBuf>,
    /// Compare the two newest runs of this command in --results instead of two files.
    #[arg(
        long,
        value_enum,
        value_name = "KIND",
        conflicts_with = "old",
        display_order = 2,
        help_heading = "Which runs"
    )]
    pub latest: Option<crate::compare::load::Kind>,
    /// Bench runs of one build on this host (A/A runs): compare every pair and say, per
    /// benchmark, how often a verdict called a change that is not there and the smallest change
    /// it can detect, to set --threshold from.
    #[arg(
        long,
        value_name = "FILE",
        num_args = 2..,
        conflicts_with_all = ["old", "latest"],
        display_order = 3,
        help_heading = "Which runs"
    )]
    pub calibrate: Vec<PathBuf>,
    /// Two groups of the fleet's runs in the store, each a selector (`driver=570.*`,
    /// `driver=580.*,model=*H100*`): per benchmark, the shift of the group median across nodes,
    /// and the nodes beyond their own group.
    #[arg(
        long,
        num_args = 2,
        value_names = ["OLD", "NEW"],
        conflicts_with_all = ["old", "latest", "calibrate"],
        display_order = 4,
        help_heading = "Which runs"
    )]
    pub fleet: Vec<String>,
    /// The history store --fleet reads (`stackbench ingest` fills it).
    #[arg(
        long,
        value_name = "DIR",
        default_value = crate::store::DEFAULT_DIR,
        display_order = 5,
        help_heading = "Which runs"
    )]
    pub store: PathBuf,
    /// Where --latest looks for runs, and where earlier runs teach each benchmark's noise floor.
    #[arg(
        long,
        value_name = "DIR",
        default_value = "results",
        display_order = 6,
        help_heading = "Which runs"
    )]
    pub results: PathBuf,
    /// Percent a benchmark must be slower or faster by, with confidence, to count, on every
    /// row. Default: each row's own, the smallest change its noise floor lets it call, within
    /// 0.5-2%
    #[arg(long, value_name = "PERCENT", help_heading = "Verdicts")]
    pub threshold: Option<f64>,
    /// What counts as a regression (repeatable; default: slower and failure).
    #[arg(long, value_enum, value_name = "KIND", help_heading = "Verdicts")]
    pub fail_on: Vec<crate::compare::FailOn>,
    /// Compare runs made on different GPUs (their figures say little about the software).
    #[arg(long, help_heading = "Verdicts")]
    pub allow_different_gpus: bool,
    #[command(flatten)]
    pub report: ReportArgs,
}

/// Arguments of `ingest`.
#[derive(Debug, Args)]
pub struct IngestArgs {
    /// Result files (JSON) or directories of them.
    #[arg(required = true, help_heading = "Which runs")]
    pub files: Vec<PathBuf>,
    /// The store to append to (created if need be).
    #[arg(
        long,
        value_name = "DIR",
        default_value = crate::store::DEFAULT_DIR,
        help_heading = "Which runs"
    )]
    pub store: PathBuf,
    #[command(flatten)]
    pub report: ReportArgs,
}

/// Arguments of `merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// One result file (JSON) per node.
    #[arg(required = true, num_args = 1.., help_heading = "Which runs")]
    pub files: Vec<PathBuf>,
    /// Judge every node's benchmarks, and its check copies, against this baseline
    /// (`stackbench baseline` wrote it), not only against the other nodes given: a row slower
    /// than its fleet is an outlier, even on a fleet of one.
    #[arg(long, value_name = "FILE", help_heading = "Against a baseline")]
    pub baseline: Option<PathBuf>,
    #[command(flatten)]
    pub report: ReportArgs,
}

/// Arguments of `baseline`.
#[derive(Debug, Args)]
pub struct BaselineArgs {
    /// The history store to learn from (`stackbench ingest` fills it).
    #[arg(
        long,
        value_name = "DIR",
        default_value = crate::store::DEFAULT_DIR,
        help_heading = "Which runs"
    )]
    pub store: PathBuf,
    /// Only the rows this selector takes (`driver=570.*,date=2026-10-*`).
    #[arg(long, value_name = "SELECTOR", help_heading = "Which runs")]
    pub select: Option<String>,
    /// Percent a node must be beyond its fleet by, at the least (twice it), as well as beyond
    /// five robust deviations, to count as slower or faster (default 0.5).
    #[arg(long, value_name = "PERCENT", help_heading = "Verdicts")]
    pub threshold: Option<f64>,
    #[command(flatten)]
    pub report: ReportArgs,
}

/// Arguments of `report`.
#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// Result files (JSON) or directories of them to report on; without them, every JSON file
    /// directly in --results.
    #[arg(help_heading = "Which runs")]
    pub files: Vec<PathBuf>,
    /// Where the runs are, when no files are given.
    #[arg(
        long,
        value_name = "DIR",
        default_value = "results",
        conflicts_with = "files",
        help_heading = "Which runs"
    )]
    pub results: PathBuf,
    /// A fleet's nights from this history store (`stackbench ingest` fills it) instead of
    /// files: each benchmark's median and quartiles across the nodes, night after night, a line
    /// per combination and driver.
    #[arg(
        long,
        value_name = "DIR",
        conflicts_with_all = ["files", "results"],
        help_heading = "Which runs"
    )]
    pub store: Option<PathBuf>,
    /// With --store, the rows to report (`model=*H100*,date=2026-11-*`).
    #[arg(
        long,
        value_name = "SELECTOR",
        requires = "store",
        help_heading = "Which runs"
    )]
    pub select: Option<String>,
    /// The page's format.
    #[arg(long, value_enum, default_value_t = PageFormat::Html, help_heading = "Output")]
    pub format: PageFormat,
    /// Write the page to this file (atomically) instead of standard output; `-` is standard output.
    #[arg(long, short, value_name = "FILE", help_heading = "Output")]
    pub output: Option<PathBuf>,
}
/// When to use colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}
