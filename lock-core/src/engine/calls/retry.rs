//! Store calls retried with backoff on transient failures, reusing their
//! request (so its record answers a repeat), and requests made again as
//! new ones after a stale refusal ([`Redate`]).

use std::future::Future;
use std::sync::Arc;

use crate::backend::kind::RequestId;
use crate::engine::detached::Detached;
use crate::engine::state::ClientInner;
use crate::engine::stats::InFlight;
use crate::engine::store_clock::outcome_forgotten;
use crate::error::{LockError, Result};
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
/// after the store refused it as stale (it never ran): every request the
/// engine retries, whatever its kind. A request type gives its stamp (id
/// and deadline), usually with [`redate!`](crate::redate); the one
/// [`Redate::redated`] is here.
pub trait Redate: Clone {
    /// The request's id and deadline, to make it anew.
    fn stamp(&mut self) -> (&mut RequestId, &mut u64);

    /// The request's deadline on the store's clock.
    fn deadline_ms(&self) -> u64;

    /// The same operation as a new request (a fresh id) with deadline
    /// `deadline_ms`: for one refused as stale, which never ran.
    fn redated(mut self, deadline_ms: u64) -> Self {
        let (id, deadline) = self.stamp();
        *id = RequestId::new();
        *deadline = deadline_ms;
        self
    }
}

/// Implements [`Redate`](crate::backend::Redate) for request types with
/// the fields `request_id` and `deadline_ms`: `redate!(MyRequest, …)`.
#[macro_export]
macro_rules! redate {
    ($($request:ty),* $(,)?) => {$(
        impl $crate::backend::Redate for $request {
            fn stamp(&mut self) -> (&mut $crate::backend::RequestId, &mut u64) {
                (&mut self.request_id, &mut self.deadline_ms)
            }

            fn deadline_ms(&self) -> u64 {
                self.deadline_ms
            }
        }
    )*};
}
crate::redate!(crate::backend::kind::ReleaseRequest);
