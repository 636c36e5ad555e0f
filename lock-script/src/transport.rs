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
//!
//! A transport *is* the engine's connection: [`Transport`] extends
//! [`lock_core::backend::Connection`], so its pub/sub delivers
//! [`lock_core::backend::Notice`]s straight to the engine's sink (a
//! message on a subscribed channel, or a reset after a reconnect) and the
//! client hands the same `Arc` to the engine and to its kinds. There is no
//! second pub/sub seam to translate between.

use std::time::Duration;

use async_trait::async_trait;
use lock_core::backend::Connection;
use lock_core::Result;
use redis::Value;

use crate::call::ScriptCall;

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

/// Runs lock scripts and pub/sub on some Redis deployment.
///
/// Pub/sub, closing and the command timeout are the
/// [`Connection`] half: subscriptions and unsubscriptions are registered
/// before the call returns, kept until unsubscribed (even when the
/// subscribe future failed) and restored after every reconnect, followed
/// by a [`lock_core::backend::Notice::Reset`]; [`Connection::close`] marks
/// the transport closed before its first await, and later calls fail with
/// [`lock_core::LockError::Closed`]; [`Connection::command_timeout`] is the
/// longest one call ([`Transport::eval`], [`Transport::eval_batch`]) takes
/// before it fails with a timeout, *without* the replica wait of
/// [`Transport::eval_and_wait`] (the [`crate::ScriptEnv`] adds that:
/// [`crate::ScriptEnv::command_timeout`]).
///
/// Every call is bounded by the transport's own timeouts and maps failures
/// to [`lock_core::LockError`] (see [`crate::error`]); a transport never
/// retries, except that a script the server does not know (`NOSCRIPT`) is
/// loaded and run once more. A call whose outcome is unknown (its
/// connection broke after the send) may be sent again only when it is
/// [idempotent](ScriptCall::idempotent): a second run of any other call
/// could count a hold twice.
#[async_trait]
pub trait Transport: Connection {
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
    /// another lane's calls: the watchdog renews each lane on its own
    /// (through the kinds' [`lock_core::backend::ExclusiveKind::renew_lane`]
    /// and [`lock_core::backend::LeaseRenewal::renew_lane`], which
    /// [`crate::ScriptEnv::renew_lane`] answers). An opaque id, stable while
    /// the same node serves the group. One node: always `0`. A cluster: the
    /// master serving the slot.
    fn lane(&self, key_group: u32) -> u64 {
        let _ = key_group;
        0
    }

    /// The command the scripts publish unlock messages with: `PUBLISH` on
    /// one node, `SPUBLISH` with sharded pub/sub on a cluster. Subscribers
    /// must use the matching mode or notices are silently lost.
    fn publish_command(&self) -> &'static str;
}
