//! The history store: every bench and check run as rows of one long table ([`rows::Row`]),
//! written as Parquet in Hive partitions by the day the run started
//! (`date=2026-11-27/part-<uuid>.parquet`), so that DuckDB, ClickHouse, Spark and pandas read it
//! as it is. The JSON files stay the source of truth: [`ingest`] appends their runs, each once
//! (by run id). Each file is written whole under a temporary name and renamed into place, so a
//! reader never sees half a file; one ingest at a time holds the store's lock.

pub mod ingest;
mod parquet_io;
pub mod rows;

use rows::Row;
use std::collections::{BTreeMap, HashSet};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// How long an ingest waits for another to release the store's lock.
pub const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

/// The store's default place, beside the runs it is made from.
pub const DEFAULT_DIR: &str = "results/store";

/// Why the store could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot write the store {dir}: {source}; give a directory you can write with --store")]
    Write {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "cannot read the store {dir}: {source}; check the path given to --store, or fill it with \
         `stackbench ingest`"
    )]
    Read {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "another stackbench ingest has held the store's lock {path} for a minute; wait for it \
         to end (the lock ends with its process), then run this again"
    )]
    Locked { path: PathBuf },
    #[error(
        "{path} is not a store file stackbench can read ({why}); move it out of the store, then \
         run `stackbench ingest` on the JSON files again"
    )]
    File { path: PathBuf, why: String },
}

/// Which columns a read takes: the samples are most of a file, and most queries need none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Columns {
    /// Every column but the samples.
    Figures,
    /// Every column.
    All,
}

/// A store directory.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
}

/// What one [`Store::append`] wrote.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Written {
    pub files: Vec<PathBuf>,
    pub rows: usize,
}

impl Store {
    /// The store in `dir` (which need not exist yet).
    pub fn at(dir: &Path) -> Store {
        Store {
            dir: dir.to_path_buf(),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The store's Parquet files, in name order: `date=*/part-*.parquet`. A store that does not
    /// exist yet has none.
    pub fn files(&self) -> Result<Vec<PathBuf>, StoreError> {
        let read = |dir: &Path| {
            crate::hostfs::read_dir(dir).map_err(|source| StoreError::Read {
                dir: self.dir.clone(),
                source,
            })
        };
        if !self.dir.exists() {
            return Ok(Vec::new());
        }
        let mut files = Vec::new();
        for day in read(&self.dir)?.filter_map(Result::ok) {
            let name = day.file_name();
            let is_day = name.to_str().is_some_and(|n| n.starts_with("date="));
            if !is_day || !day.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            for file in read(&day.path())?.filter_map(Result::ok) {
                let name = file.file_name();
                let is_part = name
                    .to_str()
                    .is_some_and(|n| n.starts_with("part-") && n.ends_with(".parquet"));
                if is_part && file.file_type().is_ok_and(|t| t.is_file()) {
                    files.push(file.path());
                }
            }
        }
        files.sort();
        Ok(files)
    }

    /// Every row, with `columns`, in file order.
    pub fn read(&self, columns: Columns) -> Result<Vec<Row>, StoreError> {
        let mut rows = Vec::new();
        for file in self.files()? {
            rows.extend(parquet_io::read(&file, columns)?);
        }
        Ok(rows)
    }

    /// The run ids the store holds (read from that column alone).
    pub fn run_ids(&self) -> Result<HashSet<String>, StoreError> {
        let mut ids = HashSet::new();
        for file in self.files()? {
            ids.extend(parquet_io::run_ids(&file)?);
        }
        Ok(ids)
    }

    /// Appends `rows`: one new file per day they started on, each written whole and renamed
    /// into place.
    pub fn append(&self, rows: &[Row]) -> Result<Written, StoreError> {
        let mut by_day: BTreeMap<String, Vec<&Row>> = BTreeMap::new();
        for row in rows {
            by_day.entry(day(row.started_us)).or_default().push(row);
        }
        let mut written = Written::default();
        for (day, rows) in by_day {
            let dir = self.dir.join(format!("date={day}"));
            std::fs::create_dir_all(&dir).map_err(|source| self.write_error(source))?;
            let id = crate::run_id::new().unwrap_or_else(|| format!("{}", std::process::id()));
            let path = dir.join(format!("part-{id}.parquet"));
            let bytes = parquet_io::encode(&rows).map_err(|e| self.write_error(e))?;
            crate::output::write_atomically(&path, &bytes)
                .map_err(|e| self.write_error(std::io::Error::other(e.to_string())))?;
            written.rows += rows.len();
            written.files.push(path);
        }
        Ok(written)
    }

    /// Holds the store's lock until the guard is dropped: one writer at a time, so that two
    /// ingests of the same run cannot both find it missing. A lock another process holds for
    /// longer than [`LOCK_WAIT`] is an error that names it, never a wait without end.
    #[allow(clippy::disallowed_methods)] // the store's own lock file, never followed (O_NOFOLLOW)
    pub fn lock(&self) -> Result<Lock, StoreError> {
        std::fs::create_dir_all(&self.dir).map_err(|source| self.write_error(source))?;
        let path = self.dir.join(".lock");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(&path)
            .map_err(|source| self.write_error(source))?;
        let started = std::time::Instant::now();
        loop {
            // SAFETY: flock on a descriptor we own; LOCK_NB makes it return at once.
            let fd = std::os::fd::AsRawFd::as_raw_fd(&file);
            if unsafe { libc::flock(fd, libc::LOCK_EX | libc::LOCK_NB) } == 0 {
                return Ok(Lock { _file: file });
            }
            let error = std::io::Error::last_os_error();
            if error.raw_os_error() != Some(libc::EWOULDBLOCK) {
                return Err(self.write_error(error));
            }
            if started.elapsed() >= LOCK_WAIT {
                return Err(StoreError::Locked { path });
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }

    fn write_error(&self, source: std::io::Error) -> StoreError {
        StoreError::Write {
            dir: self.dir.clone(),
            source,
        }
    }
}

/// The store's lock, released when dropped (the descriptor closes).
pub struct Lock {
    _file: std::fs::File,
}

/// The partition day of a start time (microseconds since the epoch): its date in UTC
/// (`2026-11-27`).
pub fn day(started_us: i64) -> String {
    let seconds = u64::try_from(started_us.div_euclid(1_000_000)).unwrap_or(0);
    crate::timestamp::rfc3339(seconds)[..10].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::model::{BenchReport, Side};

    /// A bench run's rows: one GPU row of three repetitions.
    fn some_rows() -> Vec<Row> {
        let mut run =
            BenchReport::of_repetitions("2026-11-27T23:59:59Z", Side::Gpu, &[100.0, 101.0, 99.0]);
        run.run_id = Some("run-a".into());
        rows::of_bench(&run)
    }

    #[test]
    fn rows_read_back_as_written_in_a_partition_of_their_day() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::at(&dir.path().join("store"));
        assert_eq!(store.files().unwrap(), Vec::<PathBuf>::new());
        let rows = some_rows();
        assert!(!rows[0].samples.is_empty());
        let written = store.append(&rows).unwrap();
        assert_eq!(written.rows, rows.len());
        let files = store.files().unwrap();
        assert_eq!(files, written.files);
        let day = files[0].parent().unwrap().file_name().unwrap();
        assert_eq!(day, "date=2026-11-27");
        assert_eq!(store.read(Columns::All).unwrap(), rows);
        let figures: Vec<Row> = (rows.iter().cloned())
            .map(|r| Row {
                samples: Vec::new(),
                ..r
            })
            .collect();
        assert_eq!(store.read(Columns::Figures).unwrap(), figures);
        assert_eq!(
            store.run_ids().unwrap(),
            HashSet::from(["run-a".to_owned()])
        );
    }

    #[test]
    fn the_samples_are_delta_encoded_and_the_rest_compressed() {
        use parquet::file::reader::{FileReader, SerializedFileReader};
        let rows = some_rows();
        let bytes = parquet_io::encode(&rows.iter().collect::<Vec<_>>()).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("part.parquet");
        std::fs::write(&path, bytes).unwrap();
        let (file, _) = crate::hostfs::open(&path).unwrap();
        let reader = SerializedFileReader::new(file).unwrap();
        let group = reader.metadata().row_group(0);
        let samples = (group.columns().iter())
            .find(|c| c.column_path().string() == "samples.list.element")
            .expect("the samples' column");
        assert!(
            samples
                .encodings()
                .any(|e| e == parquet::basic::Encoding::DELTA_BINARY_PACKED),
            "{:?}",
            samples.encodings().collect::<Vec<_>>()
        );
        assert_eq!(samples.compression(), parquet::basic::Compression::SNAPPY);
    }

    #[test]
    fn a_file_that_is_not_parquet_is_named_with_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let day = dir.path().join("date=2026-01-01");
        std::fs::create_dir_all(&day).unwrap();
        std::fs::write(day.join("part-x.parquet"), b"not parquet").unwrap();
        let error = Store::at(dir.path()).read(Columns::All).unwrap_err();
        let text = error.to_string();
        assert!(
            text.contains("part-x.parquet") && text.contains("move it out"),
            "{text}"
        );
    }

    #[test]
    fn a_lock_held_elsewhere_keeps_a_second_writer_out_until_released() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::at(dir.path());
        let held = store.lock().unwrap();
        // flock locks belong to the open file: a second open is a second holder, as another
        // process would be.
        let second = std::fs::OpenOptions::new()
            .write(true)
            .open(dir.path().join(".lock"))
            .unwrap();
        let fd = std::os::fd::AsRawFd::as_raw_fd(&second);
        // SAFETY: flock on a descriptor we own.
        assert_ne!(unsafe { libc::flock(fd, libc::LOCK_EX | libc::LOCK_NB) }, 0);
        drop(held);
        // SAFETY: as above.
        assert_eq!(unsafe { libc::flock(fd, libc::LOCK_EX | libc::LOCK_NB) }, 0);
    }

    #[test]
    fn days_are_utc_dates() {
        assert_eq!(day(0), "1970-01-01");
        assert_eq!(day(1_795_368_543_000_000), "2026-11-22");
    }
}
