//! Counters a client keeps about its own work, for tests and benchmarks.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::Notify;

/// A monotonically increasing counter.
#[derive(Debug, Default)]
pub(crate) struct Counter(AtomicU64);

impl Counter {
    pub(crate) fn incr(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }

    fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

#[derive(Debug, Default)]
pub(crate) struct Stats {
    pub(crate) tries: Counter,
    pub(crate) wakeups: Counter,
    pub(crate) grants: Counter,
    pub(crate) notices: Counter,
    pub(crate) subscriptions: Counter,
    pub(crate) renew_calls: Counter,
    pub(crate) renewed: Counter,
    pub(crate) watchdog_wakes: Counter,
    in_flight: AtomicUsize,
    idle: Notify,
    waiting: AtomicUsize,
}

/// Counts one waiter as parked (waiting for a notice or a timeout) until
/// dropped.
pub(crate) struct Parked(Arc<Stats>);

impl Parked {
    pub(crate) fn start(stats: &Arc<Stats>) -> Self {
        stats.waiting.fetch_add(1, Ordering::AcqRel);
        Self(Arc::clone(stats))
    }
}

impl Drop for Parked {
    fn drop(&mut self) {
        self.0.waiting.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Counts one backend operation as in flight until dropped
/// ([`crate::backend::Taken`]).
#[derive(Debug)]
pub(crate) struct InFlight(Arc<Stats>);

impl InFlight {
    pub(crate) fn start(stats: &Arc<Stats>) -> Self {
        stats.in_flight.fetch_add(1, Ordering::AcqRel);
        Self(Arc::clone(stats))
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if self.0.in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

/// A snapshot of a client's counters since it was created.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClientStats {
    /// Acquisition attempts sent to the backend (retries of one attempt
    /// count once).
    pub tries: u64,
    /// Waiters woken by an unlock notice (not by a time-to-live timeout).
    pub wakeups: u64,
    /// Locks a release handed straight to a waiter of this client, taken
    /// without asking again (`client.handoff_lock(name)`). A grant
    /// the waiter took at its next look instead (its periodic look ran
    /// before the notice was read, as a loaded machine may have it) is
    /// held just the same but not counted here: this counts a path, not
    /// how many waits got the lock.
    pub grants: u64,
    /// Notices received from the backend.
    pub notices: u64,
    /// Subscriptions opened (one per lock name while anyone waits on it).
    pub subscriptions_opened: u64,
    /// Subscriptions open right now.
    pub subscriptions_active: u64,
    /// Watchdog renewal calls made to the backend (one per tick with work).
    pub renew_calls: u64,
    /// Lease renewals that succeeded.
    pub renewed: u64,
    /// Times a new watched hold woke the watchdog from rest (it rests once
    /// a renewal interval passes with nothing to renew). A client taking
    /// and releasing locks in quick succession wakes it at most once per
    /// interval, not once per lock.
    pub watchdog_wakes: u64,
    /// Locks and leased permits the watchdog is keeping alive right now.
    pub watched: u64,
    /// Waiters parked right now, between attempts, until an unlock notice or
    /// a timeout.
    pub waiting: u64,
    /// Acquire and release requests running right now, including the
    /// background releases of dropped guards and abandoned acquisitions.
    pub in_flight: u64,
}

impl Stats {
    /// Resolves once no operation is in flight.
    pub(crate) async fn idle(&self) {
        loop {
            let idle = self.idle.notified();
            tokio::pin!(idle);
            idle.as_mut().enable();
            if self.in_flight.load(Ordering::Acquire) == 0 {
                return;
            }
            idle.await;
        }
    }

    pub(crate) fn snapshot(&self, subscriptions_active: usize, watched: usize) -> ClientStats {
        ClientStats {
            tries: self.tries.get(),
            wakeups: self.wakeups.get(),
            grants: self.grants.get(),
            notices: self.notices.get(),
            subscriptions_opened: self.subscriptions.get(),
            subscriptions_active: subscriptions_active as u64,
            renew_calls: self.renew_calls.get(),
            renewed: self.renewed.get(),
            watchdog_wakes: self.watchdog_wakes.get(),
            watched: watched as u64,
            in_flight: self.in_flight.load(Ordering::Acquire) as u64,
            waiting: self.waiting.load(Ordering::Acquire) as u64,
        }
    }
}
