//! A file as the `object` crate reads it, by positioned reads of the parts asked for (headers,
//! the dynamic section, symbol versions, strings), each kept once, with a cap on all it keeps:
//! a library's structure is kilobytes, so one that asks for more than [`HEADERS`] is refused
//! whatever size its file claims.

use object::read::{ReadCache, ReadRef};
use std::cell::Cell;
use std::fs::File;
use std::ops::Range;

/// Most bytes of structure read from one library (libcublasLt's is under 200 KB).
pub(crate) const HEADERS: u64 = 8 << 20;

/// A file read through a cache of the ranges asked for, within [`HEADERS`].
pub(crate) struct Budgeted<'f> {
    cache: ReadCache<&'f File>,
    len: u64,
    kept: Cell<u64>,
    refused: Cell<bool>,
}

impl<'f> Budgeted<'f> {
    /// `file`, whose length is `len`.
    pub(crate) fn new(file: &'f File, len: u64) -> Self {
        Budgeted {
            cache: ReadCache::new(file),
            len,
            kept: Cell::new(0),
            refused: Cell::new(false),
        }
    }

    /// Whether a read was refused for the cap (rather than failing for the file's bytes).
    pub(crate) fn refused(&self) -> bool {
        self.refused.get()
    }

    fn keep(&self, bytes: u64) -> Result<(), ()> {
        let kept = self.kept.get().saturating_add(bytes);
        if kept > HEADERS {
            self.refused.set(true);
            return Err(());
        }
        self.kept.set(kept);
        Ok(())
    }
}

impl<'a> ReadRef<'a> for &'a Budgeted<'_> {
    fn len(self) -> Result<u64, ()> {
        Ok(self.len)
    }

    fn read_bytes_at(self, offset: u64, size: u64) -> Result<&'a [u8], ()> {
        if offset.checked_add(size).is_none_or(|end| end > self.len) {
            return Err(());
        }
        self.keep(size)?;
        self.cache.read_bytes_at(offset, size)
    }

    fn read_bytes_at_until(self, range: Range<u64>, delimiter: u8) -> Result<&'a [u8], ()> {
        // The cache reads at most 4 KiB for one string, and keeps the string.
        let bytes = self.cache.read_bytes_at_until(range, delimiter)?;
        self.keep(bytes.len() as u64 + 1)?;
        Ok(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn reads_past_the_cap_are_refused_and_said_to_be() {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(&[7u8; 64]).unwrap();
        let read = Budgeted::new(&file, 64);
        assert_eq!(read.read_bytes_at(8, 4), Ok(&[7u8; 4][..]));
        assert_eq!(read.read_bytes_at(60, 8), Err(()));
        assert!(!read.refused());
        let sparse = Budgeted::new(&file, HEADERS * 2);
        assert_eq!(sparse.read_bytes_at(0, HEADERS + 1), Err(()));
        assert!(sparse.refused());
    }
}
