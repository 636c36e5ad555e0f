//! [`ExpirablePermitGuard`]: proof of holding one permit of a
//! [`PermitExpirableSemaphore`].

use std::sync::Arc;

use tokio::time::Instant;

use lock_core::backend::PermitHold;
use lock_core::telemetry;
use lock_core::{LockError, LockName, Result};

use super::PermitId;

use super::PermitExpirableSemaphore;

/// A taken permit of a [`PermitExpirableSemaphore`]. Give it back with
/// [`ExpirablePermitGuard::release`]; dropping it gives it back in the background.
///
/// Taken without a lease, the client's watchdog keeps the permit alive
/// while the guard lives, in the same batched tick that renews locks
/// (every third of [`lock_core::ClientConfig::watchdog_timeout`], extending the
/// lease to the watchdog timeout from then, never shortening it); with a
/// lease it comes back when the lease ends, whatever happens.
///
/// # Lost permits
/// [`ExpirablePermitGuard::lost`] fires, and [`ExpirablePermitGuard::is_lost`] turns
/// `true`, when the permit may no longer be this guard's: a renewal found
/// it not taken (its lease ended, it was released by id elsewhere, its
/// semaphore was deleted), renewals could not be confirmed until a safety
/// margin before its lease ends ([`lock_core::ClientConfig::safety_margin`]),
/// its fixed lease (less the margin) ran out, this client gave it back by
/// id, or the client was closed (which gives every guard's permit back). A fixed-lease permit is not
/// renewed, so only its lease end and this client's own calls tell it.
///
/// # Dropping
/// Dropping the guard stops its renewal at once and sends the release from
/// a background task on the client's runtime, which keeps trying through
/// transient faults until the store answers; other errors are logged, and
/// the permit then comes back with its lease. Call
/// [`ExpirablePermitGuard::release`] to see errors, or [`ExpirablePermitGuard::into_id`] to
/// keep the permit taken for whoever releases it by id. A guard of a permit
/// already known lost sends nothing.
#[must_use = "the permit is given back as soon as the guard is dropped"]
#[derive(Debug)]
pub struct ExpirablePermitGuard {
    semaphore: PermitExpirableSemaphore,
    lease: Arc<PermitHold>,
    done: bool,
}

impl ExpirablePermitGuard {
    pub(crate) fn new(semaphore: PermitExpirableSemaphore, lease: Arc<PermitHold>) -> Self {
        telemetry::guard_held(lease.kind_name(), true);
        Self {
            semaphore,
            lease,
            done: false,
        }
    }

    /// The permit's id: what [`PermitExpirableSemaphore::release`] and
    /// Redisson's `release(id)` take.
    pub fn id(&self) -> PermitId {
        self.lease.target().id.into()
    }

    /// The semaphore's name.
    pub fn name(&self) -> &LockName {
        &self.lease.target().name
    }

    /// Whether the watchdog renews the permit (taken without a lease).
    pub fn is_renewed(&self) -> bool {
        self.lease.is_watched()
    }

    /// When the store may take the permit back: after this instant another
    /// holder may have it. Under the watchdog it moves later with each
    /// successful renewal; with a fixed lease it is when the acquisition
    /// was sent plus the lease. The guard reports the loss a safety margin
    /// earlier ([`ExpirablePermitGuard::lost`]). As for [`lock_core::Guard::lease_deadline`],
    /// measured on this client's clock from when the request was sent.
    pub fn lease_deadline(&self) -> Instant {
        self.lease.deadline().expires()
    }

    /// Whether the permit is known lost (see the type's docs). Once
    /// `true`, it stays `true`. Cheap; makes no I/O.
    pub fn is_lost(&self) -> bool {
        let lost = self.lease.is_lost();
        if lost {
            // Leaves the table at once (the watchdog would at its next
            // wake-up).
            self.semaphore.inner().permits().end(&self.lease, "expired");
        }
        lost
    }

    /// Resolves when the permit is lost (see [`ExpirablePermitGuard::is_lost`]).
    /// Use it to abort the work the permit allows:
    ///
    /// ```
    /// # async fn work() {}
    /// # async fn demo(permit: lock_redis::ExpirablePermitGuard) -> lock_redis::Result<()> {
    /// tokio::select! {
    ///     _ = work() => permit.release().await?,
    ///     _ = permit.lost() => eprintln!("permit lost; work aborted"),
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Cancel safety
    /// Cancel-safe; it only observes.
    pub async fn lost(&self) {
        self.lease.lost().await;
        self.is_lost();
    }

    /// `Err(LockLost)` once the permit is known lost: a cheap check for
    /// loops in the work the permit allows.
    ///
    /// ```
    /// # async fn demo(permit: lock_redis::ExpirablePermitGuard) -> lock_redis::Result<()> {
    /// for batch in 0..10 {
    ///     permit.check()?; // stop once the permit is gone
    ///     // … process batch …
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`LockError::LockLost`]; [`LockError::Closed`] once the client was
    /// closed (which gave the permit back).
    pub fn check(&self) -> Result<()> {
        if self.is_lost() && self.semaphore.inner().is_closed() {
            Err(LockError::Closed)
        } else if self.is_lost() {
            Err(super::request::permit_lost(self.name().as_str(), self.id()))
        } else {
            Ok(())
        }
    }

    /// Gives the permit back; waiters are told the new count.
    ///
    /// # Errors
    /// [`LockError::NotHeld`] when the permit was no longer taken: its
    /// lease ended, or it was released by id (nothing is sent when that was
    /// known already, [`ExpirablePermitGuard::is_lost`]); store errors that
    /// outlived the retry policy (a retryable one means the release goes on
    /// in the background until the store answers); [`LockError::Closed`].
    ///
    /// # Cancel safety
    /// The release runs to completion even when this future is dropped.
    pub async fn release(mut self) -> Result<()> {
        self.done = true;
        let not_held = || super::request::permit_not_held(self.name().as_str(), self.id());
        let inner = self.semaphore.inner();
        if !inner.permits().unregister(&self.lease) {
            // The close gave it back already.
            if inner.is_closed() {
                return Err(LockError::Closed);
            }
            return Err(not_held());
        }
        // Runs to completion on the client's runtime even if dropped.
        if self.semaphore.try_release(self.id()).await? {
            Ok(())
        } else {
            Err(not_held())
        }
    }

    /// Runs `work` while the permit is held, then gives it back; as
    /// [`lock_core::Guard::run_locked`].
    ///
    /// # Errors
    /// As [`lock_core::Guard::run_locked`].
    ///
    /// # Cancel safety
    /// As [`lock_core::Guard::run_locked`].
    pub async fn run_locked<T>(self, work: impl AsyncFnOnce(&Self) -> T) -> Result<T> {
        lock_core::backend::run_locked(self, work).await
    }

    /// Stops renewing the permit and hands back its id, leaving it taken:
    /// the Redisson style, where another process (or a later call) gives it
    /// back by id ([`PermitExpirableSemaphore::release`]). The permit
    /// comes back by itself when its lease ends; a permit the watchdog
    /// renewed has at most [`lock_core::ClientConfig::watchdog_timeout`] left,
    /// so set a longer lease first when the id is handed on
    /// ([`PermitExpirableSemaphore::update_lease_time`]).
    ///
    /// ```
    /// # use std::time::Duration;
    /// # async fn demo(sem: lock_redis::PermitExpirableSemaphore) -> lock_redis::Result<()> {
    /// let permit = sem.acquire_with_lease(Duration::from_secs(600)).await?;
    /// let id = permit.into_id(); // released later, by id, by whoever gets it
    /// sem.release(id).await?;
    /// # Ok(()) }
    /// ```
    pub fn into_id(mut self) -> PermitId {
        self.done = true;
        self.semaphore.inner().permits().unregister(&self.lease);
        self.id()
    }
}

impl Drop for ExpirablePermitGuard {
    fn drop(&mut self) {
        telemetry::guard_held(self.lease.kind_name(), false);
        if self.done {
            return;
        }
        let inner = self.semaphore.inner();
        // A close ended the permit (and gave it back): nothing is sent.
        let send = inner.permits().unregister(&self.lease);
        if !send {
            tracing::debug!(semaphore = %self.name(), "guard of a lost permit dropped; nothing to send");
            return;
        }
        self.semaphore.release_in_background(self.id());
    }
}

impl lock_core::backend::Held for ExpirablePermitGuard {
    async fn lost(&self) {
        ExpirablePermitGuard::lost(self).await;
    }

    fn check(&self) -> Result<()> {
        ExpirablePermitGuard::check(self)
    }

    async fn release(self) -> Result<()> {
        ExpirablePermitGuard::release(self).await
    }
}
