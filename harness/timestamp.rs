//! Timestamps: RFC 3339 in UTC, from the system clock, and read back, without a date library.

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

/// An RFC 3339 instant (`2026-11-22T17:29:03Z`, `2026-11-22T17:29:03.25+01:00`) as microseconds
/// since the Unix epoch; `None` for anything else.
pub fn parse_rfc3339_us(text: &str) -> Option<i64> {
    let bytes = text.as_bytes();
    let digits = |range: std::ops::Range<usize>| -> Option<i64> {
        let part = text.get(range)?;
        part.bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| part.parse().ok())?
    };
    if bytes.len() < 20 || bytes[4] != b'-' || bytes[7] != b'-' || bytes[13] != b':' {
        return None;
    }
    if !matches!(bytes[10], b'T' | b't' | b' ') || bytes[16] != b':' {
        return None;
    }
    let (year, month, day) = (digits(0..4)?, digits(5..7)?, digits(8..10)?);
    let (hour, minute, second) = (digits(11..13)?, digits(14..16)?, digits(17..19)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 {
        return None;
    }
    if second > 60 {
        return None;
    }
    let mut rest = &text[19..];
    let mut micros = 0i64;
    if let Some(fraction) = rest.strip_prefix('.') {
        let end = fraction
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(fraction.len());
        if end == 0 {
            return None;
        }
        let kept: String = fraction[..end]
            .chars()
            .chain("000000".chars())
            .take(6)
            .collect();
        micros = kept.parse().ok()?;
        rest = &fraction[end..];
    }
    let offset = match rest {
        "Z" | "z" => 0,
        _ => {
            let sign = match rest.as_bytes().first()? {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            if rest.len() != 6 || rest.as_bytes()[3] != b':' {
                return None;
            }
            let (h, m) = (
                rest[1..3].parse::<i64>().ok()?,
                rest[4..6].parse::<i64>().ok()?,
            );
            sign * (h * 3600 + m * 60)
        }
    };
    let days = days_from_civil(year, month as u32, day as u32);
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset;
    Some(seconds * 1_000_000 + micros)
}

/// The day count since 1970-01-01 of a Gregorian date (Howard Hinnant's `days_from_civil`).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let yoe = year.rem_euclid(400);
    let mp = i64::from((month + 9) % 12);
    let doy = (153 * mp + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
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
        assert_eq!(parse_rfc3339_us(text), Some(seconds as i64 * 1_000_000));
    }

    #[rstest]
    #[case("2026-11-22T18:29:03.5+01:00", Some(1_795_368_543_500_000))]
    #[case("2026-11-22T17:29:03.123456789Z", Some(1_795_368_543_123_456))]
    #[case("2026-11-22 17:29:03Z", Some(1_795_368_543_000_000))]
    #[case("2026-13-22T17:29:03Z", None)]
    #[case("2026-11-22T17:29:03", None)]
    #[case("2026-11-22T17:29:03.Z", None)]
    #[case("yesterday", None)]
    #[case("2026-11-22T17:29:03+1:00", None)]
    fn rfc3339_instants_read_back(#[case] text: &str, #[case] micros: Option<i64>) {
        assert_eq!(parse_rfc3339_us(text), micros);
    }
}
