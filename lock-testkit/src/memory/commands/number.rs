//! Numbers as Redis reads and writes them: integers are strict decimal
//! (`string2ll`: no sign but `-`, no leading zeros, no spaces), doubles are
//! `strtod` without leading space, overflow or NaN, and a double is written
//! with C's `%.17g` (Redis 7.0's `addReplyDouble` and its Lua argument
//! conversion), so `0.1` is `0.10000000000000001`.

/// A strict decimal integer, or `None`.
pub(crate) fn parse_int(bytes: &[u8]) -> Option<i64> {
    if bytes == b"0" {
        return Some(0);
    }
    let (negative, digits) = match bytes.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, bytes),
    };
    match digits.first() {
        Some(b'1'..=b'9') => {}
        _ => return None,
    }
    let mut value: u64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        value = value.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    if negative {
        0i64.checked_sub_unsigned(value)
    } else {
        i64::try_from(value).ok()
    }
}

/// A double as Redis accepts one: `inf`, `-inf`, decimals and exponents;
/// not NaN, not an overflow to infinity or an underflow to zero, no
/// leading space. (C's hexadecimal floats are not accepted.)
pub(crate) fn parse_double(bytes: &[u8]) -> Option<f64> {
    let text = std::str::from_utf8(bytes).ok()?;
    if text.starts_with(|c: char| c.is_ascii_whitespace()) {
        return None;
    }
    let value: f64 = text.parse().ok()?;
    if value.is_nan() {
        return None;
    }
    let unsigned = text.trim_start_matches(['+', '-']).to_ascii_lowercase();
    if value.is_infinite() && unsigned != "inf" && unsigned != "infinity" {
        return None;
    }
    let mantissa = unsigned.split('e').next().unwrap_or_default();
    if value == 0.0 && mantissa.bytes().any(|c| (b'1'..=b'9').contains(&c)) {
        return None;
    }
    Some(value)
}

/// `d` as C's `printf("%.17g", d)` writes it (glibc's spelling of
/// infinities and NaN).
pub(crate) fn format_double(d: f64) -> String {
    if d.is_nan() {
        return if d.is_sign_negative() { "-nan" } else { "nan" }.to_owned();
    }
    if d.is_infinite() {
        return if d > 0.0 { "inf" } else { "-inf" }.to_owned();
    }
    if d == 0.0 {
        return if d.is_sign_negative() { "-0" } else { "0" }.to_owned();
    }
    // %g picks the style from the exponent of the value rounded to 17
    // significant digits, which is what `{:.16e}` prints.
    let scientific = format!("{d:.16e}");
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if !(-4..17).contains(&exponent) {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!(
            "{}e{sign}{:02}",
            strip_fraction_zeros(mantissa),
            exponent.unsigned_abs()
        )
    } else {
        let decimals = usize::try_from(16 - exponent).unwrap_or(0);
        strip_fraction_zeros(&format!("{d:.decimals$}")).to_owned()
    }
}

fn strip_fraction_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// A Lua number converted to a Redis integer as Redis does (a C cast to
/// `long long`, truncating toward zero; out of range or NaN gives the
/// x86-64 result, `i64::MIN`).
pub(crate) fn truncate_to_int(d: f64) -> i64 {
    const LIMIT: f64 = 9_223_372_036_854_775_808.0; // 2^63
    if d.is_nan() || !(-LIMIT..LIMIT).contains(&d) {
        i64::MIN
    } else {
        d as i64
    }
}

/// One end of a score range (`ZRANGEBYSCORE` and kin): `(` makes it
/// exclusive.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Bound {
    pub(crate) value: f64,
    pub(crate) exclusive: bool,
}

impl Bound {
    pub(crate) fn parse(bytes: &[u8]) -> Option<Self> {
        match bytes.split_first() {
            Some((b'(', rest)) => {
                let value = parse_strtod(rest)?;
                Some(Bound {
                    value,
                    exclusive: true,
                })
            }
            _ => Some(Bound {
                value: parse_strtod(bytes)?,
                exclusive: false,
            }),
        }
    }
}

/// A score range `[min, max]` with exclusive ends as given.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ScoreRange {
    pub(crate) min: Bound,
    pub(crate) max: Bound,
}

impl ScoreRange {
    pub(crate) fn parse(min: &[u8], max: &[u8]) -> Option<Self> {
        Some(ScoreRange {
            min: Bound::parse(min)?,
            max: Bound::parse(max)?,
        })
    }

    pub(crate) fn contains(&self, score: f64) -> bool {
        let above = if self.min.exclusive {
            score > self.min.value
        } else {
            score >= self.min.value
        };
        let below = if self.max.exclusive {
            score < self.max.value
        } else {
            score <= self.max.value
        };
        above && below
    }
}

/// A range end is read with plain `strtod` (Redis's `zslParseRange`):
/// leading space, overflow and underflow are accepted, NaN is not, and an
/// empty string is 0 (strtod converts nothing and stops at its end).
fn parse_strtod(bytes: &[u8]) -> Option<f64> {
    let text = std::str::from_utf8(bytes).ok()?;
    if text.is_empty() {
        return Some(0.0);
    }
    text.trim_start_matches(|c: char| c.is_ascii_whitespace() || c == '\x0b')
        .parse::<f64>()
        .ok()
        .filter(|v| !v.is_nan())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_are_strict() {
        assert_eq!(parse_int(b"0"), Some(0));
        assert_eq!(parse_int(b"-12"), Some(-12));
        assert_eq!(parse_int(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_int(b"-9223372036854775808"), Some(i64::MIN));
        for bad in [
            &b""[..],
            b"-",
            b"-0",
            b"01",
            b"+1",
            b" 1",
            b"1 ",
            b"1.0",
            b"9223372036854775808",
            b"-9223372036854775809",
        ] {
            assert_eq!(parse_int(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn doubles_as_redis_reads_them() {
        assert_eq!(parse_double(b"1.5"), Some(1.5));
        assert_eq!(parse_double(b"-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_double(b"+inf"), Some(f64::INFINITY));
        assert_eq!(parse_double(b"1e3"), Some(1000.0));
        assert_eq!(parse_double(b"0e5"), Some(0.0));
        for bad in [&b""[..], b"nan", b" 1", b"1x", b"1e400", b"1e-400"] {
            assert_eq!(
                parse_double(bad),
                None,
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn doubles_print_as_percent_17g() {
        // Each pair checked against redis-server 7.0 (SET k <lua number>; GET k).
        let cases = [
            (1e20, "1e+20"),
            (3.0, "3"),
            (-0.0, "-0"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (123_456_789_012_345_678.0, "1.2345678901234568e+17"),
            (0.1, "0.10000000000000001"),
            (1e-5, "1.0000000000000001e-05"),
            (1.5e-7, "1.4999999999999999e-07"),
            (2f64.powi(70), "1.1805916207174113e+21"),
            (100.0, "100"),
            (1e16, "10000000000000000"),
            (1e17, "1e+17"),
            (1_700_000_000_123.0, "1700000000123"),
            (-2.5, "-2.5"),
            (0.0001, "0.0001"),
        ];
        for (d, text) in cases {
            assert_eq!(format_double(d), text, "{d:e}");
        }
        assert_eq!(format_double(-f64::NAN), "-nan");
    }

    #[test]
    fn lua_numbers_truncate_like_a_c_cast() {
        assert_eq!(truncate_to_int(3.99), 3);
        assert_eq!(truncate_to_int(-3.99), -3);
        assert_eq!(truncate_to_int(2f64.powi(63)), i64::MIN);
        assert_eq!(truncate_to_int(f64::NAN), i64::MIN);
        assert_eq!(truncate_to_int(-(2f64.powi(63))), i64::MIN);
    }

    #[test]
    fn score_ranges() {
        let r = ScoreRange::parse(b"(1", b"+inf").unwrap();
        assert!(!r.contains(1.0));
        assert!(r.contains(1.5));
        assert!(ScoreRange::parse(b"x", b"1").is_none());
        assert!(ScoreRange::parse(b"nan", b"1").is_none());
        assert_eq!(ScoreRange::parse(b"", b" 2").unwrap().max.value, 2.0);
    }
}
