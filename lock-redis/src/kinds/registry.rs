//! The registry of kinds: one entry per kind ([`KindEntry`]), which binds
//! the kind to a deployment, lists its scripts for preloading and says
//! which conformance row checks it. [`Kinds`] is what a client is made of:
//! every registered kind bound to its deployment.
//!
//! A new kind is its folder, with its entry and its typed accessor on
//! [`Kinds`] (`impl Kinds { pub fn my_kind(&self) -> Arc<MyKind> }`), one
//! line in [`REGISTRY`], its handle's constructor on
//! [`crate::LockClient`], its conformance row and its model. The
//! registry-completeness test (lock-redis/tests/registry.rs) fails when an
//! entry lacks a conformance row or a model.

use std::any::Any;
use std::sync::Arc;

use lock_script::ScriptEnv;
use redis::Script;

use super::{latch, lean, non_reentrant, permit_semaphore, reentrant, rwlock, semaphore};

/// A kind bound to a deployment, as the registry keeps it.
pub type BoundKind = Arc<dyn Any + Send + Sync>;

/// One registered kind.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct KindEntry {
    /// The kind's name: the `name` of its [`lock_core::backend::KindBehaviour`]
    /// for a lock kind (spans, metrics), the key of its accessor.
    pub name: &'static str,
    /// The row of lock-testkit's conformance table that checks the kind
    /// (a kind whose checks are another's names that row).
    pub conformance_row: &'static str,
    /// Binds the kind to a deployment's environment.
    pub bind: fn(&ScriptEnv) -> BoundKind,
    /// The kind's scripts, preloaded at connect.
    pub scripts: fn() -> Vec<&'static Script>,
}

impl KindEntry {
    /// An entry (see the fields).
    pub const fn new(
        name: &'static str,
        conformance_row: &'static str,
        bind: fn(&ScriptEnv) -> BoundKind,
        scripts: fn() -> Vec<&'static Script>,
    ) -> Self {
        Self {
            name,
            conformance_row,
            bind,
            scripts,
        }
    }
}

/// Every kind a client hands out.
pub const REGISTRY: &[KindEntry] = &[
    reentrant::ENTRY,
    non_reentrant::ENTRY,
    lean::ENTRY,
    super::fair::FAIR,
    super::fair::HANDOFF,
    rwlock::ENTRY,
    latch::ENTRY,
    semaphore::ENTRY,
    permit_semaphore::ENTRY,
];

/// Every registered kind's store operations, bound to one deployment's
/// transport, key layout and replica sync: what a [`crate::LockClient`]
/// hands out handles of. Each kind's typed accessor is in its folder
/// (`kinds.reentrant()`, `kinds.lean()`, …). For tools and tests that
/// drive a kind's store operations directly; a service uses the client's
/// handles.
#[derive(Clone)]
pub struct Kinds {
    env: ScriptEnv,
    bound: Vec<(&'static str, BoundKind)>,
    /// The kind-neutral reader of [`crate::LockClient::describe`].
    pub describer: Arc<crate::client::describe::Describer>,
}

impl std::fmt::Debug for Kinds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kinds")
            .field(
                "kinds",
                &self.bound.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            )
            .field("env", &self.env)
            .finish()
    }
}

impl Kinds {
    /// Every registered kind over `env`.
    pub fn new(env: &ScriptEnv) -> Self {
        Self {
            env: env.clone(),
            bound: REGISTRY
                .iter()
                .map(|entry| (entry.name, (entry.bind)(env)))
                .collect(),
            describer: Arc::new(crate::client::describe::Describer::new(env.clone())),
        }
    }

    /// The kind registered as `name`, when it is a `T`.
    pub fn get<T: Any + Send + Sync>(&self, name: &str) -> Option<Arc<T>> {
        self.bound
            .iter()
            .find(|(n, _)| *n == name)
            .and_then(|(_, kind)| Arc::clone(kind).downcast::<T>().ok())
    }

    /// The kind registered as `name` (a typed accessor's body). The
    /// registry binds every entry, so this finds it; were an entry and
    /// its accessor ever to disagree, `make` binds a kind for the call
    /// rather than failing: kinds keep no state of their own beyond their
    /// environment, so an extra one behaves the same.
    pub(crate) fn bound<T: Any + Send + Sync>(
        &self,
        name: &str,
        make: impl FnOnce(ScriptEnv) -> T,
    ) -> Arc<T> {
        self.get(name)
            .unwrap_or_else(|| Arc::new(make(self.env.clone())))
    }
}

/// Every script of every registered kind (and of describe and the client
/// records), once each, for preloading at connect.
pub fn scripts() -> Vec<&'static Script> {
    let mut all: Vec<&'static Script> = Vec::new();
    let every = REGISTRY
        .iter()
        .flat_map(|entry| (entry.scripts)())
        .chain(crate::client::describe::Describer::scripts())
        .chain(lock_script::clients::ClientRecords::scripts());
    for script in every {
        if !all.iter().any(|s| s.get_hash() == script.get_hash()) {
            all.push(script);
        }
    }
    all
}
