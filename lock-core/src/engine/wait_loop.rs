//! The one wait loop every kind's waiting goes through: locks (the `wait`
//! module), semaphores and conditions such as a latch's (the `counter`
//! module). What differs between kinds is what one look at the store is
//! and what a look found ([`Waiting`]); how to wait between looks is the
//! same for all.
//!
//! # Algorithm
//! After a first look found the thing taken: subscribe to the kind's
//! channel (one subscription per channel per client, the `waiter` module)
//! and wait for it to be confirmed; then loop: register for a wake-up,
//! look again (a notice sent between the first look and the subscription
//! is not lost), and sleep until a notice, the time the look said to look
//! again (a holder's time to live, a permit's lease end), the kind's
//! longest sleep, or the caller's deadline — whichever is first. Never a
//! poll on a fixed interval: a look that knows no time to look again falls
//! back to [`crate::ClientConfig::no_ttl_recheck`], which bounds what a
//! lost notice costs. Under [`WaitStrategy::Poll`] nothing is subscribed:
//! each sleep is also capped by the next step of the backoff.
//!
//! # Wake-ups
//! A release wakes one waiter per notice ([`WakeBaton`]): a waiter woken
//! but gone before it looked passes its wake-up on, and one that looked
//! disarms it whatever it found.
//!
//! # Cancel safety
//! The loop's own state is the subscription share and the baton, both
//! given up when the future is dropped; what a look took or joined is the
//! [`Waiting`] implementation's to undo on drop.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::futures::Notified;
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::config::wait_strategy::WaitStrategy;
use crate::engine::state::ClientInner;
use crate::engine::stats::Parked;
use crate::engine::waiter::{disarm, Subscription, WakeBaton};
use crate::error::Result;

/// What one look at the store found.
#[derive(Debug)]
pub enum Look<T> {
    /// Taken: the wait is over.
    Got(T),
    /// Not now; look again after this long at the latest (`None`: the kind
    /// knows no time, only a notice tells).
    Busy(Option<Duration>),
}

/// One kind's side of a wait: how to look, and what else may end it.
pub(crate) trait Waiting {
    /// What the wait ends with.
    type Got;

    /// One look at the store (with the kind's retries).
    async fn look(&mut self) -> Result<Look<Self::Got>>;

    /// Something handed to this wait directly while it slept (a lock a
    /// release granted to the wait's ticket), checked after every sleep;
    /// `Some(Err)` when it cannot be taken (the client is closing: it is
    /// given back).
    fn handed(&mut self, _subscription: &Subscription) -> Option<Result<Self::Got>> {
        None
    }

    /// The longest sleep between looks, whatever the look said (a queued
    /// waiter refreshes its place before it could expire).
    fn longest_sleep(&self) -> Option<Duration> {
        None
    }

    /// Whether the look right after subscribing may be skipped when
    /// another waiter of this client looked after the subscription was
    /// confirmed (it saw, or was told of, anything since; see
    /// `Subscription::joined_live`). Kinds whose looks do more than read
    /// (a queued waiter's look keeps its place) say no.
    fn may_skip_first_look(&self) -> bool {
        false
    }
}

/// Waits after a first look found the thing busy (`first`: when to look
/// again, as it said): see the module docs. `subscribe` joins the kind's
/// channel. `Ok(None)` when `deadline` passed first.
pub(crate) async fn wait<W: Waiting>(
    inner: &Arc<ClientInner>,
    waiting: &mut W,
    first: Option<Duration>,
    deadline: Option<Instant>,
    subscribe: impl FnOnce() -> Subscription,
) -> Result<Option<W::Got>> {
    let mut poll = match inner.config.wait_strategy {
        WaitStrategy::Subscribe => None,
        WaitStrategy::Poll(backoff) => Some(backoff.steps()),
    };
    let subscription = poll.is_none().then(subscribe);
    if let Some(subscription) = &subscription
        && !subscription.confirmed_by(deadline).await?
    {
        return Ok(None);
    }
    let notify = subscription.as_ref().map(|s| Arc::clone(&s.notify));
    let mut baton = notify.clone().map(WakeBaton::new);
    let mut skip_look = waiting.may_skip_first_look()
        && subscription.as_ref().is_some_and(Subscription::joined_live);
    loop {
        let notified = notify.as_deref().map(Notify::notified);
        tokio::pin!(notified);
        // Register before the look: a notice arriving while it is in
        // flight must still wake us.
        if let Some(notified) = notified.as_mut().as_pin_mut() {
            notified.enable();
        }
        let look = if std::mem::take(&mut skip_look) {
            Look::Busy(first)
        } else {
            let look = waiting.look().await?;
            if let Some(subscription) = &subscription {
                subscription.looked();
            }
            // Whatever it found, this wake-up was used.
            disarm(&mut baton);
            look
        };
        let retry_in = match look {
            Look::Got(got) => return Ok(Some(got)),
            Look::Busy(retry_in) => retry_in,
        };
        let now = Instant::now();
        if deadline.is_some_and(|d| now >= d) {
            return Ok(None);
        }
        let mut sleep = retry_in
            .unwrap_or(inner.config.no_ttl_recheck)
            .max(Duration::from_millis(1));
        if let Some(longest) = waiting.longest_sleep() {
            sleep = sleep.min(longest);
        }
        if let Some(steps) = &mut poll {
            sleep = sleep.min(steps.next_sleep());
        }
        let mut until = now + sleep;
        if let Some(d) = deadline {
            until = until.min(d);
        }
        let parked = Parked::start(&inner.stats);
        tokio::select! {
            _ = notice(notified.as_mut()) => {
                inner.stats.wakeups.incr();
                if let Some(baton) = &mut baton {
                    baton.arm();
                }
            }
            _ = tokio::time::sleep_until(until) => {}
        }
        drop(parked);
        if let Some(got) = subscription.as_ref().and_then(|s| waiting.handed(s)) {
            disarm(&mut baton);
            return got.map(Some);
        }
    }
}

/// Resolves on a notice; never without a subscription (polling).
async fn notice(notified: Pin<&mut Option<Notified<'_>>>) {
    match notified.as_pin_mut() {
        Some(notified) => notified.await,
        None => std::future::pending().await,
    }
}
