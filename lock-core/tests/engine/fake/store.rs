//! The fake kind's store: exclusive, re-entrant locks in a map, with
//! expiry on tokio's clock (so paused time drives it) and request records
//! that keep the contract of `ExclusiveKind`: a repeat of a request id
//! returns the first outcome and writes nothing; leases only grow.
//!
//! For a kind whose waiters queue ([`Store::queueing`]) each lock has a
//! FIFO of waiters (the `queue` module): a waiter asking with `queue_ms`
//! joins it (or refreshes its place), and only the head may take a free
//! lock. A release that frees the lock tells the head (on its own
//! channel); for a kind that hands over ([`Store::hands_over`]) it grants
//! the lock to the head instead (the hold is the head owner's, marked with
//! its ticket), and a later attempt of that ticket answers
//! `AcquireOutcome::Claimed`. What a release asks to publish is left in
//! [`Store::take_announcements`] for the kind to send.
//!
//! Records are kept for the whole test (they outlive every request), and
//! request deadlines (wall-clock milliseconds, which paused time does not
//! move) are not checked: no request of these tests is refused as stale.

use std::collections::HashMap;
use std::time::Duration;

use lock_core::backend::{
    AcquireOutcome, AcquireRequest, ReleaseOutcome, ReleaseRequest, RequestId,
};
use lock_core::{Holder, LockInfo, LockName, Owner};
use tokio::time::Instant;

use super::queue::{Queue, Queued};

/// One held lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    /// The holder's owner field.
    pub(crate) field: String,
    /// Its hold count.
    pub(crate) count: u64,
    /// When the lock expires.
    pub(crate) expires: Instant,
    /// The wait ticket a release granted the lock to (hand-over kinds).
    pub(crate) grant: Option<u64>,
}

/// What a store operation asks the kind to publish.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Announce {
    /// The lock is free: on the lock's shared channel (kinds that do not
    /// queue).
    Unlocked(String),
    /// The lock is free and this queue head may take it: on its channel.
    Next {
        /// The lock.
        name: String,
        /// The head's owner field.
        field: String,
    },
    /// The lock was granted to this head's ticket: on its channel.
    Granted {
        /// The lock.
        name: String,
        /// The head's owner field.
        field: String,
        /// Its wait ticket.
        ticket: u64,
    },
}

/// What a request did the first time it ran.
#[derive(Debug, Clone, Copy)]
enum Record {
    Acquire(AcquireOutcome),
    Release(ReleaseOutcome),
}

/// Every lock, record and fencing counter of one fake kind.
#[derive(Debug, Default)]
pub(crate) struct Store {
    locks: HashMap<String, Entry>,
    records: HashMap<RequestId, Record>,
    tokens: HashMap<String, u64>,
    /// How many acquisitions ran (repeats answered by a record excluded).
    pub(crate) acquires_applied: usize,
    /// How many releases ran (repeats excluded).
    pub(crate) releases_applied: usize,
    /// When set, requests are neither recorded nor answered from records:
    /// the fake then breaks the contract (a repeat applies again), for
    /// checking that a test notices.
    pub(crate) without_records: bool,
    /// Whether waiters queue (set from the kind's behaviour).
    pub(crate) queueing: bool,
    /// Whether a freeing release grants the lock to the queue head (set
    /// from the kind's behaviour).
    pub(crate) hands_over: bool,
    queues: HashMap<String, Queue>,
    announcements: Vec<Announce>,
    /// How many grants a release (or a leave) made.
    pub(crate) grants_made: usize,
    /// How many grants a leave gave back.
    pub(crate) grants_given_back: usize,
}

/// A lease in milliseconds as a duration from now.
fn lease(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

impl Store {
    fn record(&self, id: RequestId) -> Option<Record> {
        if self.without_records {
            return None;
        }
        self.records.get(&id).copied()
    }

    fn keep(&mut self, id: RequestId, record: Record) {
        if !self.without_records {
            self.records.insert(id, record);
        }
    }

    /// The live entry of `name`, dropping it first if it expired.
    fn live(&mut self, name: &str) -> Option<&mut Entry> {
        let now = Instant::now();
        if self.locks.get(name).is_some_and(|e| e.expires <= now) {
            self.locks.remove(name);
        }
        self.locks.get_mut(name)
    }

    fn ttl(&mut self, name: &str) -> Option<Duration> {
        let now = Instant::now();
        self.live(name).map(|e| e.expires - now)
    }

    /// Takes or re-enters `req.name` (see the module docs for repeats).
    pub(crate) fn acquire(&mut self, req: &AcquireRequest) -> AcquireOutcome {
        let name = req.name.as_str();
        match self.record(req.request_id) {
            Some(Record::Acquire(AcquireOutcome::Held { .. })) => {
                // A repeated "held" tells the time to live as of now.
                let ttl = self.ttl(name).or(Some(Duration::ZERO));
                return AcquireOutcome::Held { ttl };
            }
            Some(Record::Acquire(first)) => return first,
            Some(Record::Release(_)) | None => {}
        }
        self.acquires_applied += 1;
        let outcome = self.take(req);
        self.keep(req.request_id, Record::Acquire(outcome));
        outcome
    }

    /// What a first attempt does: claims a grant to its ticket, re-enters,
    /// takes a free lock (the queue head only, when waiters queue), or
    /// finds it held (joining the queue when asked to).
    fn take(&mut self, req: &AcquireRequest) -> AcquireOutcome {
        let name = req.name.as_str();
        let field = req.owner.field();
        let now = Instant::now();
        let until = now + lease(req.lease_ms);
        let hands_over = self.hands_over;
        match self.live(name) {
            Some(entry)
                if hands_over
                    && entry.field == field
                    && entry.grant.is_some()
                    && entry.grant == req.wait_ticket =>
            {
                return AcquireOutcome::Claimed;
            }
            Some(entry) if entry.field == field => {
                entry.count += 1;
                entry.expires = entry.expires.max(until);
                return self.acquired(req);
            }
            Some(entry) => {
                let ttl = Some(entry.expires - now);
                self.join_queue(req);
                return AcquireOutcome::Held { ttl };
            }
            None => {}
        }
        if self.queueing {
            let queue = self.queues.entry(name.to_owned()).or_default();
            queue.prune();
            if queue.head().is_some_and(|h| h.field != field) {
                let ttl = queue.head_expires_in();
                self.join_queue(req);
                return AcquireOutcome::Held { ttl };
            }
            queue.remove(&field);
        }
        self.locks.insert(
            name.to_owned(),
            Entry {
                field,
                count: 1,
                expires: until,
                grant: None,
            },
        );
        self.acquired(req)
    }

    /// "Acquired", with a fencing token when asked for.
    fn acquired(&mut self, req: &AcquireRequest) -> AcquireOutcome {
        let fencing_token = req.fenced.then(|| {
            let counter = self.tokens.entry(req.name.as_str().to_owned()).or_default();
            *counter += 1;
            *counter
        });
        AcquireOutcome::Acquired { fencing_token }
    }

    /// Joins (or refreshes) `req`'s place, when its kind queues and it asks.
    fn join_queue(&mut self, req: &AcquireRequest) {
        let (true, Some(queue_ms)) = (self.queueing, req.queue_ms) else {
            return;
        };
        let queue = self.queues.entry(req.name.as_str().to_owned()).or_default();
        queue.prune();
        queue.join(Queued {
            field: req.owner.field(),
            ticket: req.wait_ticket,
            lease_ms: req.lease_ms,
            deadline: Instant::now() + lease(queue_ms),
        });
    }

    /// `name` was freed: tell whoever is next (grant it to the queue head
    /// of a hand-over kind).
    fn freed(&mut self, name: &str) {
        if !self.queueing {
            self.announcements.push(Announce::Unlocked(name.to_owned()));
            return;
        }
        let Some(queue) = self.queues.get_mut(name) else {
            return;
        };
        queue.prune();
        let Some(head) = queue.head().cloned() else {
            return;
        };
        match head.ticket.filter(|_| self.hands_over) {
            Some(ticket) => {
                queue.pop();
                self.locks.insert(
                    name.to_owned(),
                    Entry {
                        field: head.field.clone(),
                        count: 1,
                        expires: Instant::now() + lease(head.lease_ms),
                        grant: Some(ticket),
                    },
                );
                self.grants_made += 1;
                self.announcements.push(Announce::Granted {
                    name: name.to_owned(),
                    field: head.field,
                    ticket,
                });
            }
            None => self.announcements.push(Announce::Next {
                name: name.to_owned(),
                field: head.field,
            }),
        }
    }

    /// Removes `owner` from the queue of `name`; gives back (one hold) a
    /// lock granted to `ticket` and hands it on; tells the next waiter if
    /// the lock is free.
    pub(crate) fn leave_queue(&mut self, name: &LockName, owner: &Owner, ticket: Option<u64>) {
        let name = name.as_str();
        let field = owner.field();
        if let Some(queue) = self.queues.get_mut(name) {
            queue.remove(&field);
        }
        let hands_over = self.hands_over;
        match self.live(name) {
            Some(entry)
                if hands_over
                    && ticket.is_some()
                    && entry.field == field
                    && entry.grant == ticket =>
            {
                entry.count -= 1;
                let freed = entry.count == 0;
                self.grants_given_back += 1;
                if freed {
                    self.locks.remove(name);
                    self.freed(name);
                }
            }
            Some(_) => {}
            None => self.freed(name),
        }
    }

    /// What to publish since the last call, oldest first.
    pub(crate) fn take_announcements(&mut self) -> Vec<Announce> {
        std::mem::take(&mut self.announcements)
    }

    /// The owner fields queued for `name`, oldest first (expired places
    /// dropped).
    pub(crate) fn queue(&mut self, name: &str) -> Vec<String> {
        let Some(queue) = self.queues.get_mut(name) else {
            return Vec::new();
        };
        queue.prune();
        queue.fields()
    }

    /// Releases one hold of `req.owner`.
    pub(crate) fn release(&mut self, req: &ReleaseRequest) -> ReleaseOutcome {
        if let Some(Record::Release(first)) = self.record(req.request_id) {
            return first;
        }
        self.releases_applied += 1;
        let name = req.name.as_str();
        let field = req.owner.field();
        let until = Instant::now() + lease(req.lease_ms);
        let outcome = match self.live(name) {
            Some(entry) if entry.field == field && entry.count > 1 => {
                entry.count -= 1;
                entry.expires = entry.expires.max(until);
                ReleaseOutcome::StillHeld
            }
            Some(entry) if entry.field == field => {
                self.locks.remove(name);
                self.freed(name);
                ReleaseOutcome::Released
            }
            Some(_) | None => ReleaseOutcome::NotHeld,
        };
        self.keep(req.request_id, Record::Release(outcome));
        outcome
    }

    /// Extends `owner`'s lease of `name` to at least `lease_ms` from now;
    /// whether `owner` holds it.
    pub(crate) fn renew(&mut self, name: &LockName, owner: &Owner, lease_ms: u64) -> bool {
        let field = owner.field();
        let until = Instant::now() + lease(lease_ms);
        match self.live(name.as_str()) {
            Some(entry) if entry.field == field => {
                entry.expires = entry.expires.max(until);
                true
            }
            _ => false,
        }
    }

    /// Deletes `name` whoever holds it; whether it was held.
    pub(crate) fn force_unlock(&mut self, name: &LockName) -> bool {
        let held = self.live(name.as_str()).is_some();
        self.locks.remove(name.as_str());
        if held {
            self.freed(name.as_str());
        }
        held
    }

    /// A snapshot of `name`.
    pub(crate) fn inspect(&mut self, name: &LockName) -> LockInfo {
        let ttl = self.ttl(name.as_str());
        let holders = self
            .live(name.as_str())
            .map(|e| vec![Holder::new(e.field.clone(), e.count)])
            .unwrap_or_default();
        LockInfo::new(holders, ttl)
    }

    /// The last fencing token handed out for `name`.
    pub(crate) fn last_token(&self, name: &LockName) -> Option<u64> {
        self.tokens.get(name.as_str()).copied()
    }

    /// The live entry of `name`, for tests.
    pub(crate) fn entry(&mut self, name: &str) -> Option<Entry> {
        self.live(name).cloned()
    }

    /// Whether no lock is held (expired ones count as free).
    pub(crate) fn is_empty(&mut self) -> bool {
        let now = Instant::now();
        self.locks.retain(|_, e| e.expires > now);
        self.locks.is_empty()
    }
}
