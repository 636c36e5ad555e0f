//! # lock-core: the distributed lock engine
//!
//! Backend-agnostic: it knows nothing of Redis. A backend ([`LockBackend`])
//! runs the atomic primitives of the lock protocol on a store; this crate
//! turns them into locks:
//!
//! - [`LockClient`]: one per process; owns the client id, the waiter
//!   registry and the watchdog.
//! - [`Lock`]: a named re-entrant exclusive lock; [`Guard`]: a held lock.
//! - [`Owner`]: who holds a lock; explicit, because async tasks have no
//!   stable "current thread" to key re-entrancy on.
//! - [`LockError`]: every failure, with retry classification.
//!
//! How waiting works (event-driven, time-to-live bounded, one wake-up per
//! unlock) is documented in the `waiter` module; how one owner's holds
//! share one lost signal and deadline, in the `holds` module; how leases
//! are kept alive and loss is detected, in the `watchdog` module; how
//! dropped futures never leave a lock held, in the `op` module. These are private modules: their
//! promises are the public behaviour of [`Lock`] and [`Guard`], and the
//! conformance suite in `lock-testkit` checks them on every backend.
//!
//! ```
//! # use lock_core::{LockClient, LockBackend, ClientConfig};
//! # use std::{sync::Arc, time::Duration};
//! # async fn demo(backend: Arc<dyn LockBackend>) -> lock_core::Result<()> {
//! let client = LockClient::new(backend, ClientConfig::default())?;
//! let lock = client.lock("reports:daily")?;
//! if let Some(guard) = lock.try_lock_for(Duration::from_secs(5)).await? {
//!     // … only one process runs this at a time …
//!     guard.unlock().await?;
//! }
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

pub mod backend;
mod client;
pub mod config;
pub mod error;
mod guard;
mod holds;
pub mod layout;
mod lock;
pub mod name;
mod op;
mod options;
pub mod owner;
mod stats;
mod waiter;
mod watchdog;

pub use backend::{
    AcquireOutcome, AcquireRequest, Holder, LockBackend, LockInfo, LockKind, Notice, NoticeSink,
    QueuedWaiter, ReleaseOutcome, ReleaseRequest, RenewTarget, RequestId, Topic, Wake,
};
pub use client::LockClient;
pub use config::{lease_millis, ClientConfig, RetryPolicy, MAX_LEASE};
pub use error::{LockError, Result};
pub use guard::Guard;
pub use layout::KeyLayout;
pub use lock::Lock;
pub use name::{LockName, MAX_NAME_LEN};
pub use options::{AcquireOptions, Wait};
pub use owner::Owner;
pub use stats::ClientStats;
