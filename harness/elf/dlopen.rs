//! Library names in read-only data: what a library opens with `dlopen` at run time.
//!
//! Owns the recognition of a library file name (`libcublasLt.so.12`) among the NUL-terminated
//! strings of a section. It searches for `.so` with `memchr::memmem` and looks only at the
//! strings around each hit, so tens of megabytes of `.rodata` cost one fast scan.

use memchr::memmem;

/// Longest string considered; real library names are far shorter.
const MAX_NAME: usize = 255;
/// Bytes of context a chunk of a longer range needs on each side for every name in it to be
/// read whole (see [`collect_library_names`]); NCCL's banner needs less.
pub(crate) const CONTEXT: usize = MAX_NAME + 1;

/// The NUL-terminated strings in `data` that are exactly a library file name, sorted and unique.
///
/// A name is `lib` + `[A-Za-z0-9_+.-]+` + `.so`, optionally followed by `.N` groups of digits
/// (`libcuda.so.1`, `libnvrtc.so`). Format strings, paths and sentences are not names.
pub fn library_names(data: &[u8]) -> Vec<String> {
    let mut names = Vec::new();
    collect_library_names(data, 0, &mut names);
    names.sort_unstable();
    names.dedup();
    names
}

/// Appends the library names found in `data` from offset `own` on to `out` (unsorted, possibly
/// repeated). `data` before `own` is context only: a chunk of a longer range is given with
/// [`CONTEXT`] bytes of it, so that a name is never cut at the chunk's start (a string there
/// with no NUL before it would read as starting at the chunk's first byte).
pub(crate) fn collect_library_names(data: &[u8], own: usize, out: &mut Vec<String>) {
    let finder = memmem::Finder::new(b".so");
    let mut from = own;
    while let Some(rel) = data.get(from..).and_then(|rest| finder.find(rest)) {
        let hit = from + rel;
        // The string holding the hit: after the previous NUL (or the start of data) ...
        let window_start = hit.saturating_sub(MAX_NAME);
        let before = data.get(window_start..hit).unwrap_or_default();
        let start = match memchr::memrchr(0, before) {
            Some(nul) => window_start + nul + 1,
            None if window_start == 0 => 0,
            None => {
                from = hit + 1;
                continue;
            }
        };
        // ... up to the next NUL, which must exist.
        let window_end = hit.saturating_add(MAX_NAME).min(data.len());
        let after = data.get(hit..window_end).unwrap_or_default();
        let Some(nul) = memchr::memchr(0, after) else {
            from = hit + 1;
            continue;
        };
        let end = hit + nul;
        if let Some(candidate) = data.get(start..end) {
            if is_library_name(candidate) {
                if let Ok(name) = std::str::from_utf8(candidate) {
                    out.push(name.to_owned());
                }
            }
        }
        // No other string can hold a hit before this string's terminating NUL.
        from = end + 1;
    }
}

/// Whether `s` is exactly a library file name: `lib` + stem + `.so` + optional `.N` groups.
pub fn is_library_name(s: &[u8]) -> bool {
    if s.len() > MAX_NAME {
        return false;
    }
    let Some(rest) = s.strip_prefix(b"lib") else {
        return false;
    };
    // Strip trailing `.N` version groups.
    let mut end = rest.len();
    loop {
        let head = rest.get(..end).unwrap_or_default();
        let Some(dot) = memchr::memrchr(b'.', head) else {
            return false;
        };
        let group = head.get(dot + 1..).unwrap_or_default();
        if !group.is_empty() && group.iter().all(u8::is_ascii_digit) {
            end = dot;
        } else {
            break;
        }
    }
    let head = rest.get(..end).unwrap_or_default();
    let Some(stem) = head.strip_suffix(b".so") else {
        return false;
    };
    !stem.is_empty()
        && stem
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'+' | b'.' | b'-'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rstest::rstest;

    #[rstest]
    #[case::plain(b"libnvrtc.so", true)]
    #[case::versioned(b"libcuda.so.1", true)]
    #[case::camel(b"libcublasLt.so.12", true)]
    #[case::underscores(b"libcudnn_engines_precompiled.so.9", true)]
    #[case::long_version(b"libcudart.so.12.9.79", true)]
    #[case::plus(b"libstdc++.so.6", true)]
    #[case::dash_dot_stem(b"libnvToolsExt-1.0.so", true)]
    #[case::format_string(b"libcudnn_%s.so", false)]
    #[case::path(b"/usr/lib/libcuda.so.1", false)]
    #[case::sentence(b"foo libx.so", false)]
    #[case::no_stem(b"lib.so", false)]
    #[case::no_lib(b"cuda.so.1", false)]
    #[case::trailing_dot(b"libcuda.so.", false)]
    #[case::empty_group(b"libcuda.so..1", false)]
    #[case::word_suffix(b"libcuda.so.abc", false)]
    #[case::so_inside(b"libcuda.sox", false)]
    #[case::windows(b"cublas64_11.dll", false)]
    #[case::empty(b"", false)]
    fn recognises_names(#[case] s: &[u8], #[case] expected: bool) {
        assert_eq!(
            is_library_name(s),
            expected,
            "{}",
            String::from_utf8_lossy(s)
        );
    }

    #[rstest]
    #[case::single(b"\0libcuda.so.1\0" as &[u8], &["libcuda.so.1"] as &[&str])]
    #[case::at_start(b"libnvrtc.so\0rest\0", &["libnvrtc.so"])]
    #[case::unterminated(b"\0libnvrtc.so", &[])]
    #[case::sorted_unique(
        b"\0libz.so.1\0libcublas.so.11\0x\0libz.so.1\0libcublasLt.so.11\0",
        &["libcublas.so.11", "libcublasLt.so.11", "libz.so.1"]
    )]
    #[case::format_and_path(
        b"\0libcudnn_%s.so\0/opt/libfoo.so\0Could not load library libcudnn_cnn_infer.so.8\0",
        &[]
    )]
    #[case::two_hits_one_string(b"\0libfoo.so.libbar.so\0libok.so\0", &["libfoo.so.libbar.so", "libok.so"])]
    #[case::binary_noise(b"\x01\x02.so\x03\0libnvrtc.so\0\xff.so", &["libnvrtc.so"])]
    fn extracts_names(#[case] data: &[u8], #[case] expected: &[&str]) {
        assert_eq!(library_names(data), expected);
    }

    #[test]
    fn skips_strings_longer_than_a_name() {
        let mut data = vec![b'x'; 1000];
        data.extend_from_slice(b"libcuda.so.1\0");
        assert!(library_names(&data).is_empty());
        data.extend_from_slice(b"libnvrtc.so\0");
        assert_eq!(library_names(&data), ["libnvrtc.so"]);
    }

    proptest! {
        #[test]
        fn never_panics(data in proptest::collection::vec(any::<u8>(), 0..2048)) {
            let _ = library_names(&data);
        }

        #[test]
        fn finds_every_embedded_name(
            stem in "[A-Za-z0-9_+-][A-Za-z0-9_+.-]{0,20}",
            versions in proptest::collection::vec(0u32..1000, 0..3),
            noise in proptest::collection::vec(any::<u8>(), 0..64),
        ) {
            let mut name = format!("lib{stem}.so");
            for v in versions {
                name.push_str(&format!(".{v}"));
            }
            let mut data = noise.clone();
            data.push(0);
            data.extend_from_slice(name.as_bytes());
            data.push(0);
            data.extend_from_slice(&noise);
            prop_assert!(library_names(&data).contains(&name));
        }
    }
}
