//! Model-based testing (feature `model`): random sequences of each kind's
//! store operations by several clients and owners, with time passing, run
//! against the in-memory store and against a real store, must give the
//! same answers and leave the same keyspace (keys, types, values, times to
//! live within a tolerance) at the end of every instant.
//!
//! One piece serves every kind: a kind describes its operations as a
//! [`Model`] (a generator of operations and how to apply one to the kind's
//! raw store operations); [`steps`] mixes them with time passing, [`run`]
//! plays a sequence on any [`Store`] and records a [`Trace`], and
//! [`compare`] finds the first step where two traces part. The models:
//! [`Kind`] (the kinds that hand out `Lock`s: reentrant, non-reentrant,
//! lean, fair, handoff),
//! [`ReadWrite`], [`Semaphore`], [`PermitSemaphore`] and [`Latch`] (see
//! "Every model" below). A backend crate runs each in
//! a property test with [`config`] (a fixed case count and a fixed seed, so
//! a failure reproduces); with feature `fixtures`, `against_redis` does
//! the whole comparison of one case against a throw-away `redis-server`,
//! and `check_on_thread` runs a model's cases on a thread of its own.
//!
//! Both worlds run the kinds' own Lua scripts (the in-memory store on its
//! embedded Lua 5.1), so a difference is a place where the in-memory store
//! (its commands, Lua conversion, expiry or clock) does not answer as
//! Redis does, or where a script depends on something the store does not
//! model: either would make the in-memory tests under paused time stop
//! standing for Redis.
//!
//! Identities are the same in both worlds: fixed client uuids in owners,
//! permit ids counted from the start of a run, and request ids (random,
//! because lock-core makes them so) written into key names are replaced by
//! their order of creation in the snapshots ([`Ids`]).
//!
//! Time: the model runs under paused tokio time, the real store in real
//! time, each sleeping for the time steps. Leases, waiter timeouts, request
//! records' times to live and time steps sit on a 100 ms grid offset by 50 ms
//! (150/350/950 ms; steps of 0–300 ms in 100 ms units), so no operation
//! lands within 50 ms of an expiry in either world and both agree on what
//! has expired. Times that tie in the model (a fair waiter queued behind
//! one with a longer waiter timeout takes that waiter's deadline + its own,
//! which lands on the grid; two deadlines set at different times may end
//! together) keep their order in the real run, because its lag behind the
//! model never shrinks (it sleeps the whole step, never catching up): what
//! was set later ends later or together, and what ends at an operation's
//! time has ended when the operation runs, in both worlds.
//!
//! The real run measures that lag at every step: times in snapshots (times
//! to live, epoch-millisecond scores, taken relative to each store's clock)
//! agree within it (+ [`TOLERANCE_MS`]), and a run that fell
//! [`GRID_MARGIN_MS`] behind (a loaded machine) is compared only up to
//! there, since it may see expiries the model does not.
//!
//! # Every model
//! | model | operations |
//! | --- | --- |
//! | [`Kind::Reentrant`], [`Kind::NonReentrant`] | a wait's first attempt (fenced or not; the non-reentrant lock refuses a second hold), a waiting wait's next attempt, a won wait's unlock, a release by any owner, renew (one owner or two in a batch), force unlock, inspect, repeat a request; queueing and leaving the queue, which these kinds ignore |
//! | [`Kind::Lean`] | the same, where an owner of one wait alone takes the unrecorded path (`SET NX PX GET`, `take.lua`, `give_back.lua`) and any other owner, or a fenced wait, the recorded one (`acquire.lua`, `release.lua`); repeats of either |
//! | [`Kind::Fair`] | the same, with queueing waits (a waiter timeout), a waiting wait leaving the queue, and inspect with the queue |
//! | [`Kind::Handoff`] | the fair lock's on one lock, with the engine's tickets: a queueing unfenced wait carries one (its handoff entry), a release or a leave grants the freed lock to a queued head that has one, that wait's next attempt claims it, its leaving gives it back, a fenced head is told, never granted; and one fixed sequence through all of these ([`handoff_steps`]) |
//! | [`ReadWrite`] | read, write (lock: queueing as a waiting writer; try_lock: not), unlock either side, downgrade, a waiting writer gives up, renew either side (one owner or two in a batch), force unlock either side, inspect either side, repeat |
//! | [`Semaphore`] | try_set_permits (with or without a time to live), add (± up to the bound), try_acquire(n), release(n), drain, available, repeat |
//! | [`PermitSemaphore`] | try_set_permits, add, acquire with or without a lease, release (= try_release) of a taken or unknown id, update_lease, available, repeat |
//! | [`Latch`] | try_set_count (up to `i64::MAX`), count_down, count, delete, repeat |
//!
//! Every model's sequences also let time pass and now and then have
//! another client write a value of another type (or a count of its own)
//! over one of the kind's keys ([`Step::Clobber`]).

mod handoff;
mod keyspace;
mod latch;
mod locks;
mod permits;
#[cfg(feature = "fixtures")]
mod redis_store;
mod run;
mod rwlock;
mod semaphore;
#[cfg(test)]
mod tests;

use std::fmt::Debug;

use async_trait::async_trait;
use lock_core::backend::RequestId;
use lock_redis::{LockClient, LockName, Owner, PermitId};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};

pub use handoff::handoff_steps;
pub use keyspace::{Entry, Item, Keyspace, DUMP, TOLERANCE_MS};
pub use latch::{Latch, LatchOp, LatchState};
pub use locks::{Kind, Locks, Op, Seen};
pub use permits::{PermitOp, PermitSemaphore, PermitState};
#[cfg(feature = "fixtures")]
pub use redis_store::{against_redis, check_on_thread, RedisStore};
pub use run::{compare, cut_short, in_memory, run, Snapshot, Store, Trace};
pub use rwlock::{ReadWrite, RwOp, RwSeen, RwState, Side};
pub use semaphore::{SemOp, SemState, Semaphore};

/// Every kind that has a model, by the name it is registered under in
/// lock-redis's registry of kinds (a lock kind's [`KindBehaviour::name`](lock_core::backend::KindBehaviour::name)):
/// [`Kind`]'s, [`ReadWrite`] (both sides), [`Semaphore`],
/// [`PermitSemaphore`] and [`Latch`]. The registry-completeness test
/// (lock-redis/tests/registry.rs) checks every registered kind is here.
pub const MODELLED_KINDS: &[&str] = &[
    "reentrant",
    "non_reentrant",
    "lean",
    "fair",
    "handoff",
    "read_write",
    "semaphore",
    "permit_semaphore",
    "latch",
];

/// How far from an expiry the time grid keeps every operation (see the
/// module docs).
pub const GRID_MARGIN_MS: i64 = 50;

/// How many clients (connections) a sequence uses.
pub const CLIENTS: usize = 2;
/// Leases, waiter timeouts and request records' times to live, on the grid
/// (see the module docs).
pub(crate) const DURATIONS_MS: [u64; 3] = [150, 350, 950];
/// How long a request may run (its deadline from when it is made): its
/// outcome is kept for a repeat until past then. Dated by the wall clock,
/// which in the model's paused world stands still while the in-memory
/// store's clock advances with the sequence's time steps; so every window
/// outlasts any sequence, and deadlines themselves are checked elsewhere
/// (the late-request tests on redis-server, the fault fuzz).
pub(crate) const RECORD_TTLS_MS: [u64; 3] = [600_000, 1_800_000, 3_600_000];

/// The deadline of a request made now with window `RECORD_TTLS_MS[i]`.
pub(crate) fn request_deadline(i: usize) -> u64 {
    lock_core::backend::deadline_in(std::time::Duration::from_millis(RECORD_TTLS_MS[i]))
}
/// The seed of [`config`] when `PROPTEST_RNG_SEED` does not give one.
pub const SEED: u64 = 0x6d6f_6465_6c5f_3132;

/// One kind's operations under the model: which operations exist and how
/// one runs on the kind's raw store operations. A value of the type names
/// the kind (a [`Kind`], or a unit struct for the others).
#[async_trait(?Send)]
pub trait Model: Copy + Debug + 'static {
    /// One operation.
    type Op: Clone + Debug + 'static;
    /// What one operation showed. Times are compared by presence only
    /// (their values differ by the real time the real run takes); the
    /// keyspace snapshots compare them within a tolerance.
    type Seen: Clone + Debug + PartialEq;
    /// The kind's handles and what a run remembers between operations.
    type State;

    /// Random operations.
    fn op(self) -> BoxedStrategy<Self::Op>;

    /// The state of a fresh run over `clients` (one per [`CLIENTS`]).
    fn start(self, clients: &[LockClient]) -> Self::State;

    /// Runs `op`, noting every request id it creates in `ids`.
    async fn apply(self, state: &mut Self::State, op: &Self::Op, ids: &mut Ids) -> Self::Seen;

    /// The kind's keys that a [`Step::Clobber`] may overwrite (at least
    /// one): every operation must then fail alike in both worlds (a value
    /// of another type), or read it alike (a count written by another
    /// client).
    fn keys(self) -> &'static [&'static str];
}

/// What a [`Step::Clobber`] writes: the value's type and its text.
pub const CLOBBERS: [(&str, &str); 7] = [
    ("string", "not a lock"),
    ("string", "7"),
    ("string", "-3"),
    ("string", "007"),
    ("list", "x"),
    ("hash", "f"),
    ("zset", "m"),
];

/// One step of a sequence.
#[derive(Debug, Clone)]
pub enum Step<O> {
    /// An operation of the kind under test.
    Op(O),
    /// Let time pass, in 100 ms steps.
    Advance {
        /// How many steps.
        steps: u64,
    },
    /// Another client overwrites one of the kind's keys ([`Model::keys`])
    /// with a value of [`CLOBBERS`], for 350 ms.
    Clobber {
        /// Index into [`Model::keys`].
        key: usize,
        /// Index into [`CLOBBERS`].
        value: usize,
    },
}

/// Random sequences of `model`'s operations with time passing, and now
/// and then another client's value written over one of the kind's keys.
pub fn steps<M: Model>(model: M) -> impl Strategy<Value = Vec<Step<M::Op>>> {
    let step = prop_oneof![
        24 => model.op().prop_map(Step::Op),
        4 => (0..4u64).prop_map(|steps| Step::Advance { steps }),
        1 => (0..model.keys().len(), 0..CLOBBERS.len())
            .prop_map(|(key, value)| Step::Clobber { key, value }),
    ];
    proptest::collection::vec(step, 1..25)
}

/// A property test's configuration: `cases` cases (fixed: the suite's run
/// time must not depend on the environment) from a fixed seed unless
/// `PROPTEST_RNG_SEED` gives another, so a failure reproduces (the seed
/// replaces a file of failed cases) and CI runs the same cases every time.
pub fn config(cases: u32) -> Config {
    let mut config = Config {
        cases,
        max_shrink_iters: 64,
        failure_persistence: None,
        ..Config::default()
    };
    if config.rng_seed == RngSeed::Random {
        config.rng_seed = RngSeed::Fixed(SEED);
    }
    config
}

/// The identities a run creates, in order, so both worlds name them alike.
#[derive(Debug, Default)]
pub struct Ids {
    requests: Vec<String>,
    permits: u128,
}

impl Ids {
    /// Notes a request id the run sent: snapshots name it `#<n>`, its
    /// order of creation.
    pub fn note(&mut self, id: &RequestId) {
        self.requests.push(id.to_string());
    }

    /// A fresh permit id, the same in both worlds at the same point of a run.
    pub fn permit(&mut self) -> PermitId {
        self.permits += 1;
        format!("{:032x}", 0xa000_0000_u128 + self.permits)
            .parse()
            .expect("32 hex characters")
    }

    /// `text` with every noted request id replaced by its label.
    pub fn label(&self, text: &str) -> String {
        self.requests
            .iter()
            .enumerate()
            .fold(text.to_owned(), |t, (n, id)| {
                t.replace(id, &format!("#{n}"))
            })
    }
}

/// An answer of a store operation: its value (`Debug`-printed, for kinds
/// whose answers carry no times) or its error's message.
pub type Answer = Result<String, String>;

pub(crate) fn answer<T: Debug>(result: lock_redis::Result<T>) -> Answer {
    result.map(|v| format!("{v:?}")).map_err(|e| e.to_string())
}

/// Owner `id` of client `client`: fixed client uuids, so both worlds write
/// the same hash fields.
pub(crate) fn owner(client: usize, id: u64) -> Owner {
    Owner::new(uuid::Uuid::from_u128(0x1000 + client as u128), id)
}

/// Object `n` of a model (`<kind>-<n>`).
pub(crate) fn name(kind: &str, n: usize) -> LockName {
    LockName::new(format!("{kind}-{n}")).expect("valid name")
}
