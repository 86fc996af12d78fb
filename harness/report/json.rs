//! The canonical form: the report's own structure, schema-tagged, pretty-printed.

use super::Exporter;
use crate::error::OutputError;
use crate::model::ScanReport;

pub struct Json;

impl Exporter for Json {
    fn scan(&self, report: &ScanReport) -> Result<Vec<u8>, OutputError> {
        let mut bytes = serde_json::to_vec_pretty(report).map_err(|e| OutputError::Encode {
            format: "json",
            reason: e.to_string(),
        })?;
        bytes.push(b'\n');
        Ok(bytes)
    }
}
