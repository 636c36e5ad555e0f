//! An embedded Lua 5.1 that runs scripts on the in-memory keyspace the way
//! Redis 7.0 runs `EVAL`, so the in-memory store can execute the kinds' own
//! Lua scripts instead of Rust re-implementations of them.
//!
//! - `redis.call` runs a command (`super::commands`) and raises its error
//!   reply as a Lua error (the script stops; its earlier writes stay, as in
//!   Redis); `redis.pcall` returns the error as `{err=...}`;
//!   `redis.error_reply`, `redis.status_reply`, `redis.sha1hex` as in Redis.
//! - Replies cross between Lua and Redis by Redis's conversion rules
//!   (`convert.rs`).
//! - Scripts run in a sandbox like Redis's (`sandbox.lua`): read-only
//!   globals, no access to the host (no os, io, require, loadfile, dofile).
//! - Compiled scripts are cached by the SHA1 of their source.
//! - Syntax and runtime errors are error replies worded as Redis words them
//!   (`... script: <sha1>, on @user_script:<line>.`), never panics.
//! - `TIME` is the store's clock and expiry follows `tokio::time`, so
//!   paused time drives both; published messages are collected in the
//!   command context for the caller to deliver after it releases the
//!   store's lock.
//!
//! Not modelled: RESP3 (`redis.setresp(3)` is refused), the cjson, cmsgpack,
//! struct and bit libraries, script timeouts (a script that loops forever
//! hangs, as it would make Redis busy).

mod convert;
mod engine;
mod library;

pub(crate) use engine::{sha1_hex, ScriptEngine};

#[cfg(test)]
mod tests;
