//! The non-reentrant lock: Redisson 4.x's `RedissonNonReentrantLock`, the
//! reentrant lock's layout (so Java's `RLock`, its non-reentrant lock and
//! ours exclude each other and wake each other's waiters) with one change:
//! an owner asking again for a lock it holds is refused
//! ([`lock_core::LockError::ReentryRefused`]; Redisson's script answers
//! `NON_REENTRANT_REACQUIRE`) instead of counting a second hold. Only
//! `acquire.lua` is its own; release, renewal, inspection and force-unlock
//! are the reentrant kind's.

use std::sync::LazyLock;

use lock_script::{with_common, ScriptEnv};
use redis::Script;

use super::reentrant::Reentrant;

/// The name the kind is registered and measured under.
pub const NAME: &str = "non_reentrant";

/// Takes a lock, refusing its holder (`acquire.lua`).
static ACQUIRE: LazyLock<Script> = LazyLock::new(|| with_common(include_str!("acquire.lua")));

/// The non-reentrant kind over `env`.
pub fn kind(env: ScriptEnv) -> Reentrant {
    Reentrant::with_acquire(env, &ACQUIRE, NAME)
}

/// The scripts the kind adds to the reentrant kind's, for preloading.
pub fn scripts() -> Vec<&'static Script> {
    vec![&ACQUIRE]
}
