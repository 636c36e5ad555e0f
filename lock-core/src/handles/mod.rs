//! What a service holds: lock handles and the guards of held locks
//! ([`crate::Lock`], [`crate::FencedLock`], [`crate::MultiLock`],
//! [`crate::RedLock`] and their guards), and a lock's acquisition, which
//! turns the engine's wait loop into a guard. Handles use the engine;
//! nothing in the engine uses a handle.

pub(crate) mod acquire;
pub(crate) mod fenced_lock;
pub(crate) mod guard;
pub(crate) mod lock;
pub(crate) mod multi_lock;
pub(crate) mod red_lock;
pub(crate) mod shorthands;
pub(crate) mod target;
