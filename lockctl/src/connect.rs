//! From the global options to a connected [`LockClient`]: the one place
//! that knows which backends exist.

use std::time::Duration;

use lock_redis::{ClientConfig, LockClient, LockError};
use lock_redis::{Credentials, RedisConfig, StaticCredentials, TlsOptions};
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
/// whose value any user can read in `ps`. Given to the library as
/// credentials, never pasted into the URL, so no URL (and no error naming
/// one) ever holds it.
const PASSWORD_VAR: &str = "REDIS_PASSWORD";

/// The ACL user that goes with `$REDIS_PASSWORD` when the URL names none.
const USERNAME_VAR: &str = "REDIS_USERNAME";

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
    redis.connection.replica_sync = replica_sync(global);
    // The password is the master's (the sentinels' own, if any, goes in
    // their URLs).
    if let Some(credentials) = env_credentials(None) {
        redis = redis.credentials(credentials);
    }
    if let Err(e) = redis.validate() {
        return Err(Failure::lock("bad --sentinel or --master", &e));
    }
    Ok(redis)
}

/// The replica sync of `--replica-sync`, `--no-replica-sync` and
/// `--replica-sync-timeout`: the library's default rule unless told.
fn replica_sync(global: &Global) -> Option<lock_redis::ReplicaSync> {
    if global.no_replica_sync {
        return None;
    }
    let timeout = global.replica_sync_timeout;
    Some(match global.replica_sync {
        Some(replicas) => lock_redis::ReplicaSync::new(replicas, timeout),
        None => lock_redis::ReplicaSync::connected(timeout),
    })
}

/// A Redis Cluster, from `--cluster`.
fn cluster(global: &Global) -> Result<ClusterConfig, Failure> {
    let mut cluster = ClusterConfig::new(global.cluster.iter().cloned())
        .key_prefix(global.prefix.as_str())
        .connect_timeout(CONNECT_TIMEOUT)
        .command_timeout(COMMAND_TIMEOUT)
        .pool_size(CONNECTIONS);
    if let Some(tls) = tls(global)? {
        cluster = cluster.tls(tls);
    }
    cluster.connection.replica_sync = replica_sync(global);
    // Every node is reached with the same credentials: a seed URL's own
    // password wins, as with --url (the first seed names the user).
    let seed = global.cluster.first().map(|url| url_credentials(url));
    if let Some(credentials) = seed.and_then(env_credentials) {
        cluster = cluster.credentials(credentials);
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
    let mut redis = RedisConfig::new(url)
        .key_prefix(global.prefix.as_str())
        .connect_timeout(CONNECT_TIMEOUT)
        .command_timeout(COMMAND_TIMEOUT)
        .pool_size(CONNECTIONS)
        .slot_checking_proxy(global.slot_checking_proxy)
        .lazy_connect(lazy);
    redis.connection.replica_sync = replica_sync(global);
    if let Some(tls) = tls(global)? {
        redis = redis.tls(tls);
    }
    if let Err(e) = redis.validate() {
        return Err(Failure::lock("bad --url or --tls-* option", &e));
    }
    // Name the server in errors by address only: the URL may hold a
    // password.
    let server = match redis.connection_info() {
        Ok(info) => {
            let settings = info.redis_settings();
            let own = (settings.username().is_some(), settings.password().is_some());
            if let Some(credentials) = env_credentials(Some(own)) {
                redis = redis.credentials(credentials);
            }
            format!("Redis at {}", info.addr())
        }
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

/// Whether `url` names a user and carries a password, as far as it
/// parses (a URL that does not is reported by the configuration's check).
fn url_credentials(url: &str) -> Option<(bool, bool)> {
    let info = RedisConfig::new(url).connection_info().ok()?;
    let settings = info.redis_settings();
    Some((settings.username().is_some(), settings.password().is_some()))
}

/// The credentials of `$REDIS_PASSWORD` (and `$REDIS_USERNAME`), unless
/// the URL carries a password of its own, which wins: `url` says whether
/// the URL names a user and carries a password (`None`: there is no URL,
/// as for a Sentinel group's master). The URL's user wins over
/// `$REDIS_USERNAME`.
fn env_credentials(url: Option<(bool, bool)>) -> Option<StaticCredentials> {
    credentials_from(
        url,
        std::env::var(PASSWORD_VAR).ok(),
        std::env::var(USERNAME_VAR).ok(),
    )
}

fn credentials_from(
    url: Option<(bool, bool)>,
    password: Option<String>,
    username: Option<String>,
) -> Option<StaticCredentials> {
    let (has_user, has_password) = url.unwrap_or((false, false));
    let password = password.filter(|p| !p.is_empty())?;
    if has_password {
        return None;
    }
    let credentials = match username.filter(|u| !u.is_empty() && !has_user) {
        Some(user) => Credentials::user(user, password),
        None => Credentials::password(password),
    };
    Some(StaticCredentials(credentials))
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

    fn given(user: Option<&str>, password: &str) -> Option<StaticCredentials> {
        Some(StaticCredentials(match user {
            Some(user) => Credentials::user(user, password),
            None => Credentials::password(password),
        }))
    }

    #[test]
    fn the_urls_password_wins_and_its_user_too() {
        let env = |url| credentials_from(url, Some("env".into()), Some("envuser".into()));
        assert_eq!(env(Some((false, false))), given(Some("envuser"), "env"));
        assert_eq!(env(None), given(Some("envuser"), "env"));
        // The URL's user is kept: the credentials name none.
        assert_eq!(env(Some((true, false))), given(None, "env"));
        assert_eq!(env(Some((true, true))), None);
        assert_eq!(env(Some((false, true))), None);
    }

    #[test]
    fn empty_variables_are_unset() {
        assert_eq!(credentials_from(None, Some(String::new()), None), None);
        assert_eq!(credentials_from(None, None, Some("u".into())), None);
        assert_eq!(
            credentials_from(None, Some("pw".into()), Some(String::new())),
            given(None, "pw")
        );
    }

    #[test]
    fn what_a_url_carries() {
        assert_eq!(url_credentials("redis://u:p@h:1/"), Some((true, true)));
        assert_eq!(url_credentials("redis://:p@h:1/"), Some((false, true)));
        assert_eq!(url_credentials("redis://u@h:1/"), Some((true, false)));
        assert_eq!(url_credentials("redis://h:1/"), Some((false, false)));
        assert_eq!(url_credentials("not a url"), None);
    }
}
