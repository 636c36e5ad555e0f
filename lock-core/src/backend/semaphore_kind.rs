//! What the engine and the semaphore kinds share: permit counts and their
//! checks, the requests that change a count or lease a permit, and the
//! watchdog's seam for leased permits ([`PermitRenewal`]).
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
//!   kind's channel with a payload its wake reader reads; acquisitions
//!   and drains announce nothing.
//! - Counts stay within ±[`MAX_PERMITS`]: an operation that would leave the
//!   count outside fails with [`crate::LockError::InvalidArgument`] and
//!   writes nothing.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use async_trait::async_trait;

use crate::backend::kind::RequestId;
use crate::error::{LockError, Result};
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
pub fn check_change(delta: i128, what: &str) -> Result<()> {
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

/// The id of one taken permit of an expirable-permit semaphore: 16
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

/// A semaphore's permits as the expirable-permit semaphore kind counts them.
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

/// What is left of one permit's lease (the expirable-permit semaphore kind's `lease_time`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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

/// One leased permit to renew in a batch ([`PermitRenewal::renew`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PermitTarget {
    /// The semaphore.
    pub name: LockName,
    /// The permit.
    pub id: PermitId,
}

/// The watchdog's seam for leased permits: renews a batch of them. The
/// expirable-permit semaphore's kind implements it and registers each
/// permit a guard holds with the client ([`crate::backend::Engine::permits`]).
#[async_trait]
pub trait PermitRenewal: Send + Sync + 'static {
    /// Extends the lease of every target permit still taken to at least
    /// `lease_ms` from now, never shortening it (a permit without a lease
    /// keeps none): the watchdog's renewal of permit guards.
    /// Returns one entry per target, in order: `Ok(true)` renewed,
    /// `Ok(false)` not taken any more (released, expired, or its semaphore
    /// deleted), `Err` not known (the batch holding that target failed).
    ///
    /// # Errors
    /// A whole-call error when nothing could be sent at all.
    async fn renew(&self, targets: &[PermitTarget], lease_ms: u64) -> Result<Vec<Result<bool>>>;

    /// Gives back one permit by id: `true` when it was taken and is given
    /// back, `false` when it was not taken (any more). The client's close
    /// gives back its guards' permits with it.
    ///
    /// # Errors
    /// As a release by id of the kind's handle.
    async fn release(&self, req: &LeaseRelease) -> Result<bool>;

    /// Which lane renews `target` now, as
    /// [`crate::backend::ExclusiveKind::renew_lane`] for locks.
    fn renew_lane(&self, target: &PermitTarget) -> u64 {
        let _ = target;
        0
    }

    /// A short name of the kind, the `kind` of its metric labels (as
    /// [`KindBehaviour::name`](crate::backend::KindBehaviour::name)).
    fn kind_name(&self) -> &'static str {
        "permit_semaphore"
    }
}
