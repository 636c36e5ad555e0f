//! [`LockClient`]: one client, every lock kind.

pub mod describe;
pub(crate) mod registration;

use std::future::Future;
use std::sync::Arc;

use lock_core::backend::Engine;
use lock_core::{ClientConfig, ClientInfo, ClientStats, FencedLock, Lock, Owner, Result};
use lock_fair::{FairLock, HandoffLock};
use lock_script::ScriptEnv;
use uuid::Uuid;

use crate::client::describe::Description;
use crate::client::registration::Registration;
use crate::kinds::latch::CountDownLatch;
use crate::kinds::permit_semaphore::PermitExpirableSemaphore;
use crate::kinds::rwlock::ReadWriteLock;
use crate::kinds::semaphore::Semaphore;
use crate::kinds::Kinds;

/// A lock client: a client id, connections to one deployment (a server,
/// a Sentinel-watched master, a cluster), the registry of waiters and the
/// watchdog, shared by the handles of every lock kind it hands out:
/// [`LockClient::lock`], [`LockClient::fair_lock`],
/// [`LockClient::semaphore`], … on one client use the same connections,
/// the same pub/sub connection and the same watchdog. Cheap to clone;
/// clones share everything. Made by [`crate::connect`] (or a deployment's
/// own `connect`).
///
/// ```no_run
/// # async fn demo() -> lock_redis::Result<()> {
/// use lock_redis::{ClientConfig, RedisConfig};
/// let client = lock_redis::connect(RedisConfig::new("redis://127.0.0.1/"), ClientConfig::default()).await?;
/// let guard = client.lock("orders:42")?.lock().await?;
/// // … critical section …
/// guard.unlock().await?;
/// let fair = client.fair_lock("printer")?.lock().await?; // first come, first served
/// fair.unlock().await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct LockClient {
    engine: Engine,
    kinds: Arc<Kinds>,
    registration: Arc<Registration>,
}

impl std::fmt::Debug for LockClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockClient")
            .field("id", &self.engine.id())
            .field("config", self.engine.config())
            .finish_non_exhaustive()
    }
}

impl LockClient {
    /// A client over `env` (one deployment's transport, key layout and
    /// replica sync) with every kind bound to it, and a fresh client id;
    /// starts its watchdog. Must be called inside a tokio runtime.
    /// Deployments wrap this in their `connect`.
    ///
    /// # Errors
    /// [`lock_core::LockError::InvalidArgument`] for a bad configuration
    /// (see [`ClientConfig::validate_for`]) or when called outside a tokio
    /// runtime.
    pub fn new(env: ScriptEnv, config: ClientConfig) -> Result<Self> {
        // The engine checks the configuration against its connection's
        // command timeout, the transport's; an acquisition may wait for
        // replicas on top of it, so check against the longest call first
        // (the transport is the engine's connection, it does not know the
        // replica sync, which is the client's).
        config.validate_for(env.command_timeout())?;
        let engine = Engine::new(env.connection(), config)?;
        let registration = Arc::new(Registration::start(&engine, env.clone()));
        Ok(Self {
            engine,
            kinds: Arc::new(Kinds::new(&env)),
            registration,
        })
    }

    /// This client's id: the first half of every owner it makes.
    pub fn id(&self) -> Uuid {
        self.engine.id()
    }

    /// The configuration the client was made with.
    pub fn config(&self) -> &ClientConfig {
        self.engine.config()
    }

    /// What this client's record on the store says of it (host, process
    /// id, [`ClientConfig::service_name`], start time): what
    /// [`LockClient::describe`] and `lockctl status` show beside every
    /// lock, waiter and permit it holds. The record is written when the
    /// client starts (for a lazily connecting client: once its server
    /// answers), refreshed every third of
    /// [`ClientConfig::watchdog_timeout`] and removed by
    /// [`LockClient::close`]; a client that dies loses it within the
    /// watchdog timeout. Its layout: `docs/redis-layout.md`.
    pub fn client_info(&self) -> &ClientInfo {
        self.registration.info()
    }

    /// A handle on the re-entrant lock called `name` (Redisson's `RLock`):
    /// any waiter may win it once it is free. Makes no I/O.
    ///
    /// # Errors
    /// [`lock_core::LockError::InvalidArgument`] for an empty or over-long
    /// name.
    pub fn lock(&self, name: impl AsRef<str>) -> Result<Lock> {
        self.engine.lock(name, self.kinds.reentrant())
    }

    /// A handle on the non-reentrant lock called `name` (Redisson's
    /// `getNonReentrantLock`): a reentrant lock's layout, shared with Java's
    /// locks of the same name, but an owner that asks again for a lock it
    /// holds is refused with [`lock_core::LockError::ReentryRefused`]
    /// instead of holding it twice. Makes no I/O.
    ///
    /// ```no_run
    /// # async fn demo(client: lock_redis::LockClient) -> lock_redis::Result<()> {
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
    /// As [`LockClient::lock`].
    pub fn non_reentrant_lock(&self, name: impl AsRef<str>) -> Result<Lock> {
        self.engine.lock(name, self.kinds.non_reentrant())
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
    /// [`lock_core::LockError::ReentryRefused`]. Makes no I/O.
    ///
    /// Lean at the pattern's cost: taken without an explicit owner, it
    /// keeps no request records, so a copy of an acquisition delivered
    /// late, after its guard's release, holds the lock for no one until its
    /// lease ends (see the `kinds::lean` module). [`LockClient::lock`]
    /// keeps records for every request.
    ///
    /// ```no_run
    /// # async fn demo(client: lock_redis::LockClient) -> lock_redis::Result<()> {
    /// let lock = client.lean_lock("shared-with-go-services")?;
    /// let guard = lock.lock().await?;
    /// // … the Go service's redsync mutex on this name waits meanwhile …
    /// guard.unlock().await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`LockClient::lock`].
    pub fn lean_lock(&self, name: impl AsRef<str>) -> Result<Lock> {
        self.engine.lock(name, self.kinds.lean())
    }

    /// A handle on the fair lock called `name` (Redisson's `FairLock`):
    /// handed out in arrival order. Makes no I/O.
    ///
    /// # Errors
    /// As [`LockClient::lock`].
    pub fn fair_lock(&self, name: impl AsRef<str>) -> Result<FairLock> {
        FairLock::new(&self.engine, name, self.kinds.fair())
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
    /// ```no_run
    /// # async fn demo(client: lock_redis::LockClient) -> lock_redis::Result<()> {
    /// let jobs = client.handoff_lock("jobs")?;
    /// let guard = jobs.lock().await?; // a release hands it to the next waiter
    /// guard.unlock().await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`LockClient::lock`].
    pub fn handoff_lock(&self, name: impl AsRef<str>) -> Result<HandoffLock> {
        HandoffLock::new(&self.engine, name, self.kinds.handoff())
    }

    /// A handle on the lock called `name` whose every acquisition hands out
    /// a fencing token ([`lock_core::FencedGuard::fencing_token`]). It is the
    /// lock of [`LockClient::lock`] with the same name (they exclude each
    /// other), and its tokens come from the name's one counter. Makes no
    /// I/O.
    ///
    /// ```no_run
    /// # async fn demo(client: lock_redis::LockClient) -> lock_redis::Result<()> {
    /// let lock = client.fenced_lock("ledger")?;
    /// let guard = lock.lock().await?;
    /// let token: u64 = guard.fencing_token(); // larger than every token before it
    /// // … write to the ledger, passing `token` …
    /// guard.unlock().await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`LockClient::lock`].
    pub fn fenced_lock(&self, name: impl AsRef<str>) -> Result<FencedLock> {
        self.engine.fenced_lock(name, self.kinds.reentrant())
    }

    /// A handle on the read-write lock called `name`: many readers or one
    /// writer ([`ReadWriteLock::read`], [`ReadWriteLock::write`]). Makes no
    /// I/O.
    ///
    /// # Errors
    /// As [`LockClient::lock`].
    pub fn read_write_lock(&self, name: impl AsRef<str>) -> Result<ReadWriteLock> {
        ReadWriteLock::new(&self.engine, name, &self.kinds.read_write())
    }

    /// A handle on the count-down latch called `name`. Makes no I/O.
    ///
    /// # Errors
    /// [`lock_core::LockError::InvalidArgument`] for an empty or over-long
    /// name, or a name this deployment cannot serve as a latch (on a
    /// cluster: a name with its own hash tag, see the deployment's docs).
    pub fn count_down_latch(&self, name: impl AsRef<str>) -> Result<CountDownLatch> {
        CountDownLatch::new(&self.engine, name, self.kinds.latch())
    }

    /// A handle on the semaphore called `name` (a count of free permits
    /// anyone may take or give back). Makes no I/O.
    ///
    /// # Errors
    /// As [`LockClient::lock`].
    pub fn semaphore(&self, name: impl AsRef<str>) -> Result<Semaphore> {
        Semaphore::new(&self.engine, name, self.kinds.semaphore())
    }

    /// A handle on the semaphore called `name` whose taken permits have
    /// ids and leases, and come back by themselves when a lease ends. Makes
    /// no I/O.
    ///
    /// # Errors
    /// As [`LockClient::lock`].
    pub fn permit_expirable_semaphore(
        &self,
        name: impl AsRef<str>,
    ) -> Result<PermitExpirableSemaphore> {
        PermitExpirableSemaphore::new(&self.engine, name, self.kinds.permit_semaphore())
    }

    /// What is stored under `name`, whatever kind put it there: a lock's
    /// holders, a read-write lock's readers and writer, a semaphore's
    /// permits or a latch's count. Writes nothing.
    ///
    /// # Errors
    /// [`lock_core::LockError::InvalidArgument`] for a bad name; a
    /// retryable error when the store could not be reached;
    /// [`lock_core::LockError::Closed`].
    ///
    /// # Cancel safety
    /// Read-only: safe to drop.
    pub async fn describe(&self, name: impl AsRef<str>) -> Result<Description> {
        let name = lock_core::LockName::new(name)?;
        self.engine.check_open()?;
        self.kinds.describer.describe(&name).await
    }

    /// A fresh owner of this client, for explicit re-entrant use with
    /// [`Lock::lock_as`] or [`Owner::scope`].
    pub fn new_owner(&self) -> Owner {
        self.engine.new_owner()
    }

    /// Runs `fut` inside a fresh owner scope: every plain acquisition of
    /// this client's locks inside it uses that one owner, so nested code
    /// re-enters locks the outer code holds.
    ///
    /// ```no_run
    /// # async fn demo(client: lock_redis::LockClient) -> lock_redis::Result<()> {
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
        self.engine.scope(fut).await
    }

    /// Counters of this client's work since it was created.
    pub fn stats(&self) -> ClientStats {
        self.engine.stats()
    }

    /// Resolves once no acquire or release is in flight, background ones
    /// included (releases of dropped guards, undoing of abandoned
    /// acquisitions). Each is bounded by the timeouts and the retry policy.
    ///
    /// # Cancel safety
    /// Cancel-safe; it only observes.
    pub async fn settle(&self) {
        self.engine.settle().await;
    }

    /// Closes the client, giving back everything it holds
    /// ([`lock_core::backend::Engine::close`]): no new acquisition starts
    /// ([`lock_core::LockError::Closed`]); every live guard and permit is
    /// told it is lost ([`lock_core::Guard::lost`] resolves); every lock
    /// of every kind (all holds of each owner) and every permit its guards
    /// hold is given back, with releases already in flight, retrying
    /// transient failures, for at most
    /// [`ClientConfig::close_timeout`](lock_core::ClientConfig::close_timeout);
    /// then the watchdog stops, the client's record
    /// ([`LockClient::client_info`]) is removed and the connections are
    /// closed. What was not given back in time stays until its lease ends
    /// (a warning gives the count). Guards and permits used afterwards
    /// answer `Closed`; dropping them sends nothing.
    ///
    /// A service stops taking new work, then calls this, then exits (on
    /// SIGTERM too): docs/configuration.md, "Shutting down". Dropping the
    /// last handle without a close gives nothing back by itself: guards
    /// keep the client alive and release as usual when dropped.
    ///
    /// # Cancel safety
    /// The client is marked closed at once, and the give-backs already
    /// started go on in the background; dropping the future skips the
    /// rest (the wait, removing the record, closing the connections).
    ///
    /// # Examples
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> lock_redis::Result<()> {
    /// # let server = lock_testkit::InMemoryServer::new();
    /// # let client = server.client()?;
    /// let guard = client.lock("leader")?.lock().await?;
    /// client.close().await; // "leader" is free now, not in 30 s
    /// assert!(guard.is_lost());
    /// assert!(guard.unlock().await.unwrap_err().is_closed());
    /// # Ok(()) }
    /// ```
    pub async fn close(&self) {
        // The record goes after the last release, while a connection is
        // still open to remove it.
        self.engine.close_with(self.registration.remove()).await;
    }

    /// Whether [`LockClient::close`] was called.
    pub fn is_closed(&self) -> bool {
        self.engine.is_closed()
    }

    /// Every kind's raw store operations, bound to this client's
    /// deployment: for tools and tests.
    pub fn kinds(&self) -> &Kinds {
        &self.kinds
    }

    /// The engine under this client: for kinds and tools built outside
    /// this crate.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }
}
