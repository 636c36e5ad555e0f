//! The fake kind's store: exclusive, re-entrant locks in a map, with
//! expiry on tokio's clock (so paused time drives it) and request records
//! that keep the contract of `ExclusiveKind`: a repeat of a request id
//! returns the first outcome and writes nothing; leases only grow.
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

/// One held lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    /// The holder's owner field.
    pub(crate) field: String,
    /// Its hold count.
    pub(crate) count: u64,
    /// When the lock expires.
    pub(crate) expires: Instant,
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
        let field = req.owner.field();
        let until = Instant::now() + lease(req.lease_ms);
        let outcome = match self.live(name) {
            Some(entry) if entry.field == field => {
                entry.count += 1;
                entry.expires = entry.expires.max(until);
                None
            }
            Some(entry) => Some(AcquireOutcome::Held {
                ttl: Some(entry.expires - Instant::now()),
            }),
            None => {
                self.locks.insert(
                    name.to_owned(),
                    Entry {
                        field,
                        count: 1,
                        expires: until,
                    },
                );
                None
            }
        };
        let outcome = outcome.unwrap_or_else(|| {
            let fencing_token = req.fenced.then(|| {
                let counter = self.tokens.entry(name.to_owned()).or_default();
                *counter += 1;
                *counter
            });
            AcquireOutcome::Acquired { fencing_token }
        });
        self.keep(req.request_id, Record::Acquire(outcome));
        outcome
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
