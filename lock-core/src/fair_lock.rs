//! [`FairLock`]: a re-entrant exclusive lock handed out in arrival order.
//!
//! # Promise
//! While every waiter is alive, the lock goes to waiters in the order they
//! joined its queue; a holder's re-entry never waits. A waiter queues from
//! its first attempt (a try never queues), looks again — refreshing its
//! place — at least every third of [`crate::ClientConfig::waiter_timeout`],
//! and leaves the queue when it gives up or its future is dropped. One that
//! dies stops refreshing and is evicted within the waiter timeout. An unlock
//! tells only the queue head, on its own channel: no thundering herd.
//!
//! It is the shared wait loop of [`Lock`] over a kind whose waiters queue
//! ([`FairKind`]); every method of [`Lock`] applies (through `Deref`), and
//! [`FairLock::info`] adds the queue.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use crate::client::LockClient;
use crate::error::Result;
use crate::kind::{ExclusiveKind, LockInfo};
use crate::lock::Lock;
use crate::name::LockName;
use crate::owner::Owner;

/// The store operations of a fair lock kind: an [`ExclusiveKind`] whose
/// waiters queue, which can also show its queue.
#[async_trait]
pub trait FairKind: ExclusiveKind {
    /// Reads the lock's holders, time to live, and queue (each waiter's
    /// time left by the store's clock). Read-only: stale waiters are
    /// reported, with no time left, not evicted.
    ///
    /// # Errors
    /// As [`ExclusiveKind::inspect`].
    async fn inspect_fair(&self, name: &LockName) -> Result<FairLockInfo>;
}

/// One waiter in a fair lock's queue.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct QueuedWaiter {
    /// The waiter as stored: `"<client-uuid>:<owner-id>"` for ours and a
    /// Java client's (see [`QueuedWaiter::owner`]), kept raw so a field of
    /// another shape is shown as it is.
    pub field: String,
    /// How long the waiter keeps its place when the snapshot was read, by
    /// the store's clock: it is evicted after this unless it looks again
    /// (which a live waiter does every third of
    /// [`crate::ClientConfig::waiter_timeout`]). Zero for a waiter already
    /// due, which the next writing operation evicts (reading evicts
    /// nobody).
    pub timeout: Duration,
}

impl QueuedWaiter {
    /// A waiter `field` with `timeout` left.
    pub fn new(field: impl Into<String>, timeout: Duration) -> Self {
        Self {
            field: field.into(),
            timeout,
        }
    }

    /// The waiter, when its field has the `<client-uuid>:<owner-id>` shape
    /// (ours, and Java's `<client-uuid>:<thread-id>`), as
    /// [`crate::Holder::owner`].
    pub fn owner(&self) -> Option<Owner> {
        Owner::parse_field(&self.field)
    }
}

/// A snapshot of one fair lock: the lock, and its queue.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct FairLockInfo {
    /// Holders and time to live.
    pub lock: LockInfo,
    /// The waiters, head first.
    pub queue: Vec<QueuedWaiter>,
}

impl FairLockInfo {
    /// A snapshot of `lock` with `queue`.
    pub fn new(lock: LockInfo, queue: Vec<QueuedWaiter>) -> Self {
        Self { lock, queue }
    }
}

/// The lock's half: `info.holders`, `info.is_locked()`, ….
impl std::ops::Deref for FairLockInfo {
    type Target = LockInfo;

    fn deref(&self) -> &LockInfo {
        &self.lock
    }
}

/// A handle on one named fair lock ([`LockClient::fair_lock`]): a
/// re-entrant exclusive lock handed out in arrival order (see the module
/// docs). Every method of [`Lock`] applies. Cheap to clone; makes no I/O
/// until used.
///
/// ```
/// # async fn demo(client: lock_core::LockClient) -> lock_core::Result<()> {
/// let printer = client.fair_lock("printer")?;
/// let guard = printer.lock().await?; // first come, first served
/// assert!(printer.info().await?.lock.is_locked());
/// guard.unlock().await?;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct FairLock {
    lock: Lock,
    kind: Arc<dyn FairKind>,
}

impl std::fmt::Debug for dyn FairKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FairKind")
    }
}

impl FairLock {
    pub(crate) fn new(client: LockClient, name: LockName, kind: Arc<dyn FairKind>) -> Self {
        Self {
            lock: Lock::new(client, name, Arc::clone(&kind) as Arc<dyn ExclusiveKind>),
            kind,
        }
    }

    /// A snapshot of the lock: holders with hold counts, remaining time to
    /// live, and the queue with the time each waiter has left, head first.
    ///
    /// # Errors
    /// [`crate::LockError::WrongType`]; store errors.
    ///
    /// # Cancel safety
    /// Read-only; safe to drop.
    pub async fn info(&self) -> Result<FairLockInfo> {
        self.lock.inner().check_open()?;
        self.kind.inspect_fair(self.lock.name()).await
    }

    /// This lock as a plain [`Lock`] handle (same lock, same queue).
    pub fn as_lock(&self) -> &Lock {
        &self.lock
    }
}

impl std::ops::Deref for FairLock {
    type Target = Lock;

    fn deref(&self) -> &Lock {
        &self.lock
    }
}
