//! What both semaphore kinds share: the bound on permit counts and its
//! checks, and [`PermitRequest`], one change of a count.
//!
//! # Contract
//! - Operations that change the count carry a request id
//!   ([`PermitRequest::request_id`]): a repeat with the same id returns the
//!   first outcome without applying it twice, and a request that has not
//!   run by its deadline (`deadline_ms`) never runs (see lock-core's
//!   `store_clock` module), so the engine can retry after an unknown
//!   outcome; "no permits free" is an outcome too, so a late duplicate of
//!   an attempt that found none takes none after its caller moved on.
//! - Counts stay within ±[`MAX_PERMITS`]: an operation that would leave the
//!   count outside fails with [`LockError::InvalidArgument`] and writes
//!   nothing.

use lock_core::backend::RequestId;
use lock_core::{LockError, LockName, Result};

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

// A give-back refused as stale never ran: made again as a new request.
lock_core::redate!(PermitRequest);
