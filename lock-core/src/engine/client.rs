//! [`Engine`]: the machinery of one client (one per process, or per
//! store), shared by every task and every kind's handles.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use uuid::Uuid;

use crate::backend::connection::{Connection, Notice, NoticeSink};
use crate::config::{lease_millis, ClientConfig};
use crate::engine::holds::Holds;
use crate::engine::live_permits::LivePermits;
use crate::engine::permit_leases::PermitLeases;
use crate::engine::state::ClientInner;
use crate::engine::stats::{ClientStats, Stats};
use crate::engine::store_clock::StoreClock;
use crate::engine::waiter::WaiterRegistry;
use crate::engine::watchdog::Watchdog;
use crate::error::{LockError, Result};
use crate::owner::Owner;

/// The engine of one lock client: a client id, one connection to a store,
/// the registry of waiters and the watchdog, shared by the handles of every
/// kind. A deployment's client (`lock_redis::LockClient`) wraps one and
/// binds its kinds to it; the engine itself names no kind: its handle
/// makers take the kind ([`Engine::lock`], [`Engine::fenced_lock`]). Cheap
/// to clone; clones share everything.
///
/// ```
/// # use std::sync::Arc;
/// # use lock_core::ClientConfig;
/// # use lock_core::backend::Engine;
/// # use lock_core::backend::{Connection, ExclusiveKind};
/// # async fn demo(connection: Arc<dyn Connection>, kind: Arc<dyn ExclusiveKind>) -> lock_core::Result<()> {
/// let engine = Engine::new(connection, ClientConfig::default())?;
/// let guard = engine.lock("orders:42", kind)?.lock().await?;
/// // … critical section …
/// guard.unlock().await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Engine {
    pub(crate) inner: Arc<ClientInner>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("id", &self.inner.id)
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

impl Engine {
    /// Creates an engine over `connection`, with a fresh client id, and
    /// starts its watchdog. Must be called inside a tokio runtime; the client's
    /// background work (watchdog, releases of dropped guards) runs there.
    /// Deployments wrap this in their `connect`.
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] for a bad configuration (see
    /// [`ClientConfig::validate_for`], checked with the connection's
    /// [command timeout](Connection::command_timeout)) or when called
    /// outside a tokio runtime.
    pub fn new(connection: Arc<dyn Connection>, config: ClientConfig) -> Result<Self> {
        config.validate_for(connection.command_timeout())?;
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| {
            LockError::invalid("a lock client must be created inside a tokio runtime")
        })?;
        let watchdog_ms = lease_millis(config.watchdog_timeout, "watchdog_timeout")?;
        let waiter_ms = lease_millis(config.waiter_timeout, "waiter_timeout")?;
        let stats = Arc::new(Stats::default());
        let waiters = Arc::new(WaiterRegistry::new(Arc::clone(&stats)));
        connection.set_notice_sink(Arc::clone(&waiters) as _);
        let holds = Arc::new(Holds::new());
        let permits = Arc::new(PermitLeases::new());
        let watchdog = Watchdog::start(
            &runtime,
            Arc::clone(&holds),
            Arc::clone(&permits),
            config.watchdog_timeout,
            config.safety_margin(config.watchdog_timeout),
            config.retry.clone(),
            Arc::clone(&stats),
        );
        Ok(Self {
            inner: Arc::new(ClientInner {
                id: Uuid::new_v4(),
                config,
                connection,
                waiters,
                holds,
                permits,
                watchdog,
                stats,
                runtime,
                watchdog_ms,
                waiter_ms,
                clock: StoreClock::new(),
                outages: Default::default(),
                live_permits: Arc::new(LivePermits::default()),
                next_owner: AtomicU64::new(1),
                closed: AtomicBool::new(false),
                shut: AtomicBool::new(false),
            }),
        })
    }

    /// This client's id: the first half of every owner it makes.
    pub fn id(&self) -> Uuid {
        self.inner.id
    }

    /// The configuration the client was made with.
    pub fn config(&self) -> &ClientConfig {
        &self.inner.config
    }

    /// A fresh owner of this client, for explicit re-entrant use with
    /// [`Lock::lock_as`](crate::Lock::lock_as) or [`Owner::scope`].
    pub fn new_owner(&self) -> Owner {
        self.inner.new_owner()
    }

    /// Runs `fut` inside a fresh owner scope: every plain acquisition of
    /// this client's locks inside it uses that one owner, so nested code
    /// re-enters locks the outer code holds.
    ///
    /// ```
    /// # use lock_core::Lock;
    /// # use lock_core::backend::Engine;
    /// # async fn demo(client: Engine, lock: Lock) -> lock_core::Result<()> {
    /// // `lock`: a lock of this client, e.g. `client.lock("config")` of its deployment's client
    /// client.scope(async {
    ///     let outer = lock.lock().await?;
    ///     let inner = lock.lock().await?; // re-enters: same owner
    ///     assert_eq!(lock.hold_count(outer.owner()).await?, 2);
    ///     inner.unlock().await?;
    ///     outer.unlock().await
    /// }).await
    /// # }
    /// ```
    pub async fn scope<F: Future>(&self, fut: F) -> F::Output {
        self.new_owner().scope(fut).await
    }

    /// Counters of this client's work since it was created.
    pub fn stats(&self) -> ClientStats {
        self.inner
            .stats
            .snapshot(self.inner.waiters.active(), self.inner.watchdog.len())
    }

    /// The connection this client talks through.
    pub fn connection(&self) -> &Arc<dyn Connection> {
        &self.inner.connection
    }

    /// Resolves once no acquire or release is in flight, background ones
    /// included (releases of dropped guards, undoing of abandoned
    /// acquisitions). Each is bounded by the backend's timeouts and the
    /// retry policy.
    ///
    /// # Cancel safety
    /// Cancel-safe; it only observes.
    pub async fn settle(&self) {
        self.inner.stats.idle().await;
    }

    /// Closes the client, giving back everything it holds:
    /// 1. No new acquisition starts ([`LockError::Closed`]), and waiting
    ///    ones end with it at once; acquisitions and releases already in
    ///    flight finish ([`Engine::settle`]): an acquisition landing now
    ///    is given back, not handed out.
    /// 2. Every live guard and permit is told it is lost
    ///    ([`crate::Guard::lost`] resolves), and the client gives back every
    ///    lock (all holds of each owner, every kind and side) and every
    ///    permit its guards hold, retrying transient failures.
    /// 3. After at most [`ClientConfig::close_timeout`] for steps 1 and 2,
    ///    the watchdog stops and the connection closes; what was not given
    ///    back by then stays until its lease ends (a warning gives the
    ///    count).
    ///
    /// A guard or permit used afterwards answers [`LockError::Closed`]
    /// (unlock, release, check); dropping it sends nothing. A service
    /// stops taking new work first, then closes, then exits (docs:
    /// configuration.md, "Shutting down").
    ///
    /// Dropping the last handle of a client without a close gives nothing
    /// back by itself: guards keep their client alive, and each releases
    /// as usual when dropped.
    ///
    /// # Cancel safety
    /// The client is marked closed at once, and the give-backs already
    /// started go on in the background; dropping the future skips the
    /// rest (the wait, stopping the watchdog, closing the connection).
    pub async fn close(&self) {
        self.close_with(async {}).await;
    }

    /// [`Engine::close`], running `last` after the watchdog stopped and
    /// before the connection closes: for a client's own last writes (such
    /// as removing the record it keeps of itself), which must follow every
    /// release and still have a connection. `last` runs only on the first
    /// close.
    ///
    /// # Cancel safety
    /// As [`Engine::close`]; dropping the future may skip `last`.
    pub async fn close_with<F: Future<Output = ()>>(&self, last: F) {
        if !self.inner.closed.swap(true, Ordering::SeqCst) {
            // Every waiter looks again now, and its attempt ends its wait
            // with `Closed`, rather than sleeping until a notice or the
            // holder's time to live.
            self.inner.waiters.deliver(Notice::Reset);
            let left = Arc::new(AtomicUsize::new(0));
            let bound = self.inner.config.close_timeout;
            let gave_back = crate::engine::closing::give_back_all(&self.inner, Arc::clone(&left));
            if tokio::time::timeout(bound, gave_back).await.is_err() {
                let left = left.load(Ordering::Acquire);
                if left > 0 {
                    tracing::warn!(
                        left,
                        ?bound,
                        "close: not everything was given back within close_timeout; those locks and permits stay until their leases end"
                    );
                } else {
                    // Everything held was given back; what is still in
                    // flight (a call whose outcome is unknown) says itself
                    // what it may leave, when the close ends it.
                    tracing::debug!(?bound, "close: calls still in flight at close_timeout");
                }
            }
            self.inner.shut.store(true, Ordering::Release);
            self.inner.watchdog.stop();
            last.await;
            self.inner.connection.close().await;
        }
    }

    /// A handle that does not keep this engine alive: for background work
    /// of a client that must end with it ([`WeakEngine::upgrade`]).
    pub fn downgrade(&self) -> WeakEngine {
        WeakEngine(Arc::downgrade(&self.inner))
    }

    /// [`LockError::Closed`] once [`Engine::close`] was called: what a
    /// kind's handle checks before a call of its own.
    ///
    /// # Errors
    /// [`LockError::Closed`].
    pub fn check_open(&self) -> Result<()> {
        self.inner.check_open()
    }

    /// The deadline of a request made now, in the store's clock's
    /// milliseconds: it may run until then
    /// ([`ClientConfig::record_ttl`]), and its record is kept past it.
    pub fn request_deadline(&self) -> u64 {
        self.inner.request_deadline()
    }

    /// Tells the engine the store read its own clock as `store_ms`
    /// (milliseconds since the Unix epoch) during a call that took
    /// `round_trip` and has just returned. Requests are dated by the
    /// store's clock as the engine estimates it; refusals only ever move
    /// that estimate forward, so a store that reports its time from time
    /// to time is how a client whose clock runs ahead is brought back
    /// (the `store_clock` module). The estimate moves only when it lies
    /// outside the reading's window by more than a small tolerance.
    pub fn observe_store_time(&self, store_ms: u64, round_trip: std::time::Duration) {
        self.inner.clock.observe(store_ms, round_trip);
    }

    /// The table of leased permits this client's guards hold, which the
    /// watchdog renews: a permit kind registers each permit it hands out.
    pub fn permits(&self) -> &crate::engine::permit_leases::PermitLeases {
        &self.inner.permits
    }

    /// The table of counted permits this client's live guards hold (a
    /// plain semaphore's), which [`Engine::close`] gives back: a counting
    /// kind registers each guard it hands out.
    pub fn live_permits(&self) -> &Arc<LivePermits> {
        &self.inner.live_permits
    }

    /// Whether the watchdog stopped ([`Engine::close`]): a permit
    /// registered now would never be renewed.
    pub fn watchdog_stopped(&self) -> bool {
        self.inner.watchdog.is_stopped()
    }

    /// Whether [`Engine::close`] was called.
    pub fn is_closed(&self) -> bool {
        self.inner.is_closed()
    }
}

/// An [`Engine`] that does not keep it alive ([`Engine::downgrade`]).
#[derive(Clone)]
pub struct WeakEngine(std::sync::Weak<ClientInner>);

impl std::fmt::Debug for WeakEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WeakEngine")
            .field("alive", &(self.0.strong_count() > 0))
            .finish()
    }
}

impl WeakEngine {
    /// The engine, while anything else (a client, a guard) still holds it.
    pub fn upgrade(&self) -> Option<Engine> {
        self.0.upgrade().map(|inner| Engine { inner })
    }
}
