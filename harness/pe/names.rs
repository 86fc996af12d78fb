//! DLL names among a DLL's strings: what it may `LoadLibrary` at run time (cuDNN 8 loads
//! `zlibwapi.dll` and `cublas64_11.dll` so). Windows programs keep such names as ASCII or as
//! UTF-16 strings; both are found by searching for `.dll` and reading the string around it.
//! The extension is matched in lower case, as NVIDIA's DLLs write it: one search per encoding
//! keeps a 128 MB `.rdata` to two passes. From a file, the section is read in chunks rather
//! than through a mapping, whose first touch of each page costs more than the search.

use memchr::memmem;
use std::fs::File;

/// Longest name considered; real DLL names are far shorter.
const MAX_NAME: usize = 96;

/// Bytes read at a time from a file.
const CHUNK: usize = 1 << 20;
/// Bytes each chunk repeats of the one before, so that a name across the seam is read whole.
const SEAM: usize = 4 * MAX_NAME;

/// Appends the NUL-terminated strings in `data` that are exactly a DLL file name (ASCII or
/// UTF-16LE) to `out`, unsorted and possibly repeated. The ends of `data` count as string ends.
pub fn collect_dll_names(data: &[u8], out: &mut Vec<String>) {
    collect(data, false, out);
}

/// The same for the `len` bytes of `file` at `offset`, read in chunks.
pub fn collect_dll_names_from_file(
    file: &File,
    offset: u64,
    len: u64,
    out: &mut Vec<String>,
) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    let mut buf = vec![0u8; CHUNK.min(len as usize) + SEAM];
    let (mut done, mut carried) = (0u64, 0usize);
    while done < len {
        let want = CHUNK.min((len - done) as usize);
        file.read_exact_at(&mut buf[carried..carried + want], offset + done)?;
        let filled = carried + want;
        done += want as u64;
        // Inside the section a chunk's edges are seams, not string ends; the next chunk reads
        // again what lies across them.
        collect(&buf[..filled], true, out);
        carried = SEAM.min(filled);
        buf.copy_within(filled - carried..filled, 0);
    }
    Ok(())
}

/// The search; with `seams`, a name that touches either end of `data` is not taken.
fn collect(data: &[u8], seams: bool, out: &mut Vec<String>) {
    const ASCII: &[u8] = b".dll";
    const UTF16: &[u8] = b".\0d\0l\0l\0";
    for hit in memmem::find_iter(data, ASCII) {
        if let Some(name) = ascii_name(data, hit, ASCII.len(), seams) {
            out.push(name);
        }
    }
    for hit in memmem::find_iter(data, UTF16) {
        if let Some(name) = utf16_name(data, hit, UTF16.len(), seams) {
            out.push(name);
        }
    }
}

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b'+')
}

/// The ASCII string holding `.dll` at `hit`, if it is a NUL-terminated name and nothing more.
fn ascii_name(data: &[u8], hit: usize, suffix: usize, seams: bool) -> Option<String> {
    let end = hit + suffix;
    match data.get(end) {
        Some(0) => {}
        None if !seams => {}
        _ => return None,
    }
    let mut start = hit;
    while start > 0 && hit - start < MAX_NAME && is_name_byte(data[start - 1]) {
        start -= 1;
    }
    if start == hit || (start > 0 && data[start - 1] != 0) || (start == 0 && seams) {
        return None;
    }
    std::str::from_utf8(&data[start..end])
        .ok()
        .map(str::to_owned)
}

/// The UTF-16LE string holding `.dll` at `hit`, if it is a NUL-terminated name and nothing more.
fn utf16_name(data: &[u8], hit: usize, suffix: usize, seams: bool) -> Option<String> {
    let end = hit + suffix;
    match data.get(end..end + 2) {
        Some([0, 0]) => {}
        None if !seams => {}
        _ => return None,
    }
    let mut start = hit;
    while start >= 2
        && (hit - start) / 2 < MAX_NAME
        && data[start - 1] == 0
        && is_name_byte(data[start - 2])
    {
        start -= 2;
    }
    if start == hit || (start >= 2 && data[start - 2..start] != [0, 0]) || (start < 2 && seams) {
        return None;
    }
    Some(
        data[start..end]
            .iter()
            .step_by(2)
            .map(|&b| char::from(b))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(data: &[u8]) -> Vec<String> {
        let mut out = Vec::new();
        collect_dll_names(data, &mut out);
        out.sort();
        out
    }

    #[test]
    fn ascii_and_utf16_names_are_found_and_sentences_are_not() {
        let mut data = b"\0zlibwapi.dll\0cublas64_11.dll\0Could not load cudnn.dll now\0".to_vec();
        data.extend(
            "\0\0kernel32.dll\0\0"
                .encode_utf16()
                .flat_map(u16::to_le_bytes),
        );
        assert_eq!(
            names(&data),
            ["cublas64_11.dll", "kernel32.dll", "zlibwapi.dll"]
        );
    }

    #[test]
    fn names_at_the_edges_of_the_data_are_read() {
        assert_eq!(names(b"nvcuda.dll"), ["nvcuda.dll"]);
        assert!(names(b".dll").is_empty());
    }

    #[test]
    fn names_across_chunk_seams_are_read_once_whole() {
        let mut data = vec![7u8; CHUNK - 5];
        data.extend_from_slice(b"\0zlibwapi.dll\0");
        data.extend(vec![7u8; CHUNK]);
        data.extend_from_slice(b"\0cublas64_11.dll\0");
        let mut file = tempfile::tempfile().unwrap();
        std::io::Write::write_all(&mut file, &data).unwrap();
        let mut from_file = Vec::new();
        collect_dll_names_from_file(&file, 0, data.len() as u64, &mut from_file).unwrap();
        from_file.sort();
        from_file.dedup();
        assert_eq!(from_file, names(&data));
        assert_eq!(from_file, ["cublas64_11.dll", "zlibwapi.dll"]);
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..512)) {
            names(&bytes);
        }
    }
}
