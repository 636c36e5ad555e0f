//! [`ConnectionOptions`]: what every deployment (one server, a Sentinel
//! group, a cluster) is configured with alike, written once.
//!
//! `RedisConfig` and `lock_redis_cluster::ClusterConfig` each embed one
//! (their `connection` field) and get the same builder methods for it
//! (`command_timeout`, `connect_timeout`, `key_prefix`, `replica_sync`,
//! `tls`, `credentials`, `lazy_connect`, `pool_size`,
//! `calls_per_connection`, `connection`) from one macro,
//! [`connection_setters!`](crate::connection_setters). A macro rather
//! than a trait or `Deref`: a trait's methods work only where the trait is
//! imported, so every service, test and example calling
//! `RedisConfig::new(url).command_timeout(…)` would need a new `use`;
//! `Deref` to the options would give methods that return the options, not
//! the configuration being built. The macro gives each configuration
//! inherent methods with one definition and one set of docs.
//!
//! In configuration files (feature `serde`) the options sit beside `url`
//! or `seeds` (a file sets `command_timeout = "1s"`, as it did before the
//! options were shared); see the `de` module for how.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use lock_core::{LockError, Result, MAX_LEASE};
use lock_script::{KeyLayout, ReplicaSync};

use crate::transport::credentials::CredentialsProvider;
use crate::transport::tls::TlsOptions;

/// Default [`ConnectionOptions::command_timeout`]: 3 s.
pub const DEFAULT_COMMAND_TIMEOUT: Duration = Duration::from_secs(3);
/// Default [`ConnectionOptions::connect_timeout`]: 3 s.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

/// Default [`ConnectionOptions::pool_size`] of one server (and of a
/// Sentinel group's master): at most 4 multiplexed connections.
///
/// Why 4: with 32 tasks doing acquire + release, 4 connections gave about
/// 1.45× the throughput of 16 (more commands share each write, read and
/// wake-up), while still spreading the work over cores. A connection is
/// filled with [`ConnectionOptions::calls_per_connection`] calls before the
/// next is used, so fewer tasks use fewer connections. (A cluster opens a
/// pool per master, and has a default of its own: 2.)
pub const DEFAULT_POOL_SIZE: usize = 4;

/// Default [`ConnectionOptions::calls_per_connection`]: 8 calls in flight
/// on a connection before the next is used.
///
/// Why 8: tasks taking and releasing lean locks on 1 024 names, 4 slots
/// per client, CPU per acquisition of this process and of redis-server
/// (two runs each; `lock-bench` W3's shape is the second row):
///
/// | tasks | round-robin | 8 per connection | 16 per connection | rslock (1 connection per client) |
/// | --- | --- | --- | --- | --- |
/// | 32, one client | 23.6 + 17.5, 22.8 + 19.4 µs | 17.1 + 15.3, 17.2 + 16.4 µs | 23.1 + 18.9, 22.3 + 18.0 µs | 16.4 + 11.9, 18.9 + 13.7 µs |
/// | 4 clients × 8 | 18.8 + 17.2, 22.0 + 21.5 µs | 15.8 + 14.3, 16.6 + 16.2 µs | | 16.8 + 16.1, 18.3 + 19.2 µs |
pub const DEFAULT_CALLS_PER_CONNECTION: usize = 8;

/// The options every deployment shares; see the [module docs](self).
///
/// ```
/// # use std::time::Duration;
/// use lock_redis::{ConnectionOptions, RedisConfig};
///
/// // Built once, used for a server and (with lock-redis-cluster) a cluster.
/// let shared = ConnectionOptions::new()
///     .key_prefix("billing:")
///     .command_timeout(Duration::from_secs(1))
///     .lazy_connect(true);
/// let config = RedisConfig::new("redis://10.0.0.5:6379/").connection(shared.clone());
/// assert_eq!(config.connection, shared);
/// assert!(config.connection.lazy_connect);
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct ConnectionOptions {
    /// Put before every lock name to make its key (see
    /// [`KeyLayout::with_prefix`]); empty by default. Channels, request
    /// records and token counters derive from the prefixed name.
    pub key_prefix: String,
    /// The longest one call may take, from getting a connection (connecting
    /// it, if needed) to the reply, including loading a script the server
    /// lost (and, on a cluster, redirects, topology refreshes and waits for
    /// a failover). A call that takes longer fails with a retryable timeout
    /// error ([`LockError::is_timeout`]). Default 3 s.
    pub command_timeout: Duration,
    /// The longest establishing one connection may take (a command
    /// connection or a pub/sub connection), asking the
    /// [credentials provider](ConnectionOptions::credentials) included.
    /// Default 3 s.
    pub connect_timeout: Duration,
    /// Wait for replicas after every acquisition of every kind (see
    /// [`ReplicaSync`]). On by default with Redisson's rule
    /// ([`ReplicaSync::connected`], 1 s): a lock write fails only when no
    /// replica acknowledged while at least one is connected, and a master
    /// without replicas is sent no `WAIT`. `None` turns it off
    /// ([`ConnectionOptions::replica_sync_off`], `replica_sync = "off"` in
    /// files).
    pub replica_sync: Option<ReplicaSync>,
    /// The CA to trust and the client certificate to present on `rediss://`
    /// connections (feature `tls`), every connection of the client
    /// included; without it, the system's roots and no client certificate.
    /// Not read from configuration files: certificates are loaded in code,
    /// e.g. with [`TlsOptions::from_files`].
    pub tls: Option<TlsOptions>,
    /// Asked for the user and password at every connect and reconnect of
    /// every connection (command connections, pub/sub connections, every
    /// node of a cluster), for credentials that rotate (cloud IAM tokens);
    /// see [`CredentialsProvider`]. Without it the credentials of the URL
    /// (or of [`crate::RedisConfig::sentinel_master_auth`]) are used: a
    /// static password is a provider that always answers the same. Not
    /// read from configuration files.
    pub credentials: Option<Arc<dyn CredentialsProvider>>,
    /// Return from `connect` without waiting for the server or the cluster
    /// (see [`ConnectionOptions::lazy_connect`](ConnectionOptions::lazy_connect())).
    /// Off by default, unlike rslock and redis-rs's `ConnectionManager`: a
    /// mistyped URL, a wrong password or a missing ACL permission then
    /// fails the service at start, where it is seen, rather than at its
    /// first lock; services that must start during an outage, and RedLock
    /// members, turn it on.
    pub lazy_connect: bool,
    /// The most multiplexed connections calls are spread over, per server
    /// (per master on a cluster). A call takes the first connection with
    /// fewer than [`ConnectionOptions::calls_per_connection`] calls in
    /// flight (round-robin when all have that many), and each is opened on
    /// first use and shared by any number of concurrent calls (their
    /// commands are pipelined), so this is not a limit on concurrency: a
    /// few connections serve many tasks, and fewer connections pipeline
    /// better. `None` (the default): the deployment's own, 4 on one server
    /// ([`DEFAULT_POOL_SIZE`] says why), 2 per master on a cluster.
    ///
    /// (The name is kept from when this was the size of a connection pool;
    /// a pool checked every connection with a `PING` round trip on
    /// checkout, doubling the cost of each lock operation, while
    /// multiplexed connections need no checkout.)
    pub pool_size: Option<usize>,
    /// Calls in flight on one connection before a call uses the next (of
    /// [`ConnectionOptions::pool_size`]); when every connection has that
    /// many, calls take them round-robin. Calls that share a connection
    /// share its writes, reads and wake-ups, on the server's side too, so
    /// a lightly used client keeps one connection open. 0 takes every
    /// call's connection round-robin. Default 8
    /// ([`DEFAULT_CALLS_PER_CONNECTION`] says why).
    pub calls_per_connection: usize,
}

impl Default for ConnectionOptions {
    fn default() -> Self {
        Self {
            key_prefix: String::new(),
            command_timeout: DEFAULT_COMMAND_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            replica_sync: Some(ReplicaSync::default()),
            tls: None,
            credentials: None,
            lazy_connect: false,
            pool_size: None,
            calls_per_connection: DEFAULT_CALLS_PER_CONNECTION,
        }
    }
}

impl ConnectionOptions {
    /// The defaults: no prefix, 3 s timeouts, replica sync by the
    /// connected replicas ([`ReplicaSync::connected`], 1 s), no TLS
    /// options, the URL's credentials, connect at once, the deployment's
    /// pool size filled 8 calls per connection.
    pub fn new() -> Self {
        Self::default()
    }

    /// The key layout these options give.
    pub fn layout(&self) -> KeyLayout {
        KeyLayout::with_prefix(self.key_prefix.clone())
    }

    /// Checks the fields every deployment checks alike, without any I/O.
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] naming the field: a zero or absurdly
    /// long timeout, a replica sync with a zero timeout, TLS
    /// options that do not [validate](TlsOptions::validate), a zero pool
    /// size.
    pub fn validate(&self) -> Result<()> {
        check_timeout(self.command_timeout, "command_timeout")?;
        check_timeout(self.connect_timeout, "connect_timeout")?;
        if let Some(sync) = self.replica_sync {
            sync.validate()?;
        }
        if let Some(tls) = &self.tls {
            tls.validate()?;
        }
        if self.pool_size == Some(0) {
            return Err(LockError::invalid("pool_size must be at least 1"));
        }
        Ok(())
    }

    /// Whether the server must allow `WAIT`: only when replicas are asked
    /// for explicitly ([`ReplicaSync::new`]); the default rule does without
    /// it on a server that refuses it (see [`crate::transport::replicas`]).
    pub fn waits_required(&self) -> bool {
        self.replica_sync
            .is_some_and(|sync| !sync.is_connected_rule())
    }

    /// The [pool size](ConnectionOptions::pool_size), or `default` (the
    /// deployment's) when none is set.
    pub fn pool_size_or(&self, default: usize) -> usize {
        self.pool_size.unwrap_or(default)
    }

    /// The longest acquisition call: the command timeout plus the replica
    /// wait, when replica sync is on.
    pub fn longest_call(&self) -> Duration {
        let replica_wait = self
            .replica_sync
            .map_or(Duration::ZERO, |sync| sync.timeout);
        self.command_timeout.saturating_add(replica_wait)
    }
}

crate::connection_setters!(ConnectionOptions, self => self);

fn check_timeout(timeout: Duration, what: &str) -> Result<()> {
    if timeout.is_zero() {
        return Err(LockError::invalid(format!(
            "{what} must be greater than zero"
        )));
    }
    if timeout > MAX_LEASE {
        return Err(LockError::invalid(format!(
            "{what} of {timeout:?} is longer than the maximum of {MAX_LEASE:?}"
        )));
    }
    Ok(())
}

/// The builder methods of [`ConnectionOptions`], for a configuration type
/// that holds them: `connection_setters!(Type, self => self.field)`
/// gives `Type` one method per option, each setting it on `self.field`.
/// Used by `RedisConfig`, `ClusterConfig` and `ConnectionOptions` itself,
/// so the setters are written (and documented) once; see the
/// [module docs](crate::config::options) for why a macro.
#[doc(hidden)]
#[macro_export]
macro_rules! connection_setters {
    ($ty:ty, $this:ident => $($options:tt)+) => {
        impl $ty {
            /// Sets the key prefix ([`ConnectionOptions::key_prefix`](lock_redis::ConnectionOptions#structfield.key_prefix)).
            #[must_use]
            pub fn key_prefix(mut $this, prefix: impl Into<String>) -> Self {
                $($options)+.key_prefix = prefix.into();
                $this
            }

            /// Sets the longest one call may take ([`ConnectionOptions::command_timeout`](lock_redis::ConnectionOptions#structfield.command_timeout)).
            #[must_use]
            pub fn command_timeout(mut $this, timeout: std::time::Duration) -> Self {
                $($options)+.command_timeout = timeout;
                $this
            }

            /// Sets the longest one connect may take ([`ConnectionOptions::connect_timeout`](lock_redis::ConnectionOptions#structfield.connect_timeout)).
            #[must_use]
            pub fn connect_timeout(mut $this, timeout: std::time::Duration) -> Self {
                $($options)+.connect_timeout = timeout;
                $this
            }

            /// Sets replica sync ([`ConnectionOptions::replica_sync`](lock_redis::ConnectionOptions#structfield.replica_sync)):
            /// every acquisition waits until `replicas` replicas have it,
            /// for at most `timeout`, and fails when fewer acknowledge;
            /// `replicas` 0 is the default rule (as
            /// [`replica_sync_connected`](Self::replica_sync_connected)).
            #[must_use]
            pub fn replica_sync(mut $this, replicas: u32, timeout: std::time::Duration) -> Self {
                $($options)+.replica_sync = Some($crate::ReplicaSync::new(replicas, timeout));
                $this
            }

            /// Sets the default replica sync rule with another `WAIT`
            /// timeout ([`ReplicaSync::connected`](lock_redis::ReplicaSync::connected)):
            /// wait for the replicas connected now, fail only when none
            /// acknowledged while one or more are connected.
            #[must_use]
            pub fn replica_sync_connected(mut $this, timeout: std::time::Duration) -> Self {
                $($options)+.replica_sync = Some($crate::ReplicaSync::connected(timeout));
                $this
            }

            /// Turns replica sync off ([`ConnectionOptions::replica_sync`](lock_redis::ConnectionOptions#structfield.replica_sync)):
            /// acquisitions never wait for replicas, and a lock taken just
            /// before a failover may be taken again on the promoted
            /// replica while its first holder still holds it.
            #[must_use]
            pub fn replica_sync_off(mut $this) -> Self {
                $($options)+.replica_sync = None;
                $this
            }

            /// Sets the TLS options of `rediss://` connections ([`ConnectionOptions::tls`](lock_redis::ConnectionOptions#structfield.tls)).
            #[must_use]
            pub fn tls(mut $this, tls: $crate::TlsOptions) -> Self {
                $($options)+.tls = Some(tls);
                $this
            }

            /// Sets the provider asked for the user and password at every
            /// connect ([`ConnectionOptions::credentials`](lock_redis::ConnectionOptions#structfield.credentials);
            /// see [`CredentialsProvider`](lock_redis::CredentialsProvider)).
            #[must_use]
            pub fn credentials(
                mut $this,
                provider: impl $crate::CredentialsProvider + 'static,
            ) -> Self {
                $($options)+.credentials = Some(std::sync::Arc::new(provider));
                $this
            }

            /// Sets [`ConnectionOptions::lazy_connect`](lock_redis::ConnectionOptions#structfield.lazy_connect):
            /// `connect` then returns a client at once, whether the
            /// servers answer or not, instead of failing on a server (or
            /// a cluster) it cannot reach. Connections are made, scripts
            /// loaded (one `NOSCRIPT` round trip each) and, on a cluster,
            /// the slot map and the pub/sub mode read on first use; calls
            /// fail with retryable errors while the servers are down, and a
            /// waiting acquisition waits it out. What fails at connect
            /// without it (wrong credentials, a server that refuses a
            /// command or lacks one: the command check of
            /// [`commands`](lock_redis::commands) is not run) fails at the
            /// first call instead.
            ///
            /// For a service that must start during an outage, and for the
            /// members of a [`RedLock`](lock_redis::RedLock), which must
            /// all be built though a minority of the masters is down:
            ///
            /// ```no_run
            /// # use lock_redis::{ClientConfig, RedLock, RedisConfig};
            /// # async fn demo(urls: Vec<String>) -> lock_redis::Result<()> {
            /// let mut locks = Vec::new();
            /// for url in urls {
            ///     let redis = RedisConfig::new(url).lazy_connect(true);
            ///     let client = lock_redis::connect(redis, ClientConfig::default()).await?;
            ///     locks.push(client.lock("reports")?);
            /// }
            /// let guard = RedLock::new(locks)?.lock().await?; // a majority suffices
            /// # drop(guard); Ok(()) }
            /// ```
            #[must_use]
            pub fn lazy_connect(mut $this, lazy: bool) -> Self {
                $($options)+.lazy_connect = lazy;
                $this
            }

            /// Sets the most connections per server ([`ConnectionOptions::pool_size`](lock_redis::ConnectionOptions#structfield.pool_size)).
            #[must_use]
            pub fn pool_size(mut $this, size: usize) -> Self {
                $($options)+.pool_size = Some(size);
                $this
            }

            /// Sets the calls in flight on a connection before the next is
            /// used ([`ConnectionOptions::calls_per_connection`](lock_redis::ConnectionOptions#structfield.calls_per_connection)).
            #[must_use]
            pub fn calls_per_connection(mut $this, calls: usize) -> Self {
                $($options)+.calls_per_connection = calls;
                $this
            }

            /// Replaces every shared option at once with `options` (built
            /// once for several deployments, say).
            #[must_use]
            pub fn connection(mut $this, options: $crate::ConnectionOptions) -> Self {
                $($options)+ = options;
                $this
            }
        }
    };
}

impl PartialEq for ConnectionOptions {
    /// Equal when every field is; providers are equal when they are the
    /// same provider (the same `Arc`).
    fn eq(&self, other: &Self) -> bool {
        let same_provider = match (&self.credentials, &other.credentials) {
            (None, None) => true,
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        };
        same_provider
            && self.key_prefix == other.key_prefix
            && self.command_timeout == other.command_timeout
            && self.connect_timeout == other.connect_timeout
            && self.replica_sync == other.replica_sync
            && self.tls == other.tls
            && self.lazy_connect == other.lazy_connect
            && self.pool_size == other.pool_size
            && self.calls_per_connection == other.calls_per_connection
    }
}

impl Eq for ConnectionOptions {}

impl fmt::Debug for ConnectionOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnectionOptions")
            .field("key_prefix", &self.key_prefix)
            .field("command_timeout", &self.command_timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("replica_sync", &self.replica_sync)
            .field("tls", &self.tls)
            .field(
                "credentials",
                &self.credentials.as_ref().map(|_| "<provider>"),
            )
            .field("lazy_connect", &self.lazy_connect)
            .field("pool_size", &self.pool_size)
            .field("calls_per_connection", &self.calls_per_connection)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_validate() {
        let options = ConnectionOptions::new();
        assert_eq!(options.command_timeout, DEFAULT_COMMAND_TIMEOUT);
        assert_eq!(options.connect_timeout, DEFAULT_CONNECT_TIMEOUT);
        assert!(!options.lazy_connect);
        assert_eq!(
            options.replica_sync,
            Some(ReplicaSync::connected(ReplicaSync::DEFAULT_TIMEOUT)),
            "safe on failover by default"
        );
        assert!(!options.waits_required(), "the default does without WAIT");
        assert_eq!(options.pool_size, None, "the deployment's");
        assert_eq!(options.pool_size_or(3), 3);
        assert_eq!(options.clone().pool_size(5).pool_size_or(3), 5);
        assert_eq!(options.calls_per_connection, DEFAULT_CALLS_PER_CONNECTION);
        assert!(options.validate().is_ok());
        let off = options.replica_sync_off();
        assert_eq!(off.replica_sync, None);
        assert!(off.replica_sync(1, Duration::from_secs(1)).waits_required());
    }

    #[test]
    fn bad_fields_are_named() {
        let cases = [
            (
                ConnectionOptions::new().command_timeout(Duration::ZERO),
                "command_timeout",
            ),
            (
                ConnectionOptions::new().connect_timeout(Duration::MAX),
                "connect_timeout",
            ),
            (
                ConnectionOptions::new().replica_sync(1, Duration::ZERO),
                "replica_sync",
            ),
            (ConnectionOptions::new().pool_size(0), "pool_size"),
        ];
        for (options, field) in cases {
            let e = options.validate().unwrap_err();
            assert!(e.is_invalid_argument(), "{e}");
            assert!(e.to_string().contains(field), "{e} should name {field}");
        }
    }

    #[test]
    fn the_longest_call_includes_the_replica_wait() {
        let options = ConnectionOptions::new().command_timeout(Duration::from_secs(1));
        assert_eq!(
            options.longest_call(),
            Duration::from_secs(2),
            "the default's 1 s"
        );
        let off = options.clone().replica_sync_off();
        assert_eq!(off.longest_call(), Duration::from_secs(1));
        let options = options.replica_sync(1, Duration::from_millis(200));
        assert_eq!(options.longest_call(), Duration::from_millis(1200));
    }
}
