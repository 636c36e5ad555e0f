//! The read-write lock's model ([`ReadWrite`]): reads and writes (a
//! writer's `lock` joins the waiting writers, its `try_lock` does not),
//! unlocks of either side, downgrades, waiting writers giving up, renewals
//! of either side, force unlocks and inspections of either side, and
//! repeated requests, by several clients and owners on one lock, on the
//! two sides' raw store operations ([`lock_redis::kinds::rwlock::ReadWriteKinds`]).

use std::sync::Arc;

use async_trait::async_trait;
use lock_core::backend::{AcquireRequest, ExclusiveKind, ReleaseRequest};
use lock_redis::{LockClient, LockName};
use proptest::prelude::*;

use super::locks::{
    acquire_seen, force_seen, release_seen, renew_seen, renew_targets, repeat_seen, Sent,
};
use super::{name, owner, request_deadline, Ids, Model, Seen, CLIENTS, DURATIONS_MS};

/// The read-write lock ([`LockClient::read_write_lock`]).
#[derive(Debug, Clone, Copy)]
pub struct ReadWrite;

/// Which side of the lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The read side.
    Read,
    /// The write side.
    Write,
}

impl Side {
    fn index(self) -> usize {
        match self {
            Self::Read => 0,
            Self::Write => 1,
        }
    }
}

/// One operation on the read-write lock.
#[derive(Debug, Clone)]
pub enum RwOp {
    /// A read attempt (a reader never queues).
    Read {
        /// Which client sends it.
        client: usize,
        /// Which owner of that client.
        owner: u64,
        /// Index of the lease.
        lease: usize,
    },
    /// A write attempt: `wait` set is a `lock()` that finds it held and
    /// joins the waiting writers with that waiter timeout (holding new
    /// readers off); `None` is a `try_lock()`.
    Write {
        /// Which client sends it.
        client: usize,
        /// Which owner of that client.
        owner: u64,
        /// Index of the lease.
        lease: usize,
        /// Index of the waiter timeout, if it waits.
        wait: Option<usize>,
    },
    /// An unlock of one hold of one side.
    Unlock {
        /// Which client sends it.
        client: usize,
        /// Which owner of that client.
        owner: u64,
        /// Which side.
        side: Side,
    },
    /// A downgrade: the owner reads, then gives back its write hold.
    Downgrade {
        /// Which client sends it.
        client: usize,
        /// Which owner of that client.
        owner: u64,
        /// Index of the read lease.
        lease: usize,
    },
    /// A waiting writer gives up.
    GiveUp {
        /// Which client sends it.
        client: usize,
        /// Which owner of that client.
        owner: u64,
    },
    /// A watchdog renewal of one owner's holds of one side, or of both
    /// owners of the client in one batch.
    Renew {
        /// Which client sends it.
        client: usize,
        /// Which owner of that client.
        owner: u64,
        /// Whether the client's other owner is renewed in the same batch.
        both: bool,
        /// Which side.
        side: Side,
        /// Index of the lease.
        lease: usize,
    },
    /// Force unlock through one side's kind.
    ForceUnlock {
        /// Which side.
        side: Side,
    },
    /// Inspect one side.
    Inspect {
        /// Which side.
        side: Side,
    },
    /// The last acquire or release sent again with the same request id.
    Repeat,
}

/// What one operation on the read-write lock showed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RwSeen {
    /// One call's answer.
    One(Seen),
    /// A downgrade's read, then its write release.
    Downgrade(Seen, Seen),
}

fn op() -> impl Strategy<Value = RwOp> {
    let who = (0..CLIENTS, 0..2u64);
    let side = prop_oneof![Just(Side::Read), Just(Side::Write)];
    prop_oneof![
        4 => (who.clone(), 0..3usize).prop_map(|((client, owner), lease)| RwOp::Read {
            client, owner, lease
        }),
        4 => (who.clone(), 0..3usize, proptest::option::of(0..3usize)).prop_map(
            |((client, owner), lease, wait)| RwOp::Write { client, owner, lease, wait }
        ),
        4 => (who.clone(), side.clone()).prop_map(|((client, owner), side)| RwOp::Unlock {
            client, owner, side
        }),
        1 => (who.clone(), 0..3usize).prop_map(|((client, owner), lease)| RwOp::Downgrade {
            client, owner, lease
        }),
        1 => who.clone().prop_map(|(client, owner)| RwOp::GiveUp { client, owner }),
        1 => (who, any::<bool>(), side.clone(), 0..3usize).prop_map(
            |((client, owner), both, side, lease)| RwOp::Renew { client, owner, both, side, lease }
        ),
        1 => side.clone().prop_map(|side| RwOp::ForceUnlock { side }),
        2 => side.prop_map(|side| RwOp::Inspect { side }),
        1 => Just(RwOp::Repeat),
    ]
}

/// A run of the read-write lock: each client's two sides, and the last
/// request sent.
pub struct RwState {
    /// `[read, write]`, each one per client.
    sides: [Vec<Arc<dyn ExclusiveKind>>; 2],
    last: Option<Sent>,
}

fn lock_name() -> LockName {
    name("rw", 0)
}

impl RwState {
    fn kinds(&self) -> Vec<Vec<&dyn ExclusiveKind>> {
        self.sides
            .iter()
            .map(|side| side.iter().map(AsRef::as_ref).collect())
            .collect()
    }

    async fn acquire(&mut self, side: Side, client: usize, req: AcquireRequest) -> Seen {
        let seen = acquire_seen(self.sides[side.index()][client].as_ref(), &req).await;
        self.last = Some(Sent::Acquire(side.index(), client, req));
        seen
    }

    async fn release(&mut self, side: Side, client: usize, id: u64, ids: &mut Ids) -> Seen {
        let req = ReleaseRequest::new(
            lock_name(),
            owner(client, id),
            DURATIONS_MS[2],
            request_deadline(2),
        );
        ids.note(&req.request_id);
        let seen = release_seen(self.sides[side.index()][client].as_ref(), &req).await;
        self.last = Some(Sent::Release(side.index(), client, req));
        seen
    }
}

fn acquire_request(client: usize, id: u64, lease: usize, ids: &mut Ids) -> AcquireRequest {
    let req = AcquireRequest::new(
        lock_name(),
        owner(client, id),
        DURATIONS_MS[lease],
        false,
        request_deadline(2),
    );
    ids.note(&req.request_id);
    req
}

#[async_trait(?Send)]
impl Model for ReadWrite {
    type Op = RwOp;
    type Seen = RwSeen;
    type State = RwState;

    fn op(self) -> BoxedStrategy<RwOp> {
        op().boxed()
    }

    fn keys(self) -> &'static [&'static str] {
        &["rw-0", "redisson_rwlock_writers:{rw-0}"]
    }

    fn start(self, clients: &[LockClient]) -> RwState {
        let of =
            |pick: fn(&lock_redis::kinds::rwlock::ReadWriteKinds) -> &Arc<dyn ExclusiveKind>| {
                clients
                    .iter()
                    .map(|c| Arc::clone(pick(&c.kinds().read_write())))
                    .collect()
            };
        RwState {
            sides: [
                of(lock_redis::kinds::rwlock::ReadWriteKinds::read),
                of(lock_redis::kinds::rwlock::ReadWriteKinds::write),
            ],
            last: None,
        }
    }

    async fn apply(self, state: &mut RwState, op: &RwOp, ids: &mut Ids) -> RwSeen {
        let one = match *op {
            RwOp::Read {
                client,
                owner: id,
                lease,
            } => {
                let req = acquire_request(client, id, lease, ids);
                state.acquire(Side::Read, client, req).await
            }
            RwOp::Write {
                client,
                owner: id,
                lease,
                wait,
            } => {
                let req =
                    acquire_request(client, id, lease, ids).queue(wait.map(|w| DURATIONS_MS[w]));
                state.acquire(Side::Write, client, req).await
            }
            RwOp::Unlock {
                client,
                owner: id,
                side,
            } => state.release(side, client, id, ids).await,
            RwOp::Downgrade {
                client,
                owner: id,
                lease,
            } => {
                let req = acquire_request(client, id, lease, ids);
                let read = state.acquire(Side::Read, client, req).await;
                let release = state.release(Side::Write, client, id, ids).await;
                return RwSeen::Downgrade(read, release);
            }
            RwOp::GiveUp { client, owner: id } => {
                match state.sides[Side::Write.index()][client]
                    .leave_queue(&lock_name(), &owner(client, id), None)
                    .await
                {
                    Ok(()) => Seen::Left,
                    Err(e) => Seen::Failed(e.to_string()),
                }
            }
            RwOp::Renew {
                client,
                owner: id,
                both,
                side,
                lease,
            } => {
                let targets = renew_targets(&lock_name(), client, id, both);
                renew_seen(
                    state.sides[side.index()][client].as_ref(),
                    &targets,
                    DURATIONS_MS[lease],
                )
                .await
            }
            RwOp::ForceUnlock { side } => {
                force_seen(state.sides[side.index()][0].as_ref(), &lock_name()).await
            }
            RwOp::Inspect { side } => {
                match state.sides[side.index()][1].inspect(&lock_name()).await {
                    Ok(info) => {
                        let mut holders: Vec<_> = info
                            .holders
                            .into_iter()
                            .map(|h| (h.field, h.count))
                            .collect();
                        holders.sort();
                        Seen::Info {
                            holders,
                            has_ttl: info.ttl.is_some(),
                            queue: Vec::new(),
                        }
                    }
                    Err(e) => Seen::Failed(e.to_string()),
                }
            }
            RwOp::Repeat => repeat_seen(&state.kinds(), state.last.as_ref()).await,
        };
        RwSeen::One(one)
    }
}
