//! Sorted-set commands: ZSCORE ZADD ZREM ZRANGE ZRANGEBYSCORE ZINCRBY ZCARD
//! ZCOUNT ZREMRANGEBYSCORE. Scores are doubles, written as `%.17g`.

use super::lists::clamp_range;
use super::number::{format_double, ScoreRange};
use super::{float_arg, int_arg, is_opt, Ctx, Failure, Outcome};
use crate::memory::keyspace::ZSet;
use crate::memory::reply::ScriptReply;

fn score_reply(score: f64) -> ScriptReply {
    ScriptReply::bulk(format_double(score))
}

fn range_arg(min: &[u8], max: &[u8]) -> Result<ScoreRange, Failure> {
    ScoreRange::parse(min, max).ok_or_else(|| Failure::new("ERR min or max is not a float"))
}

pub(super) fn zscore(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Outcome {
    let zset = cx.keys.zset_at(&args[1], false)?;
    let score = zset.and_then(|z| z.score(&args[2]));
    Ok(score.map_or(ScriptReply::Nil, score_reply))
}

/// ZADD's flags.
#[derive(Default)]
struct AddFlags {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
    ch: bool,
    incr: bool,
}

/// `ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member ...]`.
pub(super) fn zadd(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Outcome {
    let mut f = AddFlags::default();
    let mut i = 2;
    while let Some(opt) = args.get(i) {
        let flag = match () {
            () if is_opt(opt, "nx") => &mut f.nx,
            () if is_opt(opt, "xx") => &mut f.xx,
            () if is_opt(opt, "gt") => &mut f.gt,
            () if is_opt(opt, "lt") => &mut f.lt,
            () if is_opt(opt, "ch") => &mut f.ch,
            () if is_opt(opt, "incr") => &mut f.incr,
            () => break,
        };
        *flag = true;
        i += 1;
    }
    let pairs = &args[i..];
    if pairs.is_empty() || pairs.len() % 2 == 1 {
        return Err(Failure::syntax());
    }
    if f.nx && f.xx {
        return Err(Failure::new(
            "ERR XX and NX options at the same time are not compatible",
        ));
    }
    if (f.nx && (f.gt || f.lt)) || (f.gt && f.lt) {
        return Err(Failure::new(
            "ERR GT, LT, and/or NX options at the same time are not compatible",
        ));
    }
    if f.incr && pairs.len() > 2 {
        return Err(Failure::new(
            "ERR INCR option supports a single increment-element pair",
        ));
    }
    let scores = pairs
        .chunks_exact(2)
        .map(|p| float_arg(&p[0]))
        .collect::<Result<Vec<f64>, Failure>>()?;
    let (mut added, mut updated, mut processed, mut last) = (0, 0, 0, 0.0);
    if cx.keys.value(&args[1]).is_some() || !f.xx {
        let zset = cx
            .keys
            .zset_at(&args[1], true)?
            .ok_or_else(Failure::syntax)?;
        for (pair, &score) in pairs.chunks_exact(2).zip(&scores) {
            match add_one(zset, &pair[1], score, &f)? {
                Added::New(s) => {
                    added += 1;
                    processed += 1;
                    last = s;
                }
                Added::Changed(s) => {
                    updated += 1;
                    processed += 1;
                    last = s;
                }
                Added::Same(s) => {
                    processed += 1;
                    last = s;
                }
                Added::Nothing => {}
            }
        }
        cx.keys.drop_if_empty(&args[1]);
    }
    Ok(if f.incr {
        if processed > 0 {
            score_reply(last)
        } else {
            ScriptReply::Nil
        }
    } else {
        ScriptReply::count(if f.ch { added + updated } else { added })
    })
}

/// What one score/member pair of ZADD did.
enum Added {
    New(f64),
    Changed(f64),
    Same(f64),
    Nothing,
}

/// Redis's `zsetAdd` for one member.
fn add_one(zset: &mut ZSet, member: &[u8], score: f64, f: &AddFlags) -> Result<Added, Failure> {
    match zset.score(member) {
        Some(current) => {
            if f.nx {
                return Ok(Added::Nothing);
            }
            let score = if f.incr { current + score } else { score };
            if score.is_nan() {
                return Err(Failure::new("ERR resulting score is not a number (NaN)"));
            }
            if (f.lt && score >= current) || (f.gt && score <= current) {
                return Ok(Added::Nothing);
            }
            if score == current {
                return Ok(Added::Same(score));
            }
            zset.insert(member, score);
            Ok(Added::Changed(score))
        }
        None if f.xx => Ok(Added::Nothing),
        None => {
            zset.insert(member, score);
            Ok(Added::New(score))
        }
    }
}

pub(super) fn zincrby(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Outcome {
    let by = float_arg(&args[2])?;
    let zset = cx
        .keys
        .zset_at(&args[1], true)?
        .ok_or_else(Failure::syntax)?;
    let flags = AddFlags {
        incr: true,
        ..AddFlags::default()
    };
    let outcome = add_one(zset, &args[3], by, &flags);
    cx.keys.drop_if_empty(&args[1]);
    match outcome? {
        Added::New(s) | Added::Changed(s) | Added::Same(s) => Ok(score_reply(s)),
        Added::Nothing => Ok(ScriptReply::Nil),
    }
}

pub(super) fn zrem(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Outcome {
    let Some(zset) = cx.keys.zset_at(&args[1], false)? else {
        return Ok(ScriptReply::Int(0));
    };
    let removed = args[2..].iter().filter(|m| zset.remove(m)).count();
    cx.keys.drop_if_empty(&args[1]);
    Ok(ScriptReply::count(removed))
}

pub(super) fn zcard(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Outcome {
    let zset = cx.keys.zset_at(&args[1], false)?;
    Ok(ScriptReply::count(zset.map_or(0, |z| z.len())))
}

pub(super) fn zcount(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Outcome {
    let range = range_arg(&args[2], &args[3])?;
    let zset = cx.keys.zset_at(&args[1], false)?;
    let n = zset.map_or(0, |z| z.iter().filter(|(_, s)| range.contains(*s)).count());
    Ok(ScriptReply::count(n))
}

pub(super) fn zremrangebyscore(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Outcome {
    let range = range_arg(&args[2], &args[3])?;
    let Some(zset) = cx.keys.zset_at(&args[1], false)? else {
        return Ok(ScriptReply::Int(0));
    };
    let doomed: Vec<Vec<u8>> = zset
        .iter()
        .filter(|(_, s)| range.contains(*s))
        .map(|(m, _)| m.to_vec())
        .collect();
    for member in &doomed {
        zset.remove(member);
    }
    cx.keys.drop_if_empty(&args[1]);
    Ok(ScriptReply::count(doomed.len()))
}

/// How a ZRANGE selects.
#[derive(PartialEq)]
enum By {
    Rank,
    Score,
}

/// `ZRANGE key start stop [BYSCORE] [REV] [LIMIT offset count]
/// [WITHSCORES]` (BYLEX is not modelled).
pub(super) fn zrange(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Outcome {
    range_generic(cx, args, None)
}

/// `ZRANGEBYSCORE key min max [WITHSCORES] [LIMIT offset count]`.
pub(super) fn zrangebyscore(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Outcome {
    range_generic(cx, args, Some(By::Score))
}

/// Redis 7.0's `zrangeGenericCommand`: options in any order, then the
/// range, then the key.
fn range_generic(cx: &mut Ctx<'_>, args: &[Vec<u8>], preset: Option<By>) -> Outcome {
    let fixed = preset.is_some();
    let mut by = preset;
    let (mut rev, mut withscores) = (false, false);
    let (mut offset, mut limit) = (0i64, -1i64);
    let mut i = 4;
    while let Some(opt) = args.get(i) {
        if is_opt(opt, "withscores") {
            withscores = true;
        } else if is_opt(opt, "limit") && args.len() - i > 2 {
            offset = int_arg(&args[i + 1])?;
            limit = int_arg(&args[i + 2])?;
            i += 2;
        } else if !fixed && !rev && is_opt(opt, "rev") {
            rev = true;
        } else if by.is_none() && is_opt(opt, "byscore") {
            by = Some(By::Score);
        } else {
            return Err(Failure::syntax());
        }
        i += 1;
    }
    let by = by.unwrap_or(By::Rank);
    if limit != -1 && by == By::Rank {
        return Err(Failure::new(
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        ));
    }
    let (lo, hi) = if rev && by == By::Score {
        (&args[3], &args[2])
    } else {
        (&args[2], &args[3])
    };
    let selection = match by {
        By::Rank => Selection::Rank(int_arg(lo)?, int_arg(hi)?),
        By::Score => Selection::Score(range_arg(lo, hi)?),
    };
    let Some(zset) = cx.keys.zset_at(&args[1], false)? else {
        return Ok(ScriptReply::Array(Vec::new()));
    };
    let ordered: Vec<(&[u8], f64)> = if rev {
        zset.iter().rev().collect()
    } else {
        zset.iter().collect()
    };
    let chosen: Vec<(&[u8], f64)> = match selection {
        Selection::Rank(start, stop) => match clamp_range(start, stop, ordered.len()) {
            None => Vec::new(),
            Some((start, stop)) => ordered[start..=stop].to_vec(),
        },
        Selection::Score(range) => {
            let matching = ordered.into_iter().filter(|(_, s)| range.contains(*s));
            // A negative offset skips everything, a negative count takes
            // everything, as Redis's loops over them do.
            match usize::try_from(offset) {
                Err(_) => Vec::new(),
                Ok(skip) => match usize::try_from(limit) {
                    Ok(take) => matching.skip(skip).take(take).collect(),
                    Err(_) => matching.skip(skip).collect(),
                },
            }
        }
    };
    let mut items = Vec::with_capacity(chosen.len() * 2);
    for (member, score) in chosen {
        items.push(ScriptReply::bulk(member));
        if withscores {
            items.push(score_reply(score));
        }
    }
    Ok(ScriptReply::Array(items))
}

enum Selection {
    Rank(i64, i64),
    Score(ScoreRange),
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use crate::memory::reply::ScriptReply;

    #[test]
    fn add_score_remove() {
        let mut b = Bench::default();
        assert_eq!(b.run("ZADD z 1 a 2 b"), int(2));
        assert_eq!(b.run("ZADD z 3 a 2 c"), int(1));
        assert_eq!(b.run("ZSCORE z a"), bulk("3"));
        assert_eq!(b.run("ZSCORE z nope"), ScriptReply::Nil);
        assert_eq!(b.run("ZADD z 0.1 d"), int(1));
        assert_eq!(b.run("ZSCORE z d"), bulk("0.10000000000000001"));
        assert_eq!(b.run("ZADD z CH 5 a 2 b 9 e"), int(2));
        assert_eq!(b.run("ZADD z NX 7 a 8 f"), int(1));
        assert_eq!(b.run("ZADD z XX 7 a 8 g"), int(0));
        assert_eq!(b.run("ZADD z GT CH 1 a"), int(0));
        assert_eq!(b.run("ZADD z LT CH 1 a"), int(1));
        assert_eq!(b.run("ZADD z INCR 2 a"), bulk("3"));
        assert_eq!(b.run("ZADD z NX INCR 2 a"), ScriptReply::Nil);
        assert_eq!(b.run("ZADD nope XX 1 a"), int(0));
        assert_eq!(b.run("EXISTS nope"), int(0));
        assert_eq!(b.run("ZCARD z"), int(6));
        assert_eq!(b.run("ZREM z a b nope"), int(2));
        assert_eq!(b.run("ZCARD z"), int(4));
        assert_eq!(b.run("ZREM z c d e f"), int(4));
        assert_eq!(b.run("ZREM z g"), int(0));
        assert_eq!(b.run("EXISTS z"), int(0));
    }

    #[test]
    fn zadd_errors() {
        let mut b = Bench::default();
        assert_eq!(b.run("ZADD z 1 a 2"), err("ERR syntax error"));
        assert_eq!(b.run("ZADD z x a"), err("ERR value is not a valid float"));
        assert_eq!(b.run("ZADD z nan a"), err("ERR value is not a valid float"));
        assert_eq!(
            b.run("ZADD z NX XX 1 a"),
            err("ERR XX and NX options at the same time are not compatible")
        );
        assert_eq!(
            b.run("ZADD z GT LT 1 a"),
            err("ERR GT, LT, and/or NX options at the same time are not compatible")
        );
        assert_eq!(
            b.run("ZADD z INCR 1 a 2 b"),
            err("ERR INCR option supports a single increment-element pair")
        );
        assert_eq!(b.run("EXISTS z"), int(0), "nothing was written");
    }

    #[test]
    fn zincrby() {
        let mut b = Bench::default();
        assert_eq!(b.run("ZINCRBY z 1.5 a"), bulk("1.5"));
        assert_eq!(b.run("ZINCRBY z -3 a"), bulk("-1.5"));
        assert_eq!(b.run("ZINCRBY z inf a"), bulk("inf"));
        assert_eq!(
            b.run("ZINCRBY z -inf a"),
            err("ERR resulting score is not a number (NaN)")
        );
        assert_eq!(
            b.run("ZINCRBY z x a"),
            err("ERR value is not a valid float")
        );
    }

    #[test]
    fn ranges() {
        let mut b = Bench::default();
        b.run("ZADD z 1 a 2 b 3 c 4 d");
        assert_eq!(b.run("ZRANGE z 0 -1"), array(&["a", "b", "c", "d"]));
        assert_eq!(b.run("ZRANGE z 0 0 WITHSCORES"), array(&["a", "1"]));
        assert_eq!(b.run("ZRANGE z 0 1 REV"), array(&["d", "c"]));
        assert_eq!(b.run("ZRANGE z (1 3 BYSCORE"), array(&["b", "c"]));
        assert_eq!(b.run("ZRANGE z 3 (1 BYSCORE REV"), array(&["c", "b"]));
        assert_eq!(
            b.run("ZRANGE z -inf +inf BYSCORE LIMIT 1 2"),
            array(&["b", "c"])
        );
        assert_eq!(
            b.run("ZRANGE z 0 -1 LIMIT 0 -1"),
            array(&["a", "b", "c", "d"])
        );
        assert_eq!(
            b.run("ZRANGE z 0 -1 LIMIT 0 1"),
            err("ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX")
        );
        assert_eq!(b.run("ZRANGEBYSCORE z 2 +inf"), array(&["b", "c", "d"]));
        assert_eq!(
            b.run("ZRANGEBYSCORE z 0 10 WITHSCORES LIMIT 1 1"),
            array(&["b", "2"])
        );
        assert_eq!(b.run("ZRANGEBYSCORE z 0 10 LIMIT -1 1"), array(&[]));
        assert_eq!(b.run("ZRANGEBYSCORE z 0 10 LIMIT 3 -1"), array(&["d"]));
        assert_eq!(b.run("ZRANGEBYSCORE z 0 10 REV"), err("ERR syntax error"));
        assert_eq!(
            b.run("ZRANGEBYSCORE z x 10"),
            err("ERR min or max is not a float")
        );
        assert_eq!(b.run("ZRANGEBYSCORE nope 0 1"), array(&[]));
        assert_eq!(b.run("ZCOUNT z (1 3"), int(2));
        assert_eq!(b.run("ZCOUNT z 0 +inf"), int(4));
        assert_eq!(b.run("ZREMRANGEBYSCORE z 2 3"), int(2));
        assert_eq!(b.run("ZRANGE z 0 -1"), array(&["a", "d"]));
        assert_eq!(b.run("ZREMRANGEBYSCORE z -inf +inf"), int(2));
        assert_eq!(b.run("EXISTS z"), int(0));
    }

    #[test]
    fn wrong_type() {
        let mut b = Bench::default();
        b.run("SET s v");
        for cmd in [
            "ZSCORE s m",
            "ZADD s 1 m",
            "ZREM s m",
            "ZRANGE s 0 1",
            "ZRANGEBYSCORE s 0 1",
            "ZINCRBY s 1 m",
            "ZCARD s",
            "ZCOUNT s 0 1",
            "ZREMRANGEBYSCORE s 0 1",
        ] {
            assert_eq!(b.run(cmd), err(WRONGTYPE), "{cmd}");
        }
    }
}
