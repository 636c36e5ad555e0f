//! The give-back of a counting kind: a request that is never lost to a
//! transient fault (see [`give_back`]).

use std::future::Future;
use std::sync::Arc;

use crate::engine::calls::{self, Redate};
use crate::engine::state::ClientInner;
use crate::engine::stats::InFlight;
use crate::engine::store_clock::outcome_forgotten;
use crate::error::{LockError, Result};

/// Gives back through `op(req)`: retried as every call is (a request
/// refused as stale is made again as a new one); when the outcome is still
/// unknown after the retry policy, the caller gets the error and the
/// give-back goes on in a task of its own until the store answers
/// (`until_answered`), as a new request whenever the last was refused as
/// stale, until the client's close is over. So a caller who sees an error
/// must not give back again: it will be. (Unless the store stays out of
/// reach until the request's record may be gone: then whether it ran
/// cannot be learned, and it is not made again, since that could give
/// back twice; a warning says so.)
///
/// The whole call runs in the client's runtime: a caller that goes away
/// does not stop it.
///
/// # Errors
/// [`LockError::Closed`] once the close is over; `op`'s error: a
/// retryable one means the give-back goes on in the background.
pub(crate) async fn give_back<R, T, F, Fut>(
    inner: &Arc<ClientInner>,
    what: &'static str,
    kind: &'static str,
    req: R,
    op: F,
) -> Result<T>
where
    R: Redate + Send + Sync + 'static,
    T: Send + 'static,
    F: Fn(R) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<T>> + Send,
{
    // A give-back still runs while the client closes (a guard dropped
    // then, an acquisition given back as it lands); not once the close is
    // over.
    if inner.is_shut() {
        return Err(LockError::Closed);
    }
    let task_inner = Arc::clone(inner);
    let in_flight = InFlight::start(&inner.stats);
    let (told, answer) = tokio::sync::oneshot::channel();
    inner.runtime.spawn(async move {
        let _in_flight = in_flight;
        let mut req = req;
        let first = calls::retried_redating(&task_inner, what, kind, &mut req, &op).await;
        let error = match first {
            Err(e) if e.is_retryable() => e,
            result => return drop(told.send(result)),
        };
        tracing::warn!(%error, "{what} failed; it goes on in the background until the store answers");
        let _ = told.send(Err(error));
        until_given_back(&task_inner, what, req, &op).await;
    });
    answer.await.unwrap_or(Err(LockError::Closed))
}

/// Repeats the give-back `req` until the store answers (see
/// [`give_back`]).
async fn until_given_back<R, T, F, Fut>(inner: &ClientInner, what: &'static str, mut req: R, op: &F)
where
    R: Redate,
    F: Fn(R) -> Fut,
    Fut: Future<Output = Result<T>>,
{
    loop {
        let answer = calls::until_answered(inner, || op(req.clone())).await;
        match answer {
            None => {
                tracing::warn!("{what}: the client's close ended before the store answered a give-back; what it gives back stays taken");
                return;
            }
            Some(Err(e)) if outcome_forgotten(&e, req.deadline_ms()) => {
                tracing::warn!("{what}: whether the give-back ran can no longer be learned (its record expired while the store was out of reach); it is not made again, which could give back twice: if it did not run, what it gives back stays taken (a leased one's until its lease ends)");
                return;
            }
            Some(Err(e)) if e.is_stale_request() => {
                req = req.redated(inner.request_deadline());
            }
            Some(Err(e)) => {
                tracing::warn!(%e, "{what}: the store refused a give-back retried in the background");
                return;
            }
            Some(Ok(_)) => return,
        }
    }
}
