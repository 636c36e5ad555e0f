//! Store calls that finish even when their caller goes away.
//!
//! Dropping a future that is waiting on the store must not leave a lock held
//! on nobody's behalf: the request may already be on the wire and run. So
//! every acquire and release is a [`Detached`] future: its caller polls it
//! in place (no task of its own, so the usual path costs no hop between
//! tasks and threads), and if the caller is dropped first, the call is
//! handed, as it stands, to a task of the client's runtime that finishes
//! it. An acquisition nobody receives is handed to a [`PendingHold`], whose
//! `Drop` releases it again.
//!
//! Transient failures are retried here, reusing the request id, so the
//! request's record in the store returns the first outcome instead of
//! applying it twice. A request runs only before its deadline and its
//! record outlives that deadline (the `store_clock` module), so this holds
//! however late a copy of the request arrives; a request refused as stale
//! never ran, and a release refused so is made again as a new request.
//!
//! Every release's outcome goes to the client's table of holds (the
//! `holds` module): a release that freed the lock or found it not held
//! ends the owner's hold, and every guard left of it is told its lock is
//! lost. A guard whose hold is already known lost sends no release at all:
//! the owner's count in the store may belong to a newer hold by then.

use std::future::Future;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use tracing::Instrument;

use crate::client::ClientInner;
pub(crate) use crate::detached::Detached;
use crate::error::{LockError, Result};
use crate::holds::Hold;
use crate::kind::{
    AcquireOutcome, AcquireRequest, ExclusiveKind, ReleaseOutcome, ReleaseRequest, RenewTarget,
};
pub(crate) use crate::queue_place::QueueTicket;
use crate::stats::InFlight;
use crate::store_clock::outcome_forgotten;
use crate::telemetry;

/// Decides, after each failure of one operation, whether to try again, and
/// sleeps the backoff when so.
pub(crate) struct Retry<'a> {
    inner: &'a ClientInner,
    /// The operation, for logs and [`telemetry::RETRIES`]'s `op` label.
    what: &'static str,
    /// The kind's name, for [`telemetry::RETRIES`]'s `kind` label.
    kind: &'static str,
    attempt: u32,
}

impl<'a> Retry<'a> {
    pub(crate) fn new(inner: &'a ClientInner, what: &'static str, kind: &'static str) -> Self {
        Self {
            inner,
            what,
            kind,
            attempt: 1,
        }
    }

    /// `true` (after the backoff) when `error` is worth another attempt of
    /// the same request. A request refused as stale is not: it never ran,
    /// and sent again it is refused again (the client learns the store's
    /// clock from the refusal; a new request may be made).
    pub(crate) async fn again(&mut self, error: &LockError) -> bool {
        self.inner.learn_clock(error);
        let policy = &self.inner.config.retry;
        if !error.is_retryable() || error.is_stale_request() || self.attempt >= policy.attempts {
            return false;
        }
        let backoff = policy.backoff(self.attempt);
        tracing::debug!(%error, attempt = self.attempt, ?backoff, "{} failed; retrying", self.what);
        telemetry::retry(self.kind, self.what);
        tokio::time::sleep(backoff).await;
        self.attempt += 1;
        true
    }

    /// `true` (after the backoff) when the policy allows another attempt
    /// with a new request, after one was refused as stale.
    pub(crate) async fn again_for_new_request(&mut self) -> bool {
        let policy = &self.inner.config.retry;
        if self.attempt >= policy.attempts {
            return false;
        }
        tokio::time::sleep(policy.backoff(self.attempt)).await;
        self.attempt += 1;
        true
    }
}

/// The one retried store call: runs `op` until it answers, fails for
/// good, or the retry policy gives up, and returns what the last attempt
/// did. Every attempt is the same request (its record answers a repeat
/// with the first outcome), so a caller that gets a transient error back
/// does not know whether the request ran.
pub(crate) async fn retried<T, F, Fut>(
    inner: &ClientInner,
    what: &'static str,
    kind: &'static str,
    mut op: F,
) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T>>,
{
    let mut retry = Retry::new(inner, what, kind);
    loop {
        match op().await {
            Err(e) if retry.again(&e).await => continue,
            result => return result,
        }
    }
}

/// [`retried`] for a request the store refuses once its deadline passed
/// (it never ran): such a request is made again as a new one, within the
/// same retry policy. `req` is left as last sent. Not when the refusal came
/// so late that the record of a first run may be gone
/// ([`outcome_forgotten`]): the first copy may have run, and a new request
/// would apply the change twice; the stale error is returned then.
pub(crate) async fn retried_redating<R, T, F, Fut>(
    inner: &ClientInner,
    what: &'static str,
    kind: &'static str,
    req: &mut R,
    mut op: F,
) -> Result<T>
where
    R: Redate,
    F: FnMut(R) -> Fut,
    Fut: Future<Output = Result<T>>,
{
    let mut retry = Retry::new(inner, what, kind);
    loop {
        match op(req.clone()).await {
            Err(e) if retry.again(&e).await => continue,
            // Refused as stale: it never ran, so a new request is safe.
            Err(e)
                if e.is_stale_request()
                    && !outcome_forgotten(&e, req.deadline_ms())
                    && retry.again_for_new_request().await =>
            {
                *req = req.clone().redated(inner.request_deadline());
            }
            result => return result,
        }
    }
}

/// [`retried`] as a call that finishes even when its caller goes away
/// ([`Detached`]): what it returns is then dropped in the client's runtime
/// (so an acquisition's outcome that undoes itself on drop is undone).
pub(crate) fn call<T, F, Fut>(
    inner: &Arc<ClientInner>,
    what: &'static str,
    kind: &'static str,
    op: F,
) -> Detached<Result<T>>
where
    T: Send + 'static,
    F: FnMut() -> Fut + Send + 'static,
    Fut: Future<Output = Result<T>> + Send,
{
    let task_inner = Arc::clone(inner);
    let in_flight = InFlight::start(&inner.stats);
    Detached::new(&inner.runtime, in_flight, async move {
        task_inner.check_open()?;
        retried(&task_inner, what, kind, op).await
    })
}

/// Repeats `op` in the background until the store answers it: for a
/// request whose outcome stayed unknown after its retries (the record
/// then gives the first outcome; a repeat past the request's deadline is
/// refused as stale, which proves it never ran). Sleeps a backoff before
/// each repeat, capped at the policy's last; `None` when the client's
/// close ended first (it gave back what it could: the repeats go on while
/// it does, so an acquisition in flight when it began is settled too). Transient failures never end it: however long the store
/// is out of reach, the answer comes.
pub(crate) async fn until_answered<T, F, Fut>(inner: &ClientInner, mut op: F) -> Option<Result<T>>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T>>,
{
    let policy = &inner.config.retry;
    let mut attempt = 1;
    loop {
        tokio::time::sleep(policy.backoff(attempt)).await;
        attempt = (attempt + 1).min(policy.attempts.max(1));
        if inner.is_shut() {
            return None;
        }
        match op().await {
            Err(e) if e.is_stale_request() => {
                inner.learn_clock(&e);
                return Some(Err(e));
            }
            Err(e) if e.is_retryable() => continue,
            result => return Some(result),
        }
    }
}

/// A request that can be made again as a new one (fresh id, new deadline)
/// after the store refused it as stale (it never ran).
pub trait Redate: Clone {
    /// The same operation as a new request with deadline `deadline_ms`.
    fn redated(self, deadline_ms: u64) -> Self;

    /// The request's deadline on the store's clock.
    fn deadline_ms(&self) -> u64;
}

macro_rules! redate {
    ($($request:ty),*) => {$(
        impl Redate for $request {
            fn redated(self, deadline_ms: u64) -> Self {
                <$request>::redated(self, deadline_ms)
            }

            fn deadline_ms(&self) -> u64 {
                self.deadline_ms
            }
        }
    )*};
}
redate!(crate::kind::ReleaseRequest);

/// The result of one acquisition attempt as the waiter loop sees it.
pub(crate) enum Attempt {
    /// Ours; must be turned into a guard or dropped (which releases it).
    Acquired(PendingHold),
    /// Held by someone else.
    Held {
        /// The holder's remaining time to live (for a fair lock, how long
        /// to wait before looking again).
        ttl: Option<Duration>,
    },
    /// The retries failed with the outcome unknown: the request may have
    /// run, or may still run. The wait keeps it while it is live; dropped,
    /// it is settled in the background ([`reconcile`]).
    Unknown(Unsettled),
}

/// What one attempt found, and the wait's place in the queue after it.
pub(crate) struct Landed {
    /// What the attempt found.
    pub(crate) attempt: Result<Attempt>,
    /// The wait's place after the attempt: the one it went out with, or
    /// the one it made by queueing; none once it took the lock (taking it
    /// leaves the queue).
    pub(crate) place: Option<QueueTicket>,
}

/// One attempt (with retries) at taking `req` through `kind`, first sent
/// at `sent`, run to completion even if the caller goes away
/// ([`Detached`]).
///
/// The attempt carries the wait's `place` while it is in flight and hands
/// it back when it lands. So a wait dropped meanwhile gives its place up
/// only after the attempt ran: left first, the attempt (a retry sent after
/// the leave, or a copy the network held) would queue the waiter again, at
/// the tail, until its own outcome left the queue a second time. (An
/// attempt whose outcome stays unknown may still run later; its
/// [`reconcile`] leaves the queue again once the store answered it.)
pub(crate) async fn acquire(
    inner: &Arc<ClientInner>,
    kind: &Arc<dyn ExclusiveKind>,
    req: AcquireRequest,
    sent: Instant,
    place: Option<QueueTicket>,
) -> Landed {
    let task_inner = Arc::clone(inner);
    let in_flight = InFlight::start(&inner.stats);
    let backend = Arc::clone(kind);
    inner.stats.tries.incr();
    Detached::new(
        &inner.runtime,
        in_flight,
        async move {
            let mut place = place;
            // A wait's next attempt after a close began: the wait ends.
            if let Err(closed) = task_inner.check_open() {
                return Landed {
                    attempt: Err(closed),
                    place,
                };
            }
            let tried = retried(&task_inner, "acquire", backend.kind_name(), || {
                backend.try_acquire(&req)
            });
            let outcome = match tried.await {
                // It may have run, or may still run (e.g. queued in a
                // frozen server) and take the lock after we gave up. A
                // request refused as stale did neither.
                Err(e) if e.is_retryable() && !e.is_stale_request() => {
                    let unknown = Unsettled {
                        inner: task_inner,
                        kind: backend,
                        req: Some(req),
                        sent,
                        error: e,
                        wait_won: None,
                        place: None,
                    };
                    return Landed {
                        attempt: Ok(Attempt::Unknown(unknown)),
                        place,
                    };
                }
                Err(e) => {
                    return Landed {
                        attempt: Err(e),
                        place,
                    }
                }
                Ok(outcome) => outcome,
            };
            let (fencing_token, grant) = match outcome {
                AcquireOutcome::Acquired { fencing_token } => (fencing_token, false),
                AcquireOutcome::Claimed => (None, true),
                AcquireOutcome::Held { ttl } => {
                    // A refreshed place is the entry the wait already has.
                    if req.queue_ms.is_some() && place.is_none() {
                        place = Some(QueueTicket::new(task_inner, backend, &req));
                    }
                    return Landed {
                        attempt: Ok(Attempt::Held { ttl }),
                        place,
                    };
                }
            };
            if let Some(place) = place {
                place.disarm();
            }
            // Counted from before the call's own count ends, until a guard
            // owns the hold or its undo has started, so `settle` cannot
            // slip between the two.
            let hold = PendingHold {
                in_flight: InFlight::start(&task_inner.stats),
                inner: task_inner,
                kind: backend,
                req,
                armed: true,
                fencing_token,
                started: sent,
                grant,
            };
            Landed {
                attempt: Ok(Attempt::Acquired(hold)),
                place: None,
            }
        }
        // Its retries log inside the caller's `lock.acquire` span, also
        // once detached.
        .instrument(tracing::Span::current()),
    )
    .await
}

/// A wait that has not ended, or ended without the lock.
pub(crate) const WAITING: u8 = 0;
/// A wait that took the lock by a hold of its own attempt.
pub(crate) const WON: u8 = 1;
/// A wait that took the lock a release granted to its ticket (told by the
/// grant's notice, or claimed by an attempt).
pub(crate) const WON_BY_GRANT: u8 = 2;

/// An acquisition whose outcome is unknown after its retries: it may have
/// run, or may still run.
///
/// Whatever it took belongs to its wait while the wait is live, so the wait
/// keeps it until it is over (it took the lock with a later attempt, gave
/// up, failed, or was dropped), and only then does dropping it settle it in
/// the background ([`reconcile`]). Settled earlier, a background repeat could
/// take a lock granted to the live wait's ticket and release it, or leave
/// the queue under the wait's feet (its place, or a grant, given to the
/// next waiter while the wait goes on). A later attempt of the same wait is
/// a new request of the same owner: if the unknown one took the lock, the
/// later one re-enters it, and the settling releases the extra hold; on a
/// kind that refuses re-entry the later one is refused, and the wait asks
/// its unknown attempts whether the hold is theirs ([`Unsettled::own_hold`]).
pub(crate) struct Unsettled {
    inner: Arc<ClientInner>,
    kind: Arc<dyn ExclusiveKind>,
    req: Option<AcquireRequest>,
    sent: Instant,
    error: LockError,
    /// How its wait ended ([`WAITING`], [`WON`], [`WON_BY_GRANT`]), set by
    /// the wait and read when this is dropped.
    wait_won: Option<Arc<AtomicU8>>,
    /// The place of a wait that ended without the lock, shared by its
    /// unknown attempts: given up once the last of them was answered.
    place: Option<Arc<QueueTicket>>,
}

impl Unsettled {
    /// The error that left the outcome unknown.
    pub(crate) fn error(&self) -> &LockError {
        &self.error
    }

    /// Settles it knowing how its wait ended (`won`, read when this is
    /// dropped; see [`reconcile`] for what each ending changes).
    pub(crate) fn settle_after(&mut self, won: Arc<AtomicU8>) {
        self.wait_won = Some(won);
    }

    /// Asks the store again what this attempt did, for its wait, whose
    /// later attempt was refused as a re-entry: the hold the refusal found
    /// may be this attempt's. The same request is sent again (within the
    /// retry policy): its record answers with its first outcome, or, if it
    /// has not run, it runs now (and is refused, the owner holding the
    /// lock).
    ///
    /// `Ok(Some(hold))` when it took the lock: the hold is the wait's, and
    /// this attempt is settled (dropping it settles nothing more).
    /// `Ok(None)` when it did not: it found the lock held, was refused as a
    /// re-entry itself, or never ran (refused as stale; also past its
    /// record, when that can no longer be told, so the refusal stands and
    /// this attempt is settled after the wait, as before). An error when
    /// the answer is still unknown (a transient error) or the store refused
    /// the request otherwise.
    ///
    /// # Cancel safety
    /// Dropping the future leaves this attempt unsettled, as it was: a copy
    /// of the request sent meanwhile is answered by its record.
    pub(crate) async fn own_hold(&mut self) -> Result<Option<PendingHold>> {
        let Some(req) = &self.req else {
            return Ok(None);
        };
        let kind = Arc::clone(&self.kind);
        let answer = retried(&self.inner, "acquire", kind.kind_name(), || {
            kind.try_acquire(req)
        })
        .await;
        let (fencing_token, grant) = match answer {
            Ok(AcquireOutcome::Acquired { fencing_token }) => (fencing_token, false),
            Ok(AcquireOutcome::Claimed) => (None, true),
            Ok(AcquireOutcome::Held { .. }) => return Ok(None),
            Err(e) if e.is_reentry_refused() || e.is_stale_request() => {
                self.inner.learn_clock(&e);
                return Ok(None);
            }
            Err(e) => return Err(e),
        };
        let Some(req) = self.req.take() else {
            return Ok(None);
        };
        Ok(Some(PendingHold {
            in_flight: InFlight::start(&self.inner.stats),
            inner: Arc::clone(&self.inner),
            kind,
            req,
            armed: true,
            fencing_token,
            started: self.sent,
            grant,
        }))
    }

    /// Gives the place of its wait, which ended without the lock, up only
    /// once this attempt was answered: it may still run, and would queue
    /// the waiter again, at the tail, after an earlier leave.
    pub(crate) fn leave_after(&mut self, place: Arc<QueueTicket>) {
        self.place = Some(place);
    }
}

impl Drop for Unsettled {
    fn drop(&mut self) {
        if let Some(req) = self.req.take() {
            let ended = self
                .wait_won
                .as_ref()
                .map_or(WAITING, |won| won.load(Ordering::Acquire));
            reconcile(
                Arc::clone(&self.inner),
                Arc::clone(&self.kind),
                req,
                self.sent,
                ended,
                self.place.take(),
            );
        }
    }
}

/// Finds out, in the background, whether an acquisition whose outcome is
/// unknown took the lock, and releases it if so. Called only once the wait
/// the request belonged to is over ([`Unsettled`]).
///
/// It repeats the same request until the store answers it: its record
/// returns the first outcome if it ran; if it has not, the repeat runs it
/// (taking the lock, which is then released) or, past the request's
/// deadline, is refused as stale, which proves it never ran and never will
/// (see the `store_clock` module) — unless the store was out of reach
/// until the record of a first run expired ("stale past its record"
/// below). "Held" means it ran without taking the lock, and no copy of it
/// can take it afterwards. So an answer comes however long the store was
/// out of reach; the repeats stop only when the client is closed.
/// How the wait ended (`wait`) decides what an answer means:
/// - "acquired" is a hold of the request's own (the first, or one more on
///   top of the wait's): released.
/// - "claimed" (the lock granted to the wait's ticket) is the very hold the
///   wait holds when it took the lock by that grant ([`WON_BY_GRANT`]):
///   kept; otherwise (the wait gave up, or its own hold is one more on top
///   of this one) released, which gives the grant back.
/// - "stale" past its record (the store was out of reach until the
///   record of a first run, if there was one, expired:
///   [`crate::backend::outcome_forgotten`]) cannot tell whether it ran.
///   When the request's owner was made for its wait alone and the wait
///   gave up, no guard holds anything as that owner, and none ever will:
///   whatever the owner holds of the lock is this request's (or another
///   unknown attempt's of the same wait, settled the same way), so it is
///   released, as "acquired" is. Otherwise (an explicit or scoped owner,
///   or a wait that took the lock) a release could take a hold a guard
///   has, so the hold, if any, is left to its lease, with a warning.
/// - "held" leaves any queue place the request made: with the wait's
///   ticket when the wait gave up, so a grant it never took goes to the
///   next waiter; without it when the wait took the lock, which may be by a
///   grant whose entry the store keeps until its holder releases. A wait
///   that gave up hands over its `place` instead, left once every unknown
///   attempt of it was answered ([`Unsettled::leave_after`]).
///
/// On a kind that keeps one hold per owner
/// ([`ExclusiveKind::one_hold_per_owner`]), a wait that took the lock
/// settles nothing: whatever its unknown attempts took is the one hold its
/// guard has, and a repeat made after the guard let go would take the lock
/// anew, for no one.
fn reconcile(
    inner: Arc<ClientInner>,
    backend: Arc<dyn ExclusiveKind>,
    req: AcquireRequest,
    started: Instant,
    wait: u8,
    place: Option<Arc<QueueTicket>>,
) {
    if wait != WAITING && backend.one_hold_per_owner() && place.is_none() {
        return;
    }
    let runtime = inner.runtime.clone();
    let in_flight = InFlight::start(&inner.stats);
    runtime.spawn(async move {
        let _in_flight = in_flight;
        let answer = until_answered(&inner, || backend.try_acquire(&req)).await;
        match answer {
            None => {
                tracing::warn!(lock = %req.name, "client closed before it could find out whether a failed acquisition took the lock; it expires with its lease");
            }
            Some(Ok(AcquireOutcome::Claimed)) if wait == WON_BY_GRANT => {}
            Some(Ok(AcquireOutcome::Acquired { .. } | AcquireOutcome::Claimed)) => {
                tracing::debug!(lock = %req.name, "a failed acquisition took the lock after all; releasing it");
                release_on_behalf(inner, backend, req, started);
            }
            Some(Err(e)) if outcome_forgotten(&e, req.deadline_ms) => {
                if req.private_owner && wait == WAITING {
                    tracing::debug!(lock = %req.name, "whether a failed acquisition took the lock can no longer be learned (its record expired while the store was out of reach); releasing on its behalf");
                    release_on_behalf(inner, backend, req, started);
                } else {
                    tracing::warn!(lock = %req.name, owner = %req.owner, "whether a failed acquisition took the lock can no longer be learned (its record expired while the store was out of reach); if it did, that hold stays until its lease ends");
                }
            }
            Some(Ok(AcquireOutcome::Held { .. })) => {
                if req.queue_ms.is_some() && place.is_none() {
                    let mut place = QueueTicket::new(inner, backend, &req);
                    if wait != WAITING {
                        place.forget_wait_ticket();
                    }
                    drop(place);
                }
            }
            // Stale within its record's grace: it never ran and never will.
            // Refused as a re-entry (its owner held the lock): it ran and
            // took nothing.
            Some(Err(e)) if e.is_stale_request() || e.is_reentry_refused() => {}
            Some(Err(e)) => {
                tracing::warn!(%e, lock = %req.name, "giving up reconciling a failed acquisition");
            }
        }
        // Before `_in_flight` ends: the leave counts itself from here.
        drop(place);
    });
}

/// Releases the hold an acquisition `req` of `kind` (first sent at
/// `started`) took, or may have taken, when no guard will have it.
fn release_on_behalf(
    inner: Arc<ClientInner>,
    kind: Arc<dyn ExclusiveKind>,
    req: AcquireRequest,
    started: Instant,
) {
    drop(PendingHold {
        in_flight: InFlight::start(&inner.stats),
        inner,
        kind,
        req,
        armed: true,
        fencing_token: None,
        started,
        grant: false,
    });
}

/// One release (with retries) through `kind`, traced as span
/// `lock.release` (INFO; fields `lock`, `kind`, `outcome`). Awaiting the
/// returned future is optional: dropped, it finishes in a task of its own
/// ([`Detached`]), so the release happens either way.
///
/// Its outcome is told to the client's table of holds: a release that
/// freed the lock or found it not held ends the owner's hold, and every
/// guard left of it learns that. `hold` is the generation a guard
/// released; `None` (an unguarded release) means the current one.
///
/// A guard's release whose outcome is still unknown after the retry
/// policy (an outage, a store refusing writes, a failed reconnect) goes on
/// in the background until the store answers ([`release_later`]), so the
/// lock is free soon after the fault ends rather than at the end of its
/// lease; the caller gets the error.
pub(crate) fn release(
    inner: &Arc<ClientInner>,
    kind: &Arc<dyn ExclusiveKind>,
    req: ReleaseRequest,
    hold: Option<Arc<Hold>>,
) -> Detached<Result<ReleaseOutcome>> {
    let until = hold.as_ref().map(|hold| hold.lost_at());
    release_until(inner, kind, req, hold, until)
}

/// [`release`], going on in the background until `until` (`None`: not
/// at all) when its outcome is unknown after the retry policy.
fn release_until(
    inner: &Arc<ClientInner>,
    kind: &Arc<dyn ExclusiveKind>,
    req: ReleaseRequest,
    hold: Option<Arc<Hold>>,
    until: Option<Instant>,
) -> Detached<Result<ReleaseOutcome>> {
    let backend = Arc::clone(kind);
    let task_inner = Arc::clone(inner);
    let in_flight = InFlight::start(&inner.stats);
    let holds = Arc::clone(&inner.holds);
    let span = tracing::info_span!(
        "lock.release",
        lock = %req.name,
        kind = backend.kind_name(),
        outcome = tracing::field::Empty,
    );
    let traced = span.clone();
    let task = async move {
        let mut req = req;
        let kind = backend.kind_name();
        let result = retried_redating(&task_inner, "release", kind, &mut req, |req| {
            let backend = Arc::clone(&backend);
            async move { backend.release(&req).await }
        })
        .await;
        match &result {
            Ok(outcome) => {
                let target = RenewTarget {
                    name: req.name.clone(),
                    owner: req.owner,
                };
                holds.released(&target, backend.as_ref(), hold.as_ref(), *outcome);
            }
            Err(e)
                if e.is_retryable()
                    && !e.is_stale_request()
                    && until.is_some_and(|until| Instant::now() < until) =>
            {
                tracing::warn!(%e, lock = %req.name, "release failed; it goes on in the background until the store answers (or the lock's lease ends)");
                if let Some(until) = until {
                    release_later(&task_inner, &backend, req.clone(), hold.clone(), until);
                }
            }
            Err(e) => {
                tracing::warn!(%e, lock = %req.name, "release failed; the lock expires with its lease");
            }
        }
        traced.record(
            "outcome",
            match &result {
                Ok(ReleaseOutcome::Released) => "released",
                Ok(ReleaseOutcome::StillHeld) => "still_held",
                Ok(ReleaseOutcome::NotHeld) => "not_held",
                Err(_) => "error",
            },
        );
        result
    };
    Detached::new(&inner.runtime, in_flight, task.instrument(span))
}

/// Repeats the release `req` (same request: its record answers a repeat
/// with the first outcome) in a task of its own until the store answers,
/// and tells the table of holds what it did, as [`release`] does.
///
/// Only until `until`, when the hold it releases is reported lost (its
/// lease less the safety margin; renewals stopped when the release began).
/// Past then the store may have expired the hold and the same owner taken
/// the lock anew, and a repeat sent then could end that newer hold; the
/// lease frees the old one anyway. A refusal as stale proves it never ran:
/// it is not made again as a new request (which could run past `until`),
/// and the lease frees the lock.
fn release_later(
    inner: &Arc<ClientInner>,
    kind: &Arc<dyn ExclusiveKind>,
    req: ReleaseRequest,
    hold: Option<Arc<Hold>>,
    until: Instant,
) {
    let in_flight = InFlight::start(&inner.stats);
    let inner = Arc::clone(inner);
    let kind = Arc::clone(kind);
    inner.runtime.clone().spawn(async move {
        let _in_flight = in_flight;
        let answered = until_answered(&inner, || kind.release(&req));
        match tokio::time::timeout_at(until, answered).await {
            Ok(Some(Ok(outcome))) => {
                tracing::debug!(lock = %req.name, ?outcome, "a release retried in the background was answered");
                let target = RenewTarget {
                    name: req.name.clone(),
                    owner: req.owner,
                };
                inner
                    .holds
                    .released(&target, kind.as_ref(), hold.as_ref(), outcome);
            }
            Ok(Some(Err(e))) => {
                tracing::warn!(%e, lock = %req.name, "a release retried in the background was refused; the lock expires with its lease");
            }
            Ok(None) => {
                tracing::debug!(lock = %req.name, "client closed before the store answered a release retried in the background");
            }
            Err(_) => {
                tracing::warn!(lock = %req.name, "the store did not answer a release before the lock's lease ended; the lock expires with it");
            }
        }
    });
}

/// An acquisition that has not been handed to a guard yet. Dropping it
/// releases the hold it stands for.
pub(crate) struct PendingHold {
    inner: Arc<ClientInner>,
    kind: Arc<dyn ExclusiveKind>,
    req: AcquireRequest,
    armed: bool,
    fencing_token: Option<u64>,
    /// When the first attempt was sent: the lease runs from no earlier.
    started: Instant,
    /// The lock a release granted to the wait's ticket.
    grant: bool,
    #[allow(dead_code)] // held for its Drop: counts the hold as in flight
    in_flight: InFlight,
}

impl PendingHold {
    /// The hold a release handed to the wait of `req`
    /// ([`crate::backend::Wake::Granted`]): no call was made for it, and its lease
    /// runs from no earlier than `started`, when the attempt that last
    /// queued the wait was sent (the grant came after that attempt ran).
    pub(crate) fn granted(
        inner: &Arc<ClientInner>,
        kind: &Arc<dyn ExclusiveKind>,
        req: AcquireRequest,
        started: Instant,
    ) -> Self {
        Self {
            in_flight: InFlight::start(&inner.stats),
            inner: Arc::clone(inner),
            kind: Arc::clone(kind),
            req,
            armed: true,
            fencing_token: None,
            started,
            grant: true,
        }
    }

    /// Whether it is the lock a release granted to the wait's ticket.
    pub(crate) fn is_grant(&self) -> bool {
        self.grant
    }

    /// Whether its lease, counted from when it was sent, already reached
    /// the point where a guard of it would be reported lost: its reply
    /// came that late (a store or network slower than the lease, or this
    /// process paused). A guard of it would be lost as it is handed out.
    pub(crate) fn is_overdue(&self) -> bool {
        let lease = Duration::from_millis(self.req.lease_ms);
        self.inner
            .config
            .lease_deadline(self.started, lease)
            .is_lost()
    }

    /// Disarms the drop guard without releasing anything: the hold, if it
    /// is still there, is left to its lease.
    pub(crate) fn forget(mut self) {
        self.armed = false;
    }

    /// Disarms the drop guard and returns what the guard needs.
    pub(crate) fn accept(mut self) -> (AcquireRequest, Option<u64>, Instant) {
        self.armed = false;
        (self.req.clone(), self.fencing_token, self.started)
    }

    /// The kind that took the hold.
    pub(crate) fn kind(&self) -> &Arc<dyn ExclusiveKind> {
        &self.kind
    }

    /// The acquisition that took it.
    pub(crate) fn request(&self) -> &AcquireRequest {
        &self.req
    }

    /// When its first attempt was sent.
    pub(crate) fn started(&self) -> Instant {
        self.started
    }
}

impl Drop for PendingHold {
    fn drop(&mut self) {
        if self.armed {
            let req = &self.req;
            tracing::debug!(lock = %req.name, "acquisition abandoned by its caller; releasing it");
            let undo = ReleaseRequest::new(
                req.name.clone(),
                req.owner,
                req.lease_ms,
                self.inner.request_deadline(),
            )
            .private_owner(req.private_owner);
            // Its lease runs from no earlier than `started`: until it is
            // reported lost, no newer hold of the owner can exist.
            let lease = Duration::from_millis(req.lease_ms);
            let until = self
                .inner
                .config
                .lease_deadline(self.started, lease)
                .lost_at;
            drop(release_until(
                &self.inner,
                &self.kind,
                undo,
                None,
                Some(until),
            ));
        }
    }
}
