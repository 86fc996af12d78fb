//! `stackbench ingest PATH...`: the doctor, check and bench runs among the files given (a directory
//! stands for the JSON files directly in it) appended to the store, each run once: a run the
//! store already holds (by run id) is left as it is, so ingesting a directory again each night
//! adds only the new runs.

use super::{rows, Store, StoreError};
use crate::compare::load::{self, Run};
use crate::tags::INGEST_SCHEMA;
use serde::Serialize;
use std::path::PathBuf;

/// What an ingest did.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct IngestReport {
    pub schema: String,
    /// The store's directory.
    #[serde(with = "crate::pathname")]
    pub store: PathBuf,
    /// Runs appended.
    pub added: usize,
    /// Runs the store already held (or that a file named twice held), left as they were.
    pub already_stored: usize,
    /// Rows appended.
    pub rows: usize,
    /// The Parquet files written, one per day the added runs started on.
    #[serde(with = "crate::pathname::list")]
    pub files: Vec<PathBuf>,
    /// Files that are not doctor, check or bench runs placed in time, with the reason.
    pub passed_over: Vec<PassedOver>,
}

/// A file ingest did not take.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PassedOver {
    #[serde(with = "crate::pathname")]
    pub path: PathBuf,
    pub reason: String,
}

/// Appends the runs in `files` to `store`.
pub fn ingest(store: &Store, files: &[PathBuf]) -> Result<IngestReport, StoreError> {
    let mut runs = Vec::new();
    let mut passed_over = Vec::new();
    for path in files {
        let why = match load::read(path) {
            Ok(Run::Scan(_)) => {
                "a scan run: the store holds doctor, check and bench runs".to_owned()
            }
            Ok(run) => match started(&run) {
                Some(at) if crate::timestamp::parse_rfc3339_us(at).is_some() => {
                    runs.push(run);
                    continue;
                }
                Some(at) => format!(
                    "its start time {at:?} is not an RFC 3339 instant: the store places each run \
                     in time"
                ),
                None => "a doctor run without a start time (written before stackbench kept one): \
                         the store places each run in time"
                    .to_owned(),
            },
            Err(e) => e.to_string(),
        };
        passed_over.push(PassedOver {
            path: path.clone(),
            reason: why,
        });
    }
    let added = add(store, &runs)?;
    Ok(IngestReport {
        schema: INGEST_SCHEMA.to_owned(),
        store: store.dir().to_path_buf(),
        added: added.runs,
        already_stored: runs.len() - added.runs,
        rows: added.written.rows,
        files: added.written.files,
        passed_over,
    })
}

/// When a doctor, check or bench run started, as its file says.
fn started(run: &Run) -> Option<&str> {
    match run {
        Run::Bench(report) => Some(&report.started),
        Run::Check(report) => Some(&report.started),
        Run::Doctor(report) => report.started.as_deref(),
        Run::Scan(_) => None,
    }
}

/// What [`add`] appended.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Added {
    pub runs: usize,
    pub written: super::Written,
}

/// Appends `runs` (doctor, check and bench runs; a scan has no rows) that the store does not
/// hold yet, under the store's lock. A run without rows (its start time unreadable) is not
/// added.
pub fn add(store: &Store, runs: &[Run]) -> Result<Added, StoreError> {
    let _lock = store.lock()?;
    let mut held = store.run_ids()?;
    let mut rows = Vec::new();
    let mut added = 0;
    for run in runs {
        let of_run = rows::of_run(run);
        let Some(first) = of_run.first() else {
            continue;
        };
        if held.insert(first.run_id.clone()) {
            added += 1;
            rows.extend(of_run);
        }
    }
    let written = store.append(&rows)?;
    Ok(Added {
        runs: added,
        written,
    })
}
