//! [`ReadWriteLock`]: many readers or one writer, by name.
//!
//! # Promise
//! While a writer holds the lock nobody else does, except readers of the
//! writer's own owner (a writer may read: take the read side, then release
//! the write side, to downgrade). While readers hold it, any owner may read
//! and nobody may write. A reader asking for the write side fails at once
//! with [`LockError::UpgradeRefused`](lock_core::LockError::UpgradeRefused):
//! the write side waits for every reader to leave, itself included, so it
//! would wait forever.
//!
//! Each side is a [`Lock`] over the shared wait loop, holds table and
//! watchdog, through its own [`ExclusiveKind`]: every method of [`Lock`]
//! applies to [`ReadWriteLock::read`] and [`ReadWriteLock::write`] (leases,
//! watchdog, re-entry through the owner, guards and their lost signal).
//! An owner's read and write holds are tracked apart
//! ([`KindBehaviour::hold_side`](lock_core::backend::KindBehaviour::hold_side)): losing one side tells only that side's
//! guards.
//!
//! # Waking and starvation
//! A write unlock wakes every waiter, and so does a read unlock that leaves
//! the lock free. Writers first: the write side is a kind whose waiters
//! queue ([`KindBehaviour::queues_waiters`](lock_core::backend::KindBehaviour::queues_waiters)), so a waiting writer is known
//! to the store, refreshed every third of
//! [`lock_core::ClientConfig::waiter_timeout`] and forgotten when it gives up;
//! while one waits, owners that do not read the lock yet wait too, so a
//! steady stream of readers cannot starve it. Re-entry by a reader and
//! reads by the writer's own owner never wait (they would deadlock). The
//! kind decides who honours this (Redisson's own readers do not); the
//! benchmark's RW1 workload measures it.

use std::sync::Arc;

use lock_core::backend::Engine;
use lock_core::backend::ExclusiveKind;
use lock_core::{Lock, LockName, Result};

/// The two sides of the read-write lock kind ([`super::kinds`]): each an [`ExclusiveKind`] over the same
/// store value, naming different [`KindBehaviour::hold_side`](lock_core::backend::KindBehaviour::hold_side)s.
#[derive(Clone)]
pub struct ReadWriteKinds {
    read: Arc<dyn ExclusiveKind>,
    write: Arc<dyn ExclusiveKind>,
}

impl std::fmt::Debug for ReadWriteKinds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadWriteKinds")
            .field("read", &self.read.behaviour().hold_side)
            .field("write", &self.write.behaviour().hold_side)
            .finish()
    }
}

impl ReadWriteKinds {
    /// The read side and the write side.
    pub fn new(read: Arc<dyn ExclusiveKind>, write: Arc<dyn ExclusiveKind>) -> Self {
        Self { read, write }
    }

    /// The read side's store operations.
    pub fn read(&self) -> &Arc<dyn ExclusiveKind> {
        &self.read
    }

    /// The write side's store operations.
    pub fn write(&self) -> &Arc<dyn ExclusiveKind> {
        &self.write
    }
}

/// A handle on one named read-write lock
/// ([`crate::LockClient::read_write_lock`]); see the module docs. Cheap to clone;
/// makes no I/O until used.
///
/// ```
/// # async fn demo(client: lock_redis::LockClient) -> lock_redis::Result<()> {
/// let config = client.read_write_lock("config")?;
/// let r1 = config.read().lock().await?;
/// let r2 = config.read().lock().await?;     // readers share
/// assert!(config.write().try_lock().await?.is_none()); // the writer waits
/// r1.unlock().await?;
/// r2.unlock().await?;
/// let w = config.write().lock().await?;
/// w.unlock().await?;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct ReadWriteLock {
    read: Lock,
    write: Lock,
}

impl ReadWriteLock {
    pub(crate) fn new(
        engine: &Engine,
        name: impl AsRef<str>,
        kinds: &ReadWriteKinds,
    ) -> Result<Self> {
        Ok(Self {
            read: engine.lock(name.as_ref(), Arc::clone(&kinds.read))?,
            write: engine.lock(name, Arc::clone(&kinds.write))?,
        })
    }

    /// The lock's name.
    pub fn name(&self) -> &LockName {
        self.read.name()
    }

    /// The read side: shared with other readers, excluded by a writer of
    /// another owner. Its [`Lock::info`] lists the readers.
    pub fn read(&self) -> &Lock {
        &self.read
    }

    /// The write side: exclusive. Its [`Lock::info`] lists the writer.
    /// Asking for it while the same owner reads fails with
    /// [`lock_core::LockError::UpgradeRefused`].
    pub fn write(&self) -> &Lock {
        &self.write
    }

    /// Deletes the lock whoever holds it, in either mode, and wakes its
    /// waiters; returns whether it was held. Holders learn it through
    /// their guards' lost signal, as with [`Lock::force_unlock`].
    ///
    /// # Errors
    /// [`lock_core::LockError::WrongType`]; backend errors.
    ///
    /// # Cancel safety
    /// Dropping the future may or may not have deleted the lock.
    pub async fn force_unlock(&self) -> Result<bool> {
        Ok(self.write.force_unlock().await? || self.read.force_unlock().await?)
    }

    /// Whether anyone holds the lock, reading or writing.
    ///
    /// # Errors
    /// As [`Lock::info`].
    ///
    /// # Cancel safety
    /// Read-only; safe to drop.
    pub async fn is_locked(&self) -> Result<bool> {
        Ok(self.write.is_locked().await? || self.read.is_locked().await?)
    }
}
