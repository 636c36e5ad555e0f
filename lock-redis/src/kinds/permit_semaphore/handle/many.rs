//! Several permits of a [`PermitExpirableSemaphore`] at once: taken all
//! or none under one lease, each with its own id, and given back all or
//! none (Redisson's `acquire(permits, …)`, `tryAcquire(permits, …)`,
//! `release(List)`, `tryRelease(List)`).

use std::collections::HashSet;
use std::time::Duration;

use super::super::super::semaphore::check_permits;
use super::super::{ExpirablePermitGuard, LeasesRelease, LeasesRequest, PermitId, PermitTake};
use super::{Leasing, PermitExpirableSemaphore};
use lock_core::{LockError, Result};

impl PermitExpirableSemaphore {
    /// Takes `n` permits at once, waiting as long as it takes: one guard
    /// each, renewed by the client's watchdog while it lives, as
    /// [`PermitExpirableSemaphore::acquire`] gives. A waiter for many can
    /// be overtaken by waiters for few.
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] for `n` = 0 or above
    /// [`MAX_PERMITS`](crate::MAX_PERMITS) (before any I/O); otherwise as
    /// [`PermitExpirableSemaphore::acquire`].
    ///
    /// # Cancel safety
    /// Cancel-safe: dropping the future leaves no permit taken and no
    /// subscription behind.
    ///
    /// # Examples
    /// ```
    /// # async fn demo(sem: lock_redis::PermitExpirableSemaphore) -> lock_redis::Result<()> {
    /// let permits = sem.acquire_many(3).await?;
    /// assert_eq!(permits.len(), 3);
    /// let ids: Vec<_> = permits.into_iter().map(|p| p.into_id()).collect();
    /// sem.release_many(&ids).await?;
    /// # Ok(()) }
    /// ```
    pub async fn acquire_many(&self, n: u64) -> Result<Vec<ExpirablePermitGuard>> {
        self.acquire_many_or_fail(n, None).await
    }

    /// Takes `n` permits at once, each for `lease` at most, waiting as long
    /// as it takes: as [`PermitExpirableSemaphore::acquire_with_lease`]
    /// gives, `n` times under one lease.
    ///
    /// # Errors
    /// As [`PermitExpirableSemaphore::acquire_many`] and
    /// [`PermitExpirableSemaphore::acquire_with_lease`].
    ///
    /// # Cancel safety
    /// As [`PermitExpirableSemaphore::acquire_many`].
    pub async fn acquire_many_with_lease(
        &self,
        n: u64,
        lease: Duration,
    ) -> Result<Vec<ExpirablePermitGuard>> {
        self.acquire_many_or_fail(n, Some(lease)).await
    }

    /// Takes `n` permits at once if that many are free now (watchdog
    /// lease); `Ok(None)` otherwise.
    ///
    /// # Errors
    /// As [`PermitExpirableSemaphore::acquire_many`].
    ///
    /// # Cancel safety
    /// As [`PermitExpirableSemaphore::acquire_many`].
    pub async fn try_acquire_many(&self, n: u64) -> Result<Option<Vec<ExpirablePermitGuard>>> {
        self.acquire_many_within(n, Some(Duration::ZERO), None)
            .await
    }

    /// Takes `n` permits at once for `lease` at most if that many are free
    /// now; `Ok(None)` otherwise.
    ///
    /// # Errors
    /// As [`PermitExpirableSemaphore::acquire_many_with_lease`].
    ///
    /// # Cancel safety
    /// As [`PermitExpirableSemaphore::acquire_many`].
    pub async fn try_acquire_many_with_lease(
        &self,
        n: u64,
        lease: Duration,
    ) -> Result<Option<Vec<ExpirablePermitGuard>>> {
        self.acquire_many_within(n, Some(Duration::ZERO), Some(lease))
            .await
    }

    /// Takes `n` permits at once, waiting up to `wait` (watchdog lease);
    /// `Ok(None)` when the wait ran out.
    ///
    /// # Errors
    /// As [`PermitExpirableSemaphore::acquire_many`].
    ///
    /// # Cancel safety
    /// As [`PermitExpirableSemaphore::acquire_many`].
    pub async fn try_acquire_many_for(
        &self,
        n: u64,
        wait: Duration,
    ) -> Result<Option<Vec<ExpirablePermitGuard>>> {
        self.acquire_many_within(n, Some(wait), None).await
    }

    /// Takes `n` permits at once for `lease` at most, waiting up to
    /// `wait`; `Ok(None)` when the wait ran out.
    ///
    /// # Errors
    /// As [`PermitExpirableSemaphore::acquire_many_with_lease`].
    ///
    /// # Cancel safety
    /// As [`PermitExpirableSemaphore::acquire_many`].
    pub async fn try_acquire_many_for_with_lease(
        &self,
        n: u64,
        wait: Duration,
        lease: Duration,
    ) -> Result<Option<Vec<ExpirablePermitGuard>>> {
        self.acquire_many_within(n, Some(wait), Some(lease)).await
    }

    /// `n` permits, waiting without end (which only ends with the permits
    /// or an error).
    async fn acquire_many_or_fail(
        &self,
        n: u64,
        lease: Option<Duration>,
    ) -> Result<Vec<ExpirablePermitGuard>> {
        match self.acquire_many_within(n, None, lease).await? {
            Some(permits) => Ok(permits),
            None => Err(LockError::protocol(
                "an unbounded wait ended without permits",
            )),
        }
    }

    pub(super) async fn acquire_many_within(
        &self,
        n: u64,
        wait: Option<Duration>,
        lease: Option<Duration>,
    ) -> Result<Option<Vec<ExpirablePermitGuard>>> {
        check_permits(n, "acquire_many")?;
        let count = usize::try_from(n)
            .map_err(|_| LockError::invalid(format!("acquire_many: {n} ids do not fit here")))?;
        let leasing = Leasing::of(self.inner(), lease)?;
        let name = self.name();
        let fresh = || {
            PermitTake::new(LeasesRequest::new(
                name.clone(),
                count,
                Some(leasing.lease_ms()),
            ))
        };
        let Some(taken) = self.counter.acquire("acquire permits", wait, fresh).await? else {
            return Ok(None);
        };
        let deadline = leasing.deadline(self.inner(), taken.request().sent);
        // Their guards would be lost as they are handed out: given back
        // (dropped), and the caller told (as a lock's acquisition is).
        if deadline.is_lost() {
            let first = taken.request().req.ids.first().copied();
            drop(taken);
            return Err(match first {
                Some(first) => {
                    crate::kinds::permit_semaphore::request::permit_lost(name.as_str(), first)
                }
                None => LockError::protocol("an acquisition of no permits"),
            });
        }
        // The caller has them: each gets its guard, as a single
        // acquisition's permit does. [`LockError::Closed`] when the client
        // began to close first: each permit is then given back (by the
        // close, or by [`PermitExpirableSemaphore::guard`] for one the close
        // did not see). Every id gets its guard or its give-back, so none
        // is collected short of the end; only then does the take stop
        // counting as in flight, so a close waiting for what is in flight
        // cannot end in between.
        let ids = taken.request().req.ids.clone();
        let guards: Vec<Option<ExpirablePermitGuard>> = ids
            .into_iter()
            .map(|id| self.guard(id, deadline, leasing))
            .collect();
        taken.accept();
        if guards.iter().any(Option::is_none) {
            return Err(LockError::Closed);
        }
        Ok(Some(guards.into_iter().flatten().collect()))
    }

    /// Gives back every permit of `ids`, all or none, and tells waiters how
    /// many came back. Returns how many that was: 0 when one of them is not
    /// taken (never was, released, or its lease ended), and then none is
    /// given back.
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] for no ids or an id given twice
    /// (before any I/O); otherwise as
    /// [`PermitExpirableSemaphore::try_set_permits`].
    ///
    /// # Cancel safety
    /// The release runs to completion even when this future is dropped; a
    /// retry after a lost reply reports the first outcome.
    pub async fn try_release_many(&self, ids: &[PermitId]) -> Result<u64> {
        check_ids(ids)?;
        let req = LeasesRelease::new(
            self.name().clone(),
            ids.to_vec(),
            self.inner().request_deadline(),
        );
        self.counter.give_back_one("release permits", req).await
    }

    /// As [`PermitExpirableSemaphore::try_release_many`], failing when not
    /// every permit was taken.
    ///
    /// # Errors
    /// [`LockError::NotHeld`] when one of the permits is not taken (none is
    /// given back then); otherwise as
    /// [`PermitExpirableSemaphore::try_release_many`].
    ///
    /// # Cancel safety
    /// As [`PermitExpirableSemaphore::try_release_many`].
    pub async fn release_many(&self, ids: &[PermitId]) -> Result<()> {
        if self.try_release_many(ids).await? == ids.len() as u64 {
            Ok(())
        } else {
            Err(LockError::NotHeld {
                name: self.name().to_string(),
                what: format!(
                    "one of {} permits of semaphore {:?}",
                    ids.len(),
                    self.name().as_str()
                ),
            })
        }
    }
}

/// Refuses an empty list and an id given twice: the store would count the
/// duplicate once and the caller could not tell which permits came back.
fn check_ids(ids: &[PermitId]) -> Result<()> {
    if ids.is_empty() {
        return Err(LockError::invalid("release_many: no permit ids"));
    }
    let mut seen = HashSet::with_capacity(ids.len());
    if let Some(twice) = ids.iter().find(|id| !seen.insert(**id)) {
        return Err(LockError::invalid(format!(
            "release_many: permit {twice} given twice"
        )));
    }
    Ok(())
}
