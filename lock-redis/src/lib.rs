//! # lock-redis: locks on Redis
//!
//! Redisson-compatible distributed locks, semaphores and latches on Redis
//! (one server or Sentinel; Redis Cluster through `lock-redis-cluster`),
//! with a watchdog that renews what you hold, a lost-lock signal, fencing
//! tokens, and waiters woken by unlock notices. This crate re-exports
//! [`redis`], [`lock_script`] and the core types of [`lock_core`], so it is
//! the only dependency a service needs.
//!
//! ## Your first lock
//!
//! ```no_run
//! use lock_redis::{ClientConfig, RedisConfig};
//!
//! # async fn demo() -> lock_redis::Result<()> {
//! let client = lock_redis::connect(
//!     RedisConfig::new("redis://127.0.0.1:6379/").key_prefix("billing:"),
//!     ClientConfig::default(), // watchdog 30 s, 4 attempts with jittered backoff
//! )
//! .await?;
//! let guard = client.lock("invoice:42")?.lock().await?; // waits; the watchdog renews it
//! tokio::select! {
//!     _ = guard.lost() => { /* the lock may be someone else's now: stop */ }
//!     _ = async { /* … work … */ } => guard.unlock().await?,
//! }
//! // The same, written once for you: the work is cancelled if the lock is
//! // lost, and the unlock's outcome comes back with its result.
//! let total = client
//!     .lock("invoice:43")?
//!     .run_locked(async |guard| {
//!         guard.check()?; // before a step that must not run without the lock
//!         Ok::<_, lock_redis::LockError>(42)
//!     })
//!     .await??;
//! # let _ = total;
//! # Ok(()) }
//! ```
//!
//! [`connect`] gives a [`LockClient`]: make one per process (it owns the
//! client id, one pub/sub connection and one watchdog for all its locks).
//! Its constructors hand out every kind:
//!
//! | kind | constructor | handle → guard |
//! | --- | --- | --- |
//! | reentrant lock (the default) | [`LockClient::lock`] | [`Lock`] → [`Guard`] |
//! | non-reentrant lock | [`LockClient::non_reentrant_lock`] | [`Lock`] → [`Guard`] |
//! | lean lock (go-redsync's, redis-py's layout) | [`LockClient::lean_lock`] | [`Lock`] → [`Guard`] |
//! | fair lock, direct hand-off | [`LockClient::fair_lock`], [`LockClient::handoff_lock`] | [`FairLock`], [`HandoffLock`] → [`Guard`] |
//! | fenced lock | [`LockClient::fenced_lock`] | [`FencedLock`] → [`FencedGuard`] |
//! | read-write lock | [`LockClient::read_write_lock`] | [`ReadWriteLock`] → [`Guard`] |
//! | semaphore | [`LockClient::semaphore`] | [`Semaphore`] → [`PermitGuard`] |
//! | expirable-permit semaphore | [`LockClient::permit_expirable_semaphore`] | [`PermitExpirableSemaphore`] → [`ExpirablePermitGuard`] |
//! | count-down latch | [`LockClient::count_down_latch`] | [`CountDownLatch`] |
//! | multi-lock, RedLock | [`MultiLock::new`], [`RedLock::new`] | [`MultiGuard`], [`RedGuard`] |
//!
//! Every call returns [`Result`] with a [`LockError`], whose predicates
//! ([`LockError::is_retryable`], [`LockError::is_lock_lost`], …) say what
//! happened; [`ClientConfig`] sets leases, retries and waiting,
//! [`RedisConfig`] the connection. Unit tests use `lock-testkit`'s
//! in-memory server, which runs these kinds' own scripts in paused time.
//! Read next: the workspace README and its `docs/` folder (locks,
//! semaphores and latches, deployments, configuration, errors).
//!
//! ## The crate's layers
//!
//! [`connect`] binds every lock kind: [`LockClient::lock`] (Redisson 4.x's
//! reentrant lock, `kinds::Reentrant`), [`LockClient::fair_lock`] (its
//! fair lock, from `lock-fair`), [`LockClient::count_down_latch`] (its
//! count-down latch) and the others, over the same connections, pub/sub
//! connection and watchdog; [`LockClient::describe`] reads any of their
//! layouts. Keys, scripts and replies are Redisson's, so Java services
//! using Redisson and Rust services using this crate can share locks.
//!
//! The crate is two layers: the single-node *transport* ([`SingleNode`]:
//! connections, the script runner with `EVALSHA`/`NOSCRIPT`, pub/sub) and
//! the *kinds* (each kind's scripts, and the one place that registers
//! every kind on a client, [`LockClient::new`], which every deployment's
//! `connect` uses, `lock_redis_cluster::connect` included).
//!
//! ## Configuration
//!
//! ```no_run
//! use std::time::Duration;
//! use lock_redis::{ClientConfig, RedisConfig};
//!
//! # async fn demo() -> lock_redis::Result<()> {
//! let config = RedisConfig::new("redis://app:secret@10.0.0.5:6379/0") // user, password, db
//!     .key_prefix("billing:")                 // lock "job" lives at key "billing:job"
//!     .command_timeout(Duration::from_secs(1)) // default 3 s
//!     .connect_timeout(Duration::from_secs(2)) // default 3 s
//!     .pool_size(8);                          // connections; default 4
//! let client = lock_redis::connect(config, ClientConfig::default()).await?;
//! let plain = client.lock("reports")?;        // any waiter may win
//! let fair = client.fair_lock("printer")?;    // first come, first served
//! # let _ = (plain, fair); Ok(()) }
//! ```
//!
//! The options every deployment shares (key prefix, timeouts, replica
//! sync, TLS, a [`CredentialsProvider`] for credentials that rotate, lazy
//! connect) are [`ConnectionOptions`], the [`RedisConfig::connection`]
//! field, with the same builder methods on `lock_redis_cluster`'s
//! `ClusterConfig`. [`RedisConfig::from_connection_info`] starts from an
//! existing redis-rs configuration.
//!
//! A bad configuration (unparsable URL, `rediss://` without the `tls`
//! feature, zero timeouts or pool size, TLS options on a `redis://` URL or
//! with a PEM that does not parse) is rejected by [`connect`] with
//! [`LockError::InvalidArgument`] before any I/O. `connect` then makes one
//! connection and loads every kind's scripts, so an unreachable server
//! ([`LockError::Unavailable`]), a wrong password
//! ([`LockError::Unauthorized`]) or a refused certificate
//! ([`LockError::Tls`]) shows up there. Features: `tls` enables `rediss://`
//! URLs (rustls), trusting the system's root certificates or the CA of
//! [`TlsOptions`], which also presents a client certificate (mutual TLS);
//! every connection of the client, pub/sub included, uses them.
//!
//! ## Sentinel and slot-checking proxies
//!
//! [`RedisConfig::sentinel`] finds the master through Redis Sentinel and
//! follows failovers: the command connections and the pub/sub connection
//! (with every subscription) move to the master the sentinels name, checked
//! with `ROLE`, after a broken connection, a `READONLY` reply or a
//! `+switch-master` announcement (see the [`sentinel`] module).
//! [`RedisConfig::slot_checking_proxy`] is for one address in front of a
//! cluster that refuses commands spanning hash slots: the batched renewals
//! are then split by slot.
//!
//! ```no_run
//! # async fn demo() -> lock_redis::Result<()> {
//! use std::time::Duration;
//! use lock_redis::{ClientConfig, RedisConfig};
//! let config = RedisConfig::sentinel(["redis://10.0.0.1:26379", "redis://10.0.0.2:26379"], "locks")
//!     .replica_sync(1, Duration::from_millis(200)); // at least 1 replica (the default: the connected ones, 1 s)
//! let client = lock_redis::connect(config, ClientConfig::default()).await?;
//! # let _ = client; Ok(()) }
//! ```
//!
//! ## Connections
//!
//! Scripts run on at most [`RedisConfig::pool_size`] multiplexed
//! connections (4 by default), shared by any number of concurrent calls;
//! each is opened on first use, and filled with
//! [`RedisConfig::calls_per_connection`] calls in flight before the next
//! is used. Every lock operation is exactly one
//! round trip (`EVALSHA`): there is no connection pool, because
//! deadpool-redis checks every connection with a `PING` round trip on
//! checkout, doubling the cost of each lock operation; multiplexed
//! connections need no checkout. Instead, a connection is replaced when a
//! call on it fails with a connection error or gets no reply in time, and
//! with it every connection opened before that failure was seen: after a
//! server restart about one call fails (and the engine retries it), not one
//! per connection.
//!
//! ## On the server
//!
//! | item | key |
//! | --- | --- |
//! | lock | hash `<prefix><name>`: field `<client-uuid>:<owner-id>` → hold count; PTTL only ever extended (to the longest lease of the owner's holds); fields that are not counts (a Redisson read-write lock's `mode`) are skipped by inspection |
//! | unlock channel | `redisson_lock__channel:{<prefix><name>}`, message `0` (wake one) / `1` (wake all) |
//! | unlock / acquire request records (`_latch` is Redisson's name for them) | `redisson_unlock_latch:{…}:<request-id>` → `1` / `0` / `not held`; `redisson_lock_latch:{…}:<request-id>` → token / `held`: every outcome of a request |
//! | fencing counter | `redisson_lock_token:{<prefix><name>}` (never expires) |
//!
//! (See [`KeyLayout`] for names that contain `{`; the fair lock's queue keys
//! are in `lock-fair`'s docs.) Each operation is one Lua script
//! (`src/kinds/<kind>/*.lua`), run with `EVALSHA`; a server that lost its
//! script cache gets the script loaded again transparently.
//!
//! ## Errors
//!
//! | situation | error | [`LockError::is_retryable`] |
//! | --- | --- | --- |
//! | bad configuration, zero lease | [`LockError::InvalidArgument`] | no |
//! | rejected credentials (`WRONGPASS`, `NOAUTH`) or a [`CredentialsProvider`] that failed, at connect (or a lazy client's first call); a command, key or channel the ACL does not allow the user (`NOPERM`, also inside a script) | [`LockError::Unauthorized`] ([`LockError::is_unauthorized`]) | no |
//! | a reconnect of a client that connected before failing for any reason (provider, `AUTH`, TLS: the request never reached the server; the `connections` module) | [`LockError::Unavailable`], the refusal as its source | yes |
//! | a TLS certificate refused: the server's not signed by the trusted CA, ours missing or refused | [`LockError::Tls`] ([`LockError::is_tls`]) | no |
//! | a non-hash value at the lock key, a fencing counter that is not an integer | [`LockError::WrongType`] naming the key (value left untouched, nothing written) | no |
//! | `OOM` at `maxmemory` (`noeviction`): acquire, re-entry, partial release (the last release and renewals still work); a fair acquisition that would evict a dead waiter, or an expirable-permit acquisition that would reclaim expired permits, is refused before that first write | [`LockError::OutOfMemory`] (nothing written) | no |
//! | server down, connection refused or reset | [`LockError::Unavailable`] | yes |
//! | no reply within `command_timeout` | [`LockError::Unavailable`], [`LockError::is_timeout`] | yes |
//! | `TRYAGAIN`, `CLUSTERDOWN`, `LOADING`, `MASTERDOWN`, `BUSY`, `READONLY` | [`LockError::Unavailable`] | yes |
//! | a master refusing writes (`NOREPLICAS`, `MISCONF`), `maxclients` reached: refused before anything ran | [`LockError::Unavailable`] | yes |
//! | an unexpected reply | [`LockError::Protocol`] | no |
//! | a plain `lock()` of a lock the same task holds by a plain `lock()` (it would wait for itself) | [`LockError::SelfDeadlock`] ([`LockError::is_self_deadlock`]; docs/locks.md, "Re-entry within a task") | no |
//! | after [`LockClient::close`] (which gave back what the client held), a guard's or permit's use included | [`LockError::Closed`] | no |
//!
//! The transport itself never retries: the engine retries retryable errors
//! with the same request id, and the request records make a repeated
//! acquire or release return the first outcome instead of counting twice.
//! (The one exception is `NOSCRIPT`, answered by loading the script and
//! running it once more; a cluster transport also sends an
//! [idempotent](ScriptCall::idempotent) call once more after its
//! connection broke.) Unlocking a lock the owner does not hold through
//! [`Lock::unlock_as`] is [`LockError::NotHeld`].
//!
//! ## Replica sync
//!
//! Safe on failover by default: every acquisition of every kind is followed
//! by `WAIT n timeout` (pipelined with it, on a connection no other call
//! uses, so renewals and releases never queue behind a `WAIT`). By default
//! ([`ReplicaSync::connected`], 1 s: Redisson's `checkLockSyncedSlaves`
//! rule) `n` is the number of replicas the master has connected, and the
//! acquisition fails only when none acknowledged while one or more are
//! connected; a master without replicas is sent no `WAIT`, and a user who
//! may not run `WAIT` or `INFO` gets no check rather than an error (see
//! [`replicas`]). [`RedisConfig::replica_sync`]`(n, timeout)` asks for at
//! least `n` (and requires `WAIT`); [`RedisConfig::replica_sync_off`] turns
//! it off. When the rule is not met in time, the hold just taken is given
//! back and the call fails with [`LockError::NotReplicated`]
//! ([`ReplicaSync`]). With one replica on the same loopback machine the
//! default costs an uncontended lock+unlock pair about 1.2× its time with
//! replica sync off (p50 297 µs against 243 µs; lock-bench `W1-replica`).
//!
//! ## Notices
//!
//! One pub/sub connection per client, owned by a background task, carries
//! unlock messages for every kind. A subscription is registered before the
//! waiter waits; it is confirmed once the server confirmed the
//! subscription, or with a retryable timeout error if that did not happen
//! within connect timeout + command timeout (the subscription stays
//! registered and is made on the next reconnect). When the connection
//! drops, the task reconnects with jittered backoff, re-subscribes every
//! channel and then delivers [`Notice::Reset`](lock_core::backend::Notice::Reset).
//!
//! ## Architecture
//!
//! handle ([`Lock`], [`FairLock`]) → engine ([`lock_core`]) → kind's script
//! set (`lock_redis::kinds`, one folder per kind) → transport
//! ([`SingleNode`] here; the cluster transport in `lock-redis-cluster`) →
//! Redis.
#![deny(missing_docs)]

// The crate's own name resolves in the docs of the builder methods that
// `connection_setters!` gives both this crate's and the cluster crate's
// configurations.
extern crate self as lock_redis;

// The crate by job: the client (and what it keeps and reads: its record,
// `describe`), the kinds, the transport (single node, Sentinel, and what
// the cluster transport is built of), and configuration.
mod client;
pub mod config;
// Shared with the other deployments (the in-memory store), the test suites
// and lock-bench: not a service's API, so it stays out of the docs and may
// change.
#[doc(hidden)]
pub mod kinds;
pub mod transport;

#[doc(hidden)]
pub use client::describe;
#[cfg(feature = "serde")]
#[doc(hidden)]
pub use config::de;
pub use config::options;
pub use transport::{commands, credentials, replicas, sentinel, tls};

/// For implementing [`CredentialsProvider`] (an async trait).
pub use async_trait::async_trait;
pub use config::{redact_url, RedisConfig, DEFAULT_CALLS_PER_CONNECTION, DEFAULT_POOL_SIZE};
pub use credentials::{Credentials, CredentialsError, CredentialsProvider, StaticCredentials};
pub use options::{ConnectionOptions, DEFAULT_COMMAND_TIMEOUT, DEFAULT_CONNECT_TIMEOUT};
pub use sentinel::SentinelConfig;
pub use tls::TlsOptions;
pub use transport::single::SingleNode;

pub use lock_core;
pub use lock_script;
pub use lock_script::{KeyLayout, ReplicaSync};
#[doc(hidden)]
pub use lock_script::{ScriptCall, ScriptEnv, Transport};
pub use redis;
#[doc(inline)]
pub use users::*;

/// Every item a service uses, whatever its deployment: the client, every
/// kind's handle and guard, the options, errors and what `describe`
/// returns. Re-exported at this crate's root and at `lock_redis_cluster`'s,
/// from this one list.
#[doc(hidden)]
pub mod users {
    pub use crate::client::LockClient;
    pub use crate::describe::{
        CounterInfo, Description, ExpirableSemaphoreInfo, LeasedPermit, ReadWriteInfo,
        ReadWriteMode,
    };
    pub use crate::kinds::latch::{CountDownLatch, MAX_COUNT};
    pub use crate::kinds::permit_semaphore::{
        ExpirablePermitGuard, PermitExpirableSemaphore, PermitId,
    };
    pub use crate::kinds::rwlock::ReadWriteLock;
    pub use crate::kinds::semaphore::{PermitGuard, Semaphore, MAX_PERMITS};
    pub use lock_fair::{FairLock, FairLockInfo, HandoffLock, QueuedWaiter};
    // The engine's user-facing items, and nothing of its seams for kinds
    // (`lock_core::backend`, `lock_core::backend::Counter`, `lock_core::backend::Engine`):
    // reach those through `lock_core` when building a kind or a transport.
    pub use lock_core::telemetry;
    pub use lock_core::{
        lease_millis, AcquireOptions, ClientConfig, ClientInfo, ClientStats, FencedGuard,
        FencedLock, Guard, Holder, Lock, LockError, LockInfo, LockName, MultiGuard, MultiLock,
        Owner, PollBackoff, RedGuard, RedLock, Result, RetryPolicy, Wait, WaitStrategy, FOREVER,
        MAX_LEASE, MAX_NAME_LEN, WAIT_OVERSHOOT,
    };
}

use std::sync::Arc;

/// Connects a [`LockClient`] with every lock kind to one Redis server: the
/// usual way to start.
///
/// ```no_run
/// # async fn demo() -> lock_redis::Result<()> {
/// use lock_redis::{ClientConfig, RedisConfig};
/// let client = lock_redis::connect(
///     RedisConfig::new("redis://127.0.0.1:6379/"),
///     ClientConfig::default(),
/// )
/// .await?;
/// let guard = client.lock("orders:42")?.lock().await?;
/// guard.unlock().await?;
/// let fair = client.fair_lock("orders:43")?.lock().await?;
/// fair.unlock().await?;
/// # Ok(()) }
/// ```
///
/// # Errors
/// [`LockError::InvalidArgument`] for a bad configuration (before any I/O);
/// a retryable error when the server cannot be reached within the connect
/// timeout (unless [`RedisConfig::lazy_connect`]); [`LockError::Unauthorized`]
/// for rejected credentials or a failing credentials provider;
/// [`LockError::Unsupported`] when the server does not know a command the
/// client needs (renamed or disabled; see [`commands`]). A lazy connect
/// checks none of these.
///
/// # Cancel safety
/// Dropping the future before it resolves closes what it opened.
pub async fn connect(redis: RedisConfig, client: ClientConfig) -> Result<LockClient> {
    redis.validate()?;
    client.validate_for(Some(redis.connection.longest_call()))?;
    LockClient::new(connect_env(&redis).await?, client)
}

/// The single-node transport with every kind's scripts loaded, its key
/// layout and replica sync: what [`connect`] binds the kinds to. For tools
/// and tests that drive a kind's store operations directly
/// ([`kinds::Reentrant::new`], [`ScriptEnv::connection`]).
///
/// # Errors
/// As [`connect`].
///
/// # Cancel safety
/// As [`connect`].
#[doc(hidden)]
pub async fn connect_env(redis: &RedisConfig) -> Result<ScriptEnv> {
    redis.validate()?;
    let transport = Arc::new(SingleNode::new(redis)?);
    if !redis.connection.lazy_connect {
        let needed = commands::single_node(redis.connection.waits_required());
        transport.check(&needed, &kinds::scripts()).await?;
    }
    Ok(ScriptEnv::new(transport, redis.layout()).with_replica_sync(redis.connection.replica_sync))
}
