//! Reading the two runs to compare: any stackbench result file, recognised by its schema tag,
//! with a clear error for a file that is missing, empty, truncated, from another tool or of
//! another schema version.

use crate::bench::model::BenchReport;
use crate::doctor::DoctorReport;
use crate::gpu::GpuInfo;
use crate::model::{HostInfo, ScanReport};
use crate::schema::check::CheckReport;
use crate::tags::BENCH_SCHEMA;
use crate::tags::CHECK_SCHEMA;
use crate::tags::DOCTOR_SCHEMA;
use crate::tags::SCAN_SCHEMA;
use serde::de::DeserializeOwned;
use std::path::{Path, PathBuf};

/// The commands whose results compare reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Kind {
    Bench,
    Check,
    Doctor,
    Scan,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Bench => "bench",
            Kind::Check => "check",
            Kind::Doctor => "doctor",
            Kind::Scan => "scan",
        }
    }
}

/// The two newest runs of `kind` among the JSON files directly in `dir`, older first, newest
/// by their start time (bench, check) or else by the file's modification time. Files that are
/// not readable results of that kind are passed over.
pub fn latest(dir: &Path, kind: Kind) -> Result<(PathBuf, PathBuf), LatestError> {
    let entries = crate::hostfs::read_dir(dir).map_err(|source| LatestError::Dir {
        dir: dir.to_path_buf(),
        source,
    })?;
    let mut runs: Vec<(String, PathBuf)> = Vec::new();
    for path in entries.filter_map(Result::ok).map(|e| e.path()) {
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let Ok(run) = read(&path) else { continue };
        if run.kind() != kind.name() {
            continue;
        }
        runs.push((when(&run, &path), path));
    }
    runs.sort();
    match runs.as_slice() {
        [.., (_, old), (_, new)] => Ok((old.clone(), new.clone())),
        _ => Err(LatestError::TooFew {
            dir: dir.to_path_buf(),
            kind: kind.name(),
            found: runs.len(),
        }),
    }
}

/// When `run` started, or else when its file was last written: RFC 3339, so that it sorts.
pub fn when(run: &Run, path: &Path) -> String {
    run.started().map_or_else(
        || {
            let modified = std::fs::metadata(path).and_then(|m| m.modified()).ok();
            let seconds = modified
                .and_then(|m| m.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_secs());
            crate::timestamp::rfc3339(seconds)
        },
        str::to_owned,
    )
}

/// Why `--latest` found nothing to compare (exit status 2).
#[derive(Debug, thiserror::Error)]
pub enum LatestError {
    #[error("--latest: cannot read {}: {source}; give --results DIR where the runs are", dir.display())]
    Dir {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("--latest {kind}: {} holds {found} readable {kind} run(s); two are needed (run `stackbench {kind}` again, or give --results DIR)", dir.display())]
    TooFew {
        dir: PathBuf,
        kind: &'static str,
        found: usize,
    },
}

/// One run, by kind.
#[derive(Debug, Clone)]
pub enum Run {
    Bench(BenchReport),
    Check(CheckReport),
    Doctor(Box<DoctorReport>),
    Scan(ScanReport),
}

impl Run {
    /// `bench`, `check`, `doctor`, `scan`.
    pub fn kind(&self) -> &'static str {
        match self {
            Run::Bench(_) => "bench",
            Run::Check(_) => "check",
            Run::Doctor(_) => "doctor",
            Run::Scan(_) => "scan",
        }
    }

    /// The host the run was made on.
    pub fn host(&self) -> &HostInfo {
        match self {
            Run::Bench(r) => &r.host,
            Run::Check(r) => &r.host,
            Run::Doctor(r) => &r.host,
            Run::Scan(r) => &r.host,
        }
    }

    /// The GPUs the run saw; a scan records none.
    pub fn gpu(&self) -> Option<&GpuInfo> {
        match self {
            Run::Bench(r) => Some(&r.gpu),
            Run::Check(r) => Some(&r.gpu),
            Run::Doctor(r) => Some(&r.gpu),
            Run::Scan(_) => None,
        }
    }

    /// Whether it ran on stackbench's simulated driver (bench and check record it).
    pub fn simulated(&self) -> bool {
        match self {
            Run::Bench(r) => r.simulated,
            Run::Check(r) => r.simulated,
            Run::Doctor(_) | Run::Scan(_) => false,
        }
    }

    /// When the run started (bench and check record it).
    pub fn started(&self) -> Option<&str> {
        match self {
            Run::Bench(r) => Some(&r.started),
            Run::Check(r) => Some(&r.started),
            Run::Doctor(_) | Run::Scan(_) => None,
        }
    }
}

/// Why a file cannot be compared (exit status 2).
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{}: cannot read it: {source}; give a result file stackbench wrote (results/*.json)", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: the file is empty; was the run that writes it cut off? Run it again", path.display())]
    Empty { path: PathBuf },
    #[error("{}: not JSON ({reason}); a truncated file or another tool's output: give the .json file stackbench wrote", path.display())]
    NotJson { path: PathBuf, reason: String },
    #[error("{}: no \"schema\" tag: not a stackbench result (another tool's JSON?); give a file written by stackbench bench, check, doctor or scan --format json", path.display())]
    NoSchema { path: PathBuf },
    #[error("{}: schema {schema:?} is not one this stackbench reads ({known}); compare files of the same tool version, or upgrade stackbench", path.display())]
    UnknownSchema {
        path: PathBuf,
        schema: String,
        known: String,
    },
    #[error("{}: a {schema} file that does not read as one ({reason}); it may be damaged or hand-edited: write it again", path.display())]
    Malformed {
        path: PathBuf,
        schema: String,
        reason: String,
    },
}

/// Reads `path` as a stackbench result of any kind.
pub fn read(path: &Path) -> Result<Run, LoadError> {
    let bytes =
        crate::hostfs::read(path, crate::hostfs::RESULTS).map_err(|source| LoadError::Read {
            path: path.to_path_buf(),
            source: source.into(),
        })?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(LoadError::Empty {
            path: path.to_path_buf(),
        });
    }
    let value: serde_json::Value =
        serde_json::from_slice(&bytes).map_err(|e| LoadError::NotJson {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
    let Some(schema) = value
        .get("schema")
        .and_then(|s| s.as_str())
        .map(str::to_owned)
    else {
        return Err(LoadError::NoSchema {
            path: path.to_path_buf(),
        });
    };
    fn typed<T: DeserializeOwned>(
        path: &Path,
        schema: &str,
        value: serde_json::Value,
    ) -> Result<T, LoadError> {
        serde_json::from_value(value).map_err(|e| LoadError::Malformed {
            path: path.to_path_buf(),
            schema: schema.to_owned(),
            reason: e.to_string(),
        })
    }
    match schema.as_str() {
        BENCH_SCHEMA => {
            let run: BenchReport = typed(path, &schema, value)?;
            // Each repetition's samples must be where its count says: compare splits them.
            for result in &run.benchmarks {
                result
                    .repetition_samples()
                    .map_err(|e| LoadError::Malformed {
                        path: path.to_path_buf(),
                        schema: schema.clone(),
                        reason: e.to_string(),
                    })?;
            }
            Ok(Run::Bench(run))
        }
        CHECK_SCHEMA => typed(path, &schema, value).map(Run::Check),
        DOCTOR_SCHEMA => typed(path, &schema, value).map(|r| Run::Doctor(Box::new(r))),
        SCAN_SCHEMA => typed(path, &schema, value).map(Run::Scan),
        _ => Err(LoadError::UnknownSchema {
            path: path.to_path_buf(),
            known: [BENCH_SCHEMA, CHECK_SCHEMA, DOCTOR_SCHEMA, SCAN_SCHEMA].join(", "),
            schema,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::empty("", "the file is empty")]
    #[case::blank("  \n", "the file is empty")]
    #[case::truncated(r#"{"schema": "stackbench.bench/v1", "started": "#, "not JSON")]
    #[case::other_tool(r#"{"benchmarks": []}"#, "no \"schema\" tag")]
    #[case::newer(
        r#"{"schema": "stackbench.bench/v2"}"#,
        "is not one this stackbench reads"
    )]
    #[case::damaged(
        r#"{"schema": "stackbench.bench/v1", "started": 3}"#,
        "does not read as one"
    )]
    #[case::repetitions_that_do_not_add_up(
        r#"{"schema": "stackbench.bench/v1", "schema_minor": 1, "repeat": 2, "started": "2026-11-24T00:00:00Z",
            "host": {"hostname": "h", "os": "linux", "arch": "x86_64", "stackbench_version": "0"},
            "gpu": {"source": "none", "devices": [], "driver_version": null, "note": null},
            "target": "sm_90", "driver_dir": null, "quick": true, "combinations": [],
            "benchmarks": [{"id": "load/c", "combination": "c", "benchmark": "load", "side": "cpu",
                "parameters": {}, "status": "measured", "samples_ns": [1.0, 2.0, 3.0],
                "summary": null, "host_median_ns": null, "throughput": null, "pct_of_peak": null,
                "verified": null, "cupti": null, "telemetry": null, "stopped_by": null,
                "repetitions": [
                    {"status": "measured", "samples": 2, "median_ns": 1.5, "noise": null, "stopped_by": null},
                    {"status": "measured", "samples": 2, "median_ns": 3.0, "noise": null, "stopped_by": null}
                ]}]}"#,
        "load/c: its repetitions hold 4 samples but samples_ns has 3"
    )]
    fn bad_files_say_what_is_wrong_and_what_to_do(#[case] text: &str, #[case] says: &str) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.json");
        std::fs::write(&path, text).unwrap();
        let error = read(&path).unwrap_err().to_string();
        assert!(error.contains(says), "{error}");
        assert!(error.starts_with(&path.display().to_string()), "{error}");
    }

    #[test]
    fn a_missing_file_is_named() {
        let error = read(Path::new("/nonexistent/run.json")).unwrap_err();
        assert!(error
            .to_string()
            .contains("/nonexistent/run.json: cannot read it"));
    }
}
