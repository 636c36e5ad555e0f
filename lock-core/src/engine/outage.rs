//! Riding out store outages while waiting for a lock.
//!
//! Each attempt of a wait is retried by `engine/calls`' retry policy
//! (about 0.4 s by default), which suits calls that must answer soon: a
//! try, a release. A waiter has agreed to wait, though, and a store that
//! restarts or fails over for a few seconds should cost it those seconds,
//! not its place: so when an attempt fails with a retryable error, the wait
//! loop asks [`Outage::ride`] whether to try again. It says yes, after a
//! backoff, while the caller's deadline allows (forever for a wait without
//! one), and no for a call that does not wait at all.
//!
//! The backoff is the retry policy's, growing with each failed attempt of
//! the outage up to its [`max_backoff`](crate::RetryPolicy::max_backoff).
//! A client logs an outage once at `warn`, when the first of its waiters
//! meets it, and once at `info`, when the first of them gets an answer
//! again; the other waiters and every retry log at `debug`. So a long
//! outage is two lines in the log, not one per retry or per waiter.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use tokio::time::Instant;

use crate::config::RetryPolicy;
use crate::error::LockError;
use crate::name::LockName;

/// The outage one client's waiters are in, if any: the log says when the
/// first meets it and when the store answers again. (Only the log depends
/// on it, so races between waiters cost a line too many or too few.)
#[derive(Debug, Default)]
pub(crate) struct Outages {
    /// Waiters whose last attempt failed.
    waiters: AtomicUsize,
    /// Whether the outage was logged and its end was not yet.
    announced: AtomicBool,
}

impl Outages {
    /// A waiter met an outage; `true` when the client should say so.
    fn enter(&self) -> bool {
        self.waiters.fetch_add(1, Ordering::AcqRel);
        !self.announced.swap(true, Ordering::AcqRel)
    }

    /// A waiter got an answer; `true` when the client should say the
    /// outage is over.
    fn answered(&self) -> bool {
        self.waiters.fetch_sub(1, Ordering::AcqRel);
        self.announced.swap(false, Ordering::AcqRel)
    }

    /// A waiter gave up without an answer; the last to leave ends the
    /// outage silently, so the next one is announced again.
    fn gone(&self) {
        if self.waiters.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.announced.store(false, Ordering::Release);
        }
    }
}

/// The outage (if any) one waiter is in.
pub(crate) struct Outage<'a> {
    policy: &'a RetryPolicy,
    shared: &'a Outages,
    name: &'a LockName,
    deadline: Option<Instant>,
    /// When the first failed attempt of the current outage ended, and how
    /// many attempts have failed since.
    current: Option<(Instant, u32)>,
}

impl<'a> Outage<'a> {
    /// A waiter on `name` until `deadline` (`None`: forever), one of the
    /// client's `shared`.
    pub(crate) fn new(
        policy: &'a RetryPolicy,
        shared: &'a Outages,
        name: &'a LockName,
        deadline: Option<Instant>,
    ) -> Self {
        Self {
            policy,
            shared,
            name,
            deadline,
            current: None,
        }
    }

    /// After an attempt failed with `error`: `true`, once the backoff has
    /// passed, when the waiter should try again; `false` when `error` is
    /// not a store outage or the deadline has passed (the caller then
    /// returns `error`).
    ///
    /// Cancel-safe: only sleeps.
    pub(crate) async fn ride(&mut self, error: &LockError) -> bool {
        let now = Instant::now();
        if !error.is_retryable() || self.deadline.is_some_and(|d| now >= d) {
            return false;
        }
        let failed = match &mut self.current {
            Some((_, failed)) => {
                *failed = failed.saturating_add(1);
                tracing::debug!(%error, lock = %self.name, attempts = *failed, "lock store still unavailable; waiting on");
                *failed
            }
            None => {
                if self.shared.enter() {
                    tracing::warn!(
                        %error,
                        lock = %self.name,
                        "lock store unavailable while waiting for a lock; waiters try again with backoff until it answers or their wait runs out"
                    );
                } else {
                    tracing::debug!(%error, lock = %self.name, "lock store unavailable; waiting on");
                }
                self.current = Some((now, 1));
                1
            }
        };
        let mut until = now + self.policy.backoff(failed);
        if let Some(d) = self.deadline {
            // One last attempt at the deadline itself.
            until = until.min(d);
        }
        tokio::time::sleep_until(until).await;
        true
    }

    /// An attempt got an answer: any outage is over.
    pub(crate) fn over(&mut self) {
        if let Some((since, failed)) = self.current.take() {
            let outage = since.elapsed();
            if self.shared.answered() {
                tracing::info!(lock = %self.name, ?outage, attempts = failed, "lock store answers again");
            } else {
                tracing::debug!(lock = %self.name, ?outage, attempts = failed, "lock store answers again");
            }
        }
    }
}

impl Drop for Outage<'_> {
    /// A waiter that gives up (deadline, cancelled) is out of the outage
    /// too, without saying it is over.
    fn drop(&mut self) {
        if self.current.take().is_some() {
            self.shared.gone();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    use tracing::span::{Attributes, Id, Record};
    use tracing::{Event, Level, Metadata, Subscriber};

    use super::*;

    /// Counts `warn` events.
    struct Warnings(Arc<AtomicUsize>);

    impl Subscriber for Warnings {
        fn enabled(&self, _: &Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, _: &Attributes<'_>) -> Id {
            Id::from_u64(1)
        }
        fn record(&self, _: &Id, _: &Record<'_>) {}
        fn record_follows_from(&self, _: &Id, _: &Id) {}
        fn event(&self, event: &Event<'_>) {
            if *event.metadata().level() == Level::WARN {
                self.0.fetch_add(1, Ordering::Relaxed);
            }
        }
        fn enter(&self, _: &Id) {}
        fn exit(&self, _: &Id) {}
    }

    /// One warning per outage, however many attempts and waiters it takes.
    #[tokio::test(start_paused = true)]
    async fn warns_once_per_outage() {
        let warnings = Arc::new(AtomicUsize::new(0));
        let _log = tracing::subscriber::set_default(Warnings(Arc::clone(&warnings)));
        let policy = RetryPolicy::default();
        let shared = Outages::default();
        let name = name();
        let mut first = Outage::new(&policy, &shared, &name, None);
        let mut second = Outage::new(&policy, &shared, &name, None);
        let down = LockError::unavailable("down", None);
        for _ in 0..10 {
            first.ride(&down).await;
            second.ride(&down).await;
        }
        assert_eq!(warnings.load(Ordering::Relaxed), 1);
        first.over();
        first.over();
        second.over();
        assert_eq!(warnings.load(Ordering::Relaxed), 1);
        first.ride(&down).await;
        assert_eq!(warnings.load(Ordering::Relaxed), 2, "a new outage");
        // A waiter that gives up is out of it as well: the next outage is
        // announced.
        drop(first);
        let mut third = Outage::new(&policy, &shared, &name, None);
        third.ride(&down).await;
        assert_eq!(warnings.load(Ordering::Relaxed), 3);
    }

    fn name() -> LockName {
        LockName::new("outage").unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn rides_retryable_errors_with_capped_backoff() {
        let policy = RetryPolicy::default();
        let shared = Outages::default();
        let name = name();
        let mut outage = Outage::new(&policy, &shared, &name, None);
        let down = LockError::unavailable("down", None);
        let mut last = Duration::ZERO;
        for _ in 0..20 {
            let started = Instant::now();
            assert!(outage.ride(&down).await);
            last = started.elapsed();
            assert!(last <= policy.max_backoff, "{last:?}");
        }
        assert!(last >= policy.max_backoff / 2, "backoff grew: {last:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn other_errors_and_passed_deadlines_end_the_wait() {
        let policy = RetryPolicy::default();
        let shared = Outages::default();
        let name = name();
        let mut outage = Outage::new(&policy, &shared, &name, None);
        assert!(!outage.ride(&LockError::invalid("bad")).await);
        assert!(!outage.ride(&LockError::Closed).await);

        let deadline = Instant::now() + Duration::from_millis(70);
        let mut outage = Outage::new(&policy, &shared, &name, Some(deadline));
        let down = LockError::unavailable("down", None);
        while outage.ride(&down).await {}
        assert_eq!(
            Instant::now(),
            deadline,
            "the last attempt is at the deadline"
        );

        let mut no_wait = Outage::new(&policy, &shared, &name, Some(Instant::now()));
        assert!(!no_wait.ride(&down).await);
    }

    #[tokio::test(start_paused = true)]
    async fn a_new_outage_starts_with_a_short_backoff() {
        let policy = RetryPolicy::default();
        let shared = Outages::default();
        let name = name();
        let mut outage = Outage::new(&policy, &shared, &name, None);
        let down = LockError::unavailable("down", None);
        for _ in 0..10 {
            outage.ride(&down).await;
        }
        outage.over();
        let started = Instant::now();
        outage.ride(&down).await;
        assert!(started.elapsed() <= policy.base_backoff);
    }
}
