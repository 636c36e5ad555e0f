//! What a client's close gives back ([`crate::backend::Engine::close`]).
//!
//! # The order, and why
//! 1. The client is marked closed before this runs: no acquisition
//!    starts any more.
//! 2. The tables of what the live guards hold (locks: the `holds` module;
//!    leased permits: `permit_leases`; counted permits: `live_permits`)
//!    are closed and emptied in one step each, and every guard and permit
//!    is told it is lost. Closed first, before waiting for anything in
//!    flight: an acquisition landing afterwards (one in flight when the
//!    close began, or a lock a release handed to a waiter of this client)
//!    finds its table closed and gives its hold back itself, so nothing is
//!    left held that no one will release.
//! 3. Each entry is given back in a task of its own, counted as in flight:
//!    a lock by releases of its owner until the store says the owner holds
//!    nothing (re-entrant holds are one count per hold), a permit by id, a
//!    count by its guard's own release. Transient failures are retried
//!    with the policy's backoff until the close's bound
//!    ([`crate::ClientConfig::close_timeout`]) runs out.
//! 4. The close waits for everything in flight ([`crate::backend::Engine::settle`]),
//!    within that bound: these give-backs, the releases of guards dropped
//!    before, the undoing of abandoned acquisitions.
//!
//! Every give-back is of this client's own owners or permit ids, and no
//! new hold of them can start once the tables are closed, so none can
//! take anything that is not the client's.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::backend::kind::{ReleaseOutcome, ReleaseRequest, RequestId};
use crate::engine::calls;
use crate::engine::holds::Hold;
use crate::engine::live_permits::GiveBack;
use crate::engine::permit_leases::PermitHold;
use crate::engine::state::ClientInner;
use crate::engine::stats::InFlight;

/// Steps 2 to 4 of the close (see the module docs). `left` counts the
/// entries not given back yet, for the close's warning when its bound
/// runs out first.
pub(crate) async fn give_back_all(inner: &Arc<ClientInner>, left: Arc<AtomicUsize>) {
    let holds = inner.holds.close();
    let permits = inner.permits.close();
    let counted = inner.live_permits.close();
    left.store(
        holds.len() + permits.len() + counted.len(),
        Ordering::Release,
    );
    if !holds.is_empty() || !permits.is_empty() || !counted.is_empty() {
        tracing::debug!(
            locks = holds.len(),
            permits = permits.len() + counted.len(),
            "close: giving back what the client holds"
        );
    }
    for hold in holds {
        spawn(inner, &left, hold_given_back(Arc::clone(inner), hold));
    }
    for lease in permits {
        spawn(inner, &left, permit_given_back(Arc::clone(inner), lease));
    }
    for give_back in counted {
        spawn(inner, &left, counted_given_back(give_back));
    }
    inner.stats.idle().await;
}

/// Runs one give-back in a task of its own, counted as in flight, and
/// counts it off `left` when it succeeded.
fn spawn<F>(inner: &ClientInner, left: &Arc<AtomicUsize>, given_back: F)
where
    F: std::future::Future<Output = bool> + Send + 'static,
{
    let in_flight = InFlight::start(&inner.stats);
    let left = Arc::clone(left);
    inner.runtime.spawn(async move {
        let _in_flight = in_flight;
        if given_back.await {
            left.fetch_sub(1, Ordering::AcqRel);
        }
    });
}

/// Sleeps the retry policy's backoff before repeat `attempt` (capped at
/// its last); the next attempt's number.
async fn backoff(inner: &ClientInner, attempt: u32) -> u32 {
    let policy = &inner.config.retry;
    tokio::time::sleep(policy.backoff(attempt)).await;
    (attempt + 1).min(policy.attempts.max(1))
}

/// Releases `hold`'s owner until the store says it holds nothing of the
/// lock; whether that was reached before the close ran out of time.
async fn hold_given_back(inner: Arc<ClientInner>, hold: Arc<Hold>) -> bool {
    let mut attempt = 1;
    while !inner.is_shut() {
        let req = ReleaseRequest::new(
            hold.target.name.clone(),
            hold.target.owner,
            inner.watchdog_ms,
            inner.request_deadline(),
        )
        .private_owner(hold.is_private());
        match calls::release(&inner, &hold.kind, req, None).await {
            // One of the owner's re-entrant holds: the next goes too.
            Ok(ReleaseOutcome::StillHeld) => attempt = 1,
            Ok(ReleaseOutcome::Released | ReleaseOutcome::NotHeld) => return true,
            Err(e) if e.is_retryable() => attempt = backoff(&inner, attempt).await,
            Err(e) => {
                tracing::warn!(%e, lock = %hold.target.name, "close: the store refused a release; the lock expires with its lease");
                return false;
            }
        }
    }
    false
}

/// Gives back a leased permit by id; whether that was done before the
/// close ran out of time. A repeat of a release by id gives nothing back
/// twice (the id is taken once), so a request refused as stale is simply
/// made again.
async fn permit_given_back(inner: Arc<ClientInner>, lease: Arc<PermitHold>) -> bool {
    let target = lease.target().clone();
    let (mut request_id, mut deadline_ms) = (RequestId::new(), inner.request_deadline());
    let mut attempt = 1;
    while !inner.is_shut() {
        let kind = &lease.kind;
        let released = calls::retried(&inner, "release a permit", lease.kind_name(), || {
            kind.release(&target, request_id, deadline_ms)
        })
        .await;
        match released {
            Ok(_) => return true,
            Err(e) if e.is_stale_request() => {
                (request_id, deadline_ms) = (RequestId::new(), inner.request_deadline());
            }
            Err(e) if e.is_retryable() => attempt = backoff(&inner, attempt).await,
            Err(e) => {
                tracing::warn!(%e, counter = %target.name, id = %target.id, "close: the store refused a permit's release; it comes back with its lease");
                return false;
            }
        }
    }
    false
}

/// Gives back a guard's counted permits by its own release, which goes on
/// in the background through transient faults until the close's end.
async fn counted_given_back(give_back: GiveBack) -> bool {
    match give_back().await {
        Ok(()) => true,
        Err(e) => {
            tracing::debug!(%e, "close: giving back counted permits did not finish at once");
            false
        }
    }
}
