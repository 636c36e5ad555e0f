//! Multi-lock: several locks, of several independent stores, held as one
//! (the RedLock's checks are in `redlock.rs`, on the same stores).
//!
//! Each check takes at least [`STORES`] independent stores (in-memory
//! servers, or redis-servers), each reached through clients of its own, as
//! [`MultiLock`] and [`RedLock`] are used in production: [`Stores`] (any
//! store: a behaviour check) or, for the 6 of the 18 checks that look at
//! keys or subscriptions, [`RedisStores`]. Run them all with
//! [`multi_conformance_tests!`](crate::multi_conformance_tests), given Redis
//! stores.

use std::sync::Arc;
use std::time::Duration;

use lock_redis::{AcquireOptions, Lock, LockClient, MultiLock, RedLock};
use tokio::time::Instant;

use super::{channel, config, eventually, leftover_keys, unique, Harness, RedisLayout, WATCHDOG};
use crate::ExclusionChecker;

/// Independent stores, one harness each: what the behaviour checks take.
pub type Stores = [Arc<dyn Harness>];

/// Independent Redis stores: what the checks that look at keys or
/// subscriptions take ([`RedisLayout`]).
pub type RedisStores = [Arc<dyn RedisLayout>];

/// Implementation detail of
/// [`multi_conformance_tests!`](crate::multi_conformance_tests): the
/// stores as a check takes them, picked by the check's parameter type.
pub trait StoresArg<'a> {
    /// `redis` or `any`: the same stores, seen as Redis stores or as any.
    fn pick(redis: &'a RedisStores, any: &'a Stores) -> Self;
}

impl<'a> StoresArg<'a> for &'a Stores {
    fn pick(_: &'a RedisStores, any: &'a Stores) -> Self {
        any
    }
}

impl<'a> StoresArg<'a> for &'a RedisStores {
    fn pick(redis: &'a RedisStores, _: &'a Stores) -> Self {
        redis
    }
}

/// Redis stores `redis` as stores of any kind, for the behaviour checks.
pub fn as_any(redis: &RedisStores) -> Vec<Arc<dyn Harness>> {
    redis
        .iter()
        .map(|store| Arc::clone(store) as Arc<dyn Harness>)
        .collect()
}

/// How many stores the checks need: a RedLock over five masters.
pub const STORES: usize = 5;

/// A client on each of the first `n` stores.
pub(super) async fn clients<S: Harness + ?Sized>(stores: &[Arc<S>], n: usize) -> Vec<LockClient> {
    assert!(stores.len() >= n, "the checks need {n} stores");
    let mut out = Vec::with_capacity(n);
    for store in &stores[..n] {
        out.push(store.client(config()).await);
    }
    out
}

/// Lock `name` on each client.
pub(super) fn on_each(clients: &[LockClient], name: &str) -> Vec<Lock> {
    clients
        .iter()
        .map(|c| c.lock(name).expect("a lock"))
        .collect()
}

pub(super) async fn locked(lock: &Lock) -> bool {
    lock.is_locked().await.expect("is_locked")
}

/// Three names that sort in this order, and a multi-lock over them, one
/// per store (each through its own client).
fn abc(clients: &[LockClient], prefix: &str) -> (Vec<String>, MultiLock) {
    let names: Vec<String> = ["a", "b", "c"]
        .iter()
        .map(|s| unique(&format!("{prefix}-{s}")))
        .collect();
    // Given out of order: the multi-lock sorts them.
    let locks = [2, 0, 1].map(|i| clients[i].lock(&names[i]).expect("a lock"));
    (names, MultiLock::new(locks).expect("a multi-lock"))
}

/// A multi-lock over locks of three stores takes every one (in name
/// order); unlocking frees them all and leaves no key behind.
pub async fn multi_lock_takes_every_member_and_unlock_frees_them(stores: &RedisStores) {
    let ours = clients(stores, 3).await;
    let others = clients(stores, 3).await;
    let (names, multi) = abc(&ours, "multi-all");
    let order: Vec<&str> = multi.locks().iter().map(|l| l.name().as_str()).collect();
    assert_eq!(order, names.iter().map(String::as_str).collect::<Vec<_>>());
    let guard = multi.lock().await.unwrap();
    assert_eq!(guard.guards().len(), 3);
    for (i, name) in names.iter().enumerate() {
        let theirs = others[i].lock(name).unwrap();
        assert!(theirs.try_lock().await.unwrap().is_none(), "{name} is held");
    }
    guard.unlock().await.unwrap();
    for (i, name) in names.iter().enumerate() {
        assert!(!locked(&others[i].lock(name).unwrap()).await);
        assert!(leftover_keys(&*stores[i], name).await.is_empty());
    }
}

/// Members of different kinds (a fair lock, a plain one) are taken and
/// released together, each by its own protocol.
pub async fn multi_lock_mixes_kinds(stores: &RedisStores) {
    let ours = clients(stores, 2).await;
    let others = clients(stores, 2).await;
    let (fair, plain) = (unique("multi-kinds-a"), unique("multi-kinds-b"));
    let multi = MultiLock::new([
        ours[0].fair_lock(&fair).unwrap().as_lock().clone(),
        ours[1].lock(&plain).unwrap(),
    ])
    .unwrap();
    let guard = multi.lock().await.unwrap();
    let theirs_fair = others[0].fair_lock(&fair).unwrap();
    assert!(theirs_fair.try_lock().await.unwrap().is_none());
    assert!(others[1]
        .lock(&plain)
        .unwrap()
        .try_lock()
        .await
        .unwrap()
        .is_none());
    guard.unlock().await.unwrap();
    assert!(!theirs_fair.is_locked().await.unwrap());
    assert!(!locked(&others[1].lock(&plain).unwrap()).await);
    assert!(leftover_keys(&*stores[0], &fair).await.is_empty());
}

/// When one member stays held by someone else, the multi-lock times out
/// holding nothing: the members it took are released.
pub async fn multi_lock_is_all_or_nothing(stores: &Stores) {
    let ours = clients(stores, 3).await;
    let others = clients(stores, 3).await;
    let (names, multi) = abc(&ours, "multi-none");
    let held = others[1].lock(&names[1]).unwrap().lock().await.unwrap();
    assert!(multi.try_lock().await.unwrap().is_none());
    let start = Instant::now();
    let wait = Duration::from_millis(300);
    assert!(multi.try_lock_for(wait).await.unwrap().is_none());
    let waited = start.elapsed();
    assert!(waited >= wait && waited < wait * 3, "waited {waited:?}");
    for i in [0, 2] {
        assert!(
            !locked(&others[i].lock(&names[i]).unwrap()).await,
            "{} was released",
            names[i]
        );
    }
    held.unlock().await.unwrap();
}

/// A multi-lock waits for a held member within its budget, and takes
/// every member once it is released.
pub async fn multi_lock_waits_for_a_held_member(stores: &Stores) {
    let ours = clients(stores, 3).await;
    let others = clients(stores, 3).await;
    let (names, multi) = abc(&ours, "multi-wait");
    let held = others[2].lock(&names[2]).unwrap().lock().await.unwrap();
    let release = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        held.unlock().await.unwrap();
    });
    let start = Instant::now();
    let guard = multi
        .try_lock_for(Duration::from_secs(2))
        .await
        .unwrap()
        .expect("taken once the member is released");
    assert!(start.elapsed() >= Duration::from_millis(200));
    release.await.unwrap();
    guard.unlock().await.unwrap();
}

/// Two processes' multi-locks over the same locks, listed in opposite
/// orders, take turns without deadlock and never overlap.
pub async fn multi_locks_listed_in_opposite_orders_do_not_deadlock(stores: &Stores) {
    let x = unique("multi-order-x");
    let y = unique("multi-order-y");
    let checker = ExclusionChecker::new();
    let mut tasks = Vec::new();
    for process in 0..2 {
        let cs = clients(stores, 2).await;
        let (lx, ly) = (cs[0].lock(&x).unwrap(), cs[1].lock(&y).unwrap());
        let multi = if process == 0 {
            MultiLock::new([lx, ly])
        } else {
            MultiLock::new([ly, lx])
        }
        .unwrap();
        let checker = checker.clone();
        tasks.push(tokio::spawn(async move {
            for round in 0..5 {
                let guard = multi.lock().await.unwrap();
                let section = checker.enter(format!("{process}/{round}"), None);
                tokio::time::sleep(Duration::from_millis(5)).await;
                drop(section);
                guard.unlock().await.unwrap();
            }
        }));
    }
    tokio::time::timeout(Duration::from_secs(3), futures::future::join_all(tasks))
        .await
        .expect("no deadlock")
        .into_iter()
        .for_each(|r| r.unwrap());
    assert_eq!(checker.violations(), Vec::<String>::new());
}

/// A multi-lock dropped while waiting for its last member, the others
/// taken, leaves nothing held, no subscription and no key behind.
pub async fn cancelled_half_taken_multi_lock_leaves_nothing_held(stores: &RedisStores) {
    let ours = clients(stores, 3).await;
    let others = clients(stores, 3).await;
    let (names, multi) = abc(&ours, "multi-cancel");
    let held = others[2].lock(&names[2]).unwrap().lock().await.unwrap();
    let task = tokio::spawn(async move { multi.lock().await.map(drop) });
    let (a, b) = (
        others[0].lock(&names[0]).unwrap(),
        others[1].lock(&names[1]).unwrap(),
    );
    eventually(
        Duration::from_secs(2),
        "the first two members taken",
        || async { locked(&a).await && locked(&b).await },
    )
    .await;
    eventually(Duration::from_secs(2), "waiting on the third", || async {
        stores[2]
            .subscribers(&channel(&*stores[2], &names[2]))
            .await
            == 1
    })
    .await;
    task.abort();
    assert!(task.await.unwrap_err().is_cancelled());
    eventually(
        Duration::from_secs(2),
        "the taken members released",
        || async { !locked(&a).await && !locked(&b).await },
    )
    .await;
    eventually(Duration::from_secs(2), "unsubscribed", || async {
        stores[2]
            .subscribers(&channel(&*stores[2], &names[2]))
            .await
            == 0
    })
    .await;
    for i in 0..2 {
        assert!(leftover_keys(&*stores[i], &names[i]).await.is_empty());
    }
    assert!(!held.is_lost());
    held.unlock().await.unwrap();
}

/// Polls `fut` up to `n` times (yielding between polls), then drops it.
async fn poll_then_drop<F: std::future::Future>(fut: F, n: usize) -> Option<F::Output> {
    let mut fut = std::pin::pin!(fut);
    for _ in 0..n {
        if let std::task::Poll::Ready(out) = futures::poll!(fut.as_mut()) {
            return Some(out);
        }
        tokio::task::yield_now().await;
    }
    None
}

/// Multi-lock and RedLock acquisitions dropped at any await point hold
/// nothing once what they left in flight has settled.
pub async fn acquisitions_dropped_at_any_point_leave_nothing_held(stores: &Stores) {
    let ours = clients(stores, STORES).await;
    let others = clients(stores, STORES).await;
    let (names, multi) = abc(&ours, "multi-drop");
    let red_name = unique("red-drop");
    let red = RedLock::new(on_each(&ours, &red_name)).unwrap();
    for polls in 0..12 {
        drop(poll_then_drop(multi.lock(), polls).await);
        drop(poll_then_drop(red.lock(), polls).await);
        for client in &ours {
            tokio::time::timeout(WATCHDOG / 3, client.settle())
                .await
                .expect("settled well before a lease could expire");
        }
        for (i, name) in names.iter().enumerate() {
            assert!(
                !locked(&others[i].lock(name).unwrap()).await,
                "{name} after {polls} polls"
            );
        }
        for lock in on_each(&others, &red_name) {
            assert!(!locked(&lock).await, "RedLock member after {polls} polls");
        }
    }
}

/// The multi-guard is lost when any one member is lost.
pub async fn multi_guard_is_lost_when_any_member_is_lost(stores: &Stores) {
    let ours = clients(stores, 3).await;
    let others = clients(stores, 3).await;
    let (names, multi) = abc(&ours, "multi-lost");
    let guard = multi.lock().await.unwrap();
    assert!(!guard.is_lost());
    assert!(others[1]
        .lock(&names[1])
        .unwrap()
        .force_unlock()
        .await
        .unwrap());
    tokio::time::timeout(WATCHDOG * 2, guard.lost())
        .await
        .expect("the loss of one member is reported");
    assert!(guard.is_lost());
    assert!(guard.check().unwrap_err().is_lock_lost());
    assert!(guard.unlock().await.unwrap_err().is_not_held());
    for i in [0, 2] {
        assert!(!locked(&others[i].lock(&names[i]).unwrap()).await);
    }
}

/// With a fixed lease, every member expires and the guard says so.
pub async fn multi_lock_with_lease_expires_every_member(stores: &Stores) {
    let ours = clients(stores, 3).await;
    let others = clients(stores, 3).await;
    let (names, multi) = abc(&ours, "multi-lease");
    let lease = Duration::from_millis(300);
    let guard = multi.lock_with_lease(lease).await.unwrap();
    assert!(guard.lease_deadline() <= Instant::now() + lease);
    tokio::time::timeout(lease * 2, guard.lost())
        .await
        .expect("lost with its lease");
    tokio::time::sleep(Duration::from_millis(50)).await;
    for (i, name) in names.iter().enumerate() {
        assert!(
            !locked(&others[i].lock(name).unwrap()).await,
            "{name} expired"
        );
    }
    drop(guard);
}

/// Bad input is refused before any I/O.
pub async fn multi_lock_refuses_bad_input(stores: &RedisStores) {
    let ours = clients(stores, 2).await;
    let name = unique("multi-bad");
    assert!(MultiLock::new(Vec::<Lock>::new())
        .unwrap_err()
        .is_invalid_argument());
    let twice = [
        ours[0].lock(&name).unwrap(),
        ours[0].fair_lock(&name).unwrap().as_lock().clone(),
    ];
    assert!(MultiLock::new(twice).unwrap_err().is_invalid_argument());
    let multi = MultiLock::new(on_each(&ours, &name)).unwrap();
    let foreign = AcquireOptions::new().owner(ours[0].new_owner());
    assert!(multi
        .acquire(foreign)
        .await
        .unwrap_err()
        .is_invalid_argument());
    let zero = multi.lock_with_lease(Duration::ZERO).await.unwrap_err();
    assert!(zero.is_invalid_argument());
    for (i, store) in stores[..2].iter().enumerate() {
        assert!(leftover_keys(&**store, &name).await.is_empty(), "store {i}");
    }
}

/// Runs every multi-lock and RedLock check as its own test, given an
/// async function returning at least [`STORES`] independent Redis stores
/// (`Vec<Arc<dyn RedisLayout>>`; the behaviour checks see them as any
/// stores):
///
/// ```text
/// lock_testkit::multi_conformance_tests!(#[tokio::test(start_paused = true)] stores = five_stores);
/// ```
#[macro_export]
macro_rules! multi_conformance_tests {
    ($(#[$attr:meta])* stores = $make:path) => {
        $crate::__multi_each! {
            [$(#[$attr])*] $make;
            multi::multi_lock_takes_every_member_and_unlock_frees_them,
            multi::multi_lock_is_all_or_nothing,
            multi::multi_lock_mixes_kinds,
            multi::multi_lock_waits_for_a_held_member,
            multi::multi_locks_listed_in_opposite_orders_do_not_deadlock,
            multi::cancelled_half_taken_multi_lock_leaves_nothing_held,
            multi::acquisitions_dropped_at_any_point_leave_nothing_held,
            multi::multi_guard_is_lost_when_any_member_is_lost,
            multi::multi_lock_with_lease_expires_every_member,
            multi::multi_lock_refuses_bad_input,
            redlock::redlock_holds_a_majority_when_a_minority_is_busy,
            redlock::redlock_without_a_majority_takes_nothing,
            redlock::redlocks_exclude_each_other_and_do_not_split,
            redlock::redguard_is_lost_only_without_a_majority,
            redlock::redlock_watchdog_renews_every_member,
            redlock::cancelled_redlock_acquisition_leaves_nothing_held,
            redlock::redlock_with_lease_expires,
            redlock::redlock_refuses_bad_input,
        }
    };
}

/// Implementation detail of [`multi_conformance_tests!`](crate::multi_conformance_tests).
#[doc(hidden)]
#[macro_export]
macro_rules! __multi_each {
    ([$($attrs:tt)*] $make:path; $group:ident :: $check:ident, $($rest:tt)*) => {
        $($attrs)*
        async fn $check() {
            let redis = $make().await;
            let any = $crate::conformance::multi::as_any(&redis);
            $crate::conformance::$group::$check(
                $crate::conformance::multi::StoresArg::pick(&redis, &any),
            )
            .await;
        }
        $crate::__multi_each! { [$($attrs)*] $make; $($rest)* }
    };
    ([$($attrs:tt)*] $make:path;) => {};
}
