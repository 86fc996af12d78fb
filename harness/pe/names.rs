//! DLL names among a DLL's strings: what it may `LoadLibrary` at run time (cuDNN 8 loads
//! `zlibwapi.dll` and `cublas64_11.dll` so). Windows programs keep such names as ASCII or as
//! UTF-16 strings; both are found by searching for `.dll` and reading the string around it.
//! The extension is matched in lower case, as NVIDIA's DLLs write it: one pass over the data
//! finds the candidates of both encodings (with AVX2 where the CPU has it). A large section is
//! read from its file in chunks that stay in the processor's cache rather than through a
//! mapping, whose pages cost more to map than to copy unless the kernel caches the file in
//! large folios.

use std::fs::File;

/// Longest name considered; real DLL names are far shorter.
const MAX_NAME: usize = 96;

/// Bytes read at a time from a file: searched while they are still in the processor's cache.
const CHUNK: usize = 256 << 10;
/// Bytes each chunk repeats of the one before, so that a name across the seam is read whole.
const SEAM: usize = 4 * MAX_NAME;

/// Appends the NUL-terminated strings in `data` that are exactly a DLL file name (ASCII or
/// UTF-16LE) to `out`, unsorted and possibly repeated. The ends of `data` count as string ends.
pub fn collect_dll_names(data: &[u8], out: &mut Vec<String>) {
    collect(data, Ends::BOTH, out);
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
        let ends = Ends {
            start: done == 0,
            end: done + want as u64 == len,
        };
        done += want as u64;
        collect(&buf[..filled], ends, out);
        carried = SEAM.min(filled);
        buf.copy_within(filled - carried..filled, 0);
    }
    Ok(())
}

/// Which ends of the bytes searched are ends of the section, and so may end a string; the
/// others are seams between chunks, across which the chunk before or after reads whole.
#[derive(Clone, Copy)]
struct Ends {
    start: bool,
    end: bool,
}

impl Ends {
    const BOTH: Ends = Ends {
        start: true,
        end: true,
    };
}

/// The search; a name that touches an end of `data` that is not an end of `ends` is not taken.
fn collect(data: &[u8], ends: Ends, out: &mut Vec<String>) {
    const ASCII: &[u8] = b".dll";
    const UTF16: &[u8] = b".\0d\0l\0l\0";
    dots_before_d(data, |hit| {
        let name = if data[hit..].starts_with(ASCII) {
            ascii_name(data, hit, ASCII.len(), ends)
        } else if data[hit..].starts_with(UTF16) {
            utf16_name(data, hit, UTF16.len(), ends)
        } else {
            None
        };
        out.extend(name);
    });
}

/// Calls `found` with every offset of a `.` followed by `d` one byte on (ASCII `.dll`) or two
/// bytes on (UTF-16 `.\0d\0l\0l\0`), in order: one pass finds both encodings' candidates,
/// which are rare (about a thousand in cuDNN's 128 MB of `.rdata`).
fn dots_before_d(data: &[u8], mut found: impl FnMut(usize)) {
    let from = dots_before_d_vectorised(data, &mut found);
    dots_before_d_scalar(data, from, found);
}

/// [`dots_before_d`] over the start of `data` with AVX2 where the CPU has it; returns where it
/// stopped (0 where it did not run).
#[cfg(target_arch = "x86_64")]
fn dots_before_d_vectorised(data: &[u8], found: &mut impl FnMut(usize)) -> usize {
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, checked just above.
        unsafe { avx2::dots_before_d(data, found) }
    } else {
        0
    }
}

/// Other architectures: no vector pass, the scalar one does it all.
#[cfg(not(target_arch = "x86_64"))]
fn dots_before_d_vectorised(_data: &[u8], _found: &mut impl FnMut(usize)) -> usize {
    0
}

/// [`dots_before_d`] from `from` on, a byte at a time between the dots `memchr` finds.
fn dots_before_d_scalar(data: &[u8], from: usize, mut found: impl FnMut(usize)) {
    let rest = data.get(from..).unwrap_or_default();
    for dot in memchr::memchr_iter(b'.', rest).map(|at| from + at) {
        if data.get(dot + 1) == Some(&b'd') || data.get(dot + 2) == Some(&b'd') {
            found(dot);
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    /// Bytes tested per step; each step also reads the two bytes after them.
    const STEP: usize = 64;

    /// [`super::dots_before_d`] over the 64-byte steps that fit in `data`; returns the offset
    /// where the steps stopped, for the rest to be searched a byte at a time.
    ///
    /// Each 32 bytes are compared with `.` and, one and two bytes on, with `d`, without a
    /// branch; a step branches once, on whether either half holds a candidate, which is rare.
    /// Branching on dots alone would mispredict on data where one block in six holds a dot
    /// (cuDNN's `.rdata`).
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    pub unsafe fn dots_before_d(data: &[u8], found: &mut impl FnMut(usize)) -> usize {
        let mut at = 0;
        while at + STEP + 2 <= data.len() {
            // SAFETY: the CPU has AVX2 (this function's contract), and the 66 bytes from `at`
            // lie within `data`, checked just above.
            let (low, high) = unsafe {
                let p = data.as_ptr().add(at);
                (candidates(p), candidates(p.add(32)))
            };
            let any = _mm256_or_si256(low, high);
            if _mm256_testz_si256(any, any) == 0 {
                let mut bits = u64::from(_mm256_movemask_epi8(low) as u32)
                    | u64::from(_mm256_movemask_epi8(high) as u32) << 32;
                while bits != 0 {
                    found(at + bits.trailing_zeros() as usize);
                    bits &= bits - 1;
                }
            }
            at += STEP;
        }
        at
    }

    /// Which of the 32 bytes at `p` are a dot with a `d` one or two bytes after it.
    ///
    /// # Safety
    /// The CPU must support AVX2, and the 34 bytes from `p` must be readable (`loadu` needs no
    /// alignment).
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn candidates(p: *const u8) -> __m256i {
        let dot = _mm256_set1_epi8(b'.' as i8);
        let d = _mm256_set1_epi8(b'd' as i8);
        // SAFETY: the caller's contract: the three loads end at `p + 34`.
        let (here, next, after) = unsafe {
            (
                _mm256_loadu_si256(p.cast()),
                _mm256_loadu_si256(p.add(1).cast()),
                _mm256_loadu_si256(p.add(2).cast()),
            )
        };
        let d_follows = _mm256_or_si256(_mm256_cmpeq_epi8(next, d), _mm256_cmpeq_epi8(after, d));
        _mm256_and_si256(_mm256_cmpeq_epi8(here, dot), d_follows)
    }
}

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b'+')
}

/// The ASCII string holding `.dll` at `hit`, if it is a NUL-terminated name and nothing more.
fn ascii_name(data: &[u8], hit: usize, suffix: usize, ends: Ends) -> Option<String> {
    let end = hit + suffix;
    match data.get(end) {
        Some(0) => {}
        None if ends.end => {}
        _ => return None,
    }
    let mut start = hit;
    while start > 0 && hit - start < MAX_NAME && is_name_byte(data[start - 1]) {
        start -= 1;
    }
    if start == hit || (start > 0 && data[start - 1] != 0) || (start == 0 && !ends.start) {
        return None;
    }
    std::str::from_utf8(&data[start..end])
        .ok()
        .map(str::to_owned)
}

/// The UTF-16LE string holding `.dll` at `hit`, if it is a NUL-terminated name and nothing more.
fn utf16_name(data: &[u8], hit: usize, suffix: usize, ends: Ends) -> Option<String> {
    let end = hit + suffix;
    match data.get(end..end + 2) {
        Some([0, 0]) => {}
        None if ends.end => {}
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
    if start == hit
        || (start >= 2 && data[start - 2..start] != [0, 0])
        || (start < 2 && !ends.start)
    {
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
    fn names_across_chunk_seams_and_at_the_section_s_ends_are_read_once_whole() {
        let mut data = b"nvcuda.dll\0".to_vec();
        // The second chunk's search starts SEAM bytes before it, here inside a name.
        data.resize(CHUNK - SEAM - 4, 7);
        data.extend_from_slice(b"\0cudnn64_8.dll\0");
        data.resize(CHUNK - 5, 7);
        data.extend_from_slice(b"\0zlibwapi.dll\0");
        data.extend(vec![7u8; CHUNK]);
        data.extend_from_slice(b"\0cublas64_11.dll");
        let mut file = tempfile::tempfile().unwrap();
        std::io::Write::write_all(&mut file, &data).unwrap();
        let mut from_file = Vec::new();
        collect_dll_names_from_file(&file, 0, data.len() as u64, &mut from_file).unwrap();
        from_file.sort();
        from_file.dedup();
        assert_eq!(from_file, names(&data));
        assert_eq!(
            from_file,
            [
                "cublas64_11.dll",
                "cudnn64_8.dll",
                "nvcuda.dll",
                "zlibwapi.dll"
            ]
        );
    }

    proptest::proptest! {
        #[test]
        fn the_vector_search_finds_what_the_byte_search_finds(
            mut bytes in proptest::collection::vec(proptest::sample::select(b".dl\0x".to_vec()), 0..300),
            extra in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..100),
        ) {
            bytes.extend(extra);
            let mut all = Vec::new();
            dots_before_d(&bytes, |at| all.push(at));
            let mut bytewise = Vec::new();
            dots_before_d_scalar(&bytes, 0, |at| bytewise.push(at));
            proptest::prop_assert_eq!(all, bytewise);
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..512)) {
            names(&bytes);
        }
    }
}
