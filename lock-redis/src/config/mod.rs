//! Configuration of a single Redis server connection ([`crate::connect`]).

#[cfg(feature = "serde")]
pub mod de;
pub(crate) mod from_info;
pub mod options;

use std::fmt;

use lock_core::{LockError, Result};
use lock_script::KeyLayout;
use redis::IntoConnectionInfo;

use crate::config::options::ConnectionOptions;
pub use crate::config::options::{
    DEFAULT_CALLS_PER_CONNECTION, DEFAULT_COMMAND_TIMEOUT, DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_POOL_SIZE,
};
use crate::transport::sentinel::SentinelConfig;

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
/// The options every deployment shares (key prefix, timeouts, replica
/// sync, TLS, credentials provider, lazy connect, the connections' number
/// and filling) are in
/// [`RedisConfig::connection`], set with the same builder methods as on a
/// cluster's configuration (see [`ConnectionOptions`]).
///
/// With the `serde` feature it is read from a service's configuration file
/// (only `url` is required, or `sentinel` instead; durations as `"3s"`, `"250ms"`; the shared
/// options sit beside `url`). It is not serialized: that would write the
/// password out again. Errors while reading name the field, never the
/// URL's password; [`crate::connect`] validates the result.
///
/// ```toml
/// url = "redis://:secret@10.0.0.5:6379/0"
/// key_prefix = "billing:"
/// command_timeout = "1s"
/// replica_sync = { replicas = 1, timeout = "200ms" } # default: the connected replicas, 1 s; "off"
/// ```
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RedisConfig {
    /// The server: `redis://[user][:password@]host[:port][/db]` (or
    /// `rediss://…` with the `tls` feature, `redis+unix:///path` for a Unix
    /// socket). Credentials in the URL are used for `AUTH`, unless a
    /// [credentials provider](ConnectionOptions::credentials) is set.
    pub url: String,
    /// What every deployment shares: key prefix, timeouts, replica sync,
    /// TLS, credentials, lazy connect, pool size and calls per connection
    /// (see [`ConnectionOptions`]).
    pub connection: ConnectionOptions,
    /// Find the server through Redis Sentinel instead of [`RedisConfig::url`]
    /// (see [`RedisConfig::sentinel`]); `None` by default.
    pub sentinel: Option<SentinelConfig>,
    /// Group the keys of multi-key calls by hash slot (see
    /// [`RedisConfig::slot_checking_proxy`]); off by default.
    pub slot_checking_proxy: bool,
}

crate::connection_setters!(RedisConfig, self => self.connection);

impl RedisConfig {
    /// A configuration for `url` with defaults for everything else.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            connection: ConnectionOptions::default(),
            sentinel: None,
            slot_checking_proxy: false,
        }
    }

    /// A configuration for the server an existing redis-rs configuration
    /// names, with defaults for everything else: its address (TCP, TLS with
    /// `#insecure` if so, or a Unix socket), user, password, database and
    /// protocol become [`RedisConfig::url`]. For services that already
    /// build a [`redis::ConnectionInfo`] (or parse their own URL format).
    ///
    /// ```
    /// use redis::IntoConnectionInfo;
    /// use lock_redis::RedisConfig;
    ///
    /// let info = "redis://app:p%40ss@10.0.0.5:6380/2".into_connection_info().unwrap();
    /// let config = RedisConfig::from_connection_info(&info).unwrap().key_prefix("billing:");
    /// let parsed = config.connection_info().unwrap();
    /// assert_eq!(parsed.redis_settings().password(), Some("p@ss"));
    /// assert_eq!(parsed.redis_settings().db(), 2);
    /// ```
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] for what a URL cannot carry: TLS
    /// certificates built into the info (give them as
    /// [`ConnectionOptions::tls`] instead), or a Unix socket path that is
    /// not UTF-8.
    pub fn from_connection_info(info: &redis::ConnectionInfo) -> Result<Self> {
        crate::config::from_info::url_of(info).map(Self::new)
    }

    /// As [`RedisConfig::from_connection_info`], for the server `client`
    /// connects to.
    ///
    /// # Why the settings, not the client's connections
    /// A lock client opens connections of its own, and cannot run on a
    /// redis-rs `Client`'s or `ConnectionManager`'s: its watchdog's
    /// renewals must never queue behind another call (a service's slow
    /// command, a `BLPOP`, a large pipeline, a replica `WAIT`), or held
    /// locks expire on a healthy server. So it keeps a few multiplexed
    /// connections it fills and replaces itself (every call bounded by
    /// the timeouts the engine sizes its request records by), puts `WAIT`
    /// on connections no renewal uses, and keeps a pub/sub connection
    /// whose subscriptions it restores after every reconnect. A lightly
    /// used lock client keeps one command connection and the pub/sub one
    /// open ([`RedisConfig::pool_size`] is the most it opens).
    ///
    /// ```
    /// let existing = redis::Client::open("redis://app:secret@127.0.0.1:6379/2").unwrap();
    /// let config = lock_redis::RedisConfig::from_client(&existing)
    ///     .unwrap()
    ///     .key_prefix("billing:");
    /// assert_eq!(config.connection_info().unwrap().redis_settings().db(), 2);
    /// ```
    ///
    /// # Errors
    /// As [`RedisConfig::from_connection_info`].
    pub fn from_client(client: &redis::Client) -> Result<Self> {
        Self::from_connection_info(client.get_connection_info())
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
    /// promoted replica. With replica sync (on by default,
    /// [`RedisConfig::replica_sync`]) an acquisition is reported only once
    /// a replica has it; with it off, a holder whose lock did not survive is
    /// told through its lost-lock signal at the next renewal.
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

    /// The redis-rs client for this configuration (no I/O), with its TLS
    /// options applied.
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] as [`RedisConfig::validate`] for the
    /// URL and TLS options.
    pub fn client(&self) -> Result<redis::Client> {
        crate::transport::tls::client(self.connection_info()?, self.connection.tls.as_ref())
    }

    /// The key layout this configuration gives.
    pub fn layout(&self) -> KeyLayout {
        self.connection.layout()
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
                if self.connection.tls.is_some() {
                    return Err(LockError::invalid(
                        "TLS options (custom CA, client certificate) are not supported with Sentinel yet",
                    ));
                }
            }
            None => {
                self.client()?;
            }
        }
        self.connection.validate()
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
            .field("connection", &self.connection)
            .field("sentinel", &self.sentinel)
            .field("slot_checking_proxy", &self.slot_checking_proxy)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

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
        assert_eq!(c.connection.command_timeout, Duration::from_secs(3));
        assert_eq!(c.connection.connect_timeout, Duration::from_secs(3));
        assert_eq!(c.connection.pool_size_or(DEFAULT_POOL_SIZE), 4);
        assert_eq!(c.connection.key_prefix, "");
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
