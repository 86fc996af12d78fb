//! The commands: arguments in, a report out, and the exit status that says what was found.

use crate::cli::{Cli, Command};
use crate::discover::Host;
use crate::{
    bench, check, compare, doctor, gpu, history, merge, options, output, probe, report, scan,
};
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
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) if e.kind() == clap::error::ErrorKind::DisplayVersion => {
            let text = crate::version::describe();
            output::write(&output::Destination::Stdout, text.as_bytes())?;
            return Ok(ExitCode::SUCCESS);
        }
        Err(e) => e.exit(),
    };
    // A worker dies with its run; a run that starts workers ends them when a signal ends it.
    match cli.command {
        Command::CheckWorker
        | Command::BenchWorker
        | Command::Probe
        | Command::Gpu
        | Command::GpuState { .. }
        | Command::Clocks { .. }
        | Command::Node { .. } => crate::lifetime::die_with_parent(),
        Command::Doctor(_) | Command::Check(_) | Command::Bench(_) => {
            crate::lifetime::adopt_orphans();
            crate::lifetime::end_workers_on_signals()
        }
        _ => {}
    }
    let findings = match cli.command {
        Command::Scan(args) => {
            let (search, host, report_options) = options::scan(args, cli.color)?;
            let report = scan::scan(&search, &host);
            let bytes = report::exporter_for(&report_options).scan(&report)?;
            output::write(&report_options.destination, &bytes)?;
            let problems = report.all_problems().next().is_some();
            problems
        }
        Command::Doctor(args) => {
            let (doctor_options, host, report_options) = options::doctor(args, cli.color)?;
            let report = doctor::doctor(&doctor_options, &host);
            let bytes = report::exporter_for(&report_options).doctor(&report)?;
            output::write(&report_options.destination, &bytes)?;
            report.has_errors()
        }
        Command::Check(args) => {
            let (source, baseline, report_options) = options::check(args, cli.color)?;
            let mut report = match source {
                options::CheckSource::Run(check_options) => {
                    check::check(&check_options, &Host::current())?
                }
                options::CheckSource::Saved(path) => saved_check(&path)?,
                options::CheckSource::Quick(check_options) => {
                    return quick_check(&check_options, &report_options);
                }
                options::CheckSource::Nodes(check_options, world) => {
                    return nodes_check(&check_options, &world, &report_options);
                }
            };
            if let Some(path) = &baseline {
                let node = (
                    report.host.hostname.clone(),
                    crate::store::rows::of_check(&report),
                );
                report.baseline = Some(crate::baseline::judge::against(path, &[node])?);
            }
            let bytes = report::exporter_for(&report_options).check(&report)?;
            output::write(&report_options.destination, &bytes)?;
            report.has_failures()
        }
        Command::Bench(args) => {
            let (bench_options, out) = options::bench(args, cli.color)?;
            let (report, written) = match &out.from {
                Some(path) => {
                    let mut report = saved_bench(path)?;
                    bench::shares::reassess(&mut report);
                    report.rerendered = Some(bench::model::Rerendered {
                        at: crate::timestamp::now(),
                        by: format!(
                            "stackbench {} ({})",
                            crate::version::RELEASE,
                            crate::version::COMMIT
                        ),
                    });
                    (report, None)
                }
                None => {
                    let report = match &out.world {
                        Some(world) => {
                            let report =
                                bench::across::run(&bench_options, &Host::current(), world)?;
                            if world.world.rank != 0 {
                                let failed = report.fails(out.allow_skip);
                                return Ok(rank_said("bench", world, failed));
                            }
                            report
                        }
                        None => {
                            let progress = crate::progress::Reporter::for_stderr();
                            bench::bench(&bench_options, &Host::current(), &progress)?
                        }
                    };
                    let written = write_bench_files(&report, &out.results)?;
                    (report, Some(written))
                }
            };
            let bytes = report::exporter_for(&out.report).bench(&report)?;
            output::write(&out.report.destination, &bytes)?;
            if let Some(written) = written {
                eprintln!("bench: wrote {}", written.display());
            }
            report.fails(out.allow_skip)
        }
        Command::Compare(args) => {
            let (runs, compare_options, report_options) = options::compare(args, cli.color)?;
            let (old, new) = match runs {
                options::Runs::Files(old, new) => (old, new),
                options::Runs::Latest(dir, kind) => {
                    compare::load::latest(&dir, kind).map_err(compare::CompareError::from)?
                }
                options::Runs::Fleet(fleet) => {
                    let report = crate::fleet::compare(&fleet)?;
                    let bytes = report::fleet(report_options.format, &report)?;
                    output::write(&report_options.destination, &bytes)?;
                    return Ok(ExitCode::from(if report.has_findings() {
                        EXIT_FINDINGS
                    } else {
                        EXIT_CLEAN
                    }));
                }
                options::Runs::Calibrate(files) => {
                    let calibration =
                        compare::calibrate::calibrate(&files, compare_options.threshold)?;
                    let bytes = report::calibration(&report_options, &calibration)?;
                    output::write(&report_options.destination, &bytes)?;
                    let wrong = calibration
                        .benchmarks
                        .iter()
                        .any(|b| b.false_verdicts > 0.0);
                    return Ok(ExitCode::from(if wrong {
                        EXIT_FINDINGS
                    } else {
                        EXIT_CLEAN
                    }));
                }
            };
            let report = compare::compare(&old, &new, &compare_options)?;
            let bytes = report::exporter_for(&report_options).compare(&report)?;
            output::write(&report_options.destination, &bytes)?;
            !report.regressions.is_empty()
        }
        Command::Merge(args) => {
            let (files, baseline, report_options) = options::merge(args, cli.color);
            let report = merge::merge(&files, baseline.as_deref())?;
            let bytes = report::exporter_for(&report_options).merge(&report)?;
            output::write(&report_options.destination, &bytes)?;
            !report.outliers.is_empty()
        }
        Command::Baseline(args) => {
            let (options, report_options) = options::baseline(args, cli.color)?;
            let baseline = crate::baseline::derive(
                &options.store,
                options.select.as_ref(),
                options.threshold,
            )?;
            let bytes = report::baseline(report_options.format, &baseline)?;
            output::write(&report_options.destination, &bytes)?;
            false
        }
        Command::Ingest(args) => {
            let (paths, store, report_options) = options::ingest(args, cli.color);
            let files = history::expand(&paths)?;
            let report = crate::store::ingest::ingest(&crate::store::Store::at(&store), &files)?;
            for file in &report.passed_over {
                eprintln!(
                    "ingest: passed over {}: {}",
                    file.path.display(),
                    file.reason
                );
            }
            let bytes = report::ingest(report_options.format, &report)?;
            output::write(&report_options.destination, &bytes)?;
            !report.passed_over.is_empty()
        }
        Command::Report(args) => {
            if let Some(store) = &args.store {
                let selector = match &args.select {
                    Some(text) => Some(
                        text.parse::<crate::fleet::select::Selector>()
                            .map_err(options::OptionsError::from)?,
                    ),
                    None => None,
                };
                let store = crate::store::Store::at(store);
                let history = crate::fleet::nights::history(&store, selector.as_ref())?;
                if history.runs.is_empty() {
                    return Err(history::HistoryError::Empty {
                        looked_in: format!("the store {}", store.dir().display()),
                        passed_over: 0,
                    }
                    .into());
                }
                let bytes = report::history(args.format, &history)?;
                output::write(&options::destination(args.output), &bytes)?;
                return Ok(ExitCode::from(EXIT_CLEAN));
            }
            let (files, looked_in) = if args.files.is_empty() {
                let files = history::files_in(&args.results)?;
                (files, args.results.display().to_string())
            } else {
                let given = format!("the {} path(s) given", args.files.len());
                (history::expand(&args.files)?, given)
            };
            let history = history::gather(&files);
            if history.runs.is_empty() {
                return Err(history::HistoryError::Empty {
                    looked_in,
                    passed_over: history.passed_over.len(),
                }
                .into());
            }
            for file in &history.passed_over {
                eprintln!("report: passed over {}", file.reason);
            }
            let bytes = report::history(args.format, &history)?;
            output::write(&options::destination(args.output), &bytes)?;
            !history.passed_over.is_empty()
        }
        Command::CheckWorker => return Ok(check::worker::run()),
        Command::BenchWorker => return Ok(bench::worker::run()),
        Command::Probe => return Ok(probe::worker::run()),
        Command::Gpu => return Ok(gpu::report_from_nvml()),
        Command::GpuState { devices } => return Ok(bench::conditions::report_from_nvml(&devices)),
        Command::Clocks { action, devices } => {
            return Ok(bench::clocks::from_nvml(&action, &devices))
        }
        Command::Node { request } => return Ok(crate::node::run_worker(&request)),
    };
    Ok(ExitCode::from(if findings {
        EXIT_FINDINGS
    } else {
        EXIT_CLEAN
    }))
}

/// `check --quick`: the terminal format is the verdict's one line, other formats the report
/// with the line on standard error; exits 0 healthy, 1 unhealthy, 2 could not run.
fn quick_check(
    options: &check::CheckOptions,
    report_options: &report::format::ReportOptions,
) -> anyhow::Result<ExitCode> {
    use check::quick::{judge, Verdict};
    let host = Host::current();
    let report = check::check_quick(options, &host)?;
    let visible = host.env.get("CUDA_VISIBLE_DEVICES").map(String::as_str);
    let health = judge(&report, visible);
    let bytes = if report_options.format == crate::report::format::Format::Terminal {
        format!("{}\n", health.line()).into_bytes()
    } else {
        eprintln!("check --quick: {}", health.line());
        report::exporter_for(report_options).check(&report)?
    };
    output::write(&report_options.destination, &bytes)?;
    Ok(ExitCode::from(match health.verdict {
        Verdict::Healthy => EXIT_CLEAN,
        Verdict::Unhealthy => EXIT_FINDINGS,
        Verdict::CouldNotRun => EXIT_HARNESS,
    }))
}

/// `check --nodes`: rank 0 writes the job's report; every other rank says in one line on
/// standard error how its part went. Each exits 1 on a failure it knows of.
fn nodes_check(
    options: &check::CheckOptions,
    world: &crate::cluster::WorldRequest,
    report_options: &report::format::ReportOptions,
) -> anyhow::Result<ExitCode> {
    let report = check::check_nodes(options, &Host::current(), world)?;
    if world.world.rank != 0 {
        return Ok(rank_said("check", world, report.has_failures()));
    }
    let bytes = report::exporter_for(report_options).check(&report)?;
    output::write(&report_options.destination, &bytes)?;
    Ok(ExitCode::from(if report.has_failures() {
        EXIT_FINDINGS
    } else {
        EXIT_CLEAN
    }))
}

/// A rank other than 0 of a job across nodes: says in one line on standard error how its part
/// of `command --nodes` went (rank 0 reports the job) and exits 1 on a failure it knows of.
fn rank_said(command: &str, world: &crate::cluster::WorldRequest, failed: bool) -> ExitCode {
    let (w, (host, port)) = (&world.world, &world.rendezvous);
    eprintln!(
        "{command} --nodes: rank {} of {} on {}: {}; rank 0 at {host}:{port} reports the job",
        w.rank,
        w.size,
        w.host,
        if failed { "failed" } else { "passed" }
    );
    ExitCode::from(if failed { EXIT_FINDINGS } else { EXIT_CLEAN })
}

/// The check run saved in `path` as JSON, for `check --from`.
fn saved_check(path: &std::path::Path) -> anyhow::Result<crate::schema::check::CheckReport> {
    match compare::load::read(path)? {
        compare::load::Run::Check(report) => Ok(report),
        other => anyhow::bail!(
            "--from {}: a {} run, not a check run; give the JSON file `stackbench check --format json` wrote",
            path.display(),
            other.kind()
        ),
    }
}

/// The bench run saved in `path` as JSON, for `bench --from`.
fn saved_bench(path: &std::path::Path) -> anyhow::Result<bench::model::BenchReport> {
    match compare::load::read(path)? {
        compare::load::Run::Bench(report) => Ok(report),
        other => anyhow::bail!(
            "--from {}: a {} run, not a bench run; give a JSON file `stackbench bench` wrote",
            path.display(),
            other.kind()
        ),
    }
}

/// Writes the bench report as JSON, CSV and Markdown into `dir` (created if need be), each file
/// atomically, under a name no earlier run holds; the path without its extension.
fn write_bench_files(
    report: &bench::model::BenchReport,
    dir: &std::path::Path,
) -> anyhow::Result<std::path::PathBuf> {
    use anyhow::Context;
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create the results directory {}", dir.display()))?;
    let stem = report::files::free_stem(dir, &report::files::stem(report));
    for (extension, format) in report::files::FORMATS {
        let bytes = report::exporter(format, false).bench(report)?;
        output::write_atomically(&stem.with_extension(extension), &bytes)?;
    }
    Ok(stem)
}
