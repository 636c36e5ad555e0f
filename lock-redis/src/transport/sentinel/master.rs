//! [`Master`]: the master of one Sentinel group, found through the
//! sentinels and cached until something says it may have moved.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use lock_core::{LockError, Result};
use redis::sentinel::{Sentinel, SentinelNodeConnectionInfo};
use redis::Client;
use tokio::sync::watch;
use tokio::time::{timeout_at, Instant};

use lock_script::error::from_redis;

use super::listener::listen_for_switches;
use super::SentinelConfig;
use crate::transport::credentials::{self, Credentials, CredentialsProvider};

/// The master of one Sentinel group, as last found; see the module docs.
pub(crate) struct Master {
    pub(super) config: SentinelConfig,
    /// How to reach the master, with the configured credentials.
    node: SentinelNodeConnectionInfo,
    /// The master's credentials, when they rotate: asked by the lookup
    /// that follows a `+switch-master` too, which no connect triggers.
    credentials: Option<Arc<dyn CredentialsProvider>>,
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
    /// runtime. `credentials`, when set, are the master's (the sentinels'
    /// own are in their URLs).
    pub(crate) fn new(
        config: &SentinelConfig,
        connect_timeout: Duration,
        credentials: Option<Arc<dyn CredentialsProvider>>,
    ) -> Result<Arc<Self>> {
        config.validate()?;
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| {
            LockError::invalid("the redis backend must be created inside a tokio runtime")
        })?;
        let sentinel = Sentinel::build(config.sentinels.clone())
            .map_err(|e| LockError::invalid(format!("invalid sentinel configuration: {e}")))?;
        let master = Arc::new(Self {
            node: config.node_info(None),
            credentials,
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

    /// Tells when [`Master::generation`] moves on.
    pub(crate) fn changes(&self) -> watch::Receiver<u64> {
        self.generation.subscribe()
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
    ///
    /// `fresh`: credentials from a provider, used instead of the
    /// configured ones to check the master found (the caller puts them on
    /// the client it connects with).
    pub(crate) async fn client(
        &self,
        deadline: Instant,
        fresh: Option<&Credentials>,
    ) -> Result<(Client, u64)> {
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
        let node = match fresh {
            Some(fresh) => self.config.node_info(Some(fresh)),
            None => self.node.clone(),
        };
        let found = timeout_at(
            deadline,
            sentinel.async_master_for(&self.config.master_name, Some(&node)),
        )
        .await;
        let client = match found {
            Ok(Ok(client)) => {
                let info =
                    crate::transport::connections::no_delay(client.get_connection_info().clone());
                Client::open(info).map_err(|e| {
                    LockError::invalid(format!("invalid redis configuration for the master: {e}"))
                })?
            }
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
    pub(super) async fn switched(&self, connect_timeout: Duration) {
        self.invalidate();
        let deadline = Instant::now() + connect_timeout;
        // The new master checks credentials like any other: without the
        // provider's, a master that needs them would refuse this lookup,
        // and the connections would stay on the demoted one until it
        // closes them.
        let found = match self.fresh_credentials(deadline).await {
            Ok(fresh) => self.client(deadline, fresh.as_ref()).await.map(drop),
            Err(e) => Err(e),
        };
        if let Err(e) = found {
            tracing::debug!(error = %e, "sentinel: the new master is not reachable yet");
        }
    }

    /// The provider's credentials, when the group has a provider.
    ///
    /// # Errors
    /// As [`credentials::fetch`].
    pub(crate) async fn fresh_credentials(&self, deadline: Instant) -> Result<Option<Credentials>> {
        match &self.credentials {
            Some(provider) => credentials::fetch(provider, deadline).await.map(Some),
            None => Ok(None),
        }
    }
}

impl Drop for Master {
    fn drop(&mut self) {
        self.close();
    }
}
