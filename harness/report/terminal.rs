//! The report for people: installations as headed, aligned tables, problems last, in colour
//! when asked for.

use super::{archs, Exporter};
use crate::error::OutputError;
use crate::model::{Problem, ScanReport};
use std::fmt::Write;

pub struct Terminal {
    pub color: bool,
}

const BOLD: &str = "1";
const DIM: &str = "2";
const RED: &str = "31";
const YELLOW: &str = "33";
const CYAN: &str = "36";

impl Terminal {
    fn paint(&self, code: &str, text: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }

    fn problems(&self, out: &mut String, indent: &str, problems: &[&Problem]) {
        for p in problems {
            let code = self.paint(YELLOW, p.kind.code());
            let _ = writeln!(out, "{indent}! {code} {}: {}", p.path.display(), p.message);
        }
    }
}

impl Exporter for Terminal {
    fn scan(&self, report: &ScanReport) -> Result<Vec<u8>, OutputError> {
        let mut out = String::new();
        let libraries: usize = report.installations.iter().map(|i| i.libraries.len()).sum();
        let problems = report.all_problems().count();
        let summary = format!(
            "{} installations, {} libraries, {} problems",
            report.installations.len(),
            libraries,
            problems
        );
        let _ = writeln!(
            out,
            "{} {}\n",
            self.paint(BOLD, "stackbench scan:"),
            summary
        );
        for installation in &report.installations {
            let mut versions = Vec::new();
            if let Some(v) = &installation.cuda_version {
                versions.push(format!("CUDA {v}"));
            }
            if let Some(v) = &installation.driver_version {
                versions.push(format!("driver {v}"));
            }
            let sources: Vec<&str> = installation.sources.iter().map(|s| s.describe()).collect();
            let _ = writeln!(
                out,
                "{} {}  {}  {}",
                self.paint(CYAN, &format!("{:<9}", installation.layout.name())),
                self.paint(BOLD, &installation.root.display().to_string()),
                versions.join(", "),
                self.paint(DIM, &format!("(found via {})", sources.join(", ")))
            );
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
                            l.elf_class.as_deref().unwrap_or("?"),
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
            let header =
                ["library", "version", "soname", "elf", "gpu code", "file"].map(String::from);
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
                    let _ = writeln!(
                        out,
                        "{}",
                        self.paint(
                            DIM,
                            &format!("      opens at run time: {}", library.dlopen_deps.join(" "))
                        )
                    );
                }
            }
            let problems: Vec<&Problem> = installation
                .problems
                .iter()
                .chain(installation.libraries.iter().flat_map(|l| &l.problems))
                .collect();
            self.problems(&mut out, "  ", &problems);
            out.push('\n');
        }
        if !report.problems.is_empty() {
            let _ = writeln!(out, "{}", self.paint(RED, "problems outside installations"));
            self.problems(&mut out, "  ", &report.problems.iter().collect::<Vec<_>>());
        }
        Ok(out.into_bytes())
    }
}
