//! The in-memory backend: a model of a Redis server running the lock
//! scripts, for unit tests with paused time.
//!
//! [`InMemoryServer`] is the store; each [`InMemoryBackend`] is one client's
//! connection to it. Many clients on one server contend exactly as clients
//! of one Redis do. The server can inject faults (down, latency, command
//! timeouts, failures, lost replies, lost notices) so error paths can be
//! tested without one.

mod backend;
mod harness;
mod keyspace;
mod scripts;
mod server;

pub use backend::{InMemoryBackend, InMemoryKind};
pub use server::InMemoryServer;
