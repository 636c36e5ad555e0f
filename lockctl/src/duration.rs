//! Durations on the command line: a whole number and a unit, `250ms`,
//! `30s`, `5m`, `2h`.
//!
//! Deliberately tiny and strict: no fractions, no spaces, no sign, no
//! compound forms (`1m30s`), no bare numbers. A bare `5` is rejected rather
//! than guessed, because seconds and milliseconds are both plausible and a
//! wrong guess silently changes a lease by a factor of 1000.

use std::time::Duration;

/// The accepted units and how many milliseconds each is.
const UNITS: [(&str, u64); 4] = [("ms", 1), ("s", 1_000), ("m", 60_000), ("h", 3_600_000)];

/// Parses a duration like `250ms`, `30s`, `5m` or `2h`. Used as clap's value
/// parser, so the error is a short phrase clap puts after the bad value.
pub(crate) fn parse(text: &str) -> Result<Duration, String> {
    let digits_end = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(digits_end);
    if number.is_empty() {
        return Err(format!(
            "expected a whole number followed by a unit, e.g. 250ms, 30s, 5m (got {text:?})"
        ));
    }
    if unit.is_empty() {
        return Err(format!(
            "{text:?} has no unit; write e.g. {text}s or {text}ms"
        ));
    }
    let Some(&(_, unit_ms)) = UNITS.iter().find(|(name, _)| *name == unit) else {
        return Err(format!("unknown unit {unit:?} (use ms, s, m or h)"));
    };
    // Digits only, so the one way parsing can fail is a value too large.
    let too_long = || format!("{text:?} is too long");
    let count: u64 = number.parse().map_err(|_| too_long())?;
    let ms = count.checked_mul(unit_ms).ok_or_else(too_long)?;
    Ok(Duration::from_millis(ms))
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
    fn every_unit() {
        assert_eq!(parse("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse("2h"), Ok(Duration::from_secs(7200)));
        assert_eq!(parse("0s"), Ok(Duration::ZERO));
        assert_eq!(parse("007s"), Ok(Duration::from_secs(7)));
    }

    #[test]
    fn bad_input_is_rejected_with_a_reason() {
        for (bad, says) in [
            ("", "whole number"),
            ("5", "no unit"),
            ("5x", "unknown unit"),
            ("5 s", "unknown unit"),
            ("5S", "unknown unit"),
            ("5sec", "unknown unit"),
            ("1m30s", "unknown unit"),
            ("1.5s", "unknown unit"),
            ("-1s", "whole number"),
            ("+1s", "whole number"),
            (" 1s", "whole number"),
            ("s", "whole number"),
            ("ms", "whole number"),
            ("99999999999999999999s", "too long"),
            ("18446744073709551615h", "too long"),
            ("٣s", "whole number"), // a non-ASCII digit
        ] {
            let err = parse(bad).expect_err(bad);
            assert!(err.contains(says), "{bad:?}: {err}");
        }
    }

    #[test]
    fn largest_values() {
        let max_ms = u64::MAX;
        assert_eq!(
            parse(&format!("{max_ms}ms")),
            Ok(Duration::from_millis(max_ms))
        );
        assert!(parse(&format!("{}s", max_ms / 1000 + 1)).is_err());
    }

    #[test]
    fn display_is_short() {
        assert_eq!(display(Duration::from_millis(850)), "850ms");
        assert_eq!(display(Duration::from_millis(29_840)), "29.8s");
        assert_eq!(display(Duration::from_secs(300)), "5m 0s");
        assert_eq!(display(Duration::from_secs(3_725)), "1h 2m 5s");
    }
}
