//! # lock-core: the distributed lock engine
//!
//! Store-agnostic: it knows nothing of Redis — no key, channel or message
//! name. A store is reached through one [`Connection`](backend::Connection) per client (notices,
//! subscriptions, closing) and the lock kinds bound to it ([`Kinds`](backend::Kinds)): each
//! kind ([`ExclusiveKind`](backend::ExclusiveKind), [`FairKind`](backend::FairKind)) runs the atomic primitives of its
//! protocol and names its channels. This crate turns them into locks:
//!
//! - [`LockClient`]: one per process; owns the client id, the waiter
//!   registry and the watchdog, shared by every kind's handles.
//! - [`Lock`]: a named re-entrant exclusive lock; [`FairLock`]: the same,
//!   handed out in arrival order; [`HandoffLock`]: the fair lock, handed
//!   straight to the next waiter on release; [`FencedLock`]: the same lock with a
//!   fencing token on every acquisition; [`ReadWriteLock`]: many readers
//!   or one writer, each side a [`Lock`]; [`Guard`] ([`FencedGuard`]): a
//!   held lock.
//! - [`CountDownLatch`]: a named count-down latch, on the same wait loop.
//! - [`MultiLock`]: several locks (of any clients) held as one, all or
//!   nothing; [`RedLock`]: one lock over N independent stores, held by a
//!   majority (Redlock). Both compose [`Lock`] handles.
//! - [`Semaphore`] ([`PermitGuard`]) and [`PermitExpirableSemaphore`]:
//!   counting semaphores on the same wait loop (the `counting` module),
//!   through the seams [`SemaphoreKind`](backend::SemaphoreKind) and [`PermitSemaphoreKind`](backend::PermitSemaphoreKind).
//! - [`Owner`]: who holds a lock; explicit, because async tasks have no
//!   stable "current thread" to key re-entrancy on.
//! - [`LockError`]: every failure, with retry classification.
//!
//! Every kind's handle is a thin face over one wait loop (the `wait`
//! module). How waiting works (event-driven, time-to-live bounded, one
//! wake-up per unlock) is documented in the `waiter` module; how one
//! owner's holds share one lost signal and deadline, in the `holds` module;
//! how leases are kept alive and loss is detected, in the `watchdog`
//! module; how dropped futures never leave a lock held, in the `op` module;
//! how a wait rides out a store outage, in the `outage` module.
//! These are private modules: their promises are the public behaviour of
//! [`Lock`], [`FairLock`] and [`Guard`], and the conformance suite in
//! `lock-testkit` checks them on every deployment.
//!
//! ```
//! # use lock_core::{ClientConfig, LockClient};
//! # use lock_core::backend::{Connection, Kinds};
//! # use std::{sync::Arc, time::Duration};
//! # async fn demo(connection: Arc<dyn Connection>, kinds: Kinds) -> lock_core::Result<()> {
//! let client = LockClient::new(connection, kinds, ClientConfig::default())?;
//! let lock = client.lock("reports:daily")?;
//! if let Some(guard) = lock.try_lock_for(Duration::from_secs(5)).await? {
//!     // … only one process runs this at a time …
//!     guard.unlock().await?;
//! }
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

mod client;
mod condition;
pub mod config;
mod connection;
mod counting;
mod describe;
pub mod error;
mod expirable_permit;
mod fair_lock;
mod fenced_lock;
mod guard;
mod handoff_lock;
mod held;
mod holds;
mod kind;
mod kinds;
mod latch;
mod latch_kind;
mod lock;
mod multi_lock;
pub mod name;
mod op;
mod options;
mod outage;
pub mod owner;
mod permit_leases;
mod permit_semaphore;
mod red_lock;
mod rw_lock;
mod semaphore;
mod semaphore_kind;
mod shorthands;
mod stats;
mod store_clock;
pub mod telemetry;
mod wait;
mod wait_loop;
mod wait_strategy;
mod waiter;
mod watchdog;

pub use client::LockClient;
pub use config::{lease_millis, ClientConfig, RetryPolicy, MAX_LEASE};
pub use describe::{
    CounterInfo, Description, ExpirableSemaphoreInfo, LeasedPermit, ReadWriteInfo, ReadWriteMode,
};
pub use error::{LockError, Result};
pub use expirable_permit::ExpirablePermit;
pub use fair_lock::{FairLock, FairLockInfo, QueuedWaiter};
pub use fenced_lock::{FencedGuard, FencedLock};
pub use guard::Guard;
pub use handoff_lock::HandoffLock;
pub use kind::{Holder, LockInfo};
pub use latch::{CountDownLatch, MAX_COUNT};
pub use lock::Lock;
pub use multi_lock::{MultiGuard, MultiLock};
pub use name::{LockName, MAX_NAME_LEN};
pub use options::{AcquireOptions, Wait};
pub use owner::Owner;
pub use permit_semaphore::PermitExpirableSemaphore;
pub use red_lock::{RedGuard, RedLock};
pub use rw_lock::ReadWriteLock;
pub use semaphore::{PermitGuard, Semaphore};
pub use semaphore_kind::{PermitId, MAX_PERMITS};
pub use stats::ClientStats;
pub use wait_strategy::{PollBackoff, WaitStrategy};

/// What a backend or a lock kind implements, and the requests and replies
/// the engine hands it. A service using the library needs none of it.
///
/// A deployment implements [`Connection`](backend::Connection) (what a
/// client's kinds share: notices, closing) and registers its kinds'
/// store operations in [`Kinds`](backend::Kinds): [`ExclusiveKind`](backend::ExclusiveKind)
/// for every lock whose handle is a [`Lock`], and one trait per handle of
/// its own ([`FairKind`](backend::FairKind), [`LatchKind`](backend::LatchKind),
/// [`SemaphoreKind`](backend::SemaphoreKind),
/// [`PermitSemaphoreKind`](backend::PermitSemaphoreKind),
/// [`Describe`](backend::Describe)).
pub mod backend {
    pub use crate::connection::{Channel, Connection, Notice, NoticeSink, Wake};
    pub use crate::describe::Describe;
    pub use crate::fair_lock::FairKind;
    pub use crate::kind::{
        deadline_in, AcquireOutcome, AcquireRequest, ExclusiveKind, ReleaseOutcome, ReleaseRequest,
        RenewTarget, RequestId,
    };
    pub use crate::kinds::Kinds;
    pub use crate::latch_kind::{LatchKind, LatchRequest};
    pub use crate::rw_lock::ReadWriteKinds;
    pub use crate::semaphore_kind::{
        check_permits, LeaseOutcome, LeaseRelease, LeaseRequest, LeasesRelease, LeasesRequest,
        PermitCounts, PermitLease, PermitRequest, PermitSemaphoreKind, PermitTarget, SemaphoreKind,
    };
}
