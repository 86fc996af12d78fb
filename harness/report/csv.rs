//! CSV: one row per library, with its installation's columns repeated, for spreadsheets and diffs.

use super::Exporter;
use crate::error::OutputError;
use crate::model::{Installation, Library, ScanReport};

pub struct Csv;

const HEADER: &[&str] = &[
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

impl Exporter for Csv {
    fn scan(&self, report: &ScanReport) -> Result<Vec<u8>, OutputError> {
        let encode = |e: csv::Error| OutputError::Encode {
            format: "csv",
            reason: e.to_string(),
        };
        let mut writer = csv::Writer::from_writer(Vec::new());
        writer.write_record(HEADER).map_err(encode)?;
        for installation in &report.installations {
            for library in &installation.libraries {
                writer
                    .write_record(row(installation, library))
                    .map_err(encode)?;
            }
        }
        writer.into_inner().map_err(|e| OutputError::Encode {
            format: "csv",
            reason: e.to_string(),
        })
    }
}

fn row(installation: &Installation, library: &Library) -> Vec<String> {
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
