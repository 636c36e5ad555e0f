//! From the global options to a connected [`LockClient`]: the one place
//! that knows which backends exist.

use std::time::Duration;

use lock_redis::{ClientConfig, LockClient, LockError};
use lock_redis::{RedisConfig, TlsOptions};
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

/// Where the password comes from when the URL carries none: never a flag,
/// whose value any user can read in `ps`.
const PASSWORD_VAR: &str = "REDIS_PASSWORD";

/// Connects a client (it serves every lock kind; commands pick the handle)
/// to the server the global options name.
///
/// # Errors
/// Exit 64 for a bad URL or option (before any I/O), 69 when the server
/// cannot be reached, 77 when it refuses the credentials or a TLS
/// certificate.
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
    let config = client_config(global, config)?;
    match target(global)? {
        Target::Node { redis, server } => lock_redis::connect(redis, config)
            .await
            .map_err(|e| unreachable_or(&server, &e)),
        Target::Cluster(cluster) => lock_redis_cluster::connect(cluster, config)
            .await
            .map_err(|e| unreachable_or(CLUSTER, &e)),
    }
}

/// `config` with the global watchdog timeout and service name, checked.
///
/// # Errors
/// Exit 64 for a watchdog timeout or service name the library refuses.
pub(crate) fn client_config(
    global: &Global,
    config: ClientConfig,
) -> Result<ClientConfig, Failure> {
    let mut config = config.watchdog_timeout(global.watchdog_timeout);
    config
        .validate()
        .map_err(|e| Failure::lock("bad --watchdog-timeout", &e))?;
    if let Some(service) = &global.service {
        config = config.service_name(service);
        config
            .validate()
            .map_err(|e| Failure::lock("bad --service", &e))?;
    }
    Ok(config)
}

/// Where the global options point, checked before any I/O.
pub(crate) enum Target {
    /// One server (`--url`), or the master of a Sentinel group; `server`
    /// names it in errors (without a password).
    Node { redis: RedisConfig, server: String },
    /// A Redis Cluster (`--cluster`).
    Cluster(ClusterConfig),
}

/// How errors name a cluster.
pub(crate) const CLUSTER: &str = "the Redis Cluster";

/// The [`Target`] of the global options: `--cluster`, `--sentinel`, or
/// `--url`.
///
/// # Errors
/// Exit 64 for a bad URL or option.
pub(crate) fn target(global: &Global) -> Result<Target, Failure> {
    if !global.cluster.is_empty() {
        cluster(global).map(Target::Cluster)
    } else if let Some(master) = &global.master {
        let server = format!("the Redis master {master:?} via Sentinel");
        sentinel(global, master).map(|redis| Target::Node { redis, server })
    } else {
        let (redis, server) = node(global, &global.url, false)?;
        Ok(Target::Node { redis, server })
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

/// The master of a Sentinel group, from `--sentinel` and `--master`.
fn sentinel(global: &Global, master: &str) -> Result<RedisConfig, Failure> {
    // The library does not speak TLS to sentinels yet: refuse the files
    // rather than connect in the clear without saying so.
    if tls(global)?.is_some() {
        return Err(Failure::lock(
            "bad --sentinel",
            &LockError::invalid(
                "--tls-ca, --tls-cert and --tls-key do not work with --sentinel yet",
            ),
        ));
    }
    let mut redis = RedisConfig::sentinel(global.sentinel.iter().cloned(), master)
        .key_prefix(global.prefix.as_str())
        .connect_timeout(CONNECT_TIMEOUT)
        .command_timeout(COMMAND_TIMEOUT)
        .pool_size(CONNECTIONS);
    if let Some(replicas) = global.replica_sync {
        redis = redis.replica_sync(replicas, global.replica_sync_timeout);
    }
    // The password is the master's (the sentinels' own, if any, goes in
    // their URLs).
    if let Ok(password) = std::env::var(PASSWORD_VAR)
        && !password.is_empty()
    {
        redis = redis.sentinel_master_auth(None, password);
    }
    if let Err(e) = redis.validate() {
        return Err(Failure::lock("bad --sentinel or --master", &e));
    }
    Ok(redis)
}

/// A Redis Cluster, from `--cluster`.
fn cluster(global: &Global) -> Result<ClusterConfig, Failure> {
    let seeds = global
        .cluster
        .iter()
        .map(|url| with_password(url))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Failure::lock("bad --cluster", &e))?;
    let mut cluster = ClusterConfig::new(seeds)
        .key_prefix(global.prefix.as_str())
        .connect_timeout(CONNECT_TIMEOUT)
        .command_timeout(COMMAND_TIMEOUT)
        .pool_size(CONNECTIONS);
    if let Some(tls) = tls(global)? {
        cluster = cluster.tls(tls);
    }
    if let Some(replicas) = global.replica_sync {
        cluster = cluster.replica_sync(replicas, global.replica_sync_timeout);
    }
    if let Err(e) = cluster.validate() {
        return Err(Failure::lock("bad --cluster", &e));
    }
    Ok(cluster)
}

/// The server at `url`, with the other global options (prefix, TLS files,
/// `$REDIS_PASSWORD`): `--url`, or one of `--redlock`'s servers. `lazy`:
/// no I/O until first use ([`RedisConfig::lazy_connect`]), so a server
/// that is down is no error when connecting. With the server's name for
/// errors (see [`Target::Node`]).
fn node(global: &Global, url: &str, lazy: bool) -> Result<(RedisConfig, String), Failure> {
    let url = with_password(url).map_err(|e| Failure::lock("bad --url", &e))?;
    let mut redis = RedisConfig::new(url)
        .key_prefix(global.prefix.as_str())
        .connect_timeout(CONNECT_TIMEOUT)
        .command_timeout(COMMAND_TIMEOUT)
        .pool_size(CONNECTIONS)
        .slot_checking_proxy(global.slot_checking_proxy)
        .lazy_connect(lazy);
    if let Some(replicas) = global.replica_sync {
        redis = redis.replica_sync(replicas, global.replica_sync_timeout);
    }
    if let Some(tls) = tls(global)? {
        redis = redis.tls(tls);
    }
    if let Err(e) = redis.validate() {
        return Err(Failure::lock("bad --url or --tls-* option", &e));
    }
    // Name the server in errors by address only: the URL may hold a
    // password.
    let server = match redis.connection_info() {
        Ok(info) => format!("Redis at {}", info.addr()),
        Err(e) => return Err(Failure::lock("bad --url", &e)),
    };
    Ok((redis, server))
}

/// The TLS options of `--tls-ca`, `--tls-cert` and `--tls-key`, if any is
/// given.
///
/// # Errors
/// Exit 64 for a file that cannot be read.
fn tls(global: &Global) -> Result<Option<TlsOptions>, Failure> {
    if global.tls_ca.is_none() && global.tls_cert.is_none() && global.tls_key.is_none() {
        return Ok(None);
    }
    TlsOptions::from_files(
        global.tls_ca.as_deref(),
        global.tls_cert.as_deref(),
        global.tls_key.as_deref(),
    )
    .map(Some)
    .map_err(|e| Failure::lock("bad --tls-* option", &e))
}

/// `url` with the password of `$REDIS_PASSWORD` when the URL carries none
/// (the user named in the URL, if any, is kept).
///
/// # Errors
/// [`LockError::InvalidArgument`] for a URL that cannot hold a password.
fn with_password(url: &str) -> Result<String, LockError> {
    match std::env::var(PASSWORD_VAR) {
        Ok(password) if !password.is_empty() => put_password(url, &password),
        _ => Ok(url.to_owned()),
    }
}

fn put_password(url: &str, password: &str) -> Result<String, LockError> {
    // Not a URL at all: leave it to the URL check to name the problem.
    let Ok(mut parsed) = url::Url::parse(url) else {
        return Ok(url.to_owned());
    };
    if parsed.password().is_some() {
        return Ok(url.to_owned());
    }
    parsed.set_password(Some(password)).map_err(|()| {
        LockError::invalid(format!(
            "${PASSWORD_VAR} is set, but the URL cannot carry a password"
        ))
    })?;
    Ok(parsed.into())
}

/// One client per `--redlock` server (each with the global prefix and
/// timeouts), built without I/O: each connects on first use, so a minority
/// of servers down at the start is a minority of members that fail, as it
/// is later, and not a reason to give up. A majority down fails the
/// acquisition (69).
///
/// # Errors
/// Exit 64 for a bad URL or option.
pub(crate) async fn redlock_clients(
    global: &Global,
    urls: &[String],
    config: ClientConfig,
) -> Result<Vec<LockClient>, Failure> {
    let config = client_config(global, config)?;
    let mut clients = Vec::with_capacity(urls.len());
    for url in urls {
        let (redis, server) = node(global, url, true)?;
        // Lazy: no I/O, so nothing to wait for concurrently.
        let client = lock_redis::connect(redis, config.clone())
            .await
            .map_err(|e| unreachable_or(&server, &e))?;
        clients.push(client);
    }
    Ok(clients)
}

/// A connect error, naming the server or cluster (and saying "cannot reach" when the
/// error is a connection failure rather than, say, rejected credentials).
pub(crate) fn unreachable_or(server: &str, err: &LockError) -> Failure {
    let context = if err.is_retryable() {
        format!("cannot reach {server}")
    } else {
        server.to_owned()
    };
    Failure::lock(&context, err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_password_goes_into_a_url_without_one() {
        assert_eq!(
            put_password("redis://127.0.0.1:6379", "s3cret").unwrap(),
            "redis://:s3cret@127.0.0.1:6379"
        );
        assert_eq!(
            put_password("rediss://locker@10.0.0.5:6380/2", "p@ss word").unwrap(),
            "rediss://locker:p%40ss%20word@10.0.0.5:6380/2"
        );
        // The URL's own password wins.
        assert_eq!(
            put_password("redis://:mine@h:1/", "env").unwrap(),
            "redis://:mine@h:1/"
        );
        // Not a URL: left for the URL check to report.
        assert_eq!(put_password("not a url", "x").unwrap(), "not a url");
    }

    #[test]
    fn an_encoded_password_reaches_redis_decoded() {
        let url = put_password("redis://locker@127.0.0.1:1/", "p@ss:w/rd%").unwrap();
        let info = RedisConfig::new(url).connection_info().unwrap();
        assert_eq!(info.redis_settings().password(), Some("p@ss:w/rd%"));
        assert_eq!(info.redis_settings().username(), Some("locker"));
    }
}
