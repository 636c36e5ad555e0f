//! The wait loop every exclusive kind's handle shares: try, subscribe to
//! the channel the kind names, wait for a notice or the holder's time to
//! live, try again. Under [`WaitStrategy::Poll`](crate::WaitStrategy::Poll) nothing is subscribed:
//! the wait is a backoff step instead (or the time to live, if sooner). Cancel-safe at every await (see the `op` and `waiter`
//! modules); kinds whose waiters queue join the queue from the first
//! attempt, refresh their place while they wait, and leave it when they
//! give up.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use tracing::Instrument;

use crate::backend::kind::AcquireRequest;
use crate::config::options::{cut_off, AcquireOptions, Wait};
use crate::config::{lease_millis, ClientConfig};
use crate::engine::calls::{self, Attempt};
use crate::engine::outage::Outage;
use crate::engine::state::ClientInner;
use crate::engine::wait_loop::{self, Look, Waiting};
use crate::engine::waiter::Subscription;
use crate::error::{LockError, Result};
use crate::handles::guard::Guard;
use crate::handles::target::LockTarget;
use crate::owner::Owner;
use crate::telemetry::{self, Timed};

/// The general acquisition of [`Lock::acquire`](crate::Lock::acquire) (and of every kind's face
/// built on it). `Ok(None)` when the wait ran out.
///
/// Traced as span `lock.acquire` (INFO; fields `lock`, `kind`, `outcome`),
/// its wait as `lock.wait` (DEBUG; also `strategy`), and timed in
/// [`telemetry::ACQUIRE_SECONDS`] and [`telemetry::WAIT_SECONDS`].
pub(crate) async fn acquire(lock: &LockTarget, opts: AcquireOptions) -> Result<Option<Guard>> {
    let kind = telemetry::kind_label(lock.kind().behaviour().name, opts.fenced);
    telemetry::acquisition(kind, lock.name(), acquire_traced(lock, opts, true)).await
}

/// The acquisition of one member of a multi-lock or RedLock: traced in the
/// member's spans, but not counted in the metrics, which count the whole
/// acquisition once.
pub(crate) async fn acquire_member(
    lock: &LockTarget,
    opts: AcquireOptions,
) -> Result<Option<Guard>> {
    acquire_traced(lock, opts, false).await
}

async fn acquire_traced(
    lock: &LockTarget,
    opts: AcquireOptions,
    counted: bool,
) -> Result<Option<Guard>> {
    let inner = lock.inner();
    let kind = lock.kind();
    inner.check_open()?;
    let (lease_ms, watchdog) = match opts.lease {
        None => (inner.watchdog_ms, true),
        Some(lease) => (fixed_lease_millis(&inner.config, lease, "lease")?, false),
    };
    let (owner, private_owner) = resolve_owner(inner, opts.owner)?;
    let start = Instant::now();
    let deadline = match opts.wait {
        Wait::Forever => None,
        Wait::For(wait) => Some(start.checked_add(wait).unwrap_or_else(far_future)),
    };
    // A queueing waiter queues from its first attempt; a try never does.
    let queue_ms = (kind.behaviour().queues_waiters && opts.wait != Wait::For(Duration::ZERO))
        .then_some(inner.waiter_ms);
    // A kind that hands a freed lock to its queue head grants it to this
    // wait's ticket; a fenced wait takes its token itself, so it has none.
    let wait_ticket =
        (queue_ms.is_some() && kind.behaviour().hands_over && !opts.fenced).then(new_wait_ticket);
    let mut waiting = LockWait {
        lock,
        owner,
        private_owner,
        lease_ms,
        fenced: opts.fenced,
        queue_ms,
        wait_ticket,
        watchdog,
        // A waiter rides out store outages within its deadline (see the
        // `outage` module); a try (deadline now) fails as the retry policy
        // says.
        outage: Outage::new(&inner.config.retry, &inner.outages, lock.name(), deadline),
        won: Arc::new(AtomicU8::new(calls::WAITING)),
        unsettled: Vec::new(),
        queued: None,
        last_sent: start,
        cut: cut_off(opts.wait, start),
        answered: false,
        cut_short: false,
    };
    let first = match waiting.look().await {
        Ok(Look::Got(guard)) => return Ok(Some(guard)),
        Ok(Look::Busy(ttl)) => ttl,
        Err(e) => return waiting.ran_out(e),
    };
    if deadline.is_some_and(|d| Instant::now() >= d) {
        return Ok(None);
    }
    // Held: before it waits, a wait for its own task is refused (a queue
    // place taken by the first attempt is left as the wait is dropped).
    refuse_self_deadlock(lock, private_owner)?;

    let label = telemetry::kind_label(kind.behaviour().name, opts.fenced);
    let span = tracing::debug_span!(
        "lock.wait",
        lock = %lock.name(),
        kind = label,
        strategy = if inner.config.wait_strategy.subscribes() { "subscribe" } else { "poll" },
        outcome = tracing::field::Empty,
    );
    let mut timed = counted.then(|| Timed::wait(label, span.clone()));
    // The kind names the channel: the lock's own, shared by its waiters,
    // or (when waiters queue) the waiter's own, on which only the queue
    // head is told.
    let subscribe = || {
        let channel = kind.channel(lock.name(), &owner);
        inner.waiters.join(&inner.connection, kind, channel)
    };
    // Boxed: the wait (subscription, wake-ups, timers) is most of this
    // future's size, and inline it would make every acquisition's future
    // that big, waiting or not (3 976 bytes, moved as the caller's future
    // is built); an acquisition that waits can afford one allocation.
    let result = Box::pin(wait_loop::wait(
        inner,
        &mut waiting,
        first,
        deadline,
        subscribe,
    ))
    .instrument(span)
    .await
    .or_else(|e| waiting.ran_out(e));
    if let Some(timed) = &mut timed {
        timed.finish(&result);
    }
    result
}

/// One exclusive acquisition's side of the wait loop: its requests, its
/// place in the queue, and the attempts whose outcome it has yet to learn.
struct LockWait<'a> {
    lock: &'a LockTarget,
    owner: Owner,
    /// Whether `owner` was made for this wait alone (no explicit owner, no
    /// owner scope): nothing else ever acquires as it.
    private_owner: bool,
    lease_ms: u64,
    fenced: bool,
    queue_ms: Option<u64>,
    wait_ticket: Option<u64>,
    watchdog: bool,
    outage: Outage<'a>,
    /// Set when the wait takes the lock: its unknown attempts then keep any
    /// grant made to its ticket when they are settled (it is the wait's).
    won: Arc<AtomicU8>,
    /// Attempts whose outcome stayed unknown are settled only once this
    /// wait is over (dropping them does it; see `op::Unsettled`): until
    /// then what they did belongs to the live wait.
    unsettled: Vec<calls::Unsettled>,
    /// Our place in the queue, given up when dropped; while an attempt is
    /// in flight, that attempt holds it.
    queued: Option<calls::QueueTicket>,
    /// When the last attempt was first sent: a lock granted to this wait
    /// was granted after that attempt ran, so its lease runs from no
    /// earlier.
    last_sent: Instant,
    /// When a look still in flight is given up: the wait's deadline plus
    /// [`crate::WAIT_OVERSHOOT`] (`None` for a try and a wait without
    /// one). Without it one look of a silent store would take its whole
    /// retry policy (4 × a 3 s command timeout by default) past the wait.
    cut: Option<Instant>,
    /// Whether the store answered a look of this wait: a look cut off
    /// after that ends the wait as one that ran out, else with a timeout.
    answered: bool,
    /// Whether a look was cut off at [`LockWait::cut`].
    cut_short: bool,
}

impl LockWait<'_> {
    /// Each attempt is a new request.
    fn request(&self) -> AcquireRequest {
        AcquireRequest::new(
            self.lock.name().clone(),
            self.owner,
            self.lease_ms,
            self.fenced,
            self.lock.inner().request_deadline(),
        )
        .queue(self.queue_ms)
        .ticket(self.wait_ticket)
        .private_owner(self.private_owner)
    }

    /// The hold one of this wait's unknown attempts took, if the store says
    /// one did: asked after a later attempt was refused as a re-entry (see
    /// `op::Unsettled::own_hold`), newest first (on a kind that refuses
    /// re-entry at most one of them holds the lock; an older one that also
    /// answers "acquired" held it before, and its hold ended). The one that
    /// answers is settled; the others are settled when the wait is over.
    ///
    /// The record of a request outlives its hold when the lease is shorter
    /// than the request's deadline: "acquired" then proves the hold is the
    /// attempt's only while its lease, counted from when it was sent, is
    /// not over. Past that, an owner made for this wait alone still holds
    /// nothing but this wait's holds; an explicit or scoped owner may hold
    /// the lock by a guard of its own, so the refusal stands then (the
    /// attempt's hold, if it is one, ends with its lease, which is over).
    /// A second wait of an owner whose guard holds the lock is so refused
    /// whatever its own attempts did: each of them found the lock held by
    /// that guard, or never ran.
    ///
    /// `Ok(None)` when none took it (the refusal is genuine); an error when
    /// one could not be asked (the answer is still unknown) and none took it.
    async fn own_hold(&mut self) -> Result<Option<calls::PendingHold>> {
        let mut unknown = None;
        for i in (0..self.unsettled.len()).rev() {
            match self.unsettled[i].own_hold().await {
                Ok(Some(hold)) => {
                    drop(self.unsettled.remove(i));
                    if hold.is_overdue() && !self.private_owner {
                        hold.forget();
                        return Ok(None);
                    }
                    return Ok(Some(hold));
                }
                Ok(None) => {}
                Err(e) if e.is_retryable() => {
                    unknown.get_or_insert(e);
                }
                Err(e) => return Err(e),
            }
        }
        unknown.map_or(Ok(None), Err)
    }

    /// How a wait that failed with `error` ends: as one that ran out
    /// (`Ok(None)`) when its last look was cut off at the deadline after
    /// the store had answered it (the lock was held, and the store went
    /// silent or slow since), else with `error`.
    fn ran_out(&self, error: LockError) -> Result<Option<Guard>> {
        if self.cut_short && self.answered {
            Ok(None)
        } else {
            Err(error)
        }
    }

    /// One look, with the kind's retries, riding out outages within the
    /// wait's deadline.
    async fn look_once(&mut self) -> Result<Look<Guard>> {
        let inner = self.lock.inner();
        let outcome = loop {
            let sent = Instant::now();
            // The attempt carries our place while it is in flight (see
            // `op::acquire`): dropped meanwhile, we leave only after it.
            let place = self.queued.take();
            let landed = calls::acquire(inner, self.lock.kind(), self.request(), sent, place).await;
            self.queued = landed.place;
            let error = match landed.attempt {
                Ok(Attempt::Unknown(mut unknown)) => {
                    let error = unknown.error().clone();
                    unknown.settle_after(Arc::clone(&self.won));
                    self.unsettled.push(unknown);
                    error
                }
                Ok(outcome) => {
                    self.outage.over();
                    self.last_sent = sent;
                    self.answered = true;
                    break outcome;
                }
                // The hold the refusal found may be one an earlier attempt
                // of this very wait took, its reply lost.
                Err(error) if error.is_reentry_refused() && !self.unsettled.is_empty() => {
                    match self.own_hold().await {
                        Ok(Some(hold)) => {
                            self.outage.over();
                            self.last_sent = sent;
                            self.answered = true;
                            break Attempt::Acquired(hold);
                        }
                        Ok(None) => return Err(error),
                        // Still unknown: ride it out and look again.
                        Err(unknown) => unknown,
                    }
                }
                Err(error) => error,
            };
            if !self.outage.ride(&error).await {
                return Err(error);
            }
        };
        match outcome {
            // Its guard would be lost as it is handed out, so none is: the
            // hold is released (as an abandoned one is) and the caller told.
            // Not a busy look: a store slower than the lease would make
            // every attempt end so, and the wait would never end.
            Attempt::Acquired(hold) if hold.is_overdue() => {
                tracing::warn!(lock = %self.lock.name(), "the lock was taken, but the reply came after its lease (less the safety margin) ran out; releasing it");
                drop(hold);
                Err(LockError::lock_lost(self.lock.name().as_str()))
            }
            Attempt::Acquired(hold) => self.won(hold).map(Look::Got),
            Attempt::Held { ttl } => Ok(Look::Busy(ttl)),
            // Never returned by the loop above, which keeps unknown outcomes.
            Attempt::Unknown(unknown) => Err(unknown.error().clone()),
        }
    }

    /// Turns a hold into the caller's guard; taking the lock leaves the
    /// queue. The hold joins the client's table before the acquisition
    /// stops counting as in flight, so a close that waited for every
    /// acquisition in flight finds it there; once the client is closing the
    /// table refuses it, and it is given back (dropped) instead:
    /// [`LockError::Closed`].
    fn won(&mut self, hold: calls::PendingHold) -> Result<Guard> {
        let inner = self.lock.inner();
        let registered = Guard::register(
            inner,
            hold.kind(),
            hold.request(),
            hold.started(),
            self.watchdog,
        );
        let Some((registered, deadline)) = registered else {
            tracing::debug!(lock = %self.lock.name(), "the lock was taken while the client closed; giving it back");
            drop(hold);
            return Err(LockError::Closed);
        };
        if let Some(place) = self.queued.take() {
            place.disarm();
        }
        let ended = if hold.is_grant() {
            calls::WON_BY_GRANT
        } else {
            calls::WON
        };
        self.won.store(ended, Ordering::Release);
        let (req, fencing_token, _) = hold.accept();
        Ok(Guard::new(
            Arc::clone(inner),
            registered,
            &req,
            fencing_token,
            deadline,
            self.watchdog,
        ))
    }
}

impl Drop for LockWait<'_> {
    /// A wait that ended without the lock while attempts of it are still
    /// unknown gives its place up only once they were answered: one of
    /// them may still run, and would queue the waiter again, at the tail,
    /// after an earlier leave.
    fn drop(&mut self) {
        if self.unsettled.is_empty() {
            return;
        }
        if let Some(place) = self.queued.take() {
            let place = Arc::new(place);
            for unknown in &mut self.unsettled {
                unknown.leave_after(Arc::clone(&place));
            }
        }
    }
}

impl Waiting for LockWait<'_> {
    type Got = Guard;

    /// One look, given up at the wait's cut-off (its attempt in flight,
    /// detached, then finishes in the background: a hold it takes is
    /// released, an unknown outcome settled; see `engine/calls`).
    async fn look(&mut self) -> Result<Look<Guard>> {
        let Some(cut) = self.cut else {
            return self.look_once().await;
        };
        // Boxed: the timer would make every acquisition's future bigger,
        // timed or not (see `acquire_traced`); a timed one affords it.
        match Box::pin(tokio::time::timeout_at(cut, self.look_once())).await {
            Ok(look) => look,
            // An error, not a busy look, also when the wait ends as one
            // that ran out (`ran_out`): a look that was cut did not use
            // the wake-up it may have been given, which the wait loop then
            // passes on.
            Err(_) => {
                self.cut_short = true;
                Err(LockError::timeout(format!(
                    "lock {:?}: the store did not answer within the wait",
                    self.lock.name().as_str()
                )))
            }
        }
    }

    /// Handed over by the release itself: ours without asking.
    fn handed(&mut self, subscription: &Subscription) -> Option<Result<Guard>> {
        let ticket = self.wait_ticket?;
        if !subscription.take_grant(ticket) {
            return None;
        }
        let inner = self.lock.inner();
        inner.stats.grants.incr();
        let hold =
            calls::PendingHold::granted(inner, self.lock.kind(), self.request(), self.last_sent);
        Some(self.won(hold))
    }

    /// A queued waiter looks again (refreshing its place) before the
    /// place could expire; a kind others release silently says how soon
    /// to look again ([`KindBehaviour::recheck_within`](crate::backend::KindBehaviour::recheck_within)).
    fn longest_sleep(&self) -> Option<Duration> {
        let queued = self
            .queue_ms
            .map(|_| self.lock.inner().config.waiter_timeout / 3);
        let kind = self.lock.kind().behaviour().recheck_within;
        queued.into_iter().chain(kind).min()
    }

    /// A queued waiter's look keeps its place: never skipped.
    fn may_skip_first_look(&self) -> bool {
        !self.lock.kind().behaviour().queues_waiters
    }
}

/// Refuses a plain acquisition (`private_owner`) whose first attempt
/// found the lock held, when the hold is its own task's (or, outside any
/// task, its own thread's: see `holds::TaskKey`) by a plain acquisition
/// ([`LockError::SelfDeadlock`]): each plain acquisition is an owner of
/// its own, so it would wait for itself forever. Checked only then: a free
/// lock costs no lookup, and a hold the client still lists but the store
/// no longer has (force-unlocked, not yet found out) refuses nothing. A try
/// that does not wait cannot hang, and answers "held" before this. One
/// lookup in the client's table of holds, by lock name.
fn refuse_self_deadlock(lock: &LockTarget, private_owner: bool) -> Result<()> {
    if !private_owner {
        return Ok(());
    }
    let Some(task) = crate::engine::holds::TaskKey::current() else {
        return Ok(());
    };
    if lock
        .inner()
        .holds
        .held_by_task(task, lock.name(), lock.kind().as_ref())
    {
        return Err(LockError::SelfDeadlock {
            name: lock.name().as_str().to_owned(),
        });
    }
    Ok(())
}

/// The owner to acquire as, and whether it was made for this acquisition
/// alone (neither given nor the scope's).
fn resolve_owner(inner: &ClientInner, explicit: Option<Owner>) -> Result<(Owner, bool)> {
    match explicit {
        Some(owner) if owner.client_id() != inner.id => Err(LockError::invalid(format!(
            "owner {owner} belongs to another client (this client is {})",
            inner.id
        ))),
        Some(owner) => Ok((owner, false)),
        None => Ok(Owner::current()
            .filter(|o| o.client_id() == inner.id)
            .map_or_else(|| (inner.new_owner(), true), |scoped| (scoped, false))),
    }
}

/// A fixed lease in milliseconds, refused when it is not longer than its
/// safety margin: its guard would be lost before it was handed out. `what`
/// names it in errors (`"lease"`, `"permit lease"`).
///
/// # Errors
/// [`LockError::InvalidArgument`] for a zero, over-long or too short lease.
pub fn fixed_lease_millis(config: &ClientConfig, lease: Duration, what: &str) -> Result<u64> {
    let ms = lease_millis(lease, what)?;
    let lease = Duration::from_millis(ms);
    let margin = config.safety_margin(lease);
    if lease <= margin {
        return Err(LockError::invalid(format!(
            "{what} of {lease:?} is not longer than its safety margin of {margin:?} \
             (lease/100 + 2 ms + loss_margin), so it would be lost at once: \
             use a longer lease or a smaller loss_margin"
        )));
    }
    Ok(ms)
}

/// A random ticket for one wait of a kind that hands over (never 0, which
/// the store would not tell from "none").
fn new_wait_ticket() -> u64 {
    uuid::Uuid::new_v4().as_u64_pair().0.max(1)
}

/// A deadline for waits too long to represent: [`crate::FOREVER`] away.
fn far_future() -> Instant {
    Instant::now() + crate::FOREVER
}
