//! Building blocks of a Redis transport: what the single-node transport
//! ([`crate::SingleNode`]) is made of, for the other deployments to reuse
//! (the cluster transport keeps one [`ConnectionSet`] per master and one
//! [`SubscriptionHandle`] for its sharded pub/sub). A service needs none of
//! it: it holds a [`crate::LockClient`]. This is the one module an
//! implementer of a [`lock_script::Transport`] imports from this crate
//! (with [`crate::replicas`], replica sync on one server).
//!
//! - [`ConnectionSet`] and its [`Lease`]: a small, fixed set of
//!   multiplexed connections to one server, filled before the next is
//!   used, replaced after a failure that shows them broken (by epoch, so
//!   after a restart about one call fails, not one per connection), with
//!   slots of their own for `WAIT`s so that no renewal queues behind one;
//! - [`SubscriptionHandle`], [`SubscriptionCommand`], [`SinkSlot`]: the
//!   caller's side of a pub/sub task. Subscriptions are queued in the call
//!   itself (so the task applies them in call order) and the task delivers
//!   [`lock_core::backend::Notice`]s to the engine's sink, which is how a
//!   transport is the engine's [`lock_core::backend::Connection`];
//! - [`scripts`]: running a script on a connection (`EVALSHA`, loaded and
//!   run once more on `NOSCRIPT`), alone, pipelined or followed by `WAIT`.
//!
//! How each works in detail (fill then spill, health without round trips,
//! `WAIT` apart; the pub/sub task's reconnects) is written in its source,
//! `connections.rs` and `subscriptions.rs` beside this file.

pub use crate::connections::{ConnectionSet, Lease, REPLICAS_FRESH_FOR};
pub use crate::subscriptions::{SinkSlot, SubscriptionCommand, SubscriptionHandle};

/// How scripts are run on a connection, for every transport: `EVALSHA`,
/// and on `NOSCRIPT` (a restarted, failed over or flushed server) the
/// script is loaded with `SCRIPT LOAD` and the call retried once, the only
/// retry done below the engine. Keys and owner strings only ever travel in
/// KEYS/ARGV, never in the script text.
pub mod scripts {
    pub use crate::scripts::{eval, eval_and_wait, eval_pipelined, is_noscript, load, load_for};
}
