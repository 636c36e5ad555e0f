//! The in-memory backend: a model of a Redis server running the lock
//! scripts, for unit tests with paused time.
//!
//! [`InMemoryServer`] is the store; each [`InMemoryBackend`] is one client's
//! connection to it. Many clients on one server contend exactly as clients
//! of one Redis do. The server can inject faults (down, latency, command
//! timeouts, failures, lost replies, lost notices) so error paths can be tested without one.
//!
//! Layers: `keyspace` holds what Redis holds (byte strings, hashes, lists,
//! sorted sets, lazy expiry on `tokio::time`); `commands` are the Redis
//! commands the lock scripts call, with Redis's replies and errors; `lua`
//! runs Lua scripts on them as Redis 7.0's `EVAL` does
//! ([`InMemoryServer::eval`], replies as [`ScriptReply`]). The backend
//! itself still runs the Rust twins of the scripts (`scripts`), until the
//! transport is switched to the kinds' own Lua.

mod backend;
mod commands;
mod harness;
mod keyspace;
mod lua;
mod reply;
mod scripts;
mod server;

pub use backend::{InMemoryBackend, InMemoryKind};
pub use reply::ScriptReply;
pub use server::InMemoryServer;
