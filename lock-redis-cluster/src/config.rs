//! [`ClusterConfig`]: where the cluster is and how to talk to it.

use lock_core::{LockError, Result};
use lock_redis::{ConnectionOptions, RedisConfig};
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
/// The options every deployment shares (key prefix, timeouts, replica
/// sync, TLS, credentials provider, lazy connect, the connections' number
/// and filling, per master here) are in
/// [`ClusterConfig::connection`], set with the same builder methods as on
/// [`RedisConfig`] (see [`ConnectionOptions`]); they apply to every node.
///
/// With the `serde` feature it is read from a service's configuration file
/// (only `seeds` is required; durations as `"3s"`, `"250ms"`; the shared
/// options sit beside `seeds`). Like [`RedisConfig`] it is not serialized,
/// so seed passwords are never written out again; [`crate::connect`]
/// validates the result.
///
/// ```toml
/// seeds = ["redis://10.0.0.1:7000/", "redis://10.0.0.2:7000/"]
/// command_timeout = "2s"
/// pubsub = "classic"
/// replica_sync = { replicas = 1, timeout = "200ms" }
/// ```
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClusterConfig {
    /// Nodes to learn the topology from (any nodes of the cluster;
    /// `redis://[user][:password@]host:port/`, or `rediss://…` with the
    /// `tls` feature). Credentials and the scheme of the first seed are used
    /// for every node (unless a
    /// [credentials provider](ConnectionOptions::credentials) is set): with
    /// `rediss://`, every connection is TLS (seeds, the nodes learnt from
    /// `CLUSTER SLOTS`, and the pub/sub connections).
    pub seeds: Vec<String>,
    /// What every deployment shares, for every node: key prefix (which
    /// must not contain `{` or `}` here: the key's hash tag must come from
    /// the lock name alone), timeouts (the command timeout covers
    /// redirects, topology refreshes and waits for a failover), replica
    /// sync, TLS, credentials, lazy connect, and the connections per
    /// master ([`ConnectionOptions::pool_size`], default
    /// [`DEFAULT_POOL_SIZE`] here) and their filling
    /// ([`ConnectionOptions::calls_per_connection`]).
    pub connection: ConnectionOptions,
    /// At most this many `-MOVED`/`-ASK` redirects are followed by one
    /// call. Default 5.
    pub max_redirects: u32,
    /// How unlock notices travel. Default [`PubSubMode::Auto`].
    pub pubsub: PubSubMode,
}

/// The default [`ConnectionOptions::pool_size`] of a cluster: at most 2
/// multiplexed connections per master (a cluster spreads its calls over
/// its masters already).
pub const DEFAULT_POOL_SIZE: usize = 2;
const DEFAULT_MAX_REDIRECTS: u32 = 5;

impl std::fmt::Debug for ClusterConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let seeds: Vec<String> = self
            .seeds
            .iter()
            .map(|s| lock_redis::redact_url(s))
            .collect();
        f.debug_struct("ClusterConfig")
            .field("seeds", &seeds)
            .field("connection", &self.connection)
            .field("max_redirects", &self.max_redirects)
            .field("pubsub", &self.pubsub)
            .finish()
    }
}

lock_redis::connection_setters!(ClusterConfig, self => self.connection);

impl ClusterConfig {
    /// A configuration with the given seed nodes and defaults for everything
    /// else.
    pub fn new<S: Into<String>>(seeds: impl IntoIterator<Item = S>) -> Self {
        Self {
            seeds: seeds.into_iter().map(Into::into).collect(),
            connection: ConnectionOptions::default(),
            max_redirects: DEFAULT_MAX_REDIRECTS,
            pubsub: PubSubMode::Auto,
        }
    }

    /// Sets [`ClusterConfig::max_redirects`].
    #[must_use]
    pub fn max_redirects(mut self, redirects: u32) -> Self {
        self.max_redirects = redirects;
        self
    }

    /// Sets [`ClusterConfig::pubsub`].
    #[must_use]
    pub fn pubsub(mut self, mode: PubSubMode) -> Self {
        self.pubsub = mode;
        self
    }

    /// The key layout this configuration gives.
    pub fn layout(&self) -> KeyLayout {
        self.connection.layout()
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
        if self.connection.key_prefix.contains(['{', '}']) {
            return Err(LockError::invalid(format!(
                "key_prefix {:?} contains a brace: it would change the keys' hash slots",
                self.connection.key_prefix
            )));
        }
        if self.max_redirects == 0 {
            return Err(LockError::invalid("max_redirects must be at least 1"));
        }
        Ok(())
    }

    /// The single-node configuration used for connections to `url`: the
    /// shared options, with the cluster's pool size when none is set.
    pub(crate) fn node_config(&self, url: &str) -> RedisConfig {
        RedisConfig::new(url)
            .connection(self.connection.clone())
            .pool_size(self.connection.pool_size_or(DEFAULT_POOL_SIZE))
    }
}

/// Read by hand, with the shared options beside the cluster's own fields
/// (`lock_redis`'s `de` module says why not `#[serde(flatten)]`).
#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for ClusterConfig {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use lock_redis::de::{connection_field, unknown_field, FieldName};
        use serde::de::{Error, MapAccess, Visitor};

        struct Config;
        impl<'de> Visitor<'de> for Config {
            type Value = ClusterConfig;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a cluster configuration (a table with `seeds`)")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut config = ClusterConfig::new(Vec::<String>::new());
                let mut seeds = None;
                let fields = FieldName {
                    own: &["seeds", "max_redirects", "pubsub"],
                };
                while let Some(key) = map.next_key_seed(fields)? {
                    match key.as_str() {
                        "seeds" => seeds = Some(map.next_value()?),
                        "max_redirects" => config.max_redirects = map.next_value()?,
                        "pubsub" => config.pubsub = map.next_value()?,
                        other => {
                            if !connection_field(&mut config.connection, other, &mut map)? {
                                return Err(unknown_field(other));
                            }
                        }
                    }
                }
                config.seeds = seeds.ok_or_else(|| A::Error::missing_field("seeds"))?;
                Ok(config)
            }
        }
        deserializer.deserialize_map(Config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// The node connections fill as the cluster configuration says.
    #[test]
    fn nodes_get_the_pools_size_and_filling() {
        let node = ClusterConfig::new(["redis://127.0.0.1:7000/"])
            .pool_size(3)
            .calls_per_connection(5)
            .node_config("redis://127.0.0.1:7001/");
        assert_eq!(
            (
                node.connection.pool_size,
                node.connection.calls_per_connection
            ),
            (Some(3), 5)
        );
        let default = ClusterConfig::new(["redis://127.0.0.1:7000/"]).node_config("redis://h/");
        assert_eq!(default.connection.pool_size, Some(DEFAULT_POOL_SIZE));
        assert_eq!(
            default.connection.calls_per_connection,
            lock_redis::DEFAULT_CALLS_PER_CONNECTION
        );
        // Shared options without a pool size keep the cluster's default.
        let shared = ClusterConfig::new(["redis://127.0.0.1:7000/"])
            .connection(ConnectionOptions::new())
            .node_config("redis://h/");
        assert_eq!(shared.connection.pool_size, Some(DEFAULT_POOL_SIZE));
    }

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
            (base().replica_sync(1, Duration::ZERO), "replica_sync"),
        ];
        for (config, field) in cases {
            let err = config.validate().unwrap_err();
            assert!(err.is_invalid_argument(), "{field}: {err}");
            assert!(err.to_string().contains(field), "{field}: {err}");
        }
    }
}
