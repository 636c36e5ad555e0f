//! [`FairLock`]: a re-entrant exclusive lock handed out in arrival order.
//!
//! # Promise
//! While every waiter is alive, the lock goes to waiters in the order they
//! joined its queue; a holder's re-entry never waits. A waiter queues from
//! its first attempt (a try never queues), looks again — refreshing its
//! place — at least every third of [`lock_core::ClientConfig::waiter_timeout`],
//! and leaves the queue when it gives up or its future is dropped. One that
//! dies stops refreshing and is evicted within the waiter timeout. An unlock
//! tells only the queue head, on its own channel: no thundering herd.
//!
//! It is the engine's shared wait loop of [`Lock`] over the [`Fair`] kind,
//! whose waiters queue; every method of [`Lock`] applies (through `Deref`),
//! and [`FairLock::info`] adds the queue.

use std::sync::Arc;
use std::time::Duration;

use lock_core::backend::Engine;
use lock_core::backend::ExclusiveKind;
use lock_core::{ClientInfo, Lock, LockInfo, Owner, Result};

use crate::kind::Fair;

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
    /// [`lock_core::ClientConfig::waiter_timeout`]). Zero for a waiter already
    /// due, which the next writing operation evicts (reading evicts
    /// nobody).
    pub timeout: Duration,
    /// The record of the waiter's client, when that client keeps one
    /// (see [`lock_core::Holder::client`]); filled by [`FairLock::info`].
    pub client: Option<ClientInfo>,
}

impl QueuedWaiter {
    /// A waiter `field` with `timeout` left, with no client record.
    pub fn new(field: impl Into<String>, timeout: Duration) -> Self {
        Self {
            field: field.into(),
            timeout,
            client: None,
        }
    }

    /// With this client record.
    pub fn with_client(mut self, client: Option<ClientInfo>) -> Self {
        self.client = client;
        self
    }

    /// The waiter, when its field has the `<client-uuid>:<owner-id>` shape
    /// (ours, and Java's `<client-uuid>:<thread-id>`), as
    /// [`lock_core::Holder::owner`].
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

/// A handle on one named fair lock (`client.fair_lock(name)`): a
/// re-entrant exclusive lock handed out in arrival order (see the module
/// docs). Every method of [`Lock`] applies. Cheap to clone; makes no I/O
/// until used.
///
/// ```
/// # async fn demo(printer: lock_fair::FairLock) -> lock_core::Result<()> {
/// let guard = printer.lock().await?; // first come, first served
/// assert!(printer.info().await?.lock.is_locked());
/// guard.unlock().await?;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct FairLock {
    lock: Lock,
    engine: Engine,
    kind: Arc<Fair>,
}

impl FairLock {
    /// The fair lock called `name` of `kind` (the fair or the handoff
    /// kind), on `engine`: what a client's `fair_lock(name)` returns.
    ///
    /// # Errors
    /// [`lock_core::LockError::InvalidArgument`] for an empty or over-long
    /// name.
    pub fn new(engine: &Engine, name: impl AsRef<str>, kind: Arc<Fair>) -> Result<Self> {
        Ok(Self {
            lock: engine.lock(name, Arc::clone(&kind) as Arc<dyn ExclusiveKind>)?,
            engine: engine.clone(),
            kind,
        })
    }

    /// A snapshot of the lock: holders with hold counts, remaining time to
    /// live, and the queue with the time each waiter has left, head first;
    /// each holder and waiter with its client's record when that client
    /// keeps one ([`lock_core::Holder::client`], [`QueuedWaiter::client`]).
    ///
    /// # Errors
    /// [`crate::LockError::WrongType`]; store errors.
    ///
    /// # Cancel safety
    /// Read-only; safe to drop.
    pub async fn info(&self) -> Result<FairLockInfo> {
        self.engine.check_open()?;
        self.kind.inspect_with_clients(self.lock.name()).await
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
