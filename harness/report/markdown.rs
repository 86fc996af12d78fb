//! Markdown: a section per installation with a table of its libraries, for CI summaries and issues.

use super::{archs, cell, Exporter};
use crate::error::OutputError;
use crate::model::{Problem, ScanReport};
use std::fmt::Write;

pub struct Markdown;

impl Exporter for Markdown {
    fn scan(&self, report: &ScanReport) -> Result<Vec<u8>, OutputError> {
        let mut out = String::new();
        let libraries: usize = report.installations.iter().map(|i| i.libraries.len()).sum();
        let _ = writeln!(out, "# stackbench scan\n");
        let _ = writeln!(
            out,
            "{} installations, {} libraries on `{}` ({} {}), stackbench {}.\n",
            report.installations.len(),
            libraries,
            report.host.hostname,
            report.host.os,
            report.host.arch,
            report.host.stackbench_version
        );
        for installation in &report.installations {
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
            let problems: Vec<&Problem> = installation
                .problems
                .iter()
                .chain(installation.libraries.iter().flat_map(|l| &l.problems))
                .collect();
            write_problems(&mut out, &problems);
            out.push('\n');
        }
        if !report.problems.is_empty() {
            let _ = writeln!(out, "## Problems outside installations\n");
            write_problems(&mut out, &report.problems.iter().collect::<Vec<_>>());
        }
        Ok(out.into_bytes())
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
    text.replace('|', "\\|")
}
