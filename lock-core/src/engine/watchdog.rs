//! The watchdog: keeps a client's watchdog-leased locks alive.
//!
//! # Algorithm
//! One task per client, not one timer per lock, whatever the locks' kinds.
//! Every `watchdog_timeout / 3` it renews **every** lock the client holds
//! under the watchdog, all kinds at once, each kind's holds lane by lane
//! (below); a lane's holds are handed to its kind's
//! [`ExclusiveKind::renew`](crate::backend::ExclusiveKind::renew) in slices of
//! [`RENEW_SLICE`] (one script call, one round trip, for the Redis kinds),
//! earliest lease deadline first, one call in flight per 25 000 locks of
//! the lane, so 100 000 held locks
//! cost 400 round trips per tick and a tick's transient memory is one
//! pointer and one 8 B sort key per lock (16 B more while a cluster's
//! holds are sorted by lane) plus a slice's worth per 25 000 locks, not a
//! copy of every target (issue 15: ≤ 300 B per held lock).
//! Re-entrant holds of one owner share one entry, renewed through the kind
//! that took it. Leased permits without a fixed lease
//! (an expirable permit's guard, the `permit_leases` table) are renewed in
//! the same tick and the same way, through their kind's
//! [`LeaseRenewal::renew`](crate::backend::LeaseRenewal::renew), and
//! lost the same ways: one generic renewal (`by_lane`, `in_slices`,
//! `settle`) serves both.
//!
//! # Lanes: one slow store delays no other's renewals
//! A kind says which *lane* renews each hold
//! ([`ExclusiveKind::renew_lane`](crate::backend::ExclusiveKind::renew_lane)): holds
//! its store serves together share one (for a sharded store, one per
//! node; for one node, one in all). The promise: **renewals of different
//! lanes are independent; a lane whose store is slow or dead delays no
//! other lane's renewals.** So
//! - the lanes of a tick are renewed all at once, each slice settled (its
//!   deadlines extended) as soon as its call returns, not when the tick
//!   ends;
//! - a failed slice ends only its own lane's renewal for the tick, and only
//!   when it reached nothing (the lane's store is down or cut off: each
//!   further slice would wait out its command timeout too); other lanes,
//!   and the lane's later slices at the next tick, are still renewed;
//! - a lane whose renewal of an earlier tick is still in flight (waiting out
//!   a command timeout) is skipped, not waited for: the ticks of the other
//!   lanes keep their schedule.
//!
//! What it renews are the entries of the client's table of holds (the
//! `holds` module) that have a watchdog guard. Each remembers its *lease
//! deadline*: when the last successful renewal (or the acquisition) was
//! **sent**, plus the lease. Measuring from the send time keeps the
//! deadline on the safe side of the store's own expiry.
//!
//! # Lost locks
//! A hold's lost signal fires for every guard of it (watchdog and
//! fixed-lease guards of the same owner alike), and the watchdog stops
//! renewing it, when
//! - a renewal reports the lock no longer held by its owner (expired,
//!   force-unlocked, deleted);
//! - renewals keep failing until the lease deadline passes: the store may
//!   already have expired the lock, so the holder must assume it has; or
//! - the watchdog stops ([`crate::backend::Engine::close`]): nothing renews the
//!   hold any more.
//!
//! After a failed lane renewal the next tick comes sooner (the retry
//! policy's backoff, growing until every lane went through), and the task
//! always wakes by the earliest lease deadline, also while a renewal call is
//! still waiting for its reply (one stuck until its command timeout in a
//! partition), so a lost lock is reported on time, not up to a tick or a
//! command timeout late. Guards read the deadline
//! themselves too ([`crate::Guard::is_lost`]), so they never depend on the
//! task being scheduled in time.
//!
//! # Registering without a wake-up
//! Taking a lock must not cost a wake-up of this task: on a busy client
//! that is a hop to another task (often another thread) per acquisition.
//! So a new hold is only announced to the task when it is *parked*, and it
//! parks only when a tick comes with nothing to renew; until then it keeps
//! its schedule, and a hold registered meanwhile is renewed at the next
//! tick, at most an interval later, as holds registered while others are
//! watched always were. A client that takes and releases locks in quick
//! succession thus wakes its watchdog at most once per interval.
//!
//! # Release
//! The engine removes the last watchdog guard from the hold *before* it
//! sends the final release, so no renewal is started after an unlock. A
//! renewal already in flight finds the owner's field gone and changes
//! nothing (the known bug of a watchdog outliving its unlock cannot
//! happen).

use std::collections::HashSet;
use std::future::Future;
use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::stream::{FuturesUnordered, StreamExt};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::backend::kind::RenewTarget;
use crate::config::RetryPolicy;
use crate::deadline::Deadline;
use crate::engine::counter::LeaseTarget;
use crate::engine::holds::{Hold, Holds};
use crate::engine::permit_leases::{PermitHold, PermitLeases};
use crate::engine::stats::Stats;
use crate::telemetry;

/// The client's handle on its watchdog task. Dropping it stops the task.
pub(crate) struct Watchdog {
    holds: Arc<Holds>,
    permits: Arc<PermitLeases>,
    shutdown: CancellationToken,
}

impl Watchdog {
    /// Starts the watchdog task on `runtime`, renewing the watched holds of
    /// `holds` and the watched permits of `permits` for `lease` at a time;
    /// a hold or permit is reported lost `margin` before its lease ends.
    pub(crate) fn start(
        runtime: &tokio::runtime::Handle,
        holds: Arc<Holds>,
        permits: Arc<PermitLeases>,
        lease: Duration,
        margin: Duration,
        retry: RetryPolicy,
        stats: Arc<Stats>,
    ) -> Self {
        let shutdown = CancellationToken::new();
        let task = Task {
            holds: Arc::clone(&holds),
            permits: Arc::clone(&permits),
            shutdown: shutdown.clone(),
            lease,
            margin,
            retry,
            stats,
        };
        runtime.spawn(task.run());
        Self {
            holds,
            permits,
            shutdown,
        }
    }

    /// Stops the task; renewals end, so every hold it kept alive is
    /// reported lost (all guards of it are told).
    pub(crate) fn stop(&self) {
        self.shutdown.cancel();
        self.holds.end_watched();
        self.permits.end_watched();
    }

    /// Whether [`Watchdog::stop`] was called: a watchdog hold registered
    /// from now on is lost from the start.
    pub(crate) fn is_stopped(&self) -> bool {
        self.shutdown.is_cancelled()
    }

    /// How many locks and permits are being kept alive.
    pub(crate) fn len(&self) -> usize {
        self.holds.watched_len() + self.permits.watched_len()
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.stop();
    }
}

/// At most this many locks (or permits) are handed to a kind in one
/// renewal call; a lane's bigger batch is renewed slice after slice, at
/// most [`slices_in_flight`] calls at a time.
///
/// A call's requests, their encoding and their replies are the memory a
/// tick takes beyond one pointer per lock, and what the allocator keeps
/// once they are freed; slices bound that by the slice, not by the number
/// of locks held (issue 15: ≤ 300 B per held lock, also after the ticks).
/// 250 is within one script call of the Redis kinds (`RENEW_CHUNK` of
/// `lock-script`, 500), one round trip: 400 round trips per tick for
/// 100 000 locks (issue 15: ≤ 1 000).
pub(crate) const RENEW_SLICE: usize = 250;

/// Locks held per renewal call in flight: a tick of `n` locks keeps
/// `n / LOCKS_PER_CALL_IN_FLIGHT` calls (at least one) in flight at once.
///
/// One call at a time, slices cost one round trip each, one after the
/// other: on a busy machine 400 of them (100 000 locks) can outlast the
/// lease's margin, and locks renewed last in a tick would be reported lost.
/// Calls in flight in proportion to the locks keep a tick's length about
/// the same whatever their number, and its memory per lock about the same
/// too (a slice's worth per 25 000 locks).
const LOCKS_PER_CALL_IN_FLIGHT: usize = 25_000;

/// How many renewal calls of one lane a tick of `locks` keeps in flight.
fn slices_in_flight(locks: usize) -> usize {
    (locks / LOCKS_PER_CALL_IN_FLIGHT).max(1)
}

struct Task {
    holds: Arc<Holds>,
    permits: Arc<PermitLeases>,
    shutdown: CancellationToken,
    lease: Duration,
    /// How long before a renewed lease ends its hold is reported lost.
    margin: Duration,
    retry: RetryPolicy,
    stats: Arc<Stats>,
}

impl Task {
    async fn run(self) {
        let interval = self.lease / 3;
        let mut failures = 0u32;
        let mut failed_since_tick = false;
        let mut next_tick: Option<Instant> = None;
        let mut in_flight = InFlight::default();
        loop {
            if self.watched_len() == 0 {
                // What is still in flight renews holds released since:
                // nothing is left to settle.
                in_flight.clear();
                match next_tick {
                    // Nothing to renew: keep the schedule until the tick
                    // (see "Registering without a wake-up").
                    Some(tick) if Instant::now() < tick => {
                        tokio::select! {
                            _ = tokio::time::sleep_until(tick) => {}
                            _ = self.shutdown.cancelled() => return,
                        }
                    }
                    _ => {
                        if !self.park().await {
                            return;
                        }
                        // Woken by a new hold: start the schedule now, so
                        // that a hold released before this task ran keeps
                        // it resting until the tick rather than parked
                        // again, to be woken by the next hold (a wake-up
                        // per lock on a client that locks in quick
                        // succession).
                        next_tick = Some(Instant::now() + interval);
                    }
                }
                continue;
            }
            let tick = *next_tick.get_or_insert_with(|| Instant::now() + interval);
            let wake_at = self.earliest_watched_loss().map_or(tick, |d| d.min(tick));
            tokio::select! {
                _ = tokio::time::sleep_until(wake_at) => {}
                Some(went_through) = in_flight.next() => {
                    if !went_through {
                        if !failed_since_tick {
                            failures += 1;
                            failed_since_tick = true;
                        }
                        // After a failure, try again sooner than a full
                        // interval, and ever more often as the earliest lease
                        // deadline nears, so a server that comes back just
                        // before it still saves the lock.
                        let retry = Instant::now() + self.retry_pause(interval, failures);
                        next_tick = Some(tick.min(retry));
                    }
                }
                _ = self.shutdown.cancelled() => return,
            }
            if next_tick.is_some_and(|tick| Instant::now() >= tick) {
                // A lane still in flight has not told yet whether it fails:
                // the backoff keeps growing until every lane went through.
                if !failed_since_tick && in_flight.is_empty() {
                    failures = 0;
                }
                failed_since_tick = false;
                self.start_tick(&mut in_flight);
                next_tick = Some(Instant::now() + interval);
            }
            self.end_overdue();
        }
    }

    /// How long after a failed renewal the next tick comes: the retry
    /// policy's backoff, within the interval, and at most half the time
    /// left before the earliest watched loss.
    fn retry_pause(&self, interval: Duration, failures: u32) -> Duration {
        let to_deadline = self.earliest_watched_loss().map_or(interval, |d| {
            d.saturating_duration_since(Instant::now()) / 2
        });
        interval
            .min(self.retry.backoff(failures))
            .min(to_deadline.max(Duration::from_millis(1)))
    }

    /// Starts renewing every watched hold and permit, each lane of each
    /// kind on its own, except the lanes whose renewal of an earlier tick
    /// is still in flight.
    fn start_tick<'a>(&'a self, in_flight: &mut InFlight<'a>) {
        // A lane whose every entry outlives one more interval would lose
        // none of them whatever order its renewal takes (a tick takes
        // less than an interval, or the next one starts on top).
        let urgent = Instant::now() + self.lease / 3;
        let (holds, lanes) = by_lane(self.holds.watched_holds(), urgent);
        for (lane, range) in lanes {
            let holds = Arc::clone(&holds);
            in_flight.start(lane, async move { self.renew_locks(&holds[range]).await });
        }
        let (leases, lanes) = by_lane(self.permits.watched_leases(), urgent);
        for (lane, range) in lanes {
            let leases = Arc::clone(&leases);
            in_flight.start(
                lane,
                async move { self.renew_permits(&leases[range]).await },
            );
        }
    }

    /// How many locks and permits are kept alive.
    fn watched_len(&self) -> usize {
        self.holds.watched_len() + self.permits.watched_len()
    }

    /// The earliest time a watched lock or permit is reported lost.
    fn earliest_watched_loss(&self) -> Option<Instant> {
        match (
            self.holds.earliest_watched_loss(),
            self.permits.earliest_watched_loss(),
        ) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Ends every lock and permit past its deadline.
    fn end_overdue(&self) {
        self.holds.end_overdue();
        self.permits.end_overdue();
    }

    /// Waits until a hold is watched again; `false` when the watchdog was
    /// stopped meanwhile.
    async fn park(&self) -> bool {
        let work = self.holds.work.notified();
        tokio::pin!(work);
        work.as_mut().enable();
        if !self.holds.park() {
            return true;
        }
        let woken = tokio::select! {
            _ = work => true,
            // A watched permit's registration always notifies (permits
            // are few next to locks), so none is missed here.
            _ = self.permits.work.notified() => true,
            _ = self.shutdown.cancelled() => false,
        };
        self.holds.unpark();
        if woken {
            self.stats.watchdog_wakes.incr();
        }
        woken
    }

    /// Renews `holds` (one lane of one kind) once, in slices of
    /// [`RENEW_SLICE`] (see there); returns whether every call went
    /// through.
    async fn renew_locks(&self, holds: &[Arc<Hold>]) -> bool {
        let Some(kind) = holds.first().map(|hold| hold.kind.as_ref()) else {
            return true;
        };
        in_slices(holds, move |slice: &[Arc<Hold>]| {
            let targets: Vec<RenewTarget> = slice.iter().map(|hold| hold.target.clone()).collect();
            let sent = Instant::now();
            self.renew_slice(kind.behaviour().name, slice.len(), async move {
                let results = kind.renew(&targets, self.lease_ms()).await;
                self.settle(
                    kind.behaviour().name,
                    slice,
                    sent,
                    results,
                    |hold, reason| {
                        self.holds.end(hold, reason);
                    },
                )
            })
        })
        .await
    }

    /// Renews `leases` (one lane of one kind) once, as
    /// [`Task::renew_locks`] does locks.
    async fn renew_permits(&self, leases: &[Arc<PermitHold>]) -> bool {
        let Some(kind) = leases.first().map(|lease| lease.kind.as_ref()) else {
            return true;
        };
        in_slices(leases, move |slice: &[Arc<PermitHold>]| {
            let targets: Vec<LeaseTarget> =
                slice.iter().map(|lease| lease.target.clone()).collect();
            let sent = Instant::now();
            self.renew_slice(kind.kind_name(), slice.len(), async move {
                let results = kind.renew(&targets, self.lease_ms()).await;
                self.settle(kind.kind_name(), slice, sent, results, |lease, reason| {
                    self.permits.end(lease, reason);
                })
            })
        })
        .await
    }

    fn lease_ms(&self) -> u64 {
        self.lease.as_millis() as u64
    }

    /// One renewal call of `count` entries, counted and traced as span
    /// `lock.renew` (DEBUG; fields `kind`, `locks`, `renewed`, `not_held`,
    /// `failed` (counts of entries), and `outcome`: `renewed` when every
    /// entry was, `not_held` when some were found gone and none failed,
    /// `partly_failed`, or `failed` when none was answered).
    async fn renew_slice(
        &self,
        kind_name: &'static str,
        count: usize,
        call: impl Future<Output = Renewal>,
    ) -> Renewal {
        let span = tracing::debug_span!(
            "lock.renew",
            kind = kind_name,
            locks = count,
            renewed = tracing::field::Empty,
            not_held = tracing::field::Empty,
            failed = tracing::field::Empty,
            outcome = tracing::field::Empty,
        );
        self.stats.renew_calls.incr();
        let renewal = call.instrument(span.clone()).await;
        // `settle` recorded the outcome of an answered call.
        if renewal == Renewal::Failed {
            span.record("outcome", "failed");
        }
        renewal
    }

    /// Applies one renewal call's `results` (sent at `sent`) to `batch`:
    /// renewed entries get their new deadline, entries no longer held end
    /// with their loss signalled (through `end`).
    fn settle<E: Watched>(
        &self,
        kind_name: &'static str,
        batch: &[Arc<E>],
        sent: Instant,
        results: crate::Result<Vec<crate::Result<bool>>>,
        end: impl Fn(&Arc<E>, &'static str),
    ) -> Renewal {
        let results = match results {
            Ok(results) if results.len() == batch.len() => results,
            Ok(results) => {
                tracing::warn!(
                    sent = batch.len(),
                    got = results.len(),
                    "watchdog: a kind returned a renewal batch of the wrong size"
                );
                telemetry::renewals(kind_name, "failed", batch.len() as u64);
                return Renewal::Failed;
            }
            Err(e) => {
                tracing::warn!(%e, entries = batch.len(), what = E::NOUN, "watchdog: renewal failed; will retry");
                telemetry::renewals(kind_name, "failed", batch.len() as u64);
                return Renewal::Failed;
            }
        };
        let renewed_until = Deadline::new(sent, self.lease, self.margin);
        let (mut renewed, mut not_held, mut failed) = (0, 0, 0);
        for (entry, result) in batch.iter().zip(results) {
            match result {
                // A renewal landing after the entry was reported lost does
                // not revive it.
                Ok(true) if entry.extend(renewed_until) => renewed += 1,
                Ok(true) => end(entry, "expired"),
                Ok(false) => {
                    tracing::warn!(name = %entry.name(), what = E::NOUN, "watchdog: no longer held; signalling loss");
                    not_held += 1;
                    end(entry, "not_held");
                }
                Err(e) => {
                    failed += 1;
                    tracing::debug!(%e, name = %entry.name(), what = E::NOUN, "watchdog: renewal of one entry failed");
                }
            }
        }
        let span = tracing::Span::current();
        span.record("renewed", renewed);
        span.record("not_held", not_held);
        span.record("failed", failed);
        if failed < batch.len() as u64 {
            span.record(
                "outcome",
                match (failed, not_held) {
                    (0, 0) => "renewed",
                    (0, _) => "not_held",
                    _ => "partly_failed",
                },
            );
        }
        self.stats.renewed.add(renewed);
        telemetry::renewals(kind_name, "renewed", renewed);
        telemetry::renewals(kind_name, "not_held", not_held);
        telemetry::renewals(kind_name, "failed", failed);
        if failed == 0 {
            Renewal::Answered
        } else if failed < batch.len() as u64 {
            Renewal::Partly
        } else {
            Renewal::Failed
        }
    }
}

/// What one renewal call came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Renewal {
    /// Every entry was answered: renewed, or found no longer held.
    Answered,
    /// Some entries were answered, the others failed.
    Partly,
    /// No entry was answered: the call failed as a whole or for each.
    Failed,
}

/// One lane of one kind (see "Lanes" in the module docs): its entries are
/// renewed apart from every other lane's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct LaneKey {
    kind: usize,
    lane: u64,
}

/// The lanes' renewals in flight, at most one per lane: a lane whose
/// renewal of an earlier tick has not returned (its store is slow, or
/// waits out a command timeout) is not started again, and holds up no
/// other lane.
#[derive(Default)]
struct InFlight<'a> {
    runs: FuturesUnordered<BoxFuture<'a, (LaneKey, bool)>>,
    busy: HashSet<LaneKey>,
}

impl<'a> InFlight<'a> {
    /// Starts `renewal` for `lane`, unless the lane's last one is still in
    /// flight.
    fn start(&mut self, lane: LaneKey, renewal: impl Future<Output = bool> + Send + 'a) {
        if self.busy.insert(lane) {
            self.runs
                .push(Box::pin(async move { (lane, renewal.await) }));
        }
    }

    /// The next lane renewal to return: whether every call of it went
    /// through; `None` at once when none is in flight.
    async fn next(&mut self) -> Option<bool> {
        let (lane, went_through) = self.runs.next().await?;
        self.busy.remove(&lane);
        Some(went_through)
    }

    fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// Drops every renewal in flight (a renewal's future may be dropped
    /// any time: it only ever extends leases).
    fn clear(&mut self) {
        self.runs.clear();
        self.busy.clear();
    }
}

/// Each lane and its entries' range in the array of a tick's entries.
type LaneRanges = Vec<(LaneKey, Range<usize>)>;

/// `entries` grouped by kind and lane, in one array shared by the lanes'
/// renewals (one pointer per entry, as before lanes) and each lane's range
/// in it; earliest deadline first within each lane that has an entry
/// reported lost before `urgent`.
fn by_lane<E: Watched>(
    mut entries: Vec<Arc<E>>,
    urgent: Instant,
) -> (Arc<Vec<Arc<E>>>, LaneRanges) {
    // By kind first, in place, then by lane within each kind: a lane is
    // worked out (a key and its node, for a cluster) once per entry for the
    // sort, not once per comparison. A kind whose entries share one lane
    // (every kind on one node) is not sorted by lane at all: that sort's
    // cache of keys is 16 B per entry, the most of a tick's transient
    // memory, which the allocator keeps (W4: RSS after the ticks).
    entries.sort_unstable_by_key(|entry| entry.kind_id());
    for of_kind in entries.chunk_by_mut(|a, b| a.kind_id() == b.kind_id()) {
        let first = of_kind.first().map(|entry| entry.lane());
        if of_kind.iter().any(|entry| Some(entry.lane()) != first) {
            of_kind.sort_by_cached_key(|entry| entry.lane());
        }
    }
    let mut lanes = LaneRanges::new();
    for (i, entry) in entries.iter().enumerate() {
        let key = LaneKey {
            kind: entry.kind_id(),
            lane: entry.lane(),
        };
        match lanes.last_mut() {
            Some((last, range)) if *last == key => range.end = i + 1,
            _ => lanes.push((key, i..i + 1)),
        }
    }
    // Earliest deadline first within each lane: a tick that cannot renew
    // every entry in time (a store saturated by acquisitions: W4 taking
    // 100 000 locks lost some) then renews the most urgent first, which
    // keeps the worst lateness the least any order can.
    //
    // Each key is read once: a deadline may move while the tick sorts (a
    // re-entry of another task extends it), and a sort whose keys change
    // under it may panic, which would end the watchdog. Milliseconds from
    // now in a u32 keep the cache at 8 B per entry (std indexes it with
    // u32 too); a deadline 49 days out sorts as the last.
    //
    // Only a lane with an urgent entry is sorted: in the steady state
    // (every entry renewed a tick ago) none is, and a tick then takes no
    // sort cache, half its transient memory (W4: RSS after the ticks).
    let now = Instant::now();
    for (_, range) in &lanes {
        let lane = &entries[range.clone()];
        if lane.iter().all(|entry| entry.lost_at() >= urgent) {
            continue;
        }
        entries[range.clone()].sort_by_cached_key(|entry| {
            let left = entry.lost_at().saturating_duration_since(now);
            u32::try_from(left.as_millis()).unwrap_or(u32::MAX)
        });
    }
    (Arc::new(entries), lanes)
}

/// What the watchdog keeps alive: a lock's hold or a permit's lease.
trait Watched {
    /// For logs: `"lock"` or `"permit"`.
    const NOUN: &'static str;
    /// Moves the deadline to `until`; `false` when it was lost already.
    fn extend(&self, until: Deadline) -> bool;
    /// When it is reported lost unless renewed.
    fn lost_at(&self) -> Instant;
    /// The lock's or semaphore's name, for logs.
    fn name(&self) -> &crate::LockName;
    /// Which kind renews it, by identity (one kind object per client and
    /// kind).
    fn kind_id(&self) -> usize;
    /// The lane its kind renews it in now.
    fn lane(&self) -> u64;
}

impl Watched for Hold {
    const NOUN: &'static str = "lock";
    fn extend(&self, until: Deadline) -> bool {
        Hold::extend(self, until)
    }
    fn lost_at(&self) -> Instant {
        Hold::lost_at(self)
    }
    fn name(&self) -> &crate::LockName {
        &self.target.name
    }
    fn kind_id(&self) -> usize {
        kind_id(&self.kind)
    }
    fn lane(&self) -> u64 {
        self.kind.renew_lane(&self.target)
    }
}

impl Watched for PermitHold {
    const NOUN: &'static str = "permit";
    fn extend(&self, until: Deadline) -> bool {
        PermitHold::extend(self, until)
    }
    fn lost_at(&self) -> Instant {
        self.deadline().lost_at
    }
    fn name(&self) -> &crate::LockName {
        &self.target.name
    }
    fn kind_id(&self) -> usize {
        kind_id(&self.kind)
    }
    fn lane(&self) -> u64 {
        self.kind.renew_lane(&self.target)
    }
}

/// A kind object's identity, to group entries by kind.
fn kind_id<K: ?Sized>(kind: &Arc<K>) -> usize {
    Arc::as_ptr(kind).cast::<()>() as usize
}

/// Renews `entries` (one lane of one kind) slice after slice of
/// [`RENEW_SLICE`], [`slices_in_flight`] calls at a time, each slice settled
/// as soon as it returns; whether every call went through. A slice that
/// reached nothing ends the lane's renewal for this tick (the calls in
/// flight still settle): the lane's store is down or cut off, and each
/// further slice would only wait out its command timeout too. The next
/// tick comes sooner (the retry backoff).
async fn in_slices<'a, E, F, Fut>(entries: &'a [Arc<E>], renew: F) -> bool
where
    F: Fn(&'a [Arc<E>]) -> Fut,
    Fut: Future<Output = Renewal>,
{
    let mut slices = entries.chunks(RENEW_SLICE);
    let mut calls = FuturesUnordered::new();
    let (mut went_through, mut reachable) = (true, true);
    loop {
        while reachable && calls.len() < slices_in_flight(entries.len()) {
            let Some(slice) = slices.next() else { break };
            calls.push(renew(slice));
        }
        match calls.next().await {
            Some(Renewal::Answered) => {}
            Some(Renewal::Partly) => went_through = false,
            Some(Renewal::Failed) => (went_through, reachable) = (false, false),
            None => return went_through,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An entry of the watchdog's with just a kind, a lane and a deadline.
    struct Entry {
        kind: usize,
        lane: u64,
        lost_at: Instant,
    }

    impl Watched for Entry {
        const NOUN: &'static str = "entry";
        fn extend(&self, _: Deadline) -> bool {
            true
        }
        fn lost_at(&self) -> Instant {
            self.lost_at
        }
        fn name(&self) -> &crate::LockName {
            unreachable!("not logged here")
        }
        fn kind_id(&self) -> usize {
            self.kind
        }
        fn lane(&self) -> u64 {
            self.lane
        }
    }

    /// `n` entries, the `i`th of kind, lane and deadline `of(i)`.
    fn entries(n: u64, of: impl Fn(u64) -> (usize, u64, Instant)) -> Vec<Arc<Entry>> {
        (0..n)
            .map(|i| {
                let (kind, lane, lost_at) = of(i);
                Arc::new(Entry {
                    kind,
                    lane,
                    lost_at,
                })
            })
            .collect()
    }

    #[test]
    fn a_tick_renews_each_lane_earliest_deadline_first() {
        let now = Instant::now();
        // Latest deadline first, the lanes interleaved.
        let (sorted, lanes) = by_lane(
            entries(12, |i| {
                ((i % 2) as usize, i % 3, now + Duration::from_secs(100 - i))
            }),
            now + Duration::from_secs(100),
        );
        assert_eq!(lanes.len(), 6, "two kinds by three lanes");
        let mut seen = 0;
        for (key, range) in lanes {
            let lane = &sorted[range];
            seen += lane.len();
            assert!(lane
                .iter()
                .all(|e| e.kind == key.kind && e.lane == key.lane));
            assert!(
                lane.windows(2).all(|w| w[0].lost_at <= w[1].lost_at),
                "lane {key:?} not earliest deadline first"
            );
        }
        assert_eq!(seen, 12);
    }

    #[test]
    fn one_lane_is_still_earliest_deadline_first() {
        let now = Instant::now();
        // Deadlines scattered: 0, 37, 74, ... ms, modulo 300.
        let (sorted, lanes) = by_lane(
            entries(300, |i| (7, 0, now + Duration::from_millis((i * 37) % 300))),
            now + Duration::from_millis(1),
        );
        assert_eq!(lanes.len(), 1);
        assert!(sorted.windows(2).all(|w| w[0].lost_at <= w[1].lost_at));
    }

    /// A lane whose entries all outlive `urgent` keeps the table's order:
    /// the order cannot lose any of them, and sorting would cost a cache.
    /// One urgent entry sorts its lane.
    #[test]
    fn only_a_lane_with_an_urgent_entry_is_sorted() {
        let now = Instant::now();
        let latest_first = |soonest: Instant| {
            entries(12, move |i| {
                (
                    0,
                    0,
                    if i == 11 {
                        soonest
                    } else {
                        now + Duration::from_secs(100 - i)
                    },
                )
            })
        };
        let urgent = now + Duration::from_secs(50);
        let (kept, _) = by_lane(latest_first(now + Duration::from_secs(60)), urgent);
        assert!(kept.windows(2).all(|w| w[0].lost_at > w[1].lost_at));
        let (sorted, _) = by_lane(latest_first(now), urgent);
        assert!(sorted.windows(2).all(|w| w[0].lost_at <= w[1].lost_at));
    }
}
