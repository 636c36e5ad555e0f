//! What a store or a lock kind implements, and the requests and replies
//! the engine hands it. A service using the library needs none of it.
//!
//! The seams, each documented with its contract:
//! - [`Connection`]: what every kind of one client shares on its store
//!   (notices and subscriptions, the command timeout, closing). A
//!   deployment implements it once.
//! - [`ExclusiveKind`]: the store operations of one kind of exclusive lock
//!   (try to acquire, release, renew a batch, force unlock, inspect), plus
//!   the plain description of its behaviour the engine reads
//!   ([`KindBehaviour`]: hold side, queueing, hand-over, …).
//!   Every handle that is a [`crate::Lock`] runs on one.
//! - [`Held`]: what every guard offers, and [`run_locked`] on it.
//! - [`CountingStore`]: the store operations of a counting kind (whose
//!   handles are not a [`crate::Lock`]: semaphores, the latch), run by a
//!   [`Counter`] on the same machinery; a kind with leases registers them
//!   ([`PermitLeases`]) for the watchdog to renew ([`LeaseRenewal`]).
//! - [`Engine`]: the machinery of one client, which a deployment's client
//!   wraps and binds its kinds to.
//!
//! The engine's own tests run against a fake kind and connection written
//! in Rust (lock-core's `tests/engine`), so this module's contracts are
//! checked without any store.

pub(crate) mod behaviour;
pub(crate) mod connection;
pub(crate) mod held;
pub(crate) mod kind;

pub use crate::deadline::Deadline;
pub use crate::engine::calls::Redate;
pub use crate::engine::client::{Engine, WeakEngine};
pub use crate::engine::counter::{
    Counter, CountingStore, LeaseId, LeaseRenewal, LeaseTarget, Taken,
};
pub use crate::engine::live_permits::{GiveBack, LivePermit, LivePermits};
pub use crate::engine::permit_leases::{PermitHold, PermitLeases};
pub use crate::engine::store_clock::{outcome_forgotten, FOLLOW_TOLERANCE_MS, RECORD_GRACE_MS};
pub use crate::engine::wait_loop::Look;
pub use crate::handles::acquire::fixed_lease_millis;
pub use behaviour::KindBehaviour;
pub use connection::{Channel, Connection, Notice, NoticeSink, Wake};
pub use held::{run_locked, Held};
pub use kind::{
    deadline_in, AcquireOutcome, AcquireRequest, ExclusiveKind, ReleaseOutcome, ReleaseRequest,
    RenewTarget, RequestId,
};
