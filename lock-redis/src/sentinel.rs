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
//! channel (waiters get [`lock_script::PubSubEvent::Reset`] and look
//! again).
//!
//! While the group has no master (the old one died and no replica is
//! promoted yet), connects fail with a retryable error, which the engine's
//! retries and the waiters' deadlines ride out.

use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use futures::StreamExt;
use lock_core::{LockError, Result};
use redis::sentinel::{Sentinel, SentinelNodeConnectionInfo};
use redis::{Client, IntoConnectionInfo, RedisConnectionInfo};
use tokio::sync::watch;
use tokio::time::{sleep, timeout, timeout_at, Instant};

use lock_script::error::from_redis;

/// The Sentinel channel that announces a new master:
/// `<name> <old-ip> <old-port> <new-ip> <new-port>`.
const SWITCH_MASTER: &str = "+switch-master";
/// Pause before the `+switch-master` listener tries the sentinels again.
const LISTEN_RETRY: Duration = Duration::from_millis(500);

/// A Sentinel group to find the master of (see
/// [`RedisConfig::sentinel`](crate::RedisConfig::sentinel)).
#[derive(Clone, PartialEq, Eq)]
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
    pub master_username: Option<String>,
    /// The password for the master (and a promoted replica), if any.
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
            url.as_str().into_connection_info().map_err(|e| {
                LockError::invalid(format!(
                    "sentinel url {:?} is not a valid redis URL: {e}",
                    crate::config::redact(url)
                ))
            })?;
        }
        if self.master_name.trim().is_empty() {
            return Err(LockError::invalid("sentinel master name must not be empty"));
        }
        Ok(())
    }

    /// How to reach the master once found: its credentials, and TLS when
    /// the sentinels are reached over TLS.
    fn node_info(&self) -> SentinelNodeConnectionInfo {
        let mut redis = RedisConnectionInfo::default();
        if let Some(user) = &self.master_username {
            redis = redis.set_username(user);
        }
        if let Some(password) = &self.master_password {
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

/// Where a transport's connections go; see the module docs.
#[derive(Clone)]
pub(crate) enum Endpoint {
    /// One server, at a fixed address (boxed: a client is large, and the
    /// endpoint is kept by every connection set and pub/sub task).
    Fixed(Box<Client>),
    /// The current master of a Sentinel group.
    Sentinel(Arc<Master>),
}

impl Endpoint {
    /// A client for the server to connect to now, found by `deadline`,
    /// and the [generation](Endpoint::generation) it belongs to.
    pub(crate) async fn client(&self, deadline: Instant) -> Result<(Client, u64)> {
        match self {
            Self::Fixed(client) => Ok((Client::clone(client), 0)),
            Self::Sentinel(master) => master.client(deadline).await,
        }
    }

    /// Whether the server may change, so connections to the old one must be
    /// replaced: a `READONLY` reply then means "ask again".
    pub(crate) fn follows_failovers(&self) -> bool {
        matches!(self, Self::Sentinel(_))
    }

    /// Forgets the cached master: the next connect asks the sentinels.
    pub(crate) fn invalidate(&self) {
        if let Self::Sentinel(master) = self {
            master.invalidate();
        }
    }

    /// Stops what the endpoint runs in the background (the `+switch-master`
    /// listener).
    pub(crate) fn close(&self) {
        if let Self::Sentinel(master) = self {
            master.close();
        }
    }

    /// Moves on each time the server is found to be another node.
    pub(crate) fn generation(&self) -> u64 {
        match self {
            Self::Fixed(_) => 0,
            Self::Sentinel(master) => master.generation(),
        }
    }

    /// Tells when [`Endpoint::generation`] moves on; `None` for a fixed
    /// server.
    pub(crate) fn changes(&self) -> Option<watch::Receiver<u64>> {
        match self {
            Self::Fixed(_) => None,
            Self::Sentinel(master) => Some(master.generation.subscribe()),
        }
    }
}

/// The master of one Sentinel group, as last found; see the module docs.
pub(crate) struct Master {
    config: SentinelConfig,
    node: SentinelNodeConnectionInfo,
    /// The sentinels (with their cached connections); one lookup at a time,
    /// so a burst of failed connections asks them once.
    sentinel: tokio::sync::Mutex<Sentinel>,
    state: Mutex<Found>,
    generation: watch::Sender<u64>,
    /// The `+switch-master` listener, stopped on close and on drop.
    listener: Mutex<Option<tokio::task::AbortHandle>>,
}

#[derive(Default)]
struct Found {
    /// The master to connect to, until invalidated.
    current: Option<Client>,
    /// The address of the last master found (kept across invalidations, to
    /// tell a failover from a reconnect to the same node).
    last_addr: Option<String>,
}

impl Master {
    /// The group of `config`, nothing asked yet; starts the task that
    /// listens for `+switch-master` (it ends on [`Master::close`] or when
    /// the returned value is dropped). Must be called inside a tokio
    /// runtime.
    pub(crate) fn new(config: &SentinelConfig, connect_timeout: Duration) -> Result<Arc<Self>> {
        config.validate()?;
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| {
            LockError::invalid("the redis backend must be created inside a tokio runtime")
        })?;
        let sentinel = Sentinel::build(config.sentinels.clone())
            .map_err(|e| LockError::invalid(format!("invalid sentinel configuration: {e}")))?;
        let master = Arc::new(Self {
            node: config.node_info(),
            config: config.clone(),
            sentinel: tokio::sync::Mutex::new(sentinel),
            state: Mutex::new(Found::default()),
            generation: watch::channel(0).0,
            listener: Mutex::new(None),
        });
        let listener = runtime.spawn(listen_for_switches(
            Arc::downgrade(&master),
            connect_timeout,
        ));
        *master
            .listener
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(listener.abort_handle());
        Ok(master)
    }

    /// Stops listening for `+switch-master` (closing that connection).
    pub(crate) fn close(&self) {
        let listener = self
            .listener
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(listener) = listener {
            listener.abort();
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, Found> {
        // Nothing panics while the lock is held.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Moves on (under the state lock) each time the master is found to be
    /// another node.
    pub(crate) fn generation(&self) -> u64 {
        *self.generation.borrow()
    }

    pub(crate) fn invalidate(&self) {
        self.state().current = None;
    }

    /// The cached master, or the one the sentinels name now (checked to be
    /// a master), by `deadline`.
    ///
    /// # Errors
    /// A retryable error when no sentinel names a reachable master in time
    /// (no sentinel answers, the named node is down or not a master); the
    /// mapped error when it is not retryable (the master rejects the
    /// credentials: [`LockError::InvalidArgument`]).
    ///
    /// Returns the client with the [generation](Master::generation) it
    /// belongs to, read together (a failover seen meanwhile cannot pair an
    /// old master with the new generation).
    pub(crate) async fn client(&self, deadline: Instant) -> Result<(Client, u64)> {
        if let Some(found) = self.cached() {
            return Ok(found);
        }
        let Ok(mut sentinel) = timeout_at(deadline, self.sentinel.lock()).await else {
            return Err(self.not_found_in_time());
        };
        // Whoever asked before us may have found it.
        if let Some(found) = self.cached() {
            return Ok(found);
        }
        let found = timeout_at(
            deadline,
            sentinel.async_master_for(&self.config.master_name, Some(&self.node)),
        )
        .await;
        let client = match found {
            Ok(Ok(client)) => client,
            Ok(Err(e)) => {
                // Rejected credentials and the like are the caller's to
                // fix; everything else may pass with the failover.
                let err = from_redis(&e, "");
                if !err.is_retryable() {
                    return Err(err);
                }
                return Err(LockError::unavailable(
                    format!(
                        "no sentinel named a reachable master for {:?}: {e}",
                        self.config.master_name
                    ),
                    Some(Arc::new(e)),
                ));
            }
            Err(_) => return Err(self.not_found_in_time()),
        };
        let addr = client.get_connection_info().addr().to_string();
        let mut state = self.state();
        if state.last_addr.as_deref() != Some(addr.as_str()) {
            if let Some(old) = &state.last_addr {
                tracing::info!(
                    master = %self.config.master_name,
                    from = %old,
                    to = %addr,
                    "sentinel: the master moved; reconnecting and re-subscribing"
                );
                self.generation.send_modify(|g| *g += 1);
            } else {
                tracing::debug!(master = %self.config.master_name, at = %addr, "sentinel: master found");
            }
            state.last_addr = Some(addr);
        }
        state.current = Some(client.clone());
        Ok((client, self.generation()))
    }

    /// The cached master and its generation. (The generation only moves
    /// under the state lock, held here.)
    fn cached(&self) -> Option<(Client, u64)> {
        let state = self.state();
        let client = state.current.clone()?;
        Some((client, self.generation()))
    }

    fn not_found_in_time(&self) -> LockError {
        LockError::timeout(format!(
            "the sentinels named no master for {:?} in time",
            self.config.master_name
        ))
    }

    /// A `+switch-master` message for this group arrived: find the new
    /// master now, so connections and the subscriptions move before a call
    /// fails on the old one.
    async fn switched(&self, connect_timeout: Duration) {
        self.invalidate();
        if let Err(e) = self.client(Instant::now() + connect_timeout).await {
            tracing::debug!(error = %e, "sentinel: the new master is not reachable yet");
        }
    }
}

impl Drop for Master {
    fn drop(&mut self) {
        self.close();
    }
}

/// Listens for `+switch-master` on one sentinel at a time (the next one
/// when it fails), until aborted ([`Master::close`]). A sentinel that stops
/// answering without closing the connection leaves this deaf until the
/// connection breaks; the other triggers (broken connections, `READONLY`)
/// still move the client.
async fn listen_for_switches(master: Weak<Master>, connect_timeout: Duration) {
    let (urls, name) = match master.upgrade() {
        Some(m) => (m.config.sentinels.clone(), m.config.master_name.clone()),
        None => return,
    };
    let mut next = 0;
    loop {
        let url = &urls[next % urls.len()];
        next += 1;
        let connected = match Client::open(url.as_str()) {
            Ok(client) => timeout(connect_timeout, client.get_async_pubsub()).await,
            Err(_) => return, // validated before: cannot happen
        };
        let Ok(Ok(mut pubsub)) = connected else {
            sleep(LISTEN_RETRY).await;
            continue;
        };
        if !matches!(
            timeout(connect_timeout, pubsub.subscribe(SWITCH_MASTER)).await,
            Ok(Ok(()))
        ) {
            sleep(LISTEN_RETRY).await;
            continue;
        }
        let mut messages = pubsub.into_on_message();
        while let Some(message) = messages.next().await {
            let payload: String = message.get_payload().unwrap_or_default();
            if payload.split(' ').next() != Some(name.as_str()) {
                continue;
            }
            let Some(master) = master.upgrade() else {
                return;
            };
            tracing::info!(%payload, "sentinel: +switch-master");
            master.switched(connect_timeout).await;
        }
        sleep(LISTEN_RETRY).await;
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
