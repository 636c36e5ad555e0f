//! The semaphore's model ([`Semaphore`]): setting the permits (with or
//! without a time to live), adding or removing some (up to the bound, and
//! past it), taking and giving back `n`, draining, reading the count, and
//! repeated requests, by several clients on one semaphore, on its raw store
//! operations ([`lock_redis::kinds::SemaphoreStore`]).

use std::sync::Arc;

use async_trait::async_trait;
use lock_redis::kinds::semaphore::PermitRequest;
use lock_redis::{LockClient, LockName, MAX_PERMITS};
use proptest::prelude::*;

use super::{
    answer, name, request_deadline, Answer, Ids, Model, CLIENTS, DURATIONS_MS, RECORD_TTLS_MS,
};

/// The semaphore ([`LockClient::semaphore`]).
#[derive(Debug, Clone, Copy)]
pub struct Semaphore;

/// One operation on the semaphore.
#[derive(Debug, Clone)]
pub enum SemOp {
    /// `try_set_permits`, with the time to live at that index if any.
    TrySet {
        /// Which client sends it.
        client: usize,
        /// The permits.
        permits: u64,
        /// Index of the time to live, if any.
        ttl: Option<usize>,
    },
    /// `add_permits`.
    Add {
        /// Which client sends it.
        client: usize,
        /// The change.
        delta: i64,
        /// Index of the request record's time to live.
        record: usize,
    },
    /// `try_acquire(n)`.
    Acquire {
        /// Which client sends it.
        client: usize,
        /// How many.
        permits: i64,
        /// Index of the request record's time to live.
        record: usize,
    },
    /// `release(n)`.
    Release {
        /// Which client sends it.
        client: usize,
        /// How many.
        permits: i64,
        /// Index of the request record's time to live.
        record: usize,
    },
    /// `drain_permits`.
    Drain {
        /// Which client sends it.
        client: usize,
        /// Index of the request record's time to live.
        record: usize,
    },
    /// `available_permits`.
    Available {
        /// Which client sends it.
        client: usize,
    },
    /// The last add, acquire, release or drain sent again with the same
    /// request id.
    Repeat,
}

/// Changes near zero, and the largest the bound allows either way.
fn delta() -> impl Strategy<Value = i64> {
    let max = i64::try_from(MAX_PERMITS).expect("i32::MAX fits");
    prop_oneof![8 => -2..4i64, 1 => Just(max), 1 => Just(-max)]
}

fn op() -> impl Strategy<Value = SemOp> {
    let client = 0..CLIENTS;
    let record = 0..RECORD_TTLS_MS.len();
    let max = i64::try_from(MAX_PERMITS).expect("i32::MAX fits");
    let permits = prop_oneof![9 => 1..4i64, 1 => Just(max)];
    prop_oneof![
        2 => (client.clone(), 0..4u64, proptest::option::of(0..3usize))
            .prop_map(|(client, permits, ttl)| SemOp::TrySet { client, permits, ttl }),
        2 => (client.clone(), delta(), record.clone())
            .prop_map(|(client, delta, record)| SemOp::Add { client, delta, record }),
        4 => (client.clone(), permits.clone(), record.clone())
            .prop_map(|(client, permits, record)| SemOp::Acquire { client, permits, record }),
        3 => (client.clone(), permits, record.clone())
            .prop_map(|(client, permits, record)| SemOp::Release { client, permits, record }),
        1 => (client.clone(), record).prop_map(|(client, record)| SemOp::Drain { client, record }),
        2 => client.prop_map(|client| SemOp::Available { client }),
        1 => Just(SemOp::Repeat),
    ]
}

/// Which operation a repeat sends again.
#[derive(Debug, Clone, Copy)]
enum Change {
    Add,
    Acquire,
    Release,
    Drain,
}

/// A run of the semaphore: each client's kind, and the last change sent.
pub struct SemState {
    kinds: Vec<Arc<lock_redis::kinds::SemaphoreStore>>,
    last: Option<(Change, usize, PermitRequest)>,
}

fn sem_name() -> LockName {
    name("sem", 0)
}

async fn change(
    kind: &lock_redis::kinds::SemaphoreStore,
    what: Change,
    req: &PermitRequest,
) -> Answer {
    match what {
        Change::Add => answer(kind.add_permits(req).await),
        Change::Acquire => answer(kind.try_acquire(req).await),
        Change::Release => answer(kind.release(req).await),
        Change::Drain => answer(kind.drain_permits(req).await),
    }
}

#[async_trait(?Send)]
impl Model for Semaphore {
    type Op = SemOp;
    type Seen = Option<Answer>;
    type State = SemState;

    fn op(self) -> BoxedStrategy<SemOp> {
        op().boxed()
    }

    fn keys(self) -> &'static [&'static str] {
        &["sem-0"]
    }

    fn start(self, clients: &[LockClient]) -> SemState {
        SemState {
            kinds: clients.iter().map(|c| c.kinds().semaphore()).collect(),
            last: None,
        }
    }

    /// `None` for a repeat with nothing sent before it.
    async fn apply(self, state: &mut SemState, op: &SemOp, ids: &mut Ids) -> Option<Answer> {
        let (what, client, permits, record) = match *op {
            SemOp::TrySet {
                client,
                permits,
                ttl,
            } => {
                let ttl = ttl.map(|t| DURATIONS_MS[t]);
                // Recorded like every change since try_set_permits answers
                // its first outcome to a retry.
                let req = PermitRequest::new(sem_name(), permits as i64, request_deadline(2));
                ids.note(&req.request_id);
                return Some(answer(state.kinds[client].try_set_permits(&req, ttl).await));
            }
            SemOp::Available { client } => {
                return Some(answer(
                    state.kinds[client].available_permits(&sem_name()).await,
                ));
            }
            SemOp::Repeat => {
                let (what, client, req) = state.last.as_ref()?;
                return Some(change(state.kinds[*client].as_ref(), *what, req).await);
            }
            SemOp::Add {
                client,
                delta,
                record,
            } => (Change::Add, client, delta, record),
            SemOp::Acquire {
                client,
                permits,
                record,
            } => (Change::Acquire, client, permits, record),
            SemOp::Release {
                client,
                permits,
                record,
            } => (Change::Release, client, permits, record),
            SemOp::Drain { client, record } => (Change::Drain, client, 0, record),
        };
        let req = PermitRequest::new(sem_name(), permits, request_deadline(record));
        ids.note(&req.request_id);
        let seen = change(state.kinds[client].as_ref(), what, &req).await;
        state.last = Some((what, client, req));
        Some(seen)
    }
}
