//! `FakeConnection`: the engine's connection seam with no store behind it.
//!
//! It keeps what a real connection keeps (the notice sink, the subscribed
//! channels) and lets a test play the store's part: publish a message on a
//! channel (delivered only while someone subscribes it, as Redis pub/sub
//! does), deliver any notice directly (a `Notice::Reset` after a
//! "reconnect"), or lose the next messages (a dropped pub/sub connection).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use futures::future::{BoxFuture, FutureExt};
use lock_core::backend::{Channel, Connection, Notice, NoticeSink};

/// A connection whose store is the test. Cheap to share (`Arc`).
#[derive(Default)]
pub(crate) struct FakeConnection {
    state: Mutex<State>,
    command_timeout: Option<Duration>,
}

#[derive(Default)]
struct State {
    sink: Option<Arc<dyn NoticeSink>>,
    /// Subscribed channels, with how many subscribe calls minus
    /// unsubscribe calls each has had (the engine shares one per channel).
    subscribed: BTreeMap<Channel, usize>,
    subscribe_calls: usize,
    unsubscribe_calls: usize,
    /// Messages still to drop instead of delivering.
    lose_messages: usize,
    closed: bool,
}

impl FakeConnection {
    /// A connection with no command timeout.
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// A connection whose calls the fake kind fails with a timeout after
    /// `timeout` (and which reports it, so the engine checks its record
    /// time to live covers its retries).
    pub(crate) fn with_command_timeout(timeout: Duration) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::default(),
            command_timeout: Some(timeout),
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A panicking test thread must not hide the state from the others.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Publishes `payload` on `channel`, as a store does: delivered to the
    /// engine only while the channel is subscribed, and not at all while
    /// messages are being lost. Returns whether it was delivered.
    pub(crate) fn publish(&self, channel: &Channel, payload: &[u8]) -> bool {
        let sink = {
            let mut state = self.state();
            if !state.subscribed.contains_key(channel) {
                return false;
            }
            if state.lose_messages > 0 {
                state.lose_messages -= 1;
                return false;
            }
            state.sink.clone()
        };
        // Delivered outside the lock: the sink wakes waiters.
        let Some(sink) = sink else { return false };
        sink.deliver(Notice::Message {
            channel: channel.clone(),
            payload: payload.to_vec(),
        });
        true
    }

    /// Delivers `notice` to the engine as it is (no subscription check).
    pub(crate) fn deliver(&self, notice: Notice) {
        let sink = self.state().sink.clone();
        if let Some(sink) = sink {
            sink.deliver(notice);
        }
    }

    /// Drops the next `n` published messages (a pub/sub connection that
    /// went away and came back without a reset).
    pub(crate) fn lose_next_messages(&self, n: usize) {
        self.state().lose_messages = n;
    }

    /// The channels subscribed now.
    pub(crate) fn subscriptions(&self) -> Vec<Channel> {
        self.state().subscribed.keys().cloned().collect()
    }

    /// How many times the engine called `subscribe`.
    pub(crate) fn subscribe_calls(&self) -> usize {
        self.state().subscribe_calls
    }

    /// How many times the engine called `unsubscribe`.
    pub(crate) fn unsubscribe_calls(&self) -> usize {
        self.state().unsubscribe_calls
    }

    /// Whether the engine closed the connection.
    pub(crate) fn is_closed(&self) -> bool {
        self.state().closed
    }
}

#[async_trait]
impl Connection for FakeConnection {
    fn set_notice_sink(&self, sink: Arc<dyn NoticeSink>) {
        self.state().sink = Some(sink);
    }

    fn subscribe(&self, channel: &Channel) -> BoxFuture<'static, lock_core::Result<()>> {
        let mut state = self.state();
        state.subscribe_calls += 1;
        *state.subscribed.entry(channel.clone()).or_default() += 1;
        // Registered before it returns, confirmed at once.
        async { Ok(()) }.boxed()
    }

    fn unsubscribe(&self, channel: &Channel) {
        let mut state = self.state();
        state.unsubscribe_calls += 1;
        if let Some(count) = state.subscribed.get_mut(channel) {
            *count -= 1;
            if *count == 0 {
                state.subscribed.remove(channel);
            }
        }
    }

    fn command_timeout(&self) -> Option<Duration> {
        self.command_timeout
    }

    async fn close(&self) {
        self.state().closed = true;
    }
}
