//! The client's table of holds: one entry per (lock name, owner) it holds
//! (per side of the lock, for kinds whose locks have two: a read-write
//! lock's read and write holds of one owner are separate entries, as they
//! are separate counts in the store; see [`ExclusiveKind::hold_side`]).
//!
//! # Why one entry per owner
//! In the store, every hold of one owner on one lock is one hash field with
//! one count, so they end together: a force unlock, an expiry or a release
//! that finds the count gone ends them all. Every guard — watchdog and
//! fixed-lease alike — registers with its owner's entry and shares its lost
//! signal, so when any loss of the hold is seen, every guard of it learns
//! it:
//! - a watchdog renewal finds the owner's field gone;
//! - a release (a guard's, [`crate::Lock::unlock_as`], the undoing of an
//!   abandoned acquisition) is answered "not held", or frees the lock while
//!   guards of the hold remain;
//! - the hold's deadline passes, or the watchdog stops
//!   ([`crate::LockClient::close`]) while it keeps the hold alive.
//!
//! # Deadlines
//! An entry knows until when the store keeps its hold at least: the latest
//! deadline (send time + lease) of the acquisitions and renewals that built
//! it. The latest, because the lock scripts only ever extend a hold's time
//! to live, never shorten it; measured from the *send* time, because the
//! store started the lease no earlier. Loss is reported a safety margin
//! before that instant ([`crate::ClientConfig::safety_margin`]). Once
//! reported, an entry never becomes held again: renewals and acquisitions
//! landing later do not extend it.
//!
//! # Generations
//! A guard holds its entry itself ([`Hold`]), not its key. An entry leaves
//! the table when its last guard goes or when its hold is found ended; a
//! later acquisition by the same owner then makes a new entry, a new
//! generation. Guards of an ended generation touch nothing of a newer one:
//! they unregister from their own entry only, and send no release, since
//! the count in the store may be the new hold's.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::kind::{ExclusiveKind, ReleaseOutcome, RenewTarget};
use crate::telemetry;

/// Until when a hold lasts, as far as this client knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Deadline {
    /// When the store may expire the hold: after this instant another
    /// client may hold the lock.
    pub(crate) expires: Instant,
    /// When the hold is reported lost: `expires` less the safety margin.
    pub(crate) lost_at: Instant,
}

impl Deadline {
    /// The deadline of a lease of `lease` sent at `sent`, reported lost
    /// `margin` before it ends.
    pub(crate) fn new(sent: Instant, lease: Duration, margin: Duration) -> Self {
        let expires = sent + lease;
        Self {
            expires,
            lost_at: expires.checked_sub(margin).unwrap_or(sent),
        }
    }

    fn later(self, other: Self) -> Self {
        Self {
            expires: self.expires.max(other.expires),
            lost_at: self.lost_at.max(other.lost_at),
        }
    }
}

/// One generation of one owner's hold on one lock, shared by its guards.
pub(crate) struct Hold {
    pub(crate) target: RenewTarget,
    /// The kind that took the hold: it renews and releases it.
    pub(crate) kind: Arc<dyn ExclusiveKind>,
    generation: u64,
    lost: CancellationToken,
    /// Set when the hold ends, lost or not: a loss is counted once.
    ended: AtomicBool,
    deadline: Mutex<Deadline>,
}

impl std::fmt::Debug for Hold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hold")
            .field("lock", &self.target.name)
            .field("generation", &self.generation)
            .field("lost", &self.lost.is_cancelled())
            .finish_non_exhaustive()
    }
}

impl Hold {
    fn deadline_guard(&self) -> MutexGuard<'_, Deadline> {
        self.deadline.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The hold's current deadline.
    pub(crate) fn deadline(&self) -> Deadline {
        *self.deadline_guard()
    }

    /// Whether the hold is known lost or past its deadline.
    fn overdue(&self) -> bool {
        self.lost.is_cancelled() || Instant::now() >= self.deadline_guard().lost_at
    }

    /// Whether the hold is known lost or past its deadline (then marked
    /// lost for good). Makes no I/O.
    pub(crate) fn is_lost(&self) -> bool {
        let lost = self.overdue();
        if lost {
            self.finish(Some("expired"));
        }
        lost
    }

    /// Ends the hold: every guard of it is told. `loss` says why when the
    /// end is a loss (for [`crate::telemetry::LOST`]); `None` for the usual
    /// end, the release of its last guard.
    fn finish(&self, loss: Option<&'static str>) {
        if !self.ended.swap(true, Ordering::AcqRel) {
            if let Some(reason) = loss {
                telemetry::lost(self.kind.kind_name(), reason);
            }
        }
        self.lost.cancel();
    }

    /// Resolves once the hold is lost: told, or past its deadline (which
    /// renewals may move later meanwhile).
    pub(crate) async fn lost(&self) {
        while !self.is_lost() {
            let lost_at = self.deadline().lost_at;
            tokio::select! {
                _ = self.lost.cancelled() => return,
                _ = tokio::time::sleep_until(lost_at) => {}
            }
        }
    }

    /// Moves the deadline later (never earlier); refused, returning
    /// `false`, once the hold is lost or overdue: a loss once reported
    /// stays. The caller ends a refused hold.
    pub(crate) fn extend(&self, deadline: Deadline) -> bool {
        let mut current = self.deadline_guard();
        if self.lost.is_cancelled() || Instant::now() >= current.lost_at {
            return false;
        }
        *current = current.later(deadline);
        true
    }
}

struct Entry {
    hold: Arc<Hold>,
    /// Guards of this generation still registered.
    guards: usize,
    /// How many of them the watchdog keeps alive.
    watched: usize,
}

/// Where an owner's hold sits in the table: the lock and owner, and the
/// side of the lock ([`ExclusiveKind::hold_side`]), so the read and the
/// write holds of one owner on one read-write lock are two entries.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct HoldKey {
    target: RenewTarget,
    side: &'static str,
}

impl HoldKey {
    fn of(hold: &Hold) -> Self {
        Self::new(&hold.target, hold.kind.as_ref())
    }

    fn new(target: &RenewTarget, kind: &dyn ExclusiveKind) -> Self {
        Self {
            target: target.clone(),
            side: kind.hold_side(),
        }
    }
}

/// Every hold of one client, by (lock name, owner, side).
pub(crate) struct Holds {
    table: Mutex<HashMap<HoldKey, Entry>>,
    next_generation: AtomicU64,
    /// Entries with a watchdog guard: what the watchdog renews.
    watched: AtomicUsize,
    /// Woken when the first watchdog guard of an entry registers.
    pub(crate) work: Notify,
}

impl Holds {
    pub(crate) fn new() -> Self {
        Self {
            table: Mutex::new(HashMap::new()),
            next_generation: AtomicU64::new(0),
            watched: AtomicUsize::new(0),
            work: Notify::new(),
        }
    }

    fn table(&self) -> MutexGuard<'_, HashMap<HoldKey, Entry>> {
        // Every update is a few field changes: consistent across a panic.
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers a guard of `target`, taken through `kind`, whose
    /// acquisition gives `deadline`; `watched` for a watchdog guard. Joins
    /// the owner's entry while its hold lasts (a re-entry extends it), else
    /// starts a new generation.
    pub(crate) fn register(
        &self,
        target: RenewTarget,
        kind: &Arc<dyn ExclusiveKind>,
        deadline: Deadline,
        watched: bool,
    ) -> Arc<Hold> {
        let key = HoldKey::new(&target, kind.as_ref());
        let mut table = self.table();
        // Joining extends the entry's deadline; an entry that cannot be
        // extended has ended and makes way for a new generation.
        let ended = table
            .get(&key)
            .filter(|entry| !entry.hold.extend(deadline))
            .map(|entry| Arc::clone(&entry.hold));
        if ended.is_some() {
            self.remove(&mut table, &key);
        }
        let entry = table
            .entry(key)
            .and_modify(|entry| entry.guards += 1)
            .or_insert_with(|| Entry {
                hold: Arc::new(Hold {
                    target,
                    kind: Arc::clone(kind),
                    generation: self.next_generation.fetch_add(1, Ordering::Relaxed),
                    lost: CancellationToken::new(),
                    ended: AtomicBool::new(false),
                    deadline: Mutex::new(deadline),
                }),
                guards: 1,
                watched: 0,
            });
        let hold = Arc::clone(&entry.hold);
        if watched {
            entry.watched += 1;
        }
        let first_watched = watched && entry.watched == 1;
        if first_watched {
            self.watched.fetch_add(1, Ordering::AcqRel);
        }
        drop(table);
        if let Some(ended) = ended {
            ended.finish(Some("expired"));
        }
        if first_watched {
            self.work.notify_one();
        }
        hold
    }

    /// A guard of `hold` goes away (`watched`: a watchdog guard); the entry
    /// leaves the table with its last guard. Returns whether the guard
    /// should send its release: not when its hold is lost, for the count in
    /// the store may belong to a newer generation then.
    pub(crate) fn unregister(&self, hold: &Arc<Hold>, watched: bool) -> bool {
        let key = HoldKey::of(hold);
        let mut table = self.table();
        if let Some(entry) = table
            .get_mut(&key)
            .filter(|entry| Arc::ptr_eq(&entry.hold, hold))
        {
            entry.guards -= 1;
            if watched {
                entry.watched -= 1;
                if entry.watched == 0 {
                    self.watched.fetch_sub(1, Ordering::AcqRel);
                }
            }
            if entry.guards == 0 {
                table.remove(&key);
            }
        }
        drop(table);
        !hold.is_lost()
    }

    /// Removes `key`'s entry, keeping the watched count right.
    fn remove(&self, table: &mut HashMap<HoldKey, Entry>, key: &HoldKey) {
        if let Some(entry) = table.remove(key) {
            if entry.watched > 0 {
                self.watched.fetch_sub(1, Ordering::AcqRel);
            }
        }
    }

    /// `hold` ended, lost for `reason`: every guard of it is told, and it
    /// leaves the table (if it is still the current generation).
    pub(crate) fn end(&self, hold: &Arc<Hold>, reason: &'static str) {
        let key = HoldKey::of(hold);
        let mut table = self.table();
        if table
            .get(&key)
            .is_some_and(|entry| Arc::ptr_eq(&entry.hold, hold))
        {
            self.remove(&mut table, &key);
        }
        drop(table);
        hold.finish(Some(reason));
    }

    /// A release of one hold of `target`, through `kind`, was answered
    /// `outcome`. `hold`:
    /// the generation it released, when a guard sent it; otherwise the
    /// current one is meant. Freed or not held: the owner holds nothing of
    /// the lock any more, so the guards left of that generation are told.
    pub(crate) fn released(
        &self,
        target: &RenewTarget,
        kind: &dyn ExclusiveKind,
        hold: Option<&Arc<Hold>>,
        outcome: ReleaseOutcome,
    ) {
        if outcome == ReleaseOutcome::StillHeld {
            return;
        }
        let key = HoldKey::new(target, kind);
        let mut table = self.table();
        let current = table.get(&key).map(|entry| Arc::clone(&entry.hold));
        let ended = match (hold, current) {
            // Entries leave the table with their last guard: guards remain.
            (Some(hold), Some(current)) if Arc::ptr_eq(hold, &current) => current,
            // No guard of it is left to tell (the usual last unlock).
            (Some(hold), _) => {
                drop(table);
                hold.finish(None);
                return;
            }
            (None, Some(current)) => current,
            (None, None) => return,
        };
        self.remove(&mut table, &key);
        drop(table);
        if !ended.lost.is_cancelled() {
            tracing::warn!(lock = %target.name, ?outcome, "a release ended the owner's hold under its guards; signalling loss");
        }
        ended.finish(Some("released"));
    }

    /// The holds the watchdog keeps alive, not known lost.
    pub(crate) fn watched_holds(&self) -> Vec<Arc<Hold>> {
        self.table()
            .values()
            .filter(|entry| entry.watched > 0 && !entry.hold.lost.is_cancelled())
            .map(|entry| Arc::clone(&entry.hold))
            .collect()
    }

    /// The earliest time a hold the watchdog keeps alive is reported lost.
    pub(crate) fn earliest_watched_loss(&self) -> Option<Instant> {
        self.table()
            .values()
            .filter(|entry| entry.watched > 0)
            .map(|entry| entry.hold.deadline().lost_at)
            .min()
    }

    /// Ends every hold past its deadline.
    pub(crate) fn end_overdue(&self) {
        let overdue: Vec<Arc<Hold>> = self
            .table()
            .values()
            .filter(|entry| entry.hold.overdue())
            .map(|entry| Arc::clone(&entry.hold))
            .collect();
        for hold in overdue {
            if !hold.lost.is_cancelled() {
                tracing::warn!(lock = %hold.target.name, "lease deadline passed without a successful renewal; signalling loss");
            }
            self.end(&hold, "expired");
        }
    }

    /// Ends every hold the watchdog keeps alive: it stopped, so nothing
    /// renews them any more.
    pub(crate) fn end_watched(&self) {
        let watched: Vec<Arc<Hold>> = self
            .table()
            .values()
            .filter(|entry| entry.watched > 0)
            .map(|entry| Arc::clone(&entry.hold))
            .collect();
        for hold in watched {
            self.end(&hold, "closed");
        }
    }

    /// How many holds the watchdog keeps alive.
    pub(crate) fn watched_len(&self) -> usize {
        self.watched.load(Ordering::Acquire)
    }
}
