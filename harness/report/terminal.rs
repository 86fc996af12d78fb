//! The report for people: findings first (errors, then warnings), then installations as headed,
//! aligned tables, problems last; in colour when asked for.

use super::{archs, gpu_line, severity_counts, Exporter};
use crate::diagnose::finding::{Finding, Severity};
use crate::doctor::DoctorReport;
use crate::error::OutputError;
use crate::model::{Installation, Problem, ScanReport};
use std::fmt::Write;

pub struct Terminal {
    pub color: bool,
}

const BOLD: &str = "1";
const DIM: &str = "2";
const RED: &str = "31";
const YELLOW: &str = "33";
const BLUE: &str = "34";
const CYAN: &str = "36";
const GREEN: &str = "32";

/// Evidence lines shown per finding; JSON has them all.
const EVIDENCE_LINES: usize = 6;

impl Exporter for Terminal {
    fn scan(&self, report: &ScanReport) -> Result<Vec<u8>, OutputError> {
        let mut out = String::new();
        let libraries: usize = report.installations.iter().map(|i| i.libraries.len()).sum();
        let problems = report.all_problems().count();
        let summary = format!(
            "{} installations, {libraries} libraries, {problems} problems",
            report.installations.len()
        );
        let _ = writeln!(out, "{} {summary}\n", self.paint(BOLD, "stackbench scan:"));
        self.installations(&mut out, &report.installations, &report.problems);
        Ok(out.into_bytes())
    }

    fn doctor(&self, report: &DoctorReport) -> Result<Vec<u8>, OutputError> {
        let mut out = String::new();
        let [errors, warnings, info] = severity_counts(report);
        let libraries: usize = report.installations.iter().map(|i| i.libraries.len()).sum();
        let verdict = if errors > 0 {
            self.paint(RED, &format!("{errors} errors"))
        } else {
            self.paint(GREEN, "no errors")
        };
        let _ = writeln!(
            out,
            "{} {verdict}, {warnings} warnings, {info} notes ({} installations, {libraries} libraries{})",
            self.paint(BOLD, "stackbench doctor:"),
            report.installations.len(),
            if report.loaded { "" } else { "; static analysis only, nothing loaded" }
        );
        let _ = writeln!(out, "GPU: {}\n", gpu_line(report));
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
            let _ = writeln!(out, "{}", self.paint(&format!("{BOLD};{colour}"), title));
            for finding in findings {
                self.finding(&mut out, finding, colour);
            }
            out.push('\n');
        }
        let _ = writeln!(out, "{}", self.paint(BOLD, "installations"));
        self.installations(&mut out, &report.installations, &report.problems);
        Ok(out.into_bytes())
    }
}

impl Terminal {
    fn paint(&self, code: &str, text: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }

    fn finding(&self, out: &mut String, f: &Finding, colour: &str) {
        let _ = writeln!(
            out,
            "  {} {}",
            self.paint(colour, &f.cause.code()),
            f.message
        );
        if let Some(root) = &f.installation {
            let _ = writeln!(
                out,
                "      {} {}",
                self.paint(DIM, "installation:"),
                root.display()
            );
        }
        if let Some(path) = &f.path {
            let _ = writeln!(out, "      {} {}", self.paint(DIM, "path:"), path.display());
        }
        for candidate in &f.candidates {
            let _ = writeln!(
                out,
                "      {} {}",
                self.paint(DIM, "copy at:"),
                candidate.display()
            );
        }
        for line in f.evidence.iter().take(EVIDENCE_LINES) {
            let _ = writeln!(out, "      {} {line}", self.paint(DIM, "seen:"));
        }
        if f.evidence.len() > EVIDENCE_LINES {
            let more = f.evidence.len() - EVIDENCE_LINES;
            let _ = writeln!(
                out,
                "      {}",
                self.paint(DIM, &format!("(+{more} more; --format json has all)"))
            );
        }
        let _ = writeln!(out, "      {} {}", self.paint(GREEN, "fix:"), f.fix);
    }

    fn problems(&self, out: &mut String, problems: &[&Problem]) {
        for p in problems {
            let code = self.paint(YELLOW, p.kind.code());
            let _ = writeln!(out, "  ! {code} {}: {}", p.path.display(), p.message);
        }
    }

    fn installations(
        &self,
        out: &mut String,
        installations: &[Installation],
        problems: &[Problem],
    ) {
        if installations.is_empty() {
            let _ = writeln!(
                out,
                "  no CUDA installation found; give --root DIR to search elsewhere\n"
            );
        }
        for installation in installations {
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
                "{} {}  {}{}",
                self.paint(CYAN, &format!("{:<9}", installation.layout.name())),
                self.paint(BOLD, &installation.root.display().to_string()),
                versions
                    .iter()
                    .map(|v| format!("{v}  "))
                    .collect::<String>(),
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
                    let opens =
                        format!("      opens at run time: {}", library.dlopen_deps.join(" "));
                    let _ = writeln!(out, "{}", self.paint(DIM, &opens));
                }
            }
            let problems: Vec<&Problem> = installation.all_problems().collect();
            self.problems(out, &problems);
            out.push('\n');
        }
        if !problems.is_empty() {
            let _ = writeln!(out, "{}", self.paint(RED, "problems outside installations"));
            self.problems(out, &problems.iter().collect::<Vec<_>>());
        }
    }
}
