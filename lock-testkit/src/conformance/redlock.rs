//! RedLock: one lock over five independent stores, held by a majority.
//! Run with the multi-lock's checks by
//! [`multi_conformance_tests!`](crate::multi_conformance_tests).

use std::time::Duration;

use lock_redis::{AcquireOptions, Lock, RedGuard, RedLock};
use tokio::time::Instant;

use super::multi::{clients, locked, on_each, RedisStores, Stores, STORES};
use super::{channel, eventually, leftover_keys, unique, WATCHDOG};
use crate::ExclusionChecker;

/// A RedLock over five stores, two of them held by someone else, takes
/// the other three: a majority.
pub async fn redlock_holds_a_majority_when_a_minority_is_busy(stores: &Stores) {
    let ours = clients(stores, STORES).await;
    let others = clients(stores, STORES).await;
    let name = unique("red-minority");
    let theirs = on_each(&others, &name);
    let busy = [
        theirs[0].lock().await.unwrap(),
        theirs[1].lock().await.unwrap(),
    ];
    let red = RedLock::new(on_each(&ours, &name)).unwrap();
    assert_eq!(red.quorum(), 3);
    let guard = red
        .try_lock_for(Duration::from_secs(1))
        .await
        .unwrap()
        .expect("a majority is free");
    assert_eq!(guard.guards().len(), 3);
    assert_eq!(guard.held(), 3);
    for lock in &theirs[2..] {
        assert!(lock.try_lock().await.unwrap().is_none());
    }
    guard.unlock().await.unwrap();
    for lock in &theirs[2..] {
        assert!(!locked(lock).await);
    }
    for guard in busy {
        assert!(!guard.is_lost());
        guard.unlock().await.unwrap();
    }
}

/// Without a free majority a RedLock times out holding nothing.
pub async fn redlock_without_a_majority_takes_nothing(stores: &Stores) {
    let ours = clients(stores, STORES).await;
    let others = clients(stores, STORES).await;
    let name = unique("red-none");
    let theirs = on_each(&others, &name);
    let mut busy = Vec::new();
    for lock in &theirs[..3] {
        busy.push(lock.lock().await.unwrap());
    }
    let red = RedLock::new(on_each(&ours, &name)).unwrap();
    assert!(red.try_lock().await.unwrap().is_none());
    let wait = Duration::from_millis(300);
    let start = Instant::now();
    assert!(red.try_lock_for(wait).await.unwrap().is_none());
    let waited = start.elapsed();
    assert!(waited >= wait && waited < wait * 3, "waited {waited:?}");
    for lock in &theirs[3..] {
        assert!(!locked(lock).await, "released");
    }
    for guard in busy {
        guard.unlock().await.unwrap();
    }
}

/// Contending RedLocks of separate processes take turns, never overlap,
/// and do not stay split between them.
pub async fn redlocks_exclude_each_other_and_do_not_split(stores: &Stores) {
    let name = unique("red-contend");
    let checker = ExclusionChecker::new();
    let mut tasks = Vec::new();
    for process in 0..3 {
        let red = RedLock::new(on_each(&clients(stores, STORES).await, &name)).unwrap();
        let checker = checker.clone();
        tasks.push(tokio::spawn(async move {
            for round in 0..3 {
                let guard = red.lock().await.unwrap();
                let section = checker.enter(format!("{process}/{round}"), None);
                tokio::time::sleep(Duration::from_millis(5)).await;
                drop(section);
                guard.unlock().await.unwrap();
            }
        }));
    }
    tokio::time::timeout(Duration::from_secs(3), futures::future::join_all(tasks))
        .await
        .expect("the contenders finished")
        .into_iter()
        .for_each(|r| r.unwrap());
    assert_eq!(checker.violations(), Vec::<String>::new());
}

/// The RedGuard stays held while a majority of members is, and is lost
/// once it is not.
pub async fn redguard_is_lost_only_without_a_majority(stores: &Stores) {
    let ours = clients(stores, STORES).await;
    let others = clients(stores, STORES).await;
    let name = unique("red-lost");
    let red = RedLock::new(on_each(&ours, &name)).unwrap();
    let guard = hold_every_member(&red).await;
    let theirs = on_each(&others, &name);
    for lock in &theirs[..2] {
        assert!(lock.force_unlock().await.unwrap());
    }
    tokio::time::sleep(WATCHDOG * 2).await;
    assert_eq!(guard.held(), 3);
    assert!(!guard.is_lost());
    guard.check().unwrap();
    assert!(theirs[2].force_unlock().await.unwrap());
    tokio::time::timeout(WATCHDOG * 2, guard.lost())
        .await
        .expect("the loss of the majority is reported");
    assert!(guard.check().unwrap_err().is_lock_lost());
    assert!(guard.unlock().await.is_err());
}

/// Each member's watchdog keeps it while the guard lives.
pub async fn redlock_watchdog_renews_every_member(stores: &Stores) {
    let ours = clients(stores, STORES).await;
    let name = unique("red-renew");
    let red = RedLock::new(on_each(&ours, &name)).unwrap();
    let guard = red.lock().await.unwrap();
    tokio::time::sleep(WATCHDOG * 3).await;
    assert!(!guard.is_lost());
    let owners: Vec<_> = guard.guards().iter().map(|member| member.owner()).collect();
    assert!(guard.guards().iter().all(|member| !member.is_lost()));
    // A quorum is taken, not every member (on a loaded machine a member
    // may answer after the attempt's share of the lease): every member
    // taken is still ours.
    let mut held = 0;
    for lock in red.locks() {
        let info = lock.info().await.unwrap();
        let ours = info.holders.iter().filter_map(|h| h.owner());
        let count = ours.filter(|o| owners.contains(o)).count();
        assert!(count <= 1, "{info:?}");
        held += count;
    }
    assert_eq!(held, owners.len());
    assert!(held >= red.quorum());
    guard.unlock().await.unwrap();
    for lock in red.locks() {
        assert!(!locked(lock).await);
    }
}

/// A RedLock dropped while waiting, with a member taken, leaves nothing
/// held.
pub async fn cancelled_redlock_acquisition_leaves_nothing_held(stores: &RedisStores) {
    let ours = clients(stores, STORES).await;
    let others = clients(stores, STORES).await;
    let name = unique("red-cancel");
    let theirs = on_each(&others, &name);
    // Members 1 to 3 are busy: a waiting round takes member 0 (the first
    // in order) and waits on member 1 while holding it.
    let mut busy = Vec::new();
    for lock in &theirs[1..4] {
        busy.push(lock.lock().await.unwrap());
    }
    let red = RedLock::new(on_each(&ours, &name)).unwrap();
    let task = tokio::spawn(async move { red.lock().await.map(drop) });
    eventually(Duration::from_secs(2), "the first member taken", || async {
        locked(&theirs[0]).await
    })
    .await;
    task.abort();
    assert!(task.await.unwrap_err().is_cancelled());
    eventually(Duration::from_secs(2), "released", || async {
        !locked(&theirs[0]).await && !locked(&theirs[4]).await
    })
    .await;
    for (i, store) in stores.iter().enumerate().take(STORES) {
        eventually(Duration::from_secs(2), "unsubscribed", || async {
            store.subscribers(&channel(&**store, &name)).await == 0
        })
        .await;
        if i == 0 || i == 4 {
            assert!(leftover_keys(&**store, &name).await.is_empty());
        }
    }
    for guard in busy {
        guard.unlock().await.unwrap();
    }
}

/// With a fixed lease every member expires, and the guard says so first.
pub async fn redlock_with_lease_expires(stores: &Stores) {
    let ours = clients(stores, STORES).await;
    let name = unique("red-lease");
    let red = RedLock::new(on_each(&ours, &name)).unwrap();
    let lease = Duration::from_millis(300);
    let guard = red.lock_with_lease(lease).await.unwrap();
    assert!(guard.lease_deadline() <= Instant::now() + lease);
    tokio::time::timeout(lease * 2, guard.lost())
        .await
        .expect("lost with its lease");
    tokio::time::sleep(Duration::from_millis(50)).await;
    for lock in red.locks() {
        assert!(!locked(lock).await);
    }
    drop(guard);
}

/// Bad input is refused before any I/O.
pub async fn redlock_refuses_bad_input(stores: &RedisStores) {
    let ours = clients(stores, 2).await;
    let name = unique("red-bad");
    assert!(RedLock::new(Vec::<Lock>::new())
        .unwrap_err()
        .is_invalid_argument());
    let one_client = [
        ours[0].lock(&name).unwrap(),
        ours[0].lock(unique("other")).unwrap(),
    ];
    assert!(RedLock::new(one_client).unwrap_err().is_invalid_argument());
    let red = RedLock::new(on_each(&ours, &name)).unwrap();
    let foreign = AcquireOptions::new().owner(ours[0].new_owner());
    assert!(red
        .acquire(foreign)
        .await
        .unwrap_err()
        .is_invalid_argument());
    let zero = red.lock_with_lease(Duration::ZERO).await.unwrap_err();
    assert!(zero.is_invalid_argument());
    for store in &stores[..2] {
        assert!(leftover_keys(&**store, &name).await.is_empty());
    }
}

/// A hold of every member of an uncontended `red`, for checks that then
/// take chosen members away. A RedLock settles for a quorum once its
/// stragglers' grace has passed, and on a loaded machine a member can
/// answer after it, so this tries again (up to 20 times) until all are held.
///
/// # Panics
/// When no acquisition took every member.
pub async fn hold_every_member(red: &RedLock) -> RedGuard {
    let members = red.locks().len();
    for _ in 0..20 {
        let guard = red.lock().await.unwrap();
        if guard.held() == members {
            return guard;
        }
        guard.unlock().await.unwrap();
    }
    panic!("no acquisition took all {members} members in 20 tries");
}
