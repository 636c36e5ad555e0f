//! From the global options to a connected [`LockClient`]: the one place
//! that knows which backends exist.

use std::time::Duration;

use lock_core::{ClientConfig, LockClient, LockError};
use lock_redis::RedisConfig;
use lock_redis_cluster::ClusterConfig;

use crate::cli::Global;
use crate::exit::Failure;

/// How long establishing a connection may take. Short, because a person or
/// a cron job is waiting and an unreachable server should be reported in
/// about a second, not hang.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// How long one command may take. Also bounds each watchdog renewal; the
/// engine retries failed ones, so a short blip does not lose the lock.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(2);

/// One process, a few commands at a time: one connection is plenty.
const CONNECTIONS: usize = 1;

/// Connects a client (it serves every lock kind; commands pick the handle)
/// to the server the global options name.
///
/// # Errors
/// Exit 64 for a bad URL or option (before any I/O), 69 when the server
/// cannot be reached.
pub(crate) async fn client(global: &Global) -> Result<LockClient, Failure> {
    client_with(global, ClientConfig::default()).await
}

/// As [`client`], starting from `config` (the watchdog timeout is set from
/// the global options).
///
/// # Errors
/// As [`client`].
pub(crate) async fn client_with(
    global: &Global,
    config: ClientConfig,
) -> Result<LockClient, Failure> {
    let config = config.watchdog_timeout(global.watchdog_timeout);
    config
        .validate()
        .map_err(|e| Failure::lock("bad --watchdog-timeout", &e))?;
    if global.cluster.is_empty() {
        single_node(global, config).await
    } else {
        cluster(global, config).await
    }
}

/// A Redis Cluster, from `--cluster`.
async fn cluster(global: &Global, config: ClientConfig) -> Result<LockClient, Failure> {
    let cluster = ClusterConfig::new(global.cluster.iter().cloned())
        .key_prefix(global.prefix.as_str())
        .connect_timeout(CONNECT_TIMEOUT)
        .command_timeout(COMMAND_TIMEOUT)
        .pool_size(CONNECTIONS);
    if let Err(e) = cluster.validate() {
        return Err(Failure::lock("bad --cluster", &e));
    }
    lock_redis_cluster::connect(cluster, config)
        .await
        .map_err(|e| unreachable_or("the Redis Cluster", &e))
}

/// One Redis server, from `--url`.
async fn single_node(global: &Global, config: ClientConfig) -> Result<LockClient, Failure> {
    let redis = RedisConfig::new(global.url.as_str())
        .key_prefix(global.prefix.as_str())
        .connect_timeout(CONNECT_TIMEOUT)
        .command_timeout(COMMAND_TIMEOUT)
        .pool_size(CONNECTIONS);
    // Name the server in errors by address only: the URL may hold a
    // password.
    let server = match redis.connection_info() {
        Ok(info) => info.addr().to_string(),
        Err(e) => return Err(Failure::lock("bad --url", &e)),
    };
    lock_redis::connect(redis, config)
        .await
        .map_err(|e| unreachable_or(&format!("Redis at {server}"), &e))
}

/// One client per `--redlock` server, connected concurrently (each with
/// the global prefix and timeouts).
///
/// # Errors
/// As [`client`], for the first server that fails: a RedLock's majority
/// is counted over every server named, so each must be reachable.
pub(crate) async fn redlock_clients(
    global: &Global,
    urls: &[String],
    config: ClientConfig,
) -> Result<Vec<LockClient>, Failure> {
    let config = config.watchdog_timeout(global.watchdog_timeout);
    config
        .validate()
        .map_err(|e| Failure::lock("bad --watchdog-timeout", &e))?;
    let connecting = urls.iter().map(|url| {
        let global = Global {
            url: url.clone(),
            cluster: Vec::new(),
            prefix: global.prefix.clone(),
            watchdog_timeout: global.watchdog_timeout,
        };
        let config = config.clone();
        async move { single_node(&global, config).await }
    });
    futures::future::join_all(connecting)
        .await
        .into_iter()
        .collect()
}

/// A connect error, naming the server or cluster (and saying "cannot reach" when the
/// error is a connection failure rather than, say, rejected credentials).
fn unreachable_or(server: &str, err: &LockError) -> Failure {
    let context = if err.is_retryable() {
        format!("cannot reach {server}")
    } else {
        server.to_owned()
    };
    Failure::lock(&context, err)
}
