//! The fake store's queues of waiters, for kinds whose waiters queue
//! (`KindBehaviour::queues_waiters`): one FIFO per lock name, each waiter
//! by owner field and wait ticket, with a deadline (from the request's
//! `queue_ms`, on tokio time) after which its place is gone, as the fair
//! lock's is.

use std::collections::VecDeque;
use std::time::Duration;

use tokio::time::Instant;

/// One queued waiter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Queued {
    /// Its owner field.
    pub(crate) field: String,
    /// Its wait ticket (hand-over kinds; `None` for a fenced wait).
    pub(crate) ticket: Option<u64>,
    /// The lease it asked for: a lock granted to it gets this one.
    pub(crate) lease_ms: u64,
    /// When its place expires unless it looks again.
    pub(crate) deadline: Instant,
}

/// The waiters of one lock, oldest first.
#[derive(Debug, Default)]
pub(crate) struct Queue {
    waiters: VecDeque<Queued>,
}

impl Queue {
    /// Drops the waiters whose place expired.
    pub(crate) fn prune(&mut self) {
        let now = Instant::now();
        self.waiters.retain(|w| w.deadline > now);
    }

    /// Joins `field` at the tail, or refreshes its place (same position).
    pub(crate) fn join(&mut self, waiter: Queued) {
        match self.waiters.iter_mut().find(|w| w.field == waiter.field) {
            Some(place) => place.deadline = waiter.deadline,
            None => self.waiters.push_back(waiter),
        }
    }

    /// Removes `field`; whether it was queued.
    pub(crate) fn remove(&mut self, field: &str) -> bool {
        let before = self.waiters.len();
        self.waiters.retain(|w| w.field != field);
        self.waiters.len() != before
    }

    /// The head, if any.
    pub(crate) fn head(&self) -> Option<&Queued> {
        self.waiters.front()
    }

    /// Takes the head.
    pub(crate) fn pop(&mut self) -> Option<Queued> {
        self.waiters.pop_front()
    }

    /// How long until the head's place expires (what a waiter behind a
    /// free lock waits before looking again).
    pub(crate) fn head_expires_in(&self) -> Option<Duration> {
        self.head().map(|h| h.deadline - Instant::now())
    }

    /// The queued owner fields, oldest first.
    pub(crate) fn fields(&self) -> Vec<String> {
        self.waiters.iter().map(|w| w.field.clone()).collect()
    }
}
