//! [`HandoffLock`]: the fair lock with direct handoff.
//!
//! # Promise
//! The fair lock's ([`FairLock`]): waiters get the lock in the order
//! they joined its queue, and the two are one lock with one queue. On top of
//! that, a release hands the freed lock straight to the first live waiter
//! of the queue that accepts a handoff (a wait of a [`HandoffLock`]), which
//! then holds it and is told so on its own channel: it takes the lock with
//! one notice instead of a notice and another acquisition. Any other
//! waiter at the head (a plain fair lock's, another library's) is told to
//! look again, as by the fair lock. A fenced acquisition is never granted:
//! it takes its token itself.
//!
//! What it costs: a grant to a waiter whose process died after its last
//! refresh (at most a third of [`lock_core::ClientConfig::waiter_timeout`]
//! before) keeps the lock for that waiter's lease, as a holder that died
//! would. That is why it is a type of its own, asked for by name
//! (`client.handoff_lock(name)`), and not the fair lock's default.
//!
//! It is the shared wait loop of [`Lock`] over a kind that hands over
//! ([`lock_core::backend::ExclusiveKind::hands_over`]); every method of
//! [`Lock`] applies (through `Deref`), and [`HandoffLock::info`] adds the
//! queue.

use std::sync::Arc;

use lock_core::backend::Engine;
use lock_core::{Lock, Result};

use crate::handle::{FairLock, FairLockInfo};
use crate::kind::Fair;

/// A handle on one named fair lock with direct handoff
/// (`client.handoff_lock(name)`; see the module docs). Every method of
/// [`Lock`] applies. Cheap to clone; makes no I/O until used.
///
/// ```
/// # async fn demo(jobs: lock_fair::HandoffLock) -> lock_core::Result<()> {
/// let guard = jobs.lock().await?; // a release hands it to the next waiter
/// assert!(jobs.info().await?.is_locked());
/// guard.unlock().await?;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct HandoffLock {
    /// The fair lock over the handoff kind: the same queue, the same
    /// inspection; only the kind's release differs.
    fair: FairLock,
}

impl HandoffLock {
    /// The lock called `name` of the handoff `kind`
    /// ([`Fair::with_handoff`]), on `engine`: what a client's
    /// `handoff_lock(name)` returns.
    ///
    /// # Errors
    /// As [`FairLock::new`].
    pub fn new(engine: &Engine, name: impl AsRef<str>, kind: Arc<Fair>) -> Result<Self> {
        Ok(Self {
            fair: FairLock::new(engine, name, kind)?,
        })
    }

    /// A snapshot of the lock: holders with hold counts, remaining time to
    /// live, and the queue (waiters of the handoff and the plain fair lock
    /// alike) with the time each has left, head first.
    ///
    /// # Errors
    /// [`crate::LockError::WrongType`]; store errors.
    ///
    /// # Cancel safety
    /// Read-only; safe to drop.
    pub async fn info(&self) -> Result<FairLockInfo> {
        self.fair.info().await
    }

    /// This lock as a plain [`Lock`] handle (same lock, same queue, its
    /// waits granted a freed lock as this handle's are).
    pub fn as_lock(&self) -> &Lock {
        self.fair.as_lock()
    }
}

impl std::ops::Deref for HandoffLock {
    type Target = Lock;

    fn deref(&self) -> &Lock {
        self.fair.as_lock()
    }
}
