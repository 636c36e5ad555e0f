//! [`CountDownLatch`]: a distributed count-down latch, by name.
//!
//! # Promise
//! Someone sets a count ([`CountDownLatch::try_set_count`]); each
//! [`CountDownLatch::count_down`] takes one off; when it reaches zero the
//! latch is gone (open) and every waiter ([`CountDownLatch::wait`],
//! [`CountDownLatch::wait_for`]) of every client returns. A latch that was
//! never set, was deleted, or reached zero is open: waiting returns at
//! once. Once open it can be set again (a new round).
//!
//! Waiters are woken by the notice of the count-down that reached zero,
//! through the engine's shared wait loop ([`Counter::wait_until`]): read the
//! count, subscribe, read again, sleep until a notice. A notice that the
//! count was set or the latch deleted makes them read the count again.
//!
//! A count-down is retried after an unknown outcome with its request id,
//! so it never counts twice, and goes on in the background when the retry
//! policy runs out (as a permit given back does), so it is never lost to a
//! transient fault. Every call runs to completion in the client's runtime
//! when its caller goes away (the engine's [`Counter`]), as a semaphore's
//! do.

use std::sync::Arc;
use std::time::Duration;

use lock_core::backend::{Counter, Engine};
use lock_core::{LockError, LockName, Result};

use super::{Latch, LatchRequest};

/// The largest count a latch takes: counts are signed 64-bit integers in
/// the store, and kept exact up to this one (the store's scripts never
/// carry a count in a Lua number, a double that is exact only to 2^53).
/// A count another client stored beyond the 64-bit range is not a count:
/// operations on it fail with [`LockError::WrongType`].
pub const MAX_COUNT: u64 = i64::MAX as u64;

/// A handle on one named count-down latch
/// (`client.count_down_latch(name)`; see the module docs). Cheap to
/// clone; makes no I/O until used.
///
/// ```
/// # async fn demo(client: lock_redis::LockClient) -> lock_redis::Result<()> {
/// let latch = client.count_down_latch("batch:7")?;
/// latch.try_set_count(3).await?;
/// // … three workers each call `latch.count_down().await?` when done …
/// # for _ in 0..3 { latch.count_down().await?; }
/// latch.wait().await?; // returns once the third has counted down
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct CountDownLatch {
    counter: Counter<Latch>,
}

impl std::fmt::Debug for CountDownLatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CountDownLatch")
            .field("name", self.counter.name())
            .field("client", self.counter.engine())
            .finish_non_exhaustive()
    }
}

impl CountDownLatch {
    /// The latch called `name` of `kind`, on `engine`: what a client's
    /// `count_down_latch(name)` returns.
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] for an empty or over-long name, or a
    /// name this deployment cannot serve as a latch ([`Latch::check_name`]).
    pub fn new(engine: &Engine, name: impl AsRef<str>, kind: Arc<Latch>) -> Result<Self> {
        let name = LockName::new(name)?;
        kind.check_name(&name)?;
        Ok(Self {
            counter: Counter::new(engine, name, kind),
        })
    }

    /// The latch's name.
    pub fn name(&self) -> &LockName {
        self.counter.name()
    }

    /// Sets the count to `count` if the latch does not exist (is open);
    /// `false`, changing nothing, when it exists. Waiters are told to read
    /// the count again. Retried after an unknown outcome without setting
    /// the count twice.
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] for a count of 0 or above
    /// [`MAX_COUNT`] (before any I/O); [`LockError::WrongType`] when the
    /// latch's key holds something that is not a count (left untouched);
    /// [`LockError::Unavailable`] after the retry policy;
    /// [`LockError::Closed`].
    ///
    /// # Cancel safety
    /// The call runs to completion even when this future is dropped (as a
    /// semaphore's calls do); a retry never sets the count twice.
    pub async fn try_set_count(&self, count: u64) -> Result<bool> {
        if count == 0 || count > MAX_COUNT {
            return Err(LockError::invalid(format!(
                "a latch count must be between 1 and {MAX_COUNT}, not {count}"
            )));
        }
        self.counter
            .call(
                "try_set_count",
                self.request(),
                move |latch, req| async move { latch.try_set_count(&req, count).await },
            )
            .await
    }

    /// Counts down by one and returns the count left. At zero the latch is
    /// deleted and every waiter returns; counting down an open latch
    /// changes nothing (returns 0). Retried after an unknown outcome
    /// without counting twice.
    ///
    /// A count-down is given back to the latch as a permit is to a
    /// semaphore ([`Counter::give_back`]): when its outcome is still
    /// unknown after the retry policy (an outage, a master refusing
    /// writes), it goes on in the background until the store answers, so a
    /// latch waited on opens once the fault ends.
    ///
    /// # Errors
    /// As [`CountDownLatch::try_set_count`] (but for the count checks). A
    /// retryable error means the count-down goes on in the background: do
    /// not count down again for it.
    ///
    /// # Cancel safety
    /// The count-down runs to completion even when this future is dropped.
    pub async fn count_down(&self) -> Result<u64> {
        self.counter
            .give_back_one("count down", self.request())
            .await
    }

    /// The current count; 0 when the latch is open (not set, deleted, or
    /// counted down to zero). A count below zero written by another
    /// client reads as 0: such a latch is open.
    ///
    /// # Errors
    /// As [`CountDownLatch::count_down`].
    ///
    /// # Cancel safety
    /// Read-only: safe to drop.
    pub async fn count(&self) -> Result<u64> {
        let name = self.name().clone();
        self.counter
            .call("count", name, |latch, name| async move {
                latch.count(&name).await
            })
            .await
    }

    /// Deletes the latch whatever its count; whether it existed. Retried
    /// after an unknown outcome without deleting a count set since. Its
    /// waiters read the count again and, finding the latch open, return.
    ///
    /// # Errors
    /// As [`CountDownLatch::count_down`].
    ///
    /// # Cancel safety
    /// The call runs to completion even when this future is dropped; a
    /// retry never deletes a count set since.
    pub async fn delete(&self) -> Result<bool> {
        self.counter
            .call("delete", self.request(), |latch, req| async move {
                latch.delete(&req).await
            })
            .await
    }

    /// Waits until the latch is open (returns at once when it is).
    ///
    /// # Errors
    /// As [`CountDownLatch::count_down`].
    ///
    /// # Cancel safety
    /// Cancel-safe: dropping the future leaves no subscription behind.
    pub async fn wait(&self) -> Result<()> {
        self.wait_until(None).await.map(drop)
    }

    /// Waits up to `wait` for the latch to open: `true` when it did,
    /// `false` when the time ran out first (the bound is named `wait`, as
    /// in a lock's `try_lock_for(wait)`).
    ///
    /// # Errors
    /// As [`CountDownLatch::wait`].
    ///
    /// # Cancel safety
    /// As [`CountDownLatch::wait`].
    pub async fn wait_for(&self, wait: Duration) -> Result<bool> {
        self.wait_until(Some(wait)).await
    }

    /// Waits through the engine's wait loop until a read of the count
    /// finds the latch open, or `wait` runs out (`None`: never).
    async fn wait_until(&self, wait: Option<Duration>) -> Result<bool> {
        let name = self.name().clone();
        self.counter.wait_until("count", wait, name).await
    }

    /// A write with a fresh request id, recorded for the client's record ttl.
    fn request(&self) -> LatchRequest {
        LatchRequest::new(self.name().clone(), self.counter.request_deadline())
    }
}
