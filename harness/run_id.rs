//! A run's identity: a random UUID, version 4 (RFC 9562), drawn from the kernel's random source.
//! Two runs started in one second on one host are two runs; a copy of a run's file is the same
//! run. Host and start time cannot tell those apart, so files written without an id fall back to
//! them ([`crate::compare`]).

/// A new run id, `xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx` in lower-case hex; `None` where the
/// kernel gave no random bytes (the run is then known by its host and start time, as older
/// files are).
pub fn new() -> Option<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).ok()?;
    Some(format_v4(bytes))
}

/// `bytes` as a version 4, variant 1 UUID: the version nibble and the variant's two bits set,
/// the other 122 bits as drawn.
fn format_v4(mut bytes: [u8; 16]) -> String {
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    hyphenated(&bytes)
}

/// Sixteen bytes in a UUID's hex form, `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`.
pub fn hyphenated(bytes: &[u8; 16]) -> String {
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_and_variant_bits_are_set_and_the_rest_kept() {
        assert_eq!(
            format_v4([0xff; 16]),
            "ffffffff-ffff-4fff-bfff-ffffffffffff"
        );
        assert_eq!(format_v4([0; 16]), "00000000-0000-4000-8000-000000000000");
    }

    #[test]
    fn two_ids_differ_and_have_the_uuid_shape() {
        let (a, b) = (new().unwrap(), new().unwrap());
        assert_ne!(a, b);
        let groups: Vec<usize> = a.split('-').map(str::len).collect();
        assert_eq!(groups, [8, 4, 4, 4, 12]);
        assert_eq!(&a[14..15], "4");
    }
}
