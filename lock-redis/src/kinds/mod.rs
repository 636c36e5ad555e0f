//! The lock kinds, and the one place that binds every kind to a
//! deployment ([`Kinds`]), which every deployment's client is made of
//! ([`LockClient::new`]).
//!
//! A kind is one folder: its Lua scripts, its store operations (keys,
//! arguments, replies) and its handle; the fair lock's is the `lock-fair`
//! crate. A new kind adds its folder, a field in [`Kinds`] (and its
//! scripts in [`scripts`]) and its handle's constructor on
//! [`LockClient`].

use std::sync::Arc;

use lock_script::ScriptEnv;
use redis::Script;

#[cfg(doc)]
use crate::LockClient;

pub mod latch;
pub mod lean;
pub mod non_reentrant;
pub mod permit_semaphore;
pub mod reentrant;
pub mod rwlock;
pub mod semaphore;

pub use latch::Latch;
pub use lock_fair::Fair;
pub use permit_semaphore::PermitSemaphore;
pub use reentrant::Reentrant;
pub use semaphore::SemaphoreStore;

/// Every kind's store operations, bound to one deployment's transport,
/// key layout and replica sync: what a [`LockClient`] hands out handles
/// of. For tools and tests that drive a kind's store operations directly;
/// a service uses the client's handles.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Kinds {
    /// Redisson's reentrant lock ([`LockClient::lock`],
    /// [`LockClient::fenced_lock`]).
    pub reentrant: Arc<Reentrant>,
    /// Redisson's non-reentrant lock over the same layout
    /// ([`LockClient::non_reentrant_lock`]).
    pub non_reentrant: Arc<Reentrant>,
    /// The lean lock ([`LockClient::lean_lock`]).
    pub lean: Arc<lean::Lean>,
    /// The fair lock ([`LockClient::fair_lock`]).
    pub fair: Arc<Fair>,
    /// The fair lock with direct handoff ([`LockClient::handoff_lock`]).
    pub handoff: Arc<Fair>,
    /// Both sides of the read-write lock ([`LockClient::read_write_lock`]).
    pub read_write: rwlock::ReadWriteKinds,
    /// The count-down latch ([`LockClient::count_down_latch`]).
    pub latch: Arc<Latch>,
    /// The semaphore ([`LockClient::semaphore`]).
    pub semaphore: Arc<SemaphoreStore>,
    /// The expirable-permit semaphore
    /// ([`LockClient::permit_expirable_semaphore`]).
    pub permit_semaphore: Arc<PermitSemaphore>,
    /// The kind-neutral reader of [`LockClient::describe`].
    pub describer: Arc<crate::describe::Describer>,
}

impl Kinds {
    /// Every kind over `env`.
    pub fn new(env: &ScriptEnv) -> Self {
        Self {
            reentrant: Arc::new(Reentrant::new(env.clone())),
            non_reentrant: Arc::new(non_reentrant::kind(env.clone())),
            lean: Arc::new(lean::Lean::new(env.clone())),
            fair: Arc::new(Fair::new(env.clone())),
            handoff: Arc::new(Fair::with_handoff(env.clone())),
            read_write: rwlock::kinds(env.clone()),
            latch: Arc::new(Latch::new(env.clone())),
            semaphore: Arc::new(SemaphoreStore::new(env.clone())),
            permit_semaphore: Arc::new(PermitSemaphore::new(env.clone())),
            describer: Arc::new(crate::describe::Describer::new(env.clone())),
        }
    }
}

/// Every script of every registered kind, for preloading at connect.
pub fn scripts() -> Vec<&'static Script> {
    let mut all = Reentrant::scripts();
    let others = Fair::scripts()
        .into_iter()
        .chain(lean::Lean::scripts())
        .chain(rwlock::scripts())
        .chain(Latch::scripts())
        .chain(SemaphoreStore::scripts())
        .chain(PermitSemaphore::scripts());
    let others = others
        .chain(crate::describe::Describer::scripts())
        .chain(lock_script::clients::ClientRecords::scripts());
    for script in others {
        if !all.iter().any(|s| s.get_hash() == script.get_hash()) {
            all.push(script);
        }
    }
    all
}
