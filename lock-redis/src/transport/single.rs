//! The transport of one Redis server (standalone, a primary reached
//! directly, the master of a Sentinel group, or a slot-checking proxy): a
//! small set of multiplexed connections for scripts (see the
//! `connections` module) and one dedicated pub/sub connection.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::future::{self, BoxFuture, FutureExt};
use lock_core::{LockError, Result};
use redis::{RedisResult, Value};
use tokio::time::{timeout_at, Instant};

use crate::config::RedisConfig;
use crate::transport::connections::{ConnectionSet, Lease};
use crate::transport::pubsub::PubSub;
use crate::transport::replicas;
use crate::transport::scripts;
use crate::transport::sentinel::{Endpoint, Master};
use crate::transport::subscriptions::SubscriptionHandle;
use lock_core::backend::{Channel, Connection, NoticeSink};
use lock_script::error::{from_redis, timed_out};
use lock_script::ScriptCall;
use lock_script::{ReplicaAcks, Transport};

/// A [`Transport`] to one Redis server.
///
/// Scripts run on at most [`RedisConfig::pool_size`] multiplexed
/// connections, each filled with
/// [`RedisConfig::calls_per_connection`] calls in flight before the next
/// is used; each is made on first use within the connect timeout
/// (asking the credentials provider, if any, first), and many calls share it at once. A call
/// sends only its own command: nothing checks a connection before use (a
/// pool such as `deadpool-redis` checks every connection with a `PING` round
/// trip on checkout, doubling the cost of each lock operation; multiplexed
/// connections need no checkout). Instead a connection is replaced after a
/// call on it fails in a way that shows it broken, and so is every
/// connection made before that failure was seen, so after a server restart
/// about one call fails, not one per connection. One call, from getting a
/// connection to the reply (including loading a script the server lost),
/// takes at most the command timeout.
///
/// Unlock notices come over one dedicated pub/sub connection owned by a
/// background task, which reconnects and re-subscribes by itself (see the
/// `pubsub` module docs in the source, and [`Connection::subscribe`]).
///
/// The scripts publish with `PUBLISH`.
pub struct SingleNode {
    connections: ConnectionSet,
    pubsub: SubscriptionHandle,
    command_timeout: Duration,
    /// Keys of different hash slots never share a call
    /// ([`RedisConfig::slot_checking_proxy`]).
    slot_groups: bool,
}

impl std::fmt::Debug for SingleNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SingleNode")
            .field("connections", &self.connections)
            .field("pubsub", &self.pubsub)
            .field("command_timeout", &self.command_timeout)
            .field("slot_groups", &self.slot_groups)
            .finish()
    }
}

impl SingleNode {
    /// Builds the transport without waiting for any I/O: script
    /// connections are made on first use and the pub/sub task connects in
    /// the background. Must be called inside a tokio runtime (it spawns the
    /// pub/sub task).
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] for a configuration that does not
    /// [validate](RedisConfig::validate), or when called outside a tokio
    /// runtime.
    pub fn new(config: &RedisConfig) -> Result<Self> {
        config.validate()?;
        let endpoint = match &config.sentinel {
            Some(sentinel) => {
                // `rediss://` sentinel URLs make the redis crate speak TLS.
                #[cfg(feature = "tls")]
                crate::transport::tls::install_crypto_provider();
                Endpoint::sentinel(Master::new(
                    sentinel,
                    config.connection.connect_timeout,
                    config.connection.credentials.clone(),
                )?)
            }
            None => Endpoint::fixed(config.client()?, config.connection.credentials.clone()),
        };
        let pubsub = PubSub::spawn(
            endpoint.clone(),
            config.connection.connect_timeout,
            config.connection.command_timeout,
        )?;
        Ok(Self {
            connections: ConnectionSet::to_endpoint(endpoint, config),
            pubsub,
            command_timeout: config.connection.command_timeout,
            slot_groups: config.slot_checking_proxy,
        })
    }

    /// Checks that the server answers and knows the `needed` commands (one
    /// `COMMAND INFO` round trip; see [`crate::transport::commands`]), and loads
    /// `scripts` (every kind's, as the registration of kinds gives them)
    /// so the first calls need no `NOSCRIPT` round trip.
    ///
    /// # Errors
    /// A retryable error when the server cannot be reached in time;
    /// [`LockError::Unauthorized`] when it rejects the credentials;
    /// [`LockError::Unsupported`] naming the needed commands it does not
    /// know; [`LockError::Closed`] after [`Connection::close`].
    ///
    /// # Cancel safety
    /// Safe to drop at any point; nothing is changed but the script cache.
    pub async fn check(
        &self,
        needed: &[crate::transport::commands::Needed],
        scripts: &[&redis::Script],
    ) -> Result<()> {
        let deadline = Instant::now() + self.command_timeout;
        let mut lease = self.connections.get(deadline).await?;
        // Scripts first: an unauthenticated connection gets `NOAUTH` for
        // them, while Redis drops it for a long `COMMAND INFO` (more than
        // ten arguments before `AUTH` is a protocol error). One script
        // alone first, for the same reason: Redis drops an unauthenticated
        // connection that sends a bulk over 16 KiB, as a long script is.
        // Then the rest all at once on the multiplexed connection, so the
        // check costs two round trips, not one per script (44 of them: 2 s
        // on a 50 ms link, past the default command timeout).
        let conn = lease.conn().clone();
        let load_all = async {
            let Some((first, rest)) = scripts.split_first() else {
                return Ok(());
            };
            crate::transport::scripts::load(&mut conn.clone(), first).await?;
            futures::future::try_join_all(rest.iter().map(|script| {
                let mut conn = conn.clone();
                async move { crate::transport::scripts::load(&mut conn, script).await }
            }))
            .await
            .map(drop)
        };
        let loaded = timeout_at(deadline, load_all).await;
        let script_unknown =
            matches!(&loaded, Ok(Err(e)) if crate::transport::commands::is_unknown_command(e));
        let loaded = self.finish(&lease, loaded, "", "connection check");
        if loaded.is_err() && !script_unknown {
            return loaded;
        }
        // Loaded, or `SCRIPT` itself unknown: the check names what is
        // missing, `SCRIPT` included.
        let conn = lease.conn();
        let info = crate::transport::commands::command_info(needed);
        let known = timeout_at(deadline, async {
            let reply = info.query_async::<Value>(&mut *conn).await;
            crate::transport::commands::judge(needed, reply, "the server")
        })
        .await;
        self.finish(&lease, known, "", "command check")??;
        loaded
    }

    fn ensure_open(&self) -> Result<()> {
        if self.connections.is_closed() {
            Err(LockError::Closed)
        } else {
            Ok(())
        }
    }

    /// Maps the outcome of a call on `lease` (bounded by `timeout_at`),
    /// reporting a broken connection to the set.
    fn finish<T>(
        &self,
        lease: &Lease,
        result: std::result::Result<RedisResult<T>, tokio::time::error::Elapsed>,
        first_key: &str,
        what: &str,
    ) -> Result<T> {
        match result {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) => {
                self.connections.report(lease, &e);
                Err(from_redis(&e, first_key))
            }
            Err(_) => {
                self.connections.report_no_reply(lease);
                Err(timed_out(what, self.command_timeout))
            }
        }
    }
}

#[async_trait]
impl Transport for SingleNode {
    async fn eval(&self, call: ScriptCall<'_>) -> Result<Value> {
        let deadline = Instant::now() + self.command_timeout;
        let mut lease = self.connections.get(deadline).await?;
        let result = timeout_at(deadline, scripts::eval(lease.conn(), &call)).await;
        self.finish(&lease, result, call.first_key(), "script call")
    }

    async fn eval_and_wait(
        &self,
        call: ScriptCall<'_>,
        replicas: u32,
        timeout: Duration,
    ) -> Result<(Value, u32)> {
        let deadline = Instant::now() + self.command_timeout;
        // `WAIT` blocks its connection: never one other calls share.
        let mut lease = self.connections.get_for_wait(deadline).await?;
        let result = timeout_at(
            deadline + timeout,
            scripts::eval_and_wait(lease.conn(), &call, replicas, timeout),
        )
        .await;
        self.finish(&lease, result, call.first_key(), "script call with WAIT")
    }

    async fn eval_synced(
        &self,
        call: ScriptCall<'_>,
        timeout: Duration,
    ) -> Result<(Value, ReplicaAcks)> {
        let deadline = Instant::now() + self.command_timeout;
        let plan = replicas::resolve(&self.connections, deadline).await;
        // `WAIT` blocks its connection: never one other calls share. A call
        // that sends none is bounded by the command timeout alone.
        let (mut lease, bound) = if plan.waits() {
            (
                self.connections.get_for_wait(deadline).await?,
                deadline + timeout,
            )
        } else {
            (self.connections.get(deadline).await?, deadline)
        };
        let result = timeout_at(
            bound,
            replicas::eval_synced(lease.conn(), &call, plan, timeout),
        )
        .await;
        let synced = self.finish(&lease, result, call.first_key(), "script call with WAIT")?;
        synced.record(&self.connections);
        Ok((
            synced.value,
            ReplicaAcks::new(synced.acked, synced.connected),
        ))
    }

    async fn eval_batch(&self, calls: Vec<ScriptCall<'_>>) -> Result<Vec<Result<Value>>> {
        self.ensure_open()?;
        if calls.is_empty() {
            return Ok(Vec::new());
        }
        let deadline = Instant::now() + self.command_timeout;
        let mut lease = self.connections.get_for_batch(deadline).await?;
        let result = timeout_at(deadline, scripts::eval_pipelined(lease.conn(), &calls)).await;
        match self.finish(&lease, result, "", "pipelined script calls") {
            Ok(results) => Ok(results
                .into_iter()
                .zip(&calls)
                .map(|(r, call)| r.map_err(|e| from_redis(&e, call.first_key())))
                .collect()),
            Err(e) => Ok(vec![Err(e); calls.len()]),
        }
    }

    /// `0` for every key, or the key's hash slot behind a slot-checking
    /// proxy ([`RedisConfig::slot_checking_proxy`]).
    fn key_group(&self, key: &str) -> u32 {
        if self.slot_groups {
            u32::from(lock_script::slot::key_slot(key))
        } else {
            0
        }
    }

    fn publish_command(&self) -> &'static str {
        "PUBLISH"
    }
}

/// The engine's half of the transport: the pub/sub task's notices, and
/// closing.
#[async_trait]
impl Connection for SingleNode {
    fn set_notice_sink(&self, sink: Arc<dyn NoticeSink>) {
        self.pubsub.set_notice_sink(sink);
    }

    fn subscribe(&self, channel: &Channel) -> BoxFuture<'static, Result<()>> {
        if self.ensure_open().is_err() {
            return future::ready(Err(LockError::Closed)).boxed();
        }
        self.pubsub.subscribe(channel)
    }

    fn unsubscribe(&self, channel: &Channel) {
        self.pubsub.unsubscribe(channel);
    }

    /// The command timeout (without a replica wait: see
    /// [`lock_script::ScriptEnv::command_timeout`]).
    fn command_timeout(&self) -> Option<Duration> {
        Some(self.command_timeout)
    }

    /// Closes the script connections (calls in flight finish on theirs)
    /// and the pub/sub connection.
    ///
    /// # Cancel safety
    /// The transport is marked closed before the first await.
    async fn close(&self) {
        self.connections.close();
        self.pubsub.close().await;
    }
}
