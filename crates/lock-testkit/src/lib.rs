//! # lock-testkit
//!
//! - [`InMemoryServer`]: an in-memory lock store with the observable
//!   semantics of the Redis scripts, for unit tests under paused time.
//! - [`conformance`]: the behaviour checks every backend must pass.
//! - [`ExclusionChecker`]: detects overlapping critical sections.
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
pub use memory::{InMemoryBackend, InMemoryServer};
pub use notices::NoticeRecorder;
