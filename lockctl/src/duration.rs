//! Durations on the command line, parsed by `humantime`: a number and a
//! unit, `250ms`, `1.5s`, `30s`, `5m`, `2h`, and sums of them, `1m30s` or
//! `"1m 30s"`.
//!
//! A bare number is refused (but `0`, which means the same in every unit):
//! seconds and milliseconds are both plausible, and a wrong guess silently
//! changes a lease by a factor of 1000.

use std::time::Duration;

use humantime::DurationError;

/// A reminder of the format, at the end of most errors.
const EXAMPLES: &str = "e.g. 250ms, 1.5s, 1m30s";

/// Parses a duration like `250ms`, `1.5s`, `1m30s` or `2h`. Used as clap's
/// value parser, so the error is a short phrase clap puts after the bad
/// value.
pub(crate) fn parse(text: &str) -> Result<Duration, String> {
    humantime::parse_duration(text).map_err(|e| explain(text, &e))
}

/// humantime's error, said for this command line: its byte offsets become
/// the text they point at.
fn explain(text: &str, err: &DurationError) -> String {
    let from = |offset: usize| text.get(offset..).unwrap_or_default();
    match err {
        DurationError::Empty => format!("no duration given; write a number and a unit, {EXAMPLES}"),
        DurationError::UnknownUnit { unit, .. } if unit.is_empty() => {
            format!("{text:?} has no unit; write e.g. {text}s or {text}ms")
        }
        DurationError::UnknownUnit { unit, .. } => {
            format!("unknown unit {unit:?} (use ms, s, m, h, d; {EXAMPLES})")
        }
        DurationError::NumberExpected(offset) => format!(
            "expected a number where {:?} starts; write a number and a unit, {EXAMPLES}",
            from(*offset)
        ),
        DurationError::InvalidCharacter(offset) => format!(
            "unexpected character at {:?}; write a number and a unit, {EXAMPLES}",
            from(*offset)
        ),
        DurationError::NumberOverflow => {
            format!("{text:?} is too long, or finer than a nanosecond")
        }
    }
}

/// Formats a duration for people: `850ms`, `29.8s`, `5m 0s`.
pub(crate) fn display(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1_000 {
        format!("{ms}ms")
    } else if ms < 60_000 {
        format!("{:.1}s", d.as_secs_f64())
    } else {
        let secs = d.as_secs();
        let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
        if h > 0 {
            format!("{h}h {m}m {s}s")
        } else {
            format!("{m}m {s}s")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_fractions_and_sums() {
        assert_eq!(parse("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse("2h"), Ok(Duration::from_secs(7200)));
        assert_eq!(parse("0s"), Ok(Duration::ZERO));
        assert_eq!(parse("0"), Ok(Duration::ZERO));
        assert_eq!(parse("007s"), Ok(Duration::from_secs(7)));
        assert_eq!(parse("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse("1m 30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse("1min 30sec"), Ok(Duration::from_secs(90)));
    }

    #[test]
    fn bad_input_is_rejected_with_a_reason() {
        for (bad, says) in [
            ("", "no duration given"),
            ("   ", "no duration given"),
            ("5", "\"5\" has no unit; write e.g. 5s or 5ms"),
            ("00", "no unit"),
            ("1.5", "no unit"),
            ("5x", "unknown unit \"x\""),
            ("5sex", "unknown unit \"sex\""),
            ("-1s", "expected a number where \"-1s\" starts"),
            ("+1s", "expected a number"),
            ("s", "expected a number"),
            ("1s-", "unexpected character at \"-\""),
            ("99999999999999999999s", "too long"),
            ("18446744073709551615h", "too long"),
            ("٣s", "expected a number"), // a non-ASCII digit
        ] {
            let err = parse(bad).expect_err(bad);
            assert!(err.contains(says), "{bad:?}: {err}");
        }
    }

    #[test]
    fn display_is_short() {
        assert_eq!(display(Duration::from_millis(850)), "850ms");
        assert_eq!(display(Duration::from_millis(29_840)), "29.8s");
        assert_eq!(display(Duration::from_secs(300)), "5m 0s");
        assert_eq!(display(Duration::from_secs(3_725)), "1h 2m 5s");
    }
}
