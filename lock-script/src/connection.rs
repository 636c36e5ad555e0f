//! [`ScriptConnection`]: a [`Transport`]'s pub/sub as the engine's
//! [`Connection`], shared by every kind bound to it.

use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use async_trait::async_trait;
use futures::future::BoxFuture;
use lock_core::backend::{Channel, Connection, Notice, NoticeSink};
use lock_core::Result;

use crate::env::ScriptEnv;
use crate::transport::{PubSubEvent, PubSubHandler};

/// One client's connection over a [`crate::Transport`]: subscriptions go to
/// the transport, and every message on a subscribed channel reaches the
/// engine as [`Notice::Message`] (the channel's kind reads the payload).
pub struct ScriptConnection {
    env: ScriptEnv,
    notices: Arc<Notices>,
}

impl std::fmt::Debug for ScriptConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptConnection")
            .field("env", &self.env)
            .finish_non_exhaustive()
    }
}

impl ScriptConnection {
    /// The connection of `env`'s transport. Installs its pub/sub handler on
    /// the transport (replacing any earlier one).
    pub fn new(env: ScriptEnv) -> Self {
        let notices = Arc::new(Notices::default());
        env.transport().set_pubsub_handler(notices.clone());
        Self { env, notices }
    }
}

#[async_trait]
impl Connection for ScriptConnection {
    fn set_notice_sink(&self, sink: Arc<dyn NoticeSink>) {
        *self
            .notices
            .sink
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Some(sink);
    }

    fn subscribe(&self, channel: &Channel) -> BoxFuture<'static, Result<()>> {
        self.env.transport().subscribe(channel.as_str().to_owned())
    }

    fn unsubscribe(&self, channel: &Channel) {
        self.env
            .transport()
            .unsubscribe(channel.as_str().to_owned());
    }

    /// The transport's command timeout, plus the replica wait when
    /// configured ([`ScriptEnv::command_timeout`]).
    fn command_timeout(&self) -> Option<Duration> {
        self.env.command_timeout()
    }

    /// Closes the transport's connections (calls in flight finish on
    /// theirs) and its pub/sub connection. Later calls of every kind fail
    /// with [`lock_core::LockError::Closed`].
    ///
    /// # Cancel safety
    /// The transport is marked closed before the first await.
    async fn close(&self) {
        self.env.transport().close().await;
    }
}

/// Turns pub/sub events into notices for the engine's sink.
#[derive(Default)]
struct Notices {
    sink: RwLock<Option<Arc<dyn NoticeSink>>>,
}

impl PubSubHandler for Notices {
    fn on_event(&self, event: PubSubEvent<'_>) {
        let notice = match event {
            PubSubEvent::Message { channel, payload } => Notice::Message {
                channel: Channel::new(channel),
                payload: payload.to_vec(),
            },
            PubSubEvent::Reset => Notice::Reset,
        };
        let sink = self
            .sink
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        match sink {
            Some(sink) => sink.deliver(notice),
            None => tracing::debug!(?notice, "notice before a sink was installed; dropped"),
        }
    }
}
