//! [`Counter`]: the engine's face for counting kinds (the semaphores, the
//! latch), as [`crate::Lock`] is for exclusive ones. A kind implements the
//! few store operations of [`CountingStore`]; its handle is a thin face on
//! a `Counter` over them.
//!
//! # Store calls
//! Every call is retried with backoff on transient failures, reusing its
//! request, so the kind's request record answers a repeat with the first
//! outcome instead of applying it twice. A caller that goes away does not
//! stop the call ([`Counter::call`], [`Counter::give_back`]): it finishes
//! in the client's runtime.
//!
//! # Takes
//! A take ([`Counter::acquire`]) runs detached as well: when its caller
//! goes away, what it took is given back ([`Taken`]). A take whose outcome
//! stays unknown after the last retry is repeated in the background until
//! the store answers (its record gives the first outcome, or the repeat
//! runs it, or refuses it as stale: it never ran), and what it took is
//! given back; "nothing free" means it took nothing, and a late original
//! finds the record and takes nothing either.
//!
//! # Give-backs
//! A give-back is never lost to a transient fault: when its outcome is
//! still unknown after the retry policy, the caller gets the error and the
//! give-back goes on in the background until the store answers, until the
//! client's close is over ([`Counter::give_back`]).
//!
//! # Waiting
//! [`Counter::acquire`]: a first take, then the wait loop, each look a
//! fresh take, riding out store outages (and refusals that prove a take
//! did not run) as a lock's waiter does, within the wait's deadline (the
//! `outage` module); [`Counter::wait_until`]: the same for a condition
//! that takes nothing (looks are reads in the caller's task). A kind that
//! knows no time to look again falls back to
//! [`crate::ClientConfig::no_ttl_recheck`]. Dropping a wait leaves no
//! subscription behind.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::engine::calls;
use crate::engine::client::Engine;
use crate::engine::detached::Detached;
use crate::engine::state::ClientInner;
use crate::engine::stats::InFlight;
use crate::engine::store_clock::outcome_forgotten;
use crate::engine::wait_loop::Look;
use crate::error::Result;
use crate::name::LockName;

mod give_back;
mod leases;
mod store;
mod taken;
mod wait;

pub use leases::{LeaseId, LeaseRenewal, LeaseTarget};
pub use store::CountingStore;
pub use taken::Taken;

/// One named counter of a counting kind `S` on one client's engine: the
/// engine's calls, takes, give-backs and waits for the kind's handle (see
/// the module docs). Cheap to clone.
pub struct Counter<S: CountingStore> {
    engine: Engine,
    name: LockName,
    store: Arc<S>,
}

impl<S: CountingStore> Clone for Counter<S> {
    fn clone(&self) -> Self {
        Self {
            engine: self.engine.clone(),
            name: self.name.clone(),
            store: Arc::clone(&self.store),
        }
    }
}

impl<S: CountingStore> std::fmt::Debug for Counter<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Counter")
            .field("kind", &self.store.kind_name())
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl<S: CountingStore> Counter<S> {
    /// The counter `name` of `store`'s kind on `engine`.
    pub fn new(engine: &Engine, name: LockName, store: Arc<S>) -> Self {
        Self {
            engine: engine.clone(),
            name,
            store,
        }
    }

    /// The client's engine.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The counter's name.
    pub fn name(&self) -> &LockName {
        &self.name
    }

    /// The kind's store operations.
    pub fn store(&self) -> &Arc<S> {
        &self.store
    }

    /// The deadline of a request made now (see
    /// [`Engine::request_deadline`]).
    pub fn request_deadline(&self) -> u64 {
        self.engine.request_deadline()
    }

    fn inner(&self) -> &Arc<ClientInner> {
        &self.engine.inner
    }

    /// Runs `op(store, req)` with the client's retry policy, every retry
    /// with a copy of the same `req` (the same request): a read, or a write that
    /// carries its request id. It finishes in the client's runtime when the
    /// caller goes away. `what` names it in logs and metrics.
    ///
    /// # Errors
    /// [`crate::LockError::Closed`]; `op`'s last error after the retry
    /// policy.
    ///
    /// # Cancel safety
    /// The call runs to completion in the client's runtime when this
    /// future is dropped; its output is dropped there.
    pub async fn call<R, T, F, Fut>(&self, what: &'static str, req: R, op: F) -> Result<T>
    where
        R: Clone + Send + Sync + 'static,
        T: Send + 'static,
        F: Fn(Arc<S>, R) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<T>> + Send,
    {
        let store = Arc::clone(&self.store);
        let kind = store.kind_name();
        calls::call(self.inner(), what, kind, move || {
            op(Arc::clone(&store), req.clone())
        })
        .await
    }

    /// Gives back through `op(store, req)`: a request never lost to a
    /// transient fault (see the module docs). Runs to completion when the
    /// caller goes away.
    ///
    /// # Errors
    /// [`crate::LockError::Closed`] once the client's close is over;
    /// `op`'s error: a retryable one means the give-back goes on in the
    /// background, so do not give back again.
    ///
    /// # Cancel safety
    /// The give-back runs to completion in its own task when this future
    /// is dropped.
    pub async fn give_back<R, T, F, Fut>(&self, what: &'static str, req: R, op: F) -> Result<T>
    where
        R: calls::Redate + Send + Sync + 'static,
        T: Send + 'static,
        F: Fn(Arc<S>, R) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<T>> + Send,
    {
        let store = Arc::clone(&self.store);
        give_back::give_back(self.inner(), what, store.kind_name(), req, move |req| {
            op(Arc::clone(&store), req)
        })
        .await
    }

    /// [`Counter::give_back`] through the kind's own give-back
    /// ([`CountingStore::give_back`]).
    ///
    /// # Errors
    /// As [`Counter::give_back`].
    ///
    /// # Cancel safety
    /// As [`Counter::give_back`].
    pub async fn give_back_one(&self, what: &'static str, req: S::GiveBack) -> Result<S::Given> {
        self.give_back(what, req, |store, req| async move {
            store.give_back(&req).await
        })
        .await
    }

    /// Runs `fut` on the client's runtime, counted as in flight until it
    /// ends (so [`Engine::settle`] waits for it): a give-back of a dropped
    /// guard.
    pub fn spawn<F>(&self, fut: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let in_flight = InFlight::start(&self.inner().stats);
        self.inner().runtime.spawn(async move {
            let _in_flight = in_flight;
            fut.await;
        });
    }

    /// Takes, waiting up to `wait` (`None`: forever; zero: one try):
    /// each look is a fresh take request from `fresh`, run as
    /// [`Counter::take`] runs it; `Ok(None)` when the deadline passed
    /// first. `what` names the take in logs and metrics.
    ///
    /// # Errors
    /// [`crate::LockError::Closed`]; the take's errors after the retry
    /// policy (a store outage is ridden out within the deadline); a
    /// subscription the store refused.
    ///
    /// # Cancel safety
    /// Dropping the future leaves nothing taken (a take on the wire is
    /// given back when it lands) and no subscription behind.
    pub async fn acquire<F>(
        &self,
        what: &'static str,
        wait: Option<Duration>,
        mut fresh: F,
    ) -> Result<Option<Taken<S>>>
    where
        F: FnMut() -> S::Take,
    {
        self.engine.check_open()?;
        let deadline = deadline(wait);
        let waited = self.waited();
        wait::wait_for(self.inner(), waited, deadline, || self.take(what, fresh())).await
    }

    /// One take attempt `req` (with retries), run to completion in the
    /// client's runtime even when the caller goes away: what it took is
    /// then given back. When its outcome stays unknown after the last
    /// retry, it is repeated in the background until the store answers,
    /// and what it took is given back (see the module docs).
    ///
    /// # Errors
    /// [`crate::LockError::Closed`]; the take's last error after the
    /// retry policy.
    ///
    /// # Cancel safety
    /// Dropping the future leaves nothing taken: the take finishes in the
    /// client's runtime, and what it took is given back ([`Taken`]).
    pub async fn take(&self, what: &'static str, req: S::Take) -> Result<Look<Taken<S>>> {
        let inner = self.inner();
        inner.check_open()?;
        inner.stats.tries.incr();
        // No earlier than the deadline `req` was dated with.
        let deadline_ms = inner.request_deadline();
        let (task_inner, store) = (Arc::clone(inner), Arc::clone(&self.store));
        let kind = store.kind_name();
        // The settling starts inside the call, which runs on when its
        // caller is dropped: after the caller's `await`, it would be
        // skipped then.
        let call = async move {
            task_inner.check_open()?;
            match calls::retried(&task_inner, what, kind, || store.try_take(&req)).await {
                Ok(Look::Got(got)) => Ok(Look::Got(Taken::new(task_inner, store, req, got))),
                Ok(Look::Busy(retry_in)) => Ok(Look::Busy(retry_in)),
                // The request may still run (a frozen server) and take
                // after we gave up.
                Err(e) if e.is_retryable() && !e.is_stale_request() => {
                    settle_unknown(task_inner, store, req, deadline_ms);
                    Err(e)
                }
                Err(e) => Err(e),
            }
        };
        Detached::new(&inner.runtime, InFlight::start(&inner.stats), call).await
    }

    /// Waits until the take `req` — a read for a kind whose waiters take
    /// nothing, such as a latch's "is it open" — gets through (`Ok(true)`)
    /// or `wait` runs out (`Ok(false)`; `None`: never). Each look runs in the caller's
    /// task with the client's retry policy (nothing to settle: a read),
    /// through the same wait loop; nothing in the store expires on its
    /// own here, so [`crate::ClientConfig::no_ttl_recheck`] bounds what a
    /// lost notice costs.
    ///
    /// # Errors
    /// The read's errors; a subscription the store refused;
    /// [`crate::LockError::Closed`].
    ///
    /// # Cancel safety
    /// Dropping the future leaves no subscription behind.
    pub async fn wait_until(
        &self,
        what: &'static str,
        wait: Option<Duration>,
        req: S::Take,
    ) -> Result<bool> {
        self.engine.check_open()?;
        let deadline = deadline(wait);
        let (inner, store) = (self.inner(), &self.store);
        let kind = store.kind_name();
        let look = || async {
            inner.check_open()?;
            calls::retried(inner, what, kind, || store.try_take(&req)).await
        };
        let got = wait::wait_for(inner, self.waited(), deadline, look).await?;
        Ok(got.is_some())
    }

    fn waited(&self) -> wait::Waited<'_> {
        let store = Arc::clone(&self.store);
        wait::Waited {
            kind: self.store.kind_name(),
            name: &self.name,
            channel: self.store.channel(&self.name),
            reader: Arc::new(move |payload| store.wake(payload)),
        }
    }
}

/// Repeats the take `req` whose outcome stayed unknown until the store
/// answers, in a task of its own, and gives back what it took. A count
/// has no owner to give back as: when the answer comes so late that the
/// record of a first run may be gone (`deadline_ms`: no earlier than the
/// request's deadline), what it took cannot be given back, and a warning
/// says so.
fn settle_unknown<S: CountingStore>(
    inner: Arc<ClientInner>,
    store: Arc<S>,
    req: S::Take,
    deadline_ms: u64,
) {
    let in_flight = InFlight::start(&inner.stats);
    inner.runtime.clone().spawn(async move {
        let _in_flight = in_flight;
        match calls::until_answered(&inner, || store.try_take(&req)).await {
            None => tracing::warn!(
                "client closed before it could find out whether a failed take took anything"
            ),
            // Dropped, it is given back.
            Some(Ok(Look::Got(got))) => drop(Taken::new(inner, store, req, got)),
            Some(Ok(Look::Busy(_))) => {}
            Some(Err(e)) if outcome_forgotten(&e, deadline_ms) => tracing::warn!(
                "whether a failed take took anything can no longer be learned (its record expired while the store was out of reach); if it did, that stays taken (a leased one's until its lease ends)"
            ),
            Some(Err(e)) if e.is_stale_request() => {}
            Some(Err(e)) => tracing::warn!(%e, "giving up reconciling a failed take"),
        }
    });
}

/// The deadline `wait` from now (`None`: forever).
pub(crate) fn deadline(wait: Option<Duration>) -> Option<Instant> {
    wait.map(|w| {
        Instant::now()
            .checked_add(w)
            .unwrap_or_else(|| Instant::now() + Duration::from_secs(100 * 365 * 24 * 3600))
    })
}
