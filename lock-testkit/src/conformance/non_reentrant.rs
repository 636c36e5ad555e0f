//! Non-reentrant locks ([`lock_redis::LockClient::non_reentrant_lock`]),
//! Redisson's `RedissonNonReentrantLock`: the reentrant lock's layout, but
//! an owner asking again for a lock it holds is refused at once
//! ([`LockError::ReentryRefused`]), with its first hold untouched. Part of
//! the `reentrant` row of the suite's table.

use std::time::Duration;

use lock_redis::{AcquireOptions, LockError};

use super::{client, key, unique, Harness, RedisLayout};

fn refused(result: lock_redis::Result<impl std::fmt::Debug>, name: &str) {
    match result {
        Err(LockError::ReentryRefused { name: refused }) => assert_eq!(refused, name),
        other => panic!("a re-acquisition by the holder was not refused: {other:?}"),
    }
}

/// Every way of acquiring is refused to the holder, at once (a wait would
/// wait for itself), and leaves its one hold as it was.
pub async fn the_holder_is_refused_and_keeps_its_one_hold(h: &dyn RedisLayout) {
    let c = client(h).await;
    let name = unique("non-reentrant-again");
    let lock = c.non_reentrant_lock(&name).unwrap();
    let guard = lock.lock().await.unwrap();
    let owner = guard.owner();
    let wait = Duration::from_secs(30);
    let started = tokio::time::Instant::now();
    refused(lock.lock_as(owner).await, &name);
    refused(
        lock.acquire(AcquireOptions::new().owner(owner).no_wait())
            .await,
        &name,
    );
    refused(
        lock.acquire(AcquireOptions::new().owner(owner).wait(wait))
            .await,
        &name,
    );
    refused(owner.scope(lock.try_lock_for(wait)).await, &name);
    assert!(started.elapsed() < wait, "a refusal does not wait");
    assert_eq!(
        h.hash(&key(h, &name)).await,
        [(owner.field(), 1)],
        "one hold, as Redisson keeps it"
    );
    assert_eq!(lock.hold_count(owner).await.unwrap(), 1);
    assert!(!guard.is_lost());
    guard.unlock().await.unwrap();
    assert!(!lock.is_locked().await.unwrap());
}

/// Other owners are not refused: they wait, and the unlock hands the lock
/// on as a reentrant lock's does.
pub async fn other_owners_wait_for_the_unlock(h: &dyn Harness) {
    let a = client(h).await;
    let b = client(h).await;
    let name = unique("non-reentrant-wait");
    let ours = a.non_reentrant_lock(&name).unwrap();
    let theirs = b.non_reentrant_lock(&name).unwrap();
    let guard = ours.lock().await.unwrap();
    assert!(theirs
        .try_lock_for(Duration::from_millis(100))
        .await
        .unwrap()
        .is_none());
    // Another owner of the same client is no re-entry either.
    assert!(ours.try_lock().await.unwrap().is_none());
    let waiter = tokio::spawn(async move { theirs.lock().await.unwrap() });
    tokio::time::sleep(Duration::from_millis(50)).await;
    guard.unlock().await.unwrap();
    let next = tokio::time::timeout(Duration::from_secs(10), waiter)
        .await
        .expect("the unlock wakes the waiter")
        .unwrap();
    next.unlock().await.unwrap();
}

/// Same name, same key: a reentrant (or Java `RLock`) hold and a
/// non-reentrant one exclude each other, and a non-reentrant request of
/// the owner of a reentrant hold is refused (the same hash field).
pub async fn reentrant_and_non_reentrant_locks_of_a_name_are_one_lock(h: &dyn RedisLayout) {
    let a = client(h).await;
    let b = client(h).await;
    let name = unique("non-reentrant-mixed");
    let reentrant = a.lock(&name).unwrap();
    let guard = reentrant.lock().await.unwrap();
    let plain = b.non_reentrant_lock(&name).unwrap();
    assert!(plain.try_lock().await.unwrap().is_none());
    let same_owner = a.non_reentrant_lock(&name).unwrap();
    refused(same_owner.lock_as(guard.owner()).await, &name);
    guard.unlock().await.unwrap();

    let held = plain.lock().await.unwrap();
    assert!(b.lock(&name).unwrap().try_lock().await.unwrap().is_none());
    assert_eq!(h.hash(&key(h, &name)).await, [(held.owner().field(), 1)]);
    held.unlock().await.unwrap();
    assert!(!plain.is_locked().await.unwrap());
}
