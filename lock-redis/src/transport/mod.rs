//! Building blocks of a Redis transport: what the single-node transport
//! ([`crate::SingleNode`]) is made of, for the other deployments to reuse
//! (the cluster transport keeps one [`ConnectionSet`] per master and one
//! [`SubscriptionHandle`] for its sharded pub/sub). A service needs none of
//! it: it holds a [`crate::LockClient`]. This is the one module an
//! implementer of a [`lock_script::Transport`] imports from this crate
//! (with [`crate::transport::replicas`], replica sync on one server).
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
//! `connections.rs` and `subscriptions.rs` in this folder, with the
//! single-node transport (`single.rs`), Sentinel (`sentinel/`), pub/sub,
//! replica sync, TLS, credentials and the command list.

pub mod commands;
pub(crate) mod connections;
pub mod credentials;
pub(crate) mod pubsub;
pub mod replicas;
pub mod scripts;
pub mod sentinel;
pub(crate) mod single;
pub(crate) mod subscriptions;
pub mod tls;

pub use crate::transport::connections::{ConnectionSet, Lease, REPLICAS_FRESH_FOR};
pub use crate::transport::subscriptions::{SinkSlot, SubscriptionCommand, SubscriptionHandle};
