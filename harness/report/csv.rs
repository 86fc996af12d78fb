//! CSV: the scan as one row per library (its installation's columns repeated), the doctor as one
//! row per finding, the check as one row per check of each combination; for spreadsheets and
//! diffs.

use super::{driver_version, Exporter};
use crate::check::model::CheckReport;
use crate::doctor::DoctorReport;
use crate::error::OutputError;
use crate::model::{Installation, Library, ScanReport};

pub struct Csv;

const SCAN_HEADER: &[&str] = &[
    "root",
    "layout",
    "cuda_version",
    "driver_version",
    "name",
    "version",
    "soname",
    "path",
    "real_path",
    "elf_class",
    "machine",
    "needed",
    "runpath",
    "dlopen_deps",
    "sass",
    "ptx",
    "problems",
];

const DOCTOR_HEADER: &[&str] = &[
    "severity",
    "cause",
    "library",
    "path",
    "installation",
    "missing",
    "needed_by",
    "candidates",
    "message",
    "fix",
    "evidence",
];

const CHECK_HEADER: &[&str] = &[
    "combination",
    "cuda_version",
    "driver_version",
    "gpu",
    "check",
    "library",
    "status",
    "reason",
    "duration_ms",
];

fn encode(e: impl std::fmt::Display) -> OutputError {
    OutputError::Encode {
        format: "csv",
        reason: e.to_string(),
    }
}

fn table(header: &[&str], rows: impl Iterator<Item = Vec<String>>) -> Result<Vec<u8>, OutputError> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    writer.write_record(header).map_err(encode)?;
    for row in rows {
        writer.write_record(row).map_err(encode)?;
    }
    writer.into_inner().map_err(encode)
}

impl Exporter for Csv {
    fn scan(&self, report: &ScanReport) -> Result<Vec<u8>, OutputError> {
        let rows = report
            .installations
            .iter()
            .flat_map(|i| i.libraries.iter().map(move |l| library_row(i, l)));
        table(SCAN_HEADER, rows)
    }

    fn doctor(&self, report: &DoctorReport) -> Result<Vec<u8>, OutputError> {
        let path = |p: &Option<std::path::PathBuf>| {
            p.as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        };
        let rows = report.findings.iter().map(|f| {
            vec![
                f.severity.name().to_string(),
                f.cause.code(),
                f.library.clone().unwrap_or_default(),
                path(&f.path),
                path(&f.installation),
                f.missing.clone().unwrap_or_default(),
                f.needed_by.clone().unwrap_or_default(),
                f.candidates
                    .iter()
                    .map(|c| c.display().to_string())
                    .collect::<Vec<_>>()
                    .join(" "),
                f.message.clone(),
                f.fix.clone(),
                f.evidence.join("; "),
            ]
        });
        table(DOCTOR_HEADER, rows)
    }

    fn check(&self, report: &CheckReport) -> Result<Vec<u8>, OutputError> {
        let gpu = report
            .gpu
            .devices
            .first()
            .map(|d| d.name.clone())
            .unwrap_or_default();
        let rows = report.combinations.iter().flat_map(|c| {
            let cuda = c.cuda_version.clone().unwrap_or_default();
            let driver = driver_version(report, c).unwrap_or_default().to_string();
            let gpu = gpu.clone();
            c.checks.iter().map(move |check| {
                vec![
                    c.name.clone(),
                    cuda.clone(),
                    driver.clone(),
                    gpu.clone(),
                    check.id.clone(),
                    check.library.clone(),
                    check.status.name().to_string(),
                    check.reason.clone(),
                    format!("{:.3}", check.duration_ms),
                ]
            })
        });
        table(CHECK_HEADER, rows)
    }
}

fn library_row(installation: &Installation, library: &Library) -> Vec<String> {
    let text = |v: &Option<String>| v.clone().unwrap_or_default();
    let problems: Vec<String> = library.problems.iter().map(|p| p.message.clone()).collect();
    vec![
        installation.root.display().to_string(),
        installation.layout.name().to_string(),
        text(&installation.cuda_version),
        text(&installation.driver_version),
        library.name.clone(),
        text(&library.version),
        text(&library.soname),
        library.path.display().to_string(),
        library.real_path.display().to_string(),
        text(&library.elf_class),
        text(&library.machine),
        library.needed.join(" "),
        library.runpath.join(":"),
        library.dlopen_deps.join(" "),
        library.sass.join(" "),
        library.ptx.join(" "),
        problems.join("; "),
    ]
}
