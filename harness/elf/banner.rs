//! What a library says of its own build in its read-only data: NCCL keeps the line it prints at
//! start-up, `NCCL version 2.27.5+cuda12.9` (and `NCCL version 2.27.5 compiled with CUDA 12.9`),
//! as one string, so its version and the CUDA it was built for are read without loading it.
//!
//! The search is one `memchr::memmem` pass for the prefix; each hit is read to its NUL, at most
//! [`MAX_BANNER`] bytes, and anything that does not parse is passed over.

use crate::model::BuiltFor;
use memchr::memmem;

/// Where NCCL's banner starts.
const NCCL_PREFIX: &[u8] = b"NCCL version ";

/// Longest banner considered; NCCL's is under 50 bytes.
const MAX_BANNER: usize = 80;

/// NCCL's banner in `data` (the NUL-terminated strings of a section), the first one that parses
/// and starts at or after `own` (what comes before is a previous chunk's, given as context).
pub fn nccl(data: &[u8], own: usize) -> Option<BuiltFor> {
    memmem::find_iter(data, NCCL_PREFIX).find_map(|at| {
        // The prefix must start a string, in this chunk.
        if at < own || (at > 0 && data.get(at - 1) != Some(&0)) {
            return None;
        }
        let window = data.get(at..data.len().min(at.saturating_add(MAX_BANNER)))?;
        let text = std::str::from_utf8(window.get(..memchr::memchr(0, window)?)?).ok()?;
        parse_nccl(text)
    })
}

/// `NCCL version 2.27.5+cuda12.9` or `NCCL version 2.27.5 compiled with CUDA 12.9`.
fn parse_nccl(text: &str) -> Option<BuiltFor> {
    let rest = text.strip_prefix("NCCL version ")?;
    let (version, cuda) = rest
        .split_once("+cuda")
        .or_else(|| rest.split_once(" compiled with CUDA "))?;
    let version_ok = version.starts_with(|c: char| c.is_ascii_digit())
        && version
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-'));
    let cuda_ok = matches!(cuda.split_once('.'), Some((major, minor))
        if !major.is_empty() && !minor.is_empty()
            && major.bytes().all(|b| b.is_ascii_digit())
            && minor.bytes().all(|b| b.is_ascii_digit()));
    (version_ok && cuda_ok).then(|| BuiltFor {
        version: version.to_owned(),
        cuda: cuda.to_owned(),
        said: text.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rstest::rstest;

    fn found(data: &[u8]) -> Option<(String, String)> {
        nccl(data, 0).map(|b| (b.version, b.cuda))
    }

    #[rstest]
    #[case::plus_cuda(b"\0NCCL version 2.27.5+cuda12.9\0" as &[u8], Some(("2.27.5", "12.9")))]
    #[case::compiled_with(b"\0NCCL version 2.27.7 compiled with CUDA 13.0\0", Some(("2.27.7", "13.0")))]
    #[case::at_start(b"NCCL version 2.18.3+cuda12.2\0", Some(("2.18.3", "12.2")))]
    #[case::suffix(b"\0NCCL version 2.26.2-1+cuda12.8\0", Some(("2.26.2-1", "12.8")))]
    #[case::format_string(b"\0NCCL version %s\0NCCL version 2.27.5+cuda12.9\0", Some(("2.27.5", "12.9")))]
    #[case::inside_a_sentence(b"\0Mismatched NCCL version 2.27.5+cuda12.9\0", None)]
    #[case::unterminated(b"\0NCCL version 2.27.5+cuda12.9", None)]
    #[case::no_minor(b"\0NCCL version 2.27.5+cuda12\0", None)]
    #[case::not_digits(b"\0NCCL version 2.27.5+cuda12.x\0", None)]
    #[case::no_version(b"\0NCCL version +cuda12.9\0", None)]
    #[case::printf(b"\0NCCL version %d.%d.%d+cuda%d.%d\0", None)]
    #[case::too_long(b"\0NCCL version 2.27.5+cuda12.999999999999999999999999999999999999999999999999999999999999999\0", None)]
    #[case::empty(b"", None)]
    fn reads_nccls_banner(#[case] data: &[u8], #[case] expected: Option<(&str, &str)>) {
        let expected = expected.map(|(v, c)| (v.to_owned(), c.to_owned()));
        assert_eq!(found(data), expected);
    }

    #[test]
    fn keeps_what_the_library_said() {
        let banner = nccl(b"x\0NCCL version 2.27.5+cuda12.9\0", 0).expect("a banner");
        assert_eq!(banner.said, "NCCL version 2.27.5+cuda12.9");
    }

    proptest! {
        #[test]
        fn never_panics(data in proptest::collection::vec(any::<u8>(), 0..512), at in 0usize..512) {
            let mut data = data;
            let at = at.min(data.len());
            data.splice(at..at, NCCL_PREFIX.iter().copied());
            let _ = nccl(&data, 0);
        }
    }
}
