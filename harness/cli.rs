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
    /// Find every CUDA installation, load every library as a program would (in a worker
    /// process), and explain every failure with its cause and a fix.
    Doctor(DoctorArgs),
    /// Find every CUDA installation and read every library in it without loading it.
    Scan(ScanArgs),
    /// Conformance tests for every CUDA combination on the host: load every library, initialise
    /// the driver and each handle, compile and launch kernels, profile, verify the results.
    Check(CheckArgs),
    /// Benchmarks for every CUDA combination: vector add and matmul on the GPU (CUDA events,
    /// verified outputs, set against the card's own measured ceilings), NVRTC compile and
    /// library load times on the CPU; writes results/bench-<host>-<gpu>-<date>.{json,csv,md}.
    Bench(BenchArgs),
    /// Two runs of one command (bench, check, doctor, scan) side by side: what changed in the
    /// environment, and per benchmark a verdict (slower, faster, same, unclear) from the raw
    /// samples, per check what newly fails; exit 1 on a regression.
    Compare(CompareArgs),
    /// The results of many nodes (bench or check files, one per node) in one table keyed by
    /// node, GPU, driver and combination, the outliers first; exit 1 when there is one.
    Merge(MergeArgs),
    /// Every run under results/ (or the files given) on one page: each benchmark's median and
    /// interquartile range run after run, one line per combination, marked where driver or
    /// library versions changed, and each check run's matrix. Self-contained HTML with inline
    /// SVG charts, or the same as Markdown without the charts, or JSON.
    Report(HistoryArgs),
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
    #[arg(long = "root", value_name = "DIR")]
    pub roots: Vec<PathBuf>,
    /// Search only the --root directories, not the host's own places.
    #[arg(long, requires = "roots")]
    pub no_system: bool,
}

/// How to report.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Report format; json is the canonical, schema-tagged form.
    #[arg(long, value_enum, default_value_t = Format::Terminal)]
    pub format: Format,
    /// Write the report to this file (atomically) instead of standard output; `-` is standard output.
    #[arg(long, short, value_name = "FILE")]
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
    #[arg(long, value_name = "DIR", conflicts_with = "no_system")]
    pub sysroot: Option<PathBuf>,
    #[command(flatten)]
    pub report: ReportArgs,
}

/// Arguments of `doctor`.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    #[command(flatten)]
    pub search: SearchArgs,
    #[command(flatten)]
    pub report: ReportArgs,
    /// Static analysis only: load nothing (for trees one should not execute code from).
    #[arg(long)]
    pub no_load: bool,
    /// Load libraries whoever could write them, as ourselves (the trust rule off: see the
    /// README's "Who loads what"); the report's first line warns of it.
    #[arg(long, conflicts_with = "no_load")]
    pub load_untrusted: bool,
    /// Read DIR as the host's `/` (an image unpacked with `docker export | tar -x`, a node's
    /// file system from a support bundle): /proc/driver/nvidia, /sys/module/nvidia,
    /// /etc/ld.so.cache, /usr/local/cuda*, /etc/cdi, ... are read below it, links followed
    /// inside it. Static analysis only: nothing is loaded or run from it.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["no_system", "command", "program"])]
    pub sysroot: Option<PathBuf>,
    /// Seconds one library may take to load before it counts as hung (default 10); with a
    /// COMMAND, seconds the command may run before it is stopped (default 600).
    #[arg(long, value_name = "SECONDS")]
    pub timeout: Option<f64>,
    /// The GPU to check GPU code against when the host has none, e.g. `sm_90` or `9.0`.
    #[arg(long, value_name = "SM")]
    pub target: Option<String>,
    /// Windows trees: the PATH a native program runs with, as Windows writes it
    /// (`C:\a;C:\b`); drive paths are read under /mnt/<drive>, where WSL mounts them.
    #[arg(long, value_name = "PATH")]
    pub windows_path: Option<String>,
    /// Windows trees: a directory a Python program adds with os.add_dll_directory (repeatable).
    #[arg(long = "dll-directory", value_name = "DIR")]
    pub dll_directories: Vec<String>,
    /// Windows trees: CUDA_PATH, whose bin TensorFlow and PyTorch add to the DLL search.
    #[arg(long, value_name = "DIR")]
    pub cuda_path: Option<String>,
    /// Explain one program rather than the host: an executable or a shared object
    /// (libtorch_cuda.so, a Python extension module), resolved as its loader would resolve it
    /// here (its RPATH/RUNPATH, LD_LIBRARY_PATH, ld.so.cache), without running it.
    #[arg(long, value_name = "FILE", conflicts_with = "command")]
    pub program: Option<PathBuf>,
    /// Check each file of an environment's NVIDIA wheels against its RECORD's SHA-256, not only
    /// its size (slow: cuDNN's libraries are hundreds of MB).
    #[arg(long)]
    pub verify_hashes: bool,
    /// With a COMMAND: keep its output rather than passing it through to standard error.
    #[arg(long, short, requires = "command")]
    pub quiet: bool,
    /// Run this program and explain the CUDA libraries it loads or fails to load (after `--`:
    /// `stackbench doctor -- python3 -c "import torch"`). Its exit status is reported; stackbench's
    /// follows the findings.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
    /// Show every evidence line of each finding and every installation's library table
    /// (the terminal report shows two lines and one line per installation; JSON has all).
    #[arg(long, short)]
    pub verbose: bool,
}

/// Which combinations `check` and `bench` run, against which driver and device.
#[derive(Debug, Args)]
pub struct CombinationArgs {
    /// Take libcuda.so.1 (and NVML) from this directory instead of the system's driver, to run
    /// the same toolkits against another driver.
    #[arg(long, value_name = "DIR")]
    pub driver_dir: Option<PathBuf>,
    /// Only this combination (repeatable); names as the report shows them.
    #[arg(long = "combination", value_name = "NAME")]
    pub combinations: Vec<String>,
    /// Combinations to add, from this file (default: ./stackbench.toml when it exists).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The GPU architecture to compile for and check GPU code against when there is no device,
    /// e.g. `sm_90`.
    #[arg(long, value_name = "SM")]
    pub target: Option<String>,
    /// The GPUs to run on: `all` (the default), or ordinals, UUIDs or PCI bus ids separated by
    /// commas (`0,3`, `GPU-8f3c...`, `0000:17:00.0`). Ordinals count in PCI bus order, as
    /// nvidia-smi does.
    #[arg(long, value_name = "all|LIST", conflicts_with = "device")]
    pub devices: Option<String>,
    /// Only this GPU (the same as `--devices N`).
    #[arg(long, value_name = "ORDINAL")]
    pub device: Option<u32>,
    /// Load libraries whoever could write them, as ourselves (the trust rule off: see the
    /// README's "Who loads what"); the report's first line warns of it.
    #[arg(long)]
    pub load_untrusted: bool,
}

/// Arguments of `check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub search: SearchArgs,
    #[command(flatten)]
    pub report: ReportArgs,
    #[command(flatten)]
    pub combinations: CombinationArgs,
    /// Seconds one check may take before it counts as hung.
    #[arg(long, value_name = "SECONDS", default_value_t = 120.0)]
    pub timeout: f64,
    /// A node health check in seconds (Slurm's HealthCheckProgram, a readiness probe): the
    /// driver, every GPU through the driver and NVML, NVML's health and one verified kernel
    /// per GPU, in one combination. Prints one line (`healthy: ...`, `unhealthy: GPU 0 (...):
    /// cause`, `could not run: ...`); exits 0 healthy, 1 unhealthy (drain), 2 could not run.
    #[arg(long, conflicts_with = "from")]
    pub quick: bool,
    /// Run nothing: report the check run saved in FILE (what `check --format json` wrote) in
    /// --format, with the exit status that run had; one run gives JSON, Markdown and JUnit.
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with_all = ["roots", "driver_dir", "combinations", "config", "target", "device", "devices", "timeout"]
    )]
    pub from: Option<PathBuf>,
}

/// Arguments of `bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    #[command(flatten)]
    pub search: SearchArgs,
    /// Which combinations; without a device and --target, NVRTC compiles for sm_90.
    #[command(flatten)]
    pub combinations: CombinationArgs,
    /// A short run: one size per benchmark, batch mode only, shorter time limits.
    #[arg(long)]
    pub quick: bool,
    /// Run each combination's benchmarks N times, each in fresh worker processes, interleaved
    /// with the other combinations' (A B C A B C): compare needs the variation between runs.
    /// Default: 3 with --quick, else 5.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100))]
    pub repeat: Option<u32>,
    /// Run only the benchmarks whose id holds this text (repeatable: any of them), as
    /// criterion's filter: `--filter matmul/ --filter cublas/bf16`.
    #[arg(long, value_name = "TEXT")]
    pub filter: Vec<String>,
    /// Exit 0 even when benchmarks were skipped (no GPU): for hosts meant to run only the
    /// CPU-side benchmarks. Without it a skipped benchmark exits 1.
    #[arg(long)]
    pub allow_skip: bool,
    /// Measure GPUs that other programs compute on (without it, bench refuses them: exit 2,
    /// naming the processes). Every result records the processes and the GPU's state.
    #[arg(long)]
    pub allow_busy: bool,
    /// Write the result files into this directory.
    #[arg(long, value_name = "DIR", default_value = "results")]
    pub results: PathBuf,
    /// The format of the report on standard output (the files are always JSON, CSV and Markdown).
    #[arg(long, value_enum, default_value_t = Format::Terminal)]
    pub format: Format,
    /// Seconds one benchmark's worker command may take before it counts as hung.
    #[arg(long, value_name = "SECONDS", default_value_t = 300.0)]
    pub timeout: f64,
}

/// Arguments of `compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The earlier run's result file (JSON).
    #[arg(required_unless_present_any = ["latest", "calibrate"], requires = "new")]
    pub old: Option<PathBuf>,
    /// The later run's result file (JSON).
    pub new: Option<PathBuf>,
    /// Compare the two newest runs of this command in --results instead of two files.
    #[arg(long, value_enum, value_name = "KIND", conflicts_with = "old")]
    pub latest: Option<crate::compare::load::Kind>,
    /// Bench runs of one build on this host (A/A runs): compare every pair and say, per
    /// benchmark, how often a verdict called a change that is not there and the smallest change
    /// it can detect, to set --threshold from.
    #[arg(long, value_name = "FILE", num_args = 2.., conflicts_with_all = ["old", "latest"])]
    pub calibrate: Vec<PathBuf>,
    /// Where --latest looks for runs, and where earlier runs teach each benchmark's noise floor.
    #[arg(long, value_name = "DIR", default_value = "results")]
    pub results: PathBuf,
    /// Percent a benchmark must be slower or faster by, with confidence, to count.
    #[arg(long, value_name = "PERCENT", default_value_t = 2.0)]
    pub threshold: f64,
    /// What counts as a regression (repeatable; default: slower and failure).
    #[arg(long, value_enum, value_name = "KIND")]
    pub fail_on: Vec<crate::compare::FailOn>,
    /// Compare runs made on different GPUs (their figures say little about the software).
    #[arg(long)]
    pub allow_different_gpus: bool,
    #[command(flatten)]
    pub report: ReportArgs,
}

/// Arguments of `merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// One result file (JSON) per node.
    #[arg(required = true, num_args = 1..)]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub report: ReportArgs,
}

/// Arguments of `report`.
#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// Result files (JSON) or directories of them to report on; without them, every JSON file
    /// directly in --results.
    pub files: Vec<PathBuf>,
    /// Where the runs are, when no files are given.
    #[arg(
        long,
        value_name = "DIR",
        default_value = "results",
        conflicts_with = "files"
    )]
    pub results: PathBuf,
    /// The page's format.
    #[arg(long, value_enum, default_value_t = PageFormat::Html)]
    pub format: PageFormat,
    /// Write the page to this file (atomically) instead of standard output; `-` is standard output.
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

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
}

/// When to use colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}
