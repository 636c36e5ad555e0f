//! The client's estimate of the store's clock, which dates every request's
//! deadline.
//!
//! # Why requests carry a deadline
//! A request that changes something (an acquisition, a release, a count
//! change) may run late: held on a connection, queued in a frozen server,
//! delayed in a partition, after the engine has retried it on another
//! connection and moved on. The store keeps each request's first outcome
//! under its request id, so a repeat is answered and applies nothing; but
//! a record cannot live forever, and a request that could still arrive
//! after its record expired would apply twice (two holders of a lock, a
//! permit given back twice).
//!
//! So every request carries a deadline on the store's clock: the store runs
//! it only before that deadline, and keeps the record of a run until
//! [`RECORD_GRACE_MS`] past it. A request therefore applies at most once,
//! however late it arrives, and "refused as stale"
//! ([`crate::LockError::StaleRequest`]) within that grace proves it never
//! ran and never will. Later, its record may be gone: stale then only
//! proves it will never run ([`outcome_forgotten`]). Both halves are
//! judged by the store alone, against its own clock, so the promise does
//! not depend on this estimate being right: a wrong estimate only makes
//! records live longer (the client runs ahead) or gets a request refused
//! (the client runs behind).
//!
//! # Following the store both ways
//! A refusal carries the store's time, so a client running behind learns
//! it from its first refused request. A client running ahead is never
//! refused: its requests' deadlines, and so their records, lie that much
//! further out (an hour ahead, records would live an hour). So the
//! estimate also follows readings of the store's clock that a store hands
//! the engine ([`crate::backend::Engine::observe_store_time`]; on Redis,
//! every write of the client's own record, when the client starts and
//! every third of the watchdog timeout). A reading was taken somewhere in
//! its round trip; the estimate moves to the middle of that window when it
//! lies outside it by more than [`FOLLOW_TOLERANCE_MS`], in either
//! direction. A record then lives at most its request's window, plus the
//! grace, plus that tolerance and half a round trip.
//!
//! The estimate runs on the monotonic clock between readings, so the
//! client's wall clock stepping (NTP, a suspended laptop) does not move it;
//! only its reading at start does, and the first reading corrects that.
//!
//! The estimate follows `tokio::time`, so tests in paused time see the
//! in-memory store's clock and this one advance together.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::time::Instant;

/// How long past its request's deadline a record lives: the scripts'
/// `RECORD_GRACE_MS` (common.lua in lock-script, which checks the two
/// agree).
pub const RECORD_GRACE_MS: u64 = 1_000;

/// Whether `error`, the store's answer to a request with deadline
/// `deadline_ms`, is a stale refusal that no longer proves the request
/// never ran: the store answered it so long past the deadline that the
/// record of a first run may have expired. The store reads its record
/// before its clock, and the record's expiry (Redis freezes time for keys
/// while a script runs) may lag that clock by a little, so this counts
/// any refusal later than half the grace past the deadline.
pub fn outcome_forgotten(error: &crate::LockError, deadline_ms: u64) -> bool {
    matches!(
        error,
        crate::LockError::StaleRequest { store_time_ms }
            if *store_time_ms >= deadline_ms.saturating_add(RECORD_GRACE_MS / 2)
    )
}

/// How far outside a reading's window the estimate may lie before it
/// follows the reading. Above the jitter of a healthy round trip's halves,
/// so a steady clock is not moved (and logged) at every reading; far below
/// the grace a record gets past its deadline.
pub const FOLLOW_TOLERANCE_MS: u64 = 25;

/// The store's time, in milliseconds since the Unix epoch, as this client
/// estimates it: its own wall clock when it was made, moved to the store's
/// whenever the store reports its time.
#[derive(Debug)]
pub(crate) struct StoreClock {
    anchor: Instant,
    /// The store's estimated time at `anchor`, in ms since the epoch.
    anchor_ms: AtomicU64,
}

impl StoreClock {
    pub(crate) fn new() -> Self {
        let wall = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or(Duration::ZERO);
        Self {
            anchor: Instant::now(),
            anchor_ms: AtomicU64::new(u64::try_from(wall.as_millis()).unwrap_or(u64::MAX)),
        }
    }

    /// The store's time now, as estimated.
    pub(crate) fn now_ms(&self) -> u64 {
        let elapsed = u64::try_from(self.anchor.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.anchor_ms
            .load(Ordering::Relaxed)
            .saturating_add(elapsed)
    }

    /// The deadline of a request made now that may run for `window`.
    pub(crate) fn deadline_in(&self, window: Duration) -> u64 {
        self.now_ms()
            .saturating_add(u64::try_from(window.as_millis()).unwrap_or(u64::MAX))
    }

    /// The store read its clock as `store_ms` during a round trip that
    /// took `round_trip` and just ended: the store's time now lies between
    /// `store_ms` and `store_ms + round_trip`. Moves the estimate to the
    /// middle of that window when it lies outside it by more than
    /// [`FOLLOW_TOLERANCE_MS`] (ahead or behind); `true` when it moved.
    pub(crate) fn observe(&self, store_ms: u64, round_trip: Duration) -> bool {
        let window = u64::try_from(round_trip.as_millis()).unwrap_or(u64::MAX);
        let earliest = store_ms.saturating_sub(FOLLOW_TOLERANCE_MS);
        let latest = store_ms
            .saturating_add(window)
            .saturating_add(FOLLOW_TOLERANCE_MS);
        let estimate = self.now_ms();
        if (earliest..=latest).contains(&estimate) {
            return false;
        }
        self.resync(store_ms.saturating_add(window / 2));
        true
    }

    /// The store reported `store_ms` as its time: estimate from it on.
    pub(crate) fn resync(&self, store_ms: u64) {
        let elapsed = u64::try_from(self.anchor.elapsed().as_millis()).unwrap_or(u64::MAX);
        let before = self.now_ms();
        self.anchor_ms
            .store(store_ms.saturating_sub(elapsed), Ordering::Relaxed);
        tracing::warn!(
            store_ms,
            estimated_ms = before,
            "the store's clock differs from this client's estimate; requests are now dated by the store's"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn follows_tokio_time_and_resyncs() {
        let clock = StoreClock::new();
        let start = clock.now_ms();
        tokio::time::advance(Duration::from_secs(60)).await;
        assert_eq!(clock.now_ms(), start + 60_000);
        assert_eq!(clock.deadline_in(Duration::from_secs(30)), start + 90_000);
        clock.resync(start + 3_600_000);
        assert_eq!(clock.now_ms(), start + 3_600_000);
    }

    #[tokio::test(start_paused = true)]
    async fn follows_readings_ahead_and_behind_beyond_the_tolerance() {
        let clock = StoreClock::new();
        let start = clock.now_ms();
        let rtt = Duration::from_millis(10);
        // Within the reading's window (and the tolerance): left alone.
        assert!(!clock.observe(start - 5, rtt));
        assert!(!clock.observe(start - 10 - FOLLOW_TOLERANCE_MS, rtt));
        assert!(!clock.observe(start + FOLLOW_TOLERANCE_MS, rtt));
        assert_eq!(clock.now_ms(), start);
        // The store an hour behind (this client's clock ahead): followed
        // back, to the middle of the reading's window.
        assert!(clock.observe(start - 3_600_000, rtt));
        assert_eq!(clock.now_ms(), start - 3_600_000 + 5);
        // And ahead again.
        assert!(clock.observe(start + 60_000, rtt));
        assert_eq!(clock.now_ms(), start + 60_005);
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(clock.now_ms(), start + 61_005);
    }

    #[test]
    fn a_stale_refusal_past_half_the_grace_forgets_the_outcome() {
        let stale = |at| crate::LockError::StaleRequest { store_time_ms: at };
        assert!(!outcome_forgotten(&stale(10_000), 10_000));
        assert!(!outcome_forgotten(&stale(10_499), 10_000));
        assert!(outcome_forgotten(&stale(10_500), 10_000));
        assert!(outcome_forgotten(&stale(90_000), 10_000));
        assert!(!outcome_forgotten(&crate::LockError::Closed, 10_000));
    }
}
