//! The client's table of leased permits: one entry per permit its
//! permit guards hold, what the watchdog renews besides locks.
//!
//! # What an entry knows
//! Until when the store keeps the permit at least — its [`Deadline`]: the
//! send time of the acquisition (or of the last successful renewal) plus
//! the lease, reported lost a safety margin earlier, as a lock's hold
//! (the `holds` module). Unlike a lock's hold, a permit has exactly one
//! guard: its id is fresh per acquisition, so there is no sharing and no
//! generation to tell apart.
//!
//! # When an entry is lost
//! - a renewal finds the permit not taken (expired, released by id
//!   elsewhere, its semaphore deleted);
//! - its deadline passes: renewals could not be confirmed in time, or its
//!   fixed lease ran out;
//! - this client releases it by id (a release by id),
//!   or sets a lease the store says it no longer has;
//! - the watchdog stops ([`crate::backend::Engine::close`]) while it renews it.
//!
//! Once reported, a loss stays: a renewal landing later does not revive it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::deadline::Deadline;
use crate::engine::counter::{LeaseRenewal, LeaseTarget};
use crate::telemetry;

/// One leased permit of one guard, in its client's table: what the
/// watchdog renews and reports lost ([`PermitLeases::register`]).
pub struct PermitHold {
    pub(crate) target: LeaseTarget,
    /// The semaphore kind it was taken through: it renews it.
    pub(crate) kind: Arc<dyn LeaseRenewal>,
    /// Whether the watchdog renews it (no fixed lease).
    pub(crate) watched: bool,
    lost: CancellationToken,
    /// Set when the entry ends, lost or not: a loss is counted once.
    ended: AtomicBool,
    deadline: Mutex<Deadline>,
}

impl std::fmt::Debug for PermitHold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PermitHold")
            .field("counter", &self.target.name)
            .field("id", &self.target.id)
            .field("lost", &self.lost.is_cancelled())
            .finish_non_exhaustive()
    }
}

impl PermitHold {
    fn deadline_guard(&self) -> MutexGuard<'_, Deadline> {
        self.deadline.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The permit: its semaphore and id.
    pub fn target(&self) -> &LeaseTarget {
        &self.target
    }

    /// Whether the watchdog renews it (no fixed lease).
    pub fn is_watched(&self) -> bool {
        self.watched
    }

    /// The short name of its kind, for metric labels.
    pub fn kind_name(&self) -> &'static str {
        self.kind.kind_name()
    }

    /// The permit's current deadline.
    pub fn deadline(&self) -> Deadline {
        *self.deadline_guard()
    }

    fn overdue(&self) -> bool {
        self.lost.is_cancelled() || Instant::now() >= self.deadline_guard().lost_at
    }

    /// Whether the permit is known lost or past its deadline (then marked
    /// lost for good). Makes no I/O.
    pub fn is_lost(&self) -> bool {
        let lost = self.overdue();
        if lost {
            self.finish(Some("expired"));
        }
        lost
    }

    /// Resolves once the permit is lost: told, or past its deadline (which
    /// renewals may move later meanwhile).
    pub async fn lost(&self) {
        while !self.is_lost() {
            let lost_at = self.deadline().lost_at;
            tokio::select! {
                _ = self.lost.cancelled() => return,
                _ = tokio::time::sleep_until(lost_at) => {}
            }
        }
    }

    /// Ends the entry; `loss` says why when it is a loss (counted once).
    fn finish(&self, loss: Option<&'static str>) {
        if !self.ended.swap(true, Ordering::AcqRel)
            && let Some(reason) = loss
        {
            telemetry::lost(self.kind.kind_name(), reason);
        }
        self.lost.cancel();
    }

    /// Moves the deadline later (never earlier); `false` once the permit
    /// is lost or overdue.
    pub(crate) fn extend(&self, deadline: Deadline) -> bool {
        let mut current = self.deadline_guard();
        if self.lost.is_cancelled() || Instant::now() >= current.lost_at {
            return false;
        }
        current.expires = current.expires.max(deadline.expires);
        current.lost_at = current.lost_at.max(deadline.lost_at);
        true
    }

    /// Sets the deadline as the store was just told (a lease update, which
    /// may shorten it); nothing once the permit is lost.
    fn reset(&self, deadline: Deadline) {
        let mut current = self.deadline_guard();
        if !self.lost.is_cancelled() {
            *current = deadline;
        }
    }
}

/// Every leased permit of one client's guards ([`crate::backend::Engine::permits`]).
pub struct PermitLeases {
    table: Mutex<HashMap<LeaseTarget, Arc<PermitHold>>>,
    /// Set by [`PermitLeases::close`]: no permit registers any more.
    closed: AtomicBool,
    /// Entries the watchdog renews.
    watched: AtomicUsize,
    /// Woken when a watched entry registers.
    pub(crate) work: Notify,
}

impl PermitLeases {
    pub(crate) fn new() -> Self {
        Self {
            table: Mutex::new(HashMap::new()),
            closed: AtomicBool::new(false),
            watched: AtomicUsize::new(0),
            work: Notify::new(),
        }
    }

    fn table(&self) -> MutexGuard<'_, HashMap<LeaseTarget, Arc<PermitHold>>> {
        // Every update is one map operation: consistent across a panic.
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers the guard of a permit just taken through `kind`, whose
    /// acquisition gives `deadline`; `watched` when the watchdog renews it.
    /// `None` once the client is closing ([`crate::backend::Engine::close`]): the
    /// caller gives the permit back itself, since no close will.
    pub fn register(
        &self,
        target: LeaseTarget,
        kind: Arc<dyn LeaseRenewal>,
        deadline: Deadline,
        watched: bool,
    ) -> Option<Arc<PermitHold>> {
        let lease = Arc::new(PermitHold {
            target: target.clone(),
            kind,
            watched,
            lost: CancellationToken::new(),
            ended: AtomicBool::new(false),
            deadline: Mutex::new(deadline),
        });
        let mut table = self.table();
        // Read under the table's lock, which `close` sets it under.
        if self.closed.load(Ordering::Acquire) {
            return None;
        }
        // Ids are fresh per acquisition: no entry of this target exists.
        table.insert(target, Arc::clone(&lease));
        drop(table);
        if watched {
            self.watched.fetch_add(1, Ordering::AcqRel);
            self.work.notify_one();
        }
        Some(lease)
    }

    /// The client is closing: no permit registers from now on, and every
    /// permit in the table ends, its guard told it is lost (reason
    /// `closed`). Returns them, for the close to give back: a guard of an
    /// ended permit sends no release of its own.
    pub(crate) fn close(&self) -> Vec<Arc<PermitHold>> {
        let mut table = self.table();
        self.closed.store(true, Ordering::Release);
        let leases: Vec<Arc<PermitHold>> = table.drain().map(|(_, lease)| lease).collect();
        drop(table);
        self.watched.store(0, Ordering::Release);
        for lease in &leases {
            lease.finish(Some("closed"));
        }
        leases
    }

    /// Removes `lease`'s entry if it is still there; whether it was.
    fn remove(&self, lease: &Arc<PermitHold>) -> bool {
        let mut table = self.table();
        let present = table
            .get(&lease.target)
            .is_some_and(|entry| Arc::ptr_eq(entry, lease));
        if present {
            table.remove(&lease.target);
            if lease.watched {
                self.watched.fetch_sub(1, Ordering::AcqRel);
            }
        }
        present
    }

    /// The guard goes away (released, forgotten or dropped): the entry
    /// leaves, so no renewal starts after this. Returns whether a release
    /// should be sent: not when the permit is known lost (it may be taken
    /// again by then, under the same id only by a late duplicate, but
    /// never this guard's to give back).
    pub fn unregister(&self, lease: &Arc<PermitHold>) -> bool {
        self.remove(lease);
        let send = !lease.is_lost();
        lease.finish(None);
        send
    }

    /// `lease` is lost for `reason`: its guard is told, and the entry
    /// leaves the table.
    pub fn end(&self, lease: &Arc<PermitHold>, reason: &'static str) {
        self.remove(lease);
        lease.finish(Some(reason));
    }

    /// The entry of `target`, if a guard of this client holds it.
    fn get(&self, target: &LeaseTarget) -> Option<Arc<PermitHold>> {
        self.table().get(target).map(Arc::clone)
    }

    /// The permit `target` was given back, or found not taken, by a call
    /// that is not its guard's: the guard (if any) is told.
    pub fn gone(&self, target: &LeaseTarget, reason: &'static str) {
        if let Some(lease) = self.get(target) {
            tracing::warn!(counter = %target.name, id = %target.id, reason, "a call by id gave back a guarded permit, or found it gone; signalling loss");
            self.end(&lease, reason);
        }
    }

    /// The lease of `target` was set to end at `deadline` by a call that
    /// is not its guard's (a lease update by id).
    pub fn updated(&self, target: &LeaseTarget, deadline: Deadline) {
        if let Some(lease) = self.get(target) {
            lease.reset(deadline);
        }
    }

    /// The permits the watchdog renews, not known lost.
    pub(crate) fn watched_leases(&self) -> Vec<Arc<PermitHold>> {
        self.table()
            .values()
            .filter(|lease| lease.watched && !lease.lost.is_cancelled())
            .map(Arc::clone)
            .collect()
    }

    /// The earliest time a permit the watchdog renews is reported lost.
    pub(crate) fn earliest_watched_loss(&self) -> Option<Instant> {
        self.table()
            .values()
            .filter(|lease| lease.watched)
            .map(|lease| lease.deadline().lost_at)
            .min()
    }

    /// Ends every permit past its deadline.
    pub(crate) fn end_overdue(&self) {
        let overdue: Vec<Arc<PermitHold>> = self
            .table()
            .values()
            .filter(|lease| lease.overdue())
            .map(Arc::clone)
            .collect();
        for lease in overdue {
            if !lease.lost.is_cancelled() {
                tracing::warn!(counter = %lease.target.name, id = %lease.target.id, "permit lease deadline passed without a successful renewal; signalling loss");
            }
            self.end(&lease, "expired");
        }
    }

    /// Ends every permit the watchdog renews: it stopped.
    pub(crate) fn end_watched(&self) {
        let watched: Vec<Arc<PermitHold>> = self
            .table()
            .values()
            .filter(|lease| lease.watched)
            .map(Arc::clone)
            .collect();
        for lease in watched {
            self.end(&lease, "closed");
        }
    }

    /// Every permit this client's guards hold (renewed or not), not known
    /// lost: what a client's record names as its permits.
    pub fn targets(&self) -> Vec<LeaseTarget> {
        self.table()
            .values()
            .filter(|lease| !lease.lost.is_cancelled())
            .map(|lease| lease.target.clone())
            .collect()
    }

    /// How many permits the watchdog renews.
    pub(crate) fn watched_len(&self) -> usize {
        self.watched.load(Ordering::Acquire)
    }
}
