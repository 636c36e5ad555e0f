//! The Redis commands the client needs, and the connect-time check that
//! the server knows them.
//!
//! Hosted Redis often disables or renames commands (`rename-command
//! EVALSHA ""`). A client that connects anyway fails at its first lock, or
//! worse, at its first unlock, with an "unknown command" error far from
//! its cause. So a connect (not a lazy one) asks the server once, with
//! `COMMAND INFO <every command needed>`: a command the server does not
//! know comes back nil, and the connect fails with
//! [`LockError::Unsupported`] naming each missing command and what needs
//! it. Commands called inside the scripts count too: a renamed command is
//! as unknown to `redis.call` as to a client.
//!
//! `COMMAND INFO` says what the server knows, not what the user may run:
//! commands an ACL forbids are found by the script loads that come first
//! (a refused `SCRIPT LOAD`) or by the first call
//! ([`LockError::Unauthorized`]).
//! When `COMMAND` itself is forbidden, unknown or answered oddly (a proxy
//! in front of Redis), the check is skipped (logged at debug): that says
//! nothing about the other commands.
//!
//! The table below is the one `docs/commands.md` shows; a test keeps both
//! in step with the commands the Lua scripts call.

use lock_core::{LockError, Result};
use redis::{RedisError, Value};

/// One command the client needs, and what needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Needed {
    /// The command's name, upper case (`EVALSHA`).
    pub command: &'static str,
    /// What needs it, for the error that names it missing.
    pub by: &'static str,
}

const fn needed(command: &'static str, by: &'static str) -> Needed {
    Needed { command, by }
}

const EVERY_KIND: &str = "every kind";
const LOCKS: &str = "the lock kinds' shared script helpers and renewal";
const FAIR: &str = "the fair lock";
const RWLOCK: &str = "the read-write lock";
const SEMAPHORES: &str = "the semaphores";
const PERMITS: &str = "the expirable-permit semaphore";

/// The commands every deployment needs to run scripts and keep its
/// pub/sub connections alive.
pub const TRANSPORT: &[Needed] = &[
    needed("EVALSHA", "every kind (scripts run by SHA1)"),
    needed("SCRIPT", "loading the scripts (SCRIPT LOAD)"),
    needed("PING", "the pub/sub connection's health check"),
];

/// Unlock notices over classic pub/sub: one server, a Sentinel group's
/// master, a cluster before Redis 7.
pub const PUBSUB: &[Needed] = &[
    needed("PUBLISH", "unlock notices, published by the scripts"),
    needed("SUBSCRIBE", "waiters hearing unlock notices"),
    needed("UNSUBSCRIBE", "waiters hearing unlock notices"),
];

/// Unlock notices over sharded pub/sub (a cluster on Redis 7+).
pub const SHARDED_PUBSUB: &[Needed] = &[
    needed("SPUBLISH", "unlock notices, published by the scripts"),
    needed("SSUBSCRIBE", "waiters hearing unlock notices"),
    needed("SUNSUBSCRIBE", "waiters hearing unlock notices"),
];

/// What a cluster adds: reading the slot map.
pub const CLUSTER: Needed = needed("CLUSTER", "the slot map (CLUSTER SLOTS)");

/// What replica sync adds ([`crate::ConnectionOptions::replica_sync`]).
pub const REPLICA_SYNC: Needed = needed("WAIT", "replica sync");

/// The commands the kinds' Lua scripts call, by what calls them.
pub const SCRIPTS: &[Needed] = &[
    needed("DECR", "the latch"),
    needed("DECRBY", SEMAPHORES),
    needed("DEL", EVERY_KIND),
    needed("EXISTS", "the fair and read-write locks"),
    needed("GET", EVERY_KIND),
    needed("HDEL", "the fair and read-write locks"),
    needed("HEXISTS", LOCKS),
    needed("HGET", LOCKS),
    needed("HGETALL", "the reentrant and fair locks"),
    needed("HINCRBY", LOCKS),
    needed("HKEYS", RWLOCK),
    needed("HLEN", RWLOCK),
    needed("HSET", "the fair and read-write locks"),
    needed("INCR", LOCKS),
    needed("INCRBY", SEMAPHORES),
    needed("LINDEX", FAIR),
    needed("LPOP", FAIR),
    needed("LPOS", FAIR),
    needed("LRANGE", FAIR),
    needed("LREM", FAIR),
    needed("PEXPIRE", LOCKS),
    needed("PTTL", EVERY_KIND),
    needed("RPUSH", FAIR),
    needed("SET", EVERY_KIND),
    needed("TIME", LOCKS),
    needed("TYPE", EVERY_KIND),
    needed("ZADD", LOCKS),
    needed(
        "ZCARD",
        "the read-write lock and the expirable-permit semaphore",
    ),
    needed("ZCOUNT", PERMITS),
    needed("ZRANGE", PERMITS),
    needed(
        "ZRANGEBYSCORE",
        "the read-write lock and the expirable-permit semaphore",
    ),
    needed("ZREM", LOCKS),
    needed("ZREMRANGEBYSCORE", RWLOCK),
    needed("ZSCORE", "the fair lock and the expirable-permit semaphore"),
];

/// What a single server (or a Sentinel group's master) is checked for:
/// the transport's commands, the scripts', and `WAIT` with replica sync.
pub fn single_node(replica_sync: bool) -> Vec<Needed> {
    let mut all: Vec<Needed> = TRANSPORT
        .iter()
        .chain(PUBSUB)
        .chain(SCRIPTS)
        .copied()
        .collect();
    if replica_sync {
        all.push(REPLICA_SYNC);
    }
    all
}

/// What each master of a cluster is checked for: as [`single_node`], with
/// the slot map's command, and sharded pub/sub's commands when `sharded`.
pub fn cluster(sharded: bool, replica_sync: bool) -> Vec<Needed> {
    let pubsub = if sharded { SHARDED_PUBSUB } else { PUBSUB };
    let mut all: Vec<Needed> = TRANSPORT
        .iter()
        .chain(pubsub)
        .chain(SCRIPTS)
        .copied()
        .collect();
    all.push(CLUSTER);
    if replica_sync {
        all.push(REPLICA_SYNC);
    }
    all
}

/// `COMMAND INFO` for every command of `needed`: one round trip.
pub fn command_info(needed: &[Needed]) -> redis::Cmd {
    let mut cmd = redis::cmd("COMMAND");
    cmd.arg("INFO");
    for need in needed {
        cmd.arg(need.command);
    }
    cmd
}

/// Judges the reply to [`command_info`] of `needed`, from `server` (named
/// in the error).
///
/// # Errors
/// [`LockError::Unsupported`] naming every command of `needed` the reply
/// says the server does not know. `Ok` when the server refused `COMMAND`
/// itself (forbidden by ACL, renamed, unknown, unsupported by a proxy:
/// any `ERR` or `NOPERM` reply) or answered it with anything but one
/// entry per command: the check is skipped. Any other error (the
/// connection's, `LOADING`, …) is returned as is, for the caller to map.
pub fn judge(
    needed: &[Needed],
    reply: std::result::Result<Value, RedisError>,
    server: &str,
) -> std::result::Result<Result<()>, RedisError> {
    let entries = match reply {
        Ok(Value::Array(entries)) if entries.len() == needed.len() => entries,
        // A proxy in front of Redis may answer `COMMAND` its own way:
        // that says nothing about the commands behind it.
        Ok(other) => {
            tracing::debug!(reply = ?other, "COMMAND INFO answered oddly: the commands the client needs are not checked");
            return Ok(Ok(()));
        }
        Err(e) if is_refused_command(&e) => {
            tracing::debug!(error = %e, "COMMAND INFO refused: the commands the client needs are not checked");
            return Ok(Ok(()));
        }
        Err(e) => return Err(e),
    };
    let missing: Vec<String> = needed
        .iter()
        .zip(&entries)
        .filter(|(_, entry)| matches!(entry, Value::Nil))
        .map(|(need, _)| format!("{} ({})", need.command, need.by))
        .collect();
    if missing.is_empty() {
        return Ok(Ok(()));
    }
    Ok(Err(LockError::Unsupported {
        message: format!(
            "{server} does not know {} (disabled or renamed with rename-command?)",
            missing.join(", ")
        ),
    }))
}

/// Whether `err` says the server will not run `COMMAND` itself: an ACL
/// refusal, or an unknown command (renamed or disabled).
fn is_refused_command(err: &RedisError) -> bool {
    matches!(err.code(), Some("NOPERM" | "ERR"))
}

/// Whether `err` is the server saying it does not know the command sent.
pub(crate) fn is_unknown_command(err: &RedisError) -> bool {
    err.code() == Some("ERR")
        && err
            .detail()
            .unwrap_or_default()
            .to_ascii_lowercase()
            .contains("unknown command")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server_error(code: &str, detail: &str) -> RedisError {
        redis::make_extension_error(code.to_owned(), Some(detail.to_owned()))
    }

    #[test]
    fn nil_entries_are_named_with_what_needs_them() {
        let needed = [TRANSPORT[0], SCRIPTS[0], TRANSPORT[1]];
        let reply = Value::Array(vec![Value::Nil, Value::Array(vec![]), Value::Nil]);
        let e = judge(&needed, Ok(reply), "Redis at h:1")
            .unwrap()
            .unwrap_err();
        assert!(e.is_unsupported() && !e.is_retryable(), "{e:?}");
        let message = e.to_string();
        assert!(message.contains("Redis at h:1"), "{message}");
        assert!(message.contains("EVALSHA (every kind"), "{message}");
        assert!(message.contains("SCRIPT (loading"), "{message}");
        assert!(!message.contains("DECR"), "{message}");
    }

    #[test]
    fn a_known_set_passes_and_odd_replies_skip_the_check() {
        let needed = [TRANSPORT[0]];
        let known = Value::Array(vec![Value::Array(vec![])]);
        assert!(judge(&needed, Ok(known), "s").unwrap().is_ok());
        let short = judge(&needed, Ok(Value::Array(vec![])), "s").unwrap();
        assert!(short.is_ok());
        let odd = judge(&needed, Ok(Value::Okay), "s").unwrap();
        assert!(odd.is_ok());
    }

    #[test]
    fn replica_sync_adds_wait() {
        assert!(!single_node(false).contains(&REPLICA_SYNC));
        assert!(single_node(true).contains(&REPLICA_SYNC));
        assert!(cluster(false, true).contains(&REPLICA_SYNC));
        let sharded = cluster(true, false);
        assert!(sharded.contains(&CLUSTER) && sharded.contains(&SHARDED_PUBSUB[0]));
        assert!(!sharded.contains(&PUBSUB[0]) && !single_node(false).contains(&CLUSTER));
        let cmd = command_info(&[TRANSPORT[0], REPLICA_SYNC]);
        let packed = String::from_utf8_lossy(&cmd.get_packed_command()).into_owned();
        assert!(packed.contains("INFO") && packed.contains("EVALSHA") && packed.contains("WAIT"));
    }

    #[test]
    fn a_refused_or_unknown_command_skips_the_check() {
        let needed = [TRANSPORT[0]];
        for (code, detail) in [
            (
                "NOPERM",
                "User app has no permissions to run the 'command|info' command",
            ),
            (
                "ERR",
                "unknown command 'COMMAND', with args beginning with: 'INFO'",
            ),
            ("ERR", "unsupported command 'command'"),
        ] {
            let reply = Err(server_error(code, detail));
            assert!(
                judge(&needed, reply, "s").unwrap().is_ok(),
                "{code} {detail}"
            );
        }
        // Any other error is the caller's.
        let other = Err(server_error("LOADING", "Redis is loading the dataset"));
        assert!(judge(&needed, other, "s").is_err());
    }
}
