//! The report for people: findings first (errors, then warnings), then installations as headed,
//! aligned tables, problems last; for the bench, a table of figures per combination and what was
//! not measured, by reason; in colour when asked for.

use super::{
    archs, bench, check_counts, check_gpu_line, count, driver_version, gpu_line, library_path,
    notices, Exporter, Notice,
};
use crate::bench::model::{BenchReport, Status as BenchStatus};
use crate::compare::model::CompareReport;
use crate::diagnose::finding::{Finding, Severity};
use crate::doctor::DoctorReport;
use crate::error::OutputError;
use crate::merge::MergeReport;
use crate::model::{Installation, Problem, ScanReport};
use crate::pathname::Shown;
use crate::schema::check::{CheckReport, Status};
use std::fmt::Write;

pub struct Terminal {
    pub color: bool,
    /// The doctor's findings with all their evidence, and its installations as full tables.
    pub verbose: bool,
}

const BOLD: &str = "1";
const DIM: &str = "2";
const RED: &str = "31";
const YELLOW: &str = "33";
const BLUE: &str = "34";
const CYAN: &str = "36";
const GREEN: &str = "32";

/// The heading of the check matrix's first column.
const MATRIX_LABEL: &str = "check";

/// Evidence lines (and copies elsewhere) shown per finding without `--verbose`; JSON has all.
const EVIDENCE_LINES: usize = 2;

impl Exporter for Terminal {
    fn scan(&self, report: &ScanReport) -> Result<Vec<u8>, OutputError> {
        let mut out = String::new();
        let libraries: usize = report.installations.iter().map(|i| i.libraries.len()).sum();
        let problems = report.all_problems().count();
        let summary = [
            count(report.installations.len(), "installation"),
            count(libraries, "library"),
            count(problems, "problem"),
        ]
        .join(", ");
        let _ = writeln!(out, "{} {summary}\n", self.paint(BOLD, "stackbench scan:"));
        self.installations(&mut out, &report.installations, &report.problems, false);
        Ok(out.into_bytes())
    }

    fn doctor(&self, report: &DoctorReport) -> Result<Vec<u8>, OutputError> {
        let mut out = String::new();
        self.untrusted(&mut out, report.load_untrusted);
        let [errors, warnings, info] = report.severity_counts();
        let libraries: usize = report.installations.iter().map(|i| i.libraries.len()).sum();
        let verdict = if errors > 0 {
            self.paint(RED, &count(errors, "error"))
        } else {
            self.paint(GREEN, "no errors")
        };
        let _ = writeln!(
            out,
            "{} {verdict}, {}, {} ({}, {}{})",
            self.paint(BOLD, "stackbench doctor:"),
            count(warnings, "warning"),
            count(info, "note"),
            count(report.installations.len(), "installation"),
            count(libraries, "library"),
            if report.loaded {
                ""
            } else {
                "; static analysis only, nothing loaded"
            }
        );
        if !report.cargo_search_path.is_empty() {
            let _ = writeln!(
                out,
                "Run by cargo: left out of LD_LIBRARY_PATH what cargo added ({})",
                report.cargo_search_path.join(":")
            );
        }
        let _ = writeln!(out, "GPU: {}", gpu_line(&report.gpu));
        for probe in &report.probes {
            if let Some(user) = &probe.loaded_as {
                let line = format!(
                    "{} loaded as {}, the owner of its files; of our environment its worker kept {}",
                    probe.root.shown(),
                    user.label(),
                    probe.environment.join(", ")
                );
                let _ = writeln!(out, "{}", wrap(&line, "     "));
            }
        }
        out.push('\n');
        if let Some(program) = &report.program {
            self.program(&mut out, program);
        }
        if let Some(command) = &report.command {
            self.command(&mut out, command);
        }
        for (severity, title, colour) in [
            (Severity::Error, "errors", RED),
            (Severity::Warning, "warnings", YELLOW),
            (Severity::Info, "notes", BLUE),
        ] {
            let findings: Vec<&Finding> = report
                .findings
                .iter()
                .filter(|f| f.severity == severity)
                .collect();
            if findings.is_empty() {
                continue;
            }
            // Below errors, the rest say what and what to do; --verbose shows what shows them.
            let brief = errors > 0 && severity != Severity::Error && !self.verbose;
            let heading = self.paint(&format!("{BOLD};{colour}"), title);
            if brief {
                let _ = writeln!(out, "{heading}  {}", self.paint(DIM, "(evidence: -v)"));
            } else {
                let _ = writeln!(out, "{heading}");
            }
            for finding in findings {
                self.finding(&mut out, finding, colour, brief);
            }
            out.push('\n');
        }
        let _ = writeln!(out, "{}", self.paint(BOLD, "installations"));
        self.installations(
            &mut out,
            &report.installations,
            &report.problems,
            !self.verbose,
        );
        self.building(&mut out, report);
        Ok(out.into_bytes())
    }

    fn bench(&self, report: &BenchReport) -> Result<Vec<u8>, OutputError> {
        let mut out = String::new();
        self.untrusted(&mut out, report.load_untrusted);
        let [_, _, failed] = report.counts();
        let counts = bench::counts(report);
        let counts = if failed > 0 {
            self.paint(RED, &counts)
        } else {
            counts
        };
        let quick = if report.quick { " (--quick)" } else { "" };
        let _ = writeln!(
            out,
            "{} {counts}{quick}{}",
            self.paint(BOLD, "stackbench bench:"),
            super::bench::repetitions(report)
        );
        if let Some(banner) = super::bench_simulated(report) {
            let _ = writeln!(
                out,
                "{}",
                self.paint(&format!("{BOLD};{YELLOW}"), &wrap(&banner, "     "))
            );
        }
        let gpu = format!(
            "GPU: {}; NVRTC compiled for {}",
            gpu_line(&report.gpu),
            report.target
        );
        let _ = writeln!(out, "{}", wrap(&gpu, "     "));
        if let Some(dir) = &report.driver_dir {
            let line = format!("driver libraries from --driver-dir {}", dir.shown());
            let _ = writeln!(out, "{}", wrap(&line, "     "));
        }
        if let Some(line) = bench::conditions(report) {
            let line = wrap(&line, "     ");
            let disturbed = !report.disturbed_devices().is_empty();
            let _ = writeln!(
                out,
                "{}",
                if disturbed {
                    self.paint(&format!("{BOLD};{YELLOW}"), &line)
                } else {
                    line
                }
            );
        }
        if let Some(job) = &report.job {
            self.job(&mut out, job);
        }
        for f in &report.findings {
            let line = format!("{}: {}", f.code, f.message);
            let _ = writeln!(out, "{}", self.paint(RED, &wrap(&line, "    ")));
            let line = format!("  benchmarks: {}", bench::slow_benchmarks(f));
            let _ = writeln!(out, "{}", wrap(&line, "    "));
            let _ = writeln!(out, "{}", wrap(&format!("  fix: {}", f.fix), "    "));
        }
        out.push('\n');
        let multi = report.multi_device();
        let tables = crate::bench::node::tables(report);
        let nccl = crate::bench::collectives::tables(report);
        for c in &report.combinations {
            let cuda = c.cuda_version.as_deref().unwrap_or("?");
            let driver = c.driver_cuda_version.as_deref().unwrap_or("?");
            let simulated = if c.simulated { ", SIMULATED GPU" } else { "" };
            let _ = writeln!(
                out,
                "{}  CUDA {cuda}, driver's CUDA {driver}{simulated}",
                self.paint(BOLD, &c.name)
            );
            let libraries = format!("  libraries: {}", bench::libraries(c));
            let _ = writeln!(out, "{}", self.paint(DIM, &wrap(&libraries, "    ")));
            let _ = writeln!(out, "  ceilings: {}", bench::peaks(c));
            if c.spec.is_some() {
                let spec = format!("  theoretical peaks: {}", bench::spec(c));
                let _ = writeln!(out, "{}", wrap(&spec, "    "));
            }
            let rows: Vec<Vec<String>> = report
                .benchmarks
                .iter()
                .filter(|r| r.combination == c.name && r.status == BenchStatus::Measured)
                .filter(|r| r.nccl.is_none())
                .map(|r| {
                    let (median, iqr) = bench::spread(r);
                    let gpu = multi.then(|| bench::device(r));
                    [r.benchmark.clone(), bench::size(r), bench::variant(r)]
                        .into_iter()
                        .chain(gpu)
                        .chain([
                            median,
                            iqr,
                            bench::noise(r),
                            bench::figure(r),
                            bench::of_peak(r),
                            bench::of_spec(r),
                            bench::verified(r).to_owned(),
                            bench::stopped(r).to_owned(),
                            bench::throttled(r),
                        ])
                        .collect()
                })
                .collect();
            if !rows.is_empty() {
                let gpu = multi.then_some("GPU");
                let header: Vec<&str> = ["benchmark", "size", "variant"]
                    .into_iter()
                    .chain(gpu)
                    .chain([
                        "median",
                        "IQR",
                        "noise",
                        "figure",
                        "of peak",
                        "of spec",
                        "verified",
                        "stopped by",
                        "throttled",
                    ])
                    .collect();
                self.table(&mut out, &header, &rows);
            }
            for table in tables.iter().filter(|t| t.combination == c.name) {
                let title = format!("  {}", bench::node_title(table));
                let _ = writeln!(out, "{}", self.paint(BOLD, &title));
                let legend = format!("  {}", bench::node_legend("*"));
                let _ = writeln!(out, "{}", self.paint(DIM, &wrap(&legend, "    ")));
                let rows: Vec<Vec<String>> = bench::node_rows(table)
                    .into_iter()
                    .map(|(key, cells)| {
                        let marked = cells.into_iter().map(|(cell, odd)| match odd {
                            true => format!("{cell} *"),
                            false => cell,
                        });
                        key.into_iter().chain(marked).collect()
                    })
                    .collect();
                let header = bench::node_header(table);
                let header: Vec<&str> = header.iter().map(String::as_str).collect();
                self.table(&mut out, &header, &rows);
            }
            for table in nccl.iter().filter(|t| t.combination == c.name) {
                let title = format!("  {}", bench::nccl_title(table));
                let _ = writeln!(out, "{}", self.paint(BOLD, &wrap(&title, "    ")));
                self.table(&mut out, &bench::NCCL_HEADER, &bench::nccl_rows(table));
            }
            for r in report.benchmarks.iter().filter(|r| {
                r.combination == c.name && r.status == BenchStatus::Measured && r.reason.is_some()
            }) {
                let note = format!(
                    "  note: {}: {}",
                    r.label(),
                    r.reason.as_deref().unwrap_or("")
                );
                let _ = writeln!(out, "{}", self.paint(DIM, &wrap(&note, "    ")));
            }
            if let Some(why) = &c.gpu_unavailable {
                let line = format!("  GPU benchmarks not run: {why}");
                let _ = writeln!(out, "{}", self.paint(YELLOW, &wrap(&line, "    ")));
            }
            out.push('\n');
        }
        for group in bench::unmeasured(report) {
            let colour = match group.status {
                BenchStatus::Failed => RED,
                _ => DIM,
            };
            let line = format!(
                "{} {}: {}: {}",
                group.ids.len(),
                group.verb(),
                group.which(),
                group.reason
            );
            let _ = writeln!(out, "{}", self.paint(colour, &wrap(&line, "    ")));
        }
        Ok(out.into_bytes())
    }

    fn compare(&self, report: &CompareReport) -> Result<Vec<u8>, OutputError> {
        use super::compare as view;
        let mut out = String::new();
        let headline = view::headline(report);
        let headline = if report.regressions.is_empty() {
            self.paint(GREEN, &headline)
        } else {
            self.paint(RED, &headline)
        };
        let _ = writeln!(
            out,
            "{} {headline}",
            self.paint(BOLD, &format!("stackbench compare ({}):", report.kind))
        );
        for (label, run) in [("old", &report.old), ("new", &report.new)] {
            let started = run
                .started
                .as_deref()
                .map(|s| format!(", {s}"))
                .unwrap_or_default();
            let line = format!(
                "{label}: {} on {}{started}{}",
                run.path.shown(),
                run.hostname,
                view::run_mark(run)
            );
            let _ = writeln!(out, "{}", wrap(&line, "     "));
        }
        out.push('\n');
        if report.environment.is_empty() {
            let _ = writeln!(out, "environment unchanged");
        } else {
            let _ = writeln!(out, "{}", self.paint(BOLD, "environment"));
            let rows: Vec<Vec<String>> = report
                .environment
                .iter()
                .map(|c| vec![c.what.clone(), view::change_text(c)])
                .collect();
            self.table(&mut out, &["what", "old → new"], &rows);
        }
        out.push('\n');
        if !report.benchmarks.is_empty() {
            let title = format!("benchmarks ({})", view::benchmarks_title(report));
            let _ = writeln!(out, "{}", self.paint(BOLD, &wrap(&title, "  ")));
            let rows: Vec<Vec<String>> = report
                .benchmarks
                .iter()
                .map(|b| {
                    let (change, interval) = view::ratio_cells(b);
                    let (old, new) = view::figures(b);
                    vec![
                        view::benchmark(b),
                        old,
                        new,
                        change,
                        interval,
                        view::repetitions(b),
                        view::floor_cell(b),
                        view::threshold_cell(b),
                        view::sees_cell(b),
                        view::verdict(b),
                    ]
                })
                .collect();
            let header = [
                "benchmark",
                "old",
                "new",
                "change",
                "interval",
                "repetitions",
                "floor",
                "threshold",
                "sees",
                "verdict",
            ];
            self.table(&mut out, &header, &rows);
            let cited = view::reference_files(report);
            if !cited.is_empty() {
                let line = format!(
                    "  reference floors learned from the committed real runs {}",
                    cited.join(", ")
                );
                let _ = writeln!(out, "{}", wrap(&line, "    "));
            }
            for b in &report.benchmarks {
                if let Some(note) = view::note(b) {
                    let line = format!("  {}: {note}", view::benchmark(b));
                    let _ = writeln!(out, "{}", wrap(&line, "    "));
                }
            }
            out.push('\n');
        }
        if !report.checks.is_empty() {
            let _ = writeln!(out, "{}", self.paint(BOLD, "checks that changed"));
            for c in &report.checks {
                let line = format!(
                    "  {} {}: {} ({}): {}",
                    c.combination,
                    c.id,
                    view::check_change(c),
                    view::statuses(c),
                    view::reason(c)
                );
                let colour = match c.change {
                    crate::compare::model::CheckChange::Regression => RED,
                    crate::compare::model::CheckChange::Fixed => GREEN,
                    _ => YELLOW,
                };
                let _ = writeln!(out, "{}", self.paint(colour, &wrap(&line, "    ")));
            }
            out.push('\n');
        }
        for (title, items) in [
            ("findings", &report.findings),
            ("libraries", &report.libraries),
        ] {
            if items.is_empty() {
                continue;
            }
            let _ = writeln!(out, "{}", self.paint(BOLD, title));
            for i in items {
                let _ = writeln!(
                    out,
                    "{}",
                    wrap(&format!("  {}: {}", i.change, i.what), "    ")
                );
            }
            out.push('\n');
        }
        if !report.regressions.is_empty() {
            let _ = writeln!(out, "{}", self.paint(RED, "regressions"));
            for r in &report.regressions {
                let _ = writeln!(out, "{}", wrap(&format!("  {r}"), "    "));
            }
        }
        Ok(out.into_bytes())
    }

    fn merge(&self, report: &MergeReport) -> Result<Vec<u8>, OutputError> {
        let mut out = String::new();
        let title = format!(
            "stackbench merge ({}, {}):",
            report.kind,
            count(report.nodes.len(), "node")
        );
        let verdict = match report.outliers.len() {
            0 => self.paint(GREEN, "no outlier"),
            1 => self.paint(RED, "1 outlier"),
            n => self.paint(RED, &format!("{n} outliers")),
        };
        let _ = writeln!(out, "{} {verdict}", self.paint(BOLD, &title));
        for o in &report.outliers {
            let _ = writeln!(out, "{}", self.paint(RED, &wrap(&format!("  {o}"), "    ")));
        }
        for note in &report.notes {
            let _ = writeln!(out, "{}", wrap(&format!("  note: {note}"), "    "));
        }
        out.push('\n');
        let rows: Vec<Vec<String>> = report.rows.iter().map(super::merge_cells).collect();
        self.table(&mut out, &super::MERGE_HEADER, &rows);
        if let Some(judgement) = &report.baseline {
            self.baseline(&mut out, judgement);
        }
        Ok(out.into_bytes())
    }

    fn check(&self, report: &CheckReport) -> Result<Vec<u8>, OutputError> {
        let mut out = String::new();
        self.untrusted(&mut out, report.load_untrusted);
        let (counts, failed) = check_counts(report);
        let failed = if report.has_failures() {
            self.paint(RED, &failed)
        } else {
            self.paint(GREEN, &failed)
        };
        let _ = writeln!(
            out,
            "{} {counts}, {failed}",
            self.paint(BOLD, "stackbench check:")
        );
        if let Some(banner) = super::check_simulated(report) {
            let _ = writeln!(
                out,
                "{}",
                self.paint(&format!("{BOLD};{YELLOW}"), &wrap(&banner, "     "))
            );
        }
        let _ = writeln!(
            out,
            "{}",
            wrap(&format!("GPU: {}", check_gpu_line(report)), "     ")
        );
        if let Some(dir) = &report.driver_dir {
            let line = format!("driver libraries from --driver-dir {}", dir.shown());
            let _ = writeln!(out, "{}", wrap(&line, "     "));
        }
        out.push('\n');
        if report.combinations.is_empty() {
            let _ = writeln!(out, "  no combination was checked");
            return Ok(out.into_bytes());
        }
        self.matrix(&mut out, report);
        self.notices(&mut out, report);
        self.combinations(&mut out, report);
        if let Some(node) = &report.node {
            self.node(&mut out, node, report.simulated);
        }
        if let Some(judgement) = &report.baseline {
            self.baseline(&mut out, judgement);
        }
        Ok(out.into_bytes())
    }
}

/// An installation's libraries on one (wrapped) line, named by version, each with the CUDA it
/// was built for where it says (`2.27.5: nccl (built for CUDA 12.9)`).
fn library_versions(out: &mut String, installation: &Installation) {
    let mut by_version: Vec<(String, Vec<String>)> = Vec::new();
    for library in &installation.libraries {
        let version = library.version.clone().unwrap_or_else(|| "?".into());
        let name = match &library.built_for {
            Some(built) => format!("{} (built for CUDA {})", library.name, built.cuda),
            None => library.name.clone(),
        };
        match by_version.iter_mut().find(|(v, _)| *v == version) {
            Some((_, names)) => names.push(name),
            None => by_version.push((version, vec![name])),
        }
    }
    let listed: Vec<String> = by_version
        .iter()
        .map(|(version, names)| format!("{version}: {}", names.join(" ")))
        .collect();
    let _ = writeln!(out, "{}", wrap(&format!("  {}", listed.join("; ")), "    "));
}

/// What a finding's folded findings add, labelled: for a root cause (a damaged wheel) with
/// dependency findings under it, the libraries that need what it took away; else each one's
/// missing dependency, or its message.
fn also(f: &Finding, short: impl Fn(&str) -> String) -> (&'static str, Vec<String>) {
    let mut needed_by: Vec<String> = Vec::new();
    for by in f.also.iter().filter_map(|a| a.needed_by.as_ref()) {
        if !needed_by.contains(by) {
            needed_by.push(by.clone());
        }
    }
    if f.missing.is_none() && !f.also.is_empty() && f.also.iter().all(|a| a.needed_by.is_some()) {
        return ("needed by:", needed_by);
    }
    let label = if f.missing.is_some() {
        "also missing:"
    } else {
        "also:"
    };
    let also = f
        .also
        .iter()
        .map(|a| a.missing.clone().unwrap_or_else(|| short(&a.message)));
    (label, also.collect())
}

/// Where the check report wraps its long lines (reasons, library lists).
const WIDTH: usize = 100;

/// `text` broken at spaces into lines of at most [`WIDTH`] columns where it can be (a longer
/// word, a path, stays whole), every line after the first starting with `indent`. Leading
/// spaces stay; a no-break space (U+00A0) joins words that must stay on one line and becomes a
/// space.
fn wrap(text: &str, indent: &str) -> String {
    let mut out = String::new();
    let mut column = 0;
    for (at, word) in text.split(' ').enumerate() {
        let len = word.chars().count();
        if at > 0 {
            if column > indent.len() && column + 1 + len > WIDTH {
                out.push('\n');
                out.push_str(indent);
                column = indent.len();
            } else {
                out.push(' ');
                column += 1;
            }
        }
        out.push_str(&word.replace(NBSP, " "));
        column += len;
    }
    out
}

/// Joins words that [`wrap`] keeps on one line.
const NBSP: &str = "\u{a0}";

/// Each item with its spaces made no-break spaces, so [`wrap`] breaks only between items.
fn unbroken(items: &[String]) -> Vec<String> {
    items.iter().map(|item| item.replace(' ', NBSP)).collect()
}

/// The check matrix's cell for a status, and its colour.
fn status_cell(status: Status) -> (&'static str, &'static str) {
    match status {
        Status::Pass => ("PASS", GREEN),
        Status::Fail => ("FAIL", RED),
        Status::Warn => ("WARN", YELLOW),
        Status::Skip => ("SKIP", DIM),
    }
}

impl Terminal {
    /// An aligned table, indented by two spaces, the header dim.
    fn table(&self, out: &mut String, header: &[&str], rows: &[Vec<String>]) {
        let text = super::table::aligned(header, rows);
        let mut lines = text.lines();
        if let Some(first) = lines.next() {
            let _ = writeln!(out, "{}", self.paint(DIM, first));
        }
        for line in lines {
            let _ = writeln!(out, "{line}");
        }
    }

    /// With `--load-untrusted`, the warning as the report's first line.
    fn untrusted(&self, out: &mut String, load_untrusted: bool) {
        if load_untrusted {
            let _ = writeln!(
                out,
                "{}",
                self.paint(&format!("{BOLD};{RED}"), super::LOAD_UNTRUSTED)
            );
        }
    }

    fn paint(&self, code: &str, text: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }

    /// The node: a row per GPU, the copy matrices, its findings and notes.
    /// A judgement against a baseline: its line, then the rows beyond their fleet.
    fn baseline(&self, out: &mut String, judgement: &crate::schema::judgement::Judgement) {
        let colour = if judgement.slower().next().is_some() {
            RED
        } else {
            GREEN
        };
        let line = wrap(&super::baseline::headline(judgement), "    ");
        let _ = writeln!(out, "\n{}", self.paint(colour, &line));
        let table = super::baseline::beyond(judgement);
        if !table.rows.is_empty() {
            out.push('\n');
            out.push_str(&table.aligned());
        }
    }

    fn node(&self, out: &mut String, node: &crate::schema::node::NodeReport, simulated: bool) {
        let label = if simulated { " (SIMULATED)" } else { "" };
        // `check --nodes` probes no GPU: its node holds the job's findings alone.
        if !node.devices.is_empty() {
            let _ = writeln!(
                out,
                "\n{}",
                self.paint(BOLD, &format!("node: {} GPU(s){label}", node.devices.len()))
            );
            self.table(out, super::node::GPU_HEADER, &super::node::gpu_rows(node));
        }
        for (title, engine, both) in super::node::matrices(node) {
            let _ = writeln!(out, "\n  {title}");
            let (header, rows) = super::node::matrix(node, engine, both);
            let header: Vec<&str> = header.iter().map(String::as_str).collect();
            self.table(out, &header, &rows);
        }
        if let Some(peak) = super::node::peak_line(node) {
            let _ = writeln!(out, "  {peak}; ! after a figure: its bytes did not verify");
        }
        if !node.findings.is_empty() {
            let _ = writeln!(out, "\n{}", self.paint(BOLD, "node findings"));
            for finding in &node.findings {
                let colour = match finding.severity {
                    Severity::Error => RED,
                    _ => YELLOW,
                };
                self.finding(out, finding, colour, false);
            }
        }
        for note in &node.notes {
            let _ = writeln!(out, "  note: {note}");
        }
    }

    /// The check matrix: a column per combination (numbered, with a legend above, when the
    /// names do not fit in [`WIDTH`]), a row per check under a header per library.
    fn matrix(&self, out: &mut String, report: &CheckReport) {
        let groups = report.check_groups();
        let label_width = groups
            .iter()
            .flat_map(|(library, ids)| {
                std::iter::once(library.len()).chain(ids.iter().map(|id| id.len() + 2))
            })
            .chain([MATRIX_LABEL.len()])
            .max()
            .unwrap_or(0);
        let names: Vec<&str> = report
            .combinations
            .iter()
            .map(|c| c.name.as_str())
            .collect();
        let width_of = |header: &str| header.chars().count().max(4);
        let full: usize = label_width + names.iter().map(|n| 2 + width_of(n)).sum::<usize>();
        let headers: Vec<String> = if full > WIDTH {
            for (number, name) in names.iter().enumerate() {
                let _ = writeln!(
                    out,
                    "  {} {name}",
                    self.paint(BOLD, &format!("[{}]", number + 1))
                );
            }
            out.push('\n');
            (1..=names.len()).map(|n| format!("[{n}]")).collect()
        } else {
            names.iter().map(|n| n.to_string()).collect()
        };
        let widths: Vec<usize> = headers.iter().map(|h| width_of(h)).collect();
        let row = |label: String, cells: &[(&str, &str)]| {
            let mut line = label;
            for (at, ((text, colour), width)) in cells.iter().zip(&widths).enumerate() {
                line.push_str("  ");
                line.push_str(&self.paint(colour, text));
                if at + 1 < cells.len() {
                    line.push_str(&" ".repeat(width - text.chars().count()));
                }
            }
            line
        };
        let header: Vec<(&str, &str)> = headers.iter().map(|h| (h.as_str(), BOLD)).collect();
        let label = self.paint(DIM, &format!("{MATRIX_LABEL:<label_width$}"));
        let _ = writeln!(out, "{}", row(label, &header));
        for (library, ids) in &groups {
            let _ = writeln!(out, "{}", self.paint(BOLD, library));
            for id in ids {
                let cells: Vec<(&str, &str)> = report
                    .combinations
                    .iter()
                    .map(|c| c.check(id).map_or(("-", DIM), |r| status_cell(r.status)))
                    .collect();
                let _ = writeln!(
                    out,
                    "{}",
                    row(format!("  {id:<0$}", label_width - 2), &cells)
                );
            }
        }
        out.push('\n');
    }

    /// The failures, warnings and notable skips below the matrix, each once with every
    /// combination it concerns: `name: check.id: reason`.
    fn notices(&self, out: &mut String, report: &CheckReport) {
        let notices = notices(report);
        let total = report.combinations.len();
        for (status, title, colour) in [
            (Status::Fail, "failures", RED),
            (Status::Warn, "warnings", YELLOW),
            (Status::Skip, "skipped", DIM),
        ] {
            let listed: Vec<&Notice> = notices.iter().filter(|n| n.status == status).collect();
            if listed.is_empty() {
                continue;
            }
            let _ = writeln!(out, "{}", self.paint(&format!("{BOLD};{colour}"), title));
            for notice in listed {
                let head = format!("{}: {}:", notice.scope(total, str::to_owned), notice.id);
                let text = wrap(&format!("  {head} {}", notice.reason), "      ");
                let painted = format!("  {}", self.paint(colour, &head));
                let _ = writeln!(out, "{}", text.replacen(&format!("  {head}"), &painted, 1));
            }
            out.push('\n');
        }
    }

    /// One line per combination: its CUDA runtime, driver, time and libraries; then a line for
    /// each library mapped from outside the combination.
    fn combinations(&self, out: &mut String, report: &CheckReport) {
        let _ = writeln!(out, "{}", self.paint(BOLD, "combinations"));
        for c in &report.combinations {
            let cuda = match &c.cuda_version {
                Some(v) => format!("CUDA {v}"),
                None => "CUDA version unknown".to_string(),
            };
            let driver = match (&c.driver, driver_version(report, c)) {
                (None, _) => "no libcuda.so.1".to_string(),
                (Some(_), Some(v)) => format!("driver {v}"),
                (Some(d), None) => format!("driver {}", d.path.shown()),
            };
            let driver = if c.simulated {
                format!("{driver} (SIMULATED)")
            } else {
                driver
            };
            let time = format!("{:.1} s", c.duration_ms / 1e3);
            let libraries: Vec<String> = c
                .libraries
                .iter()
                .map(|l| match &l.version {
                    Some(v) => format!("{} {v}", l.component),
                    None => l.component.clone(),
                })
                .collect();
            let libraries = match libraries.is_empty() {
                true => "no CUDA library".to_string(),
                false => unbroken(&libraries).join(", "),
            };
            let [cuda, driver, time] = [cuda, driver, time].map(|f| f.replace(' ', NBSP));
            let line = format!("  {}: {cuda}, {driver}, {time}; {libraries}", c.name);
            let text = wrap(&line, "      ");
            let _ = writeln!(
                out,
                "{}",
                text.replacen(&c.name, &self.paint(CYAN, &c.name), 1)
            );
            for l in c.libraries.iter().filter(|l| !l.inside) {
                let path = library_path(l).map(|p| p.shown());
                let flag = format!("{} mapped from outside the combination:", l.name);
                let text = wrap(
                    &format!("      ! {flag} {}", path.unwrap_or_default()),
                    "        ",
                );
                let _ = writeln!(
                    out,
                    "{}",
                    text.replacen(&flag, &self.paint(YELLOW, &flag), 1)
                );
            }
        }
    }

    /// One finding: what, where, what else shares its cause and fix, the evidence (two lines
    /// unless verbose; none when `brief`), the fix. Paths inside its installation are shown
    /// relative to it.
    /// `bench --nodes`: where the job's ranks ran, its checks that did not pass, and what
    /// they found.
    fn job(&self, out: &mut String, job: &crate::bench::model::JobRun) {
        let line = format!("across nodes: {}", job.placement());
        let _ = writeln!(out, "{}", wrap(&line, "     "));
        for c in job.checks.iter().filter(|c| c.status != Status::Pass) {
            let (word, colour) = status_cell(c.status);
            let line = format!("  {} {}: {}", self.paint(colour, word), c.id, c.reason);
            let _ = writeln!(out, "{}", wrap(&line, "      "));
        }
        for finding in &job.findings {
            let colour = match finding.severity {
                Severity::Error => RED,
                _ => YELLOW,
            };
            self.finding(out, finding, colour, false);
        }
    }

    fn finding(&self, out: &mut String, f: &Finding, colour: &str, brief: bool) {
        let inside = f
            .installation
            .as_ref()
            .map(|root| format!("{}/", root.shown()));
        let short = |text: &str| match &inside {
            Some(prefix) => text.replace(prefix.as_str(), ""),
            None => text.to_owned(),
        };
        let line = |out: &mut String, label: &str, text: &str| {
            // The label and the first word stay on one line, however long the word.
            let label_words = label.replace(' ', NBSP);
            let text = wrap(&format!("      {label_words}{NBSP}{text}"), "        ");
            let colour = if label == "fix:" { GREEN } else { DIM };
            let text = text.replacen(label, &self.paint(colour, label), 1);
            let _ = writeln!(out, "{text}");
        };
        let title = wrap(
            &format!("  {} {}", f.cause.code(), short(&f.message)),
            "      ",
        );
        let title = title.replacen(&f.cause.code(), &self.paint(colour, &f.cause.code()), 1);
        let _ = writeln!(out, "{title}");
        // The installation, unless the fix names it anyway.
        if let Some(root) = f.installation.as_ref().map(|r| r.shown()) {
            if !f.fix.contains(&root) {
                line(out, "in:", &root);
            }
        }
        // What was seen first says where the library is when it starts with its path.
        let path = f.path.as_ref().map(|p| short(&p.shown()));
        let first_seen = f.evidence.first().map(|e| short(e));
        let said = |p: &String| brief || first_seen.as_ref().is_some_and(|e| e.starts_with(p));
        if let Some(path) = path.filter(|p| !said(p)) {
            line(out, "path:", &path);
        }
        let (label, also) = also(f, short);
        if !also.is_empty() {
            line(out, label, &also.join(", "));
        }
        if brief {
            line(out, "fix:", &f.fix);
            return;
        }
        let shown = if self.verbose {
            usize::MAX
        } else {
            EVIDENCE_LINES
        };
        let candidates: Vec<&std::path::PathBuf> = f
            .candidates
            .iter()
            .chain(f.also.iter().flat_map(|a| &a.candidates))
            .collect();
        for candidate in candidates.iter().take(shown) {
            line(out, "copy at:", &short(&candidate.shown()));
        }
        // What was seen inside the installation first: it is about the installation itself.
        let mut evidence: Vec<&String> = f
            .evidence
            .iter()
            .chain(f.also.iter().flat_map(|a| &a.evidence))
            .collect();
        if let Some(prefix) = &inside {
            evidence.sort_by_key(|text| !text.contains(prefix.as_str()));
        }
        let hidden = evidence.len().saturating_sub(shown) + candidates.len().saturating_sub(shown);
        let more = format!("(+{hidden} more: -v)");
        let mut seen: Vec<String> = evidence.iter().take(shown).map(|t| short(t)).collect();
        // The count of what is not shown ends the last line shown, where it fits.
        let fits = |text: &String| "      seen: ".len() + text.len() + 2 + more.len() <= WIDTH;
        let mut more_line = hidden > 0;
        if let Some(last) = seen.last_mut().filter(|last| more_line && fits(last)) {
            *last = format!("{last}  {}", self.paint(DIM, &more));
            more_line = false;
        }
        for text in &seen {
            line(out, "seen:", text);
        }
        if more_line {
            let _ = writeln!(out, "      {}", self.paint(DIM, &more));
        }
        line(out, "fix:", &f.fix);
    }

    /// What a program asks for and gets, one line each.
    fn program(&self, out: &mut String, program: &crate::diagnose::program::ProgramReport) {
        let _ = writeln!(
            out,
            "{} {}",
            self.paint(BOLD, "program"),
            program.path.shown()
        );
        let width = program
            .libraries
            .iter()
            .map(|l| l.name.len())
            .max()
            .unwrap_or(0);
        for library in &program.libraries {
            let got = match (&library.found, &library.via) {
                (Some(found), Some(via)) => format!("{} (via {via})", found.shown()),
                (Some(found), None) => found.shown(),
                (None, _) => self.paint(RED, "not found"),
            };
            let line = format!("  {:<6} {:<width$}  {got}", library.how, library.name);
            let _ = writeln!(out, "{}", wrap(&line, "          "));
        }
        out.push('\n');
    }

    /// What a command's run asked the loader for and got, its exit and its error lines.
    fn command(&self, out: &mut String, run: &crate::command::CommandReport) {
        let ended = match (&run.not_run, run.exit_status, run.signal) {
            (Some(why), _, _) => self.paint(RED, &format!("not run: {why}")),
            _ if run.timed_out => self.paint(RED, &format!("stopped after {:.1} s", run.seconds)),
            (None, Some(code), _) => format!("exit status {code} after {:.1} s", run.seconds),
            (None, None, Some(signal)) => self.paint(RED, &format!("killed by signal {signal}")),
            (None, None, None) => "ended".into(),
        };
        let _ = writeln!(
            out,
            "{} {}: {ended}",
            self.paint(BOLD, "command"),
            run.command.join(" ")
        );
        if run.libraries.is_empty() {
            let _ = writeln!(out, "  asked the loader for no CUDA library");
        }
        for library in &run.libraries {
            let from = library
                .installation
                .as_ref()
                .map(|root| format!(" (from {})", root.shown()))
                .unwrap_or_default();
            let line = match &library.found {
                // Opened by its path: what it asked for is what it got.
                Some(found) if found.as_os_str() == library.name.as_str() => {
                    format!("  {} loaded{from}", library.name)
                }
                Some(found) => format!("  {} -> {}{from}", library.name, found.shown()),
                None => format!("  {} -> {}", library.name, self.paint(RED, "not found")),
            };
            let _ = writeln!(out, "{}", wrap(&line, "      "));
        }
        for line in &run.error_lines {
            let _ = writeln!(out, "{}", wrap(&format!("  said: {line}"), "      "));
        }
        out.push('\n');
    }

    /// An installation's layout, root, versions and how it was found.
    fn installation_heading(&self, installation: &Installation) -> String {
        let mut versions = Vec::new();
        if let Some(v) = &installation.cuda_version {
            versions.push(format!("CUDA {v}"));
        }
        if let Some(v) = &installation.driver_version {
            versions.push(format!("driver {v}"));
        }
        let sources: Vec<&str> = installation.sources.iter().map(|s| s.describe()).collect();
        format!(
            "{} {}  {}{}",
            self.paint(CYAN, &format!("{:<9}", installation.layout.name())),
            self.paint(BOLD, &installation.root.shown()),
            versions
                .iter()
                .map(|v| format!("{v}  "))
                .collect::<String>(),
            self.paint(DIM, &format!("(found via {})", sources.join(", ")))
        )
    }

    fn problems(&self, out: &mut String, problems: &[&Problem]) {
        for p in problems {
            let code = self.paint(YELLOW, p.kind.code());
            let _ = writeln!(out, "  ! {code} {}: {}", p.path.shown(), p.message);
        }
    }

    /// Each installation under its heading: its library table, or with `summary` one line of
    /// its libraries by version; then its problems, and those outside every installation.
    /// Can this host build CUDA code: each toolkit a build might take, then the frameworks and
    /// the CUDA each was built for.
    fn building(&self, out: &mut String, report: &DoctorReport) {
        let build = &report.build;
        let host_scanned = (report.searched.iter()).any(|s| s.source != crate::model::Source::Root);
        if host_scanned && !build.has_nvcc() {
            let line = format!(
                "{}: {}",
                self.paint(BOLD, "building CUDA code"),
                build.no_compiler_line()
            );
            let _ = writeln!(out, "\n{}", wrap(&line, "    "));
        }
        if !build.toolkits.is_empty() {
            let compiler = build.host_compiler_line();
            let heading = format!(
                "{}  (host compiler: {compiler})",
                self.paint(BOLD, "building CUDA code")
            );
            let _ = writeln!(out, "\n{}", wrap(&heading, "    "));
            for toolkit in &build.toolkits {
                let _ = writeln!(
                    out,
                    "{}  [{}]",
                    toolkit.root.shown(),
                    toolkit.named_by.join(", ")
                );
                let line = format!("  {}", build.summary(toolkit));
                let _ = writeln!(out, "{}", wrap(&line, "    "));
            }
        }
        if !report.frameworks.is_empty() {
            let _ = writeln!(out, "\n{}", self.paint(BOLD, "frameworks"));
            for f in &report.frameworks {
                let cudnn = f
                    .cudnn
                    .as_deref()
                    .map(|c| format!(", cuDNN {c}"))
                    .unwrap_or_default();
                let line = format!(
                    "{} {}: built for CUDA {}{cudnn} ({})",
                    f.package,
                    f.version,
                    f.cuda.as_deref().unwrap_or("none (CPU build)"),
                    f.source.shown()
                );
                let _ = writeln!(out, "{}", wrap(&line, "    "));
            }
        }
    }

    fn installations(
        &self,
        out: &mut String,
        installations: &[Installation],
        problems: &[Problem],
        summary: bool,
    ) {
        let gap = if summary { "" } else { "\n" };
        if installations.is_empty() {
            let _ = writeln!(
                out,
                "  no CUDA installation found; give --root DIR to search elsewhere{gap}"
            );
        }
        for installation in installations {
            let _ = writeln!(out, "{}", self.installation_heading(installation));
            if summary {
                library_versions(out, installation);
            } else {
                self.library_table(out, installation);
            }
            let problems: Vec<&Problem> = installation.all_problems().collect();
            self.problems(out, &problems);
            out.push_str(gap);
        }
        if !problems.is_empty() {
            let _ = writeln!(out, "{}", self.paint(RED, "problems outside installations"));
            self.problems(out, &problems.iter().collect::<Vec<_>>());
        }
    }

    /// An installation's libraries as a table, with what each opens at run time.
    fn library_table(&self, out: &mut String, installation: &Installation) {
        let rows: Vec<[String; 6]> = installation
            .libraries
            .iter()
            .map(|l| {
                [
                    l.name.clone(),
                    l.version.clone().unwrap_or_else(|| "-".into()),
                    l.soname.clone().unwrap_or_else(|| "-".into()),
                    format!(
                        "{} {}",
                        l.binary_class().unwrap_or("?"),
                        l.machine.as_deref().unwrap_or("?")
                    ),
                    [archs(&l.sass, "sm_"), archs(&l.ptx, "compute_")].join("  "),
                    l.path
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default(),
                ]
            })
            .collect();
        let header = ["library", "version", "soname", "elf", "gpu code", "file"].map(String::from);
        let widths: Vec<usize> = (0..6)
            .map(|c| {
                rows.iter()
                    .chain([&header])
                    .map(|r| r[c].chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let line = |row: &[String; 6]| {
            let cells: Vec<String> = row
                .iter()
                .zip(&widths)
                .map(|(c, w)| format!("{c:<w$}"))
                .collect();
            format!("  {}", cells.join("  ").trim_end())
        };
        let _ = writeln!(out, "{}", self.paint(DIM, &line(&header)));
        for (row, library) in rows.iter().zip(&installation.libraries) {
            let _ = writeln!(out, "{}", line(row));
            if !library.dlopen_deps.is_empty() {
                let opens = format!("      opens at run time: {}", library.dlopen_deps.join(" "));
                let _ = writeln!(out, "{}", self.paint(DIM, &opens));
            }
            if let Some(built) = &library.built_for {
                let line = format!("      built for CUDA {}: \"{}\"", built.cuda, built.said);
                let _ = writeln!(out, "{}", self.paint(DIM, &line));
            }
        }
    }
}
