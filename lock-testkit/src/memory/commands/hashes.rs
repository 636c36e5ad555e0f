//! Hash commands: HGET HSET HSETNX HDEL HEXISTS HINCRBY HGETALL HLEN HKEYS
//! HVALS. Values are byte strings; HINCRBY reads them as Redis integers.

use super::{int_arg, number, Ctx, Failure, Outcome};
use crate::memory::reply::ScriptReply;

pub(super) fn hget(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Outcome {
    let hash = cx.keys.hash_at(&args[1], false)?;
    Ok(ScriptReply::bulk_or_nil(hash.and_then(|h| h.get(&args[2]))))
}

/// `HSET key field value [field value ...]`: how many fields are new.
pub(super) fn hset(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Outcome {
    if args.len() % 2 == 1 {
        return Err(Failure::arity("hset"));
    }
    let hash = cx
        .keys
        .hash_at(&args[1], true)?
        .ok_or_else(Failure::syntax)?;
    let added = args[2..]
        .chunks_exact(2)
        .filter(|pair| hash.insert(&pair[0], pair[1].clone()))
        .count();
    Ok(ScriptReply::count(added))
}

pub(super) fn hsetnx(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Outcome {
    let hash = cx
        .keys
        .hash_at(&args[1], true)?
        .ok_or_else(Failure::syntax)?;
    if hash.get(&args[2]).is_some() {
        return Ok(ScriptReply::Int(0));
    }
    hash.insert(&args[2], args[3].clone());
    Ok(ScriptReply::Int(1))
}

pub(super) fn hdel(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Outcome {
    let Some(hash) = cx.keys.hash_at(&args[1], false)? else {
        return Ok(ScriptReply::Int(0));
    };
    let removed = args[2..].iter().filter(|f| hash.remove(f)).count();
    cx.keys.drop_if_empty(&args[1]);
    Ok(ScriptReply::count(removed))
}

pub(super) fn hexists(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Outcome {
    let hash = cx.keys.hash_at(&args[1], false)?;
    let found = hash.is_some_and(|h| h.get(&args[2]).is_some());
    Ok(ScriptReply::Int(i64::from(found)))
}

pub(super) fn hincrby(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Outcome {
    let by = int_arg(&args[3])?;
    let hash = cx
        .keys
        .hash_at(&args[1], true)?
        .ok_or_else(Failure::syntax)?;
    let old = match hash.get(&args[2]) {
        None => 0,
        Some(v) => {
            number::parse_int(v).ok_or_else(|| Failure::new("ERR hash value is not an integer"))?
        }
    };
    let new = old
        .checked_add(by)
        .ok_or_else(|| Failure::new("ERR increment or decrement would overflow"))?;
    hash.insert(&args[2], new.to_string().into_bytes());
    Ok(ScriptReply::Int(new))
}

/// The fields and/or values of the hash at `key`, in its order.
fn listing(cx: &mut Ctx<'_>, key: &[u8], fields: bool, values: bool) -> Outcome {
    let mut items = Vec::new();
    if let Some(hash) = cx.keys.hash_at(key, false)? {
        for (f, v) in hash.iter() {
            if fields {
                items.push(ScriptReply::bulk(f));
            }
            if values {
                items.push(ScriptReply::bulk(v));
            }
        }
    }
    Ok(ScriptReply::Array(items))
}

pub(super) fn hgetall(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Outcome {
    listing(cx, &args[1], true, true)
}

pub(super) fn hkeys(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Outcome {
    listing(cx, &args[1], true, false)
}

pub(super) fn hvals(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Outcome {
    listing(cx, &args[1], false, true)
}

pub(super) fn hlen(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Outcome {
    let hash = cx.keys.hash_at(&args[1], false)?;
    Ok(ScriptReply::count(hash.map_or(0, |h| h.len())))
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use crate::memory::reply::ScriptReply;

    #[test]
    fn set_get_delete() {
        let mut b = Bench::default();
        assert_eq!(b.run("HSET h mode write f 1"), int(2));
        assert_eq!(b.run("HSET h mode read g 2"), int(1));
        assert_eq!(b.run("HGET h mode"), bulk("read"));
        assert_eq!(b.run("HGET h nope"), ScriptReply::Nil);
        assert_eq!(b.run("HGET nope f"), ScriptReply::Nil);
        assert_eq!(b.run("HSETNX h mode x"), int(0));
        assert_eq!(b.run("HSETNX h new x"), int(1));
        assert_eq!(b.run("HEXISTS h new"), int(1));
        assert_eq!(b.run("HEXISTS h old"), int(0));
        assert_eq!(b.run("HLEN h"), int(4));
        assert_eq!(b.run("HKEYS h"), array(&["mode", "f", "g", "new"]));
        assert_eq!(b.run("HVALS h"), array(&["read", "1", "2", "x"]));
        assert_eq!(b.run("HDEL h f g nope"), int(2));
        assert_eq!(b.run("HGETALL h"), array(&["mode", "read", "new", "x"]));
        assert_eq!(b.run("HDEL h mode new"), int(2));
        assert_eq!(b.run("EXISTS h"), int(0), "an empty hash is deleted");
        assert_eq!(b.run("HGETALL h"), array(&[]));
        assert_eq!(
            b.run("HSET h f v g"),
            err("ERR wrong number of arguments for 'hset' command")
        );
    }

    #[test]
    fn hincrby() {
        let mut b = Bench::default();
        assert_eq!(b.run("HINCRBY h f 1"), int(1));
        assert_eq!(b.run("HINCRBY h f -3"), int(-2));
        assert_eq!(b.run("HGET h f"), bulk("-2"));
        b.run("HSET h s write");
        assert_eq!(
            b.run("HINCRBY h s 1"),
            err("ERR hash value is not an integer")
        );
        assert_eq!(
            b.run("HINCRBY h f x"),
            err("ERR value is not an integer or out of range")
        );
        b.run("HSET h m 9223372036854775807");
        assert_eq!(
            b.run("HINCRBY h m 1"),
            err("ERR increment or decrement would overflow")
        );
    }

    #[test]
    fn wrong_type() {
        let mut b = Bench::default();
        b.run("SET s v");
        for cmd in [
            "HGET s f",
            "HSET s f v",
            "HSETNX s f v",
            "HDEL s f",
            "HEXISTS s f",
            "HINCRBY s f 1",
            "HGETALL s",
            "HLEN s",
            "HKEYS s",
            "HVALS s",
        ] {
            assert_eq!(b.run(cmd), err(WRONGTYPE), "{cmd}");
        }
        assert_eq!(b.run("GET s"), bulk("v"));
    }
}
