//! The conformance suite: behaviour checks every backend must pass.
//!
//! Each check is a `pub async fn`, run against one shared store through
//! one of two traits:
//!
//! - [`Harness`], what any store offers: new clients on their own
//!   connections, the lock kind of the suite, the number of nodes. A check
//!   taking `&dyn Harness` is a **behaviour check**: it asserts only what
//!   the clients observe, so a store that is not Redis (a PostgreSQL
//!   store, issue 41) runs it.
//! - [`RedisLayout`]` : Harness`, the Redis layout: raw commands on the
//!   store as another Redis client (or Redisson) would send them, the key
//!   layout, the server's clock. A check taking `&dyn RedisLayout` is a
//!   **Redis-layout check**: it looks at (or writes) Redisson's keys, the
//!   wire contract, or asserts that nothing is left in the keyspace.
//!
//! The mark is each check's parameter type, so the compiler keeps it
//! honest; [`Check`] carries it into the lists ([`Check::needs_redis_layout`],
//! [`KindChecks::behaviour_checks`]). Of the 178 checks of the table, 99
//! need only [`Harness`]:
//!
//! | Row | Behaviour checks | Of |
//! | --- | --- | --- |
//! | shared by every lock kind | 39 | 56 (smoke subset: 4 of 8) |
//! | reentrant (own) | 5 | 12 |
//! | lean | 0 | 6 |
//! | fair (own) | 2 | 12 |
//! | handoff (own) | 0 | 10 |
//! | read_write | 11 | 18 |
//! | latch | 11 | 22 |
//! | semaphores | 31 | 42 |
//!
//! (`lists.rs` pins these numbers in a test.) Many Redis-layout checks are
//! behaviour checks that end by asserting no key is left
//! ([`leftover_keys`]), or that read a key's TTL; a store-neutral probe of
//! "nothing left" on [`Harness`] would move them over. Of the 18
//! multi-store checks (`multi.rs`, `redlock.rs`), 12 take any stores
//! ([`multi::Stores`]) and 6, which look at keys or subscriptions, Redis
//! stores ([`multi::RedisStores`]).
//!
//! The table macros ([`conformance_table!`](crate::conformance_table),
//! [`multi_conformance_tests!`](crate::multi_conformance_tests)) stamp out
//! every check, so they need a deployment that implements [`RedisLayout`]
//! (every deployment today is Redis); a store that implements [`Harness`]
//! alone runs the behaviour checks from the lists ([`kinds`],
//! [`KindChecks::behaviour_checks`]).
//!
//! The suite is data (`table.rs`): the checks every lock kind shares, with
//! a smoke subset marked, and one row per kind with its own checks. A
//! deployment crate lists its deployments in one
//! [`conformance_table!`](crate::conformance_table): each row says which
//! kinds it runs and whether the shared checks run in full or as the smoke
//! subset; the in-memory store and one redis-server run them in full for
//! every kind. [`kinds`] gives the same table as lists, for a deployment
//! that runs every check in one test on one expensive store (a cluster).
//!
//! One file per kind holds that kind's own behaviours (`fair.rs`,
//! `fenced.rs` — the fenced lock is the reentrant lock with every
//! acquisition fenced, so its checks are the reentrant kind's — and so
//! on); the shared checks (`basics.rs`, `waiting.rs`, `leases.rs`, …) take
//! their locks with [`lock`], which gives a handle of the suite's [`Kind`],
//! so every engine behaviour is checked for every lock kind. As tests, a
//! kind's shared checks sit in a module `shared` beside its own, so a run
//! can keep to the kinds' own checks with `--skip ::shared::`.
//!
//! `multi.rs` and `redlock.rs` check the locks composed over several
//! stores ([`lock_redis::MultiLock`], [`lock_redis::RedLock`]); they take a
//! set of independent stores instead of one harness, and run with
//! [`multi_conformance_tests!`](crate::multi_conformance_tests).
//!
//! Checks use short durations (watchdog timeouts under a second) so they run
//! in seconds on real Redis and instantly under paused time in memory.
//! Checks assert on time measured with `tokio::time::Instant`, so they hold
//! for both.

use std::time::Duration;

use lock_redis::{ClientConfig, Lock, LockClient, LockName};

/// The one poll loop, for the checks (`super::eventually`).
use crate::eventually;

pub mod basics;
pub mod cancellation;
pub mod describe;
pub mod errors;
pub mod fair;
pub mod fenced;
pub mod handoff;
mod harness;
pub mod holds;
pub mod latch;
pub mod layout;
pub mod lean;
pub mod leases;
mod lists;
pub mod multi;
pub mod non_reentrant;
pub mod permit_many;
pub mod permit_semaphore;
pub mod polling;
pub mod records;
pub mod redlock;
pub mod rwlock;
pub mod semaphore;
mod stamp;
mod table;
pub mod waiting;

pub(crate) use harness::wrapping_harness;
pub use harness::{Harness, OfKind, RedisLayout};
pub use lists::{
    kinds, run_checks, BehaviourCheck, Check, CheckArg, KindChecks, LayoutCheck, Shared,
};

/// Which kind of lock a suite checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Kind {
    /// [`LockClient::lock`].
    Reentrant,
    /// [`LockClient::fair_lock`].
    Fair,
    /// [`LockClient::handoff_lock`].
    Handoff,
}

impl Kind {
    /// The kinds the tests that loop over lock kinds (such as
    /// `tests/memory_transport.rs`) take a handle of. The property test
    /// keeps its own list, `lock_testkit::model::Kind::ALL` (feature
    /// `model`).
    pub const ALL: &'static [Kind] = &[Kind::Reentrant, Kind::Fair];
}

/// A handle of `h`'s kind on lock `name` of client `c`.
///
/// # Panics
/// When the name is invalid or the client lacks the kind.
pub fn lock(h: &dyn Harness, c: &LockClient, name: impl AsRef<str>) -> Lock {
    kind_lock(h.kind(), c, name)
}

/// A handle of `kind` on lock `name` of client `c` (for code that cannot
/// borrow the harness, such as spawned tasks).
///
/// # Panics
/// When the name is invalid or the client lacks the kind.
pub fn kind_lock(kind: Kind, c: &LockClient, name: impl AsRef<str>) -> Lock {
    match kind {
        Kind::Reentrant => c.lock(name).expect("a reentrant lock"),
        Kind::Fair => c.fair_lock(name).expect("a fair lock").as_lock().clone(),
        Kind::Handoff => c
            .handoff_lock(name)
            .expect("a handoff lock")
            .as_lock()
            .clone(),
    }
}

/// The watchdog timeout the checks use: short, so holding "past several
/// timeouts" takes a few seconds on a real server.
pub const WATCHDOG: Duration = Duration::from_millis(900);

/// The client configuration the checks use.
pub fn config() -> ClientConfig {
    ClientConfig::default().watchdog_timeout(WATCHDOG)
}

/// Whether `c`'s waiters subscribe to unlock notices (the default), rather
/// than poll ([`lock_redis::WaitStrategy::Poll`]): checks of how a waiter
/// learns of an unlock assert the mechanism of the client's strategy.
pub fn subscribes(c: &LockClient) -> bool {
    c.config().wait_strategy.subscribes()
}

/// A new client with [`config`].
pub async fn client(h: &dyn Harness) -> LockClient {
    h.client(config()).await
}

/// A lock name unique to one check run, so checks may share a store.
pub fn unique(prefix: &str) -> String {
    format!("{prefix}-{}", uuid::Uuid::new_v4().simple())
}

/// The key of lock `name` under the harness's layout.
pub fn key(h: &dyn RedisLayout, name: &str) -> String {
    h.layout().lock_key(&lock_name(name))
}

/// The fencing-token counter of lock `name`.
pub fn token_key(h: &dyn RedisLayout, name: &str) -> String {
    h.layout().token_key(&lock_name(name))
}

/// The unlock channel of lock `name`.
pub fn channel(h: &dyn RedisLayout, name: &str) -> String {
    h.layout().channel(&lock_name(name))
}

fn lock_name(name: &str) -> LockName {
    LockName::new(name).expect("check names are valid")
}

/// Keys this check's lock left behind, other than request records (which
/// expire on their own) and the fencing counter (which must never expire).
pub async fn leftover_keys(h: &dyn RedisLayout, name: &str) -> Vec<String> {
    h.keys()
        .await
        .into_iter()
        .filter(|k| k.contains(name))
        .filter(|k| !k.contains("_latch:") && !k.starts_with("redisson_lock_token:"))
        .collect()
}

/// Two clients of one store, and a lock `name` that `a` holds (`held`) with a
/// 20 s lease: long enough that anything quicker was a wake-up, not an
/// expiry.
pub struct Contended {
    /// The holder's client.
    pub a: LockClient,
    /// A second client, to contend from.
    pub b: LockClient,
    /// The lock's (unique) name.
    pub name: String,
    /// `a`'s guard.
    pub held: lock_redis::Guard,
}

/// Sets up [`Contended`] for a lock named after `prefix`.
pub async fn contended(h: &dyn Harness, prefix: &str) -> Contended {
    let a = client(h).await;
    let b = client(h).await;
    let name = unique(prefix);
    let held = lock(h, &a, &name)
        .lock_with_lease(Duration::from_secs(20))
        .await
        .unwrap();
    Contended { a, b, name, held }
}

/// Waits until `waiters` waiters of `c` are parked: subscribed, done with
/// their attempts, asleep until a notice. A notice sent now wakes them.
pub async fn waiting(c: &LockClient, waiters: u64) {
    eventually(Duration::from_secs(3), "waiters parked", || async {
        c.stats().waiting >= waiters
    })
    .await;
}

/// The deadline of a request a check sends through a kind's store
/// operations itself: an hour from now by the wall clock, past any
/// paused-time advance of a check, so only the checks about deadlines meet
/// one.
pub fn request_deadline() -> u64 {
    lock_core::backend::deadline_in(std::time::Duration::from_secs(3600))
}
