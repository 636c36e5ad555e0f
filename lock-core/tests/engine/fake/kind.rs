//! `FakeKind`: an exclusive, re-entrant lock kind with its store in Rust
//! (the `store` module) and scripted faults (the `script` module), bound
//! to a `FakeConnection` on which a release that frees a lock publishes
//! its notice. Every `impl ExclusiveKind` of the fake is in this file.
//!
//! Its [`KindBehaviour`] is `exclusive("fake")` unless built with another
//! ([`FakeKind::with_behaviour`]): a kind whose waiters queue names each
//! waiter its own channel (as the fair lock does), on which only the queue
//! head is told; one that hands over publishes `granted:<ticket>` there,
//! which [`ExclusiveKind::wake`] reads as `Wake::Granted`.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use lock_core::backend::{
    AcquireOutcome, AcquireRequest, Channel, Connection, ExclusiveKind, KindBehaviour,
    ReleaseOutcome, ReleaseRequest, RenewTarget, RequestId, Wake,
};
use lock_core::{LockInfo, LockName, Owner, Result};

use super::connection::FakeConnection;
use super::script::{Op, Script, Step};
use super::store::{Announce, Entry, Store};

/// What a freeing release publishes.
const UNLOCKED: &[u8] = b"unlocked";

/// What a grant publishes, before the ticket in decimal.
const GRANTED: &str = "granted:";

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
    behaviour: KindBehaviour,
    /// Every `leave_queue` call: the owner field and the ticket.
    leaves: Mutex<Vec<(String, Option<u64>)>>,
    /// When set, grant notices are not published (the store still grants):
    /// only a look finds the grant then.
    pub(crate) skip_grant_notices: std::sync::atomic::AtomicBool,
}

fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl FakeKind {
    /// A kind with an empty store, publishing on `connection`.
    pub(crate) fn new(connection: Arc<FakeConnection>) -> Arc<Self> {
        Self::with_behaviour(connection, KindBehaviour::exclusive("fake"))
    }

    /// A kind that behaves as `behaviour` says (its store queues waiters
    /// and hands over as the flags say).
    pub(crate) fn with_behaviour(
        connection: Arc<FakeConnection>,
        behaviour: KindBehaviour,
    ) -> Arc<Self> {
        let mut store = Store::default();
        store.queueing = behaviour.queues_waiters;
        store.hands_over = behaviour.hands_over;
        Arc::new(Self {
            connection,
            store: Mutex::new(store),
            script: Script::default(),
            acquire_ids: Mutex::default(),
            release_ids: Mutex::default(),
            behaviour,
            leaves: Mutex::default(),
            skip_grant_notices: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Every `leave_queue` call so far: owner field and ticket.
    pub(crate) fn leaves(&self) -> Vec<(String, Option<u64>)> {
        locked(&self.leaves).clone()
    }

    /// The owner fields queued for `name`, oldest first.
    pub(crate) fn queue(&self, name: &str) -> Vec<String> {
        self.store().queue(name)
    }

    /// The channel of the waiter `field` of `name` (kinds whose waiters
    /// queue).
    pub(crate) fn channel_of_waiter(name: &str, field: &str) -> Channel {
        Channel::new(format!("fake:{name}:{field}"))
    }

    /// Publishes what the store asked to (outside the store's lock: the
    /// connection delivers into the engine at once).
    fn publish_announcements(&self) {
        let announcements = self.store().take_announcements();
        let skip_grants = self
            .skip_grant_notices
            .load(std::sync::atomic::Ordering::SeqCst);
        for announce in announcements {
            match announce {
                Announce::Unlocked(name) => {
                    let channel = Channel::new(format!("fake:{name}"));
                    self.connection.publish(&channel, UNLOCKED);
                }
                Announce::Next { name, field } => {
                    self.connection
                        .publish(&Self::channel_of_waiter(&name, &field), UNLOCKED);
                }
                Announce::Granted { .. } if skip_grants => {}
                Announce::Granted {
                    name,
                    field,
                    ticket,
                } => {
                    let payload = format!("{GRANTED}{ticket}");
                    self.connection
                        .publish(&Self::channel_of_waiter(&name, &field), payload.as_bytes());
                }
            }
        }
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
                self.publish_announcements();
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
        self.publish_announcements();
        Ok(held)
    }

    async fn inspect(&self, name: &LockName) -> Result<LockInfo> {
        Ok(self.store().inspect(name))
    }

    async fn last_fencing_token(&self, name: &LockName) -> Result<Option<u64>> {
        Ok(self.store().last_token(name))
    }

    fn behaviour(&self) -> KindBehaviour {
        self.behaviour
    }

    fn channel(&self, name: &LockName, owner: &Owner) -> Channel {
        if self.behaviour.queues_waiters {
            Self::channel_of_waiter(name.as_str(), &owner.field())
        } else {
            Self::channel_of(name)
        }
    }

    fn wake(&self, payload: &[u8]) -> Option<Wake> {
        if payload == UNLOCKED {
            return Some(Wake::One);
        }
        let ticket = std::str::from_utf8(payload).ok()?.strip_prefix(GRANTED)?;
        ticket.parse().ok().map(Wake::Granted)
    }

    async fn leave_queue(
        &self,
        name: &LockName,
        owner: &Owner,
        wait_ticket: Option<u64>,
    ) -> Result<()> {
        locked(&self.leaves).push((owner.field(), wait_ticket));
        self.store().leave_queue(name, owner, wait_ticket);
        self.publish_announcements();
        Ok(())
    }
}
