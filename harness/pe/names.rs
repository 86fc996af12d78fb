//! DLL names among a DLL's strings: what it may `LoadLibrary` at run time (cuDNN 8 loads
//! `zlibwapi.dll` and `cublas64_11.dll` so). Windows programs keep such names as ASCII or as
//! UTF-16 strings; both are found by searching for `.dll` and reading the string around it.
//! The extension is matched in lower case, as NVIDIA's DLLs write it: one search per encoding
//! keeps a 128 MB `.rdata` to two passes.

use memchr::memmem;

/// Longest name considered; real DLL names are far shorter.
const MAX_NAME: usize = 96;

/// Appends the NUL-terminated strings in `data` that are exactly a DLL file name (ASCII or
/// UTF-16LE) to `out`, unsorted and possibly repeated.
pub fn collect_dll_names(data: &[u8], out: &mut Vec<String>) {
    const ASCII: &[u8] = b".dll";
    const UTF16: &[u8] = b".\0d\0l\0l\0";
    for hit in memmem::find_iter(data, ASCII) {
        if let Some(name) = ascii_name(data, hit, ASCII.len()) {
            out.push(name);
        }
    }
    for hit in memmem::find_iter(data, UTF16) {
        if let Some(name) = utf16_name(data, hit, UTF16.len()) {
            out.push(name);
        }
    }
}

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b'+')
}

/// The ASCII string holding `.dll` at `hit`, if it is a NUL-terminated name and nothing more.
fn ascii_name(data: &[u8], hit: usize, suffix: usize) -> Option<String> {
    let end = hit + suffix;
    if data.get(end).is_some_and(|&b| b != 0) {
        return None;
    }
    let mut start = hit;
    while start > 0 && hit - start < MAX_NAME && is_name_byte(data[start - 1]) {
        start -= 1;
    }
    if start == hit || (start > 0 && data[start - 1] != 0) {
        return None;
    }
    std::str::from_utf8(&data[start..end])
        .ok()
        .map(str::to_owned)
}

/// The UTF-16LE string holding `.dll` at `hit`, if it is a NUL-terminated name and nothing more.
fn utf16_name(data: &[u8], hit: usize, suffix: usize) -> Option<String> {
    let end = hit + suffix;
    if data.get(end..end + 2).is_some_and(|u| u != [0, 0]) {
        return None;
    }
    let mut start = hit;
    while start >= 2
        && (hit - start) / 2 < MAX_NAME
        && data[start - 1] == 0
        && is_name_byte(data[start - 2])
    {
        start -= 2;
    }
    if start == hit || (start >= 2 && data[start - 2..start] != [0, 0]) {
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

    proptest::proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..512)) {
            names(&bytes);
        }
    }
}
