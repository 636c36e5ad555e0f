//! The engine of the counting kinds (semaphores): their store calls and
//! their wait loop, on the same machinery as the locks'.
//!
//! # Store calls
//! Every call runs in a task of its own ([`call`]), retried with backoff
//! on transient failures and reusing its request, so the kind's request
//! record answers a repeat with the first outcome instead of applying it
//! twice. A caller that goes away does not stop the call: its outcome is
//! dropped in the task, and an acquisition's outcome undoes itself when
//! dropped (the pending permits of each handle), so a cancelled
//! acquisition leaves no permit taken. An acquisition whose outcome stays
//! unknown after the last retry is repeated in the background until the
//! record answers ([`Reconcile`]), and undone if it took permits.
//!
//! # Waiting
//! [`wait_for`] is the shared wait loop of `wait.rs` for kinds that hold
//! counts rather than holds: try; subscribe to the kind's channel; then
//! register for a wake-up, try again, and sleep until a notice, the time
//! the kind said to look again (a permit's lease end), or the caller's
//! deadline. Never a poll on a fixed interval: a kind that knows no time to
//! look again falls back to [`crate::ClientConfig::no_ttl_recheck`], as a
//! lock without expiry does, which bounds what a lost notice costs. A
//! waiter woken but gone before it used its wake-up passes it on.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::time::Instant;

use crate::client::ClientInner;
use crate::connection::Channel;
use crate::error::Result;
use crate::op::{join_error, Retry};
use crate::stats::{InFlight, Parked};
use crate::wait::notice;
use crate::wait_strategy::WaitStrategy;
use crate::waiter::{disarm, WakeBaton, WakeReader};
use tokio::sync::Notify;

/// What one acquisition attempt of a counting kind found.
#[derive(Debug)]
pub(crate) enum Try<P> {
    /// Taken: `P` undoes the acquisition when dropped unless accepted.
    Got(P),
    /// Not now; look again after this long at the latest (`None`: the kind
    /// knows no time, only a notice tells).
    Busy(Option<Duration>),
}

/// Runs `op` in its own task with the client's retry policy; the task
/// finishes even when the caller goes away.
pub(crate) async fn call<T, F, Fut>(
    inner: &Arc<ClientInner>,
    what: &'static str,
    op: F,
) -> Result<T>
where
    T: Send + 'static,
    F: Fn() -> Fut + Send + 'static,
    Fut: Future<Output = Result<T>> + Send,
{
    inner.check_open()?;
    let task_inner = Arc::clone(inner);
    let in_flight = InFlight::start(&inner.stats);
    let task = inner.runtime.spawn(async move {
        let _in_flight = in_flight;
        let mut retry = Retry::new(&task_inner, what, "semaphore");
        loop {
            match op().await {
                Err(e) if retry.again(&e).await => continue,
                result => return result,
            }
        }
    });
    task.await.map_err(join_error)?
}

/// One acquisition attempt (with retries) through `op`, which is the same
/// request every time it is called (same request id). When its outcome
/// stays unknown after the last retry, the request is repeated in the
/// background within the record's life, and any permits it took are given
/// back by dropping them.
pub(crate) async fn acquire<P, F>(
    inner: &Arc<ClientInner>,
    what: &'static str,
    op: F,
) -> Result<Try<P>>
where
    P: Send + 'static,
    F: Fn() -> BoxFuture<'static, Result<Try<P>>> + Send + Sync + 'static,
{
    inner.check_open()?;
    let op = Arc::new(op);
    let task_inner = Arc::clone(inner);
    let in_flight = InFlight::start(&inner.stats);
    let task = inner.runtime.spawn(async move {
        let _in_flight = in_flight;
        let mut retry = Retry::new(&task_inner, what, "semaphore");
        loop {
            match op().await {
                Err(e) if retry.again(&e).await => continue,
                Err(e) if e.is_retryable() && !e.is_stale_request() => {
                    // The request may still run (a frozen server) and take
                    // permits after we gave up.
                    Reconcile::spawn(&task_inner, op);
                    return Err(e);
                }
                result => return result,
            }
        }
    });
    inner.stats.tries.incr();
    task.await.map_err(join_error)?
}

/// Finds out whether an acquisition whose outcome is unknown took permits,
/// by repeating it until the store answers (its record gives the first
/// outcome, or the repeat runs it, or refuses it as stale: it never ran),
/// and drops what it got, which gives it back. "Busy" means it did not
/// take any, and a late original finds the record and takes none. The
/// repeats stop only when the client is closed.
struct Reconcile;

impl Reconcile {
    fn spawn<P, F>(inner: &Arc<ClientInner>, op: Arc<F>)
    where
        P: Send + 'static,
        F: Fn() -> BoxFuture<'static, Result<Try<P>>> + Send + Sync + 'static,
    {
        let inner = Arc::clone(inner);
        let in_flight = InFlight::start(&inner.stats);
        let runtime = inner.runtime.clone();
        runtime.spawn(async move {
            let _in_flight = in_flight;
            let mut attempt = 1;
            loop {
                tokio::time::sleep(inner.config.retry.backoff(attempt)).await;
                attempt = (attempt + 1).min(inner.config.retry.attempts.max(1));
                if inner.is_closed() {
                    tracing::warn!("client closed before it could find out whether a failed acquisition took permits");
                    return;
                }
                match op().await {
                    // Dropping the permits gives them back.
                    Ok(outcome) => return drop(outcome),
                    Err(e) if e.is_stale_request() => return inner.learn_clock(&e),
                    Err(e) if e.is_retryable() => continue,
                    Err(e) => {
                        tracing::warn!(%e, "giving up reconciling a failed acquisition");
                        return;
                    }
                }
            }
        });
    }
}

/// A request that can be made again as a new one (fresh id, new deadline)
/// after the store refused it as stale (it never ran).
pub(crate) trait Redate: Clone + Send + 'static {
    /// The same operation as a new request with deadline `deadline_ms`.
    fn redated(self, deadline_ms: u64) -> Self;
}

macro_rules! redate {
    ($($request:ty),*) => {$(
        impl Redate for $request {
            fn redated(self, deadline_ms: u64) -> Self {
                <$request>::redated(self, deadline_ms)
            }
        }
    )*};
}
redate!(
    crate::semaphore_kind::PermitRequest,
    crate::semaphore_kind::LeaseRelease,
    crate::semaphore_kind::LeasesRelease
);

/// Gives permits back through `op(req)`: a release that is never lost to a
/// transient fault. Retried as [`call`] does; when the outcome is still
/// unknown after the retry policy, the caller gets the error and the
/// release goes on in a task of its own until the store answers: the same
/// request while its record may answer, a new one once the store refused
/// it as stale (it never ran), until the client is closed. So a caller who
/// sees an error must not give the permits back again: they will be.
pub(crate) async fn give_back<R, T, F, Fut>(
    inner: &Arc<ClientInner>,
    what: &'static str,
    req: R,
    op: F,
) -> Result<T>
where
    R: Redate,
    T: Send + 'static,
    F: Fn(R) -> Fut + Send + 'static,
    Fut: Future<Output = Result<T>> + Send,
{
    inner.check_open()?;
    let task_inner = Arc::clone(inner);
    let in_flight = InFlight::start(&inner.stats);
    let (told, answer) = tokio::sync::oneshot::channel();
    inner.runtime.spawn(async move {
        let _in_flight = in_flight;
        let mut told = Some(told);
        let mut req = req;
        let mut retry = Retry::new(&task_inner, what, "semaphore");
        let mut background = 1;
        loop {
            let error = match op(req.clone()).await {
                Err(e) if e.is_retryable() => e,
                result => {
                    if let Some(told) = told.take() {
                        let _ = told.send(result);
                    } else if let Err(e) = result {
                        tracing::warn!(%e, "{what}: the store refused a release retried in the background");
                    }
                    return;
                }
            };
            if error.is_stale_request() {
                task_inner.learn_clock(&error);
                req = req.redated(task_inner.request_deadline());
            }
            if told.is_some() {
                let again = if error.is_stale_request() {
                    retry.again_for_new_request().await
                } else {
                    retry.again(&error).await
                };
                if again {
                    continue;
                }
            }
            if let Some(told) = told.take() {
                tracing::warn!(%error, "{what} failed; it goes on in the background until the store answers");
                let _ = told.send(Err(error));
            }
            if task_inner.is_closed() {
                tracing::warn!("{what}: client closed before the store answered a release; those permits stay taken");
                return;
            }
            tokio::time::sleep(task_inner.config.retry.backoff(background)).await;
            background = (background + 1).min(task_inner.config.retry.attempts.max(1));
        }
    });
    answer.await.unwrap_or(Err(crate::LockError::Closed))
}

/// The shared wait loop for counting kinds and conditions (see the module
/// docs); the latch's wait is one too ([`crate::condition`]). `attempt`
/// makes and runs one fresh acquisition request; `Ok(None)` when the
/// deadline passed first. Honours the client's
/// [`WaitStrategy`](crate::WaitStrategy): a polling waiter never
/// subscribes and looks again after each step of its backoff.
pub(crate) async fn wait_for<P, A, Fut>(
    inner: &Arc<ClientInner>,
    channel: Channel,
    reader: WakeReader,
    deadline: Option<Instant>,
    mut attempt: A,
) -> Result<Option<P>>
where
    A: FnMut() -> Fut,
    Fut: Future<Output = Result<Try<P>>>,
{
    if let Try::Got(p) = attempt().await? {
        return Ok(Some(p));
    }
    if deadline.is_some_and(|d| Instant::now() >= d) {
        return Ok(None);
    }
    let mut poll = match inner.config.wait_strategy {
        WaitStrategy::Subscribe => None,
        WaitStrategy::Poll(backoff) => Some(backoff.steps()),
    };
    let subscription = poll.is_none().then(|| {
        inner
            .waiters
            .join_with(&inner.connection, reader, channel.clone())
    });
    if let Some(subscription) = &subscription {
        if !subscription.confirmed_by(deadline).await? {
            return Ok(None);
        }
    }
    let notify = subscription.as_ref().map(|s| Arc::clone(&s.notify));
    let mut baton = notify.clone().map(WakeBaton::new);
    // Permits may have come back between the first attempt and the
    // subscription, unseen: always try again once subscribed.
    loop {
        let notified = notify.as_deref().map(Notify::notified);
        tokio::pin!(notified);
        // Register before the attempt: a notice arriving while it is in
        // flight must still wake us.
        if let Some(notified) = notified.as_mut().as_pin_mut() {
            notified.enable();
        }
        let retry_in = match attempt().await? {
            Try::Got(p) => {
                disarm(&mut baton);
                return Ok(Some(p));
            }
            Try::Busy(retry_in) => {
                // Someone else got the permits; their release tells.
                disarm(&mut baton);
                retry_in
            }
        };
        let now = Instant::now();
        if deadline.is_some_and(|d| now >= d) {
            return Ok(None);
        }
        let mut wait = retry_in
            .unwrap_or(inner.config.no_ttl_recheck)
            .max(Duration::from_millis(1));
        if let Some(steps) = &mut poll {
            wait = wait.min(steps.next_sleep());
        }
        let mut until = now + wait;
        if let Some(d) = deadline {
            until = until.min(d);
        }
        let _parked = Parked::start(&inner.stats);
        tokio::select! {
            _ = notice(notified.as_mut()) => {
                inner.stats.wakeups.incr();
                if let Some(baton) = &mut baton {
                    baton.arm();
                }
            }
            _ = tokio::time::sleep_until(until) => {}
        }
    }
}

/// The deadline `wait` from now (`None`: forever).
pub(crate) fn deadline(wait: Option<Duration>) -> Option<Instant> {
    wait.map(|w| {
        Instant::now()
            .checked_add(w)
            .unwrap_or_else(|| Instant::now() + Duration::from_secs(100 * 365 * 24 * 3600))
    })
}
