//! Waiting for a lock: shared subscriptions and wake-ups.
//!
//! # Algorithm
//! A waiter first tries to take the lock. When that fails it joins the
//! [`Subscription`] of the channel its kind names for it
//! ([`crate::backend::ExclusiveKind::channel`]): one per channel per client,
//! reference-counted, so ten thousand waiters on one lock cost one
//! `SUBSCRIBE`. A message on the channel is read by that kind
//! ([`crate::backend::ExclusiveKind::wake`]). Then it loops:
//!
//! 1. register for a wake-up (before trying, so a notice that arrives while
//!    the attempt is in flight is not lost);
//! 2. try to take the lock;
//! 3. if held, wait for a wake-up *or* for the holder's remaining time to
//!    live, whichever is first, capped by the caller's deadline.
//!
//! A waiter that joined a subscription on which another waiter of its
//! client already looked after the store confirmed it skips the attempt of
//! its first round: every release since its first attempt reached them
//! ([`Subscription::joined_live`]).
//!
//! It never polls on a fixed interval. A lost notice (a dropped pub/sub
//! connection, a holder that crashed or whose lease ran out, a key deleted by
//! hand) costs at most one time to live, because the waiter looks again when
//! the holder's lease would have run out.
//!
//! # Promises
//! - An exclusive unlock notice wakes **one** waiter of this client (the one
//!   that has waited longest); a read unlock or a reconnect wakes all; a
//!   semaphore's notice of `n` free permits wakes up to `n`
//!   ([`Wake::Up`]).
//! - A woken waiter that goes away before it has used its wake-up — its
//!   future dropped, or its attempt failed with an error — passes the
//!   wake-up on to the next waiter ([`WakeBaton`]), so a wake-up is never
//!   swallowed by a waiter that gave up.
//! - The last waiter to leave unsubscribes; subscribe and unsubscribe of one
//!   channel are issued under the registry lock, so they reach the
//!   connection in order.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use futures::future::{BoxFuture, FutureExt, Shared};
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::backend::connection::{Channel, Connection, Notice, NoticeSink, Wake};
use crate::backend::kind::ExclusiveKind;
use crate::engine::stats::Stats;
use crate::error::Result;

type Confirmation = Shared<BoxFuture<'static, Result<()>>>;

/// Reads a message on a channel: what it asks of the waiters there. The
/// kind whose waiters listen on the channel provides it.
pub(crate) type WakeReader = Arc<dyn Fn(&[u8]) -> Option<Wake> + Send + Sync>;

struct ChannelEntry {
    waiters: usize,
    notify: Arc<Notify>,
    confirmed: Confirmation,
    /// Set once a waiter here made an attempt after the store confirmed
    /// the subscription ([`Subscription::looked`]).
    live: Arc<AtomicBool>,
    /// The kind whose waiters listen here: it reads the messages.
    reader: WakeReader,
    /// Tickets of waits the lock was handed to ([`Wake::Granted`]), until
    /// their waiter takes the grant ([`Subscription::take_grant`]).
    grants: Arc<Mutex<Vec<u64>>>,
}

/// How many unclaimed grants a channel keeps: a waiter claims its own at
/// once; more only pile up from waits dropped before they looked (whose
/// leaving gives the lock back in the store), so the oldest may go.
const KEPT_GRANTS: usize = 16;

/// Every channel some waiter of this client is waiting on.
pub(crate) struct WaiterRegistry {
    channels: Mutex<HashMap<Channel, ChannelEntry>>,
    stats: Arc<Stats>,
}

impl WaiterRegistry {
    pub(crate) fn new(stats: Arc<Stats>) -> Self {
        Self {
            channels: Mutex::new(HashMap::new()),
            stats,
        }
    }

    fn channels(&self) -> MutexGuard<'_, HashMap<Channel, ChannelEntry>> {
        // The map stays consistent across a panic elsewhere: every update
        // is a single insert/remove or counter change.
        self.channels.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Joins the waiters of `channel` (named by `kind`), subscribing when
    /// this is the first.
    pub(crate) fn join(
        self: &Arc<Self>,
        connection: &Arc<dyn Connection>,
        kind: &Arc<dyn ExclusiveKind>,
        channel: Channel,
    ) -> Subscription {
        let kind = Arc::clone(kind);
        self.join_with(connection, Arc::new(move |p| kind.wake(p)), channel)
    }

    /// Joins the waiters of `channel`, whose messages `reader` reads (the
    /// counting kinds, which are no [`ExclusiveKind`]).
    pub(crate) fn join_with(
        self: &Arc<Self>,
        connection: &Arc<dyn Connection>,
        reader: WakeReader,
        channel: Channel,
    ) -> Subscription {
        let mut channels = self.channels();
        let entry = channels.entry(channel.clone()).or_insert_with(|| {
            self.stats.subscriptions.incr();
            ChannelEntry {
                waiters: 0,
                notify: Arc::new(Notify::new()),
                confirmed: connection.subscribe(&channel).shared(),
                live: Arc::new(AtomicBool::new(false)),
                reader,
                grants: Arc::default(),
            }
        });
        entry.waiters += 1;
        // A failed subscription delivers nothing: then every waiter looks.
        let joined_live =
            entry.live.load(Ordering::Acquire) && matches!(entry.confirmed.peek(), Some(Ok(())));
        Subscription {
            registry: Arc::clone(self),
            connection: Arc::clone(connection),
            notify: Arc::clone(&entry.notify),
            confirmed: entry.confirmed.clone(),
            joined_live,
            live: Arc::clone(&entry.live),
            grants: Arc::clone(&entry.grants),
            channel,
        }
    }

    fn leave(&self, connection: &Arc<dyn Connection>, channel: &Channel) {
        let mut channels = self.channels();
        if let Some(entry) = channels.get_mut(channel) {
            entry.waiters -= 1;
            if entry.waiters == 0 {
                channels.remove(channel);
                connection.unsubscribe(channel);
            }
        }
    }

    /// How many channels are subscribed right now.
    pub(crate) fn active(&self) -> usize {
        self.channels().len()
    }
}

impl NoticeSink for WaiterRegistry {
    fn deliver(&self, notice: Notice) {
        self.stats.notices.incr();
        // Collect under the lock, wake after releasing it.
        match notice {
            Notice::Message { channel, payload } => {
                let entry = self.channels().get(&channel).map(|e| {
                    (
                        Arc::clone(&e.notify),
                        Arc::clone(&e.reader),
                        e.waiters,
                        Arc::clone(&e.grants),
                    )
                });
                let Some((notify, reader, waiters, grants)) = entry else {
                    return;
                };
                match reader(&payload) {
                    Some(Wake::Granted(ticket)) => {
                        let mut grants = grants.lock().unwrap_or_else(PoisonError::into_inner);
                        if grants.len() >= KEPT_GRANTS {
                            grants.remove(0);
                        }
                        grants.push(ticket);
                        drop(grants);
                        // Every waiter here looks; the one with the ticket
                        // holds the lock, the others park again.
                        notify.notify_waiters();
                    }
                    Some(Wake::One) => notify.notify_one(),
                    Some(Wake::All) => notify.notify_waiters(),
                    // Each waiter is woken once at most: more wake-ups than
                    // waiters would only leave a stale one stored.
                    Some(Wake::Up(n)) => {
                        for _ in 0..n.min(u64::try_from(waiters).unwrap_or(u64::MAX)) {
                            notify.notify_one();
                        }
                    }
                    None => tracing::debug!(
                        %channel,
                        payload = %String::from_utf8_lossy(&payload),
                        "ignoring a message its kind does not know"
                    ),
                }
            }
            Notice::Reset => {
                let all: Vec<_> = self
                    .channels()
                    .values()
                    .map(|e| Arc::clone(&e.notify))
                    .collect();
                for n in all {
                    n.notify_waiters();
                }
            }
        }
    }
}

/// One waiter's share of a channel subscription; leaving is dropping it.
pub(crate) struct Subscription {
    registry: Arc<WaiterRegistry>,
    connection: Arc<dyn Connection>,
    channel: Channel,
    pub(crate) notify: Arc<Notify>,
    confirmed: Confirmation,
    /// See [`Subscription::joined_live`].
    joined_live: bool,
    live: Arc<AtomicBool>,
    grants: Arc<Mutex<Vec<u64>>>,
}

impl Subscription {
    /// Resolves when the store confirmed the subscription (or failed to).
    pub(crate) async fn confirmed(&self) -> Result<()> {
        self.confirmed.clone().await
    }

    /// Whether, when this waiter joined, another waiter of the subscription
    /// had already made an attempt after the store confirmed it
    /// ([`Subscription::looked`]). A release before that attempt was seen
    /// by it; a notice published since the confirmation was (or will be)
    /// delivered here, and woke a waiter that then tries, or, with none
    /// parked, left a wake-up stored for the next to park (this one). So
    /// this client misses no release that came after this waiter's first
    /// attempt, and the waiter need not try again before it parks: one
    /// request fewer per waiter that joins a busy lock.
    pub(crate) fn joined_live(&self) -> bool {
        self.joined_live
    }

    /// Whether the lock was handed over to the wait with `ticket`
    /// ([`Wake::Granted`]); takes the grant, so it is seen once.
    pub(crate) fn take_grant(&self, ticket: u64) -> bool {
        let mut grants = self.grants.lock().unwrap_or_else(PoisonError::into_inner);
        let found = grants.iter().position(|&t| t == ticket);
        found.map(|at| grants.remove(at)).is_some()
    }

    /// Records that this waiter made an attempt after the store answered
    /// the subscription (a failed one makes no later joiner skip its look:
    /// see [`Subscription::joined_live`]).
    pub(crate) fn looked(&self) {
        self.live.store(true, Ordering::Release);
    }

    /// Waits, until `deadline` at the latest, for the store to confirm the
    /// subscription: until then a notice could be missed. `Ok(false)` when
    /// the deadline came first. A failed subscription still lets the waiter
    /// wait correctly, bounded by its timers (it is logged), except when
    /// the store refuses the channel to this user (an ACL): that will not
    /// change by waiting, and the caller must hear of it.
    pub(crate) async fn confirmed_by(&self, deadline: Option<Instant>) -> Result<bool> {
        let confirmed = async {
            match self.confirmed().await {
                Err(e) if e.is_unauthorized() => Err(e),
                Err(e) => {
                    tracing::warn!(%e, channel = %self.channel, "subscription failed; waiting on timers");
                    Ok(true)
                }
                Ok(()) => Ok(true),
            }
        };
        match deadline {
            Some(d) => tokio::time::timeout_at(d, confirmed)
                .await
                .unwrap_or(Ok(false)),
            None => confirmed.await,
        }
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.registry.leave(&self.connection, &self.channel);
    }
}

/// Holds a wake-up this waiter has received but not used yet. Dropped while
/// armed, it hands the wake-up to the next waiter.
pub(crate) struct WakeBaton {
    notify: Arc<Notify>,
    armed: bool,
}

impl WakeBaton {
    pub(crate) fn new(notify: Arc<Notify>) -> Self {
        Self {
            notify,
            armed: false,
        }
    }

    /// A wake-up was received.
    pub(crate) fn arm(&mut self) {
        self.armed = true;
    }

    /// The wake-up was used: the lock was taken, or someone else holds it
    /// (whose unlock will wake the next waiter).
    pub(crate) fn disarm(&mut self) {
        self.armed = false;
    }
}

/// [`WakeBaton::disarm`] for a waiter that may have none (it polls).
pub(crate) fn disarm(baton: &mut Option<WakeBaton>) {
    if let Some(baton) = baton {
        baton.disarm();
    }
}

impl Drop for WakeBaton {
    fn drop(&mut self) {
        if self.armed {
            self.notify.notify_one();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::pin::pin;
    use std::task::Poll;

    use super::*;

    /// A waiter notified but dropped before it looked passes the wake-up on
    /// (tokio's `Notified` does this for `notify_one`).
    #[tokio::test]
    async fn unobserved_wakeup_moves_to_next_waiter() {
        let notify = Notify::new();
        let mut first = Box::pin(notify.notified());
        let mut second = pin!(notify.notified());
        first.as_mut().enable();
        second.as_mut().enable();
        notify.notify_one();
        drop(first);
        assert!(matches!(futures::poll!(second.as_mut()), Poll::Ready(())));
    }

    /// A waiter that saw its wake-up and then went away before using it
    /// passes it on through its baton.
    #[tokio::test]
    async fn armed_baton_passes_wakeup_on() {
        let notify = Arc::new(Notify::new());
        let mut second = pin!(notify.notified());
        second.as_mut().enable();
        let mut baton = WakeBaton::new(Arc::clone(&notify));
        baton.arm();
        drop(baton);
        assert!(matches!(futures::poll!(second.as_mut()), Poll::Ready(())));
    }

    /// A used wake-up is not passed on.
    #[tokio::test]
    async fn disarmed_baton_passes_nothing() {
        let notify = Arc::new(Notify::new());
        let mut second = pin!(notify.notified());
        second.as_mut().enable();
        let mut baton = WakeBaton::new(Arc::clone(&notify));
        baton.arm();
        baton.disarm();
        drop(baton);
        assert!(futures::poll!(second.as_mut()).is_pending());
    }
}
