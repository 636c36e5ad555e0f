//! The client's table of holds: one entry per (lock name, owner) it holds
//! (per side of the lock, for kinds whose locks have two: a read-write
//! lock's read and write holds of one owner are separate entries, as they
//! are separate counts in the store; see [`KindBehaviour::hold_side`](crate::backend::KindBehaviour::hold_side)).
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
//!   ([`crate::backend::Engine::close`]) while it keeps the hold alive.
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
//!
//! # Closing
//! The client's close ([`crate::backend::Engine::close`]) empties the
//! table and closes it in one step ([`Holds::close`]): every hold ends (its
//! guards are told, reason `closed`) and goes to the close, which gives it
//! back; a registration after that is refused, so an acquisition landing
//! during the close gives its hold back itself. A guard of an ended hold
//! sends nothing: its hold was the close's to give back.
//!
//! # Plain holds by task
//! A hold taken by a plain acquisition (an owner made for that one wait)
//! is also listed by lock name with the task that took it (outside any
//! task: the thread), so a plain acquisition of the same task that finds
//! the lock held is refused instead of waiting for itself
//! ([`crate::LockError::SelfDeadlock`], [`Holds::held_by_task`]).

use std::hash::BuildHasher;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::Duration;

use hashbrown::{DefaultHashBuilder, HashTable};
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::backend::kind::{ExclusiveKind, ReleaseOutcome, RenewTarget};
use crate::deadline::Deadline;
use crate::telemetry;

/// An instant as nanoseconds since a point a year before the first one
/// this process stored, so a hold keeps its deadline in two atomics
/// (16 bytes, lock-free) rather than a mutex around two instants (40).
/// Exact to the nanosecond; an instant before that point (none is: the
/// engine only stores instants it read since) would saturate to it.
#[derive(Debug)]
struct AtomicInstant(AtomicU64);

/// An instant in 8 bytes (an `Instant` takes 16), as [`AtomicInstant`]
/// keeps one: nanoseconds since its origin, never 0 (the origin is a year
/// before any instant stored), so an `Option` of it is 8 bytes too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CompactInstant(std::num::NonZeroU64);

impl CompactInstant {
    pub(crate) fn new(at: Instant) -> Self {
        Self(
            std::num::NonZeroU64::new(AtomicInstant::nanos(at))
                .unwrap_or(std::num::NonZeroU64::MIN),
        )
    }

    pub(crate) fn get(self) -> Instant {
        AtomicInstant::origin() + Duration::from_nanos(self.0.get())
    }
}

impl AtomicInstant {
    fn origin() -> Instant {
        static ORIGIN: OnceLock<Instant> = OnceLock::new();
        *ORIGIN.get_or_init(|| {
            let now = Instant::now();
            now.checked_sub(Duration::from_secs(365 * 24 * 3600))
                .unwrap_or(now)
        })
    }

    fn nanos(at: Instant) -> u64 {
        let since = at.saturating_duration_since(Self::origin());
        u64::try_from(since.as_nanos()).unwrap_or(u64::MAX)
    }

    fn new(at: Instant) -> Self {
        Self(AtomicU64::new(Self::nanos(at)))
    }

    fn get(&self) -> Instant {
        Self::origin() + Duration::from_nanos(self.0.load(Ordering::Acquire))
    }

    /// Moves it to `at` if that is later.
    fn raise(&self, at: Instant) {
        self.0.fetch_max(Self::nanos(at), Ordering::AcqRel);
    }
}

/// One generation of one owner's hold on one lock, shared by its guards,
/// and its entry in the table of holds.
///
/// One allocation per held lock (a client may hold 100 000): the lost
/// signal is a flag, with the wake-up of its waiters shared by the client's
/// holds ([`Holds::told`]), and the table keeps only the pointer. A
/// generation is this allocation: guards and the table tell generations
/// apart by identity ([`Arc::ptr_eq`]).
pub(crate) struct Hold {
    pub(crate) target: RenewTarget,
    /// The kind that took the hold: it renews and releases it.
    pub(crate) kind: Arc<dyn ExclusiveKind>,
    /// Guards of this generation still registered, how many of them the
    /// watchdog keeps alive, and whether it ended.
    guards: GuardCount,
    expires: AtomicInstant,
    lost_at: AtomicInstant,
}

impl std::fmt::Debug for Hold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hold")
            .field("lock", &self.target.name)
            .field("generation", &(self as *const Self))
            .field("lost", &self.guards.ended())
            .finish_non_exhaustive()
    }
}

impl Hold {
    /// When it is reported lost unless renewed (one atomic read, where
    /// [`Hold::deadline`] takes two).
    pub(crate) fn lost_at(&self) -> Instant {
        self.lost_at.get()
    }

    /// The hold's current deadline.
    pub(crate) fn deadline(&self) -> Deadline {
        Deadline {
            expires: self.expires.get(),
            lost_at: self.lost_at.get(),
        }
    }

    /// Whether the hold was told it is lost (or ended).
    fn told(&self) -> bool {
        self.guards.ended()
    }

    /// Whether the hold is known lost or past its deadline.
    fn overdue(&self) -> bool {
        self.told() || Instant::now() >= self.lost_at.get()
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

    /// Ends the hold: every guard of it is told (those waiting in
    /// [`Hold::lost`] are woken by [`Holds::finish`]). `loss` says why when
    /// the end is a loss (for [`crate::telemetry::LOST`]); `None` for the
    /// usual end, the release of its last guard. Returns whether this call
    /// ended it.
    fn finish(&self, loss: Option<&'static str>) -> bool {
        let ended = self.guards.end();
        if ended && let Some(reason) = loss {
            telemetry::lost(self.kind.behaviour().name, reason);
        }
        ended
    }

    /// Resolves once the hold is lost: told (`told` is its client's
    /// [`Holds::told`]), or past its deadline (which renewals may move
    /// later meanwhile).
    pub(crate) async fn lost(&self, told: &Notify) {
        while !self.is_lost() {
            let lost_at = self.deadline().lost_at;
            let told = told.notified();
            tokio::pin!(told);
            // Registered before the flag is read: a `Holds::finish` after
            // the read wakes it. (A hold found past its deadline is ended
            // without a wake-up: its waiters' timers are due.)
            told.as_mut().enable();
            if self.told() {
                return;
            }
            tokio::select! {
                _ = told => return,
                _ = tokio::time::sleep_until(lost_at) => {}
            }
        }
    }

    /// Moves the deadline later (never earlier); refused, returning
    /// `false`, once the hold is lost or overdue: a loss once reported
    /// stays. The caller ends a refused hold.
    ///
    /// A loss reported while this runs (by another thread) stays reported:
    /// the lost flag is read first wherever loss is decided.
    pub(crate) fn extend(&self, deadline: Deadline) -> bool {
        if self.overdue() {
            return false;
        }
        self.expires.raise(deadline.expires);
        self.lost_at.raise(deadline.lost_at);
        true
    }

    /// Whether this is the hold of `target` on `side` (see [`HoldKey`]).
    fn is_for(&self, target: &RenewTarget, side: &str) -> bool {
        let own = self.kind.behaviour().hold_side;
        // A kind's side is one static string: the pointers usually decide.
        self.target == *target && (std::ptr::eq(own, side) || own == side)
    }

    fn is_watched(&self) -> bool {
        self.guards.watched() > 0
    }

    /// Whether the owner was made for one wait alone.
    pub(crate) fn is_private(&self) -> bool {
        self.guards.private()
    }

    /// Whether this hold keeps `kind`'s plain acquisition of the same lock
    /// waiting: both sides are one, or either is exclusive (a read hold
    /// does not keep another read waiting).
    fn blocks(&self, kind: &dyn ExclusiveKind) -> bool {
        !(self.kind.behaviour().shares_side && kind.behaviour().shares_side)
    }
}

/// A hold's guard count, its watched-guard count, its private-owner
/// flag and its end flag in one word: fields of their own would take a hold's
/// size past a multiple of 16 bytes, and the allocator would round it up
/// to the next (W4: bytes per held lock). Bits 0–30: watchdog guards;
/// 31: the owner is private ([`crate::backend::AcquireRequest::private_owner`]);
/// 32–62: guards; 63: ended.
#[derive(Debug, Default)]
struct GuardCount(AtomicU64);

impl GuardCount {
    /// The end flag.
    const ENDED: u64 = 1 << 63;
    /// One guard.
    const GUARD: u64 = 1 << 32;
    /// The private-owner flag.
    const PRIVATE: u64 = 1 << 31;
    /// The watchdog guards' bits.
    const WATCHED: u64 = (1 << 31) - 1;

    /// No guard yet, of a `private` owner's hold or not.
    fn new(private: bool) -> Self {
        Self(AtomicU64::new(if private { Self::PRIVATE } else { 0 }))
    }

    /// Whether the hold's owner was made for one wait alone.
    fn private(&self) -> bool {
        self.0.load(Ordering::Relaxed) & Self::PRIVATE != 0
    }

    /// One guard more (under the table's lock), a watchdog one when
    /// `watched`; whether it is the hold's first watchdog guard.
    fn add(&self, watched: bool) -> bool {
        let delta = Self::GUARD + u64::from(watched);
        let before = self.0.fetch_add(delta, Ordering::Relaxed);
        watched && before & Self::WATCHED == 0
    }

    /// One guard less (under the table's lock): whether it was the last
    /// guard, and whether it was the last watchdog guard (`watched`).
    fn remove(&self, watched: bool) -> (bool, bool) {
        let delta = Self::GUARD + u64::from(watched);
        let before = self.0.fetch_sub(delta, Ordering::Relaxed);
        let guards = (before & !Self::ENDED) >> 32;
        (guards == 1, watched && before & Self::WATCHED == 1)
    }

    /// How many watchdog guards it has.
    fn watched(&self) -> u64 {
        self.0.load(Ordering::Relaxed) & Self::WATCHED
    }

    /// Sets the end flag, for good: every guard of the hold is told.
    /// Returns whether this call set it (the loss is counted once).
    fn end(&self) -> bool {
        self.0.fetch_or(Self::ENDED, Ordering::AcqRel) & Self::ENDED == 0
    }

    /// Whether the hold ended, lost or not.
    fn ended(&self) -> bool {
        self.0.load(Ordering::Acquire) & Self::ENDED != 0
    }
}

/// Where an owner's hold sits in the table: the lock and owner, and the
/// side of the lock ([`KindBehaviour::hold_side`](crate::backend::KindBehaviour::hold_side)), so the read and the
/// write holds of one owner on one read-write lock are two entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct HoldKey<'a> {
    target: &'a RenewTarget,
    side: &'static str,
}

impl<'a> HoldKey<'a> {
    fn of(hold: &'a Hold) -> Self {
        Self::new(&hold.target, hold.kind.as_ref())
    }

    fn new(target: &'a RenewTarget, kind: &dyn ExclusiveKind) -> Self {
        Self {
            target,
            side: kind.behaviour().hold_side,
        }
    }
}

/// The table itself: the current generation of each (lock name, owner,
/// side), keyed by what the hold holds, so an entry is one pointer.
struct Table {
    holds: HashTable<Arc<Hold>>,
    /// The holds taken by a plain acquisition inside a task, by lock name,
    /// with the task's id: what that task's next plain acquisition looks
    /// up, so it fails at once instead of waiting for itself
    /// ([`Holds::held_by_task`]). An entry is an id and a pointer: no
    /// allocation of its own, and nothing in the hold (whose size every
    /// held lock pays). Keyed by the name alone, so a hold finds its entry
    /// without knowing its task; one name has one exclusive holder, so a
    /// bucket is long only with many read holds of one name.
    by_task: HashTable<(TaskKey, Arc<Hold>)>,
    hasher: DefaultHashBuilder,
    /// Set by [`Holds::close`]: no hold registers any more.
    closed: bool,
}

impl Table {
    fn hash(&self, key: HoldKey<'_>) -> u64 {
        self.hasher.hash_one(key)
    }

    fn name_hash(&self, name: &crate::LockName) -> u64 {
        self.hasher.hash_one(name)
    }

    fn get(&self, key: HoldKey<'_>) -> Option<&Arc<Hold>> {
        self.holds
            .find(self.hash(key), |hold| hold.is_for(key.target, key.side))
    }

    /// Takes `hold` out of the task index, if it is there.
    fn unindex(&mut self, hold: &Arc<Hold>) {
        if !hold.is_private() || self.by_task.is_empty() {
            return;
        }
        let hash = self.name_hash(&hold.target.name);
        if let Ok(entry) = self
            .by_task
            .find_entry(hash, |(_, entry)| Arc::ptr_eq(entry, hold))
        {
            entry.remove();
        }
    }

    /// Removes `key`'s entry, if it is `only` (when given).
    fn remove(&mut self, key: HoldKey<'_>, only: Option<&Arc<Hold>>) -> Option<Arc<Hold>> {
        let hash = self.hash(key);
        let entry = self
            .holds
            .find_entry(hash, |hold| {
                hold.is_for(key.target, key.side) && only.is_none_or(|only| Arc::ptr_eq(hold, only))
            })
            .ok()?;
        let removed = entry.remove().0;
        self.unindex(&removed);
        Some(removed)
    }

    /// Removes `hold`'s own entry, if it is the current one: found by
    /// pointer, so no key is compared.
    fn remove_own(&mut self, hold: &Arc<Hold>) {
        let hash = self.hash(HoldKey::of(hold));
        if let Ok(entry) = self
            .holds
            .find_entry(hash, |entry| Arc::ptr_eq(entry, hold))
        {
            entry.remove();
            self.unindex(hold);
        }
    }

    /// Whether `hold` is the current entry of its key.
    fn is_current(&self, hold: &Arc<Hold>) -> bool {
        self.holds
            .find(self.hash(HoldKey::of(hold)), |entry| {
                Arc::ptr_eq(entry, hold)
            })
            .is_some()
    }

    fn insert(&mut self, hold: Arc<Hold>, task: Option<TaskKey>) {
        if let Some(task) = task {
            let hash = self.name_hash(&hold.target.name);
            let hasher = &self.hasher;
            self.by_task
                .insert_unique(hash, (task, Arc::clone(&hold)), |(_, hold)| {
                    hasher.hash_one(&hold.target.name)
                });
        }
        let hash = self.hash(HoldKey::of(&hold));
        let hasher = &self.hasher;
        self.holds
            .insert_unique(hash, hold, |hold| hasher.hash_one(HoldKey::of(hold)));
    }
}

/// What runs an acquisition, as far as waiting for itself goes: the
/// tokio task, or, outside any task (the body of `#[tokio::main]` or of
/// a `block_on`, which is no task), the thread that polls it, which runs
/// nothing else in the meantime: a sync caller's `block_on(lock.lock())`
/// twice on one thread waits for itself as a task would.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TaskKey {
    /// A tokio task.
    Task(tokio::task::Id),
    /// A thread polling a future outside any tokio task, by a number of
    /// this process's own (see [`TaskKey::current`]).
    Thread(u64),
}

impl TaskKey {
    /// What runs the caller now; `None` only on a thread whose
    /// thread-locals are being torn down (no check there). A thread-local
    /// read: no allocation, and no call that could panic (as
    /// `std::thread::current` may late in a thread's life).
    pub(crate) fn current() -> Option<Self> {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        thread_local! {
            static THREAD: u64 = NEXT.fetch_add(1, Ordering::Relaxed);
        }
        match tokio::task::try_id() {
            Some(id) => Some(Self::Task(id)),
            None => THREAD.try_with(|id| Self::Thread(*id)).ok(),
        }
    }
}

/// Every hold of one client, by (lock name, owner, side).
pub(crate) struct Holds {
    table: Mutex<Table>,
    /// Entries with a watchdog guard: what the watchdog renews.
    watched: AtomicUsize,
    /// Whether the watchdog waits for [`Holds::work`] (it has nothing to
    /// renew): only then does a new watched hold wake it.
    parked: AtomicBool,
    /// Woken when an entry gets its first watchdog guard while the
    /// watchdog is parked.
    pub(crate) work: Notify,
    /// Wakes the guards waiting for a loss ([`Hold::lost`]) when a hold of
    /// this client is told it is lost; each looks at its own hold again.
    /// One for all holds, not one per hold: losses are rare, and a held
    /// lock then costs no wake-up list of its own.
    pub(crate) told: Notify,
}

impl Holds {
    pub(crate) fn new() -> Self {
        Self {
            table: Mutex::new(Table {
                holds: HashTable::new(),
                by_task: HashTable::new(),
                hasher: DefaultHashBuilder::default(),
                closed: false,
            }),
            watched: AtomicUsize::new(0),
            parked: AtomicBool::new(false),
            work: Notify::new(),
            told: Notify::new(),
        }
    }

    fn table(&self) -> MutexGuard<'_, Table> {
        // Every update is a few field changes: consistent across a panic.
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers a guard of `target`, taken through `kind`, whose
    /// acquisition gives `deadline`; `watched` for a watchdog guard;
    /// `task`: the task whose plain acquisition took it (indexed for
    /// [`Holds::held_by_task`]). Joins the owner's entry while its hold
    /// lasts (a re-entry extends it), else starts a new generation.
    ///
    /// `None` once the client is closing ([`Holds::close`]): the caller
    /// gives the hold back itself, since no close will.
    pub(crate) fn register(
        &self,
        target: RenewTarget,
        kind: &Arc<dyn ExclusiveKind>,
        deadline: Deadline,
        watched: bool,
        private: bool,
        task: Option<TaskKey>,
    ) -> Option<Arc<Hold>> {
        let key = HoldKey::new(&target, kind.as_ref());
        let mut table = self.table();
        if table.closed {
            return None;
        }
        // Joining extends the entry's deadline; an entry that cannot be
        // extended has ended and makes way for a new generation.
        let current = table.get(key).cloned();
        let (hold, ended) = match current {
            Some(hold) if hold.extend(deadline) => (hold, None),
            current => {
                let ended = current.and_then(|old| self.remove(&mut table, key, Some(&old)));
                let hold = Arc::new(Hold {
                    target,
                    kind: Arc::clone(kind),
                    guards: GuardCount::new(private),
                    expires: AtomicInstant::new(deadline.expires),
                    lost_at: AtomicInstant::new(deadline.lost_at),
                });
                table.insert(Arc::clone(&hold), task.filter(|_| private));
                (hold, ended)
            }
        };
        let first_watched = hold.guards.add(watched);
        // SeqCst with `park`: either the watchdog sees this hold before it
        // parks, or this sees it parked and wakes it.
        let wake = first_watched
            && self.watched.fetch_add(1, Ordering::SeqCst) == 0
            && self.parked.load(Ordering::SeqCst);
        drop(table);
        if let Some(ended) = ended {
            self.finish(&ended, Some("expired"));
        }
        if wake {
            self.work.notify_one();
        }
        Some(hold)
    }

    /// Whether task `task` holds `name` by a plain acquisition (its own
    /// owner) under the watchdog that keeps a plain acquisition through
    /// `kind` waiting: that acquisition would wait for its own task
    /// forever. (A fixed lease ends by itself: waiting for it is a wait,
    /// not a hang.) One hash lookup.
    pub(crate) fn held_by_task(
        &self,
        task: TaskKey,
        name: &crate::LockName,
        kind: &dyn ExclusiveKind,
    ) -> bool {
        let table = self.table();
        if table.by_task.is_empty() {
            return false;
        }
        let hash = table.name_hash(name);
        table
            .by_task
            .find(hash, |(id, hold)| {
                *id == task
                    && hold.target.name == *name
                    && hold.is_watched()
                    && !hold.overdue()
                    && hold.blocks(kind)
            })
            .is_some()
    }

    /// A guard of `hold` goes away (`watched`: a watchdog guard); the entry
    /// leaves the table with its last guard. Returns whether the guard
    /// should send its release: not when its hold is lost (the count in
    /// the store may belong to a newer generation then), nor when the
    /// client's close took it over ([`Holds::close`]).
    pub(crate) fn unregister(&self, hold: &Arc<Hold>, watched: bool) -> bool {
        let mut table = self.table();
        if table.is_current(hold) {
            let (last, last_watched) = hold.guards.remove(watched);
            if last_watched {
                self.watched.fetch_sub(1, Ordering::AcqRel);
            }
            if last {
                table.remove_own(hold);
            }
        }
        drop(table);
        !hold.is_lost()
    }

    /// Removes `key`'s entry if it is `only` (when given), keeping the
    /// watched count right.
    fn remove(
        &self,
        table: &mut Table,
        key: HoldKey<'_>,
        only: Option<&Arc<Hold>>,
    ) -> Option<Arc<Hold>> {
        let removed = table.remove(key, only)?;
        if removed.is_watched() {
            self.watched.fetch_sub(1, Ordering::AcqRel);
        }
        Some(removed)
    }

    /// `hold` ended, lost for `reason`: every guard of it is told, and it
    /// leaves the table (if it is still the current generation).
    pub(crate) fn end(&self, hold: &Arc<Hold>, reason: &'static str) {
        let key = HoldKey::of(hold);
        let mut table = self.table();
        self.remove(&mut table, key, Some(hold));
        drop(table);
        self.finish(hold, Some(reason));
    }

    /// Ends `hold` ([`Hold::finish`]) and wakes the guards waiting for its
    /// loss.
    fn finish(&self, hold: &Hold, loss: Option<&'static str>) {
        if hold.finish(loss) {
            self.told.notify_waiters();
        }
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
        let current = table.get(key).cloned();
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
        self.remove(&mut table, key, Some(&ended));
        drop(table);
        if !ended.told() {
            tracing::warn!(lock = %target.name, ?outcome, "a release ended the owner's hold under its guards; signalling loss");
        }
        self.finish(&ended, Some("released"));
    }

    /// The holds the watchdog keeps alive, not known lost.
    ///
    /// Allocated once at its final size (the count of watched holds, read
    /// under the table's lock): a growing vector would take up to three
    /// times the memory at its peak, on every tick.
    pub(crate) fn watched_holds(&self) -> Vec<Arc<Hold>> {
        let table = self.table();
        let mut watched = Vec::with_capacity(self.watched_len());
        watched.extend(
            table
                .holds
                .iter()
                .filter(|hold| hold.is_watched() && !hold.told())
                .cloned(),
        );
        watched
    }

    /// The earliest time a hold the watchdog keeps alive is reported lost.
    pub(crate) fn earliest_watched_loss(&self) -> Option<Instant> {
        self.table()
            .holds
            .iter()
            .filter(|hold| hold.is_watched())
            .map(|hold| hold.deadline().lost_at)
            .min()
    }

    /// Ends every hold past its deadline.
    pub(crate) fn end_overdue(&self) {
        let overdue: Vec<Arc<Hold>> = self
            .table()
            .holds
            .iter()
            .filter(|hold| hold.overdue())
            .cloned()
            .collect();
        for hold in overdue {
            if !hold.told() {
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
            .holds
            .iter()
            .filter(|hold| hold.is_watched())
            .cloned()
            .collect();
        for hold in watched {
            self.end(&hold, "closed");
        }
    }

    /// The client is closing: no hold registers from now on, and every
    /// hold in the table ends, its guards told it is lost (reason
    /// `closed`). Returns them, for the close to give back: a guard of an
    /// ended hold sends no release of its own.
    pub(crate) fn close(&self) -> Vec<Arc<Hold>> {
        let mut table = self.table();
        table.closed = true;
        let holds: Vec<Arc<Hold>> = table.holds.drain().collect();
        table.by_task.clear();
        drop(table);
        self.watched.store(0, Ordering::Release);
        for hold in &holds {
            self.finish(hold, Some("closed"));
        }
        holds
    }

    /// The watchdog is about to wait for [`Holds::work`] (already
    /// enabled): `false`, and it stays awake, when a hold is watched.
    pub(crate) fn park(&self) -> bool {
        self.parked.store(true, Ordering::SeqCst);
        if self.watched.load(Ordering::SeqCst) > 0 {
            self.parked.store(false, Ordering::SeqCst);
            return false;
        }
        true
    }

    /// The watchdog woke from [`Holds::park`].
    pub(crate) fn unpark(&self) {
        self.parked.store(false, Ordering::SeqCst);
    }

    /// How many holds the watchdog keeps alive.
    pub(crate) fn watched_len(&self) -> usize {
        self.watched.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The end flag and the count share a word without touching each
    /// other.
    #[test]
    fn a_guard_count_keeps_its_end_flag_apart() {
        let count = GuardCount::new(true);
        assert!(count.add(true), "the first watchdog guard");
        assert!(!count.add(false));
        assert!(!count.add(true));
        assert_eq!(count.watched(), 2);
        assert!(!count.ended());
        assert!(count.end(), "the first end ends it");
        assert!(!count.end(), "a second end is not counted");
        assert_eq!(count.remove(true), (false, false));
        assert_eq!(count.remove(false), (false, false));
        assert_eq!(count.remove(true), (true, true));
        assert!(count.ended(), "ended for good");
        assert!(count.private(), "the private flag stays");
    }

    /// A held lock costs one `Hold` (plus its name) in the client, and
    /// one pointer in the table: keep it small (lock-bench W4 measures
    /// the whole: ≤ 300 B per held lock; the guard's own size is checked
    /// beside it, in the `guard` module).
    #[test]
    fn a_hold_stays_small() {
        assert!(
            std::mem::size_of::<Hold>() <= 72,
            "Hold is {} bytes",
            std::mem::size_of::<Hold>()
        );
    }

    #[tokio::test(start_paused = true)]
    async fn compact_instants_are_kept_exactly() {
        let now = Instant::now();
        let at = now + Duration::from_nanos(987_654_321);
        assert_eq!(CompactInstant::new(at).get(), at);
        assert_eq!(CompactInstant::new(now).get(), now);
        assert_eq!(std::mem::size_of::<Option<CompactInstant>>(), 8);
    }

    #[tokio::test(start_paused = true)]
    async fn instants_are_kept_exactly_and_only_raised() {
        let now = Instant::now();
        let at = AtomicInstant::new(now + Duration::from_nanos(123_456_789));
        assert_eq!(at.get(), now + Duration::from_nanos(123_456_789));
        at.raise(now);
        assert_eq!(at.get(), now + Duration::from_nanos(123_456_789));
        at.raise(now + Duration::from_secs(30));
        assert_eq!(at.get(), now + Duration::from_secs(30));
    }
}
