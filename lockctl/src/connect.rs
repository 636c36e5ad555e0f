//! From the global options to a connected [`LockClient`]: the one place
//! that knows which backends exist.

use std::time::Duration;

use lock_core::{ClientConfig, LockClient, LockError};
use lock_redis::RedisConfig;
use lock_redis_cluster::ClusterConfig;
use tokio::time::Instant;

use crate::cli::Global;
use crate::exit::{Failure, UNAVAILABLE};

/// How long establishing a connection may take. Short, because a person or
/// a cron job is waiting and an unreachable server should be reported in
/// about a second, not hang.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// How long one command may take. Also bounds each watchdog renewal; the
/// engine retries failed ones, so a short blip does not lose the lock.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(2);

/// One process, a few commands at a time: one connection is plenty.
const CONNECTIONS: usize = 1;

/// First pause before connecting again (`run --wait`), doubled up to
/// [`RECONNECT_BACKOFF_MAX`]: a restart or failover takes seconds, so
/// there is no point in knocking faster, and little in waiting longer.
const RECONNECT_BACKOFF: Duration = Duration::from_millis(100);
const RECONNECT_BACKOFF_MAX: Duration = Duration::from_secs(1);

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

/// As [`client_with`], but while the server cannot be reached (exit 69)
/// tries again with backoff until `deadline`: `run --wait` waits out a
/// server that is restarting or failing over in its connect phase too.
/// Without a deadline it tries once, so an unreachable server is still
/// reported at once.
///
/// # Errors
/// As [`client`]; 69 with the last error when `deadline` passed.
pub(crate) async fn client_by(
    global: &Global,
    config: ClientConfig,
    deadline: Option<Instant>,
) -> Result<LockClient, Failure> {
    let mut backoff = RECONNECT_BACKOFF;
    loop {
        match client_with(global, config.clone()).await {
            Err(failure) if failure.code == UNAVAILABLE => {
                let Some(deadline) = deadline else {
                    return Err(failure);
                };
                let now = Instant::now();
                if now >= deadline {
                    return Err(failure);
                }
                // One last try at the deadline itself.
                tokio::time::sleep_until((now + backoff).min(deadline)).await;
                backoff = (backoff * 2).min(RECONNECT_BACKOFF_MAX);
            }
            result => return result,
        }
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
