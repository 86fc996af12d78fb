//! The canonical form: the report's own structure, schema-tagged, pretty-printed.

use super::Exporter;
use crate::bench::model::BenchReport;
use crate::compare::model::CompareReport;
use crate::doctor::DoctorReport;
use crate::error::OutputError;
use crate::merge::MergeReport;
use crate::model::ScanReport;
use crate::schema::check::CheckReport;
use serde::Serialize;

pub struct Json;

pub(super) fn to_json(value: &impl Serialize) -> Result<Vec<u8>, OutputError> {
    let mut bytes = serde_json::to_vec_pretty(value).map_err(|e| OutputError::Encode {
        format: "json",
        reason: e.to_string(),
    })?;
    bytes.push(b'\n');
    Ok(bytes)
}

impl Exporter for Json {
    fn scan(&self, report: &ScanReport) -> Result<Vec<u8>, OutputError> {
        to_json(report)
    }

    fn doctor(&self, report: &DoctorReport) -> Result<Vec<u8>, OutputError> {
        to_json(report)
    }

    fn check(&self, report: &CheckReport) -> Result<Vec<u8>, OutputError> {
        to_json(report)
    }

    fn bench(&self, report: &BenchReport) -> Result<Vec<u8>, OutputError> {
        to_json(report)
    }

    fn compare(&self, report: &CompareReport) -> Result<Vec<u8>, OutputError> {
        to_json(report)
    }

    fn merge(&self, report: &MergeReport) -> Result<Vec<u8>, OutputError> {
        to_json(report)
    }
}
