//! What the engine reports through the [`metrics`] facade, and the names
//! it reports under.
//!
//! Every figure goes through the `metrics` crate's macros: with no
//! recorder installed each call is a check of one atomic and nothing else,
//! so an application that does not collect metrics pays nothing. Install
//! any recorder (Prometheus exporter, StatsD, …) to collect them. Labels
//! have few values — the kind (`reentrant`, `fair`, …), an outcome, a
//! reason — never a lock name, so a recorder's series stay few. Every
//! name starts with `lock_`: one prefix for every kind (a RedLock is kind
//! `redlock`, a fenced lock `fenced`, a semaphore `semaphore`, …).
//!
//! [`crate::ClientStats`] stays: per client, always on, for tests and
//! benchmarks.

use std::time::Duration;

use tokio::time::Instant;

/// Histogram, seconds: how long an acquisition took, first attempt to
/// outcome. Labels `kind`, `outcome` (`acquired`, `timed_out`, `error`,
/// `cancelled`). One sample per acquisition of every kind: a multi-lock's
/// or RedLock's (kinds `multi`, `redlock`) is one, its members' are not
/// recorded; a semaphore's permits and a latch's wait (`acquired`: it
/// opened) are acquisitions too.
pub const ACQUIRE_SECONDS: &str = "lock_acquire_seconds";
/// Histogram, seconds: how long an acquisition waited after its first
/// attempt found the lock held (only acquisitions that waited). Labels
/// `kind`, `outcome`.
pub const WAIT_SECONDS: &str = "lock_wait_seconds";
/// Gauge: guards alive in this process (a re-entry counts again). Label
/// `kind`.
pub const HOLDS: &str = "lock_holds";
/// Gauge: acquisitions waiting for a lock right now. Label `kind`.
pub const WAITERS: &str = "lock_waiters";
/// Counter: the watchdog's lease renewals, one per lock. Labels `kind`,
/// `outcome` (`renewed`, `not_held`, `failed`).
pub const RENEWALS: &str = "lock_renewals_total";
/// Counter: holds (and leased permits, kind `permit_semaphore`) reported
/// lost to their guards. Labels `kind`, `reason` (`not_held`: a renewal
/// found the lock or permit gone; `expired`: its lease, less the safety
/// margin, ran out unrenewed; `released`: a release of the same owner ended
/// it under other guards, or this client released a guarded permit by id;
/// `closed`: the client closed while the watchdog kept it).
pub const LOST: &str = "lock_lost_total";
/// Counter: retries of store operations after a transient failure.
/// Labels `kind`, `op` (`acquire`, `release`, `leave_queue`).
pub const RETRIES: &str = "lock_retries_total";

/// Reports one timed phase (an acquisition, or its wait) when dropped:
/// its duration under the outcome set last, `cancelled` if none was (its
/// future was dropped), on its span and in its histogram. A wait also
/// counts in [`WAITERS`] while it lasts.
pub(crate) struct Timed {
    histogram: &'static str,
    waiters: bool,
    kind: &'static str,
    started: Instant,
    outcome: &'static str,
    span: tracing::Span,
}

impl Timed {
    /// An acquisition of `kind`, reported on `span`.
    pub(crate) fn acquire(kind: &'static str, span: tracing::Span) -> Self {
        Self::start(ACQUIRE_SECONDS, false, kind, span)
    }

    /// A wait of `kind`, reported on `span`; a waiter until dropped.
    pub(crate) fn wait(kind: &'static str, span: tracing::Span) -> Self {
        metrics::gauge!(WAITERS, "kind" => kind).increment(1.0);
        Self::start(WAIT_SECONDS, true, kind, span)
    }

    fn start(
        histogram: &'static str,
        waiters: bool,
        kind: &'static str,
        span: tracing::Span,
    ) -> Self {
        Self {
            histogram,
            waiters,
            kind,
            started: Instant::now(),
            outcome: "cancelled",
            span,
        }
    }

    /// Sets the outcome from an acquisition's result.
    pub(crate) fn finish<T, E>(&mut self, result: &Result<Option<T>, E>) {
        self.outcome = match result {
            Ok(Some(_)) => "acquired",
            Ok(None) => "timed_out",
            Err(_) => "error",
        };
    }

    fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }
}

impl Drop for Timed {
    fn drop(&mut self) {
        self.span.record("outcome", self.outcome);
        metrics::histogram!(self.histogram, "kind" => self.kind, "outcome" => self.outcome)
            .record(self.elapsed());
        if self.waiters {
            metrics::gauge!(WAITERS, "kind" => self.kind).decrement(1.0);
        }
    }
}

/// One more (or one fewer) guard of `kind` alive: the `lock_holds` gauge.
pub fn guard_held(kind: &'static str, held: bool) {
    let gauge = metrics::gauge!(HOLDS, "kind" => kind);
    if held {
        gauge.increment(1.0);
    } else {
        gauge.decrement(1.0);
    }
}

/// The `kind` label of a hold of `kind_name`: `fenced` for a fenced
/// acquisition of the reentrant lock (a [`crate::FencedLock`]'s), else the
/// kind's own name.
pub(crate) fn kind_label(kind_name: &'static str, fenced: bool) -> &'static str {
    if fenced && kind_name == "reentrant" {
        "fenced"
    } else {
        kind_name
    }
}

/// Runs `acquisition` of `kind` traced as span `lock.acquire` (INFO;
/// fields `lock`, `kind`, `outcome`) and timed in [`ACQUIRE_SECONDS`].
///
/// Not an `async fn`: one would keep `acquisition` twice in its state (the
/// argument, and the instrumented future made of it), and an acquisition's
/// future is most of what its caller's future is.
pub(crate) fn acquisition<T, E>(
    kind: &'static str,
    lock: &crate::name::LockName,
    acquisition: impl std::future::Future<Output = Result<Option<T>, E>>,
) -> impl std::future::Future<Output = Result<Option<T>, E>> {
    use futures::FutureExt;
    use tracing::Instrument;
    let span = tracing::info_span!(
        "lock.acquire",
        lock = %lock,
        kind,
        outcome = tracing::field::Empty,
    );
    // Dropped unfinished with the future, it reports `cancelled`.
    let mut timed = Timed::acquire(kind, span.clone());
    acquisition.instrument(span).map(move |result| {
        timed.finish(&result);
        result
    })
}

/// A hold of `kind` was reported lost for `reason`.
pub(crate) fn lost(kind: &'static str, reason: &'static str) {
    metrics::counter!(LOST, "kind" => kind, "reason" => reason).increment(1);
}

/// `n` renewals of `kind` ended with `outcome`.
pub(crate) fn renewals(kind: &'static str, outcome: &'static str, n: u64) {
    if n > 0 {
        metrics::counter!(RENEWALS, "kind" => kind, "outcome" => outcome).increment(n);
    }
}

/// A store operation `op` of `kind` is retried.
pub(crate) fn retry(kind: &'static str, op: &'static str) {
    metrics::counter!(RETRIES, "kind" => kind, "op" => op).increment(1);
}
