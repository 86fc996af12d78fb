//! A library file's bytes, read so that nobody else can crash us through them. A mapping is
//! cheap (only the pages read are touched), but if the file is truncated while mapped, the next
//! read of the mapping kills the process with SIGBUS; so a file is mapped only where no one but
//! us or root can change it (the trust rule, for our user), and otherwise copied with bounded
//! reads, where a file that shrinks is an error for that file.

use super::ElfError;
use std::fs::File;
use std::io::Read;
use std::ops::Deref;
use std::path::Path;

/// A file's bytes: mapped, or copied.
pub(crate) enum Bytes {
    Mapped(memmap2::Mmap),
    Copied(Vec<u8>),
}

impl Deref for Bytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Mapped(map) => map,
            Bytes::Copied(bytes) => bytes,
        }
    }
}

/// The bytes of the regular file at `path`: mapped when only we or root can change it,
/// else copied.
#[allow(clippy::disallowed_methods)] // the file hostfs opened, mapped only where ours alone
pub(crate) fn bytes(path: &Path) -> Result<Bytes, ElfError> {
    let (file, len) = open_regular(path)?;
    if only_ours_to_change(path) {
        // SAFETY: read-only and private, and no one but us or root can truncate or rewrite the
        // file while it is mapped; every read is bounds-checked against the mapping's length.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|source| ElfError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        return Ok(Bytes::Mapped(map));
    }
    copy(file, len, path).map(Bytes::Copied)
}

/// Whether no user but ours and root can change the file at `path` (nor any step to it).
pub(crate) fn only_ours_to_change(path: &Path) -> bool {
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    crate::trust::rule::check(path, false, me).is_ok()
}

/// Copies `len` bytes of `file` (opened by [`open_regular`], so at most [`crate::hostfs::BINARY`]), which
/// must still hold them: one that shrank while read is [`ElfError::Truncated`].
pub(crate) fn copy(file: File, len: u64, path: &Path) -> Result<Vec<u8>, ElfError> {
    let io = |source| ElfError::Io {
        path: path.to_path_buf(),
        source,
    };
    let wanted = usize::try_from(len).map_err(|e| io(std::io::Error::other(e)))?;
    let mut bytes = Vec::with_capacity(wanted);
    file.take(len).read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() < wanted {
        return Err(ElfError::Truncated(format!(
            "{} shrank from {len} to {} bytes while it was read",
            path.display(),
            bytes.len()
        )));
    }
    Ok(bytes)
}

/// Opens a regular, non-empty file and gives its length; an empty file is
/// [`ElfError::Truncated`]. Opened through the host reader ([`crate::hostfs::open`]), so a FIFO
/// or a device put in a library's place (even between a look and the open) is refused, never
/// opened for reading.
pub(crate) fn open_regular(path: &Path) -> Result<(File, u64), ElfError> {
    let (file, len) = crate::hostfs::open(path).map_err(|e| match e {
        crate::hostfs::ReadError::Io(source) => ElfError::Io {
            path: path.to_path_buf(),
            source,
        },
        refused => ElfError::Refused(refused),
    })?;
    if len == 0 {
        return Err(ElfError::Truncated("empty file".into()));
    }
    // No library is this large: a sparse file claiming terabytes is not read.
    if len > crate::hostfs::BINARY {
        return Err(ElfError::Refused(crate::hostfs::ReadError::TooLarge {
            cap: crate::hostfs::BINARY,
        }));
    }
    Ok((file, len))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Seek, Write};
    use std::os::unix::fs::PermissionsExt;

    /// A copy of a real shared object (this machine's libc) in a fresh directory.
    fn library() -> (tempfile::TempDir, std::path::PathBuf, Vec<u8>) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let original = std::fs::read("/lib/x86_64-linux-gnu/libc.so.6")
            .or_else(|_| std::fs::read("/lib64/libc.so.6"))
            .expect("a libc to copy");
        let path = dir.path().join("libx.so.1");
        std::fs::write(&path, &original).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        (dir, path, original)
    }

    #[test]
    fn a_file_only_we_can_change_is_mapped_one_others_can_is_copied() {
        let (_dir, path, original) = library();
        assert!(matches!(bytes(&path).unwrap(), Bytes::Mapped(_)));
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o664)).unwrap();
        let copied = bytes(&path).unwrap();
        assert!(matches!(copied, Bytes::Copied(_)));
        assert_eq!(&*copied, &original[..]);
    }

    #[test]
    fn a_file_that_shrinks_while_read_is_an_error_not_a_crash() {
        let (_dir, path, _) = library();
        let (file, len) = open_regular(&path).unwrap();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(len / 2)
            .unwrap();
        let error = copy(file, len, &path).unwrap_err();
        assert!(
            error.to_string().contains(&format!(
                "shrank from {len} to {} bytes while it was read",
                len / 2
            )),
            "{error}"
        );
    }

    #[test]
    fn a_fifo_is_refused_not_waited_on() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("libfifo.so.1");
        let name = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: mkfifo reads a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o644) }, 0);
        let error = open_regular(&fifo).expect_err("refused");
        assert!(error.to_string().contains("not a regular file"), "{error}");
    }

    /// Another user truncating and rewriting a library while it is read, as fast as they can:
    /// read from a mapping, this kills the reader with SIGBUS (the mapping's pages past the new
    /// end fault); copied, each read is whole, or an error for that file.
    #[test]
    fn a_library_rewritten_while_read_never_crashes_the_reader() {
        let (_dir, path, original) = library();
        // Group-writable: someone else can change it, as another user's file.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o664)).unwrap();
        let stop = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|scope| {
            scope.spawn(|| {
                let mut file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    file.set_len(0).unwrap();
                    file.rewind().unwrap();
                    file.write_all(&original).unwrap();
                }
            });
            for _ in 0..300 {
                // Whole, or an error: never a signal.
                let _ = super::super::read_path(&path);
            }
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
        });
    }
}
