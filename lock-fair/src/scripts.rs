//! The Lua scripts of the fair lock.
//!
//! One script per operation that differs from the reentrant lock, in
//! `src/scripts/*.lua`; each file's header gives its KEYS, ARGV and replies.
//! The four writing scripts start with `prelude.lua` (the server clock and
//! the eviction of stale queue heads), joined in at compile time, so the
//! eviction is written once; acquire and release also start with the
//! helpers every kind shares ([`lock_script::scripts::COMMON_LUA`]:
//! fencing tokens, leases, request records), so all kinds follow the same rules.
//! Renewal is the shared script ([`lock_script::scripts::RENEW`]): the lock
//! hash is the reentrant lock's.
//!
//! Calls go through [`lock_script::Transport::eval`] like every other
//! script: `EVALSHA`, loading the script on `NOSCRIPT` and retrying once.

use std::sync::LazyLock;

use lock_script::redis::Script;
use lock_script::with_common;

macro_rules! with_prelude {
    ($file:literal) => {
        concat!(
            include_str!("scripts/prelude.lua"),
            include_str!(concat!("scripts/", $file))
        )
    };
}

/// Takes, re-enters, or queues for a fair lock (`acquire.lua`).
pub static ACQUIRE: LazyLock<Script> =
    LazyLock::new(|| with_common(&[with_prelude!("acquire.lua")]));
/// Gives back one hold and tells the queue head (`release.lua`).
pub static RELEASE: LazyLock<Script> =
    LazyLock::new(|| with_common(&[with_prelude!("release.lua")]));
/// Removes a waiter from the queue (`leave_queue.lua`).
pub static LEAVE_QUEUE: LazyLock<Script> =
    LazyLock::new(|| Script::new(with_prelude!("leave_queue.lua")));
/// Deletes a fair lock whoever holds it (`force_unlock.lua`).
pub static FORCE_UNLOCK: LazyLock<Script> =
    LazyLock::new(|| Script::new(with_prelude!("force_unlock.lua")));
/// Reads holders, time to live and queue (`inspect.lua`).
pub static INSPECT: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("scripts/inspect.lua")));

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
