//! The Lua that every kind's scripts share.
//!
//! `common.lua` holds the rules of a hold in a lock hash (fencing tokens,
//! leases that only grow, request records); a kind puts it in front of
//! each script that writes holds ([`with_common`]), so each rule is written
//! once. `renew.lua` extends the leases of many lock hashes at once: every
//! exclusive kind keeps its holds in the same hash, so the watchdog's batch
//! renewal is one script for all of them ([`crate::ScriptEnv::renew`]).

use std::sync::LazyLock;

use redis::Script;

/// The helpers shared by the lock scripts that write holds (`common.lua`).
pub const COMMON_LUA: &str = include_str!("scripts/common.lua");

/// `body` after [`COMMON_LUA`], as one script.
pub fn with_common(body: &str) -> Script {
    Script::new(&[COMMON_LUA, body].concat())
}

/// Extends the lease of many locks (`renew.lua`).
pub static RENEW: LazyLock<Script> =
    LazyLock::new(|| with_common(include_str!("scripts/renew.lua")));
