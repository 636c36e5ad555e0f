//! The seams between the engine and the counting kinds' store operations:
//! [`SemaphoreKind`] (a counter of free permits) and [`PermitSemaphoreKind`]
//! (the same counter, with each taken permit named and leased).
//!
//! # Contract
//! - Each operation is atomic on the store.
//! - Operations that change the count carry a request id
//!   ([`PermitRequest::request_id`]): a repeat with the same id returns the
//!   first outcome without applying it twice, and a request that has
//!   not run by its deadline (`deadline_ms`) never runs (see lock-core's
//!   `store_clock` module), so the
//!   engine can retry after an unknown outcome; "no permits free" is an
//!   outcome too, so a late duplicate of an attempt that found none takes
//!   none after its caller moved on. A leased permit's acquisition is
//!   idempotent through its id instead: a repeat finds the permit taken
//!   under that id and answers "acquired" again without taking another.
//! - Every increase of the free count (a release, a positive addition,
//!   setting the permits, an expired lease reclaimed) is announced on the
//!   kind's channel ([`SemaphoreKind::channel`]) with a payload that
//!   [`SemaphoreKind::wake`] reads; acquisitions and drains announce
//!   nothing.
//! - Counts stay within ±[`MAX_PERMITS`]: an operation that would leave the
//!   count outside fails with [`crate::LockError::InvalidArgument`] and
//!   writes nothing.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use async_trait::async_trait;

use crate::connection::{Channel, Wake};
use crate::error::{LockError, Result};
use crate::kind::RequestId;
use crate::name::LockName;

/// The most permits a semaphore can count, ask for or give back at once:
/// `i32::MAX`, because Java clients sharing a semaphore read the count as
/// an `int`. Asking for more (or for 0) is refused before any I/O.
pub const MAX_PERMITS: u64 = i32::MAX as u64;

/// Checks a permit count asked for or given back: 1..=[`MAX_PERMITS`].
///
/// # Errors
/// [`LockError::InvalidArgument`] naming `what`.
pub fn check_permits(n: u64, what: &str) -> Result<()> {
    if n == 0 {
        return Err(LockError::invalid(format!(
            "{what}: permits must be at least 1"
        )));
    }
    if n > MAX_PERMITS {
        return Err(LockError::invalid(format!(
            "{what}: {n} permits is more than a semaphore can ever hold ({MAX_PERMITS})"
        )));
    }
    Ok(())
}

/// Checks a count to set (0..=[`MAX_PERMITS`]) or a change to add
/// (±[`MAX_PERMITS`]), before any I/O.
///
/// # Errors
/// [`LockError::InvalidArgument`] naming `what`.
pub(crate) fn check_change(delta: i128, what: &str) -> Result<()> {
    if delta.unsigned_abs() > u128::from(MAX_PERMITS) {
        return Err(LockError::invalid(format!(
            "{what}: {delta} is more than a semaphore can hold (±{MAX_PERMITS})"
        )));
    }
    Ok(())
}

/// One change of a semaphore's count, identified across retries.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PermitRequest {
    /// The semaphore.
    pub name: LockName,
    /// How many permits (taken, given back, or added: negative removes).
    pub permits: i64,
    /// Identifies this change across retries.
    pub request_id: RequestId,
    /// The request's deadline on the store's clock, in milliseconds since
    /// the Unix epoch: the store runs it only before then, and keeps its
    /// outcome until past then (see the `store_clock` module of lock-core).
    pub deadline_ms: u64,
}

impl PermitRequest {
    /// The same operation as a new request (a fresh id) with deadline
    /// `deadline_ms`: for one refused as stale, which never ran.
    pub fn redated(mut self, deadline_ms: u64) -> Self {
        self.request_id = RequestId::new();
        self.deadline_ms = deadline_ms;
        self
    }

    /// A change of `permits` with a fresh request id.
    pub fn new(name: LockName, permits: i64, deadline_ms: u64) -> Self {
        Self {
            name,
            permits,
            request_id: RequestId::new(),
            deadline_ms,
        }
    }
}

/// The store operations of a semaphore: a counter of free permits that
/// anyone may take from or give back to. See the module docs for the
/// contract.
#[async_trait]
pub trait SemaphoreKind: Send + Sync + 'static {
    /// Sets the count to `req.permits` when the semaphore does not exist
    /// yet, with a time to live when `ttl_ms` is given; `false` when it
    /// existed (left as it was). Recorded by `req.request_id`: a repeat
    /// answers the first reply (`true` when the first run created it).
    ///
    /// # Errors
    /// [`LockError::WrongType`] when the key holds something that is not a
    /// count (left untouched); a retryable error when the store could not
    /// be reached.
    async fn try_set_permits(&self, req: &PermitRequest, ttl_ms: Option<u64>) -> Result<bool>;

    /// Adds `req.permits` (negative: removes) to the count, creating it at
    /// 0 first when missing. Drops the count's time to live.
    ///
    /// # Errors
    /// As [`SemaphoreKind::try_set_permits`]; [`LockError::InvalidArgument`]
    /// when the count would leave ±[`MAX_PERMITS`].
    async fn add_permits(&self, req: &PermitRequest) -> Result<()>;

    /// The free permits now (0 for a semaphore that does not exist; may be
    /// negative after permits were removed while taken).
    ///
    /// # Errors
    /// As [`SemaphoreKind::try_set_permits`].
    async fn available_permits(&self, name: &LockName) -> Result<i64>;

    /// Takes `req.permits` if that many are free; `false` otherwise.
    ///
    /// # Errors
    /// As [`SemaphoreKind::try_set_permits`].
    async fn try_acquire(&self, req: &PermitRequest) -> Result<bool>;

    /// Gives back `req.permits` (whoever took them), creating the count when
    /// missing, and announces the new count.
    ///
    /// # Errors
    /// As [`SemaphoreKind::add_permits`].
    async fn release(&self, req: &PermitRequest) -> Result<()>;

    /// Gives back `req.permits` when the semaphore exists, as
    /// [`SemaphoreKind::release`]; `false` (nothing written, nothing
    /// announced) when it does not.
    ///
    /// # Errors
    /// As [`SemaphoreKind::add_permits`].
    async fn release_if_exists(&self, req: &PermitRequest) -> Result<bool>;

    /// Takes every free permit; returns how many that was (0 when none or
    /// the count is negative, which it leaves alone).
    ///
    /// # Errors
    /// As [`SemaphoreKind::try_set_permits`].
    async fn drain_permits(&self, req: &PermitRequest) -> Result<i64>;

    /// The channel on which waiters of `name` are told of freed permits.
    fn channel(&self, name: &LockName) -> Channel;

    /// What a message on the channel asks of its waiters; `None` to ignore.
    fn wake(&self, payload: &[u8]) -> Option<Wake>;
}

/// The id of one taken permit of a [`crate::PermitExpirableSemaphore`]: 16
/// random bytes, shown (and parsed) as 32 lower-case hexadecimal
/// characters.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PermitId([u8; 16]);

impl PermitId {
    /// A fresh random id.
    pub fn new() -> Self {
        Self(*uuid::Uuid::new_v4().as_bytes())
    }

    /// The id's 16 bytes (as stored).
    pub fn as_bytes(&self) -> &[u8; 16] {
        &self.0
    }
}

impl Default for PermitId {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Display for PermitId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for PermitId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PermitId({self})")
    }
}

impl FromStr for PermitId {
    type Err = LockError;

    /// Parses 32 hexadecimal characters (either case).
    ///
    /// ```
    /// # use lock_core::PermitId;
    /// let id: PermitId = "00112233445566778899aabbccddeeff".parse().unwrap();
    /// assert_eq!(id.to_string(), "00112233445566778899aabbccddeeff");
    /// assert!("xyz".parse::<PermitId>().is_err());
    /// ```
    fn from_str(s: &str) -> Result<Self> {
        let bad = || LockError::invalid(format!("{s:?} is not a permit id (32 hex characters)"));
        if s.len() != 32 || !s.is_ascii() {
            return Err(bad());
        }
        let mut out = [0u8; 16];
        for (i, byte) in out.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).map_err(|_| bad())?;
        }
        Ok(Self(out))
    }
}

/// One attempt to take a leased permit under a fresh id.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct LeaseRequest {
    /// The semaphore.
    pub name: LockName,
    /// The permit's id (the request's identity across retries).
    pub id: PermitId,
    /// The lease in milliseconds; `None`: the permit never expires.
    pub lease_ms: Option<u64>,
}

impl LeaseRequest {
    /// A request for a permit with a fresh id.
    pub fn new(name: LockName, lease_ms: Option<u64>) -> Self {
        Self {
            name,
            id: PermitId::new(),
            lease_ms,
        }
    }
}

/// What an attempt at a leased permit found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LeaseOutcome {
    /// The permit is taken under the request's id.
    Acquired,
    /// None free. `retry_in`: when the earliest lease of a taken permit
    /// ends (a permit then comes back by itself); `None` when no taken
    /// permit expires.
    Busy {
        /// Time until the earliest lease ends.
        retry_in: Option<Duration>,
    },
}

/// One attempt to take several leased permits at once, under fresh ids.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct LeasesRequest {
    /// The semaphore.
    pub name: LockName,
    /// One id per permit (the request's identity across retries).
    pub ids: Vec<PermitId>,
    /// The lease of every permit in milliseconds; `None`: no expiry.
    pub lease_ms: Option<u64>,
}

impl LeasesRequest {
    /// A request for `n` permits with fresh ids.
    pub fn new(name: LockName, n: usize, lease_ms: Option<u64>) -> Self {
        Self {
            name,
            ids: (0..n).map(|_| PermitId::new()).collect(),
            lease_ms,
        }
    }
}

/// The release of several leased permits at once, identified across
/// retries.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct LeasesRelease {
    /// The semaphore.
    pub name: LockName,
    /// The permits (no id twice).
    pub ids: Vec<PermitId>,
    /// Identifies this release across retries.
    pub request_id: RequestId,
    /// The request's deadline on the store's clock, in milliseconds since
    /// the Unix epoch: the store runs it only before then, and keeps its
    /// outcome until past then (see the `store_clock` module of lock-core).
    pub deadline_ms: u64,
}

impl LeasesRelease {
    /// The same operation as a new request (a fresh id) with deadline
    /// `deadline_ms`: for one refused as stale, which never ran.
    pub fn redated(mut self, deadline_ms: u64) -> Self {
        self.request_id = RequestId::new();
        self.deadline_ms = deadline_ms;
        self
    }

    /// The release of `ids` with a fresh request id.
    pub fn new(name: LockName, ids: Vec<PermitId>, deadline_ms: u64) -> Self {
        Self {
            name,
            ids,
            request_id: RequestId::new(),
            deadline_ms,
        }
    }
}

/// A semaphore's permits as counted by [`PermitSemaphoreKind::counts`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct PermitCounts {
    /// Whether the count exists (a semaphore never set, or deleted, has
    /// none).
    pub exists: bool,
    /// The free permits (0 without a count; negative after permits were
    /// removed while taken).
    pub available: i64,
    /// The taken permits (live leases, and leases without expiry).
    pub acquired: i64,
}

impl PermitCounts {
    /// The counts as given.
    pub fn new(exists: bool, available: i64, acquired: i64) -> Self {
        Self {
            exists,
            available,
            acquired,
        }
    }

    /// The total, free and taken (Redisson's `getPermits`): 0 when the
    /// count does not exist, whatever is taken.
    pub fn permits(&self) -> i64 {
        if self.exists {
            self.available.saturating_add(self.acquired)
        } else {
            0
        }
    }
}

/// What is left of one permit's lease ([`PermitSemaphoreKind::lease_time`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PermitLease {
    /// The permit is not taken (never was, released, or its lease ended).
    NotTaken,
    /// Taken without a lease: it never expires.
    Unlimited,
    /// Taken; the lease ends after this long.
    Ends(Duration),
}

/// The release of one leased permit, identified across retries.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct LeaseRelease {
    /// The semaphore.
    pub name: LockName,
    /// The permit.
    pub id: PermitId,
    /// Identifies this release across retries.
    pub request_id: RequestId,
    /// The request's deadline on the store's clock, in milliseconds since
    /// the Unix epoch: the store runs it only before then, and keeps its
    /// outcome until past then (see the `store_clock` module of lock-core).
    pub deadline_ms: u64,
}

impl LeaseRelease {
    /// The same operation as a new request (a fresh id) with deadline
    /// `deadline_ms`: for one refused as stale, which never ran.
    pub fn redated(mut self, deadline_ms: u64) -> Self {
        self.request_id = RequestId::new();
        self.deadline_ms = deadline_ms;
        self
    }

    /// The release of `id` with a fresh request id.
    pub fn new(name: LockName, id: PermitId, deadline_ms: u64) -> Self {
        Self {
            name,
            id,
            request_id: RequestId::new(),
            deadline_ms,
        }
    }
}

/// One leased permit to renew in a batch ([`PermitSemaphoreKind::renew`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PermitTarget {
    /// The semaphore.
    pub name: LockName,
    /// The permit.
    pub id: PermitId,
}

/// The store operations of a semaphore whose taken permits have ids and
/// leases; expired permits come back by themselves (every operation
/// reclaims them first and announces the new count). See the module docs
/// for the contract.
#[async_trait]
pub trait PermitSemaphoreKind: Send + Sync + 'static {
    /// As [`SemaphoreKind::try_set_permits`], without a time to live.
    ///
    /// # Errors
    /// As [`SemaphoreKind::try_set_permits`].
    async fn try_set_permits(&self, req: &PermitRequest) -> Result<bool>;

    /// Sets the total number of permits (free and taken) to `req.permits`:
    /// the free count moves by the difference (and may go negative while
    /// permits are taken); creates the count when missing. Announced unless
    /// the total was already that. Recorded by `req.request_id`.
    ///
    /// # Errors
    /// As [`SemaphoreKind::add_permits`].
    async fn set_permits(&self, req: &PermitRequest) -> Result<()>;

    /// The free and the taken permits now, after reclaiming expired ones.
    ///
    /// # Errors
    /// As [`SemaphoreKind::try_set_permits`].
    async fn counts(&self, name: &LockName) -> Result<PermitCounts>;

    /// How long the lease of the permit `id` still runs.
    ///
    /// # Errors
    /// As [`SemaphoreKind::try_set_permits`].
    async fn lease_time(&self, name: &LockName, id: PermitId) -> Result<PermitLease>;

    /// Takes `req.ids.len()` permits at once, one under each id, if that
    /// many are free; idempotent through the ids as
    /// [`PermitSemaphoreKind::try_acquire`].
    ///
    /// # Errors
    /// As [`SemaphoreKind::try_set_permits`].
    async fn try_acquire_many(&self, req: &LeasesRequest) -> Result<LeaseOutcome>;

    /// Gives back every permit of `req.ids`, all or none: the number given
    /// back, 0 when one of them is not taken. Recorded by `req.request_id`.
    ///
    /// # Errors
    /// As [`SemaphoreKind::try_set_permits`].
    async fn release_many(&self, req: &LeasesRelease) -> Result<u64>;

    /// As [`SemaphoreKind::add_permits`].
    ///
    /// # Errors
    /// As [`SemaphoreKind::add_permits`].
    async fn add_permits(&self, req: &PermitRequest) -> Result<()>;

    /// The free permits now, after reclaiming expired ones.
    ///
    /// # Errors
    /// As [`SemaphoreKind::try_set_permits`].
    async fn available_permits(&self, name: &LockName) -> Result<i64>;

    /// Takes one permit under `req.id` if one is free.
    ///
    /// # Errors
    /// As [`SemaphoreKind::try_set_permits`].
    async fn try_acquire(&self, req: &LeaseRequest) -> Result<LeaseOutcome>;

    /// Gives back the permit `req.id`; `false` when it is not taken (never
    /// was, released, or its lease ended).
    ///
    /// # Errors
    /// As [`SemaphoreKind::try_set_permits`].
    async fn release(&self, req: &LeaseRelease) -> Result<bool>;

    /// Sets the lease of the taken permit `id` to `lease_ms` from now
    /// (`None`: no expiry); `false` when it is not taken.
    ///
    /// # Errors
    /// As [`SemaphoreKind::try_set_permits`].
    async fn update_lease(
        &self,
        name: &LockName,
        id: PermitId,
        lease_ms: Option<u64>,
    ) -> Result<bool>;

    /// Extends the lease of every target permit still taken to at least
    /// `lease_ms` from now, never shortening it (a permit without a lease
    /// keeps none): the watchdog's renewal of [`crate::ExpirablePermit`]s.
    /// Returns one entry per target, in order: `Ok(true)` renewed,
    /// `Ok(false)` not taken any more (released, expired, or its semaphore
    /// deleted), `Err` not known (the batch holding that target failed).
    ///
    /// # Errors
    /// A whole-call error when nothing could be sent at all.
    async fn renew(&self, targets: &[PermitTarget], lease_ms: u64) -> Result<Vec<Result<bool>>>;

    /// Which lane renews `target` now, as
    /// [`crate::backend::ExclusiveKind::renew_lane`] for locks.
    fn renew_lane(&self, target: &PermitTarget) -> u64 {
        let _ = target;
        0
    }

    /// A short name of the kind, the `kind` of its metric labels (as
    /// [`crate::backend::ExclusiveKind::kind_name`]).
    fn kind_name(&self) -> &'static str {
        "permit_semaphore"
    }

    /// The channel on which waiters of `name` are told of freed permits.
    fn channel(&self, name: &LockName) -> Channel;

    /// What a message on the channel asks of its waiters; `None` to ignore.
    fn wake(&self, payload: &[u8]) -> Option<Wake>;
}
