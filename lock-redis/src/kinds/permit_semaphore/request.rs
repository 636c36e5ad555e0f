//! The expirable-permit semaphore's vocabulary: permit ids, the requests
//! that take and give back leased permits, and what the store answers.
//!
//! A leased permit's acquisition is idempotent through its id: a repeat
//! finds the permit taken under that id and answers "acquired" again
//! without taking another. A release carries a request id and deadline,
//! as every give-back does ([`Redate`]).

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use lock_core::backend::{LeaseId, LeaseTarget, RequestId};
use lock_core::{LockError, LockName, Result};

/// The id of one taken permit of an expirable-permit semaphore: 16
/// random bytes, shown (and parsed) as 32 lower-case hexadecimal
/// characters.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PermitId(LeaseId);

impl PermitId {
    /// A fresh random id.
    pub fn new() -> Self {
        Self(LeaseId::new())
    }

    /// The id's 16 bytes (as stored).
    pub fn as_bytes(&self) -> &[u8; 16] {
        self.0.as_bytes()
    }
}

impl Default for PermitId {
    fn default() -> Self {
        Self::new()
    }
}

/// 32 lowercase hexadecimal characters, as the engine's lease ids.
impl fmt::Display for PermitId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl fmt::Debug for PermitId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PermitId({self})")
    }
}

impl FromStr for PermitId {
    type Err = LockError;

    /// Parses 32 hexadecimal characters (either case), as
    /// [`LeaseId`]'s parser, naming a permit id in its error.
    fn from_str(s: &str) -> Result<Self> {
        s.parse::<LeaseId>().map(Self).map_err(|_| {
            LockError::invalid(format!("{s:?} is not a permit id (32 hex characters)"))
        })
    }
}

impl From<PermitId> for LeaseId {
    fn from(id: PermitId) -> Self {
        id.0
    }
}

impl From<LeaseId> for PermitId {
    fn from(id: LeaseId) -> Self {
        Self(id)
    }
}

pub(crate) fn target(name: &LockName, id: PermitId) -> LeaseTarget {
    LeaseTarget {
        name: name.clone(),
        id: id.into(),
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

// Refused as stale, they never ran: made again as new requests.
lock_core::redate!(LeaseRelease, LeasesRelease);

/// [`LockError::NotHeld`] for `permit` (its id, or a description such as
/// "one of 3 permits") of the semaphore `name`: the kind's words, not the
/// engine's (a permit is not a lock, and has no owner).
pub(crate) fn permit_not_held(name: impl Into<String>, permit: impl fmt::Display) -> LockError {
    let name = name.into();
    LockError::NotHeld {
        what: format!("permit {permit} of semaphore {name:?}"),
        name,
    }
}

/// [`LockError::LockLost`] for the permit `permit` of the semaphore `name`.
pub(crate) fn permit_lost(name: impl Into<String>, permit: impl fmt::Display) -> LockError {
    let name = name.into();
    LockError::LockLost {
        what: format!("permit {permit} of semaphore {name:?}"),
        name,
    }
}

#[cfg(test)]
mod tests {
    use super::{permit_lost, permit_not_held};

    #[test]
    fn permit_errors_name_the_permit_and_its_semaphore() {
        // A permit is not a lock, and has no owner.
        assert_eq!(
            permit_not_held("pool", "p1").to_string(),
            "permit p1 of semaphore \"pool\" is not held"
        );
        assert_eq!(
            permit_lost("pool", "p1").to_string(),
            "permit p1 of semaphore \"pool\" was lost while held"
        );
        assert!(permit_lost("a", "p1").is_lock_lost());
    }
}
