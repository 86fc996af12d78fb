//! One range of a shared object's bytes, seen a window at a time: a slice as it is, a file
//! through one window of bounded size. The walks over GPU code and read-only data take a
//! [`Window`], so reading a library of any size (a 700 MB cuBLAS, or another user's file grown
//! sparse to gigabytes) holds at most [`MOST_HELD`] bytes of it at a time.
//!
//! A file only we or root can change is mapped, a window at a time (no copy: the pages are the
//! page cache's); any other is read by positioned reads into a buffer, since a file truncated
//! while mapped kills the reader with SIGBUS at the next touch of a page past its new end, while
//! a read of it is only short: an error for that file.

use memchr::memmem::Finder;
use std::fs::File;
use std::ops::Range;
use std::os::unix::fs::FileExt;

/// Bytes read from a file at once for a small, random access (a header).
const SMALL_READ: usize = 4 << 10;
/// Bytes read from a file at once for a sequential pass (a search, a scan of strings).
const CHUNK: usize = 1 << 20;
/// Bytes of a file mapped at once: larger, since each mapping's setting up and tearing down
/// takes the whole process's lock on its address space, and untouched pages cost nothing.
const MAPPED_CHUNK: usize = 8 << 20;
/// Most bytes a window holds at once, and one access may ask for (a section header table of
/// 65,535 cubin sections is 4 MiB).
pub(crate) const MOST_HELD: usize = 2 * MAPPED_CHUNK;

/// Where a window's bytes come from.
#[derive(Clone, Copy)]
enum Source<'a> {
    Slice(&'a [u8]),
    /// A file, where the range starts in it, and whether it may be mapped.
    File(&'a File, u64, bool),
}

/// The bytes of a file held by a window.
enum Held {
    Copied(Vec<u8>),
    Mapped(memmap2::Mmap),
}

impl std::ops::Deref for Held {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Held::Copied(bytes) => bytes,
            Held::Mapped(map) => map,
        }
    }
}

/// One range of bytes, read a window at a time.
pub(crate) struct Window<'a> {
    source: Source<'a>,
    len: usize,
    /// The bytes held (files only), and where they start in the range.
    held: Held,
    held_at: usize,
}

impl<'a> Window<'a> {
    /// The whole of `bytes`, read in place.
    pub(crate) fn slice(bytes: &'a [u8]) -> Self {
        Window {
            source: Source::Slice(bytes),
            len: bytes.len(),
            held: Held::Copied(Vec::new()),
            held_at: 0,
        }
    }

    /// `range` of `file`: mapped a window at a time where `only_ours` (no one but us or root can
    /// change the file: [`super::file::only_ours_to_change`]), else read by positioned reads.
    pub(crate) fn file(file: &'a File, range: Range<usize>, only_ours: bool) -> Self {
        Window {
            source: Source::File(file, range.start as u64, only_ours),
            len: range.len(),
            held: Held::Copied(Vec::new()),
            held_at: 0,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// `len` bytes at `offset`: `None` past the end (or more than [`MOST_HELD`], or a file that
    /// can no longer give them).
    pub(crate) fn at(&mut self, offset: usize, len: usize) -> Option<&[u8]> {
        let end = offset.checked_add(len).filter(|&end| end <= self.len)?;
        if len == 0 {
            return Some(&[]);
        }
        match self.source {
            Source::Slice(bytes) => bytes.get(offset..end),
            Source::File(..) => {
                if len > MOST_HELD {
                    return None;
                }
                let held_end = self.held_at + self.held.len();
                if offset < self.held_at || end > held_end {
                    self.fill(offset, len.max(self.least_read()))?;
                }
                let from = offset - self.held_at;
                self.held.get(from..from + len)
            }
        }
    }

    /// Bytes held at least for an access: a mapping costs nothing for the pages not touched.
    fn least_read(&self) -> usize {
        match self.source {
            Source::File(_, _, true) => MAPPED_CHUNK,
            _ => SMALL_READ,
        }
    }

    /// Bytes held for a step of a sequential pass.
    fn chunk(&self) -> usize {
        match self.source {
            Source::File(_, _, true) => MAPPED_CHUNK,
            _ => CHUNK,
        }
    }

    /// Up to `len` bytes at `offset`, fewer where the range ends first.
    pub(crate) fn up_to(&mut self, offset: usize, len: usize) -> Option<&[u8]> {
        let len = len.min(self.len.checked_sub(offset)?);
        self.at(offset, len)
    }

    /// Holds the bytes from `offset` on, `wanted` of them or to the end of the range.
    fn fill(&mut self, offset: usize, wanted: usize) -> Option<()> {
        let Source::File(file, base, only_ours) = self.source else {
            return Some(());
        };
        let len = wanted.min(self.len - offset);
        let at = base.checked_add(offset as u64)?;
        // Nothing is held until the new bytes are: a file shorter than it was when opened
        // leaves the window empty.
        self.held = Held::Copied(Vec::new());
        self.held = if only_ours {
            Held::Mapped(map(file, at, len)?)
        } else {
            let mut bytes = vec![0; len];
            file.read_exact_at(&mut bytes, at).ok()?;
            Held::Copied(bytes)
        };
        self.held_at = offset;
        Some(())
    }

    /// Where `finder`'s needle first starts at or after `from`.
    pub(crate) fn find(&mut self, finder: &Finder, from: usize) -> Option<usize> {
        if let Source::Slice(bytes) = self.source {
            return Some(from + finder.find(bytes.get(from..)?)?);
        }
        let overlap = finder.needle().len().saturating_sub(1);
        let mut start = from;
        while start < self.len {
            let window = self.up_to(start, self.chunk())?;
            if let Some(hit) = finder.find(window) {
                return Some(start + hit);
            }
            let read = window.len();
            if start + read >= self.len {
                return None;
            }
            start += read - overlap.min(read - 1);
        }
        None
    }

    /// Calls `scan` on the whole range, a chunk at a time: each chunk comes with up to
    /// `context` bytes of its neighbours on both sides, and the offset in the slice where the
    /// chunk itself starts (what lies before it is the previous chunk's, for context only). A
    /// slice is one chunk.
    pub(crate) fn chunks(&mut self, context: usize, mut scan: impl FnMut(&[u8], usize)) {
        if let Source::Slice(bytes) = self.source {
            return scan(bytes, 0);
        }
        let (mut start, chunk) = (0, self.chunk());
        while start < self.len {
            let from = start.saturating_sub(context);
            let Some(bytes) = self.up_to(from, (start - from) + chunk + context) else {
                return;
            };
            scan(bytes, start - from);
            start += chunk;
        }
    }
}

/// `len` bytes of `file` from `offset`, mapped.
#[allow(clippy::disallowed_methods)] // a file hostfs opened, mapped only where ours alone
fn map(file: &File, offset: u64, len: usize) -> Option<memmap2::Mmap> {
    // SAFETY: read-only and private, of a file no one but us or root can truncate or rewrite
    // while it is mapped (the caller's trust check); every read is bounds-checked against the
    // mapping's length.
    unsafe {
        memmap2::MmapOptions::new()
            .offset(offset)
            .len(len)
            .map(file)
    }
    .ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn file_of(bytes: &[u8]) -> File {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(bytes).unwrap();
        file
    }

    #[test]
    fn a_file_window_gives_what_the_slice_gives() {
        let bytes: Vec<u8> = (0..3 * CHUNK + 17).map(|i| (i % 251) as u8).collect();
        let file = file_of(&bytes);
        let mut from_slice = Window::slice(&bytes[5..bytes.len() - 3]);
        for mapped in [false, true] {
            let mut from_file = Window::file(&file, 5..bytes.len() - 3, mapped);
            for (offset, len) in [(0, 4), (CHUNK - 2, 8), (7, SMALL_READ * 3), (3 * CHUNK, 9)] {
                assert_eq!(
                    from_file.at(offset, len).map(<[u8]>::to_vec),
                    from_slice.at(offset, len).map(<[u8]>::to_vec),
                    "{offset}+{len}, mapped: {mapped}"
                );
            }
            assert_eq!(from_file.at(0, MOST_HELD + 1), None);
        }
    }

    #[test]
    fn a_needle_across_two_chunks_is_found() {
        let mut bytes = vec![0u8; 2 * CHUNK];
        bytes[CHUNK - 2..CHUNK + 2].copy_from_slice(b"\x50\xed\x55\xba");
        let file = file_of(&bytes);
        let finder = Finder::new(b"\x50\xed\x55\xba");
        assert_eq!(
            Window::file(&file, 0..bytes.len(), false).find(&finder, 0),
            Some(CHUNK - 2)
        );
        assert_eq!(
            Window::file(&file, 0..bytes.len(), false).find(&finder, CHUNK),
            None
        );
    }

    #[test]
    fn chunks_cover_the_range_once_with_their_context() {
        let bytes: Vec<u8> = (0..2 * CHUNK + 5).map(|i| (i % 7) as u8).collect();
        let file = file_of(&bytes);
        let mut seen = 0;
        Window::file(&file, 0..bytes.len(), false).chunks(300, |chunk, own| {
            let start = seen;
            assert!(own <= 300);
            assert_eq!(chunk[own..].first(), bytes.get(start));
            seen += (chunk.len() - own).min(CHUNK);
        });
        assert_eq!(seen, bytes.len());
    }

    #[test]
    fn a_file_cut_short_gives_nothing_past_its_new_end() {
        let bytes = vec![1u8; 3 * SMALL_READ];
        let file = file_of(&bytes);
        let mut window = Window::file(&file, 0..bytes.len(), false);
        file.set_len(SMALL_READ as u64).unwrap();
        assert_eq!(window.at(2 * SMALL_READ, 4), None);
        assert!(window.at(0, 4).is_some());
    }
}
