//! # lock-redis-cluster: locks on Redis Cluster
//!
//! A [`Transport`] for Redis Cluster, and nothing else: it runs every lock
//! kind's scripts (registered by [`lock_redis::LockClient::new`]) on the
//! master owning each lock's hash slot, and knows no kind. Same locks, same
//! Redisson-compatible layout, same API, same [`LockClient`]: only the
//! connection differs.
//!
//! ```no_run
//! # async fn demo() -> lock_redis_cluster::Result<()> {
//! use lock_redis_cluster::{ClientConfig, ClusterConfig};
//!
//! let client = lock_redis_cluster::connect(
//!     ClusterConfig::new(["redis://10.0.0.1:7000/", "redis://10.0.0.2:7000/"]),
//!     ClientConfig::default(),
//! )
//! .await?;
//! let guard = client.lock("orders:42")?.lock().await?;
//! guard.unlock().await?;
//! let fair = client.fair_lock("orders:43")?.lock().await?; // same client
//! fair.unlock().await?;
//! # Ok(()) }
//! ```
//!
//! ## TLS
//! With `rediss://` seeds (feature `tls`), every connection is TLS: the
//! seeds, every node learnt from `CLUSTER SLOTS` (asked over TLS, a node
//! answers with its TLS ports) and the pub/sub connections, sharded or
//! not, all with [`ClusterConfig::tls`] (the same [`TlsOptions`] as one
//! server: a custom CA, a client certificate). The server certificates must
//! name the addresses the nodes announce (often their IPs). A refused
//! certificate is [`LockError::Tls`].
//!
//! ## Routing
//! A key's slot is CRC16/XMODEM of its hash tag (the text between the first
//! `{` and the next `}`, when not empty) or of the whole key, mod 16384
//! ([`slot`]). Every key and channel of one lock shares a slot: the lock key
//! is the lock name, and every helper key and channel carries the name as
//! its hash tag (`redisson_lock__channel:{name}`), as Redisson does.
//!
//! **Lock names with braces**: a name containing `{` is used as is in the
//! helper names (`redisson_lock__channel:{tag}rest`), so its own hash tag
//! decides the slot of everything. That works when the name's tag is
//! well formed (`{user:7}:orders`); a name whose keys would land in
//! different slots (such as `a{}b` with an empty tag) is rejected with
//! [`LockError::InvalidArgument`] before any I/O. The key prefix must not
//! contain braces ([`ClusterConfig::validate`]).
//!
//! Each script call goes to the master of its slot over a few multiplexed
//! connections per master (the single-node [`lock_redis::transport::ConnectionSet`]
//! machinery). The transport handles the cluster's answers itself:
//!
//! | answer | what happens |
//! | --- | --- |
//! | `-MOVED slot addr` | the slot map is corrected, a full refresh starts in the background, the call goes to `addr` |
//! | `-ASK slot addr` | the call goes to `addr` once, after `ASKING` (pipelined, one round trip) |
//! | `-TRYAGAIN` (a lock's keys split by a migration in progress) | sent again after a short backoff |
//! | `-CLUSTERDOWN`, `-MASTERDOWN`, `-LOADING`, `-READONLY` | the topology is read again, then the call is sent again after a backoff |
//! | master unreachable (connection refused) | topology re-read and the call retried with backoff until a replica is promoted |
//! | connection broken after sending | an [idempotent](lock_script::ScriptCall::idempotent) call (a recorded acquire or release, a renewal, a read) is sent once more on a new connection (its request record makes a repeat return the first outcome), then a retryable error; any other call (a release with retries off, so without a record; a force unlock) gets the retryable error at once, as a repeat could count twice |
//! | no reply in time | a retryable error (the outcome is unknown; the engine retries with the same request id, so nothing is counted twice) |
//!
//! At most [`ClusterConfig::max_redirects`] redirects are followed per call,
//! and everything, waits included, happens within
//! [`ClusterConfig::command_timeout`]. Topology refreshes (`CLUSTER SLOTS`,
//! asking the known masters, then the seeds) are single-flight and at most
//! one per 100 ms.
//!
//! ## Renewals: one master's outage delays no other master's
//! Each master is one [lane](Transport::lane) (by address, as the slot map
//! last said): the watchdog renews each master's locks on their own, all
//! masters at once (one script per slot and chunk, pipelined on the
//! master), and applies each call's results as soon as it returns. A
//! master that is dead or slow, its calls waiting out the command timeout,
//! delays no renewal of a lock on another master: its locks are reported
//! lost when their lease runs out (unless a replica takes over in time),
//! and the others are kept. While one master's renewal is still waiting,
//! it is not sent again; its later windows are not sent once one reached
//! nothing.
//!
//! We do not use `redis`'s own cluster client: we need per-call deadlines
//! that cover redirects and failover waits, routing of script calls by all
//! of their keys, and pub/sub that follows slots; we use `redis` for
//! connections, commands and replies only.
//!
//! ## Partial outages
//! Connecting needs one seed that answers `CLUSTER SLOTS`; every node is
//! connected on first use, and the pub/sub mode ([`PubSubMode::Auto`]) is
//! read from the masters that answer. So a client starts while a master is
//! down: calls for slots on healthy masters work at once, and calls for the
//! dead master's slots wait for its replica (table above) within the
//! command timeout; a waiting acquisition then tries again until its own
//! deadline (see `lock_core`'s [`Lock::acquire`]).
//!
//! ## Lazy start
//! With [`lazy_connect`](lock_redis::ConnectionOptions#structfield.lazy_connect)
//! (off by default, as on one server: a wrong seed list or password then
//! fails the service at start), [`connect`] does no I/O: the client is
//! built while every seed is down. The first call (or subscription) reads
//! the slot map and, with [`PubSubMode::Auto`], the masters' versions,
//! once for all callers; until that worked, calls fail with retryable
//! errors, so the retry policy applies and a waiting acquisition rides the
//! outage out. A script call built before the pub/sub mode is known waits
//! for it, so no script publishes with a guessed command.
//!
//! ## Credentials
//! A [credentials provider](lock_redis::CredentialsProvider) set with
//! `credentials(…)` is asked at every connect of every node connection,
//! command and pub/sub, instead of using the first seed's credentials: a
//! reconnect after a token rotated uses the fresh one.
//!
//! ## Notices
//! On Redis 7+ ([`PubSubMode::Auto`]) unlock messages use sharded pub/sub:
//! the scripts `SPUBLISH` and each waiter's channel is `SSUBSCRIBE`d on the
//! master owning its slot, so a message reaches one shard. Older clusters,
//! or [`PubSubMode::Classic`], use `PUBLISH`/`SUBSCRIBE`. Subscriptions
//! follow their slots when they move (a migration, a failover), and after
//! any loss of a subscription the engine is told to look at its waiters
//! again ([`lock_core::backend::Notice::Reset`]); waits are bounded by the holder's
//! TTL in any case.
//!
//! ## Replica sync
//! On by default, as on a single node ([`ReplicaSync`] is the one option
//! both use): each acquisition is followed by `WAIT n timeout`, pipelined
//! with it on one of its master's connections that no other call uses
//! (renewals and releases never queue behind a `WAIT`). By default `n` is
//! the number of replicas that master has connected (read from its
//! `INFO replication` about once a second, per master) and the acquisition
//! fails only when none acknowledged (Redisson's rule); a master without
//! replicas is sent no `WAIT`. [`ClusterConfig::replica_sync`]`(n, timeout)`
//! asks for at least `n`, `replica_sync_off()` turns it off. When the rule
//! is not met in time, the hold just taken is released and the call fails
//! with [`LockError::NotReplicated`]: a lock reported taken is on a replica,
//! so it survives the failover of its master. Releases and renewals do not
//! wait. During a slot migration (`ASK`), the importing master's replicas
//! are waited for only when their count is known already.
//!
//! ## Errors
//! As in [`lock_redis`] (see its error table), plus
//! [`LockError::InvalidArgument`] for a lock name whose keys fall in
//! different slots, and [`LockError::NotReplicated`] with replica sync.
//!
//! ## Limits
//! Seeds and nodes are reached over TCP (`redis://`, or `rediss://` with
//! the `tls` feature); Unix sockets are not supported for clusters. Reads
//! never go to replicas.
#![deny(missing_docs)]

mod commands;
pub mod config;
mod nodes;
mod pubsub;
mod redirect;
mod start;
pub mod topology;

/// Hash slots (CRC16, hash tags): kept in `lock-script`, shared with the
/// single-node transport's slot grouping behind proxies.
pub use lock_script::slot;
mod transport;

use std::sync::Arc;

pub use config::{ClusterConfig, PubSubMode, ReplicaSync};
#[doc(inline)]
pub use lock_redis::users::*;
pub use lock_redis::{
    Credentials, CredentialsError, CredentialsProvider, StaticCredentials, TlsOptions,
};
pub use lock_script::KeyLayout;
#[doc(hidden)]
pub use lock_script::Transport;
pub use topology::SlotMap;
pub use transport::ClusterTransport;

pub use lock_core;
pub use lock_redis;
pub use lock_script;
pub use redis;

/// Connects a [`LockClient`] with every lock kind to a cluster: the usual
/// way to start. [`LockClient::lock`] and [`LockClient::fair_lock`] share
/// its connections, pub/sub and watchdog.
///
/// # Errors
/// [`LockError::InvalidArgument`] for a bad configuration (before any
/// I/O); unless lazy, [`LockError::Unauthorized`] for refused credentials
/// (or a failing credentials provider), and a retryable error when no seed
/// answers within the command timeout or the cluster does not serve every
/// slot.
///
/// # Cancel safety
/// Dropping the future before it resolves closes what it opened.
pub async fn connect(cluster: ClusterConfig, client: ClientConfig) -> Result<LockClient> {
    client.validate_for(Some(cluster.connection.longest_call()))?;
    let layout = cluster.layout();
    let sync = cluster.connection.replica_sync;
    let transport = ClusterTransport::connect(cluster).await?;
    let env = lock_script::ScriptEnv::new(Arc::new(transport), layout).with_replica_sync(sync);
    lock_redis::LockClient::new(env, client)
}
