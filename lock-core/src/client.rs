//! The client: one per process (or per store), shared by every task.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use uuid::Uuid;

use crate::config::{lease_millis, ClientConfig};
use crate::connection::Connection;
use crate::describe::Description;
use crate::error::{LockError, Result};
use crate::fair_lock::FairLock;
use crate::fenced_lock::FencedLock;
use crate::handoff_lock::HandoffLock;
use crate::holds::Holds;
use crate::kinds::Kinds;
use crate::latch::CountDownLatch;
use crate::lock::Lock;
use crate::name::LockName;
use crate::owner::Owner;
use crate::permit_leases::PermitLeases;
use crate::permit_semaphore::PermitExpirableSemaphore;
use crate::rw_lock::ReadWriteLock;
use crate::semaphore::Semaphore;
use crate::stats::{ClientStats, Stats};
use crate::store_clock::StoreClock;
use crate::waiter::WaiterRegistry;
use crate::watchdog::Watchdog;

/// A lock client: a client id, one connection to a store with every lock
/// kind bound to it, the registry of waiters and the watchdog. Every kind's
/// handles share them: [`LockClient::lock`], [`LockClient::fair_lock`] and
/// [`LockClient::fenced_lock`] on one client use the same connections and
/// the same watchdog. Cheap to clone; clones share everything.
///
/// ```
/// # use std::sync::Arc;
/// # use lock_core::{ClientConfig, LockClient};
/// # use lock_core::backend::{Connection, Kinds};
/// # async fn demo(connection: Arc<dyn Connection>, kinds: Kinds) -> lock_core::Result<()> {
/// let client = LockClient::new(connection, kinds, ClientConfig::default())?;
/// let guard = client.lock("orders:42")?.lock().await?;
/// // … critical section …
/// guard.unlock().await?;
/// let fair = client.fair_lock("printer")?.lock().await?; // first come, first served
/// fair.unlock().await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct LockClient {
    pub(crate) inner: Arc<ClientInner>,
}

pub(crate) struct ClientInner {
    pub(crate) id: Uuid,
    pub(crate) config: ClientConfig,
    pub(crate) connection: Arc<dyn Connection>,
    pub(crate) kinds: Kinds,
    pub(crate) waiters: Arc<WaiterRegistry>,
    /// Every hold of this client's guards, by (lock name, owner).
    pub(crate) holds: Arc<Holds>,
    /// Every leased permit of this client's permit guards.
    pub(crate) permits: Arc<PermitLeases>,
    pub(crate) watchdog: Watchdog,
    pub(crate) stats: Arc<Stats>,
    pub(crate) runtime: tokio::runtime::Handle,
    /// The watchdog lease in milliseconds.
    pub(crate) watchdog_ms: u64,
    /// The fair-lock waiter timeout in milliseconds.
    pub(crate) waiter_ms: u64,
    /// The store's clock as this client estimates it: dates every
    /// request's deadline (the `store_clock` module).
    pub(crate) clock: StoreClock,
    /// Waiters riding out a store outage (the `outage` module).
    pub(crate) outages: crate::outage::Outages,
    next_owner: AtomicU64,
    closed: AtomicBool,
}

impl ClientInner {
    pub(crate) fn check_open(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            Err(LockError::Closed)
        } else {
            Ok(())
        }
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// The deadline of a request made now: it may run for
    /// [`ClientConfig::record_ttl`].
    pub(crate) fn request_deadline(&self) -> u64 {
        self.clock.deadline_in(self.config.record_ttl)
    }

    /// Learns from `error` the store's clock, when it refused a request as
    /// stale.
    pub(crate) fn learn_clock(&self, error: &LockError) {
        if let LockError::StaleRequest { store_time_ms } = error {
            self.clock.resync(*store_time_ms);
        }
    }

    pub(crate) fn new_owner(&self) -> Owner {
        Owner::new(self.id, self.next_owner.fetch_add(1, Ordering::Relaxed))
    }
}

impl std::fmt::Debug for LockClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockClient")
            .field("id", &self.inner.id)
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

impl LockClient {
    /// Creates a client over `connection`, handing out locks of `kinds`
    /// (bound to that connection), with a fresh client id, and starts its
    /// watchdog. Must be called inside a tokio runtime; the client's
    /// background work (watchdog, releases of dropped guards) runs there.
    /// Deployments wrap this in their `connect`.
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] for a bad configuration (see
    /// [`ClientConfig::validate_for`], checked with the connection's
    /// [command timeout](Connection::command_timeout)) or when called
    /// outside a tokio runtime.
    pub fn new(
        connection: Arc<dyn Connection>,
        kinds: Kinds,
        config: ClientConfig,
    ) -> Result<Self> {
        config.validate_for(connection.command_timeout())?;
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| {
            LockError::invalid("LockClient::new must be called inside a tokio runtime")
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
                kinds,
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
                next_owner: AtomicU64::new(1),
                closed: AtomicBool::new(false),
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

    /// A handle on the re-entrant lock called `name`: any waiter may win it
    /// once it is free. Makes no I/O.
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] for an empty or over-long name, or
    /// when this client has no reentrant kind.
    pub fn lock(&self, name: impl AsRef<str>) -> Result<Lock> {
        let kind = self
            .inner
            .kinds
            .reentrant_kind()
            .ok_or_else(|| LockError::invalid("this client has no reentrant lock kind"))?;
        Ok(Lock::new(
            self.clone(),
            LockName::new(name)?,
            Arc::clone(kind),
        ))
    }

    /// A handle on the non-reentrant lock called `name` (Redisson's
    /// `getNonReentrantLock`): a reentrant lock's layout, shared with Java's
    /// locks of the same name, but an owner that asks again for a lock it
    /// holds is refused with [`LockError::ReentryRefused`] instead of
    /// holding it twice. Makes no I/O.
    ///
    /// ```
    /// # async fn demo(client: lock_core::LockClient) -> lock_core::Result<()> {
    /// let lock = client.non_reentrant_lock("nightly-report")?;
    /// let owner = client.new_owner();
    /// let guard = lock.lock_as(owner).await?;
    /// let again = lock.lock_as(owner).await.unwrap_err();
    /// assert!(again.is_reentry_refused());
    /// guard.unlock().await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] for an empty or over-long name, or
    /// when this client has no non-reentrant kind.
    pub fn non_reentrant_lock(&self, name: impl AsRef<str>) -> Result<Lock> {
        self.exclusive_lock("non_reentrant", "non-reentrant", name)
    }

    /// A handle on the lean lock called `name`: the redis.io
    /// single-instance pattern (one string key holding its holder's token,
    /// `SET NX PX` to take it, compare-and-delete to release), the layout
    /// go-redsync, redis-py's `Lock`, node-redlock and rslock keep, so
    /// services using those exclude ours on the same name. With the
    /// watchdog, the lost-lock signal, fencing tokens on request, wake-ups
    /// by notice of our releases (others' are seen within a bounded
    /// re-check) and cancellation safety. Not re-entrant: an owner that
    /// asks again for a lock it holds is refused with
    /// [`LockError::ReentryRefused`]. Makes no I/O.
    ///
    /// ```
    /// # async fn demo(client: lock_core::LockClient) -> lock_core::Result<()> {
    /// let lock = client.lean_lock("shared-with-go-services")?;
    /// let guard = lock.lock().await?;
    /// // … the Go service's redsync mutex on this name waits meanwhile …
    /// guard.unlock().await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] for an empty or over-long name, or
    /// when this client has no lean kind.
    pub fn lean_lock(&self, name: impl AsRef<str>) -> Result<Lock> {
        self.exclusive_lock("lean", "lean", name)
    }

    /// A [`Lock`] of the exclusive kind registered as `kind` (`what` names
    /// it in the error when there is none).
    fn exclusive_lock(&self, kind: &str, what: &str, name: impl AsRef<str>) -> Result<Lock> {
        let kind =
            self.inner.kinds.exclusive_kind(kind).ok_or_else(|| {
                LockError::invalid(format!("this client has no {what} lock kind"))
            })?;
        Ok(Lock::new(
            self.clone(),
            LockName::new(name)?,
            Arc::clone(kind),
        ))
    }

    /// A handle on the fair lock called `name`: handed out in arrival order.
    /// Makes no I/O.
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] for an empty or over-long name, or
    /// when this client has no fair kind.
    pub fn fair_lock(&self, name: impl AsRef<str>) -> Result<FairLock> {
        let kind = self
            .inner
            .kinds
            .fair_kind()
            .ok_or_else(|| LockError::invalid("this client has no fair lock kind"))?;
        Ok(FairLock::new(
            self.clone(),
            LockName::new(name)?,
            Arc::clone(kind),
        ))
    }

    /// A handle on the fair lock called `name` with direct handoff
    /// ([`HandoffLock`]): a release hands the lock straight to the first
    /// live waiter of the queue, which takes it without another round trip
    /// (one notice instead of notice + acquire). It is the fair lock of
    /// [`LockClient::fair_lock`] (the two are one lock with one queue),
    /// whose kind also records which queued waits accept a handoff (its
    /// layout is the kind's: see the `lock-fair` crate). Makes no I/O.
    ///
    /// Opt-in, because a grant to a waiter whose process died after its
    /// last refresh keeps the lock for that waiter's lease (see
    /// [`HandoffLock`]).
    ///
    /// ```
    /// # async fn demo(client: lock_core::LockClient) -> lock_core::Result<()> {
    /// let jobs = client.handoff_lock("jobs")?;
    /// let guard = jobs.lock().await?; // a release hands it to the next waiter
    /// guard.unlock().await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] for an empty or over-long name, or
    /// when this client has no handoff kind.
    pub fn handoff_lock(&self, name: impl AsRef<str>) -> Result<HandoffLock> {
        let kind = self
            .inner
            .kinds
            .handoff_kind()
            .ok_or_else(|| LockError::invalid("this client has no direct-handoff lock kind"))?;
        Ok(HandoffLock::new(
            self.clone(),
            LockName::new(name)?,
            Arc::clone(kind),
        ))
    }

    /// A handle on the lock called `name` whose every acquisition hands out
    /// a fencing token ([`crate::FencedGuard::fencing_token`]). It is the lock of
    /// [`LockClient::lock`] with the same name (they exclude each other),
    /// and its tokens come from the name's one counter. Makes no I/O.
    ///
    /// # Errors
    /// As [`LockClient::lock`].
    pub fn fenced_lock(&self, name: impl AsRef<str>) -> Result<FencedLock> {
        let kind = self
            .inner
            .kinds
            .reentrant_kind()
            .ok_or_else(|| LockError::invalid("this client has no reentrant lock kind"))?;
        Ok(FencedLock::new(
            self.clone(),
            LockName::new(name)?,
            Arc::clone(kind),
        ))
    }

    /// A handle on the count-down latch called `name`. Makes no I/O.
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] for an empty or over-long name, a
    /// name this deployment cannot serve as a latch (on a cluster: a name
    /// with its own hash tag, see the deployment's docs), or when this
    /// client has no latch kind.
    pub fn count_down_latch(&self, name: impl AsRef<str>) -> Result<CountDownLatch> {
        let kind = self
            .inner
            .kinds
            .latch_kind()
            .ok_or_else(|| LockError::invalid("this client has no count-down latch kind"))?;
        let name = LockName::new(name)?;
        kind.check_name(&name)?;
        Ok(CountDownLatch::new(self.clone(), name, Arc::clone(kind)))
    }

    /// What is stored under `name`, whatever kind put it there: a lock's
    /// holders, a read-write lock's readers and writer, a semaphore's
    /// permits or a latch's count. Writes nothing.
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] for a bad name or when this client
    /// has no reader registered; a retryable error when the store could
    /// not be reached; [`LockError::Closed`].
    ///
    /// # Cancel safety
    /// Read-only: safe to drop.
    pub async fn describe(&self, name: impl AsRef<str>) -> Result<Description> {
        let describer = self
            .inner
            .kinds
            .describer()
            .ok_or_else(|| LockError::invalid("this client cannot describe names"))?;
        let name = LockName::new(name)?;
        self.inner.check_open()?;
        describer.describe(&name).await
    }

    /// A handle on the semaphore called `name` (a count of free permits
    /// anyone may take or give back). Makes no I/O.
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] for an empty or over-long name, or
    /// when this client has no semaphore kind.
    pub fn semaphore(&self, name: impl AsRef<str>) -> Result<Semaphore> {
        let kind = self
            .inner
            .kinds
            .semaphore_kind()
            .ok_or_else(|| LockError::invalid("this client has no semaphore kind"))?;
        Ok(Semaphore::new(
            self.clone(),
            LockName::new(name)?,
            Arc::clone(kind),
        ))
    }

    /// A handle on the semaphore called `name` whose taken permits have
    /// ids and leases, and come back by themselves when a lease ends. Makes
    /// no I/O.
    ///
    /// # Errors
    /// As [`LockClient::semaphore`].
    pub fn permit_expirable_semaphore(
        &self,
        name: impl AsRef<str>,
    ) -> Result<PermitExpirableSemaphore> {
        let kind = self.inner.kinds.permit_semaphore_kind().ok_or_else(|| {
            LockError::invalid("this client has no expirable-permit semaphore kind")
        })?;
        Ok(PermitExpirableSemaphore::new(
            self.clone(),
            LockName::new(name)?,
            Arc::clone(kind),
        ))
    }

    /// A handle on the read-write lock called `name`: many readers or one
    /// writer ([`ReadWriteLock::read`], [`ReadWriteLock::write`]). Makes no
    /// I/O.
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] for an empty or over-long name, or
    /// when this client has no read-write kind.
    pub fn read_write_lock(&self, name: impl AsRef<str>) -> Result<ReadWriteLock> {
        let kinds = self
            .inner
            .kinds
            .read_write_kinds()
            .ok_or_else(|| LockError::invalid("this client has no read-write lock kind"))?;
        Ok(ReadWriteLock::new(
            self.clone(),
            LockName::new(name)?,
            kinds,
        ))
    }

    /// A fresh owner of this client, for explicit re-entrant use with
    /// [`Lock::lock_as`] or [`Owner::scope`].
    pub fn new_owner(&self) -> Owner {
        self.inner.new_owner()
    }

    /// Runs `fut` inside a fresh owner scope: every plain acquisition of
    /// this client's locks inside it uses that one owner, so nested code
    /// re-enters locks the outer code holds.
    ///
    /// ```
    /// # use lock_core::LockClient;
    /// # async fn demo(client: LockClient) -> lock_core::Result<()> {
    /// let lock = client.lock("config")?;
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

    /// The lock kinds bound to this client's connection (their raw store
    /// operations, for tools and tests).
    pub fn kinds(&self) -> &Kinds {
        &self.inner.kinds
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

    /// Closes the client: later operations fail with [`LockError::Closed`];
    /// requests already in flight — including background releases of guards
    /// dropped before — finish first ([`LockClient::settle`]); then the
    /// watchdog stops and the connection is closed. Unlock what
    /// you hold first: nothing renews a lock any more once the watchdog
    /// stops, so every guard of a lock it kept alive is told at once that
    /// its lock is lost ([`crate::Guard::lost`]; the lock itself expires
    /// within `watchdog_timeout`). Guards with only a fixed lease keep it
    /// until it runs out; none can be released after the close.
    ///
    /// # Cancel safety
    /// The client is marked closed at once; dropping the future skips the
    /// wait for requests in flight and the closing of connections.
    pub async fn close(&self) {
        if !self.inner.closed.swap(true, Ordering::AcqRel) {
            self.settle().await;
            self.inner.watchdog.stop();
            self.inner.connection.close().await;
        }
    }

    /// Whether [`LockClient::close`] was called.
    pub fn is_closed(&self) -> bool {
        self.inner.is_closed()
    }
}
