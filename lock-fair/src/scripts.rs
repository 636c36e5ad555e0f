//! The Lua scripts of the fair lock.
//!
//! One script per operation that differs from the reentrant lock, in
//! `src/scripts/*.lua`; each file's header gives its KEYS, ARGV and replies.
//! Each is built like every kind's script, by [`lock_script::compose`]: the
//! fair lock's helpers (`prelude.lua`: the server clock, the eviction of
//! stale queue heads, the hand-over) and the helpers every kind shares
//! ([`lock_script::scripts::COMMON_LUA`]: fencing tokens, leases, request
//! records) that the script reaches, then the script, so the eviction is
//! written once and all kinds follow the same rules.
//! Renewal is the shared script ([`lock_script::scripts::RENEW`]): the lock
//! hash is the reentrant lock's.
//!
//! Calls go through [`lock_script::Transport::eval`] like every other
//! script: `EVALSHA`, loading the script on `NOSCRIPT` and retrying once.

use std::sync::LazyLock;

use lock_script::compose;
use lock_script::redis::Script;

/// The fair lock's own helpers, put in front of its scripts by
/// [`compose`] (what each reaches).
pub const PRELUDE_LUA: &str = include_str!("scripts/prelude.lua");

/// Takes, re-enters, or queues for a fair lock (`acquire.lua`).
pub static ACQUIRE: LazyLock<Script> =
    LazyLock::new(|| compose(&[PRELUDE_LUA], include_str!("scripts/acquire.lua")));
/// Gives back one hold and tells the queue head (`release.lua`).
pub static RELEASE: LazyLock<Script> =
    LazyLock::new(|| compose(&[PRELUDE_LUA], include_str!("scripts/release.lua")));
/// Removes a waiter from the queue (`leave_queue.lua`).
pub static LEAVE_QUEUE: LazyLock<Script> =
    LazyLock::new(|| compose(&[PRELUDE_LUA], include_str!("scripts/leave_queue.lua")));
/// Deletes a fair lock whoever holds it (`force_unlock.lua`).
pub static FORCE_UNLOCK: LazyLock<Script> =
    LazyLock::new(|| compose(&[PRELUDE_LUA], include_str!("scripts/force_unlock.lua")));
/// Reads holders, time to live and queue (`inspect.lua`).
pub static INSPECT: LazyLock<Script> =
    LazyLock::new(|| compose(&[PRELUDE_LUA], include_str!("scripts/inspect.lua")));

/// Every script of the fair lock, renewal included (for preloading).
pub fn all() -> [&'static Script; 6] {
    [
        &ACQUIRE,
        &RELEASE,
        &LEAVE_QUEUE,
        &FORCE_UNLOCK,
        &INSPECT,
        &lock_script::scripts::RENEW,
    ]
}
