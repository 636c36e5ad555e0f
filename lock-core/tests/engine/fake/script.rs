//! Scripted answers: what the fake store does with the next calls of one
//! operation, and how many calls of each operation it saw.
//!
//! Each operation (acquire, release, renew) has a queue of [`Step`]s; a
//! call takes the next one, and answers normally once the queue is empty.

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use lock_core::LockError;

/// What the fake store does with one call.
#[derive(Debug, Clone)]
pub(crate) enum Step {
    /// Runs the operation and answers.
    Answer,
    /// Fails with this error without running (e.g. a retryable
    /// `LockError::unavailable`: no connection).
    Fail(LockError),
    /// Runs the operation, then fails with a retryable timeout: the reply
    /// was lost on the way back.
    ApplyThenLose,
    /// Sleeps this long (tokio time), then runs and answers.
    Slow(Duration),
    /// Runs at once; the reply arrives this long (tokio time) later.
    Late(Duration),
    /// Never answers (and never runs).
    Never,
}

/// One of the scripted operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    /// `try_acquire`.
    Acquire,
    /// `release`.
    Release,
    /// `renew`.
    Renew,
}

impl Op {
    fn index(self) -> usize {
        match self {
            Op::Acquire => 0,
            Op::Release => 1,
            Op::Renew => 2,
        }
    }
}

/// The queued steps and call counts of every operation.
#[derive(Default)]
pub(crate) struct Script {
    state: Mutex<[OpScript; 3]>,
}

#[derive(Default)]
struct OpScript {
    steps: VecDeque<Step>,
    /// When set, the step every call takes once `steps` is empty.
    then: Option<Step>,
    calls: usize,
}

impl Script {
    fn state(&self) -> MutexGuard<'_, [OpScript; 3]> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues `steps` for the next calls of `op`.
    pub(crate) fn push(&self, op: Op, steps: impl IntoIterator<Item = Step>) {
        self.state()[op.index()].steps.extend(steps);
    }

    /// Every call of `op` past the queued steps takes `step` (`None`:
    /// answers normally again).
    pub(crate) fn always(&self, op: Op, step: Option<Step>) {
        self.state()[op.index()].then = step;
    }

    /// Counts a call of `op` and gives its step.
    pub(crate) fn next(&self, op: Op) -> Step {
        let mut state = self.state();
        let op = &mut state[op.index()];
        op.calls += 1;
        op.steps
            .pop_front()
            .or_else(|| op.then.clone())
            .unwrap_or(Step::Answer)
    }

    /// How many calls of `op` were made.
    pub(crate) fn calls(&self, op: Op) -> usize {
        self.state()[op.index()].calls
    }

    /// Plays the next step of `op` around `apply` (the operation on the
    /// store, run at most once): a call bounded by `timeout` (the
    /// connection's command timeout) fails with a retryable timeout when
    /// its step takes longer, without running.
    pub(crate) async fn run<T>(
        &self,
        op: Op,
        timeout: Option<Duration>,
        apply: impl FnOnce() -> T,
    ) -> lock_core::Result<T> {
        let step = self.next(op);
        if let Step::Late(d) = step {
            let answer = apply();
            return match timeout {
                Some(t) if d > t => {
                    tokio::time::sleep(t).await;
                    Err(LockError::timeout(
                        "fake: reply late past the command timeout",
                    ))
                }
                _ => {
                    tokio::time::sleep(d).await;
                    Ok(answer)
                }
            };
        }
        let wait = match &step {
            Step::Slow(d) => Some(*d),
            Step::Never => None,
            Step::Answer | Step::ApplyThenLose | Step::Fail(_) | Step::Late(_) => {
                Some(Duration::ZERO)
            }
        };
        let waited = async {
            match wait {
                Some(d) if !d.is_zero() => tokio::time::sleep(d).await,
                Some(_) => {}
                None => std::future::pending::<()>().await,
            }
        };
        match timeout {
            Some(t) if wait.is_none_or(|w| w > t) => {
                tokio::time::sleep(t).await;
                return Err(LockError::timeout("fake: command timed out"));
            }
            _ => waited.await,
        }
        match step {
            Step::Fail(e) => Err(e),
            Step::ApplyThenLose => {
                apply();
                Err(LockError::timeout("fake: reply lost"))
            }
            Step::Answer | Step::Slow(_) | Step::Late(_) | Step::Never => Ok(apply()),
        }
    }
}
