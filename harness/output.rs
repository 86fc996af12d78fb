//! Writing a finished report: to standard output, or atomically to a file so a reader never
//! sees half a report and an earlier one is never lost to a failed write.

use crate::error::OutputError;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Where a report goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    Stdout,
    File(PathBuf),
}

/// Writes `bytes` to the destination.
pub fn write(destination: &Destination, bytes: &[u8]) -> Result<(), OutputError> {
    match destination {
        Destination::Stdout => {
            let mut out = std::io::stdout().lock();
            out.write_all(bytes)
                .and_then(|()| out.flush())
                .map_err(OutputError::Stdout)
        }
        Destination::File(path) => write_atomically(path, bytes),
    }
}

/// Writes to a temporary file beside `path`, syncs it, then renames it over `path`.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), OutputError> {
    let error = |source| OutputError::Write {
        path: path.to_path_buf(),
        source,
    };
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let mut tmp = tempfile_in(dir, path).map_err(error)?;
    let result = tmp
        .1
        .write_all(bytes)
        .and_then(|()| tmp.1.sync_all())
        .and_then(|()| std::fs::rename(&tmp.0, path));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp.0);
    }
    result.map_err(error)
}

/// Creates a new, uniquely named file in `dir` for a report destined for `path`.
#[allow(clippy::disallowed_methods)] // a new file of our own (`create_new`), never a host file
fn tempfile_in(dir: &Path, path: &Path) -> std::io::Result<(std::path::PathBuf, std::fs::File)> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    for attempt in 0..100u32 {
        let tmp = dir.join(format!(".{name}.{}.{attempt}.tmp", std::process::id()));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
        {
            Ok(file) => return Ok((tmp, file)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::AlreadyExists,
        "no free temporary name",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_whole_files_and_keeps_the_old_one_on_failure() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("scan.json");
        write_atomically(&path, b"first").unwrap();
        write_atomically(&path, b"second").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"second");
        let missing = dir.path().join("no/such/dir/scan.json");
        assert!(write_atomically(&missing, b"x").is_err());
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temporary file left behind"
        );
    }
}
