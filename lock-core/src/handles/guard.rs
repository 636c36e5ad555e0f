//! [`Guard`]: proof of holding a lock.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::backend::held::{self, Held};
use crate::backend::kind::{
    AcquireRequest, ExclusiveKind, ReleaseOutcome, ReleaseRequest, RenewTarget,
};
use crate::deadline::Deadline;
use crate::engine::calls;
use crate::engine::holds::{CompactInstant, Hold};
use crate::engine::state::ClientInner;
use crate::error::{LockError, Result};
use crate::name::LockName;
use crate::owner::Owner;
use crate::telemetry;

/// A held lock. Release it with [`Guard::unlock`]; dropping it releases in
/// the background.
///
/// A guard always releases as the owner that acquired it, whichever task
/// drops it. With the watchdog (no explicit lease) the client keeps the
/// lock alive while the guard lives; with a lease it expires after the lease
/// whatever happens.
///
/// Guards of one owner on one lock share that owner's hold (one count in
/// the store): when it is found gone — by a renewal, or a release answered
/// "not held" — every one of them is told ([`Guard::lost`]).
///
/// # Dropping
/// Dropping a guard stops its renewal at once and sends the release from a
/// background task on the client's runtime. One whose outcome is unknown
/// after the retry policy (an outage, a store refusing writes) goes on
/// until the store answers, within the lease; other errors are logged, and
/// the lock then expires with its lease. Call [`Guard::unlock`] to see
/// errors.
/// A guard whose lock is already known lost sends no release: the owner may
/// hold the lock again by then, and that newer hold is not this guard's.
/// Nor does a guard of a closed client: the close gave its lock back.
#[must_use = "the lock is released as soon as the guard is dropped"]
#[derive(Debug)]
pub struct Guard {
    inner: Arc<ClientInner>,
    lease_ms: u64,
    /// The fencing token, if `fenced` (kept apart from its flag so the
    /// flag shares padding with `released`: 8 bytes less per guard).
    fencing_token: u64,
    fenced: bool,
    /// The owner's hold on the lock, shared with the owner's other guards
    /// of it: its lost signal fires for all of them. Its target is this
    /// guard's lock name and owner (a guard is small: a client may hold
    /// 100 000 locks).
    hold: Arc<Hold>,
    /// When a fixed lease expires (the rest of its [`Deadline`] follows
    /// from the lease); `None` under the watchdog, whose guards go by the
    /// hold's deadline.
    own_expires: Option<CompactInstant>,
    /// Whether the owner was made for this guard's wait alone
    /// ([`AcquireRequest::private_owner`]).
    private_owner: bool,
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
    /// Registers the hold that `req`, first sent at `started`, took
    /// through `kind` with the client's table of holds (a plain
    /// acquisition's with the task that made it, see
    /// [`crate::LockError::SelfDeadlock`]): its entry and the deadline its
    /// guard goes by. `None` once the client is closing: the caller gives
    /// the hold back.
    pub(crate) fn register(
        inner: &ClientInner,
        kind: &Arc<dyn ExclusiveKind>,
        req: &AcquireRequest,
        started: Instant,
        watchdog: bool,
    ) -> Option<(Arc<Hold>, Deadline)> {
        let lease = Duration::from_millis(req.lease_ms);
        let deadline = inner.config.lease_deadline(started, lease);
        let target = RenewTarget {
            name: req.name.clone(),
            owner: req.owner,
        };
        let task = req
            .private_owner
            .then(crate::engine::holds::TaskKey::current)
            .flatten();
        let hold =
            inner
                .holds
                .register(target, kind, deadline, watchdog, req.private_owner, task)?;
        Some((hold, deadline))
    }

    /// The guard of `hold`, just registered ([`Guard::register`]) for
    /// `req`, whose lease gives `deadline`.
    pub(crate) fn new(
        inner: Arc<ClientInner>,
        hold: Arc<Hold>,
        req: &AcquireRequest,
        fencing_token: Option<u64>,
        deadline: Deadline,
        watchdog: bool,
    ) -> Self {
        let guard = Self {
            inner,
            lease_ms: req.lease_ms,
            fencing_token: fencing_token.unwrap_or_default(),
            fenced: fencing_token.is_some(),
            hold,
            own_expires: (!watchdog).then(|| CompactInstant::new(deadline.expires)),
            private_owner: req.private_owner,
            released: false,
        };
        telemetry::guard_held(guard.kind_label(), true);
        guard
    }

    /// The guard's `kind` label in the holds gauge: its hold's kind (the
    /// owner's hold of the lock, which another kind of the same layout may
    /// have started), `fenced` when fenced. Worked out again at the drop
    /// rather than kept: a guard is small (a client may hold 100 000 locks).
    fn kind_label(&self) -> &'static str {
        telemetry::kind_label(self.hold.kind.behaviour().name, self.fenced)
    }

    fn watchdog(&self) -> bool {
        self.own_expires.is_none()
    }

    /// A fixed lease's own deadline, as [`Guard::new`] made it.
    fn own_deadline(&self) -> Option<Deadline> {
        self.own_expires.map(|expires| {
            let expires = expires.get();
            let lease = Duration::from_millis(self.lease_ms);
            self.inner.config.lease_deadline(expires - lease, lease)
        })
    }

    /// The lock's name.
    pub fn name(&self) -> &LockName {
        &self.hold.target.name
    }

    /// The owner this guard holds the lock as; acquire with it to re-enter
    /// ([`crate::Lock::lock_as`]).
    pub fn owner(&self) -> Owner {
        self.hold.target.owner
    }

    /// The fencing token, when the acquisition asked for one: strictly
    /// larger than every token handed out before for this lock name.
    pub fn fencing_token(&self) -> Option<u64> {
        self.fenced.then_some(self.fencing_token)
    }

    /// Whether the watchdog renews the lock while this guard lives (taken
    /// without a lease), as an expirable permit's guard tells of
    /// a permit.
    pub fn is_renewed(&self) -> bool {
        self.watchdog()
    }

    /// When the store may expire this guard's hold: after this instant
    /// another client may hold the lock. Under the watchdog it moves later
    /// with each successful renewal; with a fixed lease it is when the
    /// acquisition was first sent plus the lease. Both are measured from
    /// when the request was *sent* on this client's clock, so the store
    /// keeps the hold at least until then (up to clock drift), unless it
    /// is force-unlocked or deleted.
    ///
    /// The guard reports the loss a safety margin earlier
    /// ([`crate::ClientConfig::safety_margin`]), so a holder that stops
    /// when told ([`Guard::lost`]) has until this instant to finish: e.g. a
    /// supervisor gives its child the time between the two to exit before
    /// killing it.
    ///
    /// ```
    /// # async fn demo(guard: lock_core::Guard) {
    /// guard.lost().await;
    /// // Ask the work to stop; it must be done by the deadline.
    /// let grace = guard.lease_deadline().saturating_duration_since(tokio::time::Instant::now());
    /// # let _ = grace; }
    /// ```
    pub fn lease_deadline(&self) -> Instant {
        self.own_deadline()
            .unwrap_or_else(|| self.hold.deadline())
            .expires
    }

    /// When this guard reports its lock lost unless renewed meanwhile: the
    /// [lease deadline](Guard::lease_deadline) less the safety margin.
    pub(crate) fn lost_at(&self) -> Instant {
        self.own_deadline()
            .unwrap_or_else(|| self.hold.deadline())
            .lost_at
    }

    /// Whether the lock is known to be gone: a renewal found it no longer
    /// ours, renewals failed until its lease (less the safety margin, see
    /// [`Guard::lease_deadline`]) ran out, its fixed lease (less the margin)
    /// ran out, a release by another guard of the same owner found it not held
    /// (or [`crate::Lock::unlock_as`] freed it), or the client was closed.
    /// Once `true`, it stays `true`. Cheap; makes no I/O.
    pub fn is_lost(&self) -> bool {
        self.hold_lost()
            || self
                .own_deadline()
                .is_some_and(|deadline| deadline.is_lost())
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
        match self.own_deadline() {
            Some(deadline) => tokio::select! {
                _ = self.hold.lost(&self.inner.holds.told) => {}
                _ = tokio::time::sleep_until(deadline.lost_at) => {}
            },
            None => self.hold.lost(&self.inner.holds.told).await,
        }
        self.hold_lost();
    }

    /// Whether the owner's hold is lost; if so, it leaves the table at
    /// once (the watchdog would drop it at its next wake-up).
    fn hold_lost(&self) -> bool {
        let lost = self.hold.is_lost();
        if lost {
            self.inner.holds.end(&self.hold, "expired");
        }
        lost
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
    /// [`LockError::LockLost`]; [`LockError::Closed`] once the client was
    /// closed (which gave the lock back).
    pub fn check(&self) -> Result<()> {
        if self.is_lost() && self.inner.is_closed() {
            Err(LockError::Closed)
        } else if self.is_lost() {
            Err(LockError::lock_lost(self.name().as_str()))
        } else {
            Ok(())
        }
    }

    /// Runs `work` while the lock is held, then unlocks: the `select!` on
    /// [`Guard::lost`] every critical section needs, written once.
    ///
    /// `work` gets the guard, to read the fencing token or to
    /// [`check`](Guard::check) before a step that must not run without the
    /// lock. When the lock is lost first, `work` is dropped at its next
    /// await point (cancelled, as in `select!`) and nothing is released:
    /// the lock is no longer ours.
    ///
    /// ```
    /// # async fn write_batch(_token: Option<u64>) {}
    /// # async fn demo(lock: lock_core::Lock) -> lock_core::Result<()> {
    /// let guard = lock.lock().await?;
    /// let rows = guard
    ///     .run_locked(async |guard| {
    ///         write_batch(guard.fencing_token()).await;
    ///         42
    ///     })
    ///     .await?;
    /// assert_eq!(rows, 42);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// - [`LockError::LockLost`] when the lock was lost before `work`
    ///   finished (`work` was cancelled), or the unlock found it gone after
    ///   `work` finished (`work` may have run partly without it; its output
    ///   is dropped).
    /// - The unlock's backend error when it outlived the retry policy
    ///   (`work` ran under the lock, which expires with its lease).
    ///
    /// Either way, what `work` must not lose is to be committed inside it,
    /// fenced by the token where the storage supports that.
    ///
    /// # Cancel safety
    /// Dropping the future drops `work` and the guard: the lock is released
    /// in the background, as when a guard is dropped.
    pub async fn run_locked<T>(self, work: impl AsyncFnOnce(&Self) -> T) -> Result<T> {
        held::run_locked(self, work).await
    }

    /// Releases this hold. With re-entrant holds of the same owner
    /// outstanding, the lock stays held by that owner.
    ///
    /// # Errors
    /// [`LockError::NotHeld`] when the lock was no longer ours: its lease
    /// ran out, it was force-unlocked or deleted (nothing is sent when that
    /// was known already, [`Guard::is_lost`]); [`LockError::Closed`] after
    /// the client was closed (which gave the lock back); backend errors
    /// that outlived the retry policy: a retryable one means the release
    /// goes on in the background until the store answers (or the lease
    /// ends, which frees the lock as well).
    ///
    /// # Cancel safety
    /// The release runs to completion even if this future is dropped.
    pub async fn unlock(mut self) -> Result<()> {
        self.released = true;
        let outcome = match self.start_release() {
            Some(release) => release.await?,
            // The close gave the lock back already.
            None if self.inner.is_closed() => return Err(LockError::Closed),
            None => ReleaseOutcome::NotHeld,
        };
        match outcome {
            ReleaseOutcome::Released | ReleaseOutcome::StillHeld => Ok(()),
            ReleaseOutcome::NotHeld => Err(LockError::lock_not_held(self.name().as_str())),
        }
    }

    /// Leaves the owner's hold (stopping its renewal with the last watchdog
    /// guard, so no renewal starts after the unlock), then sends the
    /// release. Sends nothing when the hold is already lost: the owner's
    /// count in the store may then belong to a newer hold.
    fn start_release(&self) -> Option<calls::Detached<Result<ReleaseOutcome>>> {
        if !self.inner.holds.unregister(&self.hold, self.watchdog()) {
            tracing::debug!(lock = %self.name(), "guard of a lost hold released; nothing to send");
            return None;
        }
        let req = ReleaseRequest::new(
            self.name().clone(),
            self.owner(),
            self.lease_ms,
            self.inner.request_deadline(),
        )
        .private_owner(self.private_owner);
        Some(calls::release(
            &self.inner,
            &self.hold.kind,
            req,
            Some(Arc::clone(&self.hold)),
        ))
    }
}

impl Held for Guard {
    async fn lost(&self) {
        Guard::lost(self).await;
    }

    fn check(&self) -> Result<()> {
        Guard::check(self)
    }

    async fn release(self) -> Result<()> {
        self.unlock().await
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        telemetry::guard_held(self.kind_label(), false);
        if self.released {
            return;
        }
        // After a close, the hold is ended (the close gave it back) and
        // nothing is sent.
        drop(self.start_release());
    }
}

#[cfg(test)]
mod tests {
    /// A guard is what a service keeps per held lock, beside the client's
    /// `Hold`: keep it small (lock-bench W4 measures the whole).
    #[test]
    fn a_guard_stays_small() {
        assert!(
            std::mem::size_of::<super::Guard>() <= 48,
            "Guard is {} bytes",
            std::mem::size_of::<super::Guard>()
        );
    }
}
