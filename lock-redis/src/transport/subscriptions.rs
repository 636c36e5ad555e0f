//! The caller's side of a pub/sub task: [`SubscriptionHandle`]. A building
//! block for transports (the single node's pub/sub task and the cluster's
//! subscription manager both sit behind one).
//!
//! Calls never touch a connection: [`SubscriptionHandle::subscribe`] and
//! [`SubscriptionHandle::unsubscribe`] queue a [`SubscriptionCommand`] in
//! the call itself, so the task applies them in call order; the subscribe
//! future only waits for the task to confirm.

use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use futures::future::{self, BoxFuture, FutureExt};
use lock_core::{LockError, Result};
use tokio::sync::{mpsc, oneshot};
use tokio::time::timeout;

use lock_core::backend::{Channel, Notice, NoticeSink};
use lock_script::error::timed_out;

/// What a handle asks its task to do.
pub enum SubscriptionCommand {
    /// Subscribe `channel`; answer on `confirm` once the server
    /// confirmed it (or with [`LockError::Closed`] when closing).
    Subscribe {
        /// The channel.
        channel: String,
        /// Where the confirmation goes.
        confirm: oneshot::Sender<Result<()>>,
    },
    /// Drop the subscription of `channel`.
    Unsubscribe {
        /// The channel.
        channel: String,
    },
    /// Stop; answer on `done` once the connections are gone.
    Close {
        /// Where "closed" goes.
        done: oneshot::Sender<()>,
    },
}

impl std::fmt::Debug for SubscriptionCommand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Subscribe { channel, .. } => write!(f, "Subscribe({channel:?})"),
            Self::Unsubscribe { channel } => write!(f, "Unsubscribe({channel:?})"),
            Self::Close { .. } => f.write_str("Close"),
        }
    }
}

/// Where a task delivers its notices: the engine's sink, once installed
/// ([`lock_core::backend::Connection::set_notice_sink`]).
#[derive(Default)]
pub struct SinkSlot(RwLock<Option<Arc<dyn NoticeSink>>>);

impl SinkSlot {
    /// Hands `notice` to the installed sink; before one is installed no
    /// waiter exists to read it, so it is dropped.
    pub fn deliver(&self, notice: Notice) {
        let sink = self
            .0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        match sink {
            Some(sink) => sink.deliver(notice),
            None => tracing::debug!(?notice, "notice before a sink was installed; dropped"),
        }
    }

    fn set(&self, sink: Arc<dyn NoticeSink>) {
        *self.0.write().unwrap_or_else(PoisonError::into_inner) = Some(sink);
    }
}

/// The caller's side of a pub/sub task. Dropping it closes the command
/// queue, which tells the task to stop.
pub struct SubscriptionHandle {
    commands: mpsc::UnboundedSender<SubscriptionCommand>,
    sink: Arc<SinkSlot>,
    confirm_timeout: Duration,
}

impl std::fmt::Debug for SubscriptionHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SubscriptionHandle")
            .field("closed", &self.commands.is_closed())
            .finish_non_exhaustive()
    }
}

impl SubscriptionHandle {
    /// A handle, the queue its task reads, and the slot the task delivers
    /// notices to. Subscribe futures give up after `confirm_timeout`.
    pub fn new(
        confirm_timeout: Duration,
    ) -> (
        Self,
        mpsc::UnboundedReceiver<SubscriptionCommand>,
        Arc<SinkSlot>,
    ) {
        let (commands, queue) = mpsc::unbounded_channel();
        let sink = Arc::new(SinkSlot::default());
        let handle = Self {
            commands,
            sink: sink.clone(),
            confirm_timeout,
        };
        (handle, queue, sink)
    }

    /// Installs the receiver of notices (replacing any earlier one).
    pub fn set_notice_sink(&self, sink: Arc<dyn NoticeSink>) {
        self.sink.set(sink);
    }

    /// Registers `channel` now; the future waits for the confirmation.
    ///
    /// # Errors
    /// [`LockError::Closed`] once the task is gone; a retryable timeout
    /// when no confirmation came within the confirm timeout (the
    /// subscription stays registered).
    pub fn subscribe(&self, channel: &Channel) -> BoxFuture<'static, Result<()>> {
        let channel = channel.as_str().to_owned();
        let (confirm, confirmed) = oneshot::channel();
        let command = SubscriptionCommand::Subscribe {
            channel: channel.clone(),
            confirm,
        };
        if self.commands.send(command).is_err() {
            return future::ready(Err(LockError::Closed)).boxed();
        }
        let limit = self.confirm_timeout;
        async move {
            match timeout(limit, confirmed).await {
                Ok(Ok(result)) => result,
                Ok(Err(_)) => Err(LockError::Closed),
                Err(_) => Err(timed_out(&format!("subscribe to {channel:?}"), limit)),
            }
        }
        .boxed()
    }

    /// Drops `channel` now.
    pub fn unsubscribe(&self, channel: &Channel) {
        let channel = channel.as_str().to_owned();
        let _ = self
            .commands
            .send(SubscriptionCommand::Unsubscribe { channel });
    }

    /// Stops the task and waits (bounded by the confirm timeout) until its
    /// connections are gone.
    pub async fn close(&self) {
        let (done, gone) = oneshot::channel();
        if self
            .commands
            .send(SubscriptionCommand::Close { done })
            .is_ok()
        {
            let _ = timeout(self.confirm_timeout, gone).await;
        }
    }
}
