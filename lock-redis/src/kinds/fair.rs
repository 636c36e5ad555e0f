//! The fair lock's registry entries (its kind is the `lock-fair` crate,
//! which knows no registry): the fair lock and the fair lock with direct
//! hand-over.

use std::sync::Arc;

use lock_fair::Fair;

use super::registry::{KindEntry, Kinds};

/// The fair lock ([`crate::LockClient::fair_lock`]).
pub(super) const FAIR: KindEntry = KindEntry::new(
    "fair",
    "fair",
    |env| Arc::new(Fair::new(env.clone())),
    Fair::scripts,
);

/// The fair lock with direct hand-over ([`crate::LockClient::handoff_lock`]).
pub(super) const HANDOFF: KindEntry = KindEntry::new(
    "handoff",
    "handoff",
    |env| Arc::new(Fair::with_handoff(env.clone())),
    Fair::scripts,
);

impl Kinds {
    /// The fair lock.
    pub fn fair(&self) -> Arc<Fair> {
        self.bound(FAIR.name, Fair::new)
    }

    /// The fair lock with direct hand-over.
    pub fn handoff(&self) -> Arc<Fair> {
        self.bound(HANDOFF.name, Fair::with_handoff)
    }
}
