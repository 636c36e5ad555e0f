//! Configuration of a single Redis server connection ([`crate::connect`]).

use std::fmt;
use std::time::Duration;

use lock_core::{LockError, Result, MAX_LEASE};
use lock_script::{KeyLayout, ReplicaSync};
use redis::IntoConnectionInfo;

use crate::sentinel::SentinelConfig;
use crate::tls::TlsOptions;

/// Default [`RedisConfig::command_timeout`]: 3 s.
pub const DEFAULT_COMMAND_TIMEOUT: Duration = Duration::from_secs(3);
/// Default [`RedisConfig::connect_timeout`]: 3 s.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// Default [`RedisConfig::pool_size`]: 4 multiplexed connections.
///
/// Why 4: with 32 tasks doing acquire + release, 4 connections gave about
/// 1.45× the throughput of 16 (more commands share each write, read and
/// wake-up), while still spreading the work over cores and keeping one
/// broken or busy connection from holding up every call.
pub const DEFAULT_POOL_SIZE: usize = 4;

/// Where the Redis server is and how to talk to it.
///
/// ```
/// # use std::time::Duration;
/// use lock_redis::RedisConfig;
///
/// let config = RedisConfig::new("redis://:secret@127.0.0.1:6379/0")
///     .key_prefix("billing:")
///     .command_timeout(Duration::from_secs(1))
///     .connect_timeout(Duration::from_secs(2))
///     .pool_size(8);
/// assert!(config.validate().is_ok());
/// // The password is not printed.
/// assert!(!format!("{config:?}").contains("secret"));
///
/// assert!(RedisConfig::new("not a url").validate().unwrap_err().is_invalid_argument());
/// ```
///
/// With the `serde` feature it is read from a service's configuration file
/// (only `url` is required; durations as `"3s"`, `"250ms"`). It is not
/// serialized: that would write the password out again. Errors while
/// reading name the field, never the URL's password; [`crate::connect`]
/// validates the result.
///
/// ```toml
/// url = "redis://:secret@10.0.0.5:6379/0"
/// key_prefix = "billing:"
/// command_timeout = "1s"
/// replica_sync = { replicas = 1, timeout = "200ms" }
/// ```
#[derive(Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
#[non_exhaustive]
pub struct RedisConfig {
    /// The server: `redis://[user][:password@]host[:port][/db]` (or
    /// `rediss://…` with the `tls` feature, `redis+unix:///path` for a Unix
    /// socket). Credentials in the URL are used for `AUTH`.
    pub url: String,
    /// Put before every lock name to make its key (see
    /// [`KeyLayout::with_prefix`]); empty by default. Channels, request
    /// records and token counters derive from the prefixed name.
    #[cfg_attr(feature = "serde", serde(default))]
    pub key_prefix: String,
    /// The longest one call may take, from getting a connection (connecting
    /// it, if needed) to the script's reply, including loading a script the
    /// server lost. A call that takes longer fails with a retryable timeout
    /// error ([`LockError::is_timeout`]). Default 3 s.
    #[cfg_attr(
        feature = "serde",
        serde(default = "default_command_timeout", with = "humantime_serde")
    )]
    pub command_timeout: Duration,
    /// The longest establishing one connection may take (a command
    /// connection or the pub/sub connection). Default 3 s.
    #[cfg_attr(
        feature = "serde",
        serde(default = "default_connect_timeout", with = "humantime_serde")
    )]
    pub connect_timeout: Duration,
    /// The number of multiplexed connections calls are spread over,
    /// round-robin. Each is opened on first use and shared by any number of
    /// concurrent calls (their commands are pipelined), so this is not a
    /// limit on concurrency: a few connections serve many tasks, and fewer
    /// connections pipeline better. Default 4 ([`DEFAULT_POOL_SIZE`] says
    /// why).
    ///
    /// (The name is kept from when this was the size of a connection pool;
    /// a pool checked every connection with a `PING` round trip on
    /// checkout, doubling the cost of each lock operation, while
    /// multiplexed connections need no checkout.)
    #[cfg_attr(feature = "serde", serde(default = "default_pool_size"))]
    pub pool_size: usize,
    /// Wait for replicas after every acquisition of every kind (see
    /// [`ReplicaSync`]); off by default.
    #[cfg_attr(feature = "serde", serde(default))]
    pub replica_sync: Option<ReplicaSync>,
    /// The CA to trust and the client certificate to present on a
    /// `rediss://` URL (feature `tls`); without it, the system's roots and
    /// no client certificate. Needs a `rediss://` URL. Not read from
    /// configuration files (feature `serde`): certificates are loaded in
    /// code, e.g. with [`TlsOptions::from_files`].
    #[cfg_attr(feature = "serde", serde(skip))]
    pub tls: Option<TlsOptions>,
    /// Find the server through Redis Sentinel instead of [`RedisConfig::url`]
    /// (see [`RedisConfig::sentinel`]); `None` by default.
    #[cfg_attr(feature = "serde", serde(default))]
    pub sentinel: Option<SentinelConfig>,
    /// Group the keys of multi-key calls by hash slot (see
    /// [`RedisConfig::slot_checking_proxy`]); off by default.
    #[cfg_attr(feature = "serde", serde(default))]
    pub slot_checking_proxy: bool,
    /// Return from [`crate::connect`] without waiting for the server (see
    /// [`RedisConfig::lazy_connect`]). Off by default, unlike rslock and
    /// redis-rs's `ConnectionManager`: a mistyped URL, a wrong password or
    /// a missing ACL permission then fails the service at start, where it
    /// is seen, rather than at its first lock; services that must start
    /// during an outage, and RedLock members, turn it on.
    #[cfg_attr(feature = "serde", serde(default))]
    pub lazy_connect: bool,
}

#[cfg(feature = "serde")]
fn default_command_timeout() -> Duration {
    DEFAULT_COMMAND_TIMEOUT
}

#[cfg(feature = "serde")]
fn default_connect_timeout() -> Duration {
    DEFAULT_CONNECT_TIMEOUT
}

#[cfg(feature = "serde")]
fn default_pool_size() -> usize {
    DEFAULT_POOL_SIZE
}

impl RedisConfig {
    /// A configuration for `url` with defaults for everything else.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            key_prefix: String::new(),
            command_timeout: DEFAULT_COMMAND_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            pool_size: DEFAULT_POOL_SIZE,
            replica_sync: None,
            tls: None,
            sentinel: None,
            slot_checking_proxy: false,
            lazy_connect: false,
        }
    }

    /// A configuration for the master that `sentinels` monitor as
    /// `master_name`, with defaults for everything else: the master is found
    /// by asking the sentinels (and checked with `ROLE`), and found again
    /// after a failover; the command connections and the pub/sub connection
    /// (with every subscription) move to the new master. Sentinel URLs are
    /// `redis://[user:password@]host:port` (the sentinels' own credentials);
    /// set the master's with [`RedisConfig::sentinel_master_auth`].
    /// [`RedisConfig::url`] is not used.
    ///
    /// What a holder keeps across a failover: replication is asynchronous,
    /// so a lock taken just before the master died may be missing on the
    /// promoted replica. With [`RedisConfig::replica_sync`] an acquisition
    /// is reported only once replicas have it; without, a holder whose lock
    /// did not survive is told through its lost-lock signal at the next
    /// renewal.
    ///
    /// ```
    /// use lock_redis::RedisConfig;
    /// let config = RedisConfig::sentinel(
    ///     ["redis://10.0.0.1:26379", "redis://10.0.0.2:26379", "redis://10.0.0.3:26379"],
    ///     "locks",
    /// )
    /// .sentinel_master_auth(None, "secret");
    /// assert!(config.validate().is_ok());
    /// assert!(!format!("{config:?}").contains("secret"));
    /// ```
    pub fn sentinel<I, S>(sentinels: I, master_name: impl Into<String>) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut config = Self::new("");
        config.sentinel = Some(SentinelConfig::new(sentinels, master_name));
        config
    }

    /// Sets the user (if any) and password the master found through
    /// Sentinel is authenticated with. No effect without
    /// [`RedisConfig::sentinel`].
    pub fn sentinel_master_auth(
        mut self,
        username: Option<&str>,
        password: impl Into<String>,
    ) -> Self {
        if let Some(sentinel) = &mut self.sentinel {
            sentinel.master_username = username.map(str::to_owned);
            sentinel.master_password = Some(password.into());
        }
        self
    }

    /// Sets [`RedisConfig::slot_checking_proxy`]: for a single address that
    /// is a proxy in front of a Redis Cluster which checks that every
    /// command's keys share one hash slot (and answers `CROSSSLOT`
    /// otherwise). With it, the calls that touch many locks at once (the
    /// watchdog's batched renewals) are split by hash slot (CRC16 of the
    /// key's hash tag), as on a cluster; every other call's keys share one
    /// hash tag already. Without it, a renewal spanning slots would fail
    /// and every lock would be lost at the end of its lease.
    pub fn slot_checking_proxy(mut self, on: bool) -> Self {
        self.slot_checking_proxy = on;
        self
    }

    /// Sets [`RedisConfig::lazy_connect`]: [`crate::connect`] then returns
    /// a client at once, whether the server answers or not, instead of
    /// failing on a server it cannot reach. Connections are made on first
    /// use and the scripts loaded then (one `NOSCRIPT` round trip each);
    /// calls fail with retryable errors while the server is down, and a
    /// waiting acquisition waits it out. What fails at connect without it
    /// (wrong credentials, a server that refuses a command) fails at the
    /// first call instead.
    ///
    /// For a service that must start during an outage, and for the
    /// members of a [`crate::RedLock`], which must all be built though a
    /// minority of the masters is down:
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
    pub fn lazy_connect(mut self, lazy: bool) -> Self {
        self.lazy_connect = lazy;
        self
    }

    /// Sets [`RedisConfig::key_prefix`].
    pub fn key_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.key_prefix = prefix.into();
        self
    }

    /// Sets [`RedisConfig::command_timeout`].
    pub fn command_timeout(mut self, timeout: Duration) -> Self {
        self.command_timeout = timeout;
        self
    }

    /// Sets [`RedisConfig::connect_timeout`].
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Sets [`RedisConfig::pool_size`].
    pub fn pool_size(mut self, size: usize) -> Self {
        self.pool_size = size;
        self
    }

    /// Turns on [`RedisConfig::replica_sync`]: every acquisition waits
    /// until `replicas` replicas have it, for at most `timeout`.
    pub fn replica_sync(mut self, replicas: u32, timeout: Duration) -> Self {
        self.replica_sync = Some(ReplicaSync::new(replicas, timeout));
        self
    }

    /// Sets [`RedisConfig::tls`].
    pub fn tls(mut self, tls: TlsOptions) -> Self {
        self.tls = Some(tls);
        self
    }

    /// The redis-rs client for this configuration (no I/O), with its TLS
    /// options applied.
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] as [`RedisConfig::validate`] for the
    /// URL and TLS options.
    pub fn client(&self) -> Result<redis::Client> {
        crate::tls::client(self.connection_info()?, self.tls.as_ref())
    }

    /// The key layout this configuration gives.
    pub fn layout(&self) -> KeyLayout {
        KeyLayout::with_prefix(self.key_prefix.clone())
    }

    /// Checks every field without any I/O.
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] naming the first bad field: an
    /// unparsable URL (or `rediss://` without the `tls` feature), a bad
    /// [Sentinel group](SentinelConfig::validate), a zero or absurdly long
    /// timeout, a zero pool size, TLS options on a `redis://` URL or with a
    /// certificate that does not parse, TLS options with Sentinel (not
    /// supported yet: the master is reached with the sentinels' scheme).
    pub fn validate(&self) -> Result<()> {
        match &self.sentinel {
            Some(sentinel) => {
                sentinel.validate()?;
                if self.tls.is_some() {
                    return Err(LockError::invalid(
                        "TLS options (custom CA, client certificate) are not supported with Sentinel yet",
                    ));
                }
            }
            None => {
                self.client()?;
            }
        }
        check_timeout(self.command_timeout, "command_timeout")?;
        check_timeout(self.connect_timeout, "connect_timeout")?;
        if self.pool_size == 0 {
            return Err(LockError::invalid("pool_size must be at least 1"));
        }
        if let Some(sync) = self.replica_sync {
            sync.validate()?;
        }
        Ok(())
    }

    /// The parsed URL.
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] for an unparsable URL (the password
    /// is redacted in the message).
    pub fn connection_info(&self) -> Result<redis::ConnectionInfo> {
        parse_url(&self.url, "url")
    }
}

/// Parses `url` (the option `what`), with a hint for the usual mistake: a
/// `host:port` without a scheme.
pub(crate) fn parse_url(url: &str, what: &str) -> Result<redis::ConnectionInfo> {
    url.into_connection_info().map_err(|e| {
        let hint = if url.contains("://") {
            ""
        } else {
            " (a Redis URL starts with redis://, rediss:// for TLS, or unix://, e.g. redis://127.0.0.1:6379/)"
        };
        LockError::invalid(format!(
            "{what} {:?} is not a valid Redis URL{hint}: {e}",
            redact(url)
        ))
    })
}

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

/// `url` with its password replaced by `***`, for logs and messages.
///
/// ```
/// assert_eq!(lock_redis::redact_url("redis://u:pw@h:6379/0"), "redis://u:***@h:6379/0");
/// ```
pub fn redact_url(url: &str) -> String {
    redact(url)
}

pub(crate) fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => {
            let user = userinfo.split_once(':').map_or(userinfo, |(u, _)| u);
            let masked = if userinfo.contains(':') {
                format!("{user}:***")
            } else {
                user.to_owned()
            };
            format!("{scheme}://{masked}@{host}{path}")
        }
        None => url.to_owned(),
    }
}

impl fmt::Debug for RedisConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisConfig")
            .field("url", &redact(&self.url))
            .field("key_prefix", &self.key_prefix)
            .field("command_timeout", &self.command_timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("pool_size", &self.pool_size)
            .field("replica_sync", &self.replica_sync)
            .field("tls", &self.tls)
            .field("sentinel", &self.sentinel)
            .field("slot_checking_proxy", &self.slot_checking_proxy)
            .field("lazy_connect", &self.lazy_connect)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_without_a_scheme_gets_a_hint() {
        let err = RedisConfig::new("localhost:6379")
            .connection_info()
            .unwrap_err();
        assert!(err.is_invalid_argument());
        let message = err.to_string();
        assert!(message.contains("\"localhost:6379\""), "{message}");
        assert!(message.contains("starts with redis://"), "{message}");
        let err = RedisConfig::new("redis://u:secret@[bad/")
            .connection_info()
            .unwrap_err()
            .to_string();
        assert!(
            !err.contains("secret") && !err.contains("starts with"),
            "{err}"
        );
    }

    #[test]
    fn defaults() {
        let c = RedisConfig::new("redis://127.0.0.1/");
        assert_eq!(c.command_timeout, Duration::from_secs(3));
        assert_eq!(c.connect_timeout, Duration::from_secs(3));
        assert_eq!(c.pool_size, 4);
        assert_eq!(c.key_prefix, "");
        assert!(c.validate().is_ok());
    }

    #[test]
    fn bad_fields_are_named() {
        let base = RedisConfig::new("redis://127.0.0.1/");
        let cases = [
            (
                base.clone().command_timeout(Duration::ZERO),
                "command_timeout",
            ),
            (
                base.clone().connect_timeout(Duration::ZERO),
                "connect_timeout",
            ),
            (
                base.clone().command_timeout(Duration::MAX),
                "command_timeout",
            ),
            (base.clone().pool_size(0), "pool_size"),
            (RedisConfig::new("http://example.invalid/"), "url"),
            (RedisConfig::new(""), "url"),
            (RedisConfig::new("redis://127.0.0.1:notaport/"), "url"),
        ];
        for (config, field) in cases {
            let e = config.validate().unwrap_err();
            assert!(e.is_invalid_argument(), "{e}");
            assert!(e.to_string().contains(field), "{e} should name {field}");
        }
    }

    #[test]
    fn credentials_and_db_parse() {
        let c = RedisConfig::new("redis://user:pw@127.0.0.1:6380/3");
        let info = c.connection_info().unwrap();
        assert_eq!(info.redis_settings().username(), Some("user"));
        assert_eq!(info.redis_settings().password(), Some("pw"));
        assert_eq!(info.redis_settings().db(), 3);
    }

    #[test]
    fn passwords_are_redacted() {
        assert_eq!(redact("redis://u:p@h:1/0"), "redis://u:***@h:1/0");
        assert_eq!(redact("redis://:p@h/"), "redis://:***@h/");
        assert_eq!(redact("redis://u@h/"), "redis://u@h/");
        assert_eq!(redact("redis://h:1/"), "redis://h:1/");
        let e = RedisConfig::new("redis://:hunter2@h:x/")
            .validate()
            .unwrap_err();
        assert!(!e.to_string().contains("hunter2"), "{e}");
    }

    #[test]
    fn sentinel_groups_replace_the_url() {
        let c = RedisConfig::sentinel(["redis://127.0.0.1:26379"], "locks");
        assert!(c.validate().is_ok(), "the empty url is not used");
        let sentinel = c.sentinel.as_ref().unwrap();
        assert_eq!(sentinel.master_name, "locks");
        assert_eq!(sentinel.master_password, None);
        let c = c.sentinel_master_auth(Some("app"), "pw");
        let sentinel = c.sentinel.as_ref().unwrap();
        assert_eq!(sentinel.master_username.as_deref(), Some("app"));
        assert_eq!(sentinel.master_password.as_deref(), Some("pw"));
        // Other fields are still checked.
        let e = c.pool_size(0).validate().unwrap_err();
        assert!(e.to_string().contains("pool_size"), "{e}");
        // Master credentials need a Sentinel group.
        assert_eq!(
            RedisConfig::new("redis://h/").sentinel_master_auth(None, "pw"),
            RedisConfig::new("redis://h/")
        );
    }

    #[test]
    fn slot_checking_is_off_by_default() {
        assert!(!RedisConfig::new("redis://h/").slot_checking_proxy);
        assert!(
            RedisConfig::new("redis://h/")
                .slot_checking_proxy(true)
                .slot_checking_proxy
        );
    }

    #[test]
    fn layout_uses_the_prefix() {
        let c = RedisConfig::new("redis://h/").key_prefix("app:");
        assert_eq!(c.layout(), KeyLayout::with_prefix("app:"));
    }
}
