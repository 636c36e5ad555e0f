//! The model of the kinds that hand out `Lock`s ([`Kind`]: reentrant,
//! non-reentrant, lean, fair, handoff), by several clients and owners on
//! two locks (the handoff on one). Its sequences follow waits as the
//! engine makes them: a wait's first attempt, the next attempts of a wait
//! still waiting, the unlock of a wait that took the lock, a waiting wait
//! giving up its place; beside them releases by any owner, renewals (one
//! owner or two in a batch), force unlocks, inspections and repeated
//! requests. Requests carry what the engine sets on them: an owner made
//! for one wait or not (the lean lock's unrecorded path), and, on a kind
//! that hands over, a queueing unfenced wait's ticket, so a release grants
//! the lock to a queued wait, whose next attempt claims it or whose
//! leaving gives it back. Its answers ([`Seen`]) and helpers serve the
//! read-write lock's model too, whose sides are such kinds.

use std::sync::Arc;

use async_trait::async_trait;
use lock_core::backend::{
    AcquireOutcome, AcquireRequest, ExclusiveKind, ReleaseOutcome, ReleaseRequest, RenewTarget,
};
use lock_redis::{LockClient, LockName};
use proptest::prelude::*;

use super::{name, owner, request_deadline, Ids, Model, CLIENTS, DURATIONS_MS};

/// The kinds that hand out `Lock`s, each modelled on its raw store
/// operations ([`ExclusiveKind`]). The model's own list: the conformance
/// suite's [`crate::conformance::Kind`] names the kinds its shared checks
/// take a handle of, which is another question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Kind {
    /// Redisson's reentrant lock ([`LockClient::lock`]).
    Reentrant,
    /// The non-reentrant lock ([`LockClient::non_reentrant_lock`]): the
    /// reentrant layout, a second hold refused.
    NonReentrant,
    /// The lean lock ([`LockClient::lean_lock`]): one string key.
    Lean,
    /// The fair lock ([`LockClient::fair_lock`]).
    Fair,
    /// The fair lock with direct handoff ([`LockClient::handoff_lock`]).
    Handoff,
}

impl Kind {
    /// Every kind of the model. The property test (lock-redis's
    /// `tests/model.rs`) runs each of them: a kind added here is compared
    /// between the in-memory store and Redis without further code.
    pub const ALL: &'static [Kind] = &[
        Kind::Reentrant,
        Kind::NonReentrant,
        Kind::Lean,
        Kind::Fair,
        Kind::Handoff,
    ];
}

/// One operation on a lock.
#[derive(Debug, Clone)]
pub enum Op {
    /// The first attempt of a new wait; `queue` picks a waiter timeout
    /// (fair locks queue with it) or none. On a kind that hands over, a
    /// queueing unfenced wait gets a new ticket, as the engine gives one
    /// (lock-core's `wait.rs`), counted from the start of the run.
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
        /// Whether the owner was made for this wait alone
        /// ([`AcquireRequest::private_owner`]).
        private: bool,
    },
    /// The next attempt of a wait still waiting (its last attempt found
    /// the lock held): a new request id, the wait's ticket. What the
    /// engine sends after a notice or a timer, and how a wait that missed
    /// its grant's notice claims the lock.
    Again {
        /// Which of the waits still waiting (modulo their number).
        wait: usize,
    },
    /// The guard of a wait that took the lock releases its hold.
    Unlock {
        /// Which of the waits that took the lock (modulo their number).
        wait: usize,
    },
    /// A release of one hold by any owner (one that holds the lock or
    /// not).
    Release {
        /// Which client sends it.
        client: usize,
        /// Which owner of that client.
        owner: u64,
        /// Which lock.
        lock: usize,
        /// Whether the owner was made for one wait alone
        /// ([`ReleaseRequest::private_owner`]).
        private: bool,
    },
    /// A wait still waiting gives up its place in the queue (and, with
    /// its ticket, a lock granted to it that it has not seen).
    Leave {
        /// Which of the waits still waiting (modulo their number).
        wait: usize,
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

/// Random operations on two locks, or on the direct handoff's one.
fn op(kind: Kind) -> impl Strategy<Value = Op> {
    // A grant and its claim take a wait queued behind a holder, that
    // holder's release of its last hold, then the wait's next attempt: on
    // one lock, with fewer fenced waits (never granted), the handoff's
    // sequences get there now and then ([`handoff_steps`] surely).
    let (locks, fenced) = match kind {
        Kind::Handoff => (1..2usize, 0.25),
        _ => (0..2usize, 0.5),
    };
    // Two owners per client: a release or renewal often finds a holder.
    let who = (0..CLIENTS, 0..2u64, locks.clone());
    // Whether fenced, the waiter timeout if it queues, whether its owner
    // is the wait's own.
    let how = (
        proptest::bool::weighted(fenced),
        proptest::option::of(0..3usize),
        any::<bool>(),
    );
    let wait = 0..4usize;
    prop_oneof![
        6 => (who.clone(), 0..3usize, how).prop_map(
            |((client, owner, lock), lease, (fenced, queue, private))| Op::Acquire {
                client, owner, lock, lease, fenced, queue, private
            }
        ),
        4 => wait.clone().prop_map(|wait| Op::Again { wait }),
        3 => wait.clone().prop_map(|wait| Op::Unlock { wait }),
        1 => (who.clone(), any::<bool>()).prop_map(|((client, owner, lock), private)| {
            Op::Release { client, owner, lock, private }
        }),
        1 => wait.prop_map(|wait| Op::Leave { wait }),
        1 => (who, any::<bool>(), 0..3usize).prop_map(|((client, owner, lock), both, lease)| {
            Op::Renew { client, owner, both, lock, lease }
        }),
        1 => locks.clone().prop_map(|lock| Op::ForceUnlock { lock }),
        1 => locks.prop_map(|lock| Op::Inspect { lock }),
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
    /// The lock a release granted to this wait's ticket, claimed.
    Claimed,
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
    pub(crate) fn of(client: &LockClient, kind: Kind) -> Self {
        let kinds = client.kinds();
        match kind {
            Kind::Reentrant => Self::Plain(kinds.reentrant()),
            Kind::NonReentrant => Self::Plain(kinds.non_reentrant()),
            Kind::Lean => Self::Plain(kinds.lean()),
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
        Ok(AcquireOutcome::Claimed) => Seen::Claimed,
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

/// A run of a lock kind: every client's handle, the last request sent,
/// and the waits made so far.
pub struct Locks {
    handles: Vec<Handle>,
    last: Option<Sent>,
    /// The waits still waiting and those that took the lock, in the
    /// order they began.
    waits: Vec<Wait>,
    /// The last ticket given to a wait: counted from the start of a run,
    /// so both worlds write the same ones.
    tickets: u64,
}

/// One wait (one `lock()` call) of the model: its client and first
/// attempt, of which its later attempts are copies with new request ids.
struct Wait {
    client: usize,
    first: AcquireRequest,
    /// Whether an attempt took the lock (its guard holds it).
    won: bool,
}

impl Locks {
    /// The index in `waits` of the `n`-th (modulo their number) of the
    /// waits that took the lock (`won`) or that still wait.
    fn pick(&self, won: bool, n: usize) -> Option<usize> {
        let at: Vec<usize> = (0..self.waits.len())
            .filter(|&i| self.waits[i].won == won)
            .collect();
        (!at.is_empty()).then(|| at[n % at.len()])
    }

    /// Sends an attempt of `wait` (a new request id, noted in `ids`), for
    /// a repeat too; a wait that took the lock holds it, one that failed
    /// is over.
    async fn attempt(&mut self, mut wait: Wait, ids: &mut Ids) -> Seen {
        let first = &wait.first;
        let req = AcquireRequest::new(
            first.name.clone(),
            first.owner,
            first.lease_ms,
            first.fenced,
            request_deadline(2),
        )
        .queue(first.queue_ms)
        .ticket(first.wait_ticket)
        .private_owner(first.private_owner);
        ids.note(&req.request_id);
        let seen = acquire_seen(self.handles[wait.client].ops(), &req).await;
        self.last = Some(Sent::Acquire(0, wait.client, req));
        match seen {
            Seen::Acquired(_) | Seen::Claimed => wait.won = true,
            Seen::Held { .. } => {}
            _ => return seen,
        }
        self.waits.push(wait);
        seen
    }

    /// Sends `req` as `client`'s (noted in `ids`), for a repeat too.
    async fn release(&mut self, client: usize, req: ReleaseRequest, ids: &mut Ids) -> Seen {
        ids.note(&req.request_id);
        let seen = release_seen(self.handles[client].ops(), &req).await;
        self.last = Some(Sent::Release(0, client, req));
        seen
    }
}

fn lock_name(lock: usize) -> LockName {
    name("model", lock)
}

/// Whether the engine gives a wait a ticket: a queueing, unfenced wait of
/// a kind that hands over (lock-core's `wait.rs`), so the model sends only
/// requests a client can.
fn wait_ticket(kind: &dyn ExclusiveKind, queues: bool, fenced: bool) -> bool {
    queues && kind.behaviour().hands_over && !fenced
}

#[async_trait(?Send)]
impl Model for Kind {
    type Op = Op;
    type Seen = Seen;
    type State = Locks;

    fn op(self) -> BoxedStrategy<Op> {
        op(self).boxed()
    }

    fn keys(self) -> &'static [&'static str] {
        const LOCKS: &[&str] = &[
            "model-0",
            "model-1",
            "redisson_lock_token:{model-0}",
            "redisson_lock_queue:{model-1}",
            "redisson_lock_timeout:{model-1}",
        ];
        match self {
            Kind::Reentrant | Kind::NonReentrant | Kind::Fair => LOCKS,
            // No queue: the lock and its counter.
            Kind::Lean => &LOCKS[..3],
            // Its one lock's keys, the waits' entries of the handoff too.
            Kind::Handoff => &[
                "model-1",
                "redisson_lock_token:{model-1}",
                "redisson_lock_queue:{model-1}",
                "redisson_lock_timeout:{model-1}",
                "redisson_lock_handoff:{model-1}",
            ],
        }
    }

    fn start(self, clients: &[LockClient]) -> Locks {
        Locks {
            handles: clients.iter().map(|c| Handle::of(c, self)).collect(),
            last: None,
            waits: Vec::new(),
            tickets: 0,
        }
    }

    async fn apply(self, state: &mut Locks, op: &Op, ids: &mut Ids) -> Seen {
        match *op {
            Op::Acquire {
                client,
                owner: id,
                lock,
                lease,
                fenced,
                queue,
                private,
            } => {
                let gets_one = wait_ticket(state.handles[client].ops(), queue.is_some(), fenced);
                let ticket = gets_one.then(|| {
                    state.tickets += 1;
                    state.tickets
                });
                let first = AcquireRequest::new(
                    lock_name(lock),
                    owner(client, id),
                    DURATIONS_MS[lease],
                    fenced,
                    request_deadline(2),
                )
                .queue(queue.map(|q| DURATIONS_MS[q]))
                .ticket(ticket)
                .private_owner(private);
                let wait = Wait {
                    client,
                    first,
                    won: false,
                };
                state.attempt(wait, ids).await
            }
            Op::Again { wait } => match state.pick(false, wait) {
                Some(at) => {
                    let wait = state.waits.remove(at);
                    state.attempt(wait, ids).await
                }
                None => Seen::NothingToRepeat,
            },
            Op::Unlock { wait } => match state.pick(true, wait) {
                Some(at) => {
                    let Wait { client, first, .. } = state.waits.remove(at);
                    let req = ReleaseRequest::new(
                        first.name,
                        first.owner,
                        first.lease_ms,
                        request_deadline(2),
                    )
                    .private_owner(first.private_owner);
                    state.release(client, req, ids).await
                }
                None => Seen::NothingToRepeat,
            },
            Op::Release {
                client,
                owner: id,
                lock,
                private,
            } => {
                let req = ReleaseRequest::new(
                    lock_name(lock),
                    owner(client, id),
                    DURATIONS_MS[2],
                    request_deadline(2),
                )
                .private_owner(private);
                state.release(client, req, ids).await
            }
            Op::Leave { wait } => {
                let Some(at) = state.pick(false, wait) else {
                    return Seen::NothingToRepeat;
                };
                let Wait { client, first, .. } = state.waits.remove(at);
                let kind = state.handles[client].ops();
                match kind
                    .leave_queue(&first.name, &first.owner, first.wait_ticket)
                    .await
                {
                    Ok(()) => Seen::Left,
                    Err(e) => Seen::Failed(e.to_string()),
                }
            }
            Op::Renew {
                client,
                owner: id,
                both,
                lock,
                lease,
            } => {
                let targets = renew_targets(&lock_name(lock), client, id, both);
                renew_seen(state.handles[client].ops(), &targets, DURATIONS_MS[lease]).await
            }
            Op::ForceUnlock { lock } => force_seen(state.handles[0].ops(), &lock_name(lock)).await,
            Op::Inspect { lock } => state.handles[1].info(&lock_name(lock)).await,
            Op::Repeat => {
                let kinds: Vec<&dyn ExclusiveKind> =
                    state.handles.iter().map(Handle::ops).collect();
                repeat_seen(&[kinds], state.last.as_ref()).await
            }
        }
    }
}
