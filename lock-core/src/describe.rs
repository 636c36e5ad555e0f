//! [`Description`]: what is stored under a name, read without knowing
//! which kind put it there (for tools such as `lockctl status`), and
//! [`Describe`], the read-only store operation behind
//! [`crate::LockClient::describe`].
//!
//! The kinds are told apart by their layouts alone; where two kinds share
//! one layout (a semaphore's free permits and a latch's count are both one
//! integer), the description says so rather than guessing.

use std::time::Duration;

use async_trait::async_trait;

use crate::error::Result;
use crate::kind::{Holder, LockInfo};
use crate::name::LockName;

/// What is stored under one name.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Description {
    /// Nothing: every kind reads this as free, open, or not set.
    Free,
    /// A re-entrant or fair lock: its holders and time to live.
    Lock(LockInfo),
    /// A lean lock (the single-instance `SET NX PX` pattern, also kept by
    /// go-redsync, redis-py, node-redlock and rslock): text that is not an
    /// integer, read as its holder's token (one hold), and its time to live.
    LeanLock(LockInfo),
    /// A read-write lock.
    ReadWriteLock(ReadWriteInfo),
    /// One integer: a semaphore's free permits or a count-down latch's
    /// count (both kinds keep exactly this, so which of the two only its
    /// users know).
    SemaphoreOrLatch(CounterInfo),
    /// A semaphore whose permits have ids and leases.
    PermitExpirableSemaphore(ExpirableSemaphoreInfo),
    /// Something no lock kind stores: its type in the store (e.g. `list`),
    /// or `string` for text that is not an integer.
    Unknown {
        /// The stored value's type.
        store_type: String,
    },
}

/// Which side holds a read-write lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReadWriteMode {
    /// Readers (and possibly the writer that took read holds too).
    Read,
    /// The writer.
    Write,
}

/// A read-write lock as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReadWriteInfo {
    /// The mode the lock is in.
    pub mode: ReadWriteMode,
    /// The writer and its hold count, when there is one.
    pub writer: Option<Holder>,
    /// Every reader and its hold count.
    pub readers: Vec<Holder>,
    /// The lock's remaining time to live; `None` without expiry.
    pub ttl: Option<Duration>,
}

impl ReadWriteInfo {
    /// A snapshot with these parts.
    pub fn new(
        mode: ReadWriteMode,
        writer: Option<Holder>,
        readers: Vec<Holder>,
        ttl: Option<Duration>,
    ) -> Self {
        Self {
            mode,
            writer,
            readers,
            ttl,
        }
    }
}

/// One integer stored under a name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct CounterInfo {
    /// The value: free permits, or the latch's count.
    pub value: i64,
    /// Its remaining time to live; `None` without expiry (a latch never
    /// has one; a semaphore may).
    pub ttl: Option<Duration>,
}

impl CounterInfo {
    /// A snapshot of `value` with `ttl`.
    pub fn new(value: i64, ttl: Option<Duration>) -> Self {
        Self { value, ttl }
    }
}

/// A permit-expirable semaphore as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExpirableSemaphoreInfo {
    /// Free permits (0 when none were ever set).
    pub available: i64,
    /// The permits handed out and not yet expired.
    pub permits: Vec<LeasedPermit>,
}

impl ExpirableSemaphoreInfo {
    /// A snapshot with these parts.
    pub fn new(available: i64, permits: Vec<LeasedPermit>) -> Self {
        Self { available, permits }
    }
}

/// One permit handed out by a permit-expirable semaphore.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LeasedPermit {
    /// The permit id, as users see it (32 lower-case hex characters).
    pub id: String,
    /// When its lease ends, in milliseconds since the Unix epoch; `None`
    /// for a permit without a lease.
    pub expires_at_ms: Option<u64>,
}

impl LeasedPermit {
    /// A permit `id` whose lease ends at `expires_at_ms`.
    pub fn new(id: String, expires_at_ms: Option<u64>) -> Self {
        Self { id, expires_at_ms }
    }
}

/// Reads what is stored under a name, whatever kind put it there.
#[async_trait]
pub trait Describe: Send + Sync + 'static {
    /// Describes what is stored under `name`. Writes nothing.
    ///
    /// # Errors
    /// A retryable error when the store could not be reached.
    async fn describe(&self, name: &LockName) -> Result<Description>;
}
