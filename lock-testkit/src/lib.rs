//! # lock-testkit
//!
//! - [`InMemoryServer`]: an in-memory Redis on which the lock kinds' own
//!   Lua scripts run (an embedded Lua 5.1), reached through
//!   [`MemoryTransport`] like any deployment, for unit tests under paused
//!   time.
//! - [`conformance`]: the behaviour checks every backend must pass.
//! - [`ExclusionChecker`]: detects overlapping critical sections.
//! - `fixtures` (feature `fixtures`): throw-away `redis-server` processes
//!   and clusters with kill/pause/restart levers, and `FaultProxy`, a
//!   fault-injecting TCP proxy in front of one of them that holds back a
//!   chosen command, swallows its reply, partitions and heals, or kills
//!   connections (see `fixtures::proxy`).
#![deny(missing_docs)]

pub mod checker;
pub mod conformance;
#[cfg(feature = "fixtures")]
pub mod fixtures;
pub mod memory;
#[cfg(feature = "model")]
pub mod model;
pub mod notices;

pub use checker::{ExclusionChecker, Section};
pub use memory::{InMemoryServer, MemoryTransport};
pub use notices::NoticeRecorder;
