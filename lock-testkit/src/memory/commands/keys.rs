//! Commands on any key: DEL EXISTS TYPE, and expiry (PEXPIRE PEXPIREAT
//! EXPIRE EXPIREAT PTTL TTL PERSIST).

use super::{int_arg, is_opt, Ctx, Failure, Outcome};
use crate::memory::reply::ScriptReply;

pub(super) fn del(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Outcome {
    let removed = args[1..].iter().filter(|k| cx.keys.remove_key(k)).count();
    Ok(ScriptReply::count(removed))
}

/// Counts a key named twice twice, as Redis does.
pub(super) fn exists(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Outcome {
    let found = args[1..]
        .iter()
        .filter(|k| cx.keys.value(k).is_some())
        .count();
    Ok(ScriptReply::count(found))
}

pub(super) fn type_(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Outcome {
    Ok(ScriptReply::Status(cx.keys.kind_of(&args[1]).to_owned()))
}

pub(super) fn pexpire(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Outcome {
    expire_generic(cx, args, "pexpire", 1, false)
}

pub(super) fn pexpireat(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Outcome {
    expire_generic(cx, args, "pexpireat", 1, true)
}

pub(super) fn expire(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Outcome {
    expire_generic(cx, args, "expire", 1000, false)
}

pub(super) fn expireat(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Outcome {
    expire_generic(cx, args, "expireat", 1000, true)
}

/// `[P]EXPIRE[AT] key time [NX|XX|GT|LT]`, Redis 7.0's
/// `expireGenericCommand`: a time at or before now deletes the key.
fn expire_generic(
    cx: &mut Ctx<'_>,
    args: &[Vec<u8>],
    name: &str,
    per_unit: i64,
    absolute: bool,
) -> Outcome {
    let (mut nx, mut xx, mut gt, mut lt) = (false, false, false, false);
    for opt in &args[3..] {
        if is_opt(opt, "nx") {
            nx = true;
        } else if is_opt(opt, "xx") {
            xx = true;
        } else if is_opt(opt, "gt") {
            gt = true;
        } else if is_opt(opt, "lt") {
            lt = true;
        } else {
            return Err(Failure(format!(
                "ERR Unsupported option {}",
                String::from_utf8_lossy(opt)
            )));
        }
    }
    if nx && (xx || gt || lt) {
        return Err(Failure::new(
            "ERR NX and XX, GT or LT options at the same time are not compatible",
        ));
    }
    if gt && lt {
        return Err(Failure::new(
            "ERR GT and LT options at the same time are not compatible",
        ));
    }
    let invalid = || Failure(format!("ERR invalid expire time in '{name}' command"));
    let base = if absolute { 0 } else { cx.now_ms() };
    let when = int_arg(&args[2])?
        .checked_mul(per_unit)
        .ok_or_else(invalid)?
        .checked_add(base)
        .ok_or_else(invalid)?;
    let key = &args[1];
    let Some(current) = cx.keys.expiry(key) else {
        return Ok(ScriptReply::Int(0));
    };
    let current = current.map(|at| cx.epoch_ms(at));
    let refused = (nx && current.is_some())
        || (xx && current.is_none())
        || (gt && current.is_none_or(|c| when <= c))
        || (lt && current.is_some_and(|c| when >= c));
    if refused {
        return Ok(ScriptReply::Int(0));
    }
    if when <= cx.now_ms() {
        cx.keys.remove_key(key);
    } else {
        let at = cx.deadline(when);
        cx.keys.set_expiry(key, Some(at));
    }
    Ok(ScriptReply::Int(1))
}

pub(super) fn pttl(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Outcome {
    Ok(ScriptReply::Int(cx.pttl(&args[1])))
}

/// Seconds, rounded to the nearest, as Redis rounds them.
pub(super) fn ttl(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Outcome {
    let ms = cx.pttl(&args[1]);
    let seconds = if ms < 0 {
        ms
    } else {
        ms.saturating_add(500) / 1000
    };
    Ok(ScriptReply::Int(seconds))
}

pub(super) fn persist(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Outcome {
    let had_expiry = cx.keys.expiry(&args[1]).flatten().is_some();
    if had_expiry {
        cx.keys.set_expiry(&args[1], None);
    }
    Ok(ScriptReply::Int(i64::from(had_expiry)))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::testing::*;
    use crate::memory::reply::ScriptReply;

    #[tokio::test(start_paused = true)]
    async fn del_exists_type() {
        let mut b = Bench::default();
        b.run("SET a 1");
        b.run("HSET h f v");
        b.run("RPUSH l x");
        b.run("ZADD z 1 m");
        assert_eq!(b.run("EXISTS a a h nope"), int(3));
        assert_eq!(b.run("TYPE a"), ScriptReply::Status("string".into()));
        assert_eq!(b.run("TYPE h"), ScriptReply::Status("hash".into()));
        assert_eq!(b.run("TYPE l"), ScriptReply::Status("list".into()));
        assert_eq!(b.run("TYPE z"), ScriptReply::Status("zset".into()));
        assert_eq!(b.run("TYPE nope"), ScriptReply::Status("none".into()));
        assert_eq!(b.run("DEL a h nope"), int(2));
        assert_eq!(b.run("EXISTS a"), int(0));
    }

    #[tokio::test(start_paused = true)]
    async fn expiry() {
        let mut b = Bench::default();
        assert_eq!(b.run("PEXPIRE k 100"), int(0));
        assert_eq!(b.run("PTTL k"), int(-2));
        assert_eq!(b.run("TTL k"), int(-2));
        b.run("SET k v");
        assert_eq!(b.run("PTTL k"), int(-1));
        assert_eq!(b.run("PERSIST k"), int(0));
        assert_eq!(b.run("PEXPIRE k 1500"), int(1));
        assert_eq!(b.run("TTL k"), int(2), "1.5 s rounds to 2");
        assert_eq!(b.run("EXPIRE k 3"), int(1));
        assert_eq!(b.run("PTTL k"), int(3000));
        let at = b.now_us / 1000 + 700;
        assert_eq!(b.run(&format!("PEXPIREAT k {at}")), int(1));
        assert_eq!(b.run("PTTL k"), int(700));
        let at = b.now_us / 1_000_000 + 10;
        assert_eq!(b.run(&format!("EXPIREAT k {at}")), int(1));
        assert_eq!(b.run("PERSIST k"), int(1));
        assert_eq!(b.run("PTTL k"), int(-1));
        assert_eq!(b.run("PEXPIRE k 0"), int(1), "a past time deletes");
        assert_eq!(b.run("EXISTS k"), int(0));
        b.run("SET k v PX 20");
        tokio::time::advance(Duration::from_millis(20)).await;
        assert_eq!(b.run("PTTL k"), int(-2));
    }

    #[tokio::test(start_paused = true)]
    async fn expiry_options_and_errors() {
        let mut b = Bench::default();
        b.run("SET k v");
        assert_eq!(b.run("PEXPIRE k 100 XX"), int(0));
        assert_eq!(
            b.run("PEXPIRE k 100 GT"),
            int(0),
            "no expiry counts as infinite"
        );
        assert_eq!(b.run("PEXPIRE k 100 NX"), int(1));
        assert_eq!(b.run("PEXPIRE k 200 NX"), int(0));
        assert_eq!(b.run("PEXPIRE k 50 GT"), int(0));
        assert_eq!(b.run("PEXPIRE k 200 GT"), int(1));
        assert_eq!(b.run("PEXPIRE k 300 LT"), int(0));
        assert_eq!(b.run("PEXPIRE k 150 LT"), int(1));
        assert_eq!(b.run("PTTL k"), int(150));
        assert_eq!(
            b.run("PEXPIRE k x"),
            err("ERR value is not an integer or out of range")
        );
        assert_eq!(b.run("PEXPIRE k 1 YY"), err("ERR Unsupported option YY"));
        assert_eq!(
            b.run("PEXPIRE k 1 NX XX"),
            err("ERR NX and XX, GT or LT options at the same time are not compatible")
        );
        assert_eq!(
            b.run("PEXPIRE k 1 GT LT"),
            err("ERR GT and LT options at the same time are not compatible")
        );
        assert_eq!(
            b.run("EXPIRE k 9223372036854775807"),
            err("ERR invalid expire time in 'expire' command")
        );
        assert_eq!(
            b.run("PEXPIRE k 9223372036854775807"),
            err("ERR invalid expire time in 'pexpire' command")
        );
        assert_eq!(
            b.run("EXPIRE k -9223372036854775808"),
            err("ERR invalid expire time in 'expire' command")
        );
    }

    #[tokio::test(start_paused = true)]
    async fn the_farthest_deadline_redis_takes() {
        let mut b = Bench::default();
        b.run("SET k v");
        assert_eq!(b.run("PEXPIREAT k 9223372036854775807"), int(1));
        let ms = i64::MAX - b.now_us / 1000;
        assert_eq!(b.run("PTTL k"), int(ms));
        assert_eq!(b.run("TTL k"), int((ms + 500) / 1000));
        assert_eq!(b.run("SET k v PXAT 9223372036854775807"), ScriptReply::ok());
        assert_eq!(b.run("EXISTS k"), int(1));
    }
}
