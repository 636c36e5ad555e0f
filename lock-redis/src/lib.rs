//! # lock-redis: the Redis backend of the lock engine
//!
//! [`RedisBackend`] implements [`LockBackend`] on one Redis server with the
//! key layout, scripts and replies of Redisson 4.x's reentrant lock, so Java
//! services using Redisson and Rust services using this crate can share
//! locks. This crate re-exports [`redis`] and the core types of
//! [`lock_core`], so it is the only dependency a service needs.
//!
//! ## Configuration
//!
//! ```no_run
//! use std::time::Duration;
//! use lock_redis::{LockBackend, RedisBackend, RedisConfig};
//!
//! # async fn demo() -> lock_redis::Result<()> {
//! let config = RedisConfig::new("redis://app:secret@10.0.0.5:6379/0") // user, password, db
//!     .key_prefix("billing:")                 // lock "job" lives at key "billing:job"
//!     .command_timeout(Duration::from_secs(1)) // default 3 s
//!     .connect_timeout(Duration::from_secs(2)) // default 3 s
//!     .pool_size(8);                          // connections; default 4
//! let backend = RedisBackend::connect(config).await?;
//! # let _ = backend; Ok(()) }
//! ```
//!
//! A bad configuration (unparsable URL, `rediss://` without the `tls`
//! feature, zero timeouts or pool size) is rejected by
//! [`RedisBackend::connect`] with [`LockError::InvalidArgument`] before any
//! I/O. `connect` then makes one connection and loads the scripts, so an
//! unreachable server or wrong password shows up there. Features: `tls`
//! enables `rediss://` URLs (rustls with the system's root certificates).
//!
//! ## Connections
//!
//! Scripts run on [`RedisConfig::pool_size`] multiplexed connections (4 by
//! default), taken round-robin and shared by any number of concurrent
//! calls; each is opened on first use. Every lock operation is exactly one
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
//! | unlock / acquire latches | `redisson_unlock_latch:{…}:<request-id>` → `1` / `0` / `not held`; `redisson_lock_latch:{…}:<request-id>` → token / `held`: every outcome of a request |
//! | fencing counter | `redisson_lock_token:{<prefix><name>}` (never expires) |
//!
//! (See [`KeyLayout`] for names that contain `{`.) Each operation is one Lua
//! script (`src/scripts/*.lua`), run with `EVALSHA`; a server that lost its
//! script cache gets the script loaded again transparently.
//!
//! ## Errors
//!
//! | situation | error | [`LockError::is_retryable`] |
//! | --- | --- | --- |
//! | bad configuration, rejected credentials, zero lease | [`LockError::InvalidArgument`] | no |
//! | a non-hash value at the lock key, a fencing counter that is not an integer | [`LockError::WrongType`] naming the key (value left untouched, nothing written) | no |
//! | `OOM` at `maxmemory` (`noeviction`): acquire, re-entry, partial release (the last release and renewals still work) | [`LockError::OutOfMemory`] (nothing written) | no |
//! | server down, connection refused or reset | [`LockError::Unavailable`] | yes |
//! | no reply within `command_timeout` | [`LockError::Unavailable`], [`LockError::is_timeout`] | yes |
//! | `TRYAGAIN`, `CLUSTERDOWN`, `LOADING`, `MASTERDOWN`, `BUSY`, `READONLY` | [`LockError::Unavailable`] | yes |
//! | an unexpected reply | [`LockError::Protocol`] | no |
//! | after [`LockBackend::close`] | [`LockError::Closed`] | no |
//!
//! The backend itself never retries: the engine retries retryable errors
//! with the same request id, and the latches make a repeated acquire or
//! release return the first outcome instead of counting twice. (The one
//! exception is `NOSCRIPT`, answered by loading the script and running it
//! once more; a cluster transport also sends an
//! [idempotent](scripts::ScriptCall::idempotent) call once more after its
//! connection broke.) Unlocking a lock the owner does not hold is not an error here:
//! [`LockBackend::release`] returns [`ReleaseOutcome::NotHeld`].
//!
//! ## Notices
//!
//! One pub/sub connection per backend, owned by a background task, carries
//! unlock messages. [`LockBackend::subscribe`] registers the channel before
//! it returns; its future resolves `Ok` once the server confirmed the
//! subscription, or with a retryable timeout error if that did not happen
//! within connect timeout + command timeout (the subscription stays
//! registered and is made on the next reconnect). When the connection
//! drops, the task reconnects with jittered backoff, re-subscribes every
//! channel and then delivers [`Notice::Reset`].
//!
//! ## Architecture
//!
//! engine ([`lock_core`]) → [`RedisBackend`] (scripts, layout, replies) →
//! [`Transport`] (where keys live: [`SingleNode`] here; a cluster transport
//! plugs in through [`RedisBackend::with_transport`]).
#![deny(missing_docs)]

pub mod backend;
pub mod config;
pub mod connections;
pub mod error;
mod pubsub;
pub mod replies;
pub mod scripts;
pub mod single;
pub mod subscriptions;
pub mod transport;

pub use backend::RedisBackend;
pub use config::RedisConfig;
pub use single::SingleNode;
pub use transport::{PubSubEvent, PubSubHandler, Transport};

pub use lock_core;
pub use lock_core::*;
pub use redis;

/// Connects a [`LockClient`] to Redis: the usual way to start.
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
/// # Ok(()) }
/// ```
///
/// # Errors
/// [`LockError::InvalidArgument`] for a bad configuration (before any I/O);
/// a retryable error when the server cannot be reached within the connect
/// timeout.
///
/// # Cancel safety
/// Dropping the future before it resolves closes what it opened.
pub async fn connect(redis: RedisConfig, client: ClientConfig) -> Result<LockClient> {
    client.validate_for(Some(redis.command_timeout))?;
    let backend = RedisBackend::connect(redis).await?;
    LockClient::new(std::sync::Arc::new(backend), client)
}
