//! Counters a client keeps about its own work, for tests and benchmarks.

use std::sync::atomic::{AtomicU64, Ordering};

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
    pub(crate) notices: Counter,
    pub(crate) subscriptions: Counter,
    pub(crate) renew_calls: Counter,
    pub(crate) renewed: Counter,
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
    /// Locks the watchdog is keeping alive right now.
    pub watched: u64,
}

impl Stats {
    pub(crate) fn snapshot(&self, subscriptions_active: usize, watched: usize) -> ClientStats {
        ClientStats {
            tries: self.tries.get(),
            wakeups: self.wakeups.get(),
            notices: self.notices.get(),
            subscriptions_opened: self.subscriptions.get(),
            subscriptions_active: subscriptions_active as u64,
            renew_calls: self.renew_calls.get(),
            renewed: self.renewed.get(),
            watched: watched as u64,
        }
    }
}
