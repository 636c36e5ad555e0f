//! [`Kinds`]: the lock kinds bound to one client's connection.

use std::sync::Arc;

use crate::fair_lock::FairKind;
use crate::kind::ExclusiveKind;
use crate::rw_lock::ReadWriteKinds;

/// The kinds of locks one [`crate::LockClient`] hands out, each bound to the
/// client's connection. A deployment's `connect` registers every kind it
/// has; a handle of a kind that was not registered is refused with
/// [`crate::LockError::InvalidArgument`].
///
/// ```
/// # use std::sync::Arc;
/// # use lock_core::{ExclusiveKind, FairKind, Kinds};
/// # fn demo(reentrant: Arc<dyn ExclusiveKind>, fair: Arc<dyn FairKind>) {
/// let kinds = Kinds::new().reentrant(reentrant).fair(fair);
/// assert!(kinds.fair_kind().is_some());
/// # }
/// ```
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct Kinds {
    reentrant: Option<Arc<dyn ExclusiveKind>>,
    fair: Option<Arc<dyn FairKind>>,
    read_write: Option<ReadWriteKinds>,
}

impl std::fmt::Debug for Kinds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kinds")
            .field("reentrant", &self.reentrant.is_some())
            .field("fair", &self.fair.is_some())
            .field("read_write", &self.read_write.is_some())
            .finish()
    }
}

impl Kinds {
    /// No kinds yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers the kind of [`crate::LockClient::lock`].
    #[must_use]
    pub fn reentrant(mut self, kind: Arc<dyn ExclusiveKind>) -> Self {
        self.reentrant = Some(kind);
        self
    }

    /// Registers the kind of [`crate::LockClient::fair_lock`].
    #[must_use]
    pub fn fair(mut self, kind: Arc<dyn FairKind>) -> Self {
        self.fair = Some(kind);
        self
    }

    /// Registers the kind of [`crate::LockClient::read_write_lock`].
    #[must_use]
    pub fn read_write(mut self, kinds: ReadWriteKinds) -> Self {
        self.read_write = Some(kinds);
        self
    }

    /// The read-write kind, when registered: both sides' store operations.
    pub fn read_write_kinds(&self) -> Option<&ReadWriteKinds> {
        self.read_write.as_ref()
    }

    /// The reentrant kind, when registered: its raw store operations.
    pub fn reentrant_kind(&self) -> Option<&Arc<dyn ExclusiveKind>> {
        self.reentrant.as_ref()
    }

    /// The fair kind, when registered: its raw store operations.
    pub fn fair_kind(&self) -> Option<&Arc<dyn FairKind>> {
        self.fair.as_ref()
    }
}
