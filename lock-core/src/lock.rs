//! [`Lock`]: a re-entrant exclusive lock, by name.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::backend::{ReleaseOutcome, ReleaseRequest, Topic};
use crate::client::{ClientInner, LockClient};
use crate::config::{lease_millis, ClientConfig};
use crate::error::{LockError, Result};
use crate::guard::Guard;
use crate::name::LockName;
use crate::op::{self, Attempt};
use crate::options::{AcquireOptions, Wait};
use crate::owner::Owner;
use crate::stats::Parked;
use crate::waiter::WakeBaton;
use crate::{AcquireRequest, LockInfo, LockKind};

/// A handle on one named, re-entrant, exclusive lock. Cheap to clone; makes
/// no I/O until used.
///
/// Waiting is event-driven (see the `waiter` module docs): a waiter sleeps
/// until an unlock notice or the holder's remaining time to live, never on a
/// fixed poll interval.
#[derive(Clone, Debug)]
pub struct Lock {
    client: LockClient,
    name: LockName,
}

impl Lock {
    pub(crate) fn new(client: LockClient, name: LockName) -> Self {
        Self { client, name }
    }

    fn inner(&self) -> &Arc<ClientInner> {
        &self.client.inner
    }

    /// The lock's name.
    pub fn name(&self) -> &LockName {
        &self.name
    }

    /// Takes the lock, waiting as long as it takes; the watchdog keeps it
    /// while the guard lives.
    ///
    /// # Errors
    /// Backend errors that outlived the retry policy; [`LockError::Closed`].
    ///
    /// # Cancel safety
    /// Cancel-safe: dropping the future leaves nothing held, queued or
    /// subscribed on the caller's behalf (an acquisition already on the wire
    /// is released again in the background).
    ///
    /// # Examples
    /// ```
    /// # async fn demo(lock: lock_core::Lock) -> lock_core::Result<()> {
    /// let guard = lock.lock().await?;
    /// guard.unlock().await?;
    /// # Ok(()) }
    /// ```
    pub async fn lock(&self) -> Result<Guard> {
        self.acquire_or_fail(AcquireOptions::new()).await
    }

    /// Takes the lock for `lease` at most, waiting as long as it takes. No
    /// renewal: the lock expires after `lease` whatever happens (unless the
    /// same owner holds it longer through another guard). The guard reports
    /// the loss a safety margin before the lease ends
    /// ([`crate::ClientConfig::safety_margin`]).
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] for a zero or over-long lease, or one
    /// not longer than its safety margin, before any I/O; otherwise as
    /// [`Lock::lock`].
    ///
    /// # Cancel safety
    /// As [`Lock::lock`].
    pub async fn lock_with_lease(&self, lease: Duration) -> Result<Guard> {
        self.acquire_or_fail(AcquireOptions::new().lease(lease))
            .await
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

    /// Tries once, without waiting. `Ok(None)` when someone else holds it.
    ///
    /// # Errors
    /// As [`Lock::lock`].
    ///
    /// # Cancel safety
    /// As [`Lock::lock`].
    pub async fn try_lock(&self) -> Result<Option<Guard>> {
        self.acquire(AcquireOptions::new().no_wait()).await
    }

    /// Waits up to `wait` for the lock (watchdog lease). `Ok(None)` when the
    /// wait ran out.
    ///
    /// # Errors
    /// As [`Lock::lock`].
    ///
    /// # Cancel safety
    /// As [`Lock::lock`].
    pub async fn try_lock_for(&self, wait: Duration) -> Result<Option<Guard>> {
        self.acquire(AcquireOptions::new().wait(wait)).await
    }

    /// Waits up to `wait` for the lock and holds it for `lease` at most.
    ///
    /// # Errors
    /// As [`Lock::lock_with_lease`].
    ///
    /// # Cancel safety
    /// As [`Lock::lock`].
    pub async fn try_lock_for_with_lease(
        &self,
        wait: Duration,
        lease: Duration,
    ) -> Result<Option<Guard>> {
        self.acquire(AcquireOptions::new().wait(wait).lease(lease))
            .await
    }

    async fn acquire_or_fail(&self, opts: AcquireOptions) -> Result<Guard> {
        debug_assert_eq!(opts.wait, Wait::Forever);
        match self.acquire(opts).await? {
            Some(guard) => Ok(guard),
            // Waiting forever only ends by taking the lock or by an error.
            None => Err(LockError::protocol(
                "an unbounded wait ended without the lock",
            )),
        }
    }

    /// The general acquisition: every other acquire method is a shorthand
    /// for this. `Ok(None)` when the wait ran out.
    ///
    /// The wait deadline bounds the waiting *between* attempts; an attempt
    /// already sent is bounded by the backend's command timeout and the
    /// retry policy.
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] (bad lease, foreign owner) before any
    /// I/O; [`LockError::WrongType`] when the key is not a lock; retryable
    /// errors that outlived the retry policy; [`LockError::Closed`].
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
        let inner = self.inner();
        inner.check_open()?;
        let (lease_ms, watchdog) = match opts.lease {
            None => (inner.watchdog_ms, true),
            Some(lease) => (fixed_lease_millis(&inner.config, lease)?, false),
        };
        let owner = self.resolve_owner(opts.owner)?;
        let deadline = match opts.wait {
            Wait::Forever => None,
            Wait::For(wait) => Some(Instant::now().checked_add(wait).unwrap_or_else(far_future)),
        };
        let fair = inner.backend.kind() == LockKind::Fair;
        // A fair waiter queues from its first attempt; a try never does.
        let queue_ms = (fair && opts.wait != Wait::For(Duration::ZERO)).then_some(inner.waiter_ms);
        let attempt = || {
            let req = AcquireRequest::new(
                self.name.clone(),
                owner,
                lease_ms,
                opts.fenced,
                inner.latch_ms,
            )
            .queue(queue_ms);
            op::acquire(inner, req)
        };

        let mut queued = match attempt().await? {
            Attempt::Acquired(hold) => return Ok(Some(self.guard(hold, watchdog))),
            Attempt::Held { queued, .. } => queued,
        };
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Ok(None);
        }

        // Exclusive waiters share the lock's channel; a fair waiter has its
        // own, on which only the queue head is told.
        let topic = if fair {
            Topic::Waiter(self.name.clone(), owner)
        } else {
            Topic::Lock(self.name.clone())
        };
        let subscription = inner.waiters.join(&inner.backend, topic);
        // Until the subscription is confirmed a notice could be missed, so
        // wait for it; if it fails, waiting stays correct, bounded by TTLs.
        let confirmed = async {
            if let Err(e) = subscription.confirmed().await {
                tracing::warn!(%e, lock = %self.name, "subscription failed; waiting on lease timeouts");
            }
        };
        match deadline {
            Some(d) => {
                if tokio::time::timeout_at(d, confirmed).await.is_err() {
                    return Ok(None);
                }
            }
            None => confirmed.await,
        }

        let mut baton = WakeBaton::new(Arc::clone(&subscription.notify));
        // The lock may have been released between the first attempt and the
        // subscription, unseen: always try again once subscribed.
        loop {
            let notified = subscription.notify.notified();
            tokio::pin!(notified);
            // Register before the attempt: a notice arriving while it is in
            // flight must still wake us.
            notified.as_mut().enable();
            let ttl = match attempt().await? {
                Attempt::Acquired(hold) => {
                    baton.disarm();
                    // Taking a fair lock leaves its queue.
                    if let Some(ticket) = queued.take() {
                        ticket.disarm();
                    }
                    return Ok(Some(self.guard(hold, watchdog)));
                }
                Attempt::Held { ttl, queued: place } => {
                    baton.disarm();
                    if let (Some(old), Some(_)) = (queued.take(), &place) {
                        old.disarm();
                    }
                    queued = place.or(queued);
                    ttl
                }
            };
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                return Ok(None);
            }
            let mut holder_wait = ttl
                .unwrap_or(inner.config.no_ttl_recheck)
                .max(Duration::from_millis(1));
            if fair {
                // Look again (refreshing our place) before it could expire.
                holder_wait = holder_wait.min(inner.config.waiter_timeout / 3);
            }
            let mut until = now + holder_wait;
            if let Some(d) = deadline {
                until = until.min(d);
            }
            let _parked = Parked::start(&inner.stats);
            tokio::select! {
                _ = &mut notified => {
                    inner.stats.wakeups.incr();
                    baton.arm();
                }
                _ = tokio::time::sleep_until(until) => {}
            }
        }
    }

    fn resolve_owner(&self, explicit: Option<Owner>) -> Result<Owner> {
        let inner = self.inner();
        match explicit {
            Some(owner) if owner.client_id() != inner.id => Err(LockError::invalid(format!(
                "owner {owner} belongs to another client (this client is {})",
                inner.id
            ))),
            Some(owner) => Ok(owner),
            None => Ok(Owner::current()
                .filter(|o| o.client_id() == inner.id)
                .unwrap_or_else(|| inner.new_owner())),
        }
    }

    fn guard(&self, hold: op::PendingHold, watchdog: bool) -> Guard {
        let (req, fencing_token, started) = hold.accept();
        Guard::new(
            Arc::clone(self.inner()),
            req,
            fencing_token,
            started,
            watchdog,
        )
    }

    /// Releases one hold of `owner` without a guard, as Redisson's `unlock()`
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
        let req = ReleaseRequest::new(self.name.clone(), owner, inner.watchdog_ms, inner.latch_ms);
        let outcome = op::release(inner, req, None)
            .await
            .map_err(op::join_error)??;
        match outcome {
            ReleaseOutcome::Released => Ok(true),
            ReleaseOutcome::StillHeld => Ok(false),
            ReleaseOutcome::NotHeld => Err(LockError::NotHeld {
                name: self.name.to_string(),
            }),
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
        self.inner().backend.force_unlock(&self.name).await
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
        self.inner().backend.inspect(&self.name).await
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

/// A fixed lease in milliseconds, refused when it is not longer than its
/// safety margin: its guard would be lost before it was handed out.
fn fixed_lease_millis(config: &ClientConfig, lease: Duration) -> Result<u64> {
    let ms = lease_millis(lease, "lease")?;
    let lease = Duration::from_millis(ms);
    let margin = config.safety_margin(lease);
    if lease <= margin {
        return Err(LockError::invalid(format!(
            "lease of {lease:?} is not longer than its safety margin of {margin:?} \
             (lease/100 + 2 ms + loss_margin), so it would be lost at once: \
             use a longer lease or a smaller loss_margin"
        )));
    }
    Ok(ms)
}

/// A deadline for waits too long to represent: effectively forever.
fn far_future() -> Instant {
    Instant::now() + Duration::from_secs(100 * 365 * 24 * 3600)
}
