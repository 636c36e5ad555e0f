//! Starting a cluster transport: reading the slot map and choosing the
//! pub/sub mode, at connect or, with
//! [`lazy_connect`](lock_redis::ConnectionOptions#structfield.lazy_connect),
//! on first use.
//!
//! # Lazy start
//! A lazily connected transport is built without any I/O, whether its
//! seeds answer or not. What connecting would have learnt is learnt by the
//! first call or subscription instead, single-flight: the slot map (asking
//! the seeds) and, with [`PubSubMode::Auto`], whether every master runs
//! Redis 7 (sharded pub/sub). Until that worked, calls fail with the
//! retryable error the seeds gave (or a timeout), so the engine's retries
//! and a waiting acquisition ride the outage out as on one server; the
//! next call tries again.
//!
//! The scripts take the publish command as an argument, and a kind reads
//! it ([`Transport::publish_command`](lock_script::Transport::publish_command))
//! while building a call, before the transport sees the call. Before the
//! mode is known it gets a placeholder, [`UNDECIDED_PUBLISH`], which every
//! call replaces once the transport has started and before anything is
//! sent: a script never runs with a guessed command, which would publish
//! where no subscriber listens. (A placeholder that reached Redis would
//! fail the script as an unknown command, not publish wrongly.)

use std::sync::atomic::Ordering;
use std::sync::Arc;

use lock_core::{LockError, Result};
use lock_script::ScriptCall;
use tokio::time::{timeout_at, Instant};

use crate::config::PubSubMode;
use crate::transport::Inner;

/// What [`Inner::publish_command`] gives before the pub/sub mode is known.
pub(crate) const UNDECIDED_PUBLISH: &str = "lock-redis-cluster:publish-command-undecided";

/// The publish command of a mode.
pub(crate) fn publish_command(sharded: bool) -> &'static str {
    if sharded {
        "SPUBLISH"
    } else {
        "PUBLISH"
    }
}

impl Inner {
    /// Whether notices use sharded pub/sub: as configured, or (for
    /// [`PubSubMode::Auto`]) `None` until started.
    pub(crate) fn sharded(&self) -> Option<bool> {
        self.started
            .get()
            .copied()
            .or_else(|| Self::configured_mode(self.config.pubsub))
    }

    /// The mode fixed by the configuration, known without asking a node.
    pub(crate) fn configured_mode(mode: PubSubMode) -> Option<bool> {
        match mode {
            PubSubMode::Sharded => Some(true),
            PubSubMode::Classic => Some(false),
            PubSubMode::Auto => None,
        }
    }

    /// The publish command, or [`UNDECIDED_PUBLISH`] before the mode is
    /// known (see the module docs).
    pub(crate) fn publish_command(&self) -> &'static str {
        match self.sharded() {
            Some(sharded) => publish_command(sharded),
            None => {
                self.undecided_handed_out.store(true, Ordering::Release);
                UNDECIDED_PUBLISH
            }
        }
    }

    /// Reads the slot map (unless known) and the pub/sub mode (unless
    /// known or configured), once: concurrent callers wait for the one
    /// doing it, and after a failure the next caller tries again.
    ///
    /// # Errors
    /// A retryable error when no seed answered `CLUSTER SLOTS`, or no
    /// master its version, by `deadline`; [`LockError::Unauthorized`] for
    /// refused credentials.
    pub(crate) async fn start(&self, deadline: Instant) -> Result<bool> {
        if let Some(&sharded) = self.started.get() {
            return Ok(sharded);
        }
        let starting = self.started.get_or_try_init(|| async {
            if self.topology.map().masters().is_empty() {
                let seen = self.topology.rounds();
                self.topology.refresh(&self.nodes, seen, deadline).await?;
            }
            let map = self.topology.map();
            let sharded = match Self::configured_mode(self.config.pubsub) {
                Some(sharded) => sharded,
                None => self.all_masters_at_least_7(&map, deadline).await?,
            };
            tracing::debug!(sharded, "cluster transport started");
            Ok::<_, LockError>(sharded)
        });
        match timeout_at(deadline, starting).await {
            Ok(started) => started.copied(),
            Err(_) => Err(LockError::timeout(
                "the cluster did not answer within the command timeout (starting: slot map and pub/sub mode)",
            )),
        }
    }

    /// Starts in the background (for the pub/sub side, which has no caller
    /// to wait).
    pub(crate) fn start_soon(self: &Arc<Self>) {
        let inner = self.clone();
        tokio::spawn(async move {
            let deadline = Instant::now() + inner.config.connection.command_timeout;
            if let Err(e) = inner.start(deadline).await {
                tracing::debug!(error = %e, "starting the cluster transport failed");
            }
        });
    }

    /// `call` with the publish command in place of [`UNDECIDED_PUBLISH`],
    /// for a call built before the transport started.
    pub(crate) fn decided<'a>(&self, mut call: ScriptCall<'a>, sharded: bool) -> ScriptCall<'a> {
        if self.undecided_handed_out.load(Ordering::Acquire) {
            for arg in &mut call.args {
                if arg == UNDECIDED_PUBLISH {
                    publish_command(sharded).clone_into(arg);
                }
            }
        }
        call
    }
}
