//! The expirable-permit semaphore's model ([`PermitSemaphore`]): setting
//! and adding permits, taking one with or without a lease (leases on the
//! time grid, so taken permits expire and come back as time passes),
//! giving one back by id (a taken one, one released or expired, or one
//! never taken: `release` and `try_release` are this one store operation),
//! changing a lease, reading the count, and repeated requests, by several
//! clients on one semaphore, on its raw store operations
//! ([`lock_redis::kinds::PermitSemaphore`]).

use std::sync::Arc;

use async_trait::async_trait;
use lock_redis::kinds::permit_semaphore::{LeaseOutcome, LeaseRelease, LeaseRequest};
use lock_redis::kinds::semaphore::PermitRequest;
use lock_redis::{LockClient, LockName, PermitId};
use proptest::prelude::*;

use super::{
    answer, name, request_deadline, Answer, Ids, Model, CLIENTS, DURATIONS_MS, RECORD_TTLS_MS,
};

/// The expirable-permit semaphore
/// ([`LockClient::permit_expirable_semaphore`]).
#[derive(Debug, Clone, Copy)]
pub struct PermitSemaphore;

/// One operation on the expirable-permit semaphore.
#[derive(Debug, Clone)]
pub enum PermitOp {
    /// `try_set_permits`.
    TrySet {
        /// Which client sends it.
        client: usize,
        /// The permits.
        permits: u64,
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
    /// `try_acquire` under a fresh permit id.
    Acquire {
        /// Which client sends it.
        client: usize,
        /// Index of the lease; `None`: the permit never expires.
        lease: Option<usize>,
    },
    /// `release` / `try_release` of a permit id the run took before
    /// (taken still, released, or expired), or of one never taken.
    Release {
        /// Which client sends it.
        client: usize,
        /// Picks the id among those taken so far (the last pick: one
        /// never taken).
        which: usize,
        /// Index of the request record's time to live.
        record: usize,
    },
    /// `update_lease_time` of a permit id, picked as for a release.
    UpdateLease {
        /// Which client sends it.
        client: usize,
        /// Picks the id among those used so far.
        which: usize,
        /// Index of the lease; `None`: no expiry.
        lease: Option<usize>,
    },
    /// `available_permits`.
    Available {
        /// Which client sends it.
        client: usize,
    },
    /// The last add, acquire or release sent again (the same request id,
    /// or for an acquisition the same permit id).
    Repeat,
}

fn op() -> impl Strategy<Value = PermitOp> {
    let client = 0..CLIENTS;
    let record = 0..RECORD_TTLS_MS.len();
    let lease = || proptest::option::weighted(0.8, 0..DURATIONS_MS.len());
    prop_oneof![
        2 => (client.clone(), 0..4u64)
            .prop_map(|(client, permits)| PermitOp::TrySet { client, permits }),
        2 => (client.clone(), -1..4i64, record.clone())
            .prop_map(|(client, delta, record)| PermitOp::Add { client, delta, record }),
        4 => (client.clone(), lease())
            .prop_map(|(client, lease)| PermitOp::Acquire { client, lease }),
        3 => (client.clone(), 0..PICKS, record)
            .prop_map(|(client, which, record)| PermitOp::Release { client, which, record }),
        2 => (client.clone(), 0..PICKS, lease())
            .prop_map(|(client, which, lease)| PermitOp::UpdateLease { client, which, lease }),
        2 => client.prop_map(|client| PermitOp::Available { client }),
        1 => Just(PermitOp::Repeat),
    ]
}

/// What a repeat sends again.
#[derive(Debug, Clone)]
enum Sent {
    Add(usize, PermitRequest),
    Acquire(usize, LeaseRequest),
    Release(usize, LeaseRelease),
}

/// How many values a release's or lease update's `which` takes.
const PICKS: usize = 8;

/// A run of the expirable-permit semaphore: each client's kind, the permit
/// ids taken so far, and the last request sent.
pub struct PermitState {
    kinds: Vec<Arc<lock_redis::kinds::PermitSemaphore>>,
    taken: Vec<PermitId>,
    last: Option<Sent>,
}

impl PermitState {
    fn pick(&mut self, which: usize, ids: &mut Ids) -> PermitId {
        if which + 1 == PICKS || self.taken.is_empty() {
            return ids.permit();
        }
        self.taken[which % self.taken.len()]
    }
}

fn sem_name() -> LockName {
    name("permits", 0)
}

fn lease_ms(lease: Option<usize>) -> Option<u64> {
    lease.map(|l| DURATIONS_MS[l])
}

/// An acquisition's answer; the wait hint by presence only (its value
/// differs by the real run's lag).
async fn acquire(kind: &lock_redis::kinds::PermitSemaphore, req: &LeaseRequest) -> Answer {
    match kind.try_acquire(req).await {
        Ok(LeaseOutcome::Busy { retry_in }) => Ok(format!("Busy(waits: {})", retry_in.is_some())),
        other => answer(other),
    }
}

async fn send(kinds: &[Arc<lock_redis::kinds::PermitSemaphore>], sent: &Sent) -> Answer {
    match sent {
        Sent::Add(client, req) => answer(kinds[*client].add_permits(req).await),
        Sent::Acquire(client, req) => acquire(kinds[*client].as_ref(), req).await,
        Sent::Release(client, req) => answer(kinds[*client].release(req).await),
    }
}

#[async_trait(?Send)]
impl Model for PermitSemaphore {
    type Op = PermitOp;
    type Seen = Option<Answer>;
    type State = PermitState;

    fn op(self) -> BoxedStrategy<PermitOp> {
        op().boxed()
    }

    fn keys(self) -> &'static [&'static str] {
        &["permits-0", "{permits-0}:timeout"]
    }

    fn start(self, clients: &[LockClient]) -> PermitState {
        PermitState {
            kinds: clients
                .iter()
                .map(|c| c.kinds().permit_semaphore())
                .collect(),
            taken: Vec::new(),
            last: None,
        }
    }

    /// `None` for a repeat with nothing sent before it.
    async fn apply(self, state: &mut PermitState, op: &PermitOp, ids: &mut Ids) -> Option<Answer> {
        let sent = match *op {
            PermitOp::TrySet { client, permits } => {
                // Recorded like every change since try_set_permits answers
                // its first outcome to a retry.
                let req = PermitRequest::new(sem_name(), permits as i64, request_deadline(2));
                ids.note(&req.request_id);
                return Some(answer(state.kinds[client].try_set_permits(&req).await));
            }
            PermitOp::Available { client } => {
                return Some(answer(
                    state.kinds[client].available_permits(&sem_name()).await,
                ));
            }
            PermitOp::UpdateLease {
                client,
                which,
                lease,
            } => {
                let id = state.pick(which, ids);
                return Some(answer(
                    state.kinds[client]
                        .update_lease(&sem_name(), id, lease_ms(lease))
                        .await,
                ));
            }
            PermitOp::Repeat => {
                let sent = state.last.as_ref()?;
                return Some(send(&state.kinds, sent).await);
            }
            PermitOp::Add {
                client,
                delta,
                record,
            } => {
                let req = PermitRequest::new(sem_name(), delta, request_deadline(record));
                ids.note(&req.request_id);
                Sent::Add(client, req)
            }
            PermitOp::Acquire { client, lease } => {
                let mut req = LeaseRequest::new(sem_name(), lease_ms(lease));
                req.id = ids.permit();
                Sent::Acquire(client, req)
            }
            PermitOp::Release {
                client,
                which,
                record,
            } => {
                let id = state.pick(which, ids);
                let req = LeaseRelease::new(sem_name(), id, request_deadline(record));
                ids.note(&req.request_id);
                Sent::Release(client, req)
            }
        };
        let seen = send(&state.kinds, &sent).await;
        if let (Sent::Acquire(_, req), Ok(outcome)) = (&sent, &seen)
            && outcome == "Acquired"
        {
            state.taken.push(req.id);
        }
        state.last = Some(sent);
        Some(seen)
    }
}
