//! [`LockTarget`]: what a lock handle is made of (its client, name and
//! kind), kept apart from the handle so a lock's acquisition (the
//! `acquire` module) works on it without importing the handle that calls
//! it.

use std::sync::Arc;

use crate::backend::kind::ExclusiveKind;
use crate::engine::client::Engine;
use crate::engine::state::ClientInner;
use crate::name::LockName;

/// One named lock of one kind, on one client.
#[derive(Clone)]
pub(crate) struct LockTarget {
    pub(crate) client: Engine,
    pub(crate) name: LockName,
    pub(crate) kind: Arc<dyn ExclusiveKind>,
}

impl LockTarget {
    /// The client's shared state.
    pub(crate) fn inner(&self) -> &Arc<ClientInner> {
        &self.client.inner
    }

    /// The kind whose store operations the lock uses.
    pub(crate) fn kind(&self) -> &Arc<dyn ExclusiveKind> {
        &self.kind
    }

    /// The lock's name.
    pub(crate) fn name(&self) -> &LockName {
        &self.name
    }
}
