//! One acquisition attempt of a lock, and the settling of attempts whose
//! outcome stayed unknown ([`Unsettled`]): what they took is released on
//! nobody's behalf, or handed to the wait that took it.

use crate::engine::calls::pending_hold::release_on_behalf;
use crate::engine::calls::pending_hold::PendingHold;
use crate::engine::calls::retry::retried;
use crate::engine::calls::retry::until_answered;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use tracing::Instrument;

use crate::backend::kind::{AcquireOutcome, AcquireRequest, ExclusiveKind};
use crate::engine::detached::Detached;
use crate::engine::queue_place::QueueTicket;
use crate::engine::state::ClientInner;
use crate::engine::stats::InFlight;
use crate::engine::store_clock::outcome_forgotten;
use crate::error::{LockError, Result};

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
            let tried = retried(&task_inner, "acquire", backend.behaviour().name, || {
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
        let answer = retried(&self.inner, "acquire", kind.behaviour().name, || {
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
/// ([`KindBehaviour::one_hold_per_owner`](crate::backend::KindBehaviour::one_hold_per_owner)), a wait that took the lock
/// settles nothing: whatever its unknown attempts took is the one hold its
/// guard has, and a repeat made after the guard let go would take the lock
/// anew, for no one.
pub(crate) fn reconcile(
    inner: Arc<ClientInner>,
    backend: Arc<dyn ExclusiveKind>,
    req: AcquireRequest,
    started: Instant,
    wait: u8,
    place: Option<Arc<QueueTicket>>,
) {
    if wait != WAITING && backend.behaviour().one_hold_per_owner && place.is_none() {
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
