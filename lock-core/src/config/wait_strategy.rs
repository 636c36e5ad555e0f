//! How a waiter learns that a lock may have become free: unlock notices
//! (the default) or polling, for stores without pub/sub.
//!
//! # Polling
//! Behind proxies and serverless endpoints that refuse `SUBSCRIBE`, a
//! waiter cannot be told of an unlock. [`WaitStrategy::Poll`] then looks
//! again after a backoff that starts at [`PollBackoff::initial`] and
//! doubles after every attempt that finds the lock held, up to
//! [`PollBackoff::max`] (1 ms doubling to 128 ms by default, the spin
//! lock's figures). Each sleep is drawn between half and all of the
//! current step ("equal jitter"), so waiters that started together do not
//! keep knocking together. The wait never sleeps past the holder's time
//! to live nor the caller's deadline, and nothing is ever subscribed.
//!
//! The cost: a hand-off takes up to one backoff step (128 ms by default)
//! instead of one round trip, and every waiter sends an attempt per step.

use std::time::Duration;

use crate::error::{LockError, Result};

/// How a waiter waits between attempts; see [`crate::ClientConfig::wait_strategy`].
///
/// ```
/// # use lock_core::{ClientConfig, PollBackoff, WaitStrategy};
/// # use std::time::Duration;
/// let config = ClientConfig::default().wait_strategy(WaitStrategy::poll());
/// let slower = WaitStrategy::Poll(PollBackoff::default().max(Duration::from_millis(500)));
/// assert_ne!(config.wait_strategy, slower);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
#[non_exhaustive]
pub enum WaitStrategy {
    /// Subscribe to the lock's channel and sleep until an unlock notice or
    /// the holder's time to live (see the crate docs). The default.
    #[default]
    Subscribe,
    /// Never subscribe: look again after a capped, jittered exponential
    /// backoff (or the holder's time to live, if sooner).
    Poll(PollBackoff),
}

impl WaitStrategy {
    /// [`WaitStrategy::Poll`] with the default backoff: 1 ms doubling to
    /// 128 ms.
    pub fn poll() -> Self {
        Self::Poll(PollBackoff::default())
    }

    /// Whether waiters subscribe to unlock notices.
    pub fn subscribes(&self) -> bool {
        matches!(self, Self::Subscribe)
    }

    /// Checks the backoff of [`WaitStrategy::Poll`].
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] for a zero `initial` or a `max`
    /// below `initial`.
    pub fn validate(&self) -> Result<()> {
        match self {
            Self::Subscribe => Ok(()),
            Self::Poll(backoff) => backoff.validate(),
        }
    }
}

/// The backoff of [`WaitStrategy::Poll`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
#[non_exhaustive]
pub struct PollBackoff {
    /// The first step. Default 1 ms.
    #[cfg_attr(feature = "serde", serde(with = "humantime_serde"))]
    pub initial: Duration,
    /// The longest step: the worst delay between an unlock and a waiter's
    /// next look. Default 128 ms.
    #[cfg_attr(feature = "serde", serde(with = "humantime_serde"))]
    pub max: Duration,
}

impl Default for PollBackoff {
    fn default() -> Self {
        Self {
            initial: Duration::from_millis(1),
            max: Duration::from_millis(128),
        }
    }
}

impl PollBackoff {
    /// Sets [`PollBackoff::initial`].
    pub fn initial(mut self, initial: Duration) -> Self {
        self.initial = initial;
        self
    }

    /// Sets [`PollBackoff::max`].
    pub fn max(mut self, max: Duration) -> Self {
        self.max = max;
        self
    }

    fn validate(&self) -> Result<()> {
        if self.initial.is_zero() {
            return Err(LockError::invalid(
                "wait_strategy: the poll backoff's initial step must be greater than zero",
            ));
        }
        if self.max < self.initial {
            return Err(LockError::invalid(format!(
                "wait_strategy: the poll backoff's max of {:?} is below its initial step of {:?}",
                self.max, self.initial
            )));
        }
        Ok(())
    }

    /// The steps of one wait, starting at `initial`.
    pub(crate) fn steps(&self) -> PollSteps {
        PollSteps {
            next: self.initial,
            max: self.max,
        }
    }
}

/// One waiter's progress through its backoff.
pub(crate) struct PollSteps {
    next: Duration,
    max: Duration,
}

impl PollSteps {
    /// The next sleep: between half and all of the current step; the step
    /// then doubles, up to the cap.
    pub(crate) fn next_sleep(&mut self) -> Duration {
        let step = self.next;
        self.next = step.saturating_mul(2).min(self.max);
        let half = step / 2;
        half + (step - half).mul_f64(fastrand::f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_double_from_initial_to_the_cap_with_jitter() {
        let mut steps = PollBackoff::default().steps();
        let mut step = Duration::from_millis(1);
        for _ in 0..20 {
            let sleep = steps.next_sleep();
            assert!(
                sleep >= step / 2 && sleep <= step,
                "{sleep:?} outside [{:?}, {step:?}]",
                step / 2
            );
            step = (step * 2).min(Duration::from_millis(128));
        }
        assert_eq!(step, Duration::from_millis(128), "reached the cap");
    }

    #[test]
    fn jitter_spreads_sleeps() {
        let backoff = PollBackoff::default().initial(Duration::from_millis(100));
        let sleeps: std::collections::HashSet<Duration> =
            (0..20).map(|_| backoff.steps().next_sleep()).collect();
        assert!(sleeps.len() > 1, "twenty waiters slept alike: {sleeps:?}");
    }

    #[test]
    fn bad_backoffs_are_invalid_arguments() {
        let zero = WaitStrategy::Poll(PollBackoff::default().initial(Duration::ZERO));
        assert!(zero.validate().unwrap_err().is_invalid_argument());
        let inverted = WaitStrategy::Poll(PollBackoff::default().max(Duration::from_micros(10)));
        let e = inverted.validate().unwrap_err();
        assert!(
            e.is_invalid_argument() && e.to_string().contains("max"),
            "{e}"
        );
        assert!(WaitStrategy::poll().validate().is_ok());
        assert!(WaitStrategy::Subscribe.validate().is_ok());
    }
}
