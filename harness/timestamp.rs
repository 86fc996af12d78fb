//! Timestamps for reports: RFC 3339 in UTC, from the system clock, without a date library.

use std::time::{SystemTime, UNIX_EPOCH};

/// Now, as `2026-11-22T17:29:03Z`.
pub fn now() -> String {
    let seconds = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    rfc3339(seconds)
}

/// Seconds since the Unix epoch as `YYYY-MM-DDThh:mm:ssZ`.
pub fn rfc3339(seconds: u64) -> String {
    let (days, rest) = (seconds / 86_400, seconds % 86_400);
    let (year, month, day) = civil_from_days(days as i64);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// The Gregorian date of a day count since 1970-01-01 (Howard Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case(0, "1970-01-01T00:00:00Z")]
    #[case(951_782_400, "2000-02-29T00:00:00Z")]
    #[case(1_795_368_543, "2026-11-22T17:29:03Z")]
    #[case(4_107_542_399, "2100-02-28T23:59:59Z")]
    fn known_instants(#[case] seconds: u64, #[case] text: &str) {
        assert_eq!(rfc3339(seconds), text);
    }
}
