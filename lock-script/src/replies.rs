//! Turning script replies into lock-core outcomes. Each function accepts
//! exactly the shapes its script (see `src/scripts/*.lua`) produces and
//! reports anything else as [`lock_core::LockError::Protocol`].
//!
//! Shared by every kind whose scripts answer in these shapes (the
//! reentrant lock, the fair lock), so each shape is parsed once.

use std::time::Duration;

use lock_core::backend::{AcquireOutcome, ReleaseOutcome};
use lock_core::{Holder, LockInfo, Result};
use redis::Value;

use crate::error::bad_reply;

fn int(value: &Value) -> Option<i64> {
    match value {
        Value::Int(n) => Some(*n),
        _ => None,
    }
}

/// A PTTL reply: `Some` for a key with an expiry, `None` for no expiry (-1)
/// or no key (-2).
fn ttl(pttl: i64) -> Option<Duration> {
    u64::try_from(pttl).ok().map(Duration::from_millis)
}

/// `{1, token}` → acquired (token 0: none asked for); `{2, 0}` → claimed
/// (a lock granted to the wait's ticket); `{0, pttl}` → held.
pub fn acquire(reply: &Value) -> Result<AcquireOutcome> {
    let bad = || bad_reply("acquire", reply);
    let Value::Array(items) = reply else {
        return Err(bad());
    };
    match items.as_slice() {
        [flag, n] => match (int(flag), int(n)) {
            (Some(1), Some(token)) => Ok(AcquireOutcome::Acquired {
                fencing_token: u64::try_from(token).ok().filter(|&t| t > 0),
            }),
            (Some(2), Some(0)) => Ok(AcquireOutcome::Claimed),
            (Some(0), Some(pttl)) => Ok(AcquireOutcome::Held { ttl: ttl(pttl) }),
            _ => Err(bad()),
        },
        _ => Err(bad()),
    }
}

/// `1` released, `0` still held, nil not held.
pub fn release(reply: &Value) -> Result<ReleaseOutcome> {
    match reply {
        Value::Nil => Ok(ReleaseOutcome::NotHeld),
        Value::Int(1) => Ok(ReleaseOutcome::Released),
        Value::Int(0) => Ok(ReleaseOutcome::StillHeld),
        other => Err(bad_reply("release", other)),
    }
}

/// An array of `expected` integers, 1 renewed / 0 not held.
pub fn renew(reply: &Value, expected: usize) -> Result<Vec<bool>> {
    let bad = || bad_reply("renew", reply);
    let Value::Array(items) = reply else {
        return Err(bad());
    };
    if items.len() != expected {
        return Err(bad());
    }
    items
        .iter()
        .map(|item| match int(item) {
            Some(1) => Ok(true),
            Some(0) => Ok(false),
            _ => Err(bad()),
        })
        .collect()
}

/// `1` existed (deleted), `0` did not.
pub fn force_unlock(reply: &Value) -> Result<bool> {
    match reply {
        Value::Int(1) => Ok(true),
        Value::Int(0) => Ok(false),
        other => Err(bad_reply("force_unlock", other)),
    }
}

/// `{HGETALL flat array, PTTL}`. Fields whose value is not a count (such
/// as the `mode` field of a Redisson read-write lock) are skipped.
pub fn inspect(reply: &Value) -> Result<LockInfo> {
    let bad = || bad_reply("inspect", reply);
    let Value::Array(items) = reply else {
        return Err(bad());
    };
    let [fields, pttl] = items.as_slice() else {
        return Err(bad());
    };
    let pttl = int(pttl).ok_or_else(bad)?;
    let pairs: Vec<(String, String)> = match fields {
        Value::Array(flat) if flat.len() % 2 == 0 => flat
            .chunks(2)
            .map(|pair| Some((text(&pair[0])?, text(&pair[1])?)))
            .collect::<Option<_>>()
            .ok_or_else(bad)?,
        // RESP3 connections may see a map.
        Value::Map(map) => map
            .iter()
            .map(|(k, v)| Some((text(k)?, text(v)?)))
            .collect::<Option<_>>()
            .ok_or_else(bad)?,
        _ => return Err(bad()),
    };
    // A hash may hold fields that are not counts: Redisson's read-write
    // lock keeps `mode` = `read`/`write` beside its counted fields. They are
    // skipped; the lock is held by its counted fields.
    let holders: Vec<Holder> = pairs
        .into_iter()
        .filter_map(|(field, count)| {
            let count = count.parse::<u64>().ok()?;
            Some(Holder::new(field, count))
        })
        .collect();
    let ttl = if holders.is_empty() { None } else { ttl(pttl) };
    Ok(LockInfo::new(holders, ttl))
}

/// The reply of a fencing-token counter read (its value, or nil when the
/// counter is missing): the last token handed out, `None` when none was.
///
/// # Errors
/// [`lock_core::LockError::WrongType`] naming `counter` when the value is
/// not an integer as Redis's `INCR` reads one (see [`token_value`]).
pub fn token(reply: &Value, counter: &str) -> Result<Option<u64>> {
    match reply {
        Value::Nil => Ok(None),
        Value::BulkString(bytes) => match std::str::from_utf8(bytes) {
            Ok(value) => token_value(value, counter),
            Err(_) => Err(bad_token(counter)),
        },
        other => Err(bad_reply("token", other)),
    }
}

/// A fencing-token counter's value as the last token handed out. Exactly
/// the values a fenced acquisition's `INCR` accepts are integers here
/// (Redis's `string2ll`: an optional `-`, no other sign, no spaces, no
/// leading zeros, within `i64`), so the read fails where an acquisition
/// would; every other value is [`lock_core::LockError::WrongType`] naming
/// `counter`. Tokens start at 1: a counter at zero or below has handed
/// out none (`None`).
///
/// # Errors
/// As above.
pub fn token_value(value: &str, counter: &str) -> Result<Option<u64>> {
    let digits = value.strip_prefix('-').unwrap_or(value);
    let canonical = value == "0"
        || (!digits.is_empty()
            && !digits.starts_with('0')
            && digits.bytes().all(|b| b.is_ascii_digit()));
    match value.parse::<i64>() {
        Ok(n) if canonical => Ok(u64::try_from(n).ok().filter(|&t| t > 0)),
        _ => Err(bad_token(counter)),
    }
}

fn bad_token(counter: &str) -> lock_core::LockError {
    lock_core::LockError::WrongType {
        key: counter.to_owned(),
    }
}

fn text(value: &Value) -> Option<String> {
    match value {
        Value::BulkString(bytes) => String::from_utf8(bytes.clone()).ok(),
        Value::SimpleString(s) => Some(s.clone()),
        Value::Int(n) => Some(n.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    #[test]
    fn acquire_replies() {
        let r = acquire(&Value::Array(vec![Value::Int(1), Value::Int(0)])).unwrap();
        assert_eq!(
            r,
            AcquireOutcome::Acquired {
                fencing_token: None
            }
        );
        let r = acquire(&Value::Array(vec![Value::Int(1), Value::Int(7)])).unwrap();
        assert_eq!(
            r,
            AcquireOutcome::Acquired {
                fencing_token: Some(7)
            }
        );
        let r = acquire(&Value::Array(vec![Value::Int(0), Value::Int(1500)])).unwrap();
        assert_eq!(
            r,
            AcquireOutcome::Held {
                ttl: Some(Duration::from_millis(1500))
            }
        );
        let r = acquire(&Value::Array(vec![Value::Int(0), Value::Int(-1)])).unwrap();
        assert_eq!(r, AcquireOutcome::Held { ttl: None });
        assert!(acquire(&Value::Nil).is_err());
        let r = acquire(&Value::Array(vec![Value::Int(2), Value::Int(0)])).unwrap();
        assert_eq!(r, AcquireOutcome::Claimed);
        assert!(acquire(&Value::Array(vec![Value::Int(2), Value::Int(5)])).is_err());
        assert!(acquire(&Value::Array(vec![Value::Int(3), Value::Int(0)])).is_err());
    }

    #[test]
    fn release_replies() {
        assert_eq!(release(&Value::Nil).unwrap(), ReleaseOutcome::NotHeld);
        assert_eq!(release(&Value::Int(0)).unwrap(), ReleaseOutcome::StillHeld);
        assert_eq!(release(&Value::Int(1)).unwrap(), ReleaseOutcome::Released);
        assert!(release(&Value::Int(2)).is_err());
    }

    #[test]
    fn renew_replies() {
        let v = Value::Array(vec![Value::Int(1), Value::Int(0)]);
        assert_eq!(renew(&v, 2).unwrap(), vec![true, false]);
        assert!(renew(&v, 3).is_err());
        assert!(renew(&Value::Int(1), 1).is_err());
    }

    #[test]
    fn token_replies() {
        assert_eq!(token(&Value::Nil, "c").unwrap(), None);
        assert_eq!(token(&bulk("7"), "c").unwrap(), Some(7));
        assert_eq!(token(&bulk("0"), "c").unwrap(), None);
        assert_eq!(token(&bulk("-3"), "c").unwrap(), None);
        assert_eq!(
            token(&bulk("9223372036854775807"), "c").unwrap(),
            Some(i64::MAX as u64)
        );
        // What INCR refuses is not a counter.
        for bad in [
            "abc",
            "",
            "007",
            "+5",
            " 5",
            "5 ",
            "-0",
            "-",
            "1.5",
            "9223372036854775808",
        ] {
            let e = token(&bulk(bad), "redisson_lock_token:{c}").unwrap_err();
            assert!(
                matches!(e, lock_core::LockError::WrongType { ref key } if key == "redisson_lock_token:{c}"),
                "{bad:?}: {e:?}"
            );
        }
        assert!(token(&Value::BulkString(vec![0xff]), "c")
            .unwrap_err()
            .is_wrong_type());
        assert!(matches!(
            token(&Value::Int(3), "c").unwrap_err(),
            lock_core::LockError::Protocol { .. }
        ));
    }

    #[test]
    fn inspect_replies() {
        let free = Value::Array(vec![Value::Array(vec![]), Value::Int(-2)]);
        assert_eq!(inspect(&free).unwrap(), LockInfo::default());
        let held = Value::Array(vec![
            Value::Array(vec![bulk("u:1"), bulk("2")]),
            Value::Int(900),
        ]);
        let info = inspect(&held).unwrap();
        assert_eq!(info.holders, vec![Holder::new("u:1", 2)]);
        assert_eq!(info.ttl, Some(Duration::from_millis(900)));
        let persistent = Value::Array(vec![
            Value::Array(vec![bulk("u:1"), bulk("1")]),
            Value::Int(-1),
        ]);
        assert_eq!(inspect(&persistent).unwrap().ttl, None);
        let odd = Value::Array(vec![Value::Array(vec![bulk("u:1")]), Value::Int(-1)]);
        assert!(inspect(&odd).is_err());
        // Redisson's read-write lock: `mode` is not a count, and skipped.
        let rw = Value::Array(vec![
            Value::Array(vec![
                bulk("mode"),
                bulk("write"),
                bulk("u:1:write"),
                bulk("1"),
            ]),
            Value::Int(700),
        ]);
        let info = inspect(&rw).unwrap();
        assert_eq!(info.holders, vec![Holder::new("u:1:write", 1)]);
        assert_eq!(info.ttl, Some(Duration::from_millis(700)));
        let only_mode = Value::Array(vec![
            Value::Array(vec![bulk("mode"), bulk("read")]),
            Value::Int(700),
        ]);
        assert_eq!(inspect(&only_mode).unwrap(), LockInfo::default());
    }
}
