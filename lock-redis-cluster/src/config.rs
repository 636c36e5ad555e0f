//! [`ClusterConfig`]: where the cluster is and how to talk to it.

use std::time::Duration;

use lock_core::{LockError, Result};
use lock_redis::{RedisConfig, TlsOptions};
use lock_script::KeyLayout;

/// How unlock notices travel through the cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
#[non_exhaustive]
pub enum PubSubMode {
    /// Sharded pub/sub when every seed runs Redis 7 or newer, classic
    /// otherwise. Redisson's default (`ShardedSubscriptionMode.AUTO`) picks
    /// the same way, so mixed Java/Rust services agree.
    #[default]
    Auto,
    /// `SSUBSCRIBE` on the node owning the channel's slot, `SPUBLISH` in the
    /// scripts: an unlock message reaches one shard, not every node.
    Sharded,
    /// `SUBSCRIBE` / `PUBLISH`, broadcast over the cluster bus to every node.
    /// For clusters older than Redis 7, or to match Java services configured
    /// with `ShardedSubscriptionMode.OFF`.
    Classic,
}

pub use lock_script::ReplicaSync;

/// The configuration of a cluster transport.
///
/// ```
/// use std::time::Duration;
/// use lock_redis_cluster::{ClusterConfig, PubSubMode};
///
/// let config = ClusterConfig::new(["redis://10.0.0.1:7000/", "redis://10.0.0.2:7000/"])
///     .key_prefix("billing:")
///     .command_timeout(Duration::from_secs(2))
///     .pubsub(PubSubMode::Auto)
///     .replica_sync(1, Duration::from_millis(200));
/// config.validate().unwrap();
/// // Seed passwords are not printed.
/// let secret = ClusterConfig::new(["redis://:hunter2@10.0.0.1:7000/"]);
/// assert!(!format!("{secret:?}").contains("hunter2"));
/// ```
///
/// With the `serde` feature it is read from a service's configuration file
/// (only `seeds` is required; durations as `"3s"`, `"250ms"`). Like
/// [`RedisConfig`] it is not serialized, so seed passwords are never
/// written out again; [`crate::connect`] validates the result.
///
/// ```toml
/// seeds = ["redis://10.0.0.1:7000/", "redis://10.0.0.2:7000/"]
/// command_timeout = "2s"
/// pubsub = "classic"
/// replica_sync = { replicas = 1, timeout = "200ms" }
/// ```
#[derive(Clone)]
#[cfg_attr(feature = "serde", derive(serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
#[non_exhaustive]
pub struct ClusterConfig {
    /// Nodes to learn the topology from (any nodes of the cluster;
    /// `redis://[user][:password@]host:port/`, or `rediss://…` with the
    /// `tls` feature). Credentials and the scheme of the first seed are used
    /// for every node: with `rediss://`, every connection is TLS (seeds,
    /// the nodes learnt from `CLUSTER SLOTS`, and the pub/sub connections).
    pub seeds: Vec<String>,
    /// Put before every lock name to make its key. Must not contain `{` or
    /// `}`: the key's hash tag must come from the lock name alone.
    #[cfg_attr(feature = "serde", serde(default))]
    pub key_prefix: String,
    /// The longest one call may take, redirects, topology refreshes and
    /// waits for a failover included. Default 3 s.
    #[cfg_attr(
        feature = "serde",
        serde(default = "default_timeout", with = "humantime_serde")
    )]
    pub command_timeout: Duration,
    /// The longest establishing one connection may take. Default 3 s.
    #[cfg_attr(
        feature = "serde",
        serde(default = "default_timeout", with = "humantime_serde")
    )]
    pub connect_timeout: Duration,
    /// Multiplexed connections per master. Default 2.
    #[cfg_attr(feature = "serde", serde(default = "default_pool_size"))]
    pub pool_size: usize,
    /// At most this many `-MOVED`/`-ASK` redirects are followed by one
    /// call. Default 5.
    #[cfg_attr(feature = "serde", serde(default = "default_max_redirects"))]
    pub max_redirects: u32,
    /// How unlock notices travel. Default [`PubSubMode::Auto`].
    #[cfg_attr(feature = "serde", serde(default))]
    pub pubsub: PubSubMode,
    /// When set, every lock acquisition waits (`WAIT`) until this many
    /// replicas have the write; when fewer acknowledge in time the lock is
    /// released again and the acquisition fails with
    /// [`LockError::NotReplicated`]. Off by default.
    #[cfg_attr(feature = "serde", serde(default))]
    pub replica_sync: Option<ReplicaSync>,
    /// The CA to trust and the client certificate to present on every
    /// connection of a `rediss://` cluster (the same options as
    /// [`RedisConfig::tls`]); without it, the system's roots and no client
    /// certificate.
    #[cfg_attr(feature = "serde", serde(skip))]
    pub tls: Option<TlsOptions>,
}

const DEFAULT_TIMEOUT: Duration = Duration::from_secs(3);
const DEFAULT_POOL_SIZE: usize = 2;
const DEFAULT_MAX_REDIRECTS: u32 = 5;

#[cfg(feature = "serde")]
fn default_timeout() -> Duration {
    DEFAULT_TIMEOUT
}

#[cfg(feature = "serde")]
fn default_pool_size() -> usize {
    DEFAULT_POOL_SIZE
}

#[cfg(feature = "serde")]
fn default_max_redirects() -> u32 {
    DEFAULT_MAX_REDIRECTS
}

impl std::fmt::Debug for ClusterConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let seeds: Vec<String> = self
            .seeds
            .iter()
            .map(|s| lock_redis::redact_url(s))
            .collect();
        f.debug_struct("ClusterConfig")
            .field("seeds", &seeds)
            .field("key_prefix", &self.key_prefix)
            .field("command_timeout", &self.command_timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("pool_size", &self.pool_size)
            .field("max_redirects", &self.max_redirects)
            .field("pubsub", &self.pubsub)
            .field("replica_sync", &self.replica_sync)
            .field("tls", &self.tls)
            .finish()
    }
}

impl ClusterConfig {
    /// A configuration with the given seed nodes and defaults for everything
    /// else.
    pub fn new<S: Into<String>>(seeds: impl IntoIterator<Item = S>) -> Self {
        Self {
            seeds: seeds.into_iter().map(Into::into).collect(),
            key_prefix: String::new(),
            command_timeout: DEFAULT_TIMEOUT,
            connect_timeout: DEFAULT_TIMEOUT,
            pool_size: DEFAULT_POOL_SIZE,
            max_redirects: DEFAULT_MAX_REDIRECTS,
            pubsub: PubSubMode::Auto,
            replica_sync: None,
            tls: None,
        }
    }

    /// Sets [`ClusterConfig::key_prefix`].
    pub fn key_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.key_prefix = prefix.into();
        self
    }

    /// Sets [`ClusterConfig::command_timeout`].
    pub fn command_timeout(mut self, timeout: Duration) -> Self {
        self.command_timeout = timeout;
        self
    }

    /// Sets [`ClusterConfig::connect_timeout`].
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Sets [`ClusterConfig::pool_size`].
    pub fn pool_size(mut self, size: usize) -> Self {
        self.pool_size = size;
        self
    }

    /// Sets [`ClusterConfig::max_redirects`].
    pub fn max_redirects(mut self, redirects: u32) -> Self {
        self.max_redirects = redirects;
        self
    }

    /// Sets [`ClusterConfig::pubsub`].
    pub fn pubsub(mut self, mode: PubSubMode) -> Self {
        self.pubsub = mode;
        self
    }

    /// Turns on [`ClusterConfig::replica_sync`].
    pub fn replica_sync(mut self, replicas: u32, timeout: Duration) -> Self {
        self.replica_sync = Some(ReplicaSync::new(replicas, timeout));
        self
    }

    /// Sets [`ClusterConfig::tls`].
    pub fn tls(mut self, tls: TlsOptions) -> Self {
        self.tls = Some(tls);
        self
    }

    /// The key layout this configuration gives.
    pub fn layout(&self) -> KeyLayout {
        KeyLayout::with_prefix(self.key_prefix.clone())
    }

    /// Checks every field without any I/O.
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] naming the first bad field: no seeds,
    /// an unparsable seed URL, a prefix with braces, zero timeouts, pool
    /// size or redirect budget, a replica sync of zero replicas or timeout.
    pub fn validate(&self) -> Result<()> {
        if self.seeds.is_empty() {
            return Err(LockError::invalid("a cluster needs at least one seed URL"));
        }
        for seed in &self.seeds {
            self.node_config(seed).validate()?;
        }
        if self.key_prefix.contains(['{', '}']) {
            return Err(LockError::invalid(format!(
                "key_prefix {:?} contains a brace: it would change the keys' hash slots",
                self.key_prefix
            )));
        }
        if self.max_redirects == 0 {
            return Err(LockError::invalid("max_redirects must be at least 1"));
        }
        if let Some(sync) = self.replica_sync {
            sync.validate()?;
        }
        Ok(())
    }

    /// The single-node configuration used for connections to `url`.
    pub(crate) fn node_config(&self, url: &str) -> RedisConfig {
        let config = RedisConfig::new(url)
            .command_timeout(self.command_timeout)
            .connect_timeout(self.connect_timeout)
            .pool_size(self.pool_size);
        match &self.tls {
            Some(tls) => config.tls(tls.clone()),
            None => config,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_validate() {
        ClusterConfig::new(["redis://127.0.0.1:7000/"])
            .validate()
            .unwrap();
    }

    #[test]
    fn bad_fields_are_named() {
        let base = || ClusterConfig::new(["redis://127.0.0.1:7000/"]);
        let cases = [
            (ClusterConfig::new(Vec::<String>::new()), "seed"),
            (ClusterConfig::new(["nope://x"]), "url"),
            (base().key_prefix("{app}:"), "key_prefix"),
            (base().command_timeout(Duration::ZERO), "command_timeout"),
            (base().pool_size(0), "pool_size"),
            (base().max_redirects(0), "max_redirects"),
            (
                base().replica_sync(0, Duration::from_secs(1)),
                "replica_sync",
            ),
        ];
        for (config, field) in cases {
            let err = config.validate().unwrap_err();
            assert!(err.is_invalid_argument(), "{field}: {err}");
            assert!(err.to_string().contains(field), "{field}: {err}");
        }
    }
}
