//! Markdown: a section per installation with a table of its libraries, findings first for the
//! doctor; for CI summaries and issues.

use super::{archs, cell, gpu_line, severity_counts, Exporter};
use crate::doctor::DoctorReport;
use crate::error::OutputError;
use crate::model::{HostInfo, Installation, Problem, ScanReport};
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
        let [errors, warnings, info] = severity_counts(report);
        let mut out = String::from("# stackbench doctor\n\n");
        let _ = writeln!(
            out,
            "**{errors} errors, {warnings} warnings, {info} notes.** GPU: {}.\n",
            escape(&gpu_line(report))
        );
        summary(&mut out, &report.host, &report.installations);
        if !report.loaded {
            out.push_str("Static analysis only (`--no-load`): no library was loaded.\n\n");
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
        Ok(out.into_bytes())
    }
}

fn summary(out: &mut String, host: &HostInfo, installations: &[Installation]) {
    let libraries: usize = installations.iter().map(|i| i.libraries.len()).sum();
    let _ = writeln!(
        out,
        "{} installations, {} libraries on `{}` ({} {}), stackbench {}.\n",
        installations.len(),
        libraries,
        host.hostname,
        host.os,
        host.arch,
        host.stackbench_version
    );
}

fn installations(out: &mut String, installations: &[Installation], problems: &[Problem]) {
    for installation in installations {
        let mut title = format!(
            "## {} `{}`",
            installation.layout.name(),
            installation.root.display()
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
                "| {} | {} | {} | {} | {} | {} | {} | {} | `{}` |",
                escape(&l.name),
                escape(l.version.as_deref().unwrap_or("-")),
                escape(l.soname.as_deref().unwrap_or("-")),
                l.elf_class.as_deref().unwrap_or("-"),
                l.machine.as_deref().unwrap_or("-"),
                archs(&l.sass, "sm_"),
                archs(&l.ptx, "compute_"),
                escape(&cell(&l.dlopen_deps)),
                l.path.display()
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

fn write_problems(out: &mut String, problems: &[&Problem]) {
    if problems.is_empty() {
        return;
    }
    out.push('\n');
    for p in problems {
        let _ = writeln!(
            out,
            "- **{}** `{}`: {}",
            p.kind.code(),
            p.path.display(),
            escape(&p.message)
        );
    }
}

/// Keeps a value from breaking the table it sits in.
fn escape(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}
