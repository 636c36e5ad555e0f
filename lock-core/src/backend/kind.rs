//! The seam between the engine and a lock kind's store operations:
//! [`ExclusiveKind`].
//!
//! A kind is one protocol of exclusive locks on a store (the reentrant
//! lock, the fair lock, …), bound to one client's [`crate::backend::Connection`]. It
//! runs the primitive operations atomically and names the channel a waiter
//! listens on; everything else — waiting, wake-ups, the watchdog, retries,
//! cancellation safety, guards — is the engine's, written once for every
//! kind. Names of keys, channels and messages are the kind's business: the
//! engine treats channels as opaque ([`crate::backend::Channel`]).
//!
//! # Contract
//! - Each operation is atomic on the store (a Lua script on Redis).
//! - [`ExclusiveKind::try_acquire`] and [`ExclusiveKind::release`] carry a
//!   request id. Repeating a request with the same id must return the first
//!   outcome without applying it twice, and a request that has
//!   not run by its deadline (`deadline_ms`) never runs (see lock-core's
//!   `store_clock` module), so the engine
//!   can retry after an unknown outcome. Every outcome counts, "held" and
//!   "not held" included, and a repeat writes nothing (a queued waiter is
//!   neither queued again nor refreshed): a late duplicate of a request
//!   stuck on the wire must not take a hold, or release one, after its
//!   owner moved on. A repeated "held" reports the lock's time to live as of
//!   the repeat.
//! - Leases only ever grow: acquisition, re-entry, partial release and
//!   renewal set a lock's time to live to the larger of what it has left and
//!   the requested lease (a lock without expiry keeps none). So one owner's
//!   holds with different leases never shorten what another guard of the
//!   same owner was promised.
//! - A release that frees the lock announces it on the channel of the
//!   waiters it wakes ([`ExclusiveKind::channel`]), with a payload that
//!   [`ExclusiveKind::wake`] understands.

use std::fmt;
use std::time::Duration;

use async_trait::async_trait;

use crate::backend::behaviour::KindBehaviour;
use crate::backend::connection::{Channel, Wake};
use crate::client_info::ClientInfo;
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

/// The deadline of a request made now that may run for `window`, by this
/// machine's wall clock: for callers of the kinds' store operations outside
/// a client (tests, tools). A client dates its requests by its estimate of
/// the store's clock instead.
pub fn deadline_in(window: Duration) -> u64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or(Duration::ZERO);
    u64::try_from(now.saturating_add(window).as_millis()).unwrap_or(u64::MAX)
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
    /// The request's deadline on the store's clock, in milliseconds since
    /// the Unix epoch: the store runs it only before then, and keeps its
    /// outcome until past then (see the `store_clock` module of lock-core).
    pub deadline_ms: u64,
    /// For kinds whose waiters queue ([`KindBehaviour::queues_waiters`]):
    /// when the lock cannot be taken, join the queue (or stay in it,
    /// refreshing this waiter's deadline) with this waiter timeout in
    /// milliseconds. `None` never joins the queue. Other kinds ignore it.
    pub queue_ms: Option<u64>,
    /// Identifies one wait across all its attempts (the same ticket for
    /// each; never 0), for kinds that hand a freed lock straight to a
    /// queued waiter ([`KindBehaviour::hands_over`]): the store grants the
    /// lock to the ticket, and a later attempt or
    /// [`ExclusiveKind::leave_queue`] of the same ticket finds the grant.
    /// `None` for a try, and on kinds that do not hand over.
    pub wait_ticket: Option<u64>,
    /// Whether [`AcquireRequest::owner`] was made for this request's wait
    /// alone (no explicit owner, no owner scope): no other wait or guard
    /// ever acquires or releases as it. Set by the engine; `false` from
    /// [`AcquireRequest::new`]. A kind that keeps only its holder's token
    /// may then take a repeat that finds the owner's token as this wait's
    /// own hold ([`KindBehaviour::one_hold_per_owner`]).
    pub private_owner: bool,
}

impl AcquireRequest {
    /// Builds a request with a fresh request id that does not queue.
    pub fn new(
        name: LockName,
        owner: Owner,
        lease_ms: u64,
        fenced: bool,
        deadline_ms: u64,
    ) -> Self {
        Self {
            name,
            owner,
            lease_ms,
            request_id: RequestId::new(),
            fenced,
            deadline_ms,
            queue_ms: None,
            wait_ticket: None,
            private_owner: false,
        }
    }

    /// Sets [`AcquireRequest::queue_ms`].
    pub fn queue(mut self, waiter_timeout_ms: Option<u64>) -> Self {
        self.queue_ms = waiter_timeout_ms;
        self
    }

    /// Sets [`AcquireRequest::wait_ticket`].
    pub fn ticket(mut self, wait_ticket: Option<u64>) -> Self {
        self.wait_ticket = wait_ticket;
        self
    }

    /// Sets [`AcquireRequest::private_owner`].
    pub fn private_owner(mut self, private_owner: bool) -> Self {
        self.private_owner = private_owner;
        self
    }
}

/// What an acquisition attempt found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum AcquireOutcome {
    /// The lock is ours (first hold or one more re-entrant hold).
    Acquired {
        /// The fencing token, when one was asked for.
        fencing_token: Option<u64>,
    },
    /// A kind that hands over ([`KindBehaviour::hands_over`]): the lock a
    /// release granted to this wait's ticket, taken as it was granted. The
    /// grant made the owner's hold; this adds none, so it stands for the
    /// same hold as the grant's notice, whichever the wait took first.
    Claimed,
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
    /// The request's deadline on the store's clock, in milliseconds since
    /// the Unix epoch: the store runs it only before then, and keeps its
    /// outcome until past then (see the `store_clock` module of lock-core).
    pub deadline_ms: u64,
    /// Whether the owner was made for one wait alone (as
    /// [`AcquireRequest::private_owner`]): it never holds the lock again
    /// once this release ran. Set by the engine.
    pub private_owner: bool,
}

impl ReleaseRequest {
    /// Builds a request with a fresh request id.
    pub fn new(name: LockName, owner: Owner, lease_ms: u64, deadline_ms: u64) -> Self {
        Self {
            name,
            owner,
            lease_ms,
            request_id: RequestId::new(),
            deadline_ms,
            private_owner: false,
        }
    }

    /// Sets [`ReleaseRequest::private_owner`].
    pub fn private_owner(mut self, private_owner: bool) -> Self {
        self.private_owner = private_owner;
        self
    }
}

/// What a release did (every release of one hold ends one of these three
/// ways, whatever the kind).
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
#[non_exhaustive]
pub struct Holder {
    /// The holder as stored: `"<client-uuid>:<owner-id>"` for ours and a
    /// Java client's (see [`Holder::owner`]), kept raw so a field of
    /// another shape is shown as it is.
    pub field: String,
    /// How many times this holder has entered the lock.
    pub count: u64,
    /// The record of the client that holds it, when one was joined to the
    /// snapshot and its client keeps one (see [`ClientInfo`]): `None` for
    /// a holder of another library, a client gone for a few watchdog
    /// periods, and snapshots that do not join records.
    pub client: Option<ClientInfo>,
}

impl Holder {
    /// The holder `field`, holding `count` times, with no client record.
    pub fn new(field: impl Into<String>, count: u64) -> Self {
        Self {
            field: field.into(),
            count,
            client: None,
        }
    }

    /// With this client record.
    pub fn with_client(mut self, client: Option<ClientInfo>) -> Self {
        self.client = client;
        self
    }

    /// The owner, when the field has the `<client-uuid>:<owner-id>` shape:
    /// ours, and a Java client's `<client-uuid>:<thread-id>` (an
    /// [`Owner`] whose owner id is the thread id). `None` for other shapes.
    pub fn owner(&self) -> Option<Owner> {
        Owner::parse_field(&self.field)
    }
}

/// A snapshot of one lock.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LockInfo {
    /// Every holder (one for an exclusive lock; empty when free).
    pub holders: Vec<Holder>,
    /// Remaining time to live; `None` when free or without expiry.
    pub ttl: Option<Duration>,
}

impl LockInfo {
    /// A snapshot with these holders and time to live.
    pub fn new(holders: Vec<Holder>, ttl: Option<Duration>) -> Self {
        Self { holders, ttl }
    }

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

/// The store operations of one kind of exclusive, re-entrant lock, bound
/// to one client's connection. See the module docs for the contract every
/// implementation keeps.
#[async_trait]
pub trait ExclusiveKind: Send + Sync + 'static {
    /// How this kind's locks behave: its name (spans, metrics), hold side,
    /// queueing, hand-over, one hold per owner, re-check interval. The
    /// engine reads it for every difference between kinds; constant for
    /// one kind value.
    fn behaviour(&self) -> KindBehaviour;

    /// Takes the lock, or re-enters it if `req.owner` holds it; otherwise
    /// reports the holder's remaining time to live (for a kind whose waiters
    /// queue: how long to wait before looking again).
    ///
    /// # Errors
    /// [`crate::LockError::WrongType`] when the key holds a non-lock value;
    /// a retryable error when the store could not be reached.
    async fn try_acquire(&self, req: &AcquireRequest) -> Result<AcquireOutcome>;

    /// Releases one hold of `req.owner`; announces the unlock when it was the
    /// last one.
    ///
    /// # Errors
    /// As [`ExclusiveKind::try_acquire`].
    async fn release(&self, req: &ReleaseRequest) -> Result<ReleaseOutcome>;

    /// Extends the lease of every target that its owner still holds to at
    /// least `lease_ms` from now (never shortening it). Returns one entry
    /// per target, in order: `Ok(true)` renewed, `Ok(false)` no longer held
    /// by that owner, `Err` not known (the batch holding that target
    /// failed).
    ///
    /// # Errors
    /// A whole-call error when nothing could be sent at all.
    async fn renew(&self, targets: &[RenewTarget], lease_ms: u64) -> Result<Vec<Result<bool>>>;

    /// Which *lane* renews `target` now: the watchdog renews each lane on
    /// its own, all lanes at once, so a lane whose store does not answer
    /// (one node of many, waiting out its command timeout) delays no
    /// renewal of another lane. An opaque id; targets the store serves
    /// together (one node) share it. The default puts every target in one
    /// lane: right for a store that is one node.
    fn renew_lane(&self, target: &RenewTarget) -> u64 {
        let _ = target;
        0
    }

    /// Deletes the lock whoever holds it and announces the unlock. Returns
    /// whether it existed.
    ///
    /// # Errors
    /// As [`ExclusiveKind::try_acquire`].
    async fn force_unlock(&self, name: &LockName) -> Result<bool>;

    /// Reads the lock's holders and remaining time to live.
    ///
    /// # Errors
    /// As [`ExclusiveKind::try_acquire`].
    async fn inspect(&self, name: &LockName) -> Result<LockInfo>;

    /// Reads the fencing-token counter of `name` without acquiring: the
    /// last token handed out for that name (by any kind or client sharing
    /// the counter), `None` when none ever was. Writes nothing.
    ///
    /// The default is for kinds with no counter of their own to read: it
    /// answers [`crate::LockError::InvalidArgument`] without any I/O.
    ///
    /// # Errors
    /// [`crate::LockError::WrongType`] naming the counter's key when it
    /// holds something other than an integer (left untouched); otherwise
    /// as [`ExclusiveKind::try_acquire`].
    async fn last_fencing_token(&self, name: &LockName) -> Result<Option<u64>> {
        let _ = name;
        Err(crate::LockError::invalid(
            "this lock kind keeps no fencing-token counter to read",
        ))
    }

    /// The channel on which `owner`, waiting for `name`, is told that the
    /// lock may be free.
    fn channel(&self, name: &LockName, owner: &Owner) -> Channel;

    /// What a message on one of this kind's channels asks of its waiters;
    /// `None` for a message to ignore.
    fn wake(&self, payload: &[u8]) -> Option<Wake>;

    /// Removes `owner` from the queue of `name` (a waiter that gave up),
    /// telling the next waiter if the lock is free. On a kind that hands
    /// over ([`KindBehaviour::hands_over`]), a lock already granted to
    /// `wait_ticket` is given back (one hold), and handed on. Nothing for
    /// kinds whose waiters do not queue.
    ///
    /// # Errors
    /// As [`ExclusiveKind::try_acquire`].
    async fn leave_queue(
        &self,
        name: &LockName,
        owner: &Owner,
        wait_ticket: Option<u64>,
    ) -> Result<()> {
        let _ = (name, owner, wait_ticket);
        Ok(())
    }
}
