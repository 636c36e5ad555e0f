//! # lock-core: the distributed lock engine
//!
//! Backend-agnostic: it knows nothing of Redis. A backend ([`LockBackend`])
//! runs the atomic primitives; this crate turns them into locks.
#![deny(missing_docs)]

pub mod backend;
pub mod config;
pub mod error;
pub mod layout;
pub mod name;
pub mod owner;

pub use backend::{
    AcquireOutcome, AcquireRequest, Holder, LockBackend, LockInfo, Notice, NoticeSink,
    ReleaseOutcome, ReleaseRequest, RenewTarget, RequestId, Topic, Wake,
};
pub use config::{lease_millis, ClientConfig, RetryPolicy, MAX_LEASE};
pub use error::{LockError, Result};
pub use layout::KeyLayout;
pub use name::{LockName, MAX_NAME_LEN};
pub use owner::Owner;
