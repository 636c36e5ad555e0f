//! [`Kinds`]: the lock kinds bound to one client's connection.

use std::sync::Arc;

use crate::describe::Describe;
use crate::fair_lock::FairKind;
use crate::kind::ExclusiveKind;
use crate::latch_kind::LatchKind;
use crate::rw_lock::ReadWriteKinds;
use crate::semaphore_kind::{PermitSemaphoreKind, SemaphoreKind};

/// The kinds of locks one [`crate::LockClient`] hands out, each bound to the
/// client's connection. A deployment's `connect` registers every kind it
/// has; a handle of a kind that was not registered is refused with
/// [`crate::LockError::InvalidArgument`].
///
/// ```
/// # use std::sync::Arc;
/// # use lock_core::backend::{ExclusiveKind, FairKind, Kinds};
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
    handoff: Option<Arc<dyn FairKind>>,
    latch: Option<Arc<dyn LatchKind>>,
    describe: Option<Arc<dyn Describe>>,
    semaphore: Option<Arc<dyn SemaphoreKind>>,
    permit_semaphore: Option<Arc<dyn PermitSemaphoreKind>>,
    read_write: Option<ReadWriteKinds>,
    /// Further exclusive kinds, by name: kinds whose handle is a plain
    /// [`crate::Lock`] need no field of their own.
    exclusive: Vec<(&'static str, Arc<dyn ExclusiveKind>)>,
}

impl std::fmt::Debug for Kinds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kinds")
            .field("reentrant", &self.reentrant.is_some())
            .field("fair", &self.fair.is_some())
            .field("handoff", &self.handoff.is_some())
            .field("latch", &self.latch.is_some())
            .field("describe", &self.describe.is_some())
            .field("semaphore", &self.semaphore.is_some())
            .field("permit_semaphore", &self.permit_semaphore.is_some())
            .field("read_write", &self.read_write.is_some())
            .field(
                "exclusive",
                &self
                    .exclusive
                    .iter()
                    .map(|(name, _)| name)
                    .collect::<Vec<_>>(),
            )
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

    /// Registers an exclusive kind under `name`, replacing one of that
    /// name: its locks are plain [`crate::Lock`]s
    /// ([`crate::LockClient::non_reentrant_lock`] is the kind
    /// `"non_reentrant"`).
    #[must_use]
    pub fn exclusive(mut self, name: &'static str, kind: Arc<dyn ExclusiveKind>) -> Self {
        self.exclusive.retain(|(n, _)| *n != name);
        self.exclusive.push((name, kind));
        self
    }

    /// The exclusive kind registered under `name`, if any.
    pub fn exclusive_kind(&self, name: &str) -> Option<&Arc<dyn ExclusiveKind>> {
        self.exclusive
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, kind)| kind)
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

    /// Registers the kind of [`crate::LockClient::handoff_lock`]: a fair
    /// kind whose release hands the lock to the queue head
    /// ([`crate::backend::ExclusiveKind::hands_over`]).
    #[must_use]
    pub fn handoff(mut self, kind: Arc<dyn FairKind>) -> Self {
        self.handoff = Some(kind);
        self
    }

    /// The direct-handoff kind, when registered: its raw store operations.
    pub fn handoff_kind(&self) -> Option<&Arc<dyn FairKind>> {
        self.handoff.as_ref()
    }

    /// Registers the kind of [`crate::LockClient::count_down_latch`].
    #[must_use]
    pub fn latch(mut self, kind: Arc<dyn LatchKind>) -> Self {
        self.latch = Some(kind);
        self
    }

    /// The latch kind, when registered: its raw store operations.
    pub fn latch_kind(&self) -> Option<&Arc<dyn LatchKind>> {
        self.latch.as_ref()
    }

    /// Registers the reader behind [`crate::LockClient::describe`].
    #[must_use]
    pub fn describe(mut self, describe: Arc<dyn Describe>) -> Self {
        self.describe = Some(describe);
        self
    }

    /// The reader behind [`crate::LockClient::describe`], when registered.
    pub fn describer(&self) -> Option<&Arc<dyn Describe>> {
        self.describe.as_ref()
    }

    /// Registers the kind of [`crate::LockClient::semaphore`].
    #[must_use]
    pub fn semaphore(mut self, kind: Arc<dyn SemaphoreKind>) -> Self {
        self.semaphore = Some(kind);
        self
    }

    /// The semaphore kind, when registered: its raw store operations.
    pub fn semaphore_kind(&self) -> Option<&Arc<dyn SemaphoreKind>> {
        self.semaphore.as_ref()
    }

    /// Registers the kind of [`crate::LockClient::permit_expirable_semaphore`].
    #[must_use]
    pub fn permit_semaphore(mut self, kind: Arc<dyn PermitSemaphoreKind>) -> Self {
        self.permit_semaphore = Some(kind);
        self
    }

    /// The expirable-permit semaphore kind, when registered.
    pub fn permit_semaphore_kind(&self) -> Option<&Arc<dyn PermitSemaphoreKind>> {
        self.permit_semaphore.as_ref()
    }
}
