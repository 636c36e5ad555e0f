//! The wait loop every exclusive kind's handle shares: try, subscribe to
//! the channel the kind names, wait for a notice or the holder's time to
//! live, try again. Under [`WaitStrategy::Poll`] nothing is subscribed:
//! the wait is a backoff step instead (or the time to live, if sooner). Cancel-safe at every await (see the `op` and `waiter`
//! modules); kinds whose waiters queue join the queue from the first
//! attempt, refresh their place while they wait, and leave it when they
//! give up.

use std::pin::Pin;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::futures::Notified;
use tokio::sync::Notify;
use tokio::time::Instant;
use tracing::Instrument;

use crate::client::ClientInner;
use crate::config::{lease_millis, ClientConfig};
use crate::error::{LockError, Result};
use crate::guard::Guard;
use crate::kind::AcquireRequest;
use crate::lock::Lock;
use crate::op::{self, Attempt};
use crate::options::{AcquireOptions, Wait};
use crate::outage::Outage;
use crate::owner::Owner;
use crate::stats::Parked;
use crate::telemetry::Timed;
use crate::wait_strategy::WaitStrategy;
use crate::waiter::{disarm, WakeBaton};

/// The general acquisition of [`Lock::acquire`] (and of every kind's face
/// built on it). `Ok(None)` when the wait ran out.
///
/// Traced as span `lock.acquire` (INFO; fields `lock`, `kind`, `outcome`),
/// its wait as `lock.wait` (DEBUG; also `strategy`), and timed in
/// [`telemetry::ACQUIRE_SECONDS`] and [`telemetry::WAIT_SECONDS`].
pub(crate) async fn acquire(lock: &Lock, opts: AcquireOptions) -> Result<Option<Guard>> {
    let kind = lock.kind().kind_name();
    let span = tracing::info_span!(
        "lock.acquire",
        lock = %lock.name(),
        kind,
        outcome = tracing::field::Empty,
    );
    let mut timed = Timed::acquire(kind, span.clone());
    let result = acquire_traced(lock, opts).instrument(span).await;
    timed.finish(&result);
    result
}

async fn acquire_traced(lock: &Lock, opts: AcquireOptions) -> Result<Option<Guard>> {
    let inner = lock.inner();
    let kind = lock.kind();
    inner.check_open()?;
    let (lease_ms, watchdog) = match opts.lease {
        None => (inner.watchdog_ms, true),
        Some(lease) => (fixed_lease_millis(&inner.config, lease, "lease")?, false),
    };
    let owner = resolve_owner(inner, opts.owner)?;
    let deadline = match opts.wait {
        Wait::Forever => None,
        Wait::For(wait) => Some(Instant::now().checked_add(wait).unwrap_or_else(far_future)),
    };
    let queues = kind.queues_waiters();
    // A queueing waiter queues from its first attempt; a try never does.
    let queue_ms = (queues && opts.wait != Wait::For(Duration::ZERO)).then_some(inner.waiter_ms);
    // A kind that hands a freed lock to its queue head grants it to this
    // wait's ticket; a fenced wait takes its token itself, so it has none.
    let wait_ticket =
        (queue_ms.is_some() && kind.hands_over() && !opts.fenced).then(new_wait_ticket);
    let request = || {
        AcquireRequest::new(
            lock.name().clone(),
            owner,
            lease_ms,
            opts.fenced,
            inner.request_deadline(),
        )
        .queue(queue_ms)
        .ticket(wait_ticket)
    };
    // A waiter rides out store outages within its deadline (see the
    // `outage` module); a try (deadline now) fails as the retry policy says.
    let mut outage = Outage::new(&inner.config.retry, &inner.outages, lock.name(), deadline);
    // Attempts whose outcome stayed unknown are settled only once this wait
    // is over (dropping them does it; see `op::Unsettled`): until then what
    // they did belongs to the live wait. Each attempt is a new request.
    let mut unsettled: Vec<op::Unsettled> = Vec::new();
    // Set when the wait takes the lock: its unknown attempts then keep any
    // grant made to its ticket when they are settled (it is the wait's).
    let won = Arc::new(AtomicU8::new(op::WAITING));
    let mut attempt = async || loop {
        let sent = Instant::now();
        let error = match op::acquire(inner, kind, request(), sent).await {
            Ok(Attempt::Unknown(mut unknown)) => {
                let error = unknown.error().clone();
                unknown.settle_after(Arc::clone(&won));
                unsettled.push(unknown);
                error
            }
            Ok(outcome) => {
                outage.over();
                return Ok((outcome, sent));
            }
            Err(error) => error,
        };
        if !outage.ride(&error).await {
            return Err(error);
        }
    };
    let (first, sent) = attempt().await?;
    // When the last attempt was first sent: a lock granted to this wait
    // was granted after that attempt ran, so its lease runs from no earlier.
    let mut last_sent = sent;
    let (first_ttl, mut queued) = match first {
        Attempt::Acquired(hold) => return Ok(Some(guard(inner, hold, watchdog, &won))),
        Attempt::Held { ttl, queued } => (ttl, queued),
        // Never returned by `attempt`, which keeps unknown outcomes.
        Attempt::Unknown(unknown) => return Err(unknown.error().clone()),
    };
    if deadline.is_some_and(|d| Instant::now() >= d) {
        return Ok(None);
    }

    let span = tracing::debug_span!(
        "lock.wait",
        lock = %lock.name(),
        kind = kind.kind_name(),
        strategy = if inner.config.wait_strategy.subscribes() { "subscribe" } else { "poll" },
        outcome = tracing::field::Empty,
    );
    let mut timed = Timed::wait(kind.kind_name(), span.clone());
    let waited = async {
        // Polling waiters never subscribe; they look again after each
        // step of their backoff (see the `wait_strategy` module).
        let mut poll = match inner.config.wait_strategy {
            WaitStrategy::Subscribe => None,
            WaitStrategy::Poll(backoff) => Some(backoff.steps()),
        };
        // The kind names the channel: the lock's own, shared by its waiters,
        // or (when waiters queue) the waiter's own, on which only the queue
        // head is told.
        let subscription = poll.is_none().then(|| {
            let channel = kind.channel(lock.name(), &owner);
            inner.waiters.join(&inner.connection, kind, channel)
        });
        if let Some(subscription) = &subscription {
            if !subscription.confirmed_by(deadline).await? {
                return Ok(None);
            }
        }
        let notify = subscription.as_ref().map(|s| Arc::clone(&s.notify));
        let mut baton = notify.clone().map(WakeBaton::new);

        // The lock may have been released between the first attempt and the
        // subscription, unseen: try again once subscribed, unless another
        // waiter of this client looked after the subscription was confirmed
        // (it saw, or was told of, any release since; see
        // `Subscription::joined_live`).
        // Queueing kinds always look again: that attempt keeps their place.
        let mut skip_attempt = !queues && subscription.as_ref().is_some_and(|s| s.joined_live());
        loop {
            let notified = notify.as_deref().map(Notify::notified);
            tokio::pin!(notified);
            // Register before the attempt: a notice arriving while it is in
            // flight must still wake us.
            if let Some(notified) = notified.as_mut().as_pin_mut() {
                notified.enable();
            }
            let outcome = if std::mem::take(&mut skip_attempt) {
                Attempt::Held {
                    ttl: first_ttl,
                    queued: None,
                }
            } else {
                let (outcome, sent) = attempt().await?;
                last_sent = sent;
                if let Some(subscription) = &subscription {
                    subscription.looked();
                }
                outcome
            };
            let ttl = match outcome {
                Attempt::Acquired(hold) => {
                    disarm(&mut baton);
                    // Taking the lock leaves its queue.
                    if let Some(ticket) = queued.take() {
                        ticket.disarm();
                    }
                    return Ok(Some(guard(inner, hold, watchdog, &won)));
                }
                Attempt::Held { ttl, queued: place } => {
                    disarm(&mut baton);
                    if let (Some(old), Some(_)) = (queued.take(), &place) {
                        old.disarm();
                    }
                    queued = place.or(queued);
                    ttl
                }
                Attempt::Unknown(unknown) => return Err(unknown.error().clone()),
            };
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                return Ok(None);
            }
            let mut holder_wait = ttl
                .unwrap_or(inner.config.no_ttl_recheck)
                .max(Duration::from_millis(1));
            if queues {
                // Look again (refreshing our place) before it could expire.
                holder_wait = holder_wait.min(inner.config.waiter_timeout / 3);
            }
            if let Some(steps) = &mut poll {
                holder_wait = holder_wait.min(steps.next_sleep());
            }
            let mut until = now + holder_wait;
            if let Some(d) = deadline {
                until = until.min(d);
            }
            let _parked = Parked::start(&inner.stats);
            tokio::select! {
                _ = notice(notified.as_mut()) => {
                    inner.stats.wakeups.incr();
                    if let Some(baton) = &mut baton {
                        baton.arm();
                    }
                }
                _ = tokio::time::sleep_until(until) => {}
            }
            // Handed over by the release itself: ours without asking.
            if let (Some(ticket), Some(subscription)) = (wait_ticket, &subscription) {
                if subscription.take_grant(ticket) {
                    disarm(&mut baton);
                    if let Some(place) = queued.take() {
                        place.disarm();
                    }
                    inner.stats.grants.incr();
                    let hold = op::PendingHold::granted(inner, kind, request(), last_sent);
                    return Ok(Some(guard(inner, hold, watchdog, &won)));
                }
            }
        }
    };
    let result = waited.instrument(span).await;
    timed.finish(&result);
    result
}

/// Resolves on a notice; never without a subscription (polling).
pub(crate) async fn notice(notified: Pin<&mut Option<Notified<'_>>>) {
    match notified.as_pin_mut() {
        Some(notified) => notified.await,
        None => std::future::pending().await,
    }
}

fn resolve_owner(inner: &ClientInner, explicit: Option<Owner>) -> Result<Owner> {
    match explicit {
        Some(owner) if owner.client_id() != inner.id => Err(LockError::invalid(format!(
            "owner {owner} belongs to another client (this client is {})",
            inner.id
        ))),
        Some(owner) => Ok(owner),
        None => Ok(Owner::current()
            .filter(|o| o.client_id() == inner.id)
            .unwrap_or_else(|| inner.new_owner())),
    }
}

fn guard(inner: &Arc<ClientInner>, hold: op::PendingHold, watchdog: bool, won: &AtomicU8) -> Guard {
    let ended = if hold.is_grant() {
        op::WON_BY_GRANT
    } else {
        op::WON
    };
    won.store(ended, Ordering::Release);
    let kind = Arc::clone(hold.kind());
    let (req, fencing_token, started) = hold.accept();
    Guard::new(
        Arc::clone(inner),
        &kind,
        req,
        fencing_token,
        started,
        watchdog,
    )
}

/// A fixed lease in milliseconds, refused when it is not longer than its
/// safety margin: its guard would be lost before it was handed out. `what`
/// names it in errors (`"lease"`, `"permit lease"`).
pub(crate) fn fixed_lease_millis(
    config: &ClientConfig,
    lease: Duration,
    what: &str,
) -> Result<u64> {
    let ms = lease_millis(lease, what)?;
    let lease = Duration::from_millis(ms);
    let margin = config.safety_margin(lease);
    if lease <= margin {
        return Err(LockError::invalid(format!(
            "{what} of {lease:?} is not longer than its safety margin of {margin:?} \
             (lease/100 + 2 ms + loss_margin), so it would be lost at once: \
             use a longer lease or a smaller loss_margin"
        )));
    }
    Ok(ms)
}

/// A random ticket for one wait of a kind that hands over (never 0, which
/// the store would not tell from "none").
fn new_wait_ticket() -> u64 {
    uuid::Uuid::new_v4().as_u64_pair().0.max(1)
}

/// A deadline for waits too long to represent: effectively forever.
fn far_future() -> Instant {
    Instant::now() + Duration::from_secs(100 * 365 * 24 * 3600)
}
