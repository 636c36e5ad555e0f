//! [`Guard`]: proof of holding a lock.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::backend::{AcquireRequest, ReleaseOutcome, ReleaseRequest, RenewTarget};
use crate::client::ClientInner;
use crate::error::{LockError, Result};
use crate::name::LockName;
use crate::op;
use crate::owner::Owner;

/// A held lock. Release it with [`Guard::unlock`]; dropping it releases in
/// the background.
///
/// A guard always releases as the owner that acquired it, whichever task
/// drops it. With the watchdog (no explicit lease) the client keeps the
/// lock alive while the guard lives; with a lease it expires after the lease
/// whatever happens.
///
/// # Dropping
/// Dropping a guard stops its renewal at once and sends the release from a
/// background task on the client's runtime; errors there are logged, and the
/// lock then expires with its lease. Call [`Guard::unlock`] to see errors.
#[must_use = "the lock is released as soon as the guard is dropped"]
#[derive(Debug)]
pub struct Guard {
    inner: Arc<ClientInner>,
    name: LockName,
    owner: Owner,
    lease_ms: u64,
    fencing_token: Option<u64>,
    /// Fires when the watchdog finds the lock gone or overdue.
    lost: CancellationToken,
    /// For a fixed lease: when it runs out, the lock is gone.
    lease_deadline: Option<Instant>,
    watchdog: bool,
    released: bool,
}

impl std::fmt::Debug for ClientInner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl Guard {
    pub(crate) fn new(
        inner: Arc<ClientInner>,
        req: AcquireRequest,
        fencing_token: Option<u64>,
        started: Instant,
        watchdog: bool,
    ) -> Self {
        let (lost, lease_deadline) = if watchdog {
            let target = RenewTarget {
                name: req.name.clone(),
                owner: req.owner,
            };
            (inner.watchdog.watch(target, started), None)
        } else {
            let lease = Duration::from_millis(req.lease_ms);
            (CancellationToken::new(), Some(started + lease))
        };
        Self {
            inner,
            name: req.name,
            owner: req.owner,
            lease_ms: req.lease_ms,
            fencing_token,
            lost,
            lease_deadline,
            watchdog,
            released: false,
        }
    }

    /// The lock's name.
    pub fn name(&self) -> &LockName {
        &self.name
    }

    /// The owner this guard holds the lock as; acquire with it to re-enter
    /// ([`crate::Lock::lock_as`]).
    pub fn owner(&self) -> Owner {
        self.owner
    }

    /// The fencing token, when the acquisition asked for one: strictly
    /// larger than every token handed out before for this lock name.
    pub fn fencing_token(&self) -> Option<u64> {
        self.fencing_token
    }

    /// Whether the lock is known to be gone: a renewal found it no longer
    /// ours, renewals failed until its lease ran out, or its fixed lease
    /// ran out. Cheap; makes no I/O.
    pub fn is_lost(&self) -> bool {
        self.lost.is_cancelled()
            || self
                .lease_deadline
                .is_some_and(|deadline| Instant::now() >= deadline)
    }

    /// Resolves when the lock is lost (see [`Guard::is_lost`]). Use it to
    /// abort a critical section:
    ///
    /// ```
    /// # async fn work() {}
    /// # async fn demo(guard: lock_core::Guard) -> lock_core::Result<()> {
    /// tokio::select! {
    ///     _ = work() => guard.unlock().await?,
    ///     _ = guard.lost() => eprintln!("lock lost; work aborted"),
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Cancel safety
    /// Cancel-safe; it only observes.
    pub async fn lost(&self) {
        match self.lease_deadline {
            Some(deadline) => tokio::select! {
                _ = self.lost.cancelled() => {}
                _ = tokio::time::sleep_until(deadline) => {}
            },
            None => self.lost.cancelled().await,
        }
    }

    /// `Err(LockLost)` once the lock is known to be lost (see
    /// [`Guard::is_lost`]): a cheap check for loops inside a critical
    /// section.
    ///
    /// ```
    /// # async fn demo(guard: lock_core::Guard) -> lock_core::Result<()> {
    /// for batch in 0..10 {
    ///     guard.check()?; // stop writing once the lock is gone
    ///     // … write batch …
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`LockError::LockLost`].
    pub fn check(&self) -> Result<()> {
        if self.is_lost() {
            Err(LockError::LockLost {
                name: self.name.to_string(),
            })
        } else {
            Ok(())
        }
    }

    /// Releases this hold. With re-entrant holds of the same owner
    /// outstanding, the lock stays held by that owner.
    ///
    /// # Errors
    /// [`LockError::NotHeld`] when the lock was no longer ours: its lease
    /// ran out, it was force-unlocked or deleted; backend errors that
    /// outlived the retry policy (the lock then expires with its lease).
    ///
    /// # Cancel safety
    /// The release runs to completion even if this future is dropped.
    pub async fn unlock(mut self) -> Result<()> {
        self.released = true;
        let outcome = self.start_release().await.map_err(op::join_error)??;
        match outcome {
            ReleaseOutcome::Released | ReleaseOutcome::StillHeld => Ok(()),
            ReleaseOutcome::NotHeld => Err(LockError::NotHeld {
                name: self.name.to_string(),
            }),
        }
    }

    /// Stops renewal for this guard, then sends the release. Stopping first
    /// means no renewal starts after the unlock.
    fn start_release(&self) -> tokio::task::JoinHandle<Result<ReleaseOutcome>> {
        if self.watchdog {
            self.inner.watchdog.unwatch(&RenewTarget {
                name: self.name.clone(),
                owner: self.owner,
            });
        }
        let req = ReleaseRequest::new(
            self.name.clone(),
            self.owner,
            self.lease_ms,
            self.inner.latch_ms,
        );
        op::release(&self.inner, req)
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if self.released {
            return;
        }
        if self.inner.is_closed() {
            tracing::debug!(lock = %self.name, "guard dropped after close; lock expires with its lease");
            return;
        }
        drop(self.start_release());
    }
}
