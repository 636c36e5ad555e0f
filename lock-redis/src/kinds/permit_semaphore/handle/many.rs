//! Several permits of a [`PermitExpirableSemaphore`] at once: taken all
//! or none under one lease, each with its own id, and given back all or
//! none (Redisson's `acquire(permits, …)`, `tryAcquire(permits, …)`,
//! `release(List)`, `tryRelease(List)`).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;

use tokio::time::Instant;

use super::super::ExpirablePermit;
use super::{Leasing, PermitExpirableSemaphore};
use lock_core::backend::counting::{self, InFlight, Look, WakeReader};
use lock_core::backend::Engine;
use lock_core::backend::{check_permits, Deadline, LeaseOutcome, LeasesRelease, LeasesRequest};
use lock_core::{LockError, LockName, PermitId, Result};

impl PermitExpirableSemaphore {
    /// Takes `n` permits at once, waiting as long as it takes: one guard
    /// each, renewed by the client's watchdog while it lives, as
    /// [`PermitExpirableSemaphore::acquire`] gives. A waiter for many can
    /// be overtaken by waiters for few.
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] for `n` = 0 or above
    /// [`MAX_PERMITS`](lock_core::MAX_PERMITS) (before any I/O); otherwise as
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
    pub async fn acquire_many(&self, n: u64) -> Result<Vec<ExpirablePermit>> {
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
    ) -> Result<Vec<ExpirablePermit>> {
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
    pub async fn try_acquire_many(&self, n: u64) -> Result<Option<Vec<ExpirablePermit>>> {
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
    ) -> Result<Option<Vec<ExpirablePermit>>> {
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
    ) -> Result<Option<Vec<ExpirablePermit>>> {
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
    ) -> Result<Option<Vec<ExpirablePermit>>> {
        self.acquire_many_within(n, Some(wait), Some(lease)).await
    }

    /// `n` permits, waiting without end (which only ends with the permits
    /// or an error).
    async fn acquire_many_or_fail(
        &self,
        n: u64,
        lease: Option<Duration>,
    ) -> Result<Vec<ExpirablePermit>> {
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
    ) -> Result<Option<Vec<ExpirablePermit>>> {
        check_permits(n, "acquire_many")?;
        let count = usize::try_from(n)
            .map_err(|_| LockError::invalid(format!("acquire_many: {n} ids do not fit here")))?;
        let inner = self.inner();
        let leasing = Leasing::of(inner, lease)?;
        inner.check_open()?;
        let deadline = counting::deadline(wait);
        let kind = Arc::clone(&self.kind);
        let reader: WakeReader = Arc::new(move |p| kind.wake(p));
        let channel = self.kind.channel(&self.name);
        let this = self.clone();
        let pending = counting::wait_for(
            inner,
            "permit_semaphore",
            &self.name,
            channel,
            reader,
            deadline,
            move || {
                let sem = this.clone();
                let req = LeasesRequest::new(sem.name.clone(), count, Some(leasing.lease_ms()));
                // The store starts the lease no earlier than the first send of
                // these ids; retries repeat them without restarting it.
                let sent = Instant::now();
                let inner = sem.inner().clone();
                async move {
                    counting::acquire(&inner, "acquire permits", move || {
                        let (sem, req) = (sem.clone(), req.clone());
                        async move {
                            Ok(match sem.kind.try_acquire_many(&req).await? {
                                LeaseOutcome::Acquired => {
                                    let deadline = leasing.deadline(sem.inner(), sent);
                                    let (name, first) = (sem.name.clone(), req.ids[0]);
                                    let taken =
                                        PendingPermits::new(sem, req.ids, deadline, leasing);
                                    // Their guards would be lost as they are
                                    // handed out: given back, and the caller
                                    // told (as a lock's acquisition is).
                                    if deadline.is_lost() {
                                        drop(taken);
                                        return Err(LockError::permit_lost(name.as_str(), first));
                                    }
                                    Look::Got(taken)
                                }
                                LeaseOutcome::Busy { retry_in } => Look::Busy(retry_in),
                            })
                        }
                        .boxed()
                    })
                    .await
                }
                .boxed()
            },
        )
        .await?;
        pending.map(PendingPermits::accept).transpose()
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
        release_many(self.inner(), &self.kind, &self.name, ids.to_vec()).await
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
                name: self.name.to_string(),
                what: format!(
                    "one of {} permits of semaphore {:?}",
                    ids.len(),
                    self.name.as_str()
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

async fn release_many(
    inner: &Engine,
    kind: &Arc<super::super::PermitSemaphore>,
    name: &LockName,
    ids: Vec<PermitId>,
) -> Result<u64> {
    let req = LeasesRelease::new(name.clone(), ids, inner.request_deadline());
    let kind = Arc::clone(kind);
    counting::give_back(inner, "release permits", req, move |req| {
        let kind = Arc::clone(&kind);
        async move { kind.release_many(&req).await }
    })
    .await
}

/// Permits taken but not handed to the caller yet; dropping them gives
/// them back.
struct PendingPermits {
    semaphore: PermitExpirableSemaphore,
    ids: Vec<PermitId>,
    deadline: Deadline,
    leasing: Leasing,
    armed: bool,
    #[allow(dead_code)] // held for its Drop: counts the permits as in flight
    in_flight: InFlight,
}

impl PendingPermits {
    fn new(
        semaphore: PermitExpirableSemaphore,
        ids: Vec<PermitId>,
        deadline: Deadline,
        leasing: Leasing,
    ) -> Self {
        let in_flight = counting::in_flight(semaphore.inner());
        Self {
            semaphore,
            ids,
            deadline,
            leasing,
            armed: true,
            in_flight,
        }
    }

    /// The caller has them: each gets its guard, as a single acquisition's
    /// permit does. [`LockError::Closed`] when the client began to close
    /// first: each permit is then given back (by the close, or by
    /// [`PermitExpirableSemaphore::guard`] for one the close did not see).
    fn accept(mut self) -> Result<Vec<ExpirablePermit>> {
        self.armed = false;
        let sem = &self.semaphore;
        // Every id gets its guard or its give-back, so none is collected
        // short of the end.
        let guards: Vec<Option<ExpirablePermit>> = std::mem::take(&mut self.ids)
            .into_iter()
            .map(|id| sem.guard(id, self.deadline, self.leasing))
            .collect();
        if guards.iter().any(Option::is_none) {
            return Err(LockError::Closed);
        }
        Ok(guards.into_iter().flatten().collect())
    }
}

impl Drop for PendingPermits {
    fn drop(&mut self) {
        // Given back while the client closes too; after its close the
        // release answers `Closed` and the permits come back with their
        // lease.
        if !self.armed {
            return;
        }
        let inner = self.semaphore.inner().clone();
        let kind = Arc::clone(&self.semaphore.kind);
        let (name, ids) = (self.semaphore.name.clone(), std::mem::take(&mut self.ids));
        tracing::debug!(semaphore = %name, "permits abandoned by their caller; giving them back");
        counting::spawn(self.semaphore.inner(), async move {
            if let Err(e) = release_many(&inner, &kind, &name, ids).await {
                tracing::warn!(%e, semaphore = %name, "giving back abandoned permits failed; they come back when their lease ends");
            }
        });
    }
}
