//! [`PermitExpirableSemaphore`]: a semaphore whose taken permits have ids
//! and leases.
//!
//! # Promise
//! Each acquisition takes one permit under a fresh [`PermitId`] with a
//! lease (or none); releasing needs that id, so only whoever knows it can
//! give the permit back, and only once. A permit whose lease ends comes
//! back by itself: every operation on the semaphore first reclaims expired
//! permits and tells waiters the new count, and a waiter that finds no
//! permit free sleeps until a notice or until the earliest lease ends,
//! whichever is first — so it never needs anyone's help to see an expired
//! permit. Never a poll: with no lease running and no notice, a waiter
//! looks again after [`lock_core::ClientConfig::no_ttl_recheck`].
//!
//! Lease ends are measured by the store's clock (on Redis, the server's
//! `TIME`), so this client's clock does not matter. Java clients sharing
//! the semaphore stamp their permits with their own clock instead: a Java
//! client whose clock is ahead of the server's by `d` gets leases `d`
//! longer than asked, one behind gets them `d` shorter.
//!
//! An acquisition hands out a [`ExpirablePermitGuard`], a guard like a lock's: taken
//! without a lease, the client's watchdog renews the permit while the guard
//! lives (its lease never runs out under a live holder, and comes back
//! within [`lock_core::ClientConfig::watchdog_timeout`] of a holder's death);
//! with a lease, it comes back when the lease ends. Either way the guard
//! tells its holder when the permit is lost ([`ExpirablePermitGuard::lost`]), gives
//! it back when dropped, and hands out its id for the Redisson style where
//! someone else releases it ([`ExpirablePermitGuard::into_id`]). A dropped
//! acquisition gives back whatever it took.
//!
//! The acquisitions are named as a lock's: `acquire()` is renewed by the
//! watchdog, `acquire_with_lease(lease)` expires, `try_acquire*` do not
//! wait or wait up to a bound (`try_acquire_for(wait)`), and the `_many`
//! forms take `n` first. A permit that never expires (Redisson's
//! `acquire()` without a lease) is one whose lease was lifted:
//! [`PermitExpirableSemaphore::clear_lease_time`].

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use lock_core::backend::{Counter, Deadline, Engine, LeaseRenewal, LeaseTarget};
use lock_core::{lease_millis, LockError, LockName, Result};

use super::super::semaphore::{check_change, PermitRequest};
use super::request::target;
use super::{ExpirablePermitGuard, LeaseRelease, PermitId, PermitSemaphore};

mod many;
mod totals;

/// A handle on one named semaphore with expirable permits
/// (`client.permit_expirable_semaphore(name)`). Cheap to clone; makes no
/// I/O until used. See the module docs for its promise.
///
/// ```
/// # use std::time::Duration;
/// # async fn demo(slots: lock_redis::PermitExpirableSemaphore) -> lock_redis::Result<()> {
/// slots.try_set_permits(2).await?;
/// let permit = slots.acquire().await?; // renewed while held
/// // … work, stopping if permit.lost() fires …
/// permit.release().await?;
/// let leased = slots.acquire_with_lease(Duration::from_secs(30)).await?; // back in 30 s at the latest
/// slots.release(leased.into_id()).await?; // Redisson style: released by id
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct PermitExpirableSemaphore {
    counter: Counter<PermitSemaphore>,
}

impl std::fmt::Debug for PermitExpirableSemaphore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PermitExpirableSemaphore")
            .field("name", self.name())
            .finish_non_exhaustive()
    }
}

fn lease_ms(lease: Option<Duration>) -> Result<Option<u64>> {
    lease.map(|l| lease_millis(l, "permit lease")).transpose()
}

/// How long an acquisition's permit is leased for: a fixed lease, or the
/// watchdog timeout, renewed.
#[derive(Debug, Clone, Copy)]
struct Leasing {
    lease: Duration,
    watched: bool,
}

impl Leasing {
    /// `lease` (`None`: the watchdog's), refused before any I/O when it is
    /// not longer than its safety margin: its guard would be lost at once.
    fn of(inner: &Engine, lease: Option<Duration>) -> Result<Self> {
        let Some(lease) = lease else {
            return Ok(Self {
                lease: inner.config().watchdog_timeout,
                watched: true,
            });
        };
        let ms = lock_core::backend::fixed_lease_millis(inner.config(), lease, "permit lease")?;
        Ok(Self {
            lease: Duration::from_millis(ms),
            watched: false,
        })
    }

    fn lease_ms(self) -> u64 {
        self.lease.as_millis() as u64
    }

    /// The deadline of this lease when its acquisition was sent at `sent`.
    fn deadline(self, inner: &Engine, sent: Instant) -> Deadline {
        inner.config().lease_deadline(sent, self.lease)
    }
}

impl PermitExpirableSemaphore {
    /// The semaphore called `name` of `kind`, on `engine`: what a client's
    /// `permit_expirable_semaphore(name)` returns.
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] for an empty or over-long name.
    pub fn new(engine: &Engine, name: impl AsRef<str>, kind: Arc<PermitSemaphore>) -> Result<Self> {
        let name = LockName::new(name)?;
        Ok(Self {
            counter: Counter::new(engine, name, kind),
        })
    }

    pub(crate) fn inner(&self) -> &Engine {
        self.counter.engine()
    }

    /// The kind's store operations.
    fn kind(&self) -> &Arc<PermitSemaphore> {
        self.counter.store()
    }

    /// The semaphore's name.
    pub fn name(&self) -> &LockName {
        self.counter.name()
    }

    /// A change of `permits` (checked by the caller against
    /// [`MAX_PERMITS`](crate::MAX_PERMITS)) under a fresh request id.
    fn request(&self, permits: u64) -> PermitRequest {
        let n = i64::try_from(permits).unwrap_or(i64::MAX);
        PermitRequest::new(self.name().clone(), n, self.inner().request_deadline())
    }

    /// Creates the semaphore with `permits` free permits, unless it exists;
    /// returns whether it was created. Waiters are told.
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] above [`MAX_PERMITS`](crate::MAX_PERMITS) (before any
    /// I/O); [`LockError::WrongType`] when a key of the semaphore holds
    /// something else (left untouched); store errors after the retry
    /// policy; [`LockError::Closed`].
    ///
    /// # Cancel safety
    /// The call runs to completion even when this future is dropped.
    pub async fn try_set_permits(&self, permits: u64) -> Result<bool> {
        check_change(i128::from(permits), "try_set_permits")?;
        // One request id for every retry: a retry after a lost reply
        // answers whether the first attempt created the semaphore.
        let req = self.request(permits);
        self.counter
            .call("try_set_permits", req, |kind, req| async move {
                kind.try_set_permits(&req).await
            })
            .await
    }

    /// Adds `delta` free permits (negative: removes them; the count may go
    /// below zero while permits are taken). Waiters are told of an
    /// increase.
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] when `|delta|` is above
    /// [`MAX_PERMITS`](crate::MAX_PERMITS) (before any I/O) or the count would leave
    /// ±[`MAX_PERMITS`](crate::MAX_PERMITS) (nothing written); otherwise as
    /// [`PermitExpirableSemaphore::try_set_permits`].
    ///
    /// # Cancel safety
    /// As [`PermitExpirableSemaphore::try_set_permits`]; a retry never adds
    /// twice.
    pub async fn add_permits(&self, delta: i64) -> Result<()> {
        check_change(i128::from(delta), "add_permits")?;
        let req = PermitRequest::new(self.name().clone(), delta, self.inner().request_deadline());
        self.counter
            .call("add_permits", req, |kind, req| async move {
                kind.add_permits(&req).await
            })
            .await
    }

    /// The free permits now, after expired permits came back.
    ///
    /// # Errors
    /// As [`PermitExpirableSemaphore::try_set_permits`].
    ///
    /// # Cancel safety
    /// Safe to drop (reclaiming expired permits is harmless either way).
    pub async fn available_permits(&self) -> Result<i64> {
        let name = self.name().clone();
        self.counter
            .call("available_permits", name, |kind, name| async move {
                kind.available_permits(&name).await
            })
            .await
    }

    /// Takes a permit, waiting as long as it takes; the client's watchdog
    /// renews it while the returned guard lives (see [`ExpirablePermitGuard`]).
    ///
    /// # Errors
    /// [`LockError::Closed`]; otherwise as
    /// [`PermitExpirableSemaphore::try_set_permits`].
    ///
    /// # Cancel safety
    /// Cancel-safe: dropping the future leaves no permit taken and no
    /// subscription behind.
    ///
    /// # Examples
    /// ```
    /// # async fn demo(sem: lock_redis::PermitExpirableSemaphore) -> lock_redis::Result<()> {
    /// let permit = sem.acquire().await?;
    /// assert!(permit.is_renewed());
    /// permit.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn acquire(&self) -> Result<ExpirablePermitGuard> {
        self.acquire_or_fail(None).await
    }

    /// Takes a permit for `lease` at most, waiting as long as it takes. No
    /// renewal: it comes back by itself when the lease ends. The guard
    /// reports the loss a safety margin before
    /// ([`lock_core::ClientConfig::safety_margin`]).
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] for a zero or over-long lease, or one
    /// not longer than its safety margin (before any I/O); otherwise as
    /// [`PermitExpirableSemaphore::acquire`].
    ///
    /// # Cancel safety
    /// As [`PermitExpirableSemaphore::acquire`].
    ///
    /// # Examples
    /// ```
    /// # use std::time::Duration;
    /// # async fn demo(sem: lock_redis::PermitExpirableSemaphore) -> lock_redis::Result<()> {
    /// let permit = sem.acquire_with_lease(Duration::from_secs(10)).await?;
    /// assert_eq!(permit.id().to_string().len(), 32);
    /// permit.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn acquire_with_lease(&self, lease: Duration) -> Result<ExpirablePermitGuard> {
        self.acquire_or_fail(Some(lease)).await
    }

    /// Takes a permit if one is free now (watchdog lease); `Ok(None)`
    /// otherwise.
    ///
    /// # Errors
    /// As [`PermitExpirableSemaphore::acquire`].
    ///
    /// # Cancel safety
    /// As [`PermitExpirableSemaphore::acquire`].
    pub async fn try_acquire(&self) -> Result<Option<ExpirablePermitGuard>> {
        self.acquire_within(Some(Duration::ZERO), None).await
    }

    /// Takes a permit for `lease` at most if one is free now; `Ok(None)`
    /// otherwise.
    ///
    /// # Errors
    /// As [`PermitExpirableSemaphore::acquire_with_lease`].
    ///
    /// # Cancel safety
    /// As [`PermitExpirableSemaphore::acquire`].
    pub async fn try_acquire_with_lease(
        &self,
        lease: Duration,
    ) -> Result<Option<ExpirablePermitGuard>> {
        self.acquire_within(Some(Duration::ZERO), Some(lease)).await
    }

    /// Takes a permit, waiting up to `wait` (watchdog lease); `Ok(None)`
    /// when the wait ran out.
    ///
    /// # Errors
    /// As [`PermitExpirableSemaphore::acquire`].
    ///
    /// # Cancel safety
    /// As [`PermitExpirableSemaphore::acquire`].
    pub async fn try_acquire_for(&self, wait: Duration) -> Result<Option<ExpirablePermitGuard>> {
        self.acquire_within(Some(wait), None).await
    }

    /// Takes a permit for `lease` at most, waiting up to `wait`; `Ok(None)`
    /// when the wait ran out.
    ///
    /// # Errors
    /// As [`PermitExpirableSemaphore::acquire_with_lease`].
    ///
    /// # Cancel safety
    /// As [`PermitExpirableSemaphore::acquire`].
    pub async fn try_acquire_for_with_lease(
        &self,
        wait: Duration,
        lease: Duration,
    ) -> Result<Option<ExpirablePermitGuard>> {
        self.acquire_within(Some(wait), Some(lease)).await
    }

    /// One permit, waiting without end (which only ends with a permit or
    /// an error).
    async fn acquire_or_fail(&self, lease: Option<Duration>) -> Result<ExpirablePermitGuard> {
        match self.acquire_within(None, lease).await? {
            Some(permit) => Ok(permit),
            None => Err(LockError::protocol(
                "an unbounded wait ended without a permit",
            )),
        }
    }

    /// One permit: the many-permit acquisition with one (the same script,
    /// one id), so both share their wait, cancellation and guards.
    async fn acquire_within(
        &self,
        wait: Option<Duration>,
        lease: Option<Duration>,
    ) -> Result<Option<ExpirablePermitGuard>> {
        Ok(self
            .acquire_many_within(1, wait, lease)
            .await?
            .and_then(|mut permits| permits.pop()))
    }

    /// Gives back the permit `id`. Waiters are told the new count.
    ///
    /// # Errors
    /// [`LockError::NotHeld`] when the permit is not taken (never was,
    /// released, or its lease ended); otherwise as
    /// [`PermitExpirableSemaphore::try_set_permits`].
    ///
    /// # Cancel safety
    /// The release runs to completion even when this future is dropped; a
    /// retry after a lost reply reports the first outcome.
    pub async fn release(&self, id: PermitId) -> Result<()> {
        if self.try_release(id).await? {
            Ok(())
        } else {
            Err(super::request::permit_not_held(self.name().as_str(), id))
        }
    }

    /// Gives back the permit `id`; `false` when it is not taken.
    ///
    /// # Errors
    /// As [`PermitExpirableSemaphore::try_set_permits`].
    ///
    /// # Cancel safety
    /// As [`PermitExpirableSemaphore::release`].
    pub async fn try_release(&self, id: PermitId) -> Result<bool> {
        let released = self.release_by_id(id).await?;
        // A guard of this client holding the permit loses it.
        let reason = if released { "released" } else { "not_held" };
        self.inner().permits().gone(&self.target(id), reason);
        Ok(released)
    }

    fn target(&self, id: PermitId) -> LeaseTarget {
        target(self.name(), id)
    }

    /// The guard of the permit `id`, taken with `leasing` and valid until
    /// `deadline`: registered with the client's table (and its watchdog).
    /// `None` once the client is closing: the permit is given back here
    /// (the close will not see it).
    fn guard(
        &self,
        id: PermitId,
        deadline: Deadline,
        leasing: Leasing,
    ) -> Option<ExpirablePermitGuard> {
        let lease = self.inner().permits().register(
            self.target(id),
            Arc::clone(self.kind()) as Arc<dyn LeaseRenewal>,
            deadline,
            leasing.watched,
        );
        match lease {
            Some(lease) => Some(ExpirablePermitGuard::new(self.clone(), lease)),
            None => {
                tracing::debug!(semaphore = %self.name(), "a permit was taken while the client closed; giving it back");
                self.release_in_background(id);
                None
            }
        }
    }

    /// Gives back the permit `id` from a background task (a dropped guard
    /// or acquisition), which keeps trying through transient faults until
    /// the store answers ([`Counter::give_back`]); other errors are
    /// logged, and the permit then comes back with its lease.
    pub(crate) fn release_in_background(&self, id: PermitId) {
        let sem = self.clone();
        self.counter.spawn(async move {
            if let Err(e) = sem.release_by_id(id).await {
                let name = sem.name();
                tracing::warn!(%e, semaphore = %name, "giving back a permit failed; it comes back when its lease ends");
            }
        });
    }

    /// Gives back the permit `id`: never lost to a transient fault
    /// ([`Counter::give_back`]).
    async fn release_by_id(&self, id: PermitId) -> Result<bool> {
        let req = LeaseRelease::new(self.name().clone(), id, self.inner().request_deadline());
        self.counter
            .give_back("release a permit", req, |kind, req| async move {
                kind.release(&req).await
            })
            .await
    }

    /// Sets the lease of the taken permit `id` to `lease` from now (shorter
    /// or longer than it was, or a lease for a permit that had none);
    /// `false` when it is not taken any more. A guard of this client holding
    /// the permit follows: its deadline becomes the new lease's end (a
    /// watchdog guard's renewals extend it again, never shortening a longer
    /// lease), or it is told the permit is lost.
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] for a zero or over-long lease (before
    /// any I/O); otherwise as [`PermitExpirableSemaphore::acquire`].
    ///
    /// # Cancel safety
    /// The call runs to completion even when this future is dropped;
    /// repeating it is harmless.
    ///
    /// # Examples
    /// ```
    /// # use std::time::Duration;
    /// # async fn demo(sem: lock_redis::PermitExpirableSemaphore) -> lock_redis::Result<()> {
    /// let id = sem.acquire().await?.into_id();
    /// // Handed on by id: give whoever gets it ten minutes.
    /// assert!(sem.update_lease_time(id, Duration::from_secs(600)).await?);
    /// # Ok(()) }
    /// ```
    pub async fn update_lease_time(&self, id: PermitId, lease: Duration) -> Result<bool> {
        self.set_lease(id, Some(lease)).await
    }

    /// Lifts the lease of the taken permit `id`: it no longer expires, and
    /// stays taken until released by id (Redisson's permits taken without
    /// a lease); [`PermitExpirableSemaphore::lease_time`] then answers
    /// `None`. `false` when it is not taken any more. A guard of this
    /// client holding the permit then ends only with a release, or a
    /// renewal finding the permit gone.
    ///
    /// # Errors
    /// As [`PermitExpirableSemaphore::acquire`].
    ///
    /// # Cancel safety
    /// As [`PermitExpirableSemaphore::update_lease_time`].
    pub async fn clear_lease_time(&self, id: PermitId) -> Result<bool> {
        self.set_lease(id, None).await
    }

    /// Sets the lease of permit `id` (`None`: lifts it), and moves the
    /// deadline of this client's guard of it.
    async fn set_lease(&self, id: PermitId, lease: Option<Duration>) -> Result<bool> {
        let lease_ms = lease_ms(lease)?;
        let sent = Instant::now();
        let name = self.name().clone();
        let updated = self
            .counter
            .call("update_lease_time", name, move |kind, name| async move {
                kind.update_lease(&name, id, lease_ms).await
            })
            .await?;
        let permits = self.inner().permits();
        if !updated {
            permits.gone(&self.target(id), "not_held");
            return Ok(false);
        }
        let deadline = match lease {
            Some(lease) => self.inner().config().lease_deadline(sent, lease),
            // No expiry: only a renewal finding it gone, or a release, ends it.
            None => Deadline::new(sent, lock_core::FOREVER, Duration::ZERO),
        };
        permits.updated(&self.target(id), deadline);
        Ok(true)
    }
}
