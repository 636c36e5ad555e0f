//! Releases: of a guard's hold, on behalf of an acquisition no guard will
//! have, and repeated in the background until the store answers.

use crate::engine::calls::retry::retried_redating;
use crate::engine::calls::retry::until_answered;
use std::sync::Arc;

use tokio::time::Instant;
use tracing::Instrument;

use crate::backend::kind::{ExclusiveKind, ReleaseOutcome, ReleaseRequest, RenewTarget};
use crate::engine::detached::Detached;
use crate::engine::holds::Hold;
use crate::engine::state::ClientInner;
use crate::engine::stats::InFlight;
use crate::error::Result;

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
pub(crate) fn release_until(
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
        kind = backend.behaviour().name,
        outcome = tracing::field::Empty,
    );
    let traced = span.clone();
    let task = async move {
        let mut req = req;
        let kind = backend.behaviour().name;
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
pub(crate) fn release_later(
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
