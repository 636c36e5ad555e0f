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

mod prelude;

/// The helpers shared by the lock scripts that write holds (`common.lua`).
pub const COMMON_LUA: &str = include_str!("scripts/common.lua");

/// One script: the definitions of [`COMMON_LUA`] that `parts` use
/// (directly or through each other), then `parts` in order (a kind's own
/// helpers, then the script's body). The one way every kind builds its
/// scripts, so a helper is written once and put in front of each script
/// that calls it. Definitions a script does not reach are left out: Redis
/// would create each function again on every run (see the `prelude`
/// module).
pub fn with_common(parts: &[&str]) -> Script {
    let body = parts.concat();
    let mut lua = prelude::reached(COMMON_LUA, &body);
    lua.push_str(&body);
    Script::new(&lua)
}

/// Extends the lease of many locks (`renew.lua`).
pub static RENEW: LazyLock<Script> =
    LazyLock::new(|| with_common(&[include_str!("scripts/renew.lua")]));

#[cfg(test)]
mod tests {
    use super::*;

    /// The engine reads a stale refusal later than half the record's grace
    /// as "its outcome is forgotten" (`lock_core::backend::outcome_forgotten`):
    /// it must know the grace the scripts keep records for.
    #[test]
    fn the_engine_knows_the_record_grace() {
        let line = format!(
            "local RECORD_GRACE_MS = {}\n",
            lock_core::backend::RECORD_GRACE_MS
        );
        assert!(COMMON_LUA.contains(&line), "common.lua lacks {line:?}");
    }
}
