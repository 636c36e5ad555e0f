//! `FakeKind`: an exclusive, re-entrant lock kind with its store in Rust
//! (the `store` module) and scripted faults (the `script` module), bound
//! to a `FakeConnection` on which a release that frees a lock publishes
//! its notice. Every `impl ExclusiveKind` of the fake is in this file.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use lock_core::backend::{
    AcquireOutcome, AcquireRequest, Channel, Connection, ExclusiveKind, KindBehaviour,
    ReleaseOutcome, ReleaseRequest, RenewTarget, RequestId, Wake,
};
use lock_core::{LockInfo, LockName, Owner, Result};

use super::connection::FakeConnection;
use super::script::{Op, Script, Step};
use super::store::{Entry, Store};

/// What a freeing release publishes.
const UNLOCKED: &[u8] = b"unlocked";

/// The fake kind. Share it as `Arc<FakeKind>`; hand the engine a clone
/// (`kind.clone() as Arc<dyn ExclusiveKind>`, see [`FakeKind::dyn_kind`]).
pub(crate) struct FakeKind {
    connection: Arc<FakeConnection>,
    store: Mutex<Store>,
    script: Script,
    /// The request id of every acquire call, in order.
    acquire_ids: Mutex<Vec<RequestId>>,
    /// The request id of every release call, in order.
    release_ids: Mutex<Vec<RequestId>>,
}

fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl FakeKind {
    /// A kind with an empty store, publishing on `connection`.
    pub(crate) fn new(connection: Arc<FakeConnection>) -> Arc<Self> {
        Arc::new(Self {
            connection,
            store: Mutex::default(),
            script: Script::default(),
            acquire_ids: Mutex::default(),
            release_ids: Mutex::default(),
        })
    }

    /// This kind as the engine takes it.
    pub(crate) fn dyn_kind(self: &Arc<Self>) -> Arc<dyn ExclusiveKind> {
        Arc::clone(self) as _
    }

    /// Queues `steps` for the next calls of `op`.
    pub(crate) fn script(&self, op: Op, steps: impl IntoIterator<Item = Step>) {
        self.script.push(op, steps);
    }

    /// Every call of `op` past the queued steps takes `step` (`None`:
    /// answer normally again).
    pub(crate) fn always(&self, op: Op, step: Option<Step>) {
        self.script.always(op, step);
    }

    /// How many calls of `op` the engine made.
    pub(crate) fn calls(&self, op: Op) -> usize {
        self.script.calls(op)
    }

    /// The request id of every acquire call, in order.
    pub(crate) fn acquire_ids(&self) -> Vec<RequestId> {
        locked(&self.acquire_ids).clone()
    }

    /// The request id of every release call, in order.
    pub(crate) fn release_ids(&self) -> Vec<RequestId> {
        locked(&self.release_ids).clone()
    }

    /// The store, to read or set up.
    pub(crate) fn store(&self) -> MutexGuard<'_, Store> {
        locked(&self.store)
    }

    /// The live entry of `name`.
    pub(crate) fn entry(&self, name: &str) -> Option<Entry> {
        self.store().entry(name)
    }

    /// Whether no lock is held.
    pub(crate) fn is_empty(&self) -> bool {
        self.store().is_empty()
    }

    /// The channel waiters of `name` listen on.
    pub(crate) fn channel_of(name: &LockName) -> Channel {
        Channel::new(format!("fake:{name}"))
    }

    /// Publishes the unlock notice of `name` (what a freeing release does).
    pub(crate) fn announce_unlock(&self, name: &LockName) -> bool {
        self.connection.publish(&Self::channel_of(name), UNLOCKED)
    }
}

#[async_trait]
impl ExclusiveKind for FakeKind {
    async fn try_acquire(&self, req: &AcquireRequest) -> Result<AcquireOutcome> {
        locked(&self.acquire_ids).push(req.request_id);
        let timeout = self.connection.command_timeout();
        self.script
            .run(Op::Acquire, timeout, || self.store().acquire(req))
            .await
    }

    async fn release(&self, req: &ReleaseRequest) -> Result<ReleaseOutcome> {
        locked(&self.release_ids).push(req.request_id);
        let timeout = self.connection.command_timeout();
        let outcome = self
            .script
            .run(Op::Release, timeout, || {
                let outcome = self.store().release(req);
                // Published as the store would, even when the reply is lost.
                if outcome == ReleaseOutcome::Released {
                    self.announce_unlock(&req.name);
                }
                outcome
            })
            .await?;
        Ok(outcome)
    }

    async fn renew(&self, targets: &[RenewTarget], lease_ms: u64) -> Result<Vec<Result<bool>>> {
        let timeout = self.connection.command_timeout();
        self.script
            .run(Op::Renew, timeout, || {
                let mut store = self.store();
                targets
                    .iter()
                    .map(|t| Ok(store.renew(&t.name, &t.owner, lease_ms)))
                    .collect()
            })
            .await
    }

    async fn force_unlock(&self, name: &LockName) -> Result<bool> {
        let held = self.store().force_unlock(name);
        if held {
            self.announce_unlock(name);
        }
        Ok(held)
    }

    async fn inspect(&self, name: &LockName) -> Result<LockInfo> {
        Ok(self.store().inspect(name))
    }

    async fn last_fencing_token(&self, name: &LockName) -> Result<Option<u64>> {
        Ok(self.store().last_token(name))
    }

    fn behaviour(&self) -> KindBehaviour {
        KindBehaviour::exclusive("fake")
    }

    fn channel(&self, name: &LockName, _owner: &Owner) -> Channel {
        Self::channel_of(name)
    }

    fn wake(&self, payload: &[u8]) -> Option<Wake> {
        (payload == UNLOCKED).then_some(Wake::One)
    }
}
