//! Go duration text as upstream's cluster-message `duration` takes it (Go's `time.Duration`
//! syntax plus days and weeks, as `str2duration` reads it): `90s`, `1h30m`, `1.5h`, `5d`, `2w`.

use chrono::TimeDelta;

/// Why a duration did not parse, for a message that names the field.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    #[error("is empty")]
    Empty,
    #[error("is not a duration: expected numbers with units (ns, us, ms, s, m, h, d, w), e.g. 24h, 5d, 1h30m")]
    Malformed,
    #[error("is too long")]
    Overflow,
}

/// Nanoseconds in each unit; the longest names first so `ms` is not read as `m`.
const UNITS: [(&str, f64); 9] =
    [("ns", 1.0), ("us", 1e3), ("µs", 1e3), ("ms", 1e6), ("s", 1e9), ("m", 60e9), ("h", 3_600e9), ("d", 86_400e9), ("w", 604_800e9)];

/// Parses `text`; a leading `-` makes it negative (callers refuse that with their own message).
pub fn parse_go_duration(text: &str) -> Result<TimeDelta, DurationError> {
    let text = text.trim();
    let (negative, mut rest) = match text.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    if rest.is_empty() {
        return Err(DurationError::Empty);
    }
    if rest == "0" {
        return Ok(TimeDelta::zero());
    }
    let mut nanos = 0f64;
    while !rest.is_empty() {
        let number_len = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        let number = &rest[..number_len];
        if number.is_empty() || number == "." {
            return Err(DurationError::Malformed);
        }
        let value: f64 = number.parse().map_err(|_| DurationError::Malformed)?;
        rest = &rest[number_len..];
        let unit_len = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        let (_, scale) = UNITS.iter().find(|(name, _)| *name == &rest[..unit_len]).ok_or(DurationError::Malformed)?;
        nanos += value * scale;
        rest = &rest[unit_len..];
    }
    // Go's Duration is an int64 of nanoseconds (~292 years).
    if !nanos.is_finite() || nanos > i64::MAX as f64 {
        return Err(DurationError::Overflow);
    }
    let delta = TimeDelta::nanoseconds(nanos as i64);
    Ok(if negative { -delta } else { delta })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_and_day_week_units_combine() {
        assert_eq!(parse_go_duration("24h"), Ok(TimeDelta::hours(24)));
        assert_eq!(parse_go_duration("5d"), Ok(TimeDelta::days(5)));
        assert_eq!(parse_go_duration("2w"), Ok(TimeDelta::weeks(2)));
        assert_eq!(parse_go_duration("1h30m"), Ok(TimeDelta::minutes(90)));
        assert_eq!(parse_go_duration("1.5h"), Ok(TimeDelta::minutes(90)));
        assert_eq!(parse_go_duration("250ms"), Ok(TimeDelta::milliseconds(250)));
        assert_eq!(parse_go_duration("-2m"), Ok(TimeDelta::minutes(-2)));
        assert_eq!(parse_go_duration("0"), Ok(TimeDelta::zero()));
    }

    #[test]
    fn bad_text_is_refused() {
        for bad in ["", "   ", "h", "10", "10x", "1..5h", "m5", "five minutes", "1h 30m"] {
            assert!(parse_go_duration(bad).is_err(), "{bad:?} parsed");
        }
        assert_eq!(parse_go_duration("99999999999w"), Err(DurationError::Overflow));
    }
}
