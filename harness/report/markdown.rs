//! Markdown: a section per installation with a table of its libraries, findings first for the
//! doctor; for the check, the matrix, its failures and warnings, and each combination's
//! libraries; for the bench, the combinations with their versions and ceilings, the measured
//! table and what was not measured, by reason. For CI summaries (`$GITHUB_STEP_SUMMARY`), pull requests and issues.

use super::{
    archs, bench, cell, check_counts, check_gpu_line, count, driver_version, gpu_line,
    library_path, notices, Exporter,
};
use crate::bench::model::{BenchReport, Status as BenchStatus};
use crate::compare::model::CompareReport;
use crate::doctor::DoctorReport;
use crate::error::OutputError;
use crate::merge::MergeReport;
use crate::model::{HostInfo, Installation, Library, Problem, ScanReport};
use crate::pathname::Shown;
use crate::schema::check::{CheckReport, CombinationReport, Status};
use std::fmt::Write;

pub struct Markdown;

impl Exporter for Markdown {
    fn scan(&self, report: &ScanReport) -> Result<Vec<u8>, OutputError> {
        let mut out = String::from("# stackbench scan\n\n");
        summary(&mut out, &report.host, &report.installations);
        installations(&mut out, &report.installations, &report.problems);
        Ok(out.into_bytes())
    }

    fn doctor(&self, report: &DoctorReport) -> Result<Vec<u8>, OutputError> {
        let [errors, warnings, info] = report.severity_counts();
        let mut out = untrusted_line(report.load_untrusted);
        out.push_str("# stackbench doctor\n\n");
        let _ = writeln!(
            out,
            "**{errors} errors, {warnings} warnings, {info} notes.** GPU: {}.\n",
            escape(&gpu_line(&report.gpu))
        );
        summary(&mut out, &report.host, &report.installations);
        if !report.loaded {
            out.push_str("Static analysis only (`--no-load`): no library was loaded.\n\n");
        }
        if !report.cargo_search_path.is_empty() {
            let _ = writeln!(
                out,
                "Run by cargo: left out of `LD_LIBRARY_PATH` what cargo added ({}).\n",
                code(&report.cargo_search_path.join(":"))
            );
        }
        if !report.findings.is_empty() {
            out.push_str("## Findings\n\n| severity | cause | library | what | fix |\n|---|---|---|---|---|\n");
            for f in &report.findings {
                let _ = writeln!(
                    out,
                    "| {} | `{}` | {} | {} | {} |",
                    f.severity.name(),
                    f.cause.code(),
                    escape(f.library.as_deref().unwrap_or("-")),
                    escape(&f.message),
                    escape(&f.fix)
                );
            }
            out.push('\n');
        }
        installations(&mut out, &report.installations, &report.problems);
        building(&mut out, report);
        Ok(out.into_bytes())
    }

    fn bench(&self, report: &BenchReport) -> Result<Vec<u8>, OutputError> {
        let mut out = untrusted_line(report.load_untrusted);
        out.push_str("# stackbench bench\n\n");
        if let Some(banner) = super::bench_simulated(report) {
            let _ = writeln!(out, "{}\n", simulated_quote(&banner));
        }
        let host = &report.host;
        let _ = writeln!(
            out,
            "**On {}** ({} {}, stackbench {}), started {}: {}{}{}.\n",
            code(&host.hostname),
            escape(&host.os),
            escape(&host.arch),
            escape(&host.stackbench_version),
            report.started,
            bench::counts(report),
            if report.quick { " (`--quick`)" } else { "" },
            bench::repetitions(report)
        );
        let _ = writeln!(
            out,
            "GPU: {}; NVRTC compiled for {}.\n",
            escape(&gpu_line(&report.gpu)),
            report.target
        );
        if let Some(again) = &report.rerendered {
            let _ = writeln!(
                out,
                "Rendered again from its file on {} by {}: the figures are the run's own (schema minor {}), the theoretical peaks and shares this version's.\n",
                again.at,
                escape(&again.by),
                report.schema_minor
            );
        }
        if let Some(dir) = &report.driver_dir {
            let _ = writeln!(
                out,
                "Driver libraries from {}.\n",
                code(&format!("--driver-dir {}", dir.shown()))
            );
        }
        if let Some(line) = bench::conditions(report) {
            let _ = writeln!(out, "{}.\n", escape(&line));
        }
        if let Some(job) = &report.job {
            job_section(&mut out, job);
        }
        if !report.findings.is_empty() {
            out.push_str("## Findings\n\n");
            for f in &report.findings {
                let _ = writeln!(
                    out,
                    "- **{}**: {}. Benchmarks: {}. Fix: {}.",
                    f.code,
                    escape(&f.message),
                    escape(&bench::slow_benchmarks(f)),
                    escape(&f.fix)
                );
            }
            out.push('\n');
        }
        out.push_str("## Combinations\n\n");
        out.push_str(
            "| combination | CUDA | driver's CUDA | libraries | ceilings | theoretical peaks | GPU benchmarks |\n",
        );
        out.push_str("| --- | --- | --- | --- | --- | --- | --- |\n");
        for c in &report.combinations {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} |",
                code(&c.name),
                escape(c.cuda_version.as_deref().unwrap_or("-")),
                escape(c.driver_cuda_version.as_deref().unwrap_or("-")),
                escape(&bench::libraries(c)),
                bench::peaks(c),
                escape(&bench::spec(c)),
                match (&c.gpu_unavailable, c.simulated) {
                    (Some(why), _) => escape(why),
                    (None, true) => format!("ran on the **{}**", super::SIMULATED_GPU),
                    (None, false) => "ran".to_owned(),
                }
            );
        }
        out.push('\n');
        let measured: Vec<_> = report
            .benchmarks
            .iter()
            .filter(|r| r.status == BenchStatus::Measured && r.nccl.is_none())
            .collect();
        let multi = report.multi_device();
        if !measured.is_empty() {
            out.push_str("## Measured\n\n");
            let (gpu, rule) = if multi {
                ("GPU | ", "--- | ")
            } else {
                ("", "")
            };
            let _ = writeln!(
                out,
                "| benchmark | combination | size | variant | {gpu}median | IQR | noise | rate | % of peak | % of spec | verified | stopped by | throttled |",
            );
            let _ = writeln!(
                out,
                "| --- | --- | --- | --- | {rule}--- | --- | --- | --- | --- | --- | --- | --- | --- |",
            );
            for r in measured {
                let gpu = if multi {
                    format!("{} | ", bench::device(r))
                } else {
                    String::new()
                };
                let (median, iqr) = bench::spread(r);
                let rate = match &r.throughput {
                    Some(_) => bench::figure(r),
                    None => "-".to_owned(),
                };
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {} | {gpu}{median} | {iqr} | {} | {rate} | {} | {} | {} | {} | {} |",
                    r.benchmark,
                    code(&r.combination),
                    bench::size(r),
                    bench::variant(r),
                    bench::noise(r),
                    bench::of_peak(r),
                    bench::of_spec(r),
                    bench::verified(r),
                    bench::stopped(r),
                    bench::throttled(r)
                );
            }
            out.push('\n');
        }
        for table in crate::bench::node::tables(report) {
            let _ = writeln!(
                out,
                "## Node: {}, {}\n\n{}.\n",
                code(table.combination),
                escape(&bench::node_title(&table)),
                escape(&bench::node_legend("**Bold**:"))
            );
            let header = bench::node_header(&table);
            let _ = writeln!(out, "| {} |", header.join(" | "));
            let _ = writeln!(out, "|{}", " --- |".repeat(header.len()));
            for (key, cells) in bench::node_rows(&table) {
                let cells = cells.into_iter().map(|(cell, odd)| match odd {
                    true => format!("**{cell}**"),
                    false => cell,
                });
                let row: Vec<String> = key.into_iter().chain(cells).collect();
                let _ = writeln!(out, "| {} |", row.join(" | "));
            }
            out.push('\n');
        }
        for table in crate::bench::collectives::tables(report) {
            let _ = writeln!(
                out,
                "## NCCL: {}\n\n{}.\n",
                code(table.combination),
                escape(&bench::nccl_title(&table))
            );
            let _ = writeln!(out, "| {} |", bench::NCCL_HEADER.join(" | "));
            let _ = writeln!(out, "|{}", " --- |".repeat(bench::NCCL_HEADER.len()));
            for row in bench::nccl_rows(&table) {
                let _ = writeln!(out, "| {} |", row.join(" | "));
            }
            out.push('\n');
        }
        let notes: Vec<String> = report
            .benchmarks
            .iter()
            .filter(|r| r.status == BenchStatus::Measured)
            .filter_map(|r| {
                Some(format!(
                    "- `{}`: {}",
                    r.label(),
                    escape(r.reason.as_deref()?)
                ))
            })
            .collect();
        if !notes.is_empty() {
            let _ = writeln!(out, "Notes:\n\n{}\n", notes.join("\n"));
        }
        let unmeasured = bench::unmeasured(report);
        if !unmeasured.is_empty() {
            out.push_str("## Not measured\n\n");
            for group in unmeasured {
                let verb = match group.status {
                    BenchStatus::Failed => format!("**{}**", group.verb()),
                    _ => group.verb().to_owned(),
                };
                let _ = writeln!(
                    out,
                    "- {verb} ({}): {}: {}",
                    group.ids.len(),
                    escape(&group.which()),
                    escape(group.reason)
                );
            }
            out.push('\n');
        }
        Ok(out.into_bytes())
    }

    fn compare(&self, report: &CompareReport) -> Result<Vec<u8>, OutputError> {
        use super::compare as view;
        let mut out = format!("# stackbench compare ({})\n\n", report.kind);
        let _ = writeln!(out, "**{}**.\n", view::headline(report));
        for (label, run) in [("Old", &report.old), ("New", &report.new)] {
            let _ = writeln!(
                out,
                "- {label}: {} on {}{}{}",
                code(&run.path.shown()),
                code(&run.hostname),
                run.started
                    .as_deref()
                    .map(|s| format!(", {s}"))
                    .unwrap_or_default(),
                view::run_mark(run)
            );
        }
        out.push('\n');
        if report.environment.is_empty() {
            out.push_str("The environment is unchanged.\n\n");
        } else {
            out.push_str(
                "## What changed in the environment\n\n| what | old → new |\n| --- | --- |\n",
            );
            for c in &report.environment {
                let _ = writeln!(
                    out,
                    "| {} | {} |",
                    escape(&c.what),
                    escape(&view::change_text(c))
                );
            }
            out.push('\n');
        }
        if !report.regressions.is_empty() {
            out.push_str("## Regressions\n\n");
            for r in &report.regressions {
                let _ = writeln!(out, "- {}", escape(r));
            }
            out.push('\n');
        }
        if !report.benchmarks.is_empty() {
            let _ = writeln!(
                out,
                "## Benchmarks\n\n{}.\n",
                view::benchmarks_title(report)
            );
            out.push_str(
                "| benchmark | old | new | change | interval | repetitions | floor | threshold | sees | verdict | why |\n",
            );
            out.push_str("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
            for b in &report.benchmarks {
                let (change, interval) = view::ratio_cells(b);
                let (old, new) = view::figures(b);
                let _ = writeln!(
                    out,
                    "| `{}` | {old} | {new} | {change} | {interval} | {} | {} | {} | {} | {} | {} |",
                    view::benchmark(b),
                    view::repetitions(b),
                    view::floor_cell(b),
                    view::threshold_cell(b),
                    view::sees_cell(b),
                    view::verdict(b),
                    escape(&view::note(b).unwrap_or_default())
                );
            }
            out.push('\n');
            let cited = view::reference_files(report);
            if !cited.is_empty() {
                let files: Vec<String> = cited.iter().map(|f| format!("`{f}`")).collect();
                let _ = writeln!(
                    out,
                    "Reference floors learned from the committed real runs {}.\n",
                    files.join(", ")
                );
            }
        }
        if !report.checks.is_empty() {
            out.push_str("## Checks that changed\n\n| combination | check | change | status | reason |\n| --- | --- | --- | --- | --- |\n");
            for c in &report.checks {
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {} | {} |",
                    code(&c.combination),
                    c.id,
                    view::check_change(c),
                    view::statuses(c),
                    escape(view::reason(c))
                );
            }
            out.push('\n');
        }
        for (title, items) in [
            ("Findings", &report.findings),
            ("Libraries", &report.libraries),
        ] {
            if items.is_empty() {
                continue;
            }
            let _ = writeln!(out, "## {title} that appeared or disappeared\n");
            for i in items {
                let _ = writeln!(out, "- {}: {}", i.change, escape(&i.what));
            }
            out.push('\n');
        }
        Ok(out.into_bytes())
    }

    fn merge(&self, report: &MergeReport) -> Result<Vec<u8>, OutputError> {
        let mut out = format!(
            "# stackbench merge ({}, {})\n\n",
            report.kind,
            count(report.nodes.len(), "node")
        );
        if report.outliers.is_empty() {
            out.push_str("No outlier.\n\n");
        } else {
            out.push_str("## Outliers\n\n");
            for o in &report.outliers {
                let _ = writeln!(out, "- {}", escape(o));
            }
            out.push('\n');
        }
        for note in &report.notes {
            let _ = writeln!(out, "Note: {}.\n", escape(note));
        }
        out.push_str("## Fleet\n\n");
        let _ = writeln!(out, "| {} |", super::MERGE_HEADER.join(" | "));
        let _ = writeln!(out, "|{}", " --- |".repeat(super::MERGE_HEADER.len()));
        for row in &report.rows {
            let cells: Vec<String> = super::merge_cells(row).iter().map(|c| escape(c)).collect();
            let _ = writeln!(out, "| {} |", cells.join(" | "));
        }
        out.push('\n');
        if let Some(judgement) = &report.baseline {
            baseline(&mut out, judgement);
        }
        Ok(out.into_bytes())
    }

    fn check(&self, report: &CheckReport) -> Result<Vec<u8>, OutputError> {
        let mut out = untrusted_line(report.load_untrusted);
        out.push_str("# stackbench check\n\n");
        if let Some(banner) = super::check_simulated(report) {
            let _ = writeln!(out, "{}\n", simulated_quote(&banner));
        }
        let (counts, failed) = check_counts(report);
        let failed = if report.has_failures() {
            format!("**{failed}**")
        } else {
            failed
        };
        let host = &report.host;
        let _ = writeln!(
            out,
            "**On {}** ({} {}, stackbench {}): {counts}, {failed}.\n",
            code(&host.hostname),
            escape(&host.os),
            escape(&host.arch),
            escape(&host.stackbench_version)
        );
        let _ = writeln!(out, "GPU: {}.\n", escape(&check_gpu_line(report)));
        if let Some(dir) = &report.driver_dir {
            let _ = writeln!(
                out,
                "Driver libraries from `--driver-dir {}`.\n",
                dir.shown()
            );
        }
        check_matrix(&mut out, report);
        check_notices(&mut out, report);
        out.push_str("## Libraries\n\n");
        for c in &report.combinations {
            check_libraries(&mut out, report, c);
        }
        if let Some(node) = &report.node {
            check_node(&mut out, node, report.simulated);
        }
        if let Some(judgement) = &report.baseline {
            baseline(&mut out, judgement);
        }
        Ok(out.into_bytes())
    }
}

/// A judgement against a baseline: its line, then the rows beyond their fleet.
fn baseline(out: &mut String, judgement: &crate::schema::judgement::Judgement) {
    let _ = writeln!(
        out,
        "## Against the baseline\n\n{}.\n",
        escape(&super::baseline::headline(judgement))
    );
    let table = super::baseline::beyond(judgement);
    if !table.rows.is_empty() {
        out.push_str(&table.markdown());
    }
}

/// A Markdown table of text cells, each escaped.
fn table(out: &mut String, header: &[String], rows: &[Vec<String>]) {
    let _ = writeln!(
        out,
        "| {} |",
        header
            .iter()
            .map(|h| escape(h))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    let _ = writeln!(out, "|{}", "---|".repeat(header.len()));
    for row in rows {
        let _ = writeln!(
            out,
            "| {} |",
            row.iter()
                .map(|c| escape(c))
                .collect::<Vec<_>>()
                .join(" | ")
        );
    }
    out.push('\n');
}

/// The node: a row per GPU, the copy matrices, the findings.
fn check_node(out: &mut String, node: &crate::schema::node::NodeReport, simulated: bool) {
    let label = if simulated { " (simulated)" } else { "" };
    // `check --nodes` probes no GPU: its node holds the job's findings alone.
    if !node.devices.is_empty() {
        let _ = writeln!(out, "## Node: {} GPUs{label}\n", node.devices.len());
        let header: Vec<String> = super::node::GPU_HEADER
            .iter()
            .map(|h| (*h).to_owned())
            .collect();
        table(out, &header, &super::node::gpu_rows(node));
    }
    for (title, engine, both) in super::node::matrices(node) {
        let _ = writeln!(out, "**{}**\n", escape(&title));
        let (header, rows) = super::node::matrix(node, engine, both);
        table(out, &header, &rows);
    }
    if let Some(peak) = super::node::peak_line(node) {
        let _ = writeln!(
            out,
            "{}; `!` after a figure: its bytes did not verify.\n",
            escape(&peak)
        );
    }
    if !node.findings.is_empty() {
        out.push_str("### Node findings\n\n");
        findings_table(out, &node.findings);
    }
    for note in &node.notes {
        let _ = writeln!(out, "Note: {}\n", escape(note));
    }
}

/// With `--load-untrusted`, the warning as the report's first line.
/// Findings as a table: severity, cause, what (the message, then each piece of evidence), fix.
fn findings_table(out: &mut String, findings: &[crate::diagnose::finding::Finding]) {
    out.push_str("| severity | cause | what | fix |\n|---|---|---|---|\n");
    for f in findings {
        let what = std::iter::once(f.message.as_str())
            .chain(f.evidence.iter().map(String::as_str))
            .map(escape)
            .collect::<Vec<_>>()
            .join("<br>");
        let _ = writeln!(
            out,
            "| {} | `{}` | {what} | {} |",
            f.severity.name(),
            f.cause.code(),
            escape(&f.fix)
        );
    }
    out.push('\n');
}

/// `bench --nodes`: where the job's ranks ran, the checks its figures stand on, and what they
/// found.
fn job_section(out: &mut String, job: &crate::bench::model::JobRun) {
    let _ = writeln!(
        out,
        "## Across nodes\n\n{}.\n\n| check | status | result |\n|---|---|---|",
        escape(&job.placement())
    );
    for c in &job.checks {
        let _ = writeln!(
            out,
            "| `{}` | {} | {} |",
            c.id,
            c.status.name(),
            escape(&c.reason)
        );
    }
    out.push('\n');
    if !job.findings.is_empty() {
        out.push_str("### Job findings\n\n");
        findings_table(out, &job.findings);
    }
}

fn untrusted_line(load_untrusted: bool) -> String {
    match load_untrusted {
        true => format!("**{}**\n\n", super::LOAD_UNTRUSTED),
        false => String::new(),
    }
}

/// The simulated-GPU banner as a Markdown quote, its first words in bold.
fn simulated_quote(banner: &str) -> String {
    let rest = banner.strip_prefix(super::SIMULATED_GPU).unwrap_or(banner);
    format!("> **{}**{}", super::SIMULATED_GPU, escape(rest))
}

fn summary(out: &mut String, host: &HostInfo, installations: &[Installation]) {
    let libraries: usize = installations.iter().map(|i| i.libraries.len()).sum();
    let _ = writeln!(
        out,
        "{}, {} on {} ({} {}), stackbench {}.\n",
        count(installations.len(), "installation"),
        count(libraries, "library"),
        code(&host.hostname),
        escape(&host.os),
        escape(&host.arch),
        escape(&host.stackbench_version)
    );
}

fn installations(out: &mut String, installations: &[Installation], problems: &[Problem]) {
    for installation in installations {
        let mut title = format!(
            "## {} {}",
            installation.layout.name(),
            code(&installation.root.shown())
        );
        if let Some(v) = &installation.cuda_version {
            let _ = write!(title, " — CUDA {v}");
        }
        if let Some(v) = &installation.driver_version {
            let _ = write!(title, " — driver {v}");
        }
        let _ = writeln!(out, "{title}\n");
        let _ = writeln!(out, "| library | version | soname | class | machine | SASS | PTX | opens at run time | path |");
        let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|");
        for l in &installation.libraries {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                escape(&l.name),
                escape(&version_cell(l)),
                escape(l.soname.as_deref().unwrap_or("-")),
                l.binary_class().unwrap_or("-"),
                l.machine.as_deref().unwrap_or("-"),
                archs(&l.sass, "sm_"),
                archs(&l.ptx, "compute_"),
                escape(&cell(&l.dlopen_deps)),
                code(&l.path.shown())
            );
        }
        let problems: Vec<&Problem> = installation.all_problems().collect();
        write_problems(out, &problems);
        out.push('\n');
    }
    if !problems.is_empty() {
        let _ = writeln!(out, "## Problems outside installations\n");
        write_problems(out, &problems.iter().collect::<Vec<_>>());
    }
}

/// A library's version, with the CUDA it was built for where it says (`2.27.5 (built for CUDA
/// 12.9)`).
fn version_cell(library: &Library) -> String {
    let version = library.version.as_deref().unwrap_or("-");
    match &library.built_for {
        Some(built) => format!("{version} (built for CUDA {})", built.cuda),
        None => version.to_owned(),
    }
}

fn write_problems(out: &mut String, problems: &[&Problem]) {
    if problems.is_empty() {
        return;
    }
    out.push('\n');
    for p in problems {
        let _ = writeln!(
            out,
            "- **{}** {}: {}",
            p.kind.code(),
            code(&p.path.shown()),
            escape(&p.message)
        );
    }
}

/// The check matrix as a table: a column per combination, a row per check under a bold row
/// per library.
fn check_matrix(out: &mut String, report: &CheckReport) {
    out.push_str("| check |");
    for c in &report.combinations {
        let _ = write!(out, " {} |", code(&c.name));
    }
    out.push_str("\n|---|");
    out.push_str(&"---|".repeat(report.combinations.len()));
    out.push('\n');
    let empty = " |".repeat(report.combinations.len());
    for (library, ids) in report.check_groups() {
        let _ = writeln!(out, "| **{}** |{empty}", escape(library));
        for id in ids {
            let _ = write!(out, "| `{id}` |");
            for c in &report.combinations {
                let status = c.check(id).map_or("-", |r| match r.status {
                    Status::Pass => "pass",
                    Status::Fail => "**FAIL**",
                    Status::Warn => "warn",
                    Status::Skip => "skip",
                });
                let _ = write!(out, " {status} |");
            }
            out.push('\n');
        }
    }
    out.push('\n');
}

/// The failures and warnings (then the notable skips), each once with the combinations it
/// concerns.
fn check_notices(out: &mut String, report: &CheckReport) {
    let notices = notices(report);
    let total = report.combinations.len();
    for (title, statuses) in [
        ("Failures and warnings", &[Status::Fail, Status::Warn][..]),
        ("Skipped", &[Status::Skip][..]),
    ] {
        let listed: Vec<_> = notices
            .iter()
            .filter(|n| statuses.contains(&n.status))
            .collect();
        if listed.is_empty() {
            continue;
        }
        let _ = writeln!(out, "## {title}\n");
        for notice in listed {
            let label = match notice.status {
                Status::Fail => "**FAIL**",
                Status::Warn => "warn",
                _ => "skip",
            };
            let _ = writeln!(
                out,
                "- {label} `{}` in {}: {}",
                notice.id,
                notice.scope(total, code),
                escape(notice.reason)
            );
        }
        out.push('\n');
    }
}

/// A combination's libraries: component, version, the file used, and whether it came from the
/// combination's own directories.
fn check_libraries(out: &mut String, report: &CheckReport, c: &CombinationReport) {
    let mut facts = vec![match &c.cuda_version {
        Some(v) => format!("CUDA {v}"),
        None => "CUDA version unknown".to_string(),
    }];
    facts.push(match (&c.driver, driver_version(report, c)) {
        (None, _) => "no `libcuda.so.1`".to_string(),
        (Some(_), Some(v)) => format!("driver {v}"),
        (Some(d), None) => format!("driver {}", code(&d.path.shown())),
    });
    if c.simulated {
        facts.push(format!("**{}**", super::SIMULATED_GPU));
    }
    facts.push(format!("{:.1} s", c.duration_ms / 1e3));
    let _ = writeln!(out, "### {}: {}\n", code(&c.name), facts.join(", "));
    if c.libraries.is_empty() {
        out.push_str("No CUDA library.\n\n");
        return;
    }
    out.push_str("| component | version | path | inside |\n|---|---|---|---|\n");
    for l in &c.libraries {
        let path = library_path(l).map_or("-".to_string(), |p| code(&p.shown()));
        let _ = writeln!(
            out,
            "| {} | {} | {path} | {} |",
            escape(&l.component),
            escape(l.version.as_deref().unwrap_or("-")),
            if l.inside {
                "yes"
            } else {
                "**no**: mapped from outside the combination"
            }
        );
    }
    out.push('\n');
}

/// Text from the host (a GPU's name, a message quoting a path) as Markdown text: it can neither
/// break the table or line it sits in (`|`, line breaks, a backslash that would escape the
/// next character) nor open HTML (`<`).
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '|' => out.push_str("\\|"),
            '<' => out.push_str("&lt;"),
            '\\' if chars.peek().is_some_and(char::is_ascii_punctuation) => out.push_str("\\\\"),
            '\n' | '\r' => out.push(' '),
            _ => out.push(c),
        }
    }
    out
}

/// A name or path from the host as an inline code span, fenced by more backticks than it holds
/// so none can end it early, with `|` escaped (GitHub tables split on it even in code) and line
/// breaks as spaces.
fn code(text: &str) -> String {
    let text = text.replace('|', "\\|").replace(['\n', '\r'], " ");
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let pad = if text.starts_with('`') || text.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{text}{pad}{fence}")
}

/// The history of runs without the charts: per benchmark a table of each run's median and
/// interquartile range per combination, the check matrices, and the runs.
pub fn history(history: &crate::history::History) -> String {
    let mut out = format!(
        "# stackbench report\n\n{}\n\n",
        escape(&super::history_headline(history))
    );
    for file in &history.passed_over {
        let _ = writeln!(out, "- passed over: {}", escape(&file.reason));
    }
    history_charts(&mut out, history);
    history_matrices(&mut out, history);
    history_runs(&mut out, history);
    out
}

/// Per benchmark, each run's median and interquartile range per series, and the versions.
fn history_charts(out: &mut String, history: &crate::history::History) {
    use super::{version_mark, version_sets};
    out.push_str("\n## Benchmarks\n\n");
    if history.charts.is_empty() {
        out.push_str("No bench run measured anything.\n\n");
    } else {
        out.push_str(
            "Each run's median (interquartile range); v1, v2, ... mark where the versions \
             behind a figure changed.\n\n",
        );
    }
    for chart in &history.charts {
        let _ = write!(out, "### `{}`\n\n| run |", chart.benchmark);
        for series in &chart.series {
            let _ = write!(out, " {} |", code(&series.label));
        }
        out.push_str("\n|---|");
        out.push_str(&"---|".repeat(chart.series.len()));
        out.push('\n');
        let mut runs: Vec<usize> = chart
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.run))
            .collect();
        runs.sort_unstable();
        runs.dedup();
        let sets = version_sets(chart);
        for run in runs {
            let _ = write!(out, "| {} |", history.runs[run].when);
            for series in &chart.series {
                let cell = series.points.iter().find(|p| p.run == run).map_or_else(
                    || "-".to_owned(),
                    |p| {
                        let mut cell = format!(
                            "{} ({} to {})",
                            bench::duration(p.median_ns),
                            bench::duration(p.q1_ns),
                            bench::duration(p.q3_ns)
                        );
                        if let (Some((low, high)), Some(n)) = (p.spread_ns, p.repetitions) {
                            let _ = write!(
                                cell,
                                ", {n} repetitions {} to {}",
                                bench::duration(low),
                                bench::duration(high)
                            );
                        }
                        if p.versions_changed {
                            let _ = write!(cell, " {}", version_mark(&sets, &p.versions));
                        }
                        if p.simulated {
                            cell.push_str(" *simulated*");
                        }
                        cell
                    },
                );
                let _ = write!(out, " {cell} |");
            }
            out.push('\n');
        }
        out.push('\n');
        for versions in &sets {
            let _ = writeln!(
                out,
                "- {}: {}",
                version_mark(&sets, versions),
                escape(versions)
            );
        }
        out.push('\n');
    }
}

/// Each check run's matrix, newest first.
fn history_matrices(out: &mut String, history: &crate::history::History) {
    out.push_str("## Checks\n\n");
    if history.matrices.is_empty() {
        out.push_str("No check run.\n\n");
    }
    for matrix in history.matrices.iter().rev() {
        let run = &history.runs[matrix.run];
        let _ = write!(
            out,
            "### {} on {}{}\n\n| library | check |",
            run.when,
            escape(&run.hostname),
            super::matrix_mark(matrix)
        );
        for combination in &matrix.combinations {
            let _ = write!(out, " {} |", code(combination));
        }
        out.push_str("\n|---|---|");
        out.push_str(&"---|".repeat(matrix.combinations.len()));
        out.push('\n');
        for row in &matrix.rows {
            let _ = write!(out, "| {} | `{}` |", escape(&row.library), row.check);
            for cell in &row.cells {
                let status = cell.as_ref().map_or("-", |c| match c.status {
                    Status::Fail => "**FAIL**",
                    status => status.name(),
                });
                let _ = write!(out, " {status} |");
            }
            out.push('\n');
        }
        out.push('\n');
    }
}

/// Every run, newest first.
fn history_runs(out: &mut String, history: &crate::history::History) {
    use super::{history_counts, run_gpus};
    out.push_str(
        "## Runs\n\n| when | command | host | GPU | driver | stackbench | outcome | file |\n\
         |---|---|---|---|---|---|---|---|\n",
    );
    for run in history.runs.iter().rev() {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            run.when,
            run.kind,
            escape(&run.hostname),
            escape(&run_gpus(run)),
            escape(run.driver.as_deref().unwrap_or("-")),
            escape(&run.stackbench_version),
            history_counts(run),
            code(&run.path.shown())
        );
    }
}

/// Can this host build CUDA code: one row per toolkit a build might take.
fn building(out: &mut String, report: &DoctorReport) {
    let build = &report.build;
    if build.toolkits.is_empty() {
        return;
    }
    let compiler = build.host_compiler_line();
    let _ = writeln!(
        out,
        "## Building CUDA code\n\nHost compiler: {}.\n\n| toolkit | named by | can compile, links -lcuda |\n|---|---|---|",
        escape(&compiler)
    );
    for toolkit in &build.toolkits {
        let _ = writeln!(
            out,
            "| {} | {} | {} |",
            code(&toolkit.root.shown()),
            escape(&toolkit.named_by.join(", ")),
            escape(&build.summary(toolkit))
        );
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_text_cannot_break_a_table_or_become_html() {
        assert_eq!(
            escape("GPU | <img src=x onerror=alert(1)>\nnext"),
            "GPU \\| &lt;img src=x onerror=alert(1)> next"
        );
        // A backslash that would escape the next character is itself escaped.
        assert_eq!(escape(r"a\|b"), r"a\\\|b");
        assert_eq!(escape(r"C:\Windows"), r"C:\Windows");
    }

    #[test]
    fn a_code_span_holds_whatever_the_host_named() {
        assert_eq!(code("/opt/cuda"), "`/opt/cuda`");
        assert_eq!(code("/tmp/a`b|c\nd"), "``/tmp/a`b\\|c d``");
        assert_eq!(code("`x"), "`` `x ``");
    }

    #[test]
    fn a_hostname_with_markup_stays_text_in_the_doctor_report() {
        let mut report: DoctorReport = serde_json::from_value(serde_json::json!({
            "schema": "stackbench.doctor/v1",
            "host": {"hostname": "node|1`<b>", "os": "linux", "arch": "x86_64", "stackbench_version": "0"},
            "gpu": {"source": "none", "devices": [], "driver_version": null, "note": "x"},
            "loaded": true, "findings": [], "probes": [], "searched": [],
            "installations": [], "problems": []
        }))
        .unwrap();
        let text = String::from_utf8(Markdown.doctor(&report).unwrap()).unwrap();
        assert!(text.contains("on ``node\\|1`<b>``"), "{text}");
        assert!(!text.starts_with("**warning"), "{text}");
        report.load_untrusted = true;
        let text = String::from_utf8(Markdown.doctor(&report).unwrap()).unwrap();
        assert!(text.starts_with("**warning: --load-untrusted"), "{text}");
    }
}
