//! The seam between the lock engine and a store: [`LockBackend`].
//!
//! A backend is one client's connection to a store (a Redis node, a cluster,
//! the in-memory model). It runs the primitive operations of the lock
//! protocol atomically and delivers unlock notices to the engine through a
//! [`NoticeSink`]. Everything else — waiting, wake-ups, the watchdog,
//! retries, cancellation safety, guards — is the engine's, written once.
//!
//! # Contract
//! - Each operation is atomic on the store (a Lua script on Redis).
//! - [`LockBackend::try_acquire`] and [`LockBackend::release`] carry a request
//!   id. Repeating a request with the same id must return the first outcome
//!   without applying it twice (within `latch_ttl`), so the engine can retry
//!   after an unknown outcome. Every outcome counts, "held" and "not held"
//!   included, and a repeat writes nothing (a fair waiter is neither queued
//!   again nor refreshed): a late duplicate of a request stuck on the wire
//!   must not take a hold, or release one, after its owner moved on. A
//!   repeated "held" reports the lock's time to live as of the repeat.
//! - Leases only ever grow: acquisition, re-entry, partial release and
//!   renewal set a lock's time to live to the larger of what it has left and
//!   the requested lease (a lock without expiry keeps none). So one owner's
//!   holds with different leases never shorten what another guard of the
//!   same owner was promised.
//! - Subscriptions are ordered by call: [`LockBackend::subscribe`] registers
//!   the topic *before it returns* and its future only waits for the store to
//!   confirm; [`LockBackend::unsubscribe`] is synchronous. The engine calls
//!   both under its own registry lock, so subscribe/unsubscribe/subscribe of
//!   one topic can never be reordered.
//! - The backend keeps every subscribed topic until it is unsubscribed, even
//!   when the subscribe future failed, and re-subscribes all of them after a
//!   reconnect; it then delivers [`Notice::Reset`] because notices may have
//!   been lost meanwhile.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::future::BoxFuture;

use crate::error::Result;
use crate::name::LockName;
use crate::owner::Owner;

/// Identifies one logical acquire or release across its retries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RequestId(uuid::Uuid);

impl RequestId {
    /// A fresh random id.
    pub fn new() -> Self {
        Self(uuid::Uuid::new_v4())
    }
}

impl Default for RequestId {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0.simple(), f)
    }
}

/// One attempt to take a lock.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AcquireRequest {
    /// The lock.
    pub name: LockName,
    /// Who takes it.
    pub owner: Owner,
    /// The key's time to live once taken, in milliseconds (≥ 1): the lock
    /// expires no earlier than this from now. A lease never shortens the
    /// lock's time to live (see the module docs).
    pub lease_ms: u64,
    /// Identifies this acquisition across retries.
    pub request_id: RequestId,
    /// Whether to hand out a fencing token.
    pub fenced: bool,
    /// How long the outcome is kept for retries, in milliseconds.
    pub latch_ttl_ms: u64,
    /// Fair locks only: when the lock cannot be taken, join the queue (or
    /// stay in it, refreshing this waiter's deadline) with this waiter
    /// timeout in milliseconds. `None` never joins the queue. Backends of
    /// other kinds ignore it.
    pub queue_ms: Option<u64>,
}

impl AcquireRequest {
    /// Builds a request with a fresh request id that does not queue.
    pub fn new(
        name: LockName,
        owner: Owner,
        lease_ms: u64,
        fenced: bool,
        latch_ttl_ms: u64,
    ) -> Self {
        Self {
            name,
            owner,
            lease_ms,
            request_id: RequestId::new(),
            fenced,
            latch_ttl_ms,
            queue_ms: None,
        }
    }

    /// Sets [`AcquireRequest::queue_ms`].
    pub fn queue(mut self, waiter_timeout_ms: Option<u64>) -> Self {
        self.queue_ms = waiter_timeout_ms;
        self
    }
}

/// What an acquisition attempt found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AcquireOutcome {
    /// The lock is ours (first hold or one more re-entrant hold).
    Acquired {
        /// The fencing token, when one was asked for.
        fencing_token: Option<u64>,
    },
    /// Someone else holds it.
    Held {
        /// The holder's remaining time to live; `None` when the key has no
        /// expiry.
        ttl: Option<Duration>,
    },
}

/// One release of one hold.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ReleaseRequest {
    /// The lock.
    pub name: LockName,
    /// Whose hold is released.
    pub owner: Owner,
    /// When holds remain, the lock expires no earlier than this from now,
    /// in milliseconds (never sooner than it already would).
    pub lease_ms: u64,
    /// Identifies this release across retries.
    pub request_id: RequestId,
    /// How long the outcome is kept for retries, in milliseconds.
    pub latch_ttl_ms: u64,
}

impl ReleaseRequest {
    /// Builds a request with a fresh request id.
    pub fn new(name: LockName, owner: Owner, lease_ms: u64, latch_ttl_ms: u64) -> Self {
        Self {
            name,
            owner,
            lease_ms,
            request_id: RequestId::new(),
            latch_ttl_ms,
        }
    }
}

/// What a release did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReleaseOutcome {
    /// The last hold was released; the lock is free and waiters were told.
    Released,
    /// One hold was released; the owner still holds the lock.
    StillHeld,
    /// The owner did not hold the lock (never did, released, or expired).
    NotHeld,
}

/// One lock to renew in a batch.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RenewTarget {
    /// The lock.
    pub name: LockName,
    /// The owner whose lease is extended.
    pub owner: Owner,
}

/// One holder of a lock as stored: the hash field and its hold count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    /// The raw hash field (`"<client-uuid>:<owner-id>"` for us and Redisson).
    pub field: String,
    /// How many times this holder has entered the lock.
    pub count: u64,
}

impl Holder {
    /// The owner, when the field has our (and Redisson's) shape.
    pub fn owner(&self) -> Option<Owner> {
        Owner::parse_field(&self.field)
    }
}

/// One waiter in a fair lock's queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueuedWaiter {
    /// The waiter as stored (`"<client-uuid>:<owner-id>"`).
    pub field: String,
    /// When the waiter is evicted unless it refreshes, in milliseconds since
    /// the Unix epoch by the store's clock.
    pub deadline_ms: i64,
}

/// A snapshot of one lock.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LockInfo {
    /// Every holder (one for an exclusive lock; empty when free).
    pub holders: Vec<Holder>,
    /// Remaining time to live; `None` when free or without expiry.
    pub ttl: Option<Duration>,
    /// A fair lock's waiters, in queue order (empty for other kinds).
    pub queue: Vec<QueuedWaiter>,
}

impl LockInfo {
    /// Whether anyone holds the lock.
    pub fn is_locked(&self) -> bool {
        !self.holders.is_empty()
    }

    /// The hold count of `owner` (0 when it does not hold the lock).
    pub fn hold_count(&self, owner: &Owner) -> u64 {
        let field = owner.field();
        self.holders
            .iter()
            .find(|h| h.field == field)
            .map_or(0, |h| h.count)
    }
}

/// A channel of unlock notices.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Topic {
    /// Unlocks of a lock (its `redisson_lock__channel:{name}` channel).
    Lock(LockName),
    /// A fair lock's notice to one queued waiter that it is next
    /// (`redisson_lock__channel:{name}:<client-uuid>:<owner-id>`).
    Waiter(LockName, Owner),
}

/// Which protocol a backend's locks follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LockKind {
    /// Re-entrant exclusive lock; any waiter may win a free lock.
    Reentrant,
    /// Re-entrant exclusive lock handed out in arrival order (FIFO queue).
    Fair,
}

/// How many waiters a notice wakes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    /// One waiter per client (exclusive unlock, message `0`).
    One,
    /// Every waiter (read unlock, message `1`).
    All,
}

/// A message from the store to the engine.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Notice {
    /// A lock was released.
    Unlocked {
        /// Where it was announced.
        topic: Topic,
        /// Whom to wake.
        wake: Wake,
    },
    /// The notice connection was re-established; notices may have been lost,
    /// so every waiter should look again.
    Reset,
}

/// Receives notices from a backend. Called from the backend's reader; must
/// not block.
pub trait NoticeSink: Send + Sync + 'static {
    /// Handles one notice.
    fn deliver(&self, notice: Notice);
}

/// One client's connection to a lock store. See the module docs for the
/// contract every implementation keeps.
#[async_trait]
pub trait LockBackend: Send + Sync + 'static {
    /// Takes the lock, or re-enters it if `req.owner` holds it; otherwise
    /// reports the holder's remaining time to live.
    ///
    /// # Errors
    /// [`crate::LockError::WrongType`] when the key holds a non-lock value;
    /// a retryable error when the store could not be reached.
    async fn try_acquire(&self, req: &AcquireRequest) -> Result<AcquireOutcome>;

    /// Releases one hold of `req.owner`; announces the unlock when it was the
    /// last one.
    ///
    /// # Errors
    /// As [`LockBackend::try_acquire`].
    async fn release(&self, req: &ReleaseRequest) -> Result<ReleaseOutcome>;

    /// Extends the lease of every target that its owner still holds to at
    /// least `lease_ms` from now (never shortening it). Returns one entry per target, in order: `Ok(true)` renewed,
    /// `Ok(false)` no longer held by that owner, `Err` not known (the batch
    /// holding that target failed).
    ///
    /// # Errors
    /// A whole-call error when nothing could be sent at all.
    async fn renew(&self, targets: &[RenewTarget], lease_ms: u64) -> Result<Vec<Result<bool>>>;

    /// Deletes the lock whoever holds it and announces the unlock. Returns
    /// whether it existed.
    ///
    /// # Errors
    /// As [`LockBackend::try_acquire`].
    async fn force_unlock(&self, name: &LockName) -> Result<bool>;

    /// Reads the lock's holders and remaining time to live.
    ///
    /// # Errors
    /// As [`LockBackend::try_acquire`].
    async fn inspect(&self, name: &LockName) -> Result<LockInfo>;

    /// Which protocol this backend's locks follow. A client makes locks of
    /// its backend's kind.
    fn kind(&self) -> LockKind {
        LockKind::Reentrant
    }

    /// The longest one call of this backend takes before it fails with a
    /// timeout (getting a connection, following redirects and reloading a
    /// script included), or `None` when its calls are not bounded or the
    /// bound is not known. A client checks when it is made that its latch
    /// outlives every attempt of a retried request
    /// ([`crate::ClientConfig::validate_for`]).
    fn command_timeout(&self) -> Option<Duration> {
        None
    }

    /// Fair locks: removes `owner` from the queue of `name` (a waiter that
    /// gave up), and tells the new queue head if the lock is free. Nothing
    /// for other kinds.
    ///
    /// # Errors
    /// As [`LockBackend::try_acquire`].
    async fn leave_queue(&self, name: &LockName, owner: &Owner) -> Result<()> {
        let _ = (name, owner);
        Ok(())
    }

    /// Installs the receiver of notices. Called once by the client.
    fn set_notice_sink(&self, sink: Arc<dyn NoticeSink>);

    /// Subscribes to `topic`. The subscription is registered before this
    /// returns; the future resolves once the store confirmed it.
    fn subscribe(&self, topic: &Topic) -> BoxFuture<'static, Result<()>>;

    /// Drops the subscription to `topic`.
    fn unsubscribe(&self, topic: &Topic);

    /// Closes connections. Later calls fail with [`crate::LockError::Closed`].
    async fn close(&self) {}
}
