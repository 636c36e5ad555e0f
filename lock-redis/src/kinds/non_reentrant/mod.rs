//! The non-reentrant lock: Redisson 4.x's `RedissonNonReentrantLock`, the
//! reentrant lock's layout (so Java's `RLock`, its non-reentrant lock and
//! ours exclude each other and wake each other's waiters) with one change:
//! an owner asking again for a lock it holds is refused
//! ([`lock_core::LockError::ReentryRefused`]; Redisson's script answers
//! `NON_REENTRANT_REACQUIRE`) instead of counting a second hold. Its scripts
//! are the reentrant kind's: `acquire.lua` refuses the re-entry when asked.

use lock_script::ScriptEnv;

use super::reentrant::Reentrant;

/// The name the kind is registered and measured under.
pub const NAME: &str = "non_reentrant";

/// The non-reentrant kind over `env`.
pub fn kind(env: ScriptEnv) -> Reentrant {
    Reentrant::refusing_reentry(env, NAME)
}

/// The non-reentrant lock's registry entry
/// ([`crate::LockClient::non_reentrant_lock`]). Its conformance row is the
/// reentrant kind's: the shared checks run on it with re-entry refused,
/// and its own checks (`non_reentrant`) cover the refusal.
pub const ENTRY: super::KindEntry = super::KindEntry::new(
    NAME,
    "reentrant",
    |env| std::sync::Arc::new(kind(env.clone())),
    Reentrant::scripts,
);

impl super::Kinds {
    /// Redisson's non-reentrant lock over the reentrant lock's layout.
    pub fn non_reentrant(&self) -> std::sync::Arc<Reentrant> {
        self.bound(NAME, kind)
    }
}
