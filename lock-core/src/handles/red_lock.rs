//! [`RedLock`]: one lock over N independent stores, held by a majority.
//!
//! # Algorithm (Redlock)
//! The members are ordinary [`Lock`]s of N clients, one per independent
//! store (a master with no replica standing in for it). An acquisition
//! runs in rounds; a round succeeds when a quorum (N/2 + 1) is held and
//! still valid, that is, not yet within its safety margin of its lease's
//! end. Otherwise it releases everything it took, and, while the wait
//! budget lasts, backs off for a random part of half a round and starts
//! over.
//!
//! - **First round**: every member is tried once, *concurrently*, without
//!   waiting: a free lock costs one round trip to every store at once.
//!   Once a quorum is held, the members still answering get as long again
//!   as the quorum took (at least 1 ms): holding more than a quorum is
//!   what lets the lock survive the loss of members.
//! - **Later rounds** (the lock was contended): members are taken one
//!   after another in a fixed order, each waiting up to the round's wait,
//!   as Redisson does; once a quorum is held the members left are tried
//!   once, together. Waiting contenders so queue on the same member first
//!   and the one that gets it finds the next one free. Waiting on every
//!   member at once let contenders split the members between them (each
//!   holding some, none a quorum) and wait out whole rounds: 10 contenders
//!   on 3 masters once took 48 s for 50 holds of 50 ms. Members that failed
//!   in the previous round go last, so a store that is down costs a wait
//!   only when the others could not make a quorum.
//! - **Round wait**: `clamp(remaining budget / N, 1 ms, lease / 2N)`,
//!   and never past the budget; `lease / 2N` when waiting forever (3 s
//!   for the default 30 s watchdog lease and 5 masters), so one ordered
//!   pass fits the budget, as Redisson's per-member `remaining / N` does.
//!   The cap keeps a round that succeeds at its end valid for most of a
//!   lease.
//! - **Wait bound**: `try_lock_for(d)` returns within `d` plus
//!   [`crate::WAIT_OVERSHOOT`] whatever one member does (never answers,
//!   answers slowly, drops packets): each member's wait is cut at its own
//!   bound (a look still in flight then is left to finish in the
//!   background), the first round lasts at most a round wait (a try's
//!   one round, the retry policy), the members tried once a quorum is
//!   held get a round wait, and the whole acquisition is cut at the
//!   deadline plus that overshoot. What a call left behind takes is
//!   released when it lands; nothing is stranded.
//! - **Giving up early**: a round ends as soon as a quorum can no longer
//!   be reached. When the members that *failed* (errors, not a busy lock)
//!   alone make a quorum impossible, the acquisition fails with the first
//!   of their errors rather than retrying: most stores are down.
//!
//! # Clock-drift allowance
//! A member counts as valid until `sent + lease − (lease / 100 + 2 ms +
//! loss_margin)`, where `sent` is when its winning attempt was sent (on
//! this client's clock; the store started the lease no earlier) and the
//! allowance is that member's client's
//! [safety margin](crate::ClientConfig::safety_margin): Redlock's
//! `lease × drift factor 0.01 + 2 ms` for the drift between clocks, plus
//! the configured margin for the holder to stop. This is Redlock's
//! "elapsed < lease − drift" measured per member from its own send, which
//! is at least as strict where it matters: each member's lease is known to
//! have started no earlier than its own send, not the round's start.
//!
//! # While held
//! Each member's client's watchdog renews that member (with no fixed
//! lease). A member whose store loses it (killed, restarted empty, or a
//! renewal finds it gone) is reported lost on its own [`Guard`]; the
//! [`RedGuard`] is lost only once fewer than a quorum of its members are
//! held.
//!
//! # What it guarantees, and what it does not
//! While a quorum of stores keeps its keys, two holders cannot both hold a
//! quorum: two majorities share a store, and that store's lock excludes.
//! It does not protect against:
//! - a holder paused (GC, swap, SIGSTOP) or partitioned past its lease:
//!   it still believes it holds the lock when another holder has it
//!   (Kleppmann, "How to do distributed locking", 2016). The lost signal
//!   fires a margin before the lease ends on the holder's own clock, but a
//!   holder that is not running cannot act on it;
//! - clocks that jump (an NTP step, a VM migration) by more than the
//!   allowance: leases are timed by each store's clock;
//! - a store that restarts empty (no persistence) and takes part again
//!   within a lease while a minority of the others is down: the holder's
//!   majority may then no longer exclude a new one. Restart stores later
//!   than one lease (Redis's "delayed restart") or persist with fsync.
//!
//! For safety, pair it with fencing tokens checked by the resource
//! written to. A [`RedLock`] has no token of its own: the tokens of its
//! members ([`crate::AcquireOptions::fenced`], each member's
//! [`Guard::fencing_token`]) come from independent counters, so neither
//! their maximum nor their sum rises from one holder to the next (two
//! majorities share a store, but not necessarily the one with the largest
//! counter). Fence with a [`crate::FencedLock`] on a single store (or a
//! consensus system) when the resource must refuse a paused holder.

use std::collections::HashSet;
use std::time::Duration;

use futures::stream::{FuturesUnordered, StreamExt};
use tokio::time::Instant;

use crate::config::options::{cut_off, AcquireOptions, Wait};
use crate::error::{LockError, Result};
use crate::handles::acquire;
use crate::handles::guard::Guard;
use crate::handles::lock::Lock;
use crate::handles::multi_lock::{release_all, unlock_all};
use crate::telemetry;

/// One lock over N independent stores, held by a majority (see the module
/// docs for the algorithm, its drift allowance and its limits). Cheap to
/// clone; makes no I/O until used.
///
/// ```
/// # async fn demo(locks: Vec<lock_core::Lock>) -> lock_core::Result<()> {
/// use lock_core::RedLock;
/// // `locks`: the lock "reports" of one client per independent Redis master.
/// let red = RedLock::new(locks)?;
/// let guard = red.lock().await?; // held on a majority of the stores
/// // … guard.lost() resolves once fewer than a majority hold it …
/// guard.unlock().await?;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct RedLock {
    members: Vec<Lock>,
}

impl RedLock {
    /// A RedLock over `locks`, one per independent store, each of its own
    /// client (usually the same name on each).
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] when `locks` is empty, or two are of
    /// one client (one store counted twice would break the majority
    /// argument). Two clients of one store are not told apart: give each
    /// member a store of its own.
    pub fn new(locks: impl IntoIterator<Item = Lock>) -> Result<Self> {
        let members: Vec<Lock> = locks.into_iter().collect();
        if members.is_empty() {
            return Err(LockError::invalid("a RedLock needs at least one lock"));
        }
        let mut clients = HashSet::new();
        if let Some(lock) = members.iter().find(|lock| !clients.insert(lock.inner().id)) {
            return Err(LockError::invalid(format!(
                "two RedLock members (one is {:?}) are of client {}: each member needs a client of its own, on its own store",
                lock.name().as_str(),
                lock.inner().id
            )));
        }
        Ok(Self { members })
    }

    /// The members, as given.
    pub fn locks(&self) -> &[Lock] {
        &self.members
    }

    /// How many members must be held: N/2 + 1.
    pub fn quorum(&self) -> usize {
        self.members.len() / 2 + 1
    }

    /// The general acquisition: `opts.wait` is the whole budget,
    /// `opts.lease` and `opts.fenced` apply to each member. `Ok(None)`,
    /// holding nothing, when the budget ran out.
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] for an explicit `opts.owner` (each
    /// member takes its own owner) or a bad lease, before any I/O;
    /// otherwise as [`RedLock::lock`].
    ///
    /// # Cancel safety
    /// As [`RedLock::lock`].
    pub async fn acquire(&self, opts: AcquireOptions) -> Result<Option<RedGuard>> {
        let first = self.members[0].name();
        telemetry::acquisition("redlock", first, self.acquire_counted(opts)).await
    }

    /// [`RedLock::acquire`], once its span and metrics are set up, given
    /// up at the wait's deadline plus [`crate::WAIT_OVERSHOOT`] whatever a
    /// member does (never answers, answers slowly, drops packets): its
    /// members' calls still in flight then finish in the background, and
    /// what they take is released.
    async fn acquire_counted(&self, opts: AcquireOptions) -> Result<Option<RedGuard>> {
        match cut_off(opts.wait, Instant::now()) {
            None => self.acquire_rounds(opts).await,
            Some(cut) => tokio::time::timeout_at(cut, self.acquire_rounds(opts))
                .await
                .unwrap_or(Ok(None)),
        }
    }

    /// The rounds of [`RedLock::acquire`].
    async fn acquire_rounds(&self, opts: AcquireOptions) -> Result<Option<RedGuard>> {
        if opts.owner.is_some() {
            return Err(LockError::invalid(
                "a RedLock's members take their own owners; an explicit owner is refused",
            ));
        }
        let n = u32::try_from(self.members.len()).unwrap_or(u32::MAX);
        let lease = opts.lease.unwrap_or_else(|| {
            self.members
                .iter()
                .map(|lock| lock.inner().config.watchdog_timeout)
                .min()
                .unwrap_or_default()
        });
        let deadline = match opts.wait {
            Wait::Forever => None,
            Wait::For(wait) => Some(Instant::now().checked_add(wait)),
        };
        // The first round tries every member at once, without waiting: one
        // round trip when the lock is free. Later rounds wait, member by
        // member in a fixed order (see `ordered_round`).
        let mut contended = false;
        let mut failed = vec![false; self.members.len()];
        loop {
            let remaining =
                deadline.map(|d| d.map(|d| d.saturating_duration_since(Instant::now())));
            let cap = (lease / n.saturating_mul(2)).max(Duration::from_millis(1));
            let round_wait = match remaining {
                None | Some(None) => cap,
                Some(Some(left)) => (left / n).max(Duration::from_millis(1)).min(cap).min(left),
            };
            let was_contended = contended;
            let taken = if contended {
                self.ordered_round(&opts, round_wait, &mut failed).await?
            } else {
                contended = true;
                // A try's one round is bounded by the retry policy; a wait's
                // by its round wait, so a silent member costs no more.
                let until =
                    (opts.wait != Wait::For(Duration::ZERO)).then(|| Instant::now() + round_wait);
                self.first_round(&opts, until, &mut failed).await?
            };
            if let Some(guards) = taken {
                return Ok(Some(RedGuard {
                    members: guards,
                    quorum: self.quorum(),
                }));
            }
            // After the first round the ordered one waits at once: its
            // members' waits are what a contender spends its time in.
            let backoff = if was_contended {
                (round_wait / 2).mul_f64(fastrand::f64())
            } else {
                Duration::ZERO
            };
            match deadline {
                None | Some(None) => tokio::time::sleep(backoff).await,
                Some(Some(d)) => {
                    let now = Instant::now();
                    if now >= d {
                        return Ok(None);
                    }
                    tokio::time::sleep_until((now + backoff).min(d)).await;
                    if Instant::now() >= d {
                        return Ok(None);
                    }
                }
            }
        }
    }

    /// A contended round, as Redisson takes members: one after another in
    /// the members' order, each with `wait`, until a quorum is held or can
    /// no longer be; then the members left are tried once, together.
    /// Waiting contenders thus queue on the same member first, and the one
    /// that gets it finds the next free, instead of contenders splitting
    /// the members between them and each waiting out its round. The valid
    /// members taken when a quorum of them is; otherwise everything taken
    /// is released and `None` returned (or the first error when the
    /// members that failed alone make a quorum impossible). Dropping this
    /// future drops what it took, which releases it.
    async fn ordered_round(
        &self,
        opts: &AcquireOptions,
        wait: Duration,
        failed: &mut [bool],
    ) -> Result<Option<Vec<Guard>>> {
        let quorum = self.quorum();
        let spare = self.members.len() - quorum;
        let waiting = AcquireOptions {
            wait: Wait::For(wait),
            owner: None,
            ..opts.clone()
        };
        // Members that failed last time go last: a store that is down
        // would take a whole wait before the next member is tried.
        let mut order: Vec<usize> = (0..self.members.len()).filter(|&i| !failed[i]).collect();
        order.extend((0..self.members.len()).filter(|&i| failed[i]));
        let mut taken = Vec::with_capacity(self.members.len());
        let mut busy = 0;
        let mut errors = Vec::new();
        let mut next = 0;
        while taken.len() < quorum && busy + errors.len() <= spare {
            let i = order[next];
            next += 1;
            let outcome = acquire::acquire_member(self.members[i].target(), waiting.clone()).await;
            failed[i] = outcome.is_err();
            match outcome {
                Ok(Some(guard)) => taken.push(guard),
                Ok(None) => busy += 1,
                Err(e) => errors.push(e),
            }
        }
        if taken.len() == quorum {
            // Holding more than a quorum lets the lock outlive the loss of
            // members; one try each, together, is all that is worth.
            let once = AcquireOptions {
                wait: Wait::For(Duration::ZERO),
                ..waiting
            };
            // A member that does not answer within a round wait is left
            // behind (its call finishes in the background, and what it
            // takes is released): a silent one would hold the quorum
            // back for its whole retry policy.
            let mut rest = order[next..]
                .iter()
                .map(|&i| acquire::acquire_member(self.members[i].target(), once.clone()))
                .collect::<FuturesUnordered<_>>();
            let until = Instant::now() + wait;
            while let Ok(Some(outcome)) = tokio::time::timeout_at(until, rest.next()).await {
                taken.extend(outcome.ok().flatten());
            }
        }
        self.settle_round(taken, busy, errors).await
    }

    /// The end of a round: the valid members taken when they make a quorum;
    /// otherwise everything taken is released, and the round fails with
    /// the first error when the failed members alone make a quorum
    /// impossible, or ends with `None`.
    async fn settle_round(
        &self,
        taken: Vec<Guard>,
        busy: usize,
        mut errors: Vec<LockError>,
    ) -> Result<Option<Vec<Guard>>> {
        let quorum = self.quorum();
        let valid = taken.iter().filter(|guard| !guard.is_lost()).count();
        if valid >= quorum {
            return Ok(Some(taken));
        }
        release_all(taken).await;
        if errors.len() > self.members.len() - quorum {
            return Err(errors.swap_remove(0));
        }
        tracing::debug!(
            lock = %self.members[0].name(),
            valid,
            quorum,
            busy,
            failed = errors.len(),
            "RedLock round without a valid quorum; released what it took"
        );
        Ok(None)
    }

    /// The first round: every member tried once, concurrently, without
    /// waiting (one round trip when the lock is free). Members still
    /// answering once a quorum is held get as long again as the quorum
    /// took. The valid members taken when a quorum of them is; otherwise
    /// everything taken is released (see `settle_round`). Dropping this
    /// future drops the members' acquisitions and guards, which releases
    /// what they took.
    async fn first_round(
        &self,
        opts: &AcquireOptions,
        until: Option<Instant>,
        failed: &mut [bool],
    ) -> Result<Option<Vec<Guard>>> {
        let quorum = self.quorum();
        let spare = self.members.len() - quorum;
        let member = AcquireOptions {
            wait: Wait::For(Duration::ZERO),
            owner: None,
            ..opts.clone()
        };
        let started = Instant::now();
        let mut pending: FuturesUnordered<_> = self
            .members
            .iter()
            .enumerate()
            .map(|(i, lock)| {
                let member = member.clone();
                async move { (i, acquire::acquire_member(lock.target(), member).await) }
            })
            .collect();
        let mut taken = Vec::with_capacity(self.members.len());
        let mut busy = 0;
        let mut errors = Vec::new();
        let mut stragglers_until = None;
        while busy + errors.len() <= spare {
            let next = match stragglers_until.into_iter().chain(until).min() {
                None => pending.next().await,
                Some(until) => match tokio::time::timeout_at(until, pending.next()).await {
                    Ok(next) => next,
                    Err(_) => break,
                },
            };
            let Some((i, outcome)) = next else { break };
            failed[i] = outcome.is_err();
            match outcome {
                Ok(Some(guard)) => {
                    taken.push(guard);
                    if taken.len() == quorum {
                        let now = Instant::now();
                        let took = (now - started).max(Duration::from_millis(1));
                        stragglers_until = Some(now + took);
                    }
                }
                Ok(None) => busy += 1,
                Err(e) => errors.push(e),
            }
        }
        // Members still answering are dropped: what they take is released.
        drop(pending);
        self.settle_round(taken, busy, errors).await
    }
}

/// A quorum of a [`RedLock`]'s members, held. Release it with
/// [`RedGuard::unlock`].
///
/// # Dropping
/// Dropping it drops every member's [`Guard`]: each stops its renewal and
/// is released in the background (see [`Guard`]).
#[must_use = "the lock is released as soon as the guard is dropped"]
#[derive(Debug)]
pub struct RedGuard {
    members: Vec<Guard>,
    quorum: usize,
}

impl RedGuard {
    /// The guards of the members taken (a quorum at least), in the order
    /// they were taken.
    pub fn guards(&self) -> &[Guard] {
        &self.members
    }

    /// How many members must stay held: N/2 + 1 of the RedLock's N.
    pub fn quorum(&self) -> usize {
        self.quorum
    }

    /// How many members are not known lost.
    pub fn held(&self) -> usize {
        self.members.iter().filter(|guard| !guard.is_lost()).count()
    }

    /// Whether fewer than a quorum of members are held: the lock is lost.
    /// Cheap; makes no I/O. Once `true`, it stays `true`.
    pub fn is_lost(&self) -> bool {
        self.held() < self.quorum
    }

    /// Resolves once fewer than a quorum of members are held.
    ///
    /// # Cancel safety
    /// Cancel-safe; it only observes.
    pub async fn lost(&self) {
        let mut losses: FuturesUnordered<_> = self.members.iter().map(Guard::lost).collect();
        let mut held = self.members.len();
        while held >= self.quorum {
            if losses.next().await.is_none() {
                break;
            }
            held -= 1;
        }
    }

    /// `Err(LockLost)` once the lock is lost ([`RedGuard::is_lost`]).
    ///
    /// # Errors
    /// [`LockError::LockLost`].
    pub fn check(&self) -> Result<()> {
        if self.is_lost() {
            Err(LockError::lock_lost(self.name()))
        } else {
            Ok(())
        }
    }

    /// The instant after which fewer than a quorum of members may still be
    /// held: the quorum-th latest of the members'
    /// [lease deadlines](Guard::lease_deadline).
    pub fn lease_deadline(&self) -> Instant {
        let mut deadlines: Vec<Instant> = self.members.iter().map(Guard::lease_deadline).collect();
        deadlines.sort_unstable_by(|a, b| b.cmp(a));
        deadlines
            .get(self.quorum - 1)
            .copied()
            .unwrap_or_else(Instant::now)
    }

    /// Runs `work` while a quorum of members is held, then unlocks every member; as
    /// [`Guard::run_locked`].
    ///
    /// # Errors
    /// As [`Guard::run_locked`].
    ///
    /// # Cancel safety
    /// As [`Guard::run_locked`].
    pub async fn run_locked<T>(self, work: impl AsyncFnOnce(&Self) -> T) -> Result<T> {
        crate::backend::held::run_locked(self, work).await
    }

    fn name(&self) -> String {
        self.members
            .first()
            .map(|guard| guard.name().to_string())
            .unwrap_or_default()
    }

    /// Releases every member, concurrently.
    ///
    /// # Errors
    /// When fewer than a quorum of members were released: the first
    /// member's error ([`LockError::NotHeld`] for a member whose lease ran
    /// out or that was lost, backend errors for a store that is down).
    /// Failures of a minority are logged, not returned: the lock was held
    /// until released.
    ///
    /// # Cancel safety
    /// Every member's release runs to completion even if this future is
    /// dropped.
    pub async fn unlock(self) -> Result<()> {
        let quorum = self.quorum;
        let results = unlock_all(self.members).await;
        let released = results.iter().filter(|(_, r)| r.is_ok()).count();
        let mut first_error = None;
        for (name, result) in results {
            if let Err(e) = result {
                tracing::debug!(lock = %name, %e, "releasing a RedLock member failed");
                first_error.get_or_insert(e);
            }
        }
        match first_error {
            Some(e) if released < quorum => Err(e),
            _ => Ok(()),
        }
    }
}

impl crate::backend::held::Held for RedGuard {
    async fn lost(&self) {
        RedGuard::lost(self).await;
    }

    fn check(&self) -> Result<()> {
        RedGuard::check(self)
    }

    async fn release(self) -> Result<()> {
        self.unlock().await
    }
}

crate::handles::shorthands::acquire_shorthands!(RedLock, RedGuard, "a quorum of the members");
