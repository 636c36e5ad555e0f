//! [`Semaphore`]: a distributed counting semaphore, by name, and its
//! [`PermitGuard`].
//!
//! # Promise
//! The store keeps one count of free permits per name. An acquisition
//! takes one permit (`acquire`, `try_acquire`, `try_acquire_for`), or `n`
//! at once or none: "if free ≥ n, take n", atomically (the `_many` forms,
//! `n` first, named as on [`lock_redis::PermitExpirableSemaphore`]). A
//! release gives `n` back — anyone may release, the store does not know who
//! took what — and tells waiters how many are free, which wakes up to that
//! many waiters of each client. Waiting is the engine's wait loop: no
//! polling; without a notice (one lost with a dropped connection) a waiter
//! looks again after [`lock_core::ClientConfig::no_ttl_recheck`]. There is no
//! queue: a waiter asking for many permits can be overtaken by ones asking
//! for few.
//!
//! Permits have no lease: a holder that dies keeps its permits taken until
//! someone releases them (use a [`lock_redis::PermitExpirableSemaphore`] for
//! permits that come back by themselves).
//!
//! Retried changes (after a lost reply) never count twice: each carries a
//! request id and a deadline (`record_ttl` after it was made); the store
//! runs it only before its deadline and keeps its outcome until past then,
//! so no copy of it applies twice however late it arrives. A dropped
//! acquisition gives back whatever it took.
//!
//! # Permits are never lost to a transient fault
//! An acquisition whose outcome stays unknown (a lost reply, a frozen
//! server, an outage) is repeated in the background until the store
//! answers, and what it took is given back. A release
//! ([`PermitGuard::release`], a dropped guard, [`Semaphore::release`]) that
//! fails after the retry policy goes on in the background until the store
//! answers it (the same request while it may still run, a new one once the
//! store refused it as stale), until the client's close is over; the
//! caller who sees the error must not give the permits back again.
//!
//! # Closing
//! Each guard handed out is registered with its client
//! ([`lock_core::backend::LivePermits`]), so the client's close gives its
//! permits back; the guard then sends nothing, and its release answers
//! [`LockError::Closed`]. Permits a guard [forgot](PermitGuard::forget)
//! are nobody's: a close leaves them taken.
//!
//! What cannot be promised: a store that loses data (a restart without
//! persistence, a failover to a replica that had not received the last
//! writes) loses the count and the requests' records with it, so a
//! semaphore may come back with another count; `appendfsync always` on
//! the server, or replica sync, narrow that. Permits given back by a
//! client that is closed (or whose process dies) before the store answered
//! stay taken.

use std::sync::Arc;
use std::time::Duration;

use super::{check_change, check_permits, PermitRequest};
use lock_core::backend::{Counter, Engine, LivePermit};
use lock_core::{lease_millis, LockError, LockName, Result};

use super::SemaphoreStore;

/// A handle on one named semaphore (`client.semaphore(name)`). Cheap to
/// clone; makes no I/O until used. See the module docs for its promise.
///
/// ```
/// # async fn demo(client: lock_redis::LockClient) -> lock_redis::Result<()> {
/// let jobs = client.semaphore("jobs")?;
/// jobs.try_set_permits(4).await?;           // at most 4 at once
/// let permit = jobs.acquire().await?;       // waits for a free permit
/// // … one of at most 4 …
/// permit.release().await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Semaphore {
    counter: Counter<SemaphoreStore>,
}

impl std::fmt::Debug for Semaphore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Semaphore")
            .field("name", self.counter.name())
            .finish_non_exhaustive()
    }
}

impl Semaphore {
    /// The semaphore called `name` of `kind`, on `engine`: what a
    /// client's `semaphore(name)` returns.
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] for an empty or over-long name.
    pub fn new(engine: &Engine, name: impl AsRef<str>, kind: Arc<SemaphoreStore>) -> Result<Self> {
        let name = LockName::new(name)?;
        Ok(Self {
            counter: Counter::new(engine, name, kind),
        })
    }

    fn request(&self, permits: u64) -> PermitRequest {
        // Checked against MAX_PERMITS, so it fits.
        let n = i64::try_from(permits).unwrap_or(i64::MAX);
        PermitRequest::new(self.name().clone(), n, self.counter.request_deadline())
    }

    /// The semaphore's name.
    pub fn name(&self) -> &LockName {
        self.counter.name()
    }

    /// Creates the semaphore with `permits` free permits, unless it exists;
    /// returns whether it was created. Waiters are told.
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] above [`MAX_PERMITS`](crate::MAX_PERMITS) (before any
    /// I/O); [`LockError::WrongType`] when the key holds something else
    /// (left untouched); store errors after the retry policy;
    /// [`LockError::Closed`].
    ///
    /// # Cancel safety
    /// The call runs to completion even when this future is dropped.
    ///
    /// # Examples
    /// ```
    /// # async fn demo(sem: lock_redis::Semaphore) -> lock_redis::Result<()> {
    /// assert!(sem.try_set_permits(3).await?);
    /// assert!(!sem.try_set_permits(5).await?); // exists already
    /// assert_eq!(sem.available_permits().await?, 3);
    /// # Ok(()) }
    /// ```
    pub async fn try_set_permits(&self, permits: u64) -> Result<bool> {
        self.set_permits(permits, None).await
    }

    /// As [`Semaphore::try_set_permits`], with the whole semaphore
    /// expiring after `ttl` (releases and acquisitions keep that time to
    /// live; [`Semaphore::add_permits`] and [`Semaphore::drain_permits`]
    /// drop it).
    ///
    /// # Errors
    /// As [`Semaphore::try_set_permits`]; [`LockError::InvalidArgument`]
    /// for a zero or over-long `ttl`.
    ///
    /// # Cancel safety
    /// As [`Semaphore::try_set_permits`].
    pub async fn try_set_permits_with_ttl(&self, permits: u64, ttl: Duration) -> Result<bool> {
        let ttl_ms = lease_millis(ttl, "semaphore ttl")?;
        self.set_permits(permits, Some(ttl_ms)).await
    }

    async fn set_permits(&self, permits: u64, ttl_ms: Option<u64>) -> Result<bool> {
        check_change(i128::from(permits), "try_set_permits")?;
        // One request id for every retry: a retry after a lost reply
        // answers whether the first attempt created the semaphore.
        let req = self.request(permits);
        self.counter
            .call("try_set_permits", req, move |store, req| async move {
                store.try_set_permits(&req, ttl_ms).await
            })
            .await
    }

    /// Adds `delta` permits (a negative `delta` removes them, and the count
    /// may go below zero while permits are taken), creating the semaphore
    /// at 0 first when missing. Waiters are told the new count.
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] when `|delta|` is above
    /// [`MAX_PERMITS`](crate::MAX_PERMITS) (before any I/O) or the count would leave
    /// ±[`MAX_PERMITS`](crate::MAX_PERMITS) (nothing written); otherwise as
    /// [`Semaphore::try_set_permits`].
    ///
    /// # Cancel safety
    /// As [`Semaphore::try_set_permits`]; a retry never adds twice.
    pub async fn add_permits(&self, delta: i64) -> Result<()> {
        check_change(i128::from(delta), "add_permits")?;
        let mut req = self.request(0);
        req.permits = delta;
        self.counter
            .call("add_permits", req, |store, req| async move {
                store.add_permits(&req).await
            })
            .await
    }

    /// The free permits now: 0 for a semaphore never set, negative after
    /// permits were removed while taken.
    ///
    /// # Errors
    /// As [`Semaphore::try_set_permits`].
    ///
    /// # Cancel safety
    /// Read-only; safe to drop.
    pub async fn available_permits(&self) -> Result<i64> {
        let name = self.name().clone();
        self.counter
            .call("available_permits", name, |store, name| async move {
                store.available_permits(&name).await
            })
            .await
    }

    /// Takes every free permit; returns how many. Not announced. Drops the
    /// semaphore's time to live.
    ///
    /// # Errors
    /// As [`Semaphore::try_set_permits`].
    ///
    /// # Cancel safety
    /// As [`Semaphore::try_set_permits`]; a retry never drains twice.
    pub async fn drain_permits(&self) -> Result<i64> {
        let req = self.request(0);
        self.counter
            .call("drain_permits", req, |store, req| async move {
                store.drain_permits(&req).await
            })
            .await
    }

    /// Takes a permit, waiting as long as it takes
    /// ([`Semaphore::acquire_many`] of one).
    ///
    /// # Errors
    /// As [`Semaphore::try_set_permits`].
    ///
    /// # Cancel safety
    /// As [`Semaphore::acquire_many`].
    ///
    /// # Examples
    /// ```
    /// # async fn demo(sem: lock_redis::Semaphore) -> lock_redis::Result<()> {
    /// let permit = sem.acquire().await?;
    /// assert_eq!(permit.permits(), 1);
    /// permit.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn acquire(&self) -> Result<PermitGuard> {
        self.acquire_many(1).await
    }

    /// Takes `n` permits at once, waiting as long as it takes.
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] for `n` = 0 or above [`MAX_PERMITS`](crate::MAX_PERMITS)
    /// (before any I/O); otherwise as [`Semaphore::try_set_permits`].
    ///
    /// # Cancel safety
    /// Cancel-safe: dropping the future leaves no permit taken and no
    /// subscription behind (permits taken by an attempt on the wire are
    /// given back in the background).
    ///
    /// # Examples
    /// ```
    /// # async fn demo(sem: lock_redis::Semaphore) -> lock_redis::Result<()> {
    /// let permits = sem.acquire_many(2).await?;
    /// assert_eq!(permits.permits(), 2);
    /// permits.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn acquire_many(&self, n: u64) -> Result<PermitGuard> {
        match self.acquire_within(n, None).await? {
            Some(guard) => Ok(guard),
            None => Err(LockError::protocol(
                "an unbounded wait ended without permits",
            )),
        }
    }

    /// Takes a permit if one is free now; `Ok(None)` otherwise.
    ///
    /// # Errors
    /// As [`Semaphore::acquire`].
    ///
    /// # Cancel safety
    /// As [`Semaphore::acquire_many`].
    pub async fn try_acquire(&self) -> Result<Option<PermitGuard>> {
        self.try_acquire_many(1).await
    }

    /// Takes `n` permits at once if they are free now; `Ok(None)`
    /// otherwise.
    ///
    /// # Errors
    /// As [`Semaphore::acquire_many`].
    ///
    /// # Cancel safety
    /// As [`Semaphore::acquire_many`].
    pub async fn try_acquire_many(&self, n: u64) -> Result<Option<PermitGuard>> {
        self.acquire_within(n, Some(Duration::ZERO)).await
    }

    /// Takes a permit, waiting up to `wait`; `Ok(None)` when the wait ran
    /// out.
    ///
    /// # Errors
    /// As [`Semaphore::acquire`].
    ///
    /// # Cancel safety
    /// As [`Semaphore::acquire_many`].
    pub async fn try_acquire_for(&self, wait: Duration) -> Result<Option<PermitGuard>> {
        self.try_acquire_many_for(1, wait).await
    }

    /// Takes `n` permits at once, waiting up to `wait`; `Ok(None)` when the
    /// wait ran out.
    ///
    /// # Errors
    /// As [`Semaphore::acquire_many`].
    ///
    /// # Cancel safety
    /// As [`Semaphore::acquire_many`].
    pub async fn try_acquire_many_for(
        &self,
        n: u64,
        wait: Duration,
    ) -> Result<Option<PermitGuard>> {
        self.acquire_within(n, Some(wait)).await
    }

    async fn acquire_within(&self, n: u64, wait: Option<Duration>) -> Result<Option<PermitGuard>> {
        check_permits(n, "acquire")?;
        let fresh = || self.request(n);
        let Some(taken) = self.counter.acquire("acquire permits", wait, fresh).await? else {
            return Ok(None);
        };
        // The caller's now: its guard is registered with its client. The
        // take stops counting as in flight only after that (or after the
        // guard's give-back counts itself), so a close waiting for what is
        // in flight cannot end in between.
        let guard = PermitGuard::new(self.clone(), n);
        if guard.live.is_none() {
            // Taken while the client closed: dropped, it gives them back.
            drop(guard);
            taken.accept();
            return Err(LockError::Closed);
        }
        taken.accept();
        Ok(Some(guard))
    }

    /// Gives back `n` permits (checked by the caller) as a new request.
    async fn release_now(&self, n: u64) -> Result<()> {
        self.counter
            .give_back_one("release permits", self.request(n))
            .await
    }

    fn engine(&self) -> &Engine {
        self.counter.engine()
    }

    /// Gives back `n` permits without a guard — taken by a guard that was
    /// [forgotten](PermitGuard::forget), or by another process: the store
    /// does not know who took what. Waiters are told the new count.
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] for `n` = 0 or above [`MAX_PERMITS`](crate::MAX_PERMITS)
    /// (before any I/O), or when the count would rise above
    /// [`MAX_PERMITS`](crate::MAX_PERMITS) (nothing written); otherwise as
    /// [`Semaphore::try_set_permits`].
    ///
    /// A retryable error means the release did not finish in time: it goes
    /// on in the background until the store answers (see the module docs),
    /// so do not release the permits again.
    ///
    /// # Cancel safety
    /// The release runs to completion even when this future is dropped; a
    /// retry never gives back twice.
    pub async fn release(&self, n: u64) -> Result<()> {
        check_permits(n, "release")?;
        self.release_now(n).await
    }

    /// Gives back `n` permits as [`Semaphore::release`] does, but only when
    /// the semaphore exists: `false` (nothing created, nobody told) when it
    /// does not (Redisson's `releaseIfExists`), so a release racing a
    /// deletion does not bring the semaphore back.
    ///
    /// # Errors
    /// As [`Semaphore::release`].
    ///
    /// # Cancel safety
    /// As [`Semaphore::release`]; a retry answers the first outcome.
    ///
    /// # Examples
    /// ```
    /// # async fn demo(sem: lock_redis::Semaphore) -> lock_redis::Result<()> {
    /// assert!(!sem.release_if_exists(1).await?); // never set: stays absent
    /// sem.try_set_permits(0).await?;
    /// assert!(sem.release_if_exists(1).await?);
    /// assert_eq!(sem.available_permits().await?, 1);
    /// # Ok(()) }
    /// ```
    pub async fn release_if_exists(&self, n: u64) -> Result<bool> {
        check_permits(n, "release_if_exists")?;
        let what = "release permits if the semaphore exists";
        self.counter
            .give_back(what, self.request(n), |store, req| async move {
                store.release_if_exists(&req).await
            })
            .await
    }
}

/// Permits taken from a [`Semaphore`]. Give them back with
/// [`PermitGuard::release`]; keep them taken past the guard with
/// [`PermitGuard::forget`] (someone then calls [`Semaphore::release`]).
///
/// # Dropping
/// Dropping the guard gives the permits back from a background task on the
/// client's runtime, which keeps trying through transient faults until the
/// store answers (see the module docs); errors are logged. Call
/// [`PermitGuard::release`] to see them.
#[must_use = "the permits are given back as soon as the guard is dropped"]
pub struct PermitGuard {
    semaphore: Semaphore,
    permits: u64,
    armed: bool,
    /// The guard's entry in its client's table of counted permits, which
    /// the close gives back; `None` when the client was closing as the
    /// guard was made (it then gives them back as it is dropped).
    live: Option<LivePermit>,
}

impl std::fmt::Debug for PermitGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PermitGuard")
            .field("semaphore", self.semaphore.name())
            .field("permits", &self.permits)
            .finish()
    }
}

impl PermitGuard {
    fn new(semaphore: Semaphore, permits: u64) -> Self {
        let sem = semaphore.clone();
        let live = semaphore
            .engine()
            .live_permits()
            .register(Box::new(move || {
                Box::pin(async move { sem.release_now(permits).await })
            }));
        Self {
            semaphore,
            permits,
            armed: true,
            live,
        }
    }

    /// Takes the guard's entry out of its client's table: `false` when
    /// the client's close took it (and gave the permits back).
    fn take_live(&self) -> bool {
        self.live.as_ref().is_none_or(LivePermit::take)
    }

    /// How many permits this guard holds.
    pub fn permits(&self) -> u64 {
        self.permits
    }

    /// The semaphore's name.
    pub fn name(&self) -> &LockName {
        self.semaphore.name()
    }

    /// Gives the permits back now, and reports the outcome.
    ///
    /// # Errors
    /// As [`Semaphore::release`]; [`LockError::Closed`] after the client
    /// was closed (which gave them back).
    ///
    /// # Cancel safety
    /// The release runs to completion even when this future is dropped.
    pub async fn release(mut self) -> Result<()> {
        self.armed = false;
        if !self.take_live() {
            return Err(LockError::Closed);
        }
        self.semaphore.release_now(self.permits).await
    }

    /// Keeps the permits taken without a guard (Redisson's style, where
    /// another process may release them): returns how many, which someone
    /// gives back later with [`Semaphore::release`].
    pub fn forget(mut self) -> u64 {
        self.armed = false;
        // Nobody's now: a close leaves them taken.
        self.take_live();
        self.permits
    }
}

impl Drop for PermitGuard {
    fn drop(&mut self) {
        // After a close took the entry, it gave the permits back.
        if !self.armed || !self.take_live() {
            return;
        }
        let (semaphore, permits) = (self.semaphore.clone(), self.permits);
        self.semaphore.counter.spawn(async move {
            if let Err(e) = semaphore.release_now(permits).await {
                let name = semaphore.name();
                tracing::warn!(%e, semaphore = %name, "giving back dropped permits failed");
            }
        });
    }
}
