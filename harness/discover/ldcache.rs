//! The dynamic loader's cache, `/etc/ld.so.cache` (glibc's "glibc-ld.so.cache1.1" format).

use std::path::PathBuf;

const MAGIC: &[u8] = b"glibc-ld.so.cache1.1";
/// glibc before 2.32 writes an old-format table first and the new format after it.
const OLD_MAGIC: &[u8] = b"ld.so-1.7.0";
const OLD_HEADER_LEN: usize = 16;
const OLD_ENTRY_LEN: usize = 12;
const HEADER_LEN: usize = 48;
const ENTRY_LEN: usize = 24;

/// One cache entry: a soname and the file the loader will use for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheEntry {
    pub soname: String,
    pub path: PathBuf,
    /// glibc's flag word: library type and architecture (`0x0303` is x86-64 libc6).
    pub flags: i32,
}

/// Why a cache could not be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum LdCacheError {
    #[error(
        "not a glibc-ld.so.cache1.1 file (old or foreign format); run `ldconfig` to rebuild it"
    )]
    UnknownFormat,
    #[error("ld.so.cache is truncated: {0}")]
    Truncated(&'static str),
}

/// Parses the bytes of an ld.so.cache file: the new format, alone or after an old-format
/// table (whose string offsets then count from the start of the new part, as glibc reads them).
pub fn parse(bytes: &[u8]) -> Result<Vec<CacheEntry>, LdCacheError> {
    if bytes.starts_with(OLD_MAGIC) {
        let nlibs =
            read_u32(bytes, OLD_HEADER_LEN - 4).ok_or(LdCacheError::Truncated("header"))? as usize;
        let new_part = nlibs
            .checked_mul(OLD_ENTRY_LEN)
            .and_then(|n| n.checked_add(OLD_HEADER_LEN + 7))
            .map(|n| n & !7)
            .and_then(|at| bytes.get(at..))
            .ok_or(LdCacheError::Truncated("old entry table"))?;
        return parse(new_part);
    }
    if !bytes.starts_with(MAGIC) {
        return Err(LdCacheError::UnknownFormat);
    }
    let nlibs = read_u32(bytes, MAGIC.len()).ok_or(LdCacheError::Truncated("header"))? as usize;
    if bytes.len() < HEADER_LEN {
        return Err(LdCacheError::Truncated("header"));
    }
    let table_end = nlibs
        .checked_mul(ENTRY_LEN)
        .and_then(|n| n.checked_add(HEADER_LEN))
        .filter(|&end| end <= bytes.len())
        .ok_or(LdCacheError::Truncated("entry table"))?;
    let entries = bytes[HEADER_LEN..table_end]
        .chunks_exact(ENTRY_LEN)
        .filter_map(|entry| {
            let flags = read_u32(entry, 0)? as i32;
            let soname = c_string(bytes, read_u32(entry, 4)? as usize)?;
            let path = c_string(bytes, read_u32(entry, 8)? as usize)?;
            Some(CacheEntry {
                soname,
                path: PathBuf::from(path),
                flags,
            })
        })
        .collect();
    Ok(entries)
}

fn read_u32(bytes: &[u8], at: usize) -> Option<u32> {
    let raw = bytes.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes(raw.try_into().ok()?))
}

/// The NUL-terminated string at `offset` (offsets in the new format count from the file start).
fn c_string(bytes: &[u8], offset: usize) -> Option<String> {
    let tail = bytes.get(offset..)?;
    let end = memchr::memchr(0, tail)?;
    String::from_utf8(tail[..end].to_vec()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn cache_with(entries: &[(&str, &str)]) -> Vec<u8> {
        let mut strings = Vec::new();
        let strings_at = HEADER_LEN + entries.len() * ENTRY_LEN;
        let mut table = Vec::new();
        for (soname, path) in entries {
            let key = strings_at + strings.len();
            strings.extend_from_slice(soname.as_bytes());
            strings.push(0);
            let value = strings_at + strings.len();
            strings.extend_from_slice(path.as_bytes());
            strings.push(0);
            table.extend_from_slice(&0x0303i32.to_le_bytes());
            table.extend_from_slice(&(key as u32).to_le_bytes());
            table.extend_from_slice(&(value as u32).to_le_bytes());
            table.extend_from_slice(&[0; 12]);
        }
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&(entries.len() as u32).to_le_bytes());
        out.extend_from_slice(&(strings.len() as u32).to_le_bytes());
        out.resize(HEADER_LEN, 0);
        out.extend(table);
        out.extend(strings);
        out
    }

    #[test]
    fn reads_entries_in_order() {
        let bytes = cache_with(&[
            ("libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so.1"),
            ("libc.so.6", "/lib/x86_64-linux-gnu/libc.so.6"),
        ]);
        let entries = parse(&bytes).unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0].soname, "libcuda.so.1");
        assert_eq!(
            entries[0].path,
            PathBuf::from("/usr/lib/x86_64-linux-gnu/libcuda.so.1")
        );
        assert_eq!(entries[1].flags, 0x0303);
    }

    #[test]
    fn reads_the_new_part_of_a_combined_cache() {
        let mut bytes = OLD_MAGIC.to_vec();
        bytes.push(0);
        bytes.extend_from_slice(&1u32.to_le_bytes());
        bytes.extend_from_slice(&[0; OLD_ENTRY_LEN]);
        bytes.resize(32, 0);
        bytes.extend(cache_with(&[("libcuda.so.1", "/usr/lib64/libcuda.so.1")]));
        let entries = parse(&bytes).unwrap();
        assert_eq!(entries[0].path, PathBuf::from("/usr/lib64/libcuda.so.1"));
    }

    #[test]
    fn rejects_old_only_caches_and_truncation() {
        assert_eq!(
            parse(b"ld.so-1.7.0\0\0\0\0\0"),
            Err(LdCacheError::UnknownFormat)
        );
        let bytes = cache_with(&[("libcuda.so.1", "/x/libcuda.so.1")]);
        assert!(matches!(
            parse(&bytes[..60]),
            Err(LdCacheError::Truncated(_))
        ));
    }

    #[test]
    fn reads_this_hosts_cache_when_present() {
        if let Ok(bytes) = std::fs::read("/etc/ld.so.cache") {
            let entries = parse(&bytes).expect("this host's ld.so.cache parses");
            assert!(entries.iter().any(|e| e.soname.starts_with("libc.so")));
        }
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(tail in proptest::collection::vec(any::<u8>(), 0..512)) {
            let mut bytes = MAGIC.to_vec();
            bytes.extend(tail);
            let _ = parse(&bytes);
        }
    }
}
