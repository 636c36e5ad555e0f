//! The lock kinds, and the one place that registers every kind's script
//! set on a client ([`client`]), used by every deployment's `connect`.
//!
//! A kind is its Lua scripts plus one module assembling keys/args and
//! decoding replies: [`reentrant`] and [`rwlock`] here, the fair lock in
//! `lock-fair`. A
//! new kind adds its folder and one line in [`client`] (and [`scripts`]).

use std::sync::Arc;

use lock_core::backend::Kinds;
use lock_core::{ClientConfig, LockClient, Result};
use lock_script::{ScriptConnection, ScriptEnv};
use redis::Script;

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
pub use semaphore::Semaphore;

/// A client over `env` (one deployment's transport, key layout and replica
/// sync) with every kind registered: [`LockClient::lock`] (reentrant),
/// [`LockClient::fair_lock`] (fair), [`LockClient::read_write_lock`],
/// [`LockClient::count_down_latch`], [`LockClient::semaphore`] and
/// [`LockClient::permit_expirable_semaphore`] share its connection and
/// watchdog.
///
/// # Errors
/// As [`LockClient::new`].
pub fn client(env: ScriptEnv, config: ClientConfig) -> Result<LockClient> {
    let connection = Arc::new(ScriptConnection::new(env.clone()));
    let kinds = Kinds::new()
        .reentrant(Arc::new(Reentrant::new(env.clone())))
        .exclusive(
            non_reentrant::NAME,
            Arc::new(non_reentrant::kind(env.clone())),
        )
        .exclusive(lean::NAME, Arc::new(lean::Lean::new(env.clone())))
        .fair(Arc::new(Fair::new(env.clone())))
        .handoff(Arc::new(Fair::with_handoff(env.clone())))
        .read_write(rwlock::kinds(env.clone()))
        .latch(Arc::new(Latch::new(env.clone())))
        .semaphore(Arc::new(Semaphore::new(env.clone())))
        .permit_semaphore(Arc::new(PermitSemaphore::new(env.clone())))
        .describe(Arc::new(crate::describe::Describer::new(env)));
    LockClient::new(connection, kinds, config)
}

/// Every script of every registered kind, for preloading at connect.
pub fn scripts() -> Vec<&'static Script> {
    let mut all = Reentrant::scripts();
    let others = Fair::scripts()
        .into_iter()
        .chain(lean::Lean::scripts())
        .chain(rwlock::scripts())
        .chain(Latch::scripts())
        .chain(Semaphore::scripts())
        .chain(PermitSemaphore::scripts());
    for script in others.chain(crate::describe::Describer::scripts()) {
        if !all.iter().any(|s| s.get_hash() == script.get_hash()) {
            all.push(script);
        }
    }
    all
}
