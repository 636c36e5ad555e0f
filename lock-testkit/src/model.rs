//! Model-based testing (feature `model`): random sequences of acquire /
//! release / force-unlock / inspect / advance-time / repeat-a-request by
//! several clients and owners, run against the in-memory store and against
//! a real store, must give the same observable results. A backend crate
//! compares [`in_memory`] with [`on_store`] in a `proptest!` with its own way
//! to connect, for every kind ([`Kind::ALL`]).
//!
//! Both worlds run the kind's own Lua scripts (the in-memory store on its
//! embedded Lua 5.1), so a difference is a place where the in-memory store
//! (its commands, Lua conversion, expiry or clock) does not answer as
//! Redis does, or where a script depends on something the store does not
//! model: either would make the in-memory tests under paused time stop
//! standing for Redis.
//!
//! Time: the model runs under paused tokio time, the real store in real
//! time. Leases, waiter timeouts and time steps sit on a 100 ms grid offset
//! by 50 ms (150/350/950 ms; steps of 0–300 ms in 100 ms units), so no
//! operation lands within 50 ms of an expiry in either world and both agree
//! on what has expired. One exception: a fair waiter queued behind one with
//! a longer waiter timeout takes that waiter's deadline + its own, which
//! lands on the grid; an operation at exactly that time sees it expired in
//! both worlds, because the real run only ever lags the model more as it
//! goes (its steps take at least their model time).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use lock_core::{
    AcquireOutcome, AcquireRequest, ExclusiveKind, FairKind, LockClient, LockName, Owner,
    ReleaseOutcome, ReleaseRequest,
};
use proptest::prelude::*;

use crate::InMemoryServer;

/// How many clients (connections) a sequence uses.
pub const CLIENTS: usize = 2;
const DURATIONS_MS: [u64; 3] = [150, 350, 950];

/// One step of a sequence.
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
    /// Let time pass, in 100 ms steps.
    Advance {
        /// How many steps.
        steps: u64,
    },
    /// The last acquire or release sent again with the same request id (a
    /// retry, or a late duplicate): its latch must answer alike in both
    /// worlds, whatever happened in between.
    Repeat,
}

/// Random operations.
pub fn op() -> impl Strategy<Value = Op> {
    let who = (0..CLIENTS, 0..3u64, 0..2usize);
    prop_oneof![
        4 => (who.clone(), 0..3usize, any::<bool>(), proptest::option::of(0..3usize)).prop_map(
            |((client, owner, lock), lease, fenced, queue)| Op::Acquire {
                client, owner, lock, lease, fenced, queue
            }
        ),
        3 => who.clone().prop_map(|(client, owner, lock)| Op::Release { client, owner, lock }),
        1 => who.prop_map(|(client, owner, lock)| Op::Leave { client, owner, lock }),
        1 => (0..2usize).prop_map(|lock| Op::ForceUnlock { lock }),
        2 => (0..2usize).prop_map(|lock| Op::Inspect { lock }),
        2 => (0..4u64).prop_map(|steps| Op::Advance { steps }),
        1 => Just(Op::Repeat),
    ]
}

/// Random sequences.
pub fn ops() -> impl Strategy<Value = Vec<Op>> {
    proptest::collection::vec(op(), 1..25)
}

/// What one operation showed. Times are compared by presence only: their
/// values differ by the real time the real run takes.
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
    /// Time passed.
    Advanced,
    /// A repeat with no request sent before it.
    NothingToRepeat,
}

/// The last request a run sent, for [`Op::Repeat`].
enum Sent {
    Acquire(usize, AcquireRequest),
    Release(usize, ReleaseRequest),
}

pub use crate::conformance::Kind;

/// One client's kind under test: its raw store operations.
enum Handle {
    Plain(Arc<dyn ExclusiveKind>),
    Fair(Arc<dyn FairKind>),
}

impl Handle {
    fn of(client: &LockClient, kind: Kind) -> Self {
        let kinds = client.kinds();
        match kind {
            Kind::Reentrant => Self::Plain(Arc::clone(
                kinds.reentrant_kind().expect("a reentrant kind"),
            )),
            Kind::Fair => Self::Fair(Arc::clone(kinds.fair_kind().expect("a fair kind"))),
        }
    }

    fn ops(&self) -> &dyn ExclusiveKind {
        match self {
            Self::Plain(k) => k.as_ref(),
            Self::Fair(k) => k.as_ref(),
        }
    }

    async fn info(&self, name: &LockName) -> Seen {
        let (lock, queue) = match self {
            Self::Plain(k) => (k.inspect(name).await.expect("inspect"), Vec::new()),
            Self::Fair(k) => {
                let info = k.inspect_fair(name).await.expect("inspect");
                (info.lock, info.queue)
            }
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

async fn acquire_seen(backend: &dyn ExclusiveKind, req: &AcquireRequest) -> Seen {
    match backend.try_acquire(req).await.expect("acquire") {
        AcquireOutcome::Acquired { fencing_token } => Seen::Acquired(fencing_token),
        AcquireOutcome::Held { ttl } => Seen::Held {
            has_ttl: ttl.is_some(),
        },
        other => panic!("an outcome the model does not know: {other:?}"),
    }
}

fn owner(client: usize, id: u64) -> Owner {
    // Fixed client ids, so both worlds write the same hash fields.
    Owner::new(uuid::Uuid::from_u128(0x1000 + client as u128), id)
}

fn name(lock: usize) -> LockName {
    LockName::new(format!("model-{lock}")).expect("valid name")
}

/// Runs `ops` on the `kind` of each client, advancing time with `advance`.
///
/// # Panics
/// When a store call fails: a model run has no faults.
pub async fn run<F, Fut>(clients: &[LockClient], kind: Kind, ops: &[Op], advance: F) -> Vec<Seen>
where
    F: Fn(Duration) -> Fut,
    Fut: Future<Output = ()>,
{
    let handles: Vec<Handle> = clients.iter().map(|c| Handle::of(c, kind)).collect();
    let backends: Vec<&dyn ExclusiveKind> = handles.iter().map(Handle::ops).collect();
    let mut seen = Vec::new();
    let mut last: Option<Sent> = None;
    for op in ops {
        let s = match *op {
            Op::Acquire {
                client,
                owner: id,
                lock,
                lease,
                fenced,
                queue,
            } => {
                let req = AcquireRequest::new(
                    name(lock),
                    owner(client, id),
                    DURATIONS_MS[lease],
                    fenced,
                    30_000,
                )
                .queue(queue.map(|q| DURATIONS_MS[q]));
                let s = acquire_seen(backends[client], &req).await;
                last = Some(Sent::Acquire(client, req));
                s
            }
            Op::Release {
                client,
                owner: id,
                lock,
            } => {
                let req =
                    ReleaseRequest::new(name(lock), owner(client, id), DURATIONS_MS[2], 30_000);
                let s = Seen::Release(backends[client].release(&req).await.expect("release"));
                last = Some(Sent::Release(client, req));
                s
            }
            Op::Leave {
                client,
                owner: id,
                lock,
            } => {
                backends[client]
                    .leave_queue(&name(lock), &owner(client, id))
                    .await
                    .expect("leave");
                Seen::Left
            }
            Op::ForceUnlock { lock } => Seen::Forced(
                backends[0]
                    .force_unlock(&name(lock))
                    .await
                    .expect("force unlock"),
            ),
            Op::Inspect { lock } => handles[1].info(&name(lock)).await,
            Op::Advance { steps } => {
                advance(Duration::from_millis(100 * steps)).await;
                Seen::Advanced
            }
            Op::Repeat => match &last {
                Some(Sent::Acquire(client, req)) => acquire_seen(backends[*client], req).await,
                Some(Sent::Release(client, req)) => {
                    Seen::Release(backends[*client].release(req).await.expect("release"))
                }
                None => Seen::NothingToRepeat,
            },
        };
        seen.push(s);
    }
    seen
}

/// Runs `ops` on the `kind` of clients of a fresh in-memory store, under
/// paused time.
///
/// # Panics
/// When the runtime cannot be built.
pub fn in_memory(kind: Kind, ops: &[Op]) -> Vec<Seen> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("runtime");
    rt.block_on(async {
        let server = InMemoryServer::new();
        let clients: Vec<LockClient> = (0..CLIENTS)
            .map(|_| server.client().expect("client"))
            .collect();
        run(&clients, kind, ops, tokio::time::advance).await
    })
}

/// Runs `ops` on the `kind` of real clients (one per client, from
/// `connect`) in real time, closing them afterwards.
pub async fn on_store<C, Fut>(kind: Kind, connect: C, ops: &[Op]) -> Vec<Seen>
where
    C: Fn() -> Fut,
    Fut: Future<Output = LockClient>,
{
    let mut clients = Vec::new();
    for _ in 0..CLIENTS {
        clients.push(connect().await);
    }
    let seen = run(&clients, kind, ops, tokio::time::sleep).await;
    for c in &clients {
        c.close().await;
    }
    seen
}
