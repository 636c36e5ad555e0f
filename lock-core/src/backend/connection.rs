//! The seam between the engine and what every lock kind of one client
//! shares: its [`Connection`] to a store.
//!
//! A connection delivers notices (messages on subscribed channels, and
//! resets) to the engine through a [`NoticeSink`], subscribes and
//! unsubscribes channels, and is closed with the client. Channels are opaque
//! here: each kind names its own ([`crate::backend::ExclusiveKind::channel`]) and
//! reads its own payloads ([`crate::backend::ExclusiveKind::wake`]).
//!
//! # Contract
//! - Subscriptions are ordered by call: [`Connection::subscribe`] registers
//!   the channel *before it returns* and its future only waits for the
//!   store to confirm; [`Connection::unsubscribe`] is synchronous. The
//!   engine calls both under its own registry lock, so
//!   subscribe/unsubscribe/subscribe of one channel can never be reordered.
//! - The connection keeps every subscribed channel until it is
//!   unsubscribed, even when the subscribe future failed, and re-subscribes
//!   all of them after a reconnect; it then delivers [`Notice::Reset`]
//!   because notices may have been lost meanwhile.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::future::BoxFuture;

use crate::error::Result;

/// The name of a notice channel, as a kind chose it. Opaque to the engine.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Channel(String);

impl Channel {
    /// A channel called `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Self(name.into())
    }

    /// The channel's name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Channel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// How many waiters a notice wakes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Wake {
    /// One waiter per client (an exclusive unlock).
    One,
    /// Every waiter (e.g. a read unlock).
    All,
    /// Up to this many waiters per client, longest waiting first (e.g.
    /// permits given back to a semaphore: as many waiters as there are
    /// free permits); `Up(0)` wakes none.
    Up(u64),
    /// The lock was handed over, in the store, to the waiter of this
    /// client whose wait carries this ticket ([`crate::backend::AcquireRequest::wait_ticket`]):
    /// that waiter holds it without asking again; others here are not woken.
    Granted(u64),
}

/// A message from the store to the engine.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Notice {
    /// A message arrived on a subscribed channel.
    Message {
        /// Where it was published.
        channel: Channel,
        /// The message as published; the channel's kind reads it.
        payload: Vec<u8>,
    },
    /// The notice connection was re-established; notices may have been lost,
    /// so every waiter should look again.
    Reset,
}

/// Receives notices from a connection. Called from the connection's reader;
/// must not block.
pub trait NoticeSink: Send + Sync + 'static {
    /// Handles one notice.
    fn deliver(&self, notice: Notice);
}

/// One client's connection to a lock store, shared by every kind bound to
/// it. See the module docs for the contract every implementation keeps.
#[async_trait]
pub trait Connection: Send + Sync + 'static {
    /// Installs the receiver of notices. Called once by the client.
    fn set_notice_sink(&self, sink: Arc<dyn NoticeSink>);

    /// Subscribes to `channel`. The subscription is registered before this
    /// returns; the future resolves once the store confirmed it.
    fn subscribe(&self, channel: &Channel) -> BoxFuture<'static, Result<()>>;

    /// Drops the subscription to `channel`.
    fn unsubscribe(&self, channel: &Channel);

    /// The longest one call of any kind on this connection takes before it
    /// fails with a timeout (getting a connection, following redirects,
    /// reloading a script included), or `None` when its calls are not
    /// bounded or the bound is not known. [`crate::backend::Engine::new`]
    /// checks that its request records outlive every attempt of a retried
    /// request ([`crate::ClientConfig::validate_for`]); a deployment whose
    /// calls also wait for something the connection does not know (a
    /// Redis client's replica sync) checks its own longer bound first.
    fn command_timeout(&self) -> Option<Duration> {
        None
    }

    /// Closes connections. Later calls of every kind fail with
    /// [`crate::LockError::Closed`].
    async fn close(&self) {}
}
