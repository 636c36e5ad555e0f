//! Redis Sentinel deployments: the master is found by asking the sentinels,
//! and followed across failovers.
//!
//! # How it works
//! `Endpoint` is where the transport's connections go: a fixed server, or
//! the master of a Sentinel group (`Master`). The command connections and
//! the pub/sub connection ask it for a client each time they connect (not
//! per call: a healthy connection is used without any check).
//!
//! `Master` caches the master it found. To find one it asks the sentinels
//! in order for their masters (`SENTINEL MASTERS`, through the `redis`
//! crate's [`redis::sentinel::Sentinel`]), skips a master a sentinel flags
//! down, and connects to the named node to check that `ROLE` says
//! `master`. The cache is dropped (`Master::invalidate`) when a
//! connection to it breaks, a connect fails, or a call is answered
//! `READONLY` (the node was demoted), and when a sentinel announces
//! `+switch-master` for the group. When the master found is another node
//! than the last one, `Master::generation` moves on: every command
//! connection to the old node is then replaced on its next use, and the
//! pub/sub task reconnects to the new master and re-subscribes every
//! channel (waiters get [`lock_core::backend::Notice::Reset`] and look
//! again).
//!
//! # Credentials
//! The sentinels are authenticated with the credentials of their own URLs,
//! for the lookups and for the `+switch-master` listener alike (Redis
//! Sentinel's `requirepass` is separate from the data nodes'). The
//! master's are [`SentinelConfig::master_password`] (with
//! `master_username`), or the configuration's credentials provider when it
//! has one: the provider is asked for every lookup, the one that follows a
//! `+switch-master` included, and for every connection to the master.
//!
//! While the group has no master (the old one died and no replica is
//! promoted yet), connects fail with a retryable error, which the engine's
//! retries and the waiters' deadlines ride out.
//!
//! Files: `endpoint` (where connections go), `master` (finding and caching
//! the master), `listener` (`+switch-master`); [`SentinelConfig`] here.

mod endpoint;
mod listener;
mod master;

pub(crate) use endpoint::Endpoint;
pub(crate) use master::Master;

use lock_core::{LockError, Result};
use redis::sentinel::SentinelNodeConnectionInfo;
use redis::RedisConnectionInfo;

use crate::transport::credentials::Credentials;

/// A Sentinel group to find the master of (see
/// [`RedisConfig::sentinel`](crate::RedisConfig::sentinel)).
#[derive(Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
#[non_exhaustive]
pub struct SentinelConfig {
    /// The sentinels: `redis://[user:password@]host:port` each (credentials
    /// here are the sentinels' own). Asked in this order.
    pub sentinels: Vec<String>,
    /// The name the sentinels monitor the master under (`sentinel monitor
    /// <name> …`).
    pub master_name: String,
    /// The user the master (and a promoted replica) is authenticated as,
    /// if any.
    #[cfg_attr(feature = "serde", serde(default))]
    pub master_username: Option<String>,
    /// The password for the master (and a promoted replica), if any.
    #[cfg_attr(feature = "serde", serde(default))]
    pub master_password: Option<String>,
}

impl SentinelConfig {
    /// The group `master_name` as `sentinels` know it, without credentials
    /// for the master.
    pub fn new<I, S>(sentinels: I, master_name: impl Into<String>) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self {
            sentinels: sentinels.into_iter().map(Into::into).collect(),
            master_name: master_name.into(),
            master_username: None,
            master_password: None,
        }
    }

    /// Checks the group without any I/O.
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] naming `sentinel`: no sentinels, an
    /// unparsable sentinel URL (password redacted), an empty master name.
    pub fn validate(&self) -> Result<()> {
        if self.sentinels.is_empty() {
            return Err(LockError::invalid(
                "sentinel needs at least one sentinel URL",
            ));
        }
        for url in &self.sentinels {
            crate::config::parse_url(url, "sentinel url")?;
        }
        if self.master_name.trim().is_empty() {
            return Err(LockError::invalid("sentinel master name must not be empty"));
        }
        Ok(())
    }

    /// How to reach the master once found: its credentials (`fresh` from
    /// a provider, else the configured ones), and TLS when the sentinels
    /// are reached over TLS.
    fn node_info(&self, fresh: Option<&Credentials>) -> SentinelNodeConnectionInfo {
        let mut redis = RedisConnectionInfo::default();
        let username = fresh
            .and_then(|c| c.username.as_ref())
            .or(self.master_username.as_ref());
        if let Some(user) = username {
            redis = redis.set_username(user);
        }
        let password = fresh.map_or(self.master_password.as_ref(), |c| Some(&c.password));
        if let Some(password) = password {
            redis = redis.set_password(password);
        }
        let node = SentinelNodeConnectionInfo::default().set_redis_connection_info(redis);
        if self
            .sentinels
            .iter()
            .any(|url| url.starts_with("rediss://"))
        {
            node.set_tls_mode(redis::TlsMode::Secure)
        } else {
            node
        }
    }
}

impl std::fmt::Debug for SentinelConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let sentinels: Vec<String> = self
            .sentinels
            .iter()
            .map(|url| crate::config::redact(url))
            .collect();
        f.debug_struct("SentinelConfig")
            .field("sentinels", &sentinels)
            .field("master_name", &self.master_name)
            .field("master_username", &self.master_username)
            .field(
                "master_password",
                &self.master_password.as_ref().map(|_| "***"),
            )
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_groups_are_named() {
        let cases = [
            SentinelConfig::new(Vec::<String>::new(), "m"),
            SentinelConfig::new(["not a url"], "m"),
            SentinelConfig::new(["redis://127.0.0.1:26379"], " "),
        ];
        for config in cases {
            let e = config.validate().unwrap_err();
            assert!(e.is_invalid_argument(), "{e}");
            assert!(e.to_string().contains("sentinel"), "{e}");
        }
        assert!(SentinelConfig::new(["redis://127.0.0.1:26379"], "m")
            .validate()
            .is_ok());
    }

    #[test]
    fn passwords_are_not_printed() {
        let mut config = SentinelConfig::new(["redis://:sentinel-pw@127.0.0.1:26379"], "m");
        config.master_password = Some("master-pw".to_owned());
        let printed = format!("{config:?}");
        assert!(!printed.contains("sentinel-pw"), "{printed}");
        assert!(!printed.contains("master-pw"), "{printed}");
        let e = SentinelConfig::new(["redis://:sentinel-pw@127.0.0.1:x"], "m")
            .validate()
            .unwrap_err();
        assert!(!e.to_string().contains("sentinel-pw"), "{e}");
    }
}
