//! The watchdog: keeps a client's watchdog-leased locks alive.
//!
//! # Algorithm
//! One task per client, not one timer per lock. Every `watchdog_timeout / 3`
//! it renews **every** lock the client holds under the watchdog in one
//! [`LockBackend::renew`] call; the backend batches the targets (many keys
//! per script, pipelined), so 100 000 held locks cost a few round trips per
//! tick. Re-entrant holds of one owner share one entry.
//!
//! Each entry remembers its *lease deadline*: when the last successful
//! renewal (or the acquisition) was **sent**, plus the lease. Measuring from
//! the send time keeps the deadline on the safe side of the store's own
//! expiry.
//!
//! # Lost locks
//! An entry's lost signal fires, and the entry is dropped, when
//! - a renewal reports the lock no longer held by its owner (expired,
//!   force-unlocked, deleted), or
//! - renewals keep failing until the lease deadline passes: the store may
//!   already have expired the lock, so the holder must assume it has.
//!
//! After a failed tick the next one comes sooner (the retry policy's
//! backoff), and the task always wakes by the earliest lease deadline, so a
//! lost lock is reported on time, not up to a tick late.
//!
//! # Release
//! The engine removes the entry *before* it sends the final release, so no
//! renewal is started after an unlock. A renewal already in flight finds the
//! owner's field gone and changes nothing (the Redisson bug of a watchdog
//! outliving its unlock cannot happen).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::backend::{LockBackend, RenewTarget};
use crate::config::RetryPolicy;
use crate::stats::Stats;

struct Entry {
    guards: usize,
    lost: CancellationToken,
    deadline: Instant,
    generation: u64,
}

struct Shared {
    entries: Mutex<HashMap<RenewTarget, Entry>>,
    next_generation: std::sync::atomic::AtomicU64,
    work: Notify,
    shutdown: CancellationToken,
    lease: Duration,
}

impl Shared {
    fn entries(&self) -> MutexGuard<'_, HashMap<RenewTarget, Entry>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The client's handle on its watchdog task. Dropping it stops the task.
pub(crate) struct Watchdog {
    shared: Arc<Shared>,
}

impl Watchdog {
    /// Starts the watchdog task on `runtime`.
    pub(crate) fn start(
        runtime: &tokio::runtime::Handle,
        backend: Arc<dyn LockBackend>,
        lease: Duration,
        retry: RetryPolicy,
        stats: Arc<Stats>,
    ) -> Self {
        let shared = Arc::new(Shared {
            entries: Mutex::new(HashMap::new()),
            next_generation: std::sync::atomic::AtomicU64::new(0),
            work: Notify::new(),
            shutdown: CancellationToken::new(),
            lease,
        });
        let task = Task {
            shared: Arc::clone(&shared),
            backend,
            retry,
            stats,
        };
        runtime.spawn(task.run());
        Self { shared }
    }

    /// Starts (or shares) renewal of `target`, acquired with a request first
    /// sent at `sent`. Returns the entry's lost signal.
    pub(crate) fn watch(&self, target: RenewTarget, sent: Instant) -> CancellationToken {
        let deadline = sent + self.shared.lease;
        let mut entries = self.shared.entries();
        let first = entries.is_empty();
        let entry = entries.entry(target).or_insert_with(|| Entry {
            guards: 0,
            lost: CancellationToken::new(),
            deadline,
            generation: self
                .shared
                .next_generation
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        });
        entry.guards += 1;
        // A re-entrant acquisition set the lease again.
        entry.deadline = entry.deadline.max(deadline);
        let lost = entry.lost.clone();
        drop(entries);
        if first {
            self.shared.work.notify_one();
        }
        lost
    }

    /// One guard of `target` is going away; renewal stops with the last.
    pub(crate) fn unwatch(&self, target: &RenewTarget) {
        let mut entries = self.shared.entries();
        if let Some(entry) = entries.get_mut(target) {
            entry.guards -= 1;
            if entry.guards == 0 {
                entries.remove(target);
            }
        }
    }

    /// The lock is no longer held by this owner at all (released to zero,
    /// or released outside the guards): stop renewing it.
    pub(crate) fn forget(&self, target: &RenewTarget) {
        self.shared.entries().remove(target);
    }

    /// Stops the task; renewals end.
    pub(crate) fn stop(&self) {
        self.shared.shutdown.cancel();
    }

    /// How many locks are being kept alive.
    pub(crate) fn len(&self) -> usize {
        self.shared.entries().len()
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.stop();
    }
}

struct Task {
    shared: Arc<Shared>,
    backend: Arc<dyn LockBackend>,
    retry: RetryPolicy,
    stats: Arc<Stats>,
}

impl Task {
    async fn run(self) {
        let interval = self.shared.lease / 3;
        let mut failures = 0u32;
        let mut next_tick: Option<Instant> = None;
        loop {
            if self.shared.entries().is_empty() {
                next_tick = None;
                tokio::select! {
                    _ = self.shared.work.notified() => {}
                    _ = self.shared.shutdown.cancelled() => return,
                }
            }
            let tick = *next_tick.get_or_insert_with(|| Instant::now() + interval);
            let wake_at = self.earliest_deadline().map_or(tick, |d| d.min(tick));
            tokio::select! {
                _ = tokio::time::sleep_until(wake_at) => {}
                _ = self.shared.shutdown.cancelled() => return,
            }
            if Instant::now() >= tick {
                failures = if self.renew_all().await {
                    0
                } else {
                    failures + 1
                };
                // After a failure, try again sooner than a full interval, and
                // ever more often as the earliest lease deadline nears, so a
                // server that comes back just before it still saves the lock.
                let pause = if failures == 0 {
                    interval
                } else {
                    let to_deadline = self.earliest_deadline().map_or(interval, |d| {
                        d.saturating_duration_since(Instant::now()) / 2
                    });
                    interval
                        .min(self.retry.backoff(failures))
                        .min(to_deadline.max(Duration::from_millis(1)))
                };
                next_tick = Some(Instant::now() + pause);
            }
            self.expire_overdue();
        }
    }

    fn earliest_deadline(&self) -> Option<Instant> {
        self.shared.entries().values().map(|e| e.deadline).min()
    }

    /// Renews every entry once; returns whether the call went through.
    async fn renew_all(&self) -> bool {
        let batch: Vec<(RenewTarget, u64)> = self
            .shared
            .entries()
            .iter()
            .map(|(t, e)| (t.clone(), e.generation))
            .collect();
        if batch.is_empty() {
            return true;
        }
        let targets: Vec<RenewTarget> = batch.iter().map(|(t, _)| t.clone()).collect();
        let lease_ms = self.shared.lease.as_millis() as u64;
        let sent = Instant::now();
        self.stats.renew_calls.incr();
        let results = match self.backend.renew(&targets, lease_ms).await {
            Ok(results) if results.len() == targets.len() => results,
            Ok(results) => {
                tracing::warn!(
                    sent = targets.len(),
                    got = results.len(),
                    "watchdog: backend returned a renewal batch of the wrong size"
                );
                return false;
            }
            Err(e) => {
                tracing::warn!(%e, locks = targets.len(), "watchdog: renewal failed; will retry");
                return false;
            }
        };
        let mut all_ok = true;
        let mut lost = Vec::new();
        let mut renewed = 0;
        {
            let mut entries = self.shared.entries();
            for ((target, generation), result) in batch.into_iter().zip(results) {
                let Some(entry) = entries.get_mut(&target) else {
                    continue;
                };
                if entry.generation != generation {
                    continue;
                }
                match result {
                    Ok(true) => {
                        renewed += 1;
                        entry.deadline = entry.deadline.max(sent + self.shared.lease);
                    }
                    Ok(false) => {
                        tracing::warn!(lock = %target.name, "watchdog: lock is no longer held; signalling loss");
                        if let Some(entry) = entries.remove(&target) {
                            lost.push(entry.lost);
                        }
                    }
                    Err(e) => {
                        all_ok = false;
                        tracing::debug!(%e, lock = %target.name, "watchdog: renewal of one lock failed");
                    }
                }
            }
        }
        self.stats.renewed.add(renewed);
        for token in lost {
            token.cancel();
        }
        all_ok
    }

    /// Drops every entry whose lease deadline has passed and signals loss.
    fn expire_overdue(&self) {
        let now = Instant::now();
        let mut lost = Vec::new();
        self.shared.entries().retain(|target, entry| {
            if entry.deadline <= now {
                tracing::warn!(lock = %target.name, "watchdog: lease ran out without a successful renewal");
                lost.push(entry.lost.clone());
                false
            } else {
                true
            }
        });
        for token in lost {
            token.cancel();
        }
    }
}
