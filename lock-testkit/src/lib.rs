//! # lock-testkit: testing code that takes locks
//!
//! Unit tests of a service that uses `lock-redis` need no Redis:
//! [`InMemoryServer`] runs the lock kinds' own Lua scripts, so what passes
//! here is what Redis does, and under tokio's paused time leases, renewals
//! and waits cost no real time (add tokio's `test-util` feature to your
//! dev-dependencies):
//!
//! ```rust,test_harness
//! use std::time::Duration;
//! use lock_testkit::InMemoryServer;
//!
//! #[tokio::test(start_paused = true)] // leases, renewals and waits run in virtual time
//! async fn only_one_worker_runs_the_report() -> lock_redis::Result<()> {
//!     let server = InMemoryServer::new(); // the kinds' own Lua scripts, no Redis
//!     let (a, b) = (server.client()?, server.client()?);
//!     let guard = a.lock("reports:daily")?.lock().await?;
//!     let other = b.lock("reports:daily")?.try_lock_for(Duration::from_secs(5)).await?;
//!     assert!(other.is_none()); // five virtual seconds, no real wait
//!     guard.unlock().await?;
//!     assert!(b.lock("reports:daily")?.try_lock().await?.is_some());
//!     Ok(())
//! }
//! ```
//!
//! Faults are levers on the server: [`InMemoryServer::set_down`],
//! [`InMemoryServer::fail_next`], [`InMemoryServer::lose_next_replies`],
//! [`InMemoryServer::delay_next`], [`InMemoryServer::set_latency`],
//! [`InMemoryServer::step_clock`] and more. What else is here:
//!
//! - [`InMemoryServer`]: an in-memory Redis on which the lock kinds' own
//!   Lua scripts run (an embedded Lua 5.1), reached through
//!   [`MemoryTransport`] like any deployment, for unit tests under paused
//!   time.
//! - [`conformance`]: the behaviour checks every backend must pass.
//! - [`ExclusionChecker`]: detects overlapping critical sections.
//! - `logs` (feature `logs`): `logs::capture_warnings()`, the warnings
//!   the library logs, for tests of what it says.
//! - [`eventually`]: waits, within a bound, for what settles in the
//!   background (the one poll loop of the tests).
//! - `fixtures` (feature `fixtures`): throw-away `redis-server` processes
//!   and clusters with kill/pause/restart levers, and `FaultProxy`, a
//!   fault-injecting TCP proxy in front of one of them that holds back a
//!   chosen command, swallows its reply, partitions and heals, or kills
//!   connections (see `fixtures::proxy`).
#![deny(missing_docs)]

pub mod checker;
pub mod conformance;
mod eventually;
#[cfg(feature = "fixtures")]
pub mod fixtures;
#[cfg(feature = "logs")]
pub mod logs;
pub mod memory;
#[cfg(feature = "model")]
pub mod model;
pub mod notices;

pub use checker::{ExclusionChecker, Section};
pub use eventually::eventually;
pub use memory::{InMemoryServer, MemoryTransport};
pub use notices::NoticeRecorder;
