//! The watchdog's seam for the leases of a counting kind (a semaphore
//! whose taken permits expire): [`LeaseTarget`] names one lease by its
//! counter and an id the kind chose ([`LeaseId`]), and [`LeaseRenewal`]
//! renews and gives back batches of them. The engine knows nothing else
//! of what a lease is.

use std::fmt;
use std::str::FromStr;

use async_trait::async_trait;

use crate::backend::kind::RequestId;
use crate::error::{LockError, Result};
use crate::name::LockName;

/// The id of one lease of a counting kind: 16 bytes the kind chose (a
/// fresh random id per lease), shown (and parsed) as 32 lower-case
/// hexadecimal characters.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct LeaseId([u8; 16]);

impl LeaseId {
    /// A fresh random id.
    pub fn new() -> Self {
        Self(*uuid::Uuid::new_v4().as_bytes())
    }

    /// The id of these 16 bytes.
    pub fn from_bytes(bytes: [u8; 16]) -> Self {
        Self(bytes)
    }

    /// The id's 16 bytes (as stored).
    pub fn as_bytes(&self) -> &[u8; 16] {
        &self.0
    }
}

impl Default for LeaseId {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Display for LeaseId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for LeaseId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "LeaseId({self})")
    }
}

impl FromStr for LeaseId {
    type Err = LockError;

    /// Parses 32 hexadecimal characters (either case).
    ///
    /// ```
    /// # use lock_core::backend::LeaseId;
    /// let id: LeaseId = "00112233445566778899aabbccddeeff".parse().unwrap();
    /// assert_eq!(id.to_string(), "00112233445566778899aabbccddeeff");
    /// assert!("xyz".parse::<LeaseId>().is_err());
    /// ```
    fn from_str(s: &str) -> Result<Self> {
        let bad = || LockError::invalid(format!("{s:?} is not an id (32 hex characters)"));
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

/// One lease to renew or give back: its counter and its id.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LeaseTarget {
    /// The counter.
    pub name: LockName,
    /// The lease.
    pub id: LeaseId,
}

/// The watchdog's seam for the leases of a counting kind: renews a batch
/// of them, gives one back. The kind implements it and registers each
/// lease a guard holds with the client
/// ([`crate::backend::Engine::permits`]).
#[async_trait]
pub trait LeaseRenewal: Send + Sync + 'static {
    /// Extends every target lease still held to at least `lease_ms` from
    /// now, never shortening it (a lease without expiry keeps none): the
    /// watchdog's renewal of lease guards. Returns one entry per target,
    /// in order: `Ok(true)` renewed, `Ok(false)` not held any more
    /// (given back, expired, or its counter deleted), `Err` not known (the
    /// batch holding that target failed).
    ///
    /// # Errors
    /// A whole-call error when nothing could be sent at all.
    async fn renew(&self, targets: &[LeaseTarget], lease_ms: u64) -> Result<Vec<Result<bool>>>;

    /// Gives back one lease by id, as the request `request_id` with
    /// deadline `deadline_ms` (recorded as every give-back is: a repeat
    /// answers the first outcome): `true` when it was held and is given
    /// back, `false` when it was not (any more). The client's close gives
    /// back its guards' leases with it.
    ///
    /// # Errors
    /// As a give-back by id of the kind's handle.
    async fn release(
        &self,
        target: &LeaseTarget,
        request_id: RequestId,
        deadline_ms: u64,
    ) -> Result<bool>;

    /// Which lane renews `target` now, as
    /// [`crate::backend::ExclusiveKind::renew_lane`] for locks.
    fn renew_lane(&self, target: &LeaseTarget) -> u64 {
        let _ = target;
        0
    }

    /// A short name of the kind, the `kind` of its metric labels (as an
    /// exclusive kind's name is).
    fn kind_name(&self) -> &'static str;
}
