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
//! looks again after [`crate::ClientConfig::no_ttl_recheck`].
//!
//! Lease ends are measured by the store's clock (on Redis, the server's
//! `TIME`), so this client's clock does not matter. Java clients sharing
//! the semaphore stamp their permits with their own clock instead: a Java
//! client whose clock is ahead of the server's by `d` gets leases `d`
//! longer than asked, one behind gets them `d` shorter.
//!
//! A dropped acquisition gives back whatever it took. This handle does not
//! watch a lease for its holder: [`PermitExpirableSemaphore::update_lease_time`]
//! answers `false` once a permit is gone.

use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;

use crate::client::{ClientInner, LockClient};
use crate::config::lease_millis;
use crate::counting::{self, Try};
use crate::error::{LockError, Result};
use crate::name::LockName;
use crate::semaphore_kind::{
    check_change, LeaseOutcome, LeaseRelease, LeaseRequest, PermitId, PermitRequest,
    PermitSemaphoreKind,
};
use crate::stats::InFlight;

mod many;
mod totals;

/// A handle on one named semaphore with expirable permits
/// ([`LockClient::permit_expirable_semaphore`]). Cheap to clone; makes no
/// I/O until used. See the module docs for its promise.
///
/// ```
/// # use std::time::Duration;
/// # async fn demo(client: lock_core::LockClient) -> lock_core::Result<()> {
/// let slots = client.permit_expirable_semaphore("slots")?;
/// slots.try_set_permits(2).await?;
/// let id = slots.acquire(Some(Duration::from_secs(30))).await?; // back in 30 s at the latest
/// // … work, extending with update_lease_time(id, …) if needed …
/// slots.release(id).await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct PermitExpirableSemaphore {
    client: LockClient,
    name: LockName,
    kind: Arc<dyn PermitSemaphoreKind>,
}

impl std::fmt::Debug for PermitExpirableSemaphore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PermitExpirableSemaphore")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

fn lease_ms(lease: Option<Duration>) -> Result<Option<u64>> {
    lease.map(|l| lease_millis(l, "permit lease")).transpose()
}

impl PermitExpirableSemaphore {
    pub(crate) fn new(
        client: LockClient,
        name: LockName,
        kind: Arc<dyn PermitSemaphoreKind>,
    ) -> Self {
        Self { client, name, kind }
    }

    fn inner(&self) -> &Arc<ClientInner> {
        &self.client.inner
    }

    /// The semaphore's name.
    pub fn name(&self) -> &LockName {
        &self.name
    }

    /// A change of `permits` (checked by the caller against
    /// [`MAX_PERMITS`](crate::MAX_PERMITS)) under a fresh request id.
    fn request(&self, permits: u64) -> PermitRequest {
        let n = i64::try_from(permits).unwrap_or(i64::MAX);
        PermitRequest::new(self.name.clone(), n, self.inner().latch_ms)
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
        let kind = Arc::clone(&self.kind);
        counting::call(self.inner(), "try_set_permits", move || {
            let (kind, req) = (Arc::clone(&kind), req.clone());
            async move { kind.try_set_permits(&req).await }
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
        let req = PermitRequest::new(self.name.clone(), delta, self.inner().latch_ms);
        let kind = Arc::clone(&self.kind);
        counting::call(self.inner(), "add_permits", move || {
            let (kind, req) = (Arc::clone(&kind), req.clone());
            async move { kind.add_permits(&req).await }
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
        let (kind, name) = (Arc::clone(&self.kind), self.name.clone());
        counting::call(self.inner(), "available_permits", move || {
            let (kind, name) = (Arc::clone(&kind), name.clone());
            async move { kind.available_permits(&name).await }
        })
        .await
    }

    /// Takes a permit, waiting as long as it takes; it comes back by itself
    /// after `lease` (`None`: only when released). Returns its id.
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] for a zero or over-long lease (before
    /// any I/O); otherwise as [`PermitExpirableSemaphore::try_set_permits`].
    ///
    /// # Cancel safety
    /// Cancel-safe: dropping the future leaves no permit taken and no
    /// subscription behind.
    ///
    /// # Examples
    /// ```
    /// # use std::time::Duration;
    /// # async fn demo(sem: lock_core::PermitExpirableSemaphore) -> lock_core::Result<()> {
    /// let id = sem.acquire(Some(Duration::from_secs(10))).await?;
    /// assert_eq!(id.to_string().len(), 32);
    /// sem.release(id).await?;
    /// # Ok(()) }
    /// ```
    pub async fn acquire(&self, lease: Option<Duration>) -> Result<PermitId> {
        match self.acquire_within(None, lease).await? {
            Some(id) => Ok(id),
            None => Err(LockError::protocol(
                "an unbounded wait ended without a permit",
            )),
        }
    }

    /// Takes a permit if one is free now; `Ok(None)` otherwise.
    ///
    /// # Errors
    /// As [`PermitExpirableSemaphore::acquire`].
    ///
    /// # Cancel safety
    /// As [`PermitExpirableSemaphore::acquire`].
    pub async fn try_acquire(&self, lease: Option<Duration>) -> Result<Option<PermitId>> {
        self.acquire_within(Some(Duration::ZERO), lease).await
    }

    /// Takes a permit, waiting up to `wait`; `Ok(None)` when the wait ran
    /// out.
    ///
    /// # Errors
    /// As [`PermitExpirableSemaphore::acquire`].
    ///
    /// # Cancel safety
    /// As [`PermitExpirableSemaphore::acquire`].
    pub async fn try_acquire_for(
        &self,
        wait: Duration,
        lease: Option<Duration>,
    ) -> Result<Option<PermitId>> {
        self.acquire_within(Some(wait), lease).await
    }

    async fn acquire_within(
        &self,
        wait: Option<Duration>,
        lease: Option<Duration>,
    ) -> Result<Option<PermitId>> {
        let lease_ms = lease_ms(lease)?;
        let inner = self.inner();
        inner.check_open()?;
        let deadline = counting::deadline(wait);
        let kind = Arc::clone(&self.kind);
        let reader: crate::waiter::WakeReader = Arc::new(move |p| kind.wake(p));
        let channel = self.kind.channel(&self.name);
        let this = self.clone();
        let pending = counting::wait_for(inner, channel, reader, deadline, move || {
            let sem = this.clone();
            let req = LeaseRequest::new(sem.name.clone(), lease_ms);
            let inner = Arc::clone(sem.inner());
            async move {
                counting::acquire(&inner, "acquire a permit", move || {
                    let (sem, req) = (sem.clone(), req.clone());
                    async move {
                        Ok(match sem.kind.try_acquire(&req).await? {
                            LeaseOutcome::Acquired => Try::Got(PendingPermit::new(sem, req.id)),
                            LeaseOutcome::Busy { retry_in } => Try::Busy(retry_in),
                        })
                    }
                    .boxed()
                })
                .await
            }
            .boxed()
        })
        .await?;
        Ok(pending.map(PendingPermit::accept))
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
            Err(LockError::NotHeld {
                name: format!("{} (permit {id})", self.name),
            })
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
        release(self.inner(), &self.kind, &self.name, id).await
    }

    /// Sets the lease of the taken permit `id` to `lease` from now (`None`:
    /// it no longer expires); `false` when it is not taken any more.
    ///
    /// # Errors
    /// As [`PermitExpirableSemaphore::acquire`].
    ///
    /// # Cancel safety
    /// The call runs to completion even when this future is dropped;
    /// repeating it is harmless.
    pub async fn update_lease_time(&self, id: PermitId, lease: Option<Duration>) -> Result<bool> {
        let lease_ms = lease_ms(lease)?;
        let (kind, name) = (Arc::clone(&self.kind), self.name.clone());
        counting::call(self.inner(), "update_lease_time", move || {
            let (kind, name) = (Arc::clone(&kind), name.clone());
            async move { kind.update_lease(&name, id, lease_ms).await }
        })
        .await
    }
}

async fn release(
    inner: &Arc<ClientInner>,
    kind: &Arc<dyn PermitSemaphoreKind>,
    name: &LockName,
    id: PermitId,
) -> Result<bool> {
    let req = LeaseRelease::new(name.clone(), id, inner.latch_ms);
    let kind = Arc::clone(kind);
    counting::call(inner, "release a permit", move || {
        let (kind, req) = (Arc::clone(&kind), req.clone());
        async move { kind.release(&req).await }
    })
    .await
}

/// A permit taken but not handed to the caller yet; dropping it gives the
/// permit back.
struct PendingPermit {
    semaphore: PermitExpirableSemaphore,
    id: PermitId,
    armed: bool,
    #[allow(dead_code)] // held for its Drop: counts the permit as in flight
    in_flight: InFlight,
}

impl PendingPermit {
    fn new(semaphore: PermitExpirableSemaphore, id: PermitId) -> Self {
        let in_flight = InFlight::start(&semaphore.inner().stats);
        Self {
            semaphore,
            id,
            armed: true,
            in_flight,
        }
    }

    fn accept(mut self) -> PermitId {
        self.armed = false;
        self.id
    }
}

impl Drop for PendingPermit {
    fn drop(&mut self) {
        if !self.armed || self.semaphore.inner().is_closed() {
            return;
        }
        let inner = Arc::clone(self.semaphore.inner());
        let kind = Arc::clone(&self.semaphore.kind);
        let (name, id) = (self.semaphore.name.clone(), self.id);
        let in_flight = InFlight::start(&inner.stats);
        tracing::debug!(semaphore = %name, "permit abandoned by its caller; giving it back");
        inner.runtime.clone().spawn(async move {
            let _in_flight = in_flight;
            if let Err(e) = release(&inner, &kind, &name, id).await {
                tracing::warn!(%e, semaphore = %name, "giving back an abandoned permit failed; it comes back when its lease ends");
            }
        });
    }
}
