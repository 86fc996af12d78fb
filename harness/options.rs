//! Validated options: command-line arguments checked and turned into what the commands need.

use crate::bench::{plan::Depth, BenchOptions};
use crate::check::{CheckOptions, Selection};
use crate::cli::{
    BenchArgs, CheckArgs, ColorChoice, CombinationArgs, DoctorArgs, ReportArgs, ScanArgs,
    SearchArgs,
};
use crate::compat::ComputeCapability;
use crate::devices::DeviceChoice;
use crate::discover::{self, Host};
use crate::doctor::DoctorOptions;
use crate::output::Destination;
use crate::report::format::{Format, ReportOptions};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The longest `--timeout` accepted: an hour per library is already a hang.
const MAX_TIMEOUT_SECONDS: f64 = 3600.0;

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

/// Checks `--root`s: each must be a readable directory.
fn search(args: SearchArgs) -> Result<discover::Options, OptionsError> {
    for root in &args.roots {
        discover::check_root(root).map_err(|problem| OptionsError::BadRoot {
            path: root.clone(),
            reason: problem.message,
        })?;
    }
    Ok(discover::Options {
        roots: args.roots,
        system: !args.no_system,
    })
}

/// Where `--output` sends a report: a file, or standard output for none or `-`.
pub fn destination(output: Option<PathBuf>) -> Destination {
    match output {
        Some(path) if path.as_os_str() != "-" => Destination::File(path),
        _ => Destination::Stdout,
    }
}

fn report(args: ReportArgs, color: ColorChoice) -> ReportOptions {
    let destination = destination(args.output);
    let color = use_color(color, &destination);
    ReportOptions {
        format: args.format,
        destination,
        color,
        verbose: false,
    }
}

/// `scan`'s options, and the host it reads: this one, or the one `--sysroot` holds.
pub fn scan(
    args: ScanArgs,
    color: ColorChoice,
) -> Result<(discover::Options, Host, ReportOptions), OptionsError> {
    let host = match args.sysroot {
        Some(dir) => Host::below(sysroot(&dir)?),
        None => Host::current(),
    };
    Ok((search(args.search)?, host, report(args.report, color)))
}

/// A `--sysroot`: a readable directory, made canonical.
fn sysroot(dir: &Path) -> Result<PathBuf, OptionsError> {
    let bad = |e: std::io::Error| OptionsError::BadSysroot {
        path: dir.to_path_buf(),
        reason: e.to_string(),
    };
    let canonical = crate::hostfs::real_path(dir).map_err(bad)?;
    crate::hostfs::read_dir(&canonical).map_err(bad)?;
    Ok(canonical)
}

/// A `--timeout` in seconds, checked.
fn timeout(seconds: f64) -> Result<Duration, OptionsError> {
    if seconds > 0.0 && seconds <= MAX_TIMEOUT_SECONDS {
        Ok(Duration::from_secs_f64(seconds))
    } else {
        Err(OptionsError::BadTimeout(seconds))
    }
}

/// A `--target`, parsed.
fn target(text: Option<&str>) -> Result<Option<ComputeCapability>, OptionsError> {
    text.map(|t| ComputeCapability::parse(t).ok_or_else(|| OptionsError::BadTarget(t.to_owned())))
        .transpose()
}

/// Where `check`'s report comes from.
#[derive(Debug, Clone)]
pub enum CheckSource {
    /// A run on this host, now (boxed: the options outweigh a path many times).
    Run(Box<CheckOptions>),
    /// `--quick`: the node health check on this host, now.
    Quick(Box<CheckOptions>),
    /// A run saved as JSON (`--from FILE`), only reported again.
    Saved(PathBuf),
    /// `--nodes`: this process's rank of a job across nodes.
    Nodes(Box<CheckOptions>, Box<crate::cluster::WorldRequest>),
}

/// This process's rank of its job, from the scheduler's environment, with `--rendezvous`,
/// `--join-within` and `--net`; each rank waits for each other rank's report of a check up to
/// `timeout`.
fn world(
    args: &crate::cli::AcrossArgs,
    timeout: std::time::Duration,
) -> Result<crate::cluster::WorldRequest, OptionsError> {
    use crate::cluster::world::{this_host, World};
    let world = World::from_env(|name| std::env::var(name).ok(), &this_host())?;
    let join_within = args.join_within;
    let rendezvous = match args.rendezvous.as_deref() {
        Some(text) => {
            let (host, port) = (text.rsplit_once(':'))
                .and_then(|(h, p)| Some((h.trim_matches(['[', ']']), p.parse::<u16>().ok()?)))
                .filter(|(h, _)| !h.is_empty())
                .ok_or_else(|| OptionsError::BadRendezvous(text.to_owned()))?;
            (host.to_owned(), port)
        }
        None => world.rendezvous.clone().ok_or(OptionsError::NoRendezvous)?,
    };
    if !(join_within > 0.0 && join_within <= 3600.0) {
        return Err(OptionsError::BadJoinWithin(join_within));
    }
    let token = match std::env::var(crate::cluster::TOKEN_VAR) {
        Ok(value) if !value.is_empty() => {
            Some(crate::cluster::Token::new(value).ok_or(OptionsError::BadToken)?)
        }
        _ => None,
    };
    Ok(crate::cluster::WorldRequest {
        world,
        rendezvous,
        join_ms: (join_within * 1e3) as u64,
        step_ms: timeout.as_millis() as u64,
        token,
        sweep: None,
        net: args.net.clone(),
    })
}

/// `check`'s options. The combinations themselves are chosen when the host has been scanned.
pub fn check(
    args: CheckArgs,
    color: ColorChoice,
) -> Result<(CheckSource, Option<PathBuf>, ReportOptions), OptionsError> {
    let report = report(args.report, color);
    if let Some(saved) = args.from {
        return Ok((CheckSource::Saved(saved), args.baseline, report));
    }
    let options = CheckOptions {
        selection: selection(args.search, args.combinations)?,
        timeout: timeout(args.timeout)?,
        worker: std::env::current_exe().map_err(OptionsError::NoExecutable)?,
    };
    let source = if args.quick {
        CheckSource::Quick(Box::new(options))
    } else if args.nodes {
        let world = world(&args.across, options.timeout)?;
        CheckSource::Nodes(Box::new(options), Box::new(world))
    } else {
        CheckSource::Run(Box::new(options))
    };
    Ok((source, args.baseline, report))
}

/// The combinations `check` and `bench` run, checked.
fn selection(search_args: SearchArgs, args: CombinationArgs) -> Result<Selection, OptionsError> {
    Ok(Selection {
        discover: search(search_args)?,
        driver_dir: driver_dir(args.driver_dir)?,
        select: args.combinations,
        config: config(args.config.as_deref())?,
        target: target(args.target.as_deref())?,
        devices: devices(args.devices.as_deref(), args.device)?,
        trust: crate::trust::Policy::new(args.load_untrusted),
    })
}

/// `--devices LIST` or `--device N`; all GPUs when neither is given.
fn devices(list: Option<&str>, one: Option<u32>) -> Result<DeviceChoice, OptionsError> {
    match (list, one) {
        (Some(list), _) => DeviceChoice::parse(list).map_err(OptionsError::BadDevices),
        (None, Some(ordinal)) => Ok(DeviceChoice::one(ordinal)),
        (None, None) => Ok(DeviceChoice::All),
    }
}

/// A `--driver-dir`: a directory holding `libcuda.so.1`, made absolute.
fn driver_dir(dir: Option<PathBuf>) -> Result<Option<PathBuf>, OptionsError> {
    match dir {
        Some(dir) if dir.join("libcuda.so.1").exists() => std::path::absolute(&dir)
            .map(Some)
            .map_err(|_| OptionsError::BadDriverDir(dir.clone())),
        Some(dir) => Err(OptionsError::BadDriverDir(dir)),
        None => Ok(None),
    }
}

/// The combinations of `--config FILE`, else of `./stackbench.toml` when it exists.
fn config(path: Option<&std::path::Path>) -> Result<crate::check::config::Config, OptionsError> {
    let config = match path {
        Some(path) => Some(crate::check::config::Config::read(path)?),
        None => crate::check::config::Config::read_default()?,
    };
    Ok(config.unwrap_or_default())
}

/// How `bench` writes what it measured.
#[derive(Debug, Clone)]
pub struct BenchOutput {
    /// The directory the JSON, CSV and Markdown files go to.
    pub results: PathBuf,
    /// The report on standard output.
    pub report: ReportOptions,
    /// Skipped benchmarks do not make the exit status 1.
    pub allow_skip: bool,
    /// `--from FILE`: report this saved run again instead of running.
    pub from: Option<PathBuf>,
    /// `--nodes`: this process's rank of a job across nodes.
    pub world: Option<Box<crate::cluster::WorldRequest>>,
}

/// `bench`'s options.
pub fn bench(
    args: BenchArgs,
    color: ColorChoice,
) -> Result<(BenchOptions, BenchOutput), OptionsError> {
    if args.format == Format::Junit {
        return Err(OptionsError::JunitNotForBench);
    }
    let depth = if args.quick {
        Depth::Quick
    } else {
        Depth::Full
    };
    let options = BenchOptions {
        selection: selection(args.search, args.combinations)?,
        depth,
        timeout: timeout(args.timeout)?,
        worker: std::env::current_exe().map_err(OptionsError::NoExecutable)?,
        repeat: args.repeat.unwrap_or_else(|| depth.repetitions()),
        filter: args.filter,
        allow_busy: args.allow_busy,
        lock_clocks: args.lock_clocks,
    };
    let report = report(
        ReportArgs {
            format: args.format,
            output: args.output,
        },
        color,
    );
    let world = match args.nodes {
        true => Some(Box::new(world(&args.across, options.timeout)?)),
        false => None,
    };
    Ok((
        options,
        BenchOutput {
            results: args.results,
            report,
            allow_skip: args.allow_skip,
            from: args.from,
            world,
        },
    ))
}

/// Which runs `compare` compares.
#[derive(Debug, Clone)]
pub enum Runs {
    /// These two files, older first.
    Files(PathBuf, PathBuf),
    /// The two newest of a kind in this directory.
    Latest(PathBuf, crate::compare::load::Kind),
    /// Every pair of these A/A bench runs (`--calibrate`).
    Calibrate(Vec<PathBuf>),
    /// Two groups of the store's runs (`--fleet`).
    Fleet(crate::fleet::FleetOptions),
}

/// `compare`'s options: the two runs, how to judge, how to report.
pub fn compare(
    args: crate::cli::CompareArgs,
    color: ColorChoice,
) -> Result<(Runs, crate::compare::CompareOptions, ReportOptions), OptionsError> {
    use crate::compare::{CompareOptions, FailOn};
    let threshold = percent(args.threshold)?;
    let fail_on = if args.fail_on.is_empty() {
        vec![FailOn::Slower, FailOn::Failure]
    } else {
        args.fail_on
    };
    let options = CompareOptions {
        threshold,
        fail_on,
        allow_different_gpus: args.allow_different_gpus,
        history: Some(args.results.clone()),
    };
    let report = report(args.report, color);
    if !args.calibrate.is_empty() {
        return Ok((Runs::Calibrate(args.calibrate), options, report));
    }
    if let [old, new] = args.fleet.as_slice() {
        let fleet = crate::fleet::FleetOptions {
            store: args.store,
            old: old.parse()?,
            new: new.parse()?,
            threshold: options.threshold,
        };
        return Ok((Runs::Fleet(fleet), options, report));
    }
    match (args.latest, args.old, args.new) {
        (Some(kind), _, _) => Ok((Runs::Latest(args.results, kind), options, report)),
        (None, Some(old), Some(new)) => Ok((Runs::Files(old, new), options, report)),
        _ => Err(OptionsError::NoRunsToCompare),
    }
}

/// `ingest`'s options: the files, the store, how to report.
pub fn ingest(
    args: crate::cli::IngestArgs,
    color: ColorChoice,
) -> (Vec<PathBuf>, PathBuf, ReportOptions) {
    (args.files, args.store, report(args.report, color))
}

/// `merge`'s options: the files, the baseline, how to report.
pub fn merge(
    args: crate::cli::MergeArgs,
    color: ColorChoice,
) -> (Vec<PathBuf>, Option<PathBuf>, ReportOptions) {
    (args.files, args.baseline, report(args.report, color))
}

/// What `baseline` learns from: the store, the selector, the threshold (a fraction).
pub struct BaselineOptions {
    pub store: PathBuf,
    pub select: Option<crate::fleet::select::Selector>,
    pub threshold: Option<f64>,
}

/// `baseline`'s options, and how to report.
pub fn baseline(
    args: crate::cli::BaselineArgs,
    color: ColorChoice,
) -> Result<(BaselineOptions, ReportOptions), OptionsError> {
    let threshold = percent(args.threshold)?;
    let select = args.select.as_deref().map(str::parse).transpose()?;
    let options = BaselineOptions {
        store: args.store,
        select,
        threshold,
    };
    Ok((options, report(args.report, color)))
}

/// A `--threshold` in percent, as a fraction; an error outside (0, 100).
fn percent(threshold: Option<f64>) -> Result<Option<f64>, OptionsError> {
    match threshold {
        Some(t) if !(t > 0.0 && t < 100.0) => Err(OptionsError::BadThreshold(t)),
        t => Ok(t.map(|t| t / 100.0)),
    }
}

/// `doctor`'s options, and the host it reads: this one, or the one `--sysroot` holds.
pub fn doctor(
    args: DoctorArgs,
    color: ColorChoice,
) -> Result<(DoctorOptions, Host, ReportOptions), OptionsError> {
    let command_timeout = timeout(args.timeout.unwrap_or(600.0))?;
    let timeout = timeout(args.timeout.unwrap_or(10.0))?;
    let target = target(args.target.as_deref())?;
    // The worker is needed only to load; static analysis runs without finding it.
    let worker = if args.no_load {
        PathBuf::new()
    } else {
        std::env::current_exe().map_err(OptionsError::NoExecutable)?
    };
    use crate::diagnose::windows::WindowsSearch;
    let windows = WindowsSearch {
        path: args
            .windows_path
            .as_deref()
            .map(WindowsSearch::split_path)
            .unwrap_or_default(),
        dll_dirs: args
            .dll_directories
            .iter()
            .map(|d| WindowsSearch::host_path(d))
            .collect(),
        cuda_path: args.cuda_path.as_deref().map(WindowsSearch::host_path),
    };
    let options = DoctorOptions {
        discover: search(args.search)?,
        load: !args.no_load,
        timeout,
        target,
        worker,
        windows,
        verify_hashes: args.verify_hashes,
        build: args.build,
        program: args.program,
        command: args.command,
        command_timeout,
        quiet: args.quiet,
        trust: crate::trust::Policy::new(args.load_untrusted),
    };
    let host = match args.sysroot {
        Some(dir) => Host::below(sysroot(&dir)?),
        None => Host::current(),
    };
    let verbose = args.verbose;
    Ok((
        options,
        host,
        ReportOptions {
            verbose,
            ..report(args.report, color)
        },
    ))
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
