//! The model of the kinds that hand out `Lock`s ([`Kind`]: reentrant,
//! fair): acquire / release / leave the queue / renew / force unlock /
//! inspect / repeat a request, by several clients and owners on two locks.
//! Its answers ([`Seen`]) and helpers serve the read-write lock's model
//! too, whose sides are such kinds.

use std::sync::Arc;

use async_trait::async_trait;
use lock_core::backend::{
    AcquireOutcome, AcquireRequest, ExclusiveKind, ReleaseOutcome, ReleaseRequest, RenewTarget,
};
use lock_redis::{LockClient, LockName};
use proptest::prelude::*;

use super::{name, owner, request_deadline, Ids, Kind, Model, CLIENTS, DURATIONS_MS};

/// One operation on a lock.
#[derive(Debug, Clone)]
pub enum Op {
    /// An acquisition attempt; `queue` picks a waiter timeout (fair locks
    /// queue with it) or none.
    Acquire {
        /// Which client sends it.
        client: usize,
        /// Which owner of that client.
        owner: u64,
        /// Which lock.
        lock: usize,
        /// Index of the lease.
        lease: usize,
        /// Whether to ask for a fencing token.
        fenced: bool,
        /// Index of the waiter timeout to queue with, if any.
        queue: Option<usize>,
    },
    /// A release of one hold.
    Release {
        /// Which client sends it.
        client: usize,
        /// Which owner of that client.
        owner: u64,
        /// Which lock.
        lock: usize,
    },
    /// A waiter gives up its place in the queue.
    Leave {
        /// Which client sends it.
        client: usize,
        /// Which owner of that client.
        owner: u64,
        /// Which lock.
        lock: usize,
    },
    /// A watchdog renewal of one owner's hold, or of both owners of the
    /// client in one batch.
    Renew {
        /// Which client sends it.
        client: usize,
        /// Which owner of that client.
        owner: u64,
        /// Whether the client's other owner is renewed in the same batch.
        both: bool,
        /// Which lock.
        lock: usize,
        /// Index of the lease.
        lease: usize,
    },
    /// Force unlock.
    ForceUnlock {
        /// Which lock.
        lock: usize,
    },
    /// Inspect.
    Inspect {
        /// Which lock.
        lock: usize,
    },
    /// The last acquire or release sent again with the same request id (a
    /// retry, or a late duplicate): its request record must answer alike in both
    /// worlds, whatever happened in between.
    Repeat,
}

/// Random operations on two locks.
fn op() -> impl Strategy<Value = Op> {
    // Two owners per client: a release or renewal often finds a holder.
    let who = (0..CLIENTS, 0..2u64, 0..2usize);
    prop_oneof![
        4 => (who.clone(), 0..3usize, any::<bool>(), proptest::option::of(0..3usize)).prop_map(
            |((client, owner, lock), lease, fenced, queue)| Op::Acquire {
                client, owner, lock, lease, fenced, queue
            }
        ),
        3 => who.clone().prop_map(|(client, owner, lock)| Op::Release { client, owner, lock }),
        1 => who.clone().prop_map(|(client, owner, lock)| Op::Leave { client, owner, lock }),
        1 => (who, any::<bool>(), 0..3usize).prop_map(|((client, owner, lock), both, lease)| {
            Op::Renew { client, owner, both, lock, lease }
        }),
        1 => (0..2usize).prop_map(|lock| Op::ForceUnlock { lock }),
        2 => (0..2usize).prop_map(|lock| Op::Inspect { lock }),
        1 => Just(Op::Repeat),
    ]
}

/// What one operation on a lock (or one side of a read-write lock) showed.
/// Times are compared by presence only: their values differ by the real
/// time the real run takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    /// Acquired, with its token.
    Acquired(Option<u64>),
    /// Held by someone else.
    Held {
        /// Whether a wait hint came back.
        has_ttl: bool,
    },
    /// A release's outcome.
    Release(ReleaseOutcome),
    /// Left the queue.
    Left,
    /// A renewal: whether the owner still held the lock.
    Renewed(Vec<Result<bool, String>>),
    /// Whether a force unlock found the lock.
    Forced(bool),
    /// An inspection.
    Info {
        /// (field, count), sorted.
        holders: Vec<(String, u64)>,
        /// Whether the lock has a TTL.
        has_ttl: bool,
        /// The queue's fields, in order.
        queue: Vec<String>,
    },
    /// The operation failed (e.g. a reader asking for the write side).
    Failed(String),
    /// A repeat with no request sent before it.
    NothingToRepeat,
}

/// The last request a run sent, for a repeat: which kind (index into the
/// model's kinds) and client sent it.
#[derive(Debug, Clone)]
pub(crate) enum Sent {
    Acquire(usize, usize, AcquireRequest),
    Release(usize, usize, ReleaseRequest),
}

/// One client's kind under test: its raw store operations.
pub(crate) enum Handle {
    Plain(Arc<dyn ExclusiveKind>),
    Fair(Arc<lock_redis::kinds::Fair>),
}

impl Handle {
    fn of(client: &LockClient, kind: Kind) -> Self {
        let kinds = client.kinds();
        match kind {
            Kind::Reentrant => Self::Plain(kinds.reentrant()),
            Kind::Fair => Self::Fair(kinds.fair()),
            Kind::Handoff => Self::Fair(kinds.handoff()),
        }
    }

    pub(crate) fn ops(&self) -> &dyn ExclusiveKind {
        match self {
            Self::Plain(k) => k.as_ref(),
            Self::Fair(k) => k.as_ref(),
        }
    }

    pub(crate) async fn info(&self, name: &LockName) -> Seen {
        let (lock, queue) = match self {
            Self::Plain(k) => match k.inspect(name).await {
                Ok(lock) => (lock, Vec::new()),
                Err(e) => return Seen::Failed(e.to_string()),
            },
            Self::Fair(k) => match k.inspect_fair(name).await {
                Ok(info) => (info.lock, info.queue),
                Err(e) => return Seen::Failed(e.to_string()),
            },
        };
        let mut holders: Vec<_> = lock
            .holders
            .into_iter()
            .map(|h| (h.field, h.count))
            .collect();
        holders.sort();
        Seen::Info {
            holders,
            has_ttl: lock.ttl.is_some(),
            queue: queue.into_iter().map(|w| w.field).collect(),
        }
    }
}

pub(crate) async fn acquire_seen(kind: &dyn ExclusiveKind, req: &AcquireRequest) -> Seen {
    match kind.try_acquire(req).await {
        Ok(AcquireOutcome::Acquired { fencing_token }) => Seen::Acquired(fencing_token),
        Ok(AcquireOutcome::Held { ttl }) => Seen::Held {
            has_ttl: ttl.is_some(),
        },
        Ok(other) => panic!("an outcome the model does not know: {other:?}"),
        Err(e) => Seen::Failed(e.to_string()),
    }
}

pub(crate) async fn release_seen(kind: &dyn ExclusiveKind, req: &ReleaseRequest) -> Seen {
    match kind.release(req).await {
        Ok(outcome) => Seen::Release(outcome),
        Err(e) => Seen::Failed(e.to_string()),
    }
}

/// Owner `id` of `client`, and its other owner too when `both`, on `name`.
pub(crate) fn renew_targets(
    name: &LockName,
    client: usize,
    id: u64,
    both: bool,
) -> Vec<RenewTarget> {
    let ids = if both { vec![id, 1 - id] } else { vec![id] };
    ids.into_iter()
        .map(|id| RenewTarget {
            name: name.clone(),
            owner: owner(client, id),
        })
        .collect()
}

pub(crate) async fn renew_seen(
    kind: &dyn ExclusiveKind,
    targets: &[RenewTarget],
    lease: u64,
) -> Seen {
    match kind.renew(targets, lease).await {
        Ok(each) => Seen::Renewed(
            each.into_iter()
                .map(|r| r.map_err(|e| e.to_string()))
                .collect(),
        ),
        Err(e) => Seen::Failed(e.to_string()),
    }
}

pub(crate) async fn force_seen(kind: &dyn ExclusiveKind, name: &LockName) -> Seen {
    match kind.force_unlock(name).await {
        Ok(found) => Seen::Forced(found),
        Err(e) => Seen::Failed(e.to_string()),
    }
}

/// Sends `last` again: the same request id, so the same request record.
pub(crate) async fn repeat_seen(kinds: &[Vec<&dyn ExclusiveKind>], last: Option<&Sent>) -> Seen {
    match last {
        Some(Sent::Acquire(kind, client, req)) => acquire_seen(kinds[*kind][*client], req).await,
        Some(Sent::Release(kind, client, req)) => release_seen(kinds[*kind][*client], req).await,
        None => Seen::NothingToRepeat,
    }
}

/// A run of a lock kind: every client's handle, and the last request sent.
pub struct Locks {
    handles: Vec<Handle>,
    last: Option<Sent>,
}

fn lock_name(lock: usize) -> LockName {
    name("model", lock)
}

#[async_trait(?Send)]
impl Model for Kind {
    type Op = Op;
    type Seen = Seen;
    type State = Locks;

    fn op(self) -> BoxedStrategy<Op> {
        op().boxed()
    }

    fn keys(self) -> &'static [&'static str] {
        &[
            "model-0",
            "model-1",
            "redisson_lock_token:{model-0}",
            "redisson_lock_queue:{model-1}",
            "redisson_lock_timeout:{model-1}",
        ]
    }

    fn start(self, clients: &[LockClient]) -> Locks {
        Locks {
            handles: clients.iter().map(|c| Handle::of(c, self)).collect(),
            last: None,
        }
    }

    async fn apply(self, state: &mut Locks, op: &Op, ids: &mut Ids) -> Seen {
        let backends: Vec<&dyn ExclusiveKind> = state.handles.iter().map(Handle::ops).collect();
        match *op {
            Op::Acquire {
                client,
                owner: id,
                lock,
                lease,
                fenced,
                queue,
            } => {
                let req = AcquireRequest::new(
                    lock_name(lock),
                    owner(client, id),
                    DURATIONS_MS[lease],
                    fenced,
                    request_deadline(2),
                )
                .queue(queue.map(|q| DURATIONS_MS[q]));
                ids.note(&req.request_id);
                let s = acquire_seen(backends[client], &req).await;
                state.last = Some(Sent::Acquire(0, client, req));
                s
            }
            Op::Release {
                client,
                owner: id,
                lock,
            } => {
                let req = ReleaseRequest::new(
                    lock_name(lock),
                    owner(client, id),
                    DURATIONS_MS[2],
                    request_deadline(2),
                );
                ids.note(&req.request_id);
                let s = release_seen(backends[client], &req).await;
                state.last = Some(Sent::Release(0, client, req));
                s
            }
            Op::Leave {
                client,
                owner: id,
                lock,
            } => match backends[client]
                .leave_queue(&lock_name(lock), &owner(client, id), None)
                .await
            {
                Ok(()) => Seen::Left,
                Err(e) => Seen::Failed(e.to_string()),
            },
            Op::Renew {
                client,
                owner: id,
                both,
                lock,
                lease,
            } => {
                let targets = renew_targets(&lock_name(lock), client, id, both);
                renew_seen(backends[client], &targets, DURATIONS_MS[lease]).await
            }
            Op::ForceUnlock { lock } => force_seen(backends[0], &lock_name(lock)).await,
            Op::Inspect { lock } => state.handles[1].info(&lock_name(lock)).await,
            Op::Repeat => repeat_seen(&[backends], state.last.as_ref()).await,
        }
    }
}
