//! Every file stackbench reads from the host, read here and nowhere else (clippy.toml forbids
//! std's readers elsewhere). The host is other users' input: a FIFO blocks an ordinary `open`
//! forever, `/dev/zero` never ends, a sparse file claims 100 GB, and merely opening
//! `/dev/watchdog` arms it. So a path is first opened with `O_PATH` (which opens no device and
//! waits on no FIFO), judged by `fstat` (a regular file, or nothing), and only then reopened for
//! reading through that very descriptor (`/proc/self/fd`), so nothing can be swapped in between.
//! Where that reopen fails (no `/proc` in a chroot, EACCES on a root-squashed mount) the file is
//! reported, never opened again by its name. Every read stops at a cap for its kind of file
//! (listings at a number of lines too). What is refused is a [`ReadError`] whose message says
//! why, for the caller to report on that file while the run goes on.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Metadata, configuration, `/proc` and `/sys` files: `METADATA`, `pyvenv.cfg`, `version.json`,
/// `ld.so.conf`, `nvcc.profile`, `host_config.h`.
pub const TEXT: u64 = 4 << 20;
/// Listings that grow with what they list: a wheel's `RECORD`, a conda package's record,
/// `ld.so.cache`, an NCCL log, a configuration of combinations.
pub const LISTING: u64 = 64 << 20;
/// stackbench's own results (every sample of a run, a fleet's merge).
pub const RESULTS: u64 = 1 << 30;
/// A library or program read as bytes. The largest CUDA libraries are under 1.5 GiB.
pub const BINARY: u64 = 4 << 30;

/// Bytes the readers of host binaries may hold at once, all threads together, whatever the
/// number of cores: each reader takes its [`Share`] before it reads and gives it back after, so
/// a node of 192 cores reads as many libraries at once as fit in this, not 192.
pub const SHARED: u64 = 192 << 20;

/// What the readers hold now, out of [`SHARED`], and where a reader waits for its share.
static HELD: std::sync::Mutex<u64> = std::sync::Mutex::new(0);
static GIVEN_BACK: std::sync::Condvar = std::sync::Condvar::new();

/// A reader's part of [`SHARED`], given back when dropped. A reader takes one share for all it
/// reads and never a second while it holds one, so readers wait on each other but never on
/// themselves.
#[must_use = "the share is given back when dropped"]
pub struct Share(u64);

/// Waits until `bytes` (at most [`SHARED`]) are free among the readers' and takes them.
pub fn share(bytes: u64) -> Share {
    let bytes = bytes.min(SHARED);
    let mut held = HELD
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    while *held + bytes > SHARED {
        held = GIVEN_BACK
            .wait(held)
            .unwrap_or_else(std::sync::PoisonError::into_inner);
    }
    *held += bytes;
    Share(bytes)
}

impl Drop for Share {
    fn drop(&mut self) {
        let mut held = HELD
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *held -= self.0;
        GIVEN_BACK.notify_all();
    }
}

/// Why a file was not read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// A FIFO, device, socket or directory where a file was wanted: never opened for reading.
    #[error("skipped: not a regular file ({0})")]
    NotRegular(&'static str),
    /// Larger than the cap for its kind (a sparse file, a file that grows while read).
    #[error("skipped: too large (more than {} bytes for this kind of file)", .cap)]
    TooLarge { cap: u64 },
    /// More lines than the cap for its kind (a listing of millions of entries).
    #[error("skipped: too long (more than {max_lines} lines for this kind of file)")]
    TooManyLines { max_lines: usize },
    /// The descriptor could not be reopened for reading; the name is not tried again.
    #[error("skipped: cannot be reopened through its descriptor ({0}), and a file is never opened again by its name, where another could have been swapped in (mount /proc where stackbench runs)")]
    NoReopen(std::io::Error),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

impl ReadError {
    /// Whether the file simply is not there.
    pub fn is_not_found(&self) -> bool {
        matches!(self, ReadError::Io(e) if e.kind() == std::io::ErrorKind::NotFound)
    }
}

impl From<ReadError> for std::io::Error {
    fn from(error: ReadError) -> std::io::Error {
        match error {
            ReadError::Io(e) => e,
            other => std::io::Error::new(std::io::ErrorKind::InvalidInput, other.to_string()),
        }
    }
}

/// What a file type is called in messages.
fn kind_of(file_type: std::fs::FileType) -> &'static str {
    if file_type.is_fifo() {
        "a FIFO"
    } else if file_type.is_char_device() {
        "a character device"
    } else if file_type.is_block_device() {
        "a block device"
    } else if file_type.is_socket() {
        "a socket"
    } else if file_type.is_dir() {
        "a directory"
    } else {
        "not a plain file"
    }
}

/// Opens the regular file `path` names (links followed) for reading, with its length; anything
/// else is refused without ever being opened for reading.
pub fn open(path: &Path) -> Result<(File, u64), ReadError> {
    #[allow(clippy::disallowed_methods)] // O_PATH: nothing is opened for reading or acted on
    let handle = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH | libc::O_NOCTTY)
        .open(path)?;
    let meta = handle.metadata()?;
    if !meta.file_type().is_file() {
        return Err(ReadError::NotRegular(kind_of(meta.file_type())));
    }
    let file = reopen(&handle).map_err(ReadError::NoReopen)?;
    // The same inode as judged, still a regular file.
    let now = file.metadata()?;
    if !now.file_type().is_file() || !same_file(&meta, &now) {
        return Err(ReadError::NotRegular("replaced while it was opened"));
    }
    Ok((file, now.len()))
}

/// The file an `O_PATH` handle holds, opened for reading through `/proc/self/fd` (the very
/// inode), non-blocking.
#[allow(clippy::disallowed_methods)] // the very inode judged, through its descriptor
fn reopen(handle: &File) -> std::io::Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(format!("/proc/self/fd/{}", handle.as_raw_fd()))
}

/// The real path of `path`, links resolved (`realpath`: each step is `lstat`ed and links read;
/// nothing is opened), or the error that stopped it.
#[allow(clippy::disallowed_methods)] // the one place host paths are resolved
pub fn real_path(path: impl AsRef<Path>) -> std::io::Result<PathBuf> {
    std::fs::canonicalize(path)
}

fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    a.dev() == b.dev() && a.ino() == b.ino()
}

/// The bytes of the regular file at `path`, at most `cap` of them: a larger file (or one that
/// grows past the cap while read) is [`ReadError::TooLarge`].
pub fn read(path: &Path, cap: u64) -> Result<Vec<u8>, ReadError> {
    let (file, len) = open_within(path, cap)?;
    read_capped(file, len, cap)
}

/// The regular file at `path` opened for reading, with its length: refused when larger than
/// `cap` before a byte of it is read.
fn open_within(path: &Path, cap: u64) -> Result<(File, u64), ReadError> {
    let (file, len) = open(path)?;
    if len > cap {
        return Err(ReadError::TooLarge { cap });
    }
    Ok((file, len))
}

/// Reads `file` to its end, at most `cap` bytes; `len` (its size when opened) sizes the buffer.
/// Files of `/proc` and `/sys` say 0 and are read to their end all the same.
fn read_capped(file: File, len: u64, cap: u64) -> Result<Vec<u8>, ReadError> {
    let mut bytes = Vec::with_capacity(usize::try_from(len.min(cap)).unwrap_or(0));
    file.take(cap.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(ReadError::TooLarge { cap });
    }
    Ok(bytes)
}

/// The text of the regular file at `path` (UTF-8, at most `cap` bytes).
pub fn read_to_string(path: &Path, cap: u64) -> Result<String, ReadError> {
    String::from_utf8(read(path, cap)?).map_err(|_| {
        ReadError::Io(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "not UTF-8 text",
        ))
    })
}

/// The text of the regular file at `path`, invalid UTF-8 replaced.
pub fn read_lossy(path: &Path, cap: u64) -> Result<String, ReadError> {
    Ok(String::from_utf8_lossy(&read(path, cap)?).into_owned())
}

/// The regular file at `path` to read as a stream (a parser that keeps only what it needs):
/// refused when larger than `cap`, and ending one byte past `cap` should it grow while read.
pub fn reader(path: &Path, cap: u64) -> Result<std::io::BufReader<std::io::Take<File>>, ReadError> {
    let (file, _) = open_within(path, cap)?;
    Ok(std::io::BufReader::new(file.take(cap.saturating_add(1))))
}

/// The text of the regular file at `path` (invalid UTF-8 replaced), read line by line: at most
/// `cap` bytes and `max_lines` lines, a longer file refused as soon as the cap is passed, so a
/// listing of millions of entries costs no more than the lines allowed.
pub fn read_lines(path: &Path, cap: u64, max_lines: usize) -> Result<String, ReadError> {
    use std::io::BufRead;
    let mut reader = reader(path, cap)?;
    let (mut text, mut line, mut lines, mut read) = (String::new(), Vec::new(), 0, 0u64);
    loop {
        line.clear();
        let n = reader.read_until(b'\n', &mut line)?;
        if n == 0 {
            return Ok(text);
        }
        read += n as u64;
        lines += 1;
        if read > cap {
            return Err(ReadError::TooLarge { cap });
        }
        if lines > max_lines {
            return Err(ReadError::TooManyLines { max_lines });
        }
        text.push_str(&String::from_utf8_lossy(&line));
    }
}

/// The entries of the directory `dir`, as std gives them. Opening a directory is safe whatever
/// the path names: `O_DIRECTORY` refuses anything else before it is opened.
pub fn read_dir(dir: &Path) -> std::io::Result<std::fs::ReadDir> {
    #[allow(clippy::disallowed_methods)] // the one place the host's directories are listed
    std::fs::read_dir(dir)
}

/// The paths in the directory `dir`, sorted; none when it cannot be read.
pub fn entries(dir: &Path) -> Vec<PathBuf> {
    let mut entries: Vec<PathBuf> = read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    entries
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn reads_a_file_up_to_its_cap() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("METADATA");
        std::fs::write(&path, b"Name: x\n").unwrap();
        assert_eq!(read(&path, 8).unwrap(), b"Name: x\n");
        assert!(matches!(
            read(&path, 7),
            Err(ReadError::TooLarge { cap: 7 })
        ));
        assert!(read(&dir.path().join("absent"), 8)
            .unwrap_err()
            .is_not_found());
    }

    #[test]
    fn a_listing_is_read_up_to_its_lines_and_refused_past_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("RECORD");
        std::fs::write(&path, b"a,1\nb,2\nc\xff").unwrap();
        assert_eq!(read_lines(&path, 100, 3).unwrap(), "a,1\nb,2\nc\u{fffd}");
        assert!(matches!(
            read_lines(&path, 100, 2),
            Err(ReadError::TooManyLines { max_lines: 2 })
        ));
        assert!(matches!(
            read_lines(&path, 5, 3),
            Err(ReadError::TooLarge { cap: 5 })
        ));
    }

    #[test]
    fn a_fifo_is_refused_not_waited_on() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("METADATA");
        let name = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o644) }, 0);
        let error = read(&fifo, TEXT).unwrap_err();
        assert_eq!(error.to_string(), "skipped: not a regular file (a FIFO)");
        // A link to one is judged by what it leads to.
        let link = dir.path().join("RECORD");
        std::os::unix::fs::symlink(&fifo, &link).unwrap();
        assert!(matches!(read(&link, TEXT), Err(ReadError::NotRegular(_))));
    }

    #[test]
    fn endless_devices_are_refused_and_proc_files_read() {
        for device in ["/dev/zero", "/dev/urandom", "/dev/null"] {
            let error = read(Path::new(device), TEXT).unwrap_err();
            assert_eq!(
                error.to_string(),
                "skipped: not a regular file (a character device)"
            );
        }
        // /proc files say they are empty and are read to their end.
        let stat = read_to_string(Path::new("/proc/self/stat"), TEXT).unwrap();
        assert!(stat.starts_with(&std::process::id().to_string()));
    }

    #[test]
    fn a_sparse_file_is_too_large_and_read_nothing_of() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("libcudart.so.12");
        let file = std::fs::File::create(&path).unwrap();
        file.set_len(100 << 30).unwrap();
        assert!(matches!(
            read(&path, BINARY),
            Err(ReadError::TooLarge { .. })
        ));
        let mut small = std::fs::File::create(dir.path().join("x")).unwrap();
        small.write_all(b"abc").unwrap();
        let (file, len) = open(&dir.path().join("x")).unwrap();
        assert_eq!(
            read_capped(file, len, 2).unwrap_err().to_string(),
            "skipped: too large (more than 2 bytes for this kind of file)"
        );
    }
}
