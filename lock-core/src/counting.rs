//! The engine's seams for kinds whose handles are not a [`crate::Lock`]
//! (semaphores, the latch): their store calls and waits, on the locks'
//! machinery — the one retried call, the one background settling and the
//! one wait loop. A kind's handle calls these with its client's
//! [`Engine`]; a service needs none of them.
//!
//! # Store calls
//! Every call is retried with backoff on transient failures, reusing its
//! request, so the kind's request record answers a repeat with the first
//! outcome instead of applying it twice. A caller that goes away does not
//! stop the call: its outcome is dropped in the client's runtime, and an
//! acquisition's outcome undoes itself when dropped (the pending permits
//! of each handle), so a cancelled acquisition leaves no permit taken. An
//! acquisition whose outcome stays unknown after the last retry is
//! repeated in the background until the store answers, and undone if it
//! took permits; a release, likewise, until it is done.
//!
//! # Waiting
//! [`wait_for`]: a first attempt, then the wait loop, each look a fresh
//! attempt, riding out store outages (and refusals that prove an attempt
//! did not run) as a lock's waiter does, within the wait's deadline (the
//! `outage` module); [`wait_until`]: the same for a condition that takes
//! nothing. A kind that knows no time to look again (no lease ends)
//! falls back to [`crate::ClientConfig::no_ttl_recheck`].

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::time::Instant;

use crate::client::{ClientInner, Engine};
use crate::connection::Channel;
use crate::detached::Detached;
use crate::error::{LockError, Result};
use crate::name::LockName;
use crate::op;
use crate::options::WAIT_OVERSHOOT;
use crate::outage::Outage;
use crate::store_clock::outcome_forgotten;
use crate::telemetry::{self, Timed};
use crate::wait_loop::{self, Waiting};
use tracing::Instrument;

pub use crate::op::Redate;
pub use crate::stats::InFlight;
pub use crate::wait_loop::Look;
pub use crate::waiter::WakeReader;

/// Runs `op` with the client's retry policy, in the caller's task: for
/// reads, and writes that carry their request id (safe to repeat).
/// `what` and `kind` name it in logs and metrics.
///
/// # Errors
/// [`crate::LockError::Closed`]; `op`'s last error after the retry policy.
pub async fn retried<T, F, Fut>(
    engine: &Engine,
    what: &'static str,
    kind: &'static str,
    op: F,
) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T>>,
{
    engine.check_open()?;
    op::retried(&engine.inner, what, kind, op).await
}

/// Runs `fut` on the client's runtime, counted as in flight until it ends
/// (so [`Engine::settle`] waits for it): a release of a dropped guard.
pub fn spawn<F>(engine: &Engine, fut: F)
where
    F: Future<Output = ()> + Send + 'static,
{
    let in_flight = InFlight::start(&engine.inner.stats);
    engine.inner.runtime.spawn(async move {
        let _in_flight = in_flight;
        fut.await;
    });
}

/// A mark that counts as in flight for [`Engine::settle`] until dropped:
/// an acquisition's outcome not yet the caller's.
pub fn in_flight(engine: &Engine) -> InFlight {
    InFlight::start(&engine.inner.stats)
}

/// A retried call of a counting kind: it finishes even when the caller
/// goes away (in the client's runtime).
///
/// # Errors
/// `op`'s last error after the retry policy.
pub async fn call<T, F, Fut>(engine: &Engine, what: &'static str, op: F) -> Result<T>
where
    T: Send + 'static,
    F: FnMut() -> Fut + Send + 'static,
    Fut: Future<Output = Result<T>> + Send,
{
    op::call(&engine.inner, what, "semaphore", op).await
}

/// [`call`] of `op` on a kind's store `kind` with `arg`: every retry calls
/// `op` again with the same `kind` and `arg` (the same request).
///
/// # Errors
/// `op`'s last error after the retry policy.
pub async fn call_with<K, A, T>(
    engine: &Engine,
    what: &'static str,
    kind: &Arc<K>,
    arg: A,
    op: for<'a> fn(&'a K, &'a A) -> BoxFuture<'a, Result<T>>,
) -> Result<T>
where
    K: Send + Sync + 'static,
    A: Send + Sync + 'static,
    T: Send + 'static,
{
    let kind = Arc::clone(kind);
    let arg = Arc::new(arg);
    call(engine, what, move || {
        let (kind, arg) = (Arc::clone(&kind), Arc::clone(&arg));
        async move { op(&kind, &arg).await }
    })
    .await
}

/// One acquisition attempt (with retries) through `op`, which is the same
/// request every time it is called (same request id). When its outcome
/// stays unknown after the last retry, the request is repeated in the
/// background until the store answers (the `op` module's `until_answered`: its record
/// gives the first outcome, or the repeat runs it, or refuses it as stale:
/// it never ran), and what it got is dropped, which gives the permits
/// back. "Busy" means it took none, and a late original finds the record
/// and takes none either.
///
/// # Cancel safety
/// The attempt finishes in the client's runtime when the future is
/// dropped: permits it took are given back, and an unknown outcome is
/// settled as above all the same (a copy of the request held on the way
/// may still take permits after the caller left).
///
/// # Errors
/// [`crate::LockError::Closed`]; `op`'s last error after the retry policy.
pub async fn acquire<P, F>(engine: &Engine, what: &'static str, op: F) -> Result<Look<P>>
where
    P: Send + 'static,
    F: Fn() -> BoxFuture<'static, Result<Look<P>>> + Send + Sync + 'static,
{
    let inner = &engine.inner;
    inner.check_open()?;
    inner.stats.tries.incr();
    // No earlier than the deadline `op`'s request was dated with.
    let deadline_ms = inner.request_deadline();
    let task_inner = Arc::clone(inner);
    // The settling starts inside the call, which runs on when its caller
    // is dropped: after the caller's `await`, it would be skipped then.
    let call = async move {
        task_inner.check_open()?;
        match op::retried(&task_inner, what, "semaphore", &op).await {
            // The request may still run (a frozen server) and take permits
            // after we gave up.
            Err(e) if e.is_retryable() && !e.is_stale_request() => {
                settle_unknown(&task_inner, op, deadline_ms);
                Err(e)
            }
            result => result,
        }
    };
    Detached::new(&inner.runtime, InFlight::start(&inner.stats), call).await
}

/// Repeats the acquisition `op` whose outcome stayed unknown until the
/// store answers, in a task of its own, and gives back what it took.
/// A count has no owner to release as: when the answer comes so late that
/// the record of a first run may be gone (`deadline_ms`: no earlier than
/// the request's deadline), what it took cannot be given back, and a
/// warning says so.
fn settle_unknown<P, F>(inner: &Arc<ClientInner>, op: F, deadline_ms: u64)
where
    P: Send + 'static,
    F: Fn() -> BoxFuture<'static, Result<Look<P>>> + Send + Sync + 'static,
{
    let in_flight = InFlight::start(&inner.stats);
    let inner = Arc::clone(inner);
    inner.runtime.clone().spawn(async move {
        let _in_flight = in_flight;
        match op::until_answered(&inner, &op).await {
            None => tracing::warn!(
                "client closed before it could find out whether a failed acquisition took permits"
            ),
            // Dropping the permits gives them back.
            Some(Ok(outcome)) => drop(outcome),
            Some(Err(e)) if outcome_forgotten(&e, deadline_ms) => tracing::warn!(
                "whether a failed acquisition took permits can no longer be learned (its record expired while the store was out of reach); if it did, they stay taken (an expirable permit's until its lease ends)"
            ),
            Some(Err(e)) if e.is_stale_request() => {}
            Some(Err(e)) => tracing::warn!(%e, "giving up reconciling a failed acquisition"),
        }
    });
}

/// Gives permits back through `op(req)`: a release that is never lost to a
/// transient fault. Retried as [`call`] is (a request refused as stale is
/// made again as a new one); when the outcome is still unknown after the
/// retry policy, the caller gets the error and the release goes on in a
/// task of its own until the store answers (`until_answered`), as a
/// new request whenever the last was refused as stale, until the client's
/// close is over. So a caller who sees an error must not give the permits back
/// again: they will be. (Unless the store stays out of reach until the
/// request's record may be gone: then whether it ran cannot be learned,
/// and it is not made again, since that could give the permits back twice;
/// a warning says so.)
///
/// # Errors
/// [`crate::LockError::Closed`]; `op`'s error: a retryable one means the
/// release goes on in the background.
pub async fn give_back<R, T, F, Fut>(
    engine: &Engine,
    what: &'static str,
    req: R,
    op: F,
) -> Result<T>
where
    R: Redate + Send + Sync + 'static,
    T: Send + 'static,
    F: Fn(R) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<T>> + Send,
{
    crate::counter::give_back(&engine.inner, what, "semaphore", req, op).await
}

/// The wait of counting kinds and conditions (see the module docs): a
/// first attempt, then the one wait loop (the `wait_loop` module). `attempt`
/// makes and runs one fresh acquisition request; `Ok(None)` when the
/// deadline passed first. Traced and timed as every kind's acquisitions
/// are (spans `lock.acquire` and `lock.wait`, label `kind`).
///
/// # Errors
/// `attempt`'s errors; a subscription the store refused.
pub async fn wait_for<P, A, Fut>(
    engine: &Engine,
    kind: &'static str,
    name: &LockName,
    channel: Channel,
    reader: WakeReader,
    deadline: Option<Instant>,
    attempt: A,
) -> Result<Option<P>>
where
    A: FnMut() -> Fut,
    Fut: Future<Output = Result<Look<P>>>,
{
    let waited = crate::counter::Waited {
        kind,
        name,
        channel,
        reader,
    };
    crate::counter::wait_for(&engine.inner, waited, deadline, attempt).await
}

/// The deadline `wait` from now (`None`: forever).
pub fn deadline(wait: Option<Duration>) -> Option<Instant> {
    crate::counter::deadline(wait)
}

/// Waits until `check` answers `true` (then `Ok(true)`) or `deadline`
/// passes (`Ok(false)`): the wait of kinds whose waiters take nothing,
/// such as a count-down latch's. Check; when that fails, join the
/// channel's shared subscription, then loop: check again (a notice sent
/// between the first check and the subscription is not lost), and sleep
/// until a notice, the deadline, or
/// [`crate::ClientConfig::no_ttl_recheck`] — whichever is first. Nothing
/// in the store expires on its own here, so that interval bounds what a
/// lost notice costs; it is not a poll of the condition's progress.
/// Dropping the future leaves no subscription behind.
///
/// # Errors
/// `check`'s errors; a subscription the store refused;
/// [`crate::LockError::Closed`].
pub async fn wait_until<F, Fut>(
    engine: &Engine,
    kind: &'static str,
    name: &LockName,
    channel: Channel,
    read: WakeReader,
    deadline: Option<Instant>,
    mut check: F,
) -> Result<bool>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<bool>>,
{
    engine.check_open()?;
    let attempt = || {
        let checked = check();
        async move {
            Ok(if checked.await? {
                Look::Got(())
            } else {
                Look::Busy(None)
            })
        }
    };
    Ok(
        wait_for(engine, kind, name, channel, read, deadline, attempt)
            .await?
            .is_some(),
    )
}
