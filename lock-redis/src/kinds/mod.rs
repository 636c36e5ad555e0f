//! The lock kinds, and the registry that binds every kind to a deployment
//! ([`registry`]: [`REGISTRY`], [`Kinds`]), which every deployment's client
//! is made of ([`LockClient::new`]).
//!
//! A kind is one folder: its Lua scripts, its store operations (keys,
//! arguments, replies), its handle, and its registry entry with its typed
//! accessor on [`Kinds`]; the fair lock's kind is the `lock-fair` crate,
//! its entries are in this folder. A new kind adds its folder, one line
//! in [`REGISTRY`] and its handle's constructor on [`LockClient`].

#[cfg(doc)]
use crate::LockClient;

mod fair;
pub mod latch;
pub mod lean;
pub mod non_reentrant;
pub mod permit_semaphore;
pub mod reentrant;
pub mod registry;
pub mod rwlock;
pub mod semaphore;

pub use latch::Latch;
pub use lock_fair::Fair;
pub use permit_semaphore::PermitSemaphore;
pub use reentrant::Reentrant;
pub use semaphore::SemaphoreStore;

pub use registry::{scripts, BoundKind, KindEntry, Kinds, REGISTRY};
