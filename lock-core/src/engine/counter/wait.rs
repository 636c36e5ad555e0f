//! The wait of counting kinds: a first look, then the one wait loop (the
//! `wait_loop` module), each look a fresh attempt, riding out store
//! outages (and refusals that prove an attempt did not run) as a lock's
//! waiter does, within the wait's deadline (the `outage` module).

use std::future::Future;
use std::sync::Arc;

use tokio::time::Instant;
use tracing::Instrument;

use crate::backend::connection::Channel;
use crate::config::options::WAIT_OVERSHOOT;
use crate::engine::outage::Outage;
use crate::engine::state::ClientInner;
use crate::engine::wait_loop::{self, Look, Waiting};
use crate::engine::waiter::WakeReader;
use crate::error::{LockError, Result};
use crate::name::LockName;
use crate::telemetry::{self, Timed};

/// What a wait waits on: its name, channel and notice reader.
pub(crate) struct Waited<'a> {
    /// The kind's name in spans and metrics.
    pub(crate) kind: &'static str,
    /// The counter's name.
    pub(crate) name: &'a LockName,
    /// Where changes are announced.
    pub(crate) channel: Channel,
    /// How a notice's payload is read.
    pub(crate) reader: WakeReader,
}

/// A first attempt, then the one wait loop. `attempt` makes and runs one
/// fresh attempt; `Ok(None)` when the deadline passed first. Traced and
/// timed as every kind's acquisitions are (spans `lock.acquire` and
/// `lock.wait`, label `kind`).
///
/// # Errors
/// `attempt`'s errors; a subscription the store refused.
pub(crate) async fn wait_for<P, A, Fut>(
    inner: &Arc<ClientInner>,
    waited: Waited<'_>,
    deadline: Option<Instant>,
    attempt: A,
) -> Result<Option<P>>
where
    A: FnMut() -> Fut,
    Fut: Future<Output = Result<Look<P>>>,
{
    let Waited {
        kind,
        name,
        channel,
        reader,
    } = waited;
    // A wait with time left is cut at its deadline plus the overshoot (as
    // a lock's is; see `WAIT_OVERSHOOT`); a try (deadline now) is bounded
    // by the retry policy.
    let cut = deadline
        .filter(|d| *d > Instant::now())
        .and_then(|d| d.checked_add(WAIT_OVERSHOOT));
    let mut waiting = Attempts {
        attempt,
        // As a lock's waiter does (the `outage` module): a store outage or
        // a refusal that proves the attempt did not run costs the wait
        // time, not its end; a try fails as the retry policy says.
        outage: Outage::new(&inner.config.retry, &inner.outages, name, deadline),
        cut,
        answered: false,
        cut_short: false,
    };
    let waited = async {
        let first = match waiting.look().await {
            Ok(Look::Got(p)) => return Ok(Some(p)),
            Ok(Look::Busy(retry_in)) => retry_in,
            Err(e) => return waiting.ran_out(e),
        };
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Ok(None);
        }
        let span = tracing::debug_span!(
            "lock.wait",
            lock = %name,
            kind,
            strategy = if inner.config.wait_strategy.subscribes() { "subscribe" } else { "poll" },
            outcome = tracing::field::Empty,
        );
        let mut timed = Timed::wait(kind, span.clone());
        let subscribe = || inner.waiters.join_with(&inner.connection, reader, channel);
        let result = wait_loop::wait(inner, &mut waiting, first, deadline, subscribe)
            .instrument(span)
            .await
            .or_else(|e| waiting.ran_out(e));
        timed.finish(&result);
        result
    };
    telemetry::acquisition(kind, name, waited).await
}

/// A counting kind's side of the wait loop: each look is a fresh attempt,
/// and a look that took something owns it (dropped, it goes back). A look
/// whose attempt failed with a retryable error makes a fresh one after a
/// backoff while the wait's deadline allows ([`Outage::ride`]): the failed
/// attempt's outcome, if unknown, is settled in the background (the
/// counter's take), so a fresh attempt never takes twice.
struct Attempts<'a, A> {
    attempt: A,
    outage: Outage<'a>,
    /// When a look still in flight is given up (`None`: never).
    cut: Option<Instant>,
    /// Whether the store answered a look of this wait.
    answered: bool,
    /// Whether a look was cut off at `cut`.
    cut_short: bool,
}

impl<A> Attempts<'_, A> {
    /// How a wait that failed with `error` ends: as one that ran out when
    /// its last look was cut off after the store had answered it, else
    /// with `error` (as a lock's wait does).
    fn ran_out<P>(&self, error: LockError) -> Result<Option<P>> {
        if self.cut_short && self.answered {
            Ok(None)
        } else {
            Err(error)
        }
    }
}

impl<P, A, Fut> Waiting for Attempts<'_, A>
where
    A: FnMut() -> Fut,
    Fut: Future<Output = Result<Look<P>>>,
{
    type Got = P;

    /// One attempt, given up at the cut-off: the attempt's call finishes
    /// in the background then, and what it takes goes back (the counter's
    /// take). An error, also for a wait that then ends as one that ran
    /// out, so a wake-up the look did not use is passed on.
    async fn look(&mut self) -> Result<Look<P>> {
        loop {
            let tried = match self.cut {
                None => (self.attempt)().await,
                Some(cut) => match Box::pin(tokio::time::timeout_at(cut, (self.attempt)())).await {
                    Ok(tried) => tried,
                    Err(_) => {
                        self.cut_short = true;
                        return Err(LockError::timeout(
                            "the store did not answer within the wait",
                        ));
                    }
                },
            };
            match tried {
                Ok(look) => {
                    self.answered = true;
                    self.outage.over();
                    return Ok(look);
                }
                Err(error) => {
                    if !self.outage.ride(&error).await {
                        return Err(error);
                    }
                }
            }
        }
    }
}
