//! [`HandoffLock`]: the fair lock with direct handoff.
//!
//! # Promise
//! The fair lock's ([`crate::FairLock`]): waiters get the lock in the order
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
//! refresh (at most a third of [`crate::ClientConfig::waiter_timeout`]
//! before) keeps the lock for that waiter's lease, as a holder that died
//! would. That is why it is a type of its own, asked for by name
//! ([`LockClient::handoff_lock`]), and not the fair lock's default.
//!
//! It is the shared wait loop of [`Lock`] over a kind that hands over
//! ([`crate::backend::ExclusiveKind::hands_over`]); every method of
//! [`Lock`] applies (through `Deref`), and [`HandoffLock::info`] adds the
//! queue.

use std::sync::Arc;

use crate::client::LockClient;
use crate::error::Result;
use crate::fair_lock::{FairKind, FairLock, FairLockInfo};
use crate::lock::Lock;
use crate::name::LockName;

/// A handle on one named fair lock with direct handoff
/// ([`LockClient::handoff_lock`]; see the module docs). Every method of
/// [`Lock`] applies. Cheap to clone; makes no I/O until used.
///
/// ```
/// # async fn demo(client: lock_core::LockClient) -> lock_core::Result<()> {
/// let jobs = client.handoff_lock("jobs")?;
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
    pub(crate) fn new(client: LockClient, name: LockName, kind: Arc<dyn FairKind>) -> Self {
        Self {
            fair: FairLock::new(client, name, kind),
        }
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
