//! # lock-script: the seam between lock kinds and Redis transports
//!
//! A lock *kind* (the reentrant lock, the fair lock, …) is a set of Lua
//! scripts with their key/argument assembly and reply decoding; a
//! *transport* (one node, a cluster, …) runs scripts on the node that owns
//! their keys and carries pub/sub. This crate is what both sides share, and
//! nothing else:
//!
//! - [`Transport`]: what a deployment offers — scripts on the node owning
//!   their keys, and, since a transport *is* the engine's
//!   [`lock_core::backend::Connection`], pub/sub notices straight to the
//!   engine ([`ScriptCall`]: one invocation, with [`ScriptCall::idempotent`]
//!   saying whether a transport may send it again);
//! - [`KeyLayout`]: Redisson's key and channel names, and the unlock
//!   messages ([`layout::UNLOCK_MESSAGE`], [`wake`]);
//! - [`scripts`]: the Lua every kind's scripts share (`common.lua`), the
//!   one composer of a kind's scripts ([`compose`]) and the batch renewal
//!   of lock hashes;
//! - [`slot`]: Redis Cluster's hash slots (CRC16, hash tags), for
//!   transports that group or route keys by slot;
//! - [`replies`]: decoders of the reply shapes several kinds produce;
//! - [`error`]: how Redis failures become [`lock_core::LockError`]s, for
//!   every transport;
//! - [`ScriptEnv`]: the transport, layout and [`ReplicaSync`] one client's
//!   kinds run with; [`ScriptEnv::connection`] is the same transport as the
//!   engine's connection.
//!
//! ## Why a crate of its own
//! One client hands out every kind, on every deployment, so the one place
//! that registers the kinds' script sets lives in `lock-redis`, which every
//! deployment's `connect` uses; `lock-redis` therefore depends on
//! `lock-fair`. The fair kind in turn needs the transport seam and the
//! shared helpers — it must not depend on `lock-redis`, or the crates form
//! a cycle. So what kinds and transports share lives here, below both:
//!
//! ```text
//! lock-core  ←  lock-script  ←  lock-fair  ←  lock-redis  ←  lock-redis-cluster
//!  (engine)      (this seam)     (fair kind)   (single node,    (cluster
//!                                              reentrant kind,  transport)
//!                                              registration)
//! ```
#![deny(missing_docs)]

mod call;
pub mod clients;
mod env;
pub mod error;
pub mod layout;
pub mod replies;
pub mod scripts;
pub mod slot;
mod transport;

pub use call::{Body, ScriptCall};
pub use env::{check_lease, ReplicaSync, ScriptEnv, RENEW_CHUNK, RENEW_WINDOW};
pub use layout::{wake, KeyLayout};
pub use scripts::{compose, compose_lua};
pub use transport::{ReplicaAcks, Transport};

pub use lock_core;
pub use redis;
