//! Server commands: TIME, PUBLISH and SPUBLISH (collected for the caller to
//! deliver), PING, ECHO.

use super::{Ctx, Outcome, Published};
use crate::memory::reply::ScriptReply;

/// `[seconds, microseconds]` of the server clock, as bulk strings.
pub(super) fn time(cx: &mut Ctx<'_>, _args: &[Vec<u8>]) -> Outcome {
    let (secs, micros) = (
        cx.now_us.div_euclid(1_000_000),
        cx.now_us.rem_euclid(1_000_000),
    );
    Ok(ScriptReply::Array(vec![
        ScriptReply::bulk(secs.to_string()),
        ScriptReply::bulk(micros.to_string()),
    ]))
}

fn publish_generic(cx: &mut Ctx<'_>, args: &[Vec<u8>], sharded: bool) -> Outcome {
    let message = Published {
        channel: args[1].clone(),
        message: args[2].clone(),
        sharded,
    };
    let receivers = (cx.receivers)(&message);
    cx.published.push(message);
    Ok(ScriptReply::Int(receivers))
}

pub(super) fn publish(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Outcome {
    publish_generic(cx, args, false)
}

pub(super) fn spublish(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Outcome {
    publish_generic(cx, args, true)
}

pub(super) fn ping(_cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Outcome {
    match args.len() {
        1 => Ok(ScriptReply::Status("PONG".to_owned())),
        2 => Ok(ScriptReply::bulk(&args[1])),
        _ => Err(super::Failure::arity("ping")),
    }
}

pub(super) fn echo(_cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Outcome {
    Ok(ScriptReply::bulk(&args[1]))
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::super::Published;
    use crate::memory::reply::ScriptReply;

    #[test]
    fn time_is_the_server_clock() {
        let mut b = Bench::default();
        assert_eq!(b.run("TIME"), array(&["1700000000", "123456"]));
    }

    #[test]
    fn publish_is_collected() {
        let mut b = Bench::default();
        assert_eq!(b.run("PUBLISH ch 0"), int(2));
        assert_eq!(b.run("SPUBLISH sh 1"), int(2));
        assert_eq!(
            b.published,
            vec![
                Published {
                    channel: b"ch".to_vec(),
                    message: b"0".to_vec(),
                    sharded: false
                },
                Published {
                    channel: b"sh".to_vec(),
                    message: b"1".to_vec(),
                    sharded: true
                },
            ]
        );
    }

    #[test]
    fn ping_echo() {
        let mut b = Bench::default();
        assert_eq!(b.run("PING"), ScriptReply::Status("PONG".into()));
        assert_eq!(b.run("PING hi"), bulk("hi"));
        assert_eq!(b.run("ECHO hi"), bulk("hi"));
        assert_eq!(
            b.run("PING a b"),
            err("ERR wrong number of arguments for 'ping' command")
        );
    }
}
