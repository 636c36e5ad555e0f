//! [`MultiLock`]: several locks held as one, all or nothing.
//!
//! # Algorithm
//! The members are ordinary [`Lock`]s, of any kind, possibly of different
//! clients on different stores; the multi-lock has no keys of its own. It
//! takes them one after another in a fixed order — by lock name, members
//! of equal names (the same name on several stores) in the order given —
//! each through its own wait loop, within one wait budget shared by all.
//!
//! # Why waiting while holding cannot deadlock
//! Every multi-lock over the same locks takes them in the same order (the
//! order depends on the names and the order given, not on client ids,
//! which differ between processes). Whoever waits for member `k` holds
//! only members before `k`, so no two of them wait for each other in a
//! cycle: the classic ordered-locking argument. Redisson instead releases
//! everything on a failed wait and starts over; with a total order that is
//! not needed, and it would make a multi-lock over a busy lock lose its
//! place again and again.
//!
//! # Promise
//! - All or nothing: [`MultiLock::acquire`] returns a [`MultiGuard`]
//!   holding every member, or `Ok(None)` / an error holding none. What was
//!   taken before a failure, a timeout or the drop of the future is
//!   released (by the members' own guards, in the background when
//!   dropped).
//! - With a fixed lease each member's lease starts when that member is
//!   taken, so the first member taken runs out first. A member is waited
//!   for only until the first member taken would be reported lost; then
//!   everything is released and the round starts over while the budget
//!   lasts. A returned guard therefore holds every member for at least
//!   its safety margin, and [`MultiGuard::lease_deadline`] is the earliest
//!   of the members'.
//! - The [`MultiGuard`] is lost when any member is lost.
//! - `try_lock_for(d)` returns within `d` plus [`crate::WAIT_OVERSHOOT`]
//!   whatever a member's store does (never answers, answers slowly, drops
//!   packets): each member waits only for what is left of the budget, its
//!   look still in flight at the deadline is left to finish in the
//!   background, and the whole acquisition (the release of what it took
//!   included) is cut at the deadline plus that overshoot.

use std::collections::HashSet;
use std::time::Duration;

use futures::future;
use tokio::time::Instant;

use crate::config::options::{cut_off, AcquireOptions, Wait};
use crate::error::{LockError, Result};
use crate::handles::acquire;
use crate::handles::guard::Guard;
use crate::handles::lock::Lock;
use crate::telemetry;

/// Several locks held as one (see the module docs): taken in a fixed order
/// within one wait budget, all or nothing, released together. Cheap to
/// clone; makes no I/O until used.
///
/// ```
/// # async fn demo(order: lock_core::Lock, sku: lock_core::Lock) -> lock_core::Result<()> {
/// use lock_core::MultiLock;
/// // e.g. `orders.lock("order:42")?` and `stock.lock("sku:7")?`, of two clients
/// let both = MultiLock::new([order, sku])?;
/// let guard = both.lock().await?; // holds both, or waits
/// // … change the order and the stock together …
/// guard.unlock().await?;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct MultiLock {
    /// In acquisition order.
    members: Vec<Lock>,
}

/// How one pass over the members ended.
enum Round {
    Taken(Vec<Guard>),
    /// The wait budget ran out.
    OutOfTime,
    /// A fixed lease of a member taken early was about to run out before
    /// the last member was taken: start over.
    Expired,
}

impl MultiLock {
    /// A multi-lock over `locks`, taken in order of their names (members
    /// of equal names keep the order given: list them in the same order,
    /// e.g. by store, wherever the same multi-lock is made).
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] when `locks` is empty, or names one
    /// lock of one client twice (any kind of it: they share the lock).
    /// Two clients of one store are not told apart: a multi-lock over the
    /// same lock through two clients waits for itself.
    pub fn new(locks: impl IntoIterator<Item = Lock>) -> Result<Self> {
        let mut members: Vec<Lock> = locks.into_iter().collect();
        if members.is_empty() {
            return Err(LockError::invalid("a multi-lock needs at least one lock"));
        }
        distinct(
            &members,
            |lock| (lock.inner().id, lock.name().as_str()),
            "multi-lock",
        )?;
        // Stable: equal names keep the caller's order.
        members.sort_by(|a, b| a.name().as_str().cmp(b.name().as_str()));
        Ok(Self { members })
    }

    /// The members, in the order they are taken.
    pub fn locks(&self) -> &[Lock] {
        &self.members
    }

    /// The general acquisition: `opts.wait` is the budget for all members
    /// together; `opts.lease` and `opts.fenced` apply to each member (each
    /// member's guard carries its own token, [`MultiGuard::guards`]).
    /// `Ok(None)`, holding nothing, when the budget ran out.
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] for an explicit `opts.owner` (each
    /// member takes its own owner, or the enclosing
    /// [`crate::Owner::scope`]'s of its client) or a bad lease, before any
    /// I/O; otherwise the first error of a member (what was taken is
    /// released).
    ///
    /// # Cancel safety
    /// As [`MultiLock::lock`].
    pub async fn acquire(&self, opts: AcquireOptions) -> Result<Option<MultiGuard>> {
        let first = self.members[0].name();
        telemetry::acquisition("multi", first, self.acquire_counted(opts)).await
    }

    /// [`MultiLock::acquire`], once its span and metrics are set up, given
    /// up at the wait's deadline plus [`crate::WAIT_OVERSHOOT`] whatever a
    /// member's store does: what was taken is released (in the background,
    /// by the members' dropped guards and calls).
    async fn acquire_counted(&self, opts: AcquireOptions) -> Result<Option<MultiGuard>> {
        match cut_off(opts.wait, Instant::now()) {
            None => self.acquire_rounds(opts).await,
            Some(cut) => tokio::time::timeout_at(cut, self.acquire_rounds(opts))
                .await
                .unwrap_or(Ok(None)),
        }
    }

    /// The rounds of [`MultiLock::acquire`].
    async fn acquire_rounds(&self, opts: AcquireOptions) -> Result<Option<MultiGuard>> {
        if opts.owner.is_some() {
            return Err(LockError::invalid(
                "a multi-lock's members take their own owners; an explicit owner is refused",
            ));
        }
        let deadline = match opts.wait {
            Wait::Forever => None,
            Wait::For(wait) => Some(Instant::now().checked_add(wait).unwrap_or_else(far_future)),
        };
        loop {
            match self.round(&opts, deadline).await? {
                Round::Taken(guards) => return Ok(Some(MultiGuard { guards })),
                Round::OutOfTime => return Ok(None),
                Round::Expired => {
                    tracing::debug!(
                        first = %self.members[0].name(),
                        "a multi-lock member's lease ran out before the last was taken; starting over"
                    );
                }
            }
        }
    }

    /// One pass over the members in order. An error or the drop of this
    /// future drops the guards taken so far, which releases them.
    async fn round(&self, opts: &AcquireOptions, deadline: Option<Instant>) -> Result<Round> {
        let mut taken: Vec<Guard> = Vec::with_capacity(self.members.len());
        for lock in &self.members {
            // With fixed leases, waiting past the first loss is pointless.
            let first_loss = opts
                .lease
                .and_then(|_| taken.iter().map(Guard::lost_at).min());
            let until = match (deadline, first_loss) {
                (Some(d), Some(l)) => Some(d.min(l)),
                (d, l) => d.or(l),
            };
            let wait = match until {
                None => Wait::Forever,
                Some(until) => {
                    let left = until.saturating_duration_since(Instant::now());
                    // Out of time: a member asked with no wait left would be
                    // a try, which only the retry policy bounds. (A try of
                    // the whole multi-lock tries every member.)
                    if left.is_zero() && opts.wait != Wait::For(Duration::ZERO) {
                        return Ok(give_back(taken, deadline).await);
                    }
                    Wait::For(left)
                }
            };
            let member = AcquireOptions {
                wait,
                owner: None,
                ..opts.clone()
            };
            match acquire::acquire_member(lock.target(), member).await? {
                Some(guard) => taken.push(guard),
                None => return Ok(give_back(taken, deadline).await),
            }
        }
        if taken.iter().any(Guard::is_lost) {
            return Ok(give_back(taken, deadline).await);
        }
        Ok(Round::Taken(taken))
    }
}

/// Refuses `members` in which two share a `key`: a member named twice.
pub(crate) fn distinct<'a, K: std::hash::Hash + Eq>(
    members: &'a [Lock],
    key: impl Fn(&'a Lock) -> K,
    what: &str,
) -> Result<()> {
    let mut seen = HashSet::new();
    match members.iter().find(|lock| !seen.insert(key(lock))) {
        Some(lock) => Err(LockError::invalid(format!(
            "lock {:?} of client {} is named twice in one {what}",
            lock.name().as_str(),
            lock.inner().id
        ))),
        None => Ok(()),
    }
}

/// Releases the members of a failed round (their errors are logged: each
/// expires with its lease anyway) and says whether to start over.
async fn give_back(taken: Vec<Guard>, deadline: Option<Instant>) -> Round {
    release_all(taken).await;
    if deadline.is_some_and(|d| Instant::now() >= d) {
        Round::OutOfTime
    } else {
        Round::Expired
    }
}

/// Releases `guards` concurrently, logging failures.
pub(crate) async fn release_all(guards: Vec<Guard>) {
    for (name, result) in unlock_all(guards).await {
        if let Err(e) = result {
            tracing::debug!(lock = %name, %e, "releasing a member of an abandoned acquisition failed");
        }
    }
}

/// Unlocks `guards` concurrently: each lock's name with its result.
pub(crate) async fn unlock_all(guards: Vec<Guard>) -> Vec<(String, Result<()>)> {
    future::join_all(guards.into_iter().map(|guard| async move {
        let name = guard.name().to_string();
        (name, guard.unlock().await)
    }))
    .await
}

/// Every member of a [`MultiLock`], held. Release it with
/// [`MultiGuard::unlock`].
///
/// # Dropping
/// Dropping it drops every member's [`Guard`]: each stops its renewal and
/// is released in the background (see [`Guard`]).
#[must_use = "the locks are released as soon as the guard is dropped"]
#[derive(Debug)]
pub struct MultiGuard {
    /// In acquisition order.
    guards: Vec<Guard>,
}

impl MultiGuard {
    /// The members' guards, in acquisition order (each with its own owner
    /// and, when asked for, fencing token).
    pub fn guards(&self) -> &[Guard] {
        &self.guards
    }

    /// The members' guards, to release them one by one.
    pub fn into_guards(self) -> Vec<Guard> {
        self.guards
    }

    /// Whether any member is known lost ([`Guard::is_lost`]). Cheap; makes
    /// no I/O.
    pub fn is_lost(&self) -> bool {
        self.guards.iter().any(Guard::is_lost)
    }

    /// Resolves when any member is lost ([`Guard::lost`]).
    ///
    /// # Cancel safety
    /// Cancel-safe; it only observes.
    pub async fn lost(&self) {
        future::select_all(self.guards.iter().map(|guard| Box::pin(guard.lost()))).await;
    }

    /// `Err(LockLost)` naming a lost member, once any is lost.
    ///
    /// # Errors
    /// [`LockError::LockLost`].
    pub fn check(&self) -> Result<()> {
        self.guards.iter().try_for_each(Guard::check)
    }

    /// The earliest of the members' [lease deadlines](Guard::lease_deadline):
    /// after it another client may hold one of them.
    pub fn lease_deadline(&self) -> Instant {
        self.guards
            .iter()
            .map(Guard::lease_deadline)
            .min()
            .unwrap_or_else(Instant::now)
    }

    /// Runs `work` while every member is held, then unlocks every member; as
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

    /// Releases every member, concurrently.
    ///
    /// # Errors
    /// The first member's error ([`Guard::unlock`]), after every member was
    /// released or tried.
    ///
    /// # Cancel safety
    /// Every member's release runs to completion even if this future is
    /// dropped.
    pub async fn unlock(self) -> Result<()> {
        unlock_all(self.guards)
            .await
            .into_iter()
            .try_for_each(|(_, result)| result)
    }
}

/// A deadline for waits too long to represent: [`crate::FOREVER`] away.
fn far_future() -> Instant {
    Instant::now() + crate::FOREVER
}

impl crate::backend::held::Held for MultiGuard {
    async fn lost(&self) {
        MultiGuard::lost(self).await;
    }

    fn check(&self) -> Result<()> {
        MultiGuard::check(self)
    }

    async fn release(self) -> Result<()> {
        self.unlock().await
    }
}

crate::handles::shorthands::acquire_shorthands!(MultiLock, MultiGuard, "every member");
