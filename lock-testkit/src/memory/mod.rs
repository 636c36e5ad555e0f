//! The in-memory deployment: a model of a Redis server on which the lock
//! kinds' own Lua scripts run, for unit tests with paused time.
//!
//! [`InMemoryServer`] is the store; each [`MemoryTransport`] is one client's
//! connection to it, a [`lock_script::Transport`] like the single node and
//! the cluster, so clients get every kind through the same registration as
//! on Redis (`lock_redis::LockClient::new`) and the in-memory tests exercise
//! the real scripts: a kind has no Rust twin. Many clients on one server
//! contend exactly as clients of one Redis do. The server can inject faults
//! (down, latency, command timeouts, failures, lost replies, requests that
//! arrive late, lost notices, a flushed script cache) so error paths can be
//! tested without one.
//!
//! Layers: `keyspace` holds what Redis holds (byte strings, hashes, lists,
//! sorted sets, lazy expiry on `tokio::time`); `commands` are the Redis
//! commands the lock scripts call, with Redis's replies and errors; `lua`
//! runs Lua scripts on them as Redis 7.0's `EVAL` does
//! ([`InMemoryServer::eval`], replies as [`ScriptReply`]); `scripts` is the
//! store's script cache (`EVALSHA`, `NOSCRIPT`); `transport` is the
//! connection. The property tests (`lock_testkit::model`, feature `model`)
//! check this store against real Redis for every kind.

mod commands;
mod harness;
mod keyspace;
mod lua;
mod reply;
mod scripts;
mod server;
mod source;
mod transport;

pub use reply::ScriptReply;
pub use server::InMemoryServer;
pub use transport::MemoryTransport;
