//! [`Lock`]: a re-entrant exclusive lock, by name.

use std::sync::Arc;
use std::time::Duration;

use crate::backend::kind::{ExclusiveKind, LockInfo, ReleaseOutcome, ReleaseRequest};
use crate::config::options::AcquireOptions;
use crate::engine::calls;
use crate::engine::client::Engine;
use crate::engine::state::ClientInner;
use crate::error::{LockError, Result};
use crate::handles::acquire;
use crate::handles::guard::Guard;
use crate::handles::target::LockTarget;
use crate::name::LockName;
use crate::owner::Owner;

/// Makes a lock's handle: here rather than beside the engine, so the
/// engine never imports a handle.
impl Engine {
    /// A handle on the lock called `name` of the exclusive `kind` (a
    /// deployment's client names its kinds: `client.lock(name)`,
    /// `client.lean_lock(name)`, …). Makes no I/O.
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] for an empty or over-long name.
    pub fn lock(&self, name: impl AsRef<str>, kind: Arc<dyn ExclusiveKind>) -> Result<Lock> {
        Ok(Lock::new(self.clone(), LockName::new(name)?, kind))
    }
}

/// A handle on one named, re-entrant, exclusive lock
/// (`client.lock(name)`). Cheap to clone; makes no I/O until used.
///
/// Waiting is event-driven (see the `waiter` module docs): a waiter sleeps
/// until an unlock notice or the holder's remaining time to live, never on a
/// fixed poll interval. Once the lock is free any waiter may win it; a
/// fair lock hands it out in arrival order instead, with the same
/// methods; a [`crate::FencedLock`] is this lock with every acquisition
/// fenced.
#[derive(Clone)]
pub struct Lock {
    target: LockTarget,
}

impl std::fmt::Debug for Lock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lock")
            .field("name", &self.target.name)
            .field("client", &self.target.client)
            .finish_non_exhaustive()
    }
}

impl Lock {
    pub(crate) fn new(client: Engine, name: LockName, kind: Arc<dyn ExclusiveKind>) -> Self {
        Self {
            target: LockTarget { client, name, kind },
        }
    }

    pub(crate) fn inner(&self) -> &Arc<ClientInner> {
        self.target.inner()
    }

    /// The kind whose store operations this lock uses.
    pub(crate) fn kind(&self) -> &Arc<dyn ExclusiveKind> {
        self.target.kind()
    }

    /// What the lock is made of, for its acquisition.
    pub(crate) fn target(&self) -> &LockTarget {
        &self.target
    }

    /// The lock's name.
    pub fn name(&self) -> &LockName {
        self.target.name()
    }

    /// Takes the lock as `owner`, re-entering if `owner` holds it already
    /// (e.g. `lock.lock_as(guard.owner())`). Waits as long as it takes.
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] when `owner` belongs to another
    /// client; otherwise as [`Lock::lock`].
    ///
    /// # Cancel safety
    /// As [`Lock::lock`].
    pub async fn lock_as(&self, owner: Owner) -> Result<Guard> {
        self.acquire_or_fail(AcquireOptions::new().owner(owner))
            .await
    }

    /// The general acquisition: every other acquire method is a shorthand
    /// for this. `Ok(None)` when the wait ran out.
    ///
    /// The wait deadline bounds the waiting *between* attempts; an attempt
    /// already sent is bounded by the backend's command timeout and the
    /// retry policy. An attempt that fails with a retryable error (the
    /// store is down, restarting or failing over) is tried again with
    /// capped backoff while the wait allows: forever for
    /// [`crate::Wait::Forever`], until the deadline otherwise, not at all for a
    /// call that does not wait.
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] (bad lease, foreign owner) before any
    /// I/O; [`LockError::WrongType`] when the key is not a lock; retryable
    /// errors that outlived the retry policy (no wait) or lasted until the
    /// deadline; [`LockError::Closed`].
    ///
    /// # Cancel safety
    /// Cancel-safe at every await point: an attempt on the wire finishes in
    /// the background and is released again if it took the lock; the
    /// subscription is left; a wake-up this waiter received and had not used
    /// is passed to the next waiter.
    ///
    /// # Examples
    /// ```
    /// # use std::time::Duration;
    /// # use lock_core::AcquireOptions;
    /// # async fn demo(lock: lock_core::Lock) -> lock_core::Result<()> {
    /// let opts = AcquireOptions::new().wait(Duration::from_millis(500)).fenced();
    /// if let Some(guard) = lock.acquire(opts).await? {
    ///     let token = guard.fencing_token().unwrap();
    ///     // pass `token` to the storage you write to …
    ///     guard.unlock().await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn acquire(&self, opts: AcquireOptions) -> Result<Option<Guard>> {
        acquire::acquire(&self.target, opts).await
    }

    /// Releases one hold of `owner` without a guard, as a plain `unlock()`
    /// does. Guards release themselves; this is for tools and for code that
    /// tracks owners itself. Returns `true`
    /// when that was the last hold and the lock is now free: then (and on
    /// [`LockError::NotHeld`]) every guard of `owner` on this lock is told
    /// its lock is lost, and the watchdog stops renewing it.
    ///
    /// # Errors
    /// [`LockError::NotHeld`] when `owner` does not hold the lock; backend
    /// errors as [`Lock::lock`].
    ///
    /// # Cancel safety
    /// The release runs to completion even if this future is dropped.
    pub async fn unlock_as(&self, owner: Owner) -> Result<bool> {
        let inner = self.inner();
        inner.check_open()?;
        let req = ReleaseRequest::new(
            self.target.name.clone(),
            owner,
            inner.watchdog_ms,
            inner.request_deadline(),
        );
        let outcome = calls::release(inner, &self.target.kind, req, None).await?;
        match outcome {
            ReleaseOutcome::Released => Ok(true),
            ReleaseOutcome::StillHeld => Ok(false),
            ReleaseOutcome::NotHeld => Err(LockError::lock_not_held(self.target.name.as_str())),
        }
    }

    /// Deletes the lock whoever holds it, and wakes its waiters. Returns
    /// whether it was held. The holder's guards find out through their
    /// lost-lock signal — all guards of that owner at once, fixed-lease
    /// ones included — at the watchdog's next renewal of any of them, or
    /// when a release by one of them is answered [`LockError::NotHeld`]; a
    /// holder with only fixed leases (nothing renews them) learns it when
    /// its leases run out or a release fails so.
    ///
    /// # Errors
    /// [`LockError::WrongType`]; backend errors.
    ///
    /// # Cancel safety
    /// Dropping the future may or may not have deleted the lock.
    pub async fn force_unlock(&self) -> Result<bool> {
        self.inner().check_open()?;
        self.target.kind.force_unlock(&self.target.name).await
    }

    /// A snapshot of the lock: holders with hold counts, and remaining time
    /// to live.
    ///
    /// # Errors
    /// [`LockError::WrongType`]; backend errors.
    ///
    /// # Cancel safety
    /// Read-only; safe to drop.
    pub async fn info(&self) -> Result<LockInfo> {
        self.inner().check_open()?;
        self.target.kind.inspect(&self.target.name).await
    }

    /// Whether anyone holds the lock.
    ///
    /// # Errors
    /// As [`Lock::info`].
    ///
    /// # Cancel safety
    /// Read-only; safe to drop.
    pub async fn is_locked(&self) -> Result<bool> {
        Ok(self.info().await?.is_locked())
    }

    /// Whether `owner` holds the lock.
    ///
    /// # Errors
    /// As [`Lock::info`].
    ///
    /// # Cancel safety
    /// Read-only; safe to drop.
    pub async fn is_held_by(&self, owner: Owner) -> Result<bool> {
        Ok(self.hold_count(owner).await? > 0)
    }

    /// How many times `owner` holds the lock (0 when it does not).
    ///
    /// # Errors
    /// As [`Lock::info`].
    ///
    /// # Cancel safety
    /// Read-only; safe to drop.
    pub async fn hold_count(&self, owner: Owner) -> Result<u64> {
        Ok(self.info().await?.hold_count(&owner))
    }

    /// The lock's remaining time to live: `None` when it is free (or its key
    /// has no expiry).
    ///
    /// # Errors
    /// As [`Lock::info`].
    ///
    /// # Cancel safety
    /// Read-only; safe to drop.
    pub async fn remaining_ttl(&self) -> Result<Option<Duration>> {
        Ok(self.info().await?.ttl)
    }
}

crate::handles::shorthands::acquire_shorthands!(Lock, Guard, "the lock");
