//! [`Description`]: what is stored under a name, read without knowing
//! which kind put it there (for tools such as `lockctl status`):
//! [`crate::LockClient::describe`].
//!
//! The kinds are told apart by their layouts alone; where two kinds share
//! one layout (a semaphore's free permits and a latch's count are both one
//! integer), the description says so rather than guessing.

use std::time::Duration;

use lock_core::{ClientInfo, Holder, LockInfo};

use crate::PermitId;

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
    /// The permit id as stored, in lower-case hex (32 characters for ours
    /// and a Java client's, see [`LeasedPermit::permit_id`]), kept raw so
    /// an id of another length is shown as it is.
    pub id: String,
    /// How long its lease still ran when the snapshot was read, by the
    /// store's clock (as [`crate::PermitExpirableSemaphore::lease_time`]);
    /// `None` for a permit without a lease.
    pub lease_time: Option<Duration>,
    /// The record of the client whose guard holds it, when found. A
    /// permit's id does not name its client (Redisson's layout), so it is
    /// found in the records clients keep, which name their permits at each
    /// refresh: a permit taken since a client's last refresh shows none
    /// until the next (at most a third of the watchdog timeout). `None`
    /// too for a permit taken by another library, by id without a guard,
    /// or by a client gone for a few refresh periods.
    pub client: Option<ClientInfo>,
}

impl LeasedPermit {
    /// A permit `id` whose lease has `lease_time` left, with no client
    /// record.
    pub fn new(id: impl Into<String>, lease_time: Option<Duration>) -> Self {
        Self {
            id: id.into(),
            lease_time,
            client: None,
        }
    }

    /// The id as a [`PermitId`] (what
    /// [`crate::PermitExpirableSemaphore::release`] takes), when it has
    /// that shape.
    pub fn permit_id(&self) -> Option<PermitId> {
        self.id.parse().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lock_core::Owner;
    use lock_fair::QueuedWaiter;

    /// Holders, waiters and permits keep the stored text and parse it the
    /// same way: ours and Java's parse, other shapes stay raw.
    #[test]
    fn raw_fields_parse_where_they_have_our_shape() {
        let owner = Owner::new(uuid::Uuid::new_v4(), 7);
        let java = "6f0c9d1e-6b7a-4a44-9d0e-1c2b3a4d5e6f:81";
        assert_eq!(Holder::new(owner.field(), 2).owner(), Some(owner));
        assert_eq!(
            QueuedWaiter::new(owner.field(), Duration::ZERO).owner(),
            Some(owner)
        );
        assert_eq!(
            Holder::new(java, 1).owner().map(|o| o.owner_id()),
            Some(81),
            "a Java thread id is an owner id"
        );
        assert_eq!(Holder::new("node-3", 1).owner(), None);
        assert_eq!(QueuedWaiter::new("node-3", Duration::ZERO).owner(), None);

        let id = PermitId::new();
        assert_eq!(
            LeasedPermit::new(id.to_string(), None).permit_id(),
            Some(id)
        );
        assert_eq!(LeasedPermit::new("abcd", None).permit_id(), None);
    }
}
