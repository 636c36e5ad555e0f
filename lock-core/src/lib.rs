//! # lock-core: the distributed lock engine
//!
//! A service does not depend on this crate directly: `lock-redis` (or
//! `lock-redis-cluster`) re-exports every type here that a service holds
//! ([`Lock`], [`Guard`], [`LockError`], [`ClientConfig`], …), and its
//! `connect` makes the client. Depend on `lock-core` to build a lock kind
//! or a store; the seams are in [`backend`].
//!
//! Store-agnostic: it knows nothing of Redis — no key, channel or message
//! name — and no lock kind by name. A store is reached through one
//! [`Connection`](backend::Connection) per client (notices, subscriptions,
//! closing); a kind brings its store operations through a few generic
//! seams ([`ExclusiveKind`](backend::ExclusiveKind) for every exclusive
//! lock). This crate turns them into locks:
//!
//! - [`Engine`](backend::Engine): one per client; owns the client id, the waiter registry
//!   and the watchdog, shared by every kind's handles. A deployment's
//!   client (`lock_redis::LockClient`) wraps one and names the kinds.
//! - [`Lock`]: a named exclusive lock of any [`ExclusiveKind`](backend::ExclusiveKind)
//!   (re-entrant, non-reentrant, lean, fair, each side of a read-write
//!   lock); [`FencedLock`]: the same lock with a fencing token on every
//!   acquisition; [`Guard`] ([`FencedGuard`]): a held lock.
//! - [`MultiLock`]: several locks (of any clients) held as one, all or
//!   nothing; [`RedLock`]: one lock over N independent stores, held by a
//!   majority (Redlock). Both compose [`Lock`] handles.
//! - The counting kinds (semaphores, the latch) live in their kind
//!   folders; their handles are thin faces on a
//!   [`Counter`](backend::Counter) over the kind's
//!   [`CountingStore`](backend::CountingStore) (see
//!   [`backend`]), the same wait loop; the watchdog renews leased permits
//!   through [`LeaseRenewal`](backend::LeaseRenewal).
//! - [`Owner`]: who holds a lock; explicit, because async tasks have no
//!   stable "current thread" to key re-entrancy on.
//! - [`LockError`]: every failure, with retry classification.
//!
//! The source is laid out by job: `handles/` (what a service holds: the
//! handles above and a lock's acquisition), `engine/` (the machinery,
//! private), `backend/` (the seams a kind or a store implements),
//! `config/`, and the values (errors, names, owners) at the root. Nothing
//! in the engine imports a handle, and the files form no import cycle
//! (`scripts/check_engine_layers.py`).
//!
//! Every kind's handle is a thin face over one wait loop
//! (`engine/wait_loop.rs`). How waiting works (event-driven, time-to-live
//! bounded, one wake-up per unlock) is documented in `engine/waiter.rs`;
//! how one owner's holds share one lost signal and deadline, in
//! `engine/holds.rs`; how leases are kept alive and loss is detected, in
//! `engine/watchdog.rs`; how dropped futures never leave a lock held, in
//! `engine/calls/`; how a wait rides out a store outage, in
//! `engine/outage.rs`. These are private modules: their promises are the
//! public behaviour of [`Lock`] and [`Guard`], checked by the engine's own
//! tests against a fake kind (`tests/engine`) and by the conformance suite
//! in `lock-testkit` on every kind and deployment.
//!
//! ```
//! # use lock_core::ClientConfig;
//! # use lock_core::backend::Engine;
//! # use lock_core::backend::{Connection, ExclusiveKind};
//! # use std::{sync::Arc, time::Duration};
//! # async fn demo(connection: Arc<dyn Connection>, kind: Arc<dyn ExclusiveKind>) -> lock_core::Result<()> {
//! let engine = Engine::new(connection, ClientConfig::default())?;
//! let lock = engine.lock("reports:daily", kind)?;
//! if let Some(guard) = lock.try_lock_for(Duration::from_secs(5)).await? {
//!     // … only one process runs this at a time …
//!     guard.unlock().await?;
//! }
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

pub mod backend;
mod client_info;
pub mod config;
mod deadline;
mod engine;
pub mod error;
mod handles;
pub mod name;
pub mod owner;
pub mod telemetry;

pub use backend::kind::{Holder, LockInfo};
pub use client_info::ClientInfo;
pub use config::options::{AcquireOptions, Wait, FOREVER, WAIT_OVERSHOOT};
pub use config::wait_strategy::{PollBackoff, WaitStrategy};
pub use config::{lease_millis, ClientConfig, RetryPolicy, MAX_LEASE, MAX_SERVICE_NAME_LEN};
pub use engine::stats::ClientStats;
pub use error::{LockError, Result};
pub use handles::fenced_lock::{FencedGuard, FencedLock};
pub use handles::guard::Guard;
pub use handles::lock::Lock;
pub use handles::multi_lock::{MultiGuard, MultiLock};
pub use handles::red_lock::{RedGuard, RedLock};
pub use name::{LockName, MAX_NAME_LEN};
pub use owner::Owner;
