//! Replica sync by the replicas connected now: Redisson's
//! `checkLockSyncedSlaves` rule, the default
//! ([`ReplicaSync::connected`](crate::ReplicaSync::connected)).
//!
//! An acquisition waits (`WAIT n timeout`, pipelined after its script on a
//! connection of its own, see [`ConnectionSet::get_for_wait`]) for the `n`
//! replicas its master has connected, and fails only when none of them
//! acknowledged while at least one is connected. A master without replicas
//! is sent no `WAIT` at all.
//!
//! # Knowing `n` without a round trip
//! Each [`ConnectionSet`] (one server; a cluster keeps one per master)
//! remembers how many replicas its server said it had, for
//! [`REPLICAS_FRESH_FOR`](crate::transport::REPLICAS_FRESH_FOR). An
//! acquisition that finds no fresh count sends `INFO replication` in one
//! pipeline with its script (no round trip of its own) when the server had
//! replicas, then sends its `WAIT`; a server that had none (or was never
//! asked: a new client, a new master after a failover) is asked first, with
//! `INFO replication` alone on an ordinary connection (one round trip, about
//! once a second per master), so a master without replicas never gets a
//! `WAIT` nor a connection for one, and the first acquisition is checked
//! like any other (see [`Plan`]). As in Redisson, a
//! `WAIT` acknowledged by another number of replicas than it named (one
//! stopped, one joined) makes the next acquisition ask again.
//!
//! # Servers that refuse `INFO` or `WAIT`
//! A user whose ACL forbids `INFO` or `WAIT` (`NOPERM`), or a server that
//! renamed them away, gets what the server allows: the master counts as
//! having no replicas (a warning is logged the first time), and acquisitions work without the check. Asking
//! for replicas explicitly (`replica_sync(n, timeout)`) makes `WAIT` a
//! requirement instead, checked at connect.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use redis::aio::ConnectionLike;
use redis::{Pipeline, RedisError, RedisResult, Value};

use crate::transport::connections::ConnectionSet;
use crate::transport::scripts;
use lock_script::ScriptCall;

/// What an acquisition with the connected-replicas rule got: its script's
/// reply, and how many replicas acknowledged of how many are connected.
#[derive(Debug)]
pub struct Synced {
    /// The script's reply.
    pub value: Value,
    /// Replicas that acknowledged the script's writes in time.
    pub acked: u32,
    /// Replicas connected to the master (as it said last).
    pub connected: u32,
    /// What the connection set should remember afterwards.
    update: Update,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Update {
    /// The count it used is still right.
    Keep,
    /// The server said (or, refusing `INFO`/`WAIT`, implied) this count.
    Learn(u32),
    /// `WAIT` saw another number of replicas than it named: ask again.
    Forget,
}

impl Synced {
    /// Tells `set` what this call learned about its server's replicas.
    pub fn record(&self, set: &ConnectionSet) {
        match self.update {
            Update::Keep => {}
            Update::Learn(count) => set.learn_replicas(count),
            Update::Forget => set.forget_replicas(),
        }
    }
}

/// What an acquisition with the connected-replicas rule sends, decided
/// from what its [`ConnectionSet`] knows of the server's replicas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plan {
    /// Known (recently) to have none: the script alone.
    Alone,
    /// Known (recently) to have `n`: the script and `WAIT n`.
    Wait(u32),
    /// Had `n > 0` a while ago: `INFO replication` and the script, then
    /// `WAIT` for as many as it says.
    AskThenWait,
    /// Had none, or never asked: [`resolve`] asks first (`INFO
    /// replication` alone, on an ordinary connection: a server without
    /// replicas never gets a `WAIT` connection, and a replica that has just
    /// connected is waited for at once).
    Ask,
}

impl Plan {
    /// The plan for `set` now.
    pub fn for_set(set: &ConnectionSet) -> Self {
        match set.known_replicas() {
            (Some(0), true) => Self::Alone,
            (Some(n), true) => Self::Wait(n),
            (Some(n), false) if n > 0 => Self::AskThenWait,
            _ => Self::Ask,
        }
    }

    /// Whether it sends `WAIT`: it then needs a `WAIT` connection
    /// ([`ConnectionSet::get_for_wait`]) and the replica timeout on top of
    /// the command timeout.
    pub fn waits(self) -> bool {
        matches!(self, Self::Wait(_) | Self::AskThenWait | Self::Ask)
    }
}

/// The plan for `set`, asking the server first (one `INFO replication`
/// round trip on an ordinary connection, by `deadline`) when it must be
/// asked and has had no replicas: [`Plan::Alone`] or [`Plan::Wait`], or
/// [`Plan::AskThenWait`] when asking failed (the acquisition then asks in
/// its own pipeline, and waits if it must).
///
/// # Cancel safety
/// Safe to drop: `INFO` changes nothing.
pub async fn resolve(set: &ConnectionSet, deadline: tokio::time::Instant) -> Plan {
    let plan = Plan::for_set(set);
    if plan != Plan::Ask {
        return plan;
    }
    let Ok(mut lease) = set.get(deadline).await else {
        return Plan::AskThenWait;
    };
    let asked = tokio::time::timeout_at(
        deadline,
        redis::cmd("INFO")
            .arg("replication")
            .query_async::<Value>(lease.conn()),
    )
    .await;
    match asked {
        Ok(Ok(info)) => set.learn_replicas(connected_replicas(&info)),
        Ok(Err(e)) if e.code().is_some() && !e.is_unrecoverable_error() => {
            // An error reply (NOPERM, unknown command): the server will not
            // tell, so it counts as having no replicas.
            refused("INFO replication", &e);
            set.learn_replicas(0);
        }
        Ok(Err(e)) => {
            set.report(&lease, &e);
            return Plan::AskThenWait;
        }
        Err(_) => {
            set.report_no_reply(&lease);
            return Plan::AskThenWait;
        }
    }
    match Plan::for_set(set) {
        Plan::Ask => Plan::AskThenWait,
        plan => plan,
    }
}

/// Runs `call` on `conn` with the connected-replicas rule, as `plan` says
/// (see [`Plan`]; `conn` must be a `WAIT` connection when it
/// [waits](Plan::waits); [`Plan::Ask`], which [`resolve`] never gives, is
/// taken as [`Plan::AskThenWait`]). On `NOSCRIPT` the script is loaded and the call
/// made once more. Call [`Synced::record`] with the set of `conn`
/// afterwards.
///
/// # Errors
/// The connection's error, the script's error reply. A refused `INFO` or
/// `WAIT` is no error (see the module docs).
///
/// # Cancel safety
/// Dropping the future may leave the script run or not; the reply is lost.
pub async fn eval_synced<C: ConnectionLike + Send>(
    conn: &mut C,
    call: &ScriptCall<'_>,
    plan: Plan,
    timeout: Duration,
) -> RedisResult<Synced> {
    match plan {
        Plan::Alone => Ok(Synced {
            value: scripts::eval(conn, call).await?,
            acked: 0,
            connected: 0,
            update: Update::Keep,
        }),
        Plan::Wait(connected) => {
            let mut pipe = Pipeline::new();
            pipe.ignore_errors();
            pipe.add_command(call.to_cmd());
            pipe.add_command(wait_cmd(connected, timeout));
            let mut replies = run(conn, &pipe).await?;
            if matches!(replies.first(), Some(Err(e)) if scripts::is_noscript(e)) {
                scripts::load_for(conn, call).await?;
                replies = run(conn, &pipe).await?;
            }
            let mut replies = replies.into_iter();
            let value = next(&mut replies)??;
            Ok(waited(value, connected, next(&mut replies)?, Update::Keep))
        }
        Plan::AskThenWait | Plan::Ask => {
            let mut pipe = Pipeline::new();
            pipe.ignore_errors();
            pipe.cmd("INFO").arg("replication");
            pipe.add_command(call.to_cmd());
            let mut replies = run(conn, &pipe).await?.into_iter();
            let info = next(&mut replies)?;
            let value = match next(&mut replies)? {
                Err(e) if scripts::is_noscript(&e) => {
                    scripts::load_for(conn, call).await?;
                    scripts::eval(conn, call).await?
                }
                other => other?,
            };
            let connected = match info {
                Ok(info) => connected_replicas(&info),
                Err(e) => {
                    refused("INFO replication", &e);
                    0
                }
            };
            if connected == 0 {
                return Ok(Synced {
                    value,
                    acked: 0,
                    connected: 0,
                    update: Update::Learn(connected),
                });
            }
            let wait = wait_cmd(connected, timeout).query_async::<u32>(conn).await;
            Ok(waited(value, connected, wait, Update::Learn(connected)))
        }
    }
}

/// The outcome of a `WAIT connected …` that answered `wait`.
fn waited(value: Value, connected: u32, wait: RedisResult<u32>, update: Update) -> Synced {
    match wait {
        Ok(acked) => Synced {
            value,
            acked,
            connected,
            update: if acked == connected {
                update
            } else {
                Update::Forget
            },
        },
        Err(e) => {
            // Refused (NOPERM, renamed): the server does not let us wait.
            // A broken connection would have failed the pipeline instead.
            refused("WAIT", &e);
            Synced {
                value,
                acked: 0,
                connected: 0,
                update: Update::Learn(0),
            }
        }
    }
}

fn wait_cmd(replicas: u32, timeout: Duration) -> redis::Cmd {
    let mut cmd = redis::cmd("WAIT");
    cmd.arg(replicas).arg(
        u64::try_from(timeout.as_millis())
            .unwrap_or(u64::MAX)
            .max(1),
    );
    cmd
}

async fn run<C: ConnectionLike + Send>(
    conn: &mut C,
    pipe: &Pipeline,
) -> RedisResult<Vec<RedisResult<Value>>> {
    pipe.query_async(conn).await
}

/// The next reply of a pipeline, typed (`WAIT`'s integer) or not.
fn next<T: redis::FromRedisValue>(
    replies: &mut impl Iterator<Item = RedisResult<Value>>,
) -> RedisResult<RedisResult<T>> {
    let reply = replies.next().ok_or_else(|| {
        RedisError::from((
            redis::ErrorKind::UnexpectedReturnType,
            "fewer replies than commands in a pipeline",
        ))
    })?;
    Ok(reply.and_then(|value| redis::from_redis_value(value).map_err(RedisError::from)))
}

/// Logs a refused `INFO` or `WAIT`: a warning the first time in the
/// process, then at debug level (the count is asked again every
/// [`REPLICAS_FRESH_FOR`](crate::transport::REPLICAS_FRESH_FOR), and a
/// warning a second would drown the log).
fn refused(command: &str, err: &RedisError) {
    static WARNED: AtomicBool = AtomicBool::new(false);
    if WARNED.swap(true, Ordering::Relaxed) {
        tracing::debug!(command, error = %err, "replica sync: the server refused the command");
    } else {
        tracing::warn!(
            command,
            error = %err,
            "replica sync: the server refused the command; acquisitions are not checked against its replicas"
        );
    }
}

/// The replicas that can acknowledge, from an `INFO replication` reply:
/// those listed `state=online`. A replica still in its first sync
/// (`wait_bgsave`, `send_bulk`: right after it connected, or after a
/// failover made the old master a replica of the new one) is connected
/// but acknowledges nothing until it has loaded the data, so counting it
/// would fail every acquisition meanwhile. Servers that list no replica
/// lines are read by `connected_slaves`; 0 when unreadable (a server that
/// does not say has no replicas we can wait for).
fn connected_replicas(info: &Value) -> u32 {
    let Ok(text) = redis::from_redis_value_ref::<String>(info) else {
        return 0;
    };
    let mut listed = 0;
    let mut online = 0;
    let mut connected = 0;
    for line in text.lines() {
        if let Some(n) = line.strip_prefix("connected_slaves:") {
            connected = n.trim().parse().unwrap_or(0);
        } else if line.starts_with("slave") && line.contains(":ip=") {
            listed += 1;
            if line.split(',').any(|field| field == "state=online") {
                online += 1;
            }
        }
    }
    if listed > 0 {
        online
    } else {
        connected
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_count_is_read_from_info_replication() {
        let info = Value::BulkString(
            b"# Replication\r\nrole:master\r\nconnected_slaves:3\r\n\
              slave0:ip=127.0.0.1,port=7001,state=online,offset=10,lag=0\r\n\
              slave1:ip=127.0.0.1,port=7002,state=online,offset=10,lag=1\r\n\
              slave2:ip=127.0.0.1,port=7003,state=wait_bgsave,offset=0,lag=0\r\n"
                .to_vec(),
        );
        assert_eq!(connected_replicas(&info), 2, "only replicas online");
        let unlisted = Value::BulkString(b"connected_slaves:1\r\n".to_vec());
        assert_eq!(connected_replicas(&unlisted), 1);
        let none = Value::BulkString(b"# Replication\r\nrole:master\r\n".to_vec());
        assert_eq!(connected_replicas(&none), 0);
        assert_eq!(connected_replicas(&Value::Nil), 0);
    }

    #[test]
    fn a_wait_seeing_other_replicas_makes_the_count_asked_again() {
        let seen = waited(Value::Nil, 2, Ok(1), Update::Keep);
        assert_eq!((seen.acked, seen.update), (1, Update::Forget));
        let all = waited(Value::Nil, 2, Ok(2), Update::Learn(2));
        assert_eq!(all.update, Update::Learn(2));
        let refused = waited(
            Value::Nil,
            1,
            Err(redis::make_extension_error("NOPERM".into(), None)),
            Update::Keep,
        );
        assert_eq!((refused.connected, refused.update), (0, Update::Learn(0)));
    }
}
