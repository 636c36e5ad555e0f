//! The count-down latch's model ([`Latch`]): setting a count (small ones,
//! and ones past what a Lua number holds exactly, up to `i64::MAX`),
//! counting down, reading the count, deleting, and repeated requests, by
//! several clients on two latches, on their raw store operations
//! ([`lock_redis::kinds::Latch`]).

use std::sync::Arc;

use async_trait::async_trait;
use lock_redis::kinds::latch::LatchRequest;
use lock_redis::{LockClient, LockName, MAX_COUNT};
use proptest::prelude::*;

use super::{answer, name, request_deadline, Answer, Ids, Model, CLIENTS, RECORD_TTLS_MS};

/// The count-down latch ([`LockClient::count_down_latch`]).
#[derive(Debug, Clone, Copy)]
pub struct Latch;

/// One operation on a latch.
#[derive(Debug, Clone)]
pub enum LatchOp {
    /// `try_set_count`.
    TrySet {
        /// Which client sends it.
        client: usize,
        /// Which latch.
        latch: usize,
        /// The count (≥ 1).
        count: u64,
        /// Index of the request record's time to live.
        keep: usize,
    },
    /// `count_down`.
    CountDown {
        /// Which client sends it.
        client: usize,
        /// Which latch.
        latch: usize,
        /// Index of the request record's time to live.
        keep: usize,
    },
    /// `count`.
    Count {
        /// Which client sends it.
        client: usize,
        /// Which latch.
        latch: usize,
    },
    /// `delete`.
    Delete {
        /// Which client sends it.
        client: usize,
        /// Which latch.
        latch: usize,
        /// Index of the request record's time to live.
        keep: usize,
    },
    /// The last set, count-down or delete sent again with the same request
    /// id.
    Repeat,
}

fn op() -> impl Strategy<Value = LatchOp> {
    let who = (0..CLIENTS, 0..2usize);
    let keep = 0..RECORD_TTLS_MS.len();
    // Past 2^53 a Lua number no longer holds every integer.
    let count = prop_oneof![8 => 1..4u64, 1 => Just((1 << 53) + 1), 1 => Just(MAX_COUNT)];
    prop_oneof![
        4 => (who.clone(), count, keep.clone()).prop_map(|((client, latch), count, keep)| {
            LatchOp::TrySet { client, latch, count, keep }
        }),
        4 => (who.clone(), keep.clone()).prop_map(|((client, latch), keep)| {
            LatchOp::CountDown { client, latch, keep }
        }),
        2 => who.clone().prop_map(|(client, latch)| LatchOp::Count { client, latch }),
        1 => (who, keep).prop_map(|((client, latch), keep)| LatchOp::Delete { client, latch, keep }),
        1 => Just(LatchOp::Repeat),
    ]
}

/// Which operation a repeat sends again.
#[derive(Debug, Clone, Copy)]
enum Write {
    Set(u64),
    CountDown,
    Delete,
}

/// A run of the latch: each client's kind, and the last write sent.
pub struct LatchState {
    kinds: Vec<Arc<lock_redis::kinds::Latch>>,
    last: Option<(Write, usize, LatchRequest)>,
}

fn latch_name(latch: usize) -> LockName {
    name("latch", latch)
}

async fn write(kind: &lock_redis::kinds::Latch, what: Write, req: &LatchRequest) -> Answer {
    match what {
        Write::Set(count) => answer(kind.try_set_count(req, count).await),
        Write::CountDown => answer(kind.count_down(req).await),
        Write::Delete => answer(kind.delete(req).await),
    }
}

#[async_trait(?Send)]
impl Model for Latch {
    type Op = LatchOp;
    type Seen = Option<Answer>;
    type State = LatchState;

    fn op(self) -> BoxedStrategy<LatchOp> {
        op().boxed()
    }

    fn keys(self) -> &'static [&'static str] {
        &["latch-0", "latch-1"]
    }

    fn start(self, clients: &[LockClient]) -> LatchState {
        LatchState {
            kinds: clients.iter().map(|c| c.kinds().latch()).collect(),
            last: None,
        }
    }

    /// `None` for a repeat with nothing sent before it.
    async fn apply(self, state: &mut LatchState, op: &LatchOp, ids: &mut Ids) -> Option<Answer> {
        let (what, client, latch, keep) = match *op {
            LatchOp::Count { client, latch } => {
                return Some(answer(state.kinds[client].count(&latch_name(latch)).await));
            }
            LatchOp::Repeat => {
                let (what, client, req) = state.last.as_ref()?;
                return Some(write(state.kinds[*client].as_ref(), *what, req).await);
            }
            LatchOp::TrySet {
                client,
                latch,
                count,
                keep,
            } => (Write::Set(count), client, latch, keep),
            LatchOp::CountDown {
                client,
                latch,
                keep,
            } => (Write::CountDown, client, latch, keep),
            LatchOp::Delete {
                client,
                latch,
                keep,
            } => (Write::Delete, client, latch, keep),
        };
        let req = LatchRequest::new(latch_name(latch), request_deadline(keep));
        ids.note(&req.request_id);
        let seen = write(state.kinds[client].as_ref(), what, &req).await;
        state.last = Some((what, client, req));
        Some(seen)
    }
}
