//! Waiting until a condition read from the store holds: the shared wait
//! loop (`wait.rs`) for kinds whose waiters take nothing, such as a
//! count-down latch's.
//!
//! # Algorithm
//! Check; when that fails, join the channel's shared subscription (the
//! `waiter` module: one per channel per client), wait for it to be
//! confirmed, then loop: register for a wake-up, check again (a notice
//! sent between the first check and the subscription is not lost), and
//! sleep until a notice, the caller's deadline, or
//! [`crate::ClientConfig::no_ttl_recheck`] — whichever is first. Nothing in
//! the store expires on its own here, so that interval bounds what a lost
//! notice costs (a reconnect of the notice connection wakes every waiter
//! anyway); it is not a poll of the condition's progress.
//!
//! # Cancel safety
//! The only state is the subscription share, dropped with the future: the
//! last waiter to leave unsubscribes.

use std::future::Future;
use std::sync::Arc;

use tokio::time::Instant;

use crate::client::ClientInner;
use crate::connection::Channel;
use crate::error::Result;
use crate::stats::Parked;
use crate::waiter::ReadWake;

/// Waits until `check` answers `true` (then `Ok(true)`) or `deadline`
/// passes (`Ok(false)`); see the module docs.
pub(crate) async fn wait_until<F, Fut>(
    inner: &Arc<ClientInner>,
    channel: Channel,
    read: ReadWake,
    deadline: Option<Instant>,
    mut check: F,
) -> Result<bool>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<bool>>,
{
    inner.check_open()?;
    if check().await? {
        return Ok(true);
    }
    let passed = |d: Instant| Instant::now() >= d;
    if deadline.is_some_and(passed) {
        return Ok(false);
    }
    let subscription = inner.waiters.join_with(&inner.connection, read, channel);
    let confirmed = async {
        if let Err(e) = subscription.confirmed().await {
            tracing::warn!(%e, "subscription failed; waiting on the recheck interval");
        }
    };
    match deadline {
        Some(d) => {
            if tokio::time::timeout_at(d, confirmed).await.is_err() {
                return Ok(false);
            }
        }
        None => confirmed.await,
    }
    loop {
        let notified = subscription.notify.notified();
        tokio::pin!(notified);
        // Register before checking: a notice arriving while the check is
        // in flight must still wake us.
        notified.as_mut().enable();
        if check().await? {
            return Ok(true);
        }
        let now = Instant::now();
        if deadline.is_some_and(passed) {
            return Ok(false);
        }
        let mut until = now + inner.config.no_ttl_recheck;
        if let Some(d) = deadline {
            until = until.min(d);
        }
        let _parked = Parked::start(&inner.stats);
        tokio::select! {
            _ = &mut notified => inner.stats.wakeups.incr(),
            _ = tokio::time::sleep_until(until) => {}
        }
    }
}
