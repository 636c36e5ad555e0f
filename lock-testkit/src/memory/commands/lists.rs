//! List commands: LINDEX LPOS LPOP RPUSH LPUSH LREM LRANGE LLEN.

use super::{int_arg, Ctx, Failure, Outcome};
use crate::memory::reply::ScriptReply;

/// Redis looks the key up before it parses the index.
pub(super) fn lindex(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Outcome {
    let Some(list) = cx.keys.list_at(&args[1], false)? else {
        return Ok(ScriptReply::Nil);
    };
    let index = int_arg(&args[2])?;
    let len = i64::try_from(list.len()).unwrap_or(i64::MAX);
    let index = if index < 0 { len + index } else { index };
    let item = usize::try_from(index).ok().and_then(|i| list.get(i));
    Ok(ScriptReply::bulk_or_nil(item))
}

/// `LPOS key element [RANK rank] [COUNT num] [MAXLEN len]`: the index of
/// the `rank`-th match (from the tail when negative), or with `COUNT` an
/// array of up to `num` indexes (all when 0), looking at `len` elements at
/// most. Options are checked before the key, as Redis does.
pub(super) fn lpos(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Outcome {
    let (mut rank, mut count, mut maxlen) = (1i64, None::<i64>, 0i64);
    let mut options = args[3..].chunks(2);
    for pair in options.by_ref() {
        let [name, value] = pair else {
            return Err(Failure::syntax());
        };
        let value = int_arg(value)?;
        match name.to_ascii_lowercase().as_slice() {
            b"rank" if value == 0 => {
                return Err(Failure::new(
                    "ERR RANK can't be zero: use 1 to start from the first match, \
                     2 from the second ... or use negative to start from the end of the list",
                ))
            }
            b"rank" => rank = value,
            b"count" if value < 0 => return Err(Failure::new("ERR COUNT can't be negative")),
            b"count" => count = Some(value),
            b"maxlen" if value < 0 => return Err(Failure::new("ERR MAXLEN can't be negative")),
            b"maxlen" => maxlen = value,
            _ => return Err(Failure::syntax()),
        }
    }
    let list = cx.keys.list_at(&args[1], false)?;
    let len = list.as_ref().map_or(0, |l| l.len());
    let scan = if maxlen == 0 {
        len
    } else {
        len.min(usize::try_from(maxlen).unwrap_or(usize::MAX))
    };
    let wanted = match count {
        None => 1,
        Some(0) => usize::MAX,
        Some(n) => usize::try_from(n).unwrap_or(usize::MAX),
    };
    let mut found = Vec::new();
    if let Some(list) = list {
        let mut skip = rank.unsigned_abs() - 1;
        let indexes: Box<dyn Iterator<Item = usize>> = if rank > 0 {
            Box::new(0..scan)
        } else {
            Box::new((len - scan..len).rev())
        };
        for i in indexes {
            if list.get(i) == Some(&args[2]) {
                if skip > 0 {
                    skip -= 1;
                    continue;
                }
                found.push(i);
                if found.len() >= wanted {
                    break;
                }
            }
        }
    }
    let index = |i: usize| ScriptReply::Int(i64::try_from(i).unwrap_or(i64::MAX));
    Ok(match count {
        Some(_) => ScriptReply::Array(found.into_iter().map(index).collect()),
        None => found.first().copied().map_or(ScriptReply::Nil, index),
    })
}

/// `LPOP key [count]`: one element (or nil), or with a count an array of
/// up to `count` (nil when the key is missing).
pub(super) fn lpop(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Outcome {
    if args.len() > 3 {
        return Err(Failure::arity("lpop"));
    }
    let count = match args.get(2) {
        None => None,
        Some(arg) => {
            let n = super::number::parse_int(arg).and_then(|n| usize::try_from(n).ok());
            Some(n.ok_or_else(|| Failure::new("ERR value is out of range, must be positive"))?)
        }
    };
    let Some(list) = cx.keys.list_at(&args[1], false)? else {
        return Ok(ScriptReply::Nil);
    };
    let reply = match count {
        None => ScriptReply::bulk_or_nil(list.pop_front()),
        Some(n) => {
            let n = n.min(list.len());
            ScriptReply::Array(list.drain(..n).map(ScriptReply::Bulk).collect())
        }
    };
    cx.keys.drop_if_empty(&args[1]);
    Ok(reply)
}

fn push(cx: &mut Ctx<'_>, args: &[Vec<u8>], front: bool) -> Outcome {
    let list = cx
        .keys
        .list_at(&args[1], true)?
        .ok_or_else(Failure::syntax)?;
    for value in &args[2..] {
        if front {
            list.push_front(value.clone());
        } else {
            list.push_back(value.clone());
        }
    }
    Ok(ScriptReply::count(list.len()))
}

pub(super) fn rpush(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Outcome {
    push(cx, args, false)
}

pub(super) fn lpush(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Outcome {
    push(cx, args, true)
}

/// `LREM key count value`: count > 0 from the head, < 0 from the tail, 0
/// all of them.
pub(super) fn lrem(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Outcome {
    let count = int_arg(&args[2])?;
    let Some(list) = cx.keys.list_at(&args[1], false)? else {
        return Ok(ScriptReply::Int(0));
    };
    let limit = if count == 0 {
        usize::MAX
    } else {
        usize::try_from(count.unsigned_abs()).unwrap_or(usize::MAX)
    };
    let matching: Vec<usize> = list
        .iter()
        .enumerate()
        .filter(|(_, v)| *v == &args[3])
        .map(|(i, _)| i)
        .collect();
    let doomed: Vec<usize> = if count < 0 {
        matching.into_iter().rev().take(limit).collect()
    } else {
        matching.into_iter().take(limit).collect()
    };
    let mut index = 0;
    list.retain(|_| {
        let keep = !doomed.contains(&index);
        index += 1;
        keep
    });
    cx.keys.drop_if_empty(&args[1]);
    Ok(ScriptReply::count(doomed.len()))
}

/// The inclusive index range `[start, stop]` of a sequence of `len`
/// elements, negative indexes counting from the end, as Redis clamps it.
pub(super) fn clamp_range(start: i64, stop: i64, len: usize) -> Option<(usize, usize)> {
    let len = i64::try_from(len).unwrap_or(i64::MAX);
    let start = if start < 0 {
        (len + start).max(0)
    } else {
        start
    };
    let stop = if stop < 0 { len + stop } else { stop };
    if start > stop || start >= len {
        return None;
    }
    let stop = stop.min(len - 1);
    Some((usize::try_from(start).ok()?, usize::try_from(stop).ok()?))
}

pub(super) fn lrange(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Outcome {
    let (start, stop) = (int_arg(&args[2])?, int_arg(&args[3])?);
    let Some(list) = cx.keys.list_at(&args[1], false)? else {
        return Ok(ScriptReply::Array(Vec::new()));
    };
    let items = match clamp_range(start, stop, list.len()) {
        None => Vec::new(),
        Some((start, stop)) => list
            .range(start..=stop)
            .map(|v| ScriptReply::Bulk(v.clone()))
            .collect(),
    };
    Ok(ScriptReply::Array(items))
}

pub(super) fn llen(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Outcome {
    let list = cx.keys.list_at(&args[1], false)?;
    Ok(ScriptReply::count(list.map_or(0, |l| l.len())))
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use crate::memory::reply::ScriptReply;

    #[test]
    fn push_pop_index() {
        let mut b = Bench::default();
        assert_eq!(b.run("RPUSH q a b"), int(2));
        assert_eq!(b.run("LPUSH q z y"), int(4));
        assert_eq!(b.run("LRANGE q 0 -1"), array(&["y", "z", "a", "b"]));
        assert_eq!(b.run("LINDEX q 0"), bulk("y"));
        assert_eq!(b.run("LINDEX q -1"), bulk("b"));
        assert_eq!(b.run("LINDEX q 9"), ScriptReply::Nil);
        assert_eq!(
            b.run("LINDEX nope x"),
            ScriptReply::Nil,
            "key first, then index"
        );
        assert_eq!(
            b.run("LINDEX q x"),
            err("ERR value is not an integer or out of range")
        );
        assert_eq!(b.run("LLEN q"), int(4));
        assert_eq!(b.run("LPOP q"), bulk("y"));
        assert_eq!(b.run("LPOP q 0"), array(&[]));
        assert_eq!(b.run("LPOP q 2"), array(&["z", "a"]));
        assert_eq!(b.run("LPOP q 5"), array(&["b"]));
        assert_eq!(b.run("EXISTS q"), int(0));
        assert_eq!(b.run("LPOP q"), ScriptReply::Nil);
        assert_eq!(b.run("LPOP q 2"), ScriptReply::Nil);
        assert_eq!(
            b.run("LPOP q -1"),
            err("ERR value is out of range, must be positive")
        );
        assert_eq!(
            b.run("LPOP q x"),
            err("ERR value is out of range, must be positive"),
            "any bad count gets this text"
        );
    }

    #[test]
    fn ranges_clamp() {
        let mut b = Bench::default();
        b.run("RPUSH q a b c d");
        assert_eq!(b.run("LRANGE q 1 2"), array(&["b", "c"]));
        assert_eq!(b.run("LRANGE q -2 100"), array(&["c", "d"]));
        assert_eq!(b.run("LRANGE q -100 0"), array(&["a"]));
        assert_eq!(b.run("LRANGE q 3 1"), array(&[]));
        assert_eq!(b.run("LRANGE q 4 9"), array(&[]));
        assert_eq!(b.run("LRANGE nope 0 -1"), array(&[]));
        assert_eq!(
            b.run("LRANGE nope a 1"),
            err("ERR value is not an integer or out of range")
        );
    }

    #[test]
    fn lrem_directions() {
        let mut b = Bench::default();
        b.run("RPUSH q x a x b x");
        assert_eq!(b.run("LREM q 1 x"), int(1));
        assert_eq!(b.run("LRANGE q 0 -1"), array(&["a", "x", "b", "x"]));
        assert_eq!(b.run("LREM q -1 x"), int(1));
        assert_eq!(b.run("LRANGE q 0 -1"), array(&["a", "x", "b"]));
        assert_eq!(b.run("LREM q 0 x"), int(1));
        assert_eq!(b.run("LREM q 0 a"), int(1));
        assert_eq!(b.run("LREM q 0 b"), int(1));
        assert_eq!(b.run("EXISTS q"), int(0));
        assert_eq!(b.run("LREM q 0 b"), int(0));
    }

    #[test]
    fn wrong_type() {
        let mut b = Bench::default();
        b.run("SET s v");
        for cmd in [
            "LINDEX s 0",
            "LPOP s",
            "RPUSH s a",
            "LPUSH s a",
            "LREM s 0 a",
            "LRANGE s 0 1",
            "LLEN s",
        ] {
            assert_eq!(b.run(cmd), err(WRONGTYPE), "{cmd}");
        }
    }

    #[test]
    fn lpos_finds_matches() {
        let mut b = Bench::default();
        assert_eq!(b.run("RPUSH q y z a b a"), int(5));
        assert_eq!(b.run("LPOS q a"), int(2));
        assert_eq!(b.run("LPOS q nope"), ScriptReply::Nil);
        assert_eq!(b.run("LPOS nokey a"), ScriptReply::Nil);
        assert_eq!(b.run("LPOS q a RANK 2"), int(4));
        assert_eq!(b.run("LPOS q a RANK -1"), int(4));
        assert_eq!(b.run("LPOS q a RANK -2"), int(2));
        assert_eq!(
            b.run("LPOS q a COUNT 0"),
            ScriptReply::Array(vec![int(2), int(4)])
        );
        assert_eq!(
            b.run("LPOS q a COUNT 1 MAXLEN 3"),
            ScriptReply::Array(vec![int(2)])
        );
        assert_eq!(b.run("LPOS q a MAXLEN 2"), ScriptReply::Nil);
        assert_eq!(b.run("LPOS nokey a COUNT 2"), ScriptReply::Array(vec![]));
        assert!(matches!(b.run("LPOS q a RANK 0"), ScriptReply::Error(_)));
        assert_eq!(
            b.run("LPOS q a COUNT -1"),
            err("ERR COUNT can't be negative")
        );
        assert_eq!(b.run("LPOS q a BOGUS 1"), err("ERR syntax error"));
    }
}
