//! The seam between the lock kinds' scripts and a Redis deployment:
//! [`Transport`].
//!
//! A kind knows its scripts, its keys and its replies; a transport knows
//! where keys live and how to reach them. It needs only to run a script on
//! the node that owns the script's keys, to subscribe to channels, and to
//! say which publish command the scripts must use. It knows no lock kind:
//! `lock_redis::SingleNode` talks to one server, a cluster transport (slot
//! routing, redirects, sharded pub/sub) plugs in through the same trait,
//! and every kind runs unchanged on both.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::future::BoxFuture;
use lock_core::Result;
use redis::Value;

use crate::call::ScriptCall;

/// What a transport's pub/sub connection reports to its handler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PubSubEvent<'a> {
    /// A message arrived on a subscribed channel.
    Message {
        /// The channel it arrived on.
        channel: &'a str,
        /// The message as published.
        payload: &'a [u8],
    },
    /// The pub/sub connection was re-established and every subscription
    /// restored; messages may have been lost while it was down.
    Reset,
}

/// What the replicas of a node did after an acquisition
/// ([`Transport::eval_synced`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReplicaAcks {
    /// Replicas that acknowledged the acquisition's writes in time.
    pub acked: u32,
    /// Replicas connected to the node (as it said last).
    pub connected: u32,
}

impl ReplicaAcks {
    /// `acked` of `connected` replicas.
    pub fn new(acked: u32, connected: u32) -> Self {
        Self { acked, connected }
    }
}

/// Receives a transport's pub/sub events. Called from the transport's
/// reader task: must not block.
pub trait PubSubHandler: Send + Sync + 'static {
    /// Handles one event.
    fn on_event(&self, event: PubSubEvent<'_>);
}

/// Runs lock scripts and pub/sub on some Redis deployment.
///
/// Every call is bounded by the transport's own timeouts and maps failures
/// to [`lock_core::LockError`] (see [`crate::error`]); a transport never
/// retries, except that a script the server does not know (`NOSCRIPT`) is
/// loaded and run once more. A call whose outcome is unknown (its
/// connection broke after the send) may be sent again only when it is
/// [idempotent](ScriptCall::idempotent): a second run of any other call
/// could count a hold twice.
#[async_trait]
pub trait Transport: Send + Sync + 'static {
    /// Runs one script on the node owning its keys.
    ///
    /// # Errors
    /// [`lock_core::LockError::WrongType`] naming the call's first key when
    /// the script hit a value of another type; a retryable error when the
    /// node could not be reached or did not answer in time; the script's other
    /// error replies as [`lock_core::LockError::Protocol`].
    ///
    /// # Cancel safety
    /// Dropping the future may leave the script run or not.
    async fn eval(&self, call: ScriptCall<'_>) -> Result<Value>;

    /// Runs one script like [`Transport::eval`], then waits (`WAIT`, on the
    /// same connection, one no other call uses) until `replicas` replicas of that node have its
    /// writes or `timeout` passes. Returns the script's reply and the number
    /// of replicas that acknowledged.
    ///
    /// # Errors
    /// As [`Transport::eval`]; the call may take up to `timeout` longer.
    ///
    /// # Cancel safety
    /// As [`Transport::eval`].
    async fn eval_and_wait(
        &self,
        call: ScriptCall<'_>,
        replicas: u32,
        timeout: Duration,
    ) -> Result<(Value, u32)>;

    /// Runs one script like [`Transport::eval`], then waits for the
    /// replicas connected to that node now, at most `timeout` (Redisson's
    /// rule, [`crate::ReplicaSync::connected`]): `WAIT` on a connection
    /// of its own, no `WAIT` at all when the node has no replicas. Returns
    /// the script's reply and what the replicas did. The default is a store
    /// without replicas (the in-memory one): the script alone.
    ///
    /// # Errors
    /// As [`Transport::eval`]; the call may take up to `timeout` longer.
    ///
    /// # Cancel safety
    /// As [`Transport::eval`].
    async fn eval_synced(
        &self,
        call: ScriptCall<'_>,
        timeout: Duration,
    ) -> Result<(Value, ReplicaAcks)> {
        let _ = timeout;
        Ok((self.eval(call).await?, ReplicaAcks::default()))
    }

    /// Runs many scripts, pipelined per node, and returns one result per
    /// call in order. Each call's keys must share a [`Transport::key_group`].
    ///
    /// # Errors
    /// A whole-call error when nothing could be sent; per-call errors (as
    /// [`Transport::eval`]) for calls whose outcome is unknown or failed.
    ///
    /// # Cancel safety
    /// Dropping the future may leave any subset of the calls run.
    async fn eval_batch(&self, calls: Vec<ScriptCall<'_>>) -> Result<Vec<Result<Value>>>;

    /// Which keys may share one script call: keys with different groups
    /// never do. One node: always `0`. A cluster: the key's hash slot.
    fn key_group(&self, key: &str) -> u32 {
        let _ = key;
        0
    }

    /// Which *lane* serves the keys of `key_group` (see
    /// [`Transport::key_group`]) now: calls in different lanes reach
    /// different nodes, so one lane's slow or dead node need not delay
    /// another lane's calls, and batches are split by lane to keep it so
    /// ([`crate::ScriptEnv::renew_with`], the watchdog through
    /// [`lock_core::backend::ExclusiveKind::renew_lane`]). An opaque id, stable while
    /// the same node serves the group. One node: always `0`. A cluster: the
    /// master serving the slot.
    fn lane(&self, key_group: u32) -> u64 {
        let _ = key_group;
        0
    }

    /// The longest one call ([`Transport::eval`], [`Transport::eval_batch`])
    /// takes before it fails with a timeout, without the replica wait of
    /// [`Transport::eval_and_wait`]; `None` when unbounded or unknown.
    fn command_timeout(&self) -> Option<Duration> {
        None
    }

    /// The command the scripts publish unlock messages with: `PUBLISH` on
    /// one node, `SPUBLISH` with sharded pub/sub on a cluster. Subscribers
    /// must use the matching mode or notices are silently lost.
    fn publish_command(&self) -> &'static str;

    /// Installs the receiver of pub/sub events (replacing any earlier one).
    fn set_pubsub_handler(&self, handler: Arc<dyn PubSubHandler>);

    /// Subscribes to `channel`. The subscription is registered before this
    /// returns (later calls are applied after it); the future only waits
    /// for the server's confirmation. The subscription is kept until
    /// [`Transport::unsubscribe`], even when the future fails, and restored
    /// after every reconnect.
    fn subscribe(&self, channel: String) -> BoxFuture<'static, Result<()>>;

    /// Drops the subscription to `channel` (registered before this returns).
    fn unsubscribe(&self, channel: String);

    /// Closes every connection; later calls fail with
    /// [`lock_core::LockError::Closed`].
    ///
    /// # Cancel safety
    /// The transport is marked closed before the first await; dropping the
    /// future only skips waiting for the connections to go.
    async fn close(&self);
}
