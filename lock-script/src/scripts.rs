//! The Lua that every kind's scripts share.
//!
//! `common.lua` holds the rules of a hold in a lock hash (fencing tokens,
//! leases that only grow, request records). Every script of every kind is
//! built by one composer, [`compose`]: the definitions of `common.lua` and
//! of the kind's own helper files (a semaphore's count, a fair lock's
//! queue) that the script reaches, then the script, so each rule is
//! written once. `renew.lua` extends the leases of many lock hashes at once: every
//! exclusive kind keeps its holds in the same hash, so the watchdog's batch
//! renewal is one script for all of them ([`crate::ScriptEnv::renew`]).

use std::sync::LazyLock;

use redis::Script;

mod prelude;

/// The helpers shared by the lock scripts that write holds (`common.lua`).
pub const COMMON_LUA: &str = include_str!("scripts/common.lua");

/// One script of a kind: `body` (a `.lua` file of the kind), after the
/// definitions it reaches, directly or through each other, among
/// [`COMMON_LUA`] and then the kind's own helper files `helpers` (each,
/// like `common.lua`, nothing but top-level `local` definitions after a
/// header comment). The one way every kind builds its scripts, so a helper
/// is written once and put in front of each script that calls it.
/// Definitions a script does not reach are left out: Redis would create
/// each function again on every run (see the `prelude` module); a script
/// that reaches none is its body alone.
pub fn compose(helpers: &[&str], body: &str) -> Script {
    Script::new(&compose_lua(helpers, body))
}

/// The text [`compose`] hashes and sends: for tests that run a kind's
/// script as Redis gets it on another engine.
pub fn compose_lua(helpers: &[&str], body: &str) -> String {
    let libraries: Vec<&str> = std::iter::once(COMMON_LUA)
        .chain(helpers.iter().copied())
        .collect();
    let mut lua = prelude::reached(&libraries, body);
    lua.push_str(body);
    lua
}

/// Extends the lease of many locks (`renew.lua`).
pub static RENEW: LazyLock<Script> =
    LazyLock::new(|| compose(&[], include_str!("scripts/renew.lua")));

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
