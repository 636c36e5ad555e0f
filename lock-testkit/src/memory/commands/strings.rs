//! String commands: GET SET INCR INCRBY DECR DECRBY MGET.

use super::{int_arg, is_opt, number, Ctx, Failure, Outcome};
use crate::memory::keyspace::Value;
use crate::memory::reply::ScriptReply;

pub(super) fn get(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Outcome {
    Ok(ScriptReply::bulk_or_nil(cx.keys.string_at(&args[1])?))
}

pub(super) fn mget(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Outcome {
    let values = args[1..]
        .iter()
        .map(|key| ScriptReply::bulk_or_nil(cx.keys.string_at(key).ok().flatten()))
        .collect();
    Ok(ScriptReply::Array(values))
}

/// `SET key value [NX|XX] [GET] [EX s|PX ms|EXAT s|PXAT ms|KEEPTTL]`.
///
/// As in Redis, repeating an option is allowed (the last expiry wins) but
/// mixing NX with XX, or KEEPTTL or two different expiry units, is a syntax
/// error, and the expiry value is parsed only after all options.
pub(super) fn set(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Outcome {
    let (mut nx, mut xx, mut get, mut keep) = (false, false, false, false);
    let mut expire: Option<(&str, &[u8])> = None;
    let mut i = 3;
    while i < args.len() {
        let opt = &args[i];
        let unit = EXPIRE_UNITS.iter().find(|u| is_opt(opt, u));
        if is_opt(opt, "nx") && !xx {
            nx = true;
        } else if is_opt(opt, "xx") && !nx {
            xx = true;
        } else if is_opt(opt, "get") {
            get = true;
        } else if is_opt(opt, "keepttl") && expire.is_none() {
            keep = true;
        } else if let (Some(unit), Some(value)) = (unit, args.get(i + 1)) {
            if keep || expire.is_some_and(|(given, _)| given != *unit) {
                return Err(Failure::syntax());
            }
            expire = Some((unit, value));
            i += 1;
        } else {
            return Err(Failure::syntax());
        }
        i += 1;
    }
    let expire_at = match expire {
        Some((unit, value)) => Some(expire_at(cx, unit, value)?),
        None => None,
    };
    let old = if get {
        Some(ScriptReply::bulk_or_nil(cx.keys.string_at(&args[1])?))
    } else {
        None
    };
    let found = cx.keys.value(&args[1]).is_some();
    if (nx && found) || (xx && !found) {
        return Ok(old.unwrap_or(ScriptReply::Nil));
    }
    let expires_at = match expire_at {
        Some(ms) => Some(cx.deadline(ms)),
        None if keep => cx.keys.expiry(&args[1]).flatten(),
        None => None,
    };
    cx.keys
        .put(&args[1], Value::Str(args[2].clone()), expires_at);
    Ok(old.unwrap_or_else(ScriptReply::ok))
}

const EXPIRE_UNITS: [&str; 4] = ["ex", "px", "exat", "pxat"];

/// A `SET` expiry argument as an absolute time in epoch milliseconds.
fn expire_at(cx: &Ctx<'_>, unit: &str, value: &[u8]) -> Result<i64, Failure> {
    let invalid = || Failure::new("ERR invalid expire time in 'set' command");
    let n = int_arg(value)?;
    if n <= 0 {
        return Err(invalid());
    }
    let per_unit = if unit.starts_with('e') { 1000 } else { 1 };
    let ms = n.checked_mul(per_unit).ok_or_else(invalid)?;
    if unit.ends_with("at") {
        Ok(ms)
    } else {
        ms.checked_add(cx.now_ms()).ok_or_else(invalid)
    }
}

/// Adds `by` to the integer at `key` (0 when missing), keeping its expiry.
fn add(cx: &mut Ctx<'_>, key: &[u8], by: i64) -> Outcome {
    let new = match cx.keys.string_at(key)? {
        None => by,
        Some(s) => {
            let old = number::parse_int(s).ok_or_else(Failure::not_integer)?;
            old.checked_add(by)
                .ok_or_else(|| Failure::new("ERR increment or decrement would overflow"))?
        }
    };
    let text = new.to_string().into_bytes();
    match cx.keys.string_at(key)? {
        Some(s) => *s = text,
        None => cx.keys.put(key, Value::Str(text), None),
    }
    Ok(ScriptReply::Int(new))
}

pub(super) fn incr(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Outcome {
    add(cx, &args[1], 1)
}

pub(super) fn decr(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Outcome {
    add(cx, &args[1], -1)
}

pub(super) fn incrby(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Outcome {
    let by = int_arg(&args[2])?;
    add(cx, &args[1], by)
}

pub(super) fn decrby(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Outcome {
    let by = int_arg(&args[2])?;
    let by = by
        .checked_neg()
        .ok_or_else(|| Failure::new("ERR decrement would overflow"))?;
    add(cx, &args[1], by)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::testing::*;
    use crate::memory::reply::ScriptReply;

    #[test]
    fn get_and_set() {
        let mut b = Bench::default();
        assert_eq!(b.run("GET k"), ScriptReply::Nil);
        assert_eq!(b.run("SET k v"), ScriptReply::ok());
        assert_eq!(b.run("GET k"), bulk("v"));
        assert_eq!(b.run("SET k w NX"), ScriptReply::Nil);
        assert_eq!(b.run("SET j w XX"), ScriptReply::Nil);
        assert_eq!(
            b.run("SET k x NX GET"),
            bulk("v"),
            "GET answers even when NX aborts"
        );
        assert_eq!(b.run("SET k w XX GET"), bulk("v"));
        assert_eq!(
            b.run("MGET k j"),
            ScriptReply::Array(vec![bulk("w"), ScriptReply::Nil])
        );
        assert_eq!(b.run("SET k v NX XX"), err("ERR syntax error"));
        assert_eq!(b.run("SET k v PX"), err("ERR syntax error"));
        assert_eq!(b.run("SET k v PX 1 EX 1"), err("ERR syntax error"));
        assert_eq!(
            b.run("SET k v PX x PX 5"),
            ScriptReply::ok(),
            "the last one counts"
        );
        assert_eq!(b.run("SET k v PX 1 KEEPTTL"), err("ERR syntax error"));
        assert_eq!(
            b.run("SET k v PX x"),
            err("ERR value is not an integer or out of range")
        );
        assert_eq!(
            b.run("SET k v PX 0"),
            err("ERR invalid expire time in 'set' command")
        );
        b.run("HSET h f v");
        assert_eq!(b.run("GET h"), err(WRONGTYPE));
        assert_eq!(b.run("SET h v GET"), err(WRONGTYPE));
        assert_eq!(b.run("MGET h"), ScriptReply::Array(vec![ScriptReply::Nil]));
        assert_eq!(b.run("SET h v"), ScriptReply::ok());
    }

    #[tokio::test(start_paused = true)]
    async fn set_expiry_options() {
        let mut b = Bench::default();
        b.run("SET k v PX 100");
        assert_eq!(b.run("PTTL k"), int(100));
        b.run("SET k v KEEPTTL");
        assert_eq!(b.run("PTTL k"), int(100));
        b.run("SET k v EX 2");
        assert_eq!(b.run("PTTL k"), int(2000));
        let at = b.now_us / 1000 + 300;
        b.run(&format!("SET k v PXAT {at}"));
        assert_eq!(b.run("PTTL k"), int(300));
        b.run("SET k v");
        assert_eq!(b.run("PTTL k"), int(-1));
        b.run("SET k v PX 10");
        tokio::time::advance(Duration::from_millis(10)).await;
        assert_eq!(b.run("GET k"), ScriptReply::Nil);
    }

    #[tokio::test(start_paused = true)]
    async fn counters() {
        let mut b = Bench::default();
        assert_eq!(b.run("INCR c"), int(1));
        assert_eq!(b.run("INCRBY c 10"), int(11));
        assert_eq!(b.run("DECR c"), int(10));
        assert_eq!(b.run("DECRBY c -5"), int(15));
        assert_eq!(b.run("GET c"), bulk("15"));
        b.run("PEXPIRE c 50");
        b.run("INCR c");
        assert_eq!(b.run("PTTL c"), int(50), "INCR keeps the expiry");
        assert_eq!(
            b.run("INCRBY c x"),
            err("ERR value is not an integer or out of range")
        );
        b.run("SET s abc");
        assert_eq!(
            b.run("INCR s"),
            err("ERR value is not an integer or out of range")
        );
        b.run("SET s 01");
        assert_eq!(
            b.run("INCR s"),
            err("ERR value is not an integer or out of range")
        );
        b.run("SET m 9223372036854775807");
        assert_eq!(
            b.run("INCR m"),
            err("ERR increment or decrement would overflow")
        );
        assert_eq!(
            b.run("DECRBY m -9223372036854775808"),
            err("ERR decrement would overflow")
        );
        b.run("HSET h f 1");
        assert_eq!(b.run("INCR h"), err(WRONGTYPE));
        assert_eq!(
            b.run("INCRBY h x"),
            err("ERR value is not an integer or out of range")
        );
    }
}
