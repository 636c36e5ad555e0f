//! One owner's holds of one lock: they end together, every guard of them
//! is told, and a guard of an ended hold never touches a newer one.

use std::time::Duration;

use lock_redis::AcquireOptions;

use super::{client, unique, Harness, WATCHDOG};

/// A lease long enough that a guard reporting loss was told, not timed out.
const LONG: Duration = Duration::from_secs(20);

/// A renewal that finds the lock gone tells the owner's fixed-lease guards
/// too, not only the watchdog guard.
pub async fn loss_is_told_to_every_guard_of_the_owner(h: &dyn Harness) {
    let a = client(h).await;
    let b = client(h).await;
    let name = unique("owner-lost");
    let lock = super::lock(h, &a, &name);
    let watched = lock.lock().await.unwrap();
    let leased = lock
        .acquire(AcquireOptions::new().owner(watched.owner()).lease(LONG))
        .await
        .unwrap()
        .unwrap();
    assert!(super::lock(h, &b, &name).force_unlock().await.unwrap());
    tokio::time::timeout(WATCHDOG, watched.lost())
        .await
        .expect("the watchdog guard is told within one watchdog timeout");
    assert!(
        leased.is_lost(),
        "the fixed-lease guard of the same hold was not told"
    );
    assert!(leased.check().unwrap_err().is_lock_lost());
    assert!(leased.unlock().await.unwrap_err().is_not_held());
}

/// A release answered "not held" tells the owner's other guards.
pub async fn not_held_release_tells_the_other_guards(h: &dyn Harness) {
    let a = client(h).await;
    let b = client(h).await;
    let name = unique("not-held-tells");
    let lock = super::lock(h, &a, &name);
    let first = lock.lock_with_lease(LONG).await.unwrap();
    let second = lock
        .acquire(AcquireOptions::new().owner(first.owner()).lease(LONG))
        .await
        .unwrap()
        .unwrap();
    assert!(super::lock(h, &b, &name).force_unlock().await.unwrap());
    assert!(!first.is_lost(), "nothing has told it yet");
    assert!(second.unlock().await.unwrap_err().is_not_held());
    assert!(
        first.is_lost(),
        "the other guard of the same hold was not told"
    );
    tokio::time::timeout(Duration::from_millis(100), first.lost())
        .await
        .expect("lost() resolves too");
}

/// `unlock_as` that releases the owner's last hold while guards of it
/// remain tells those guards, and stops the renewal.
pub async fn unlock_as_of_the_last_hold_tells_the_guards(h: &dyn Harness) {
    let a = client(h).await;
    let name = unique("unlock-as-tells");
    let lock = super::lock(h, &a, &name);
    let watched = lock.lock().await.unwrap();
    let leased = lock
        .acquire(AcquireOptions::new().owner(watched.owner()).lease(LONG))
        .await
        .unwrap()
        .unwrap();
    assert!(!lock.unlock_as(watched.owner()).await.unwrap(), "one left");
    assert!(!watched.is_lost() && !leased.is_lost());
    assert!(lock.unlock_as(watched.owner()).await.unwrap(), "now free");
    assert!(watched.is_lost(), "the watchdog guard was not told");
    assert!(leased.is_lost(), "the fixed-lease guard was not told");
    assert_eq!(a.stats().watched, 0, "still renewing a released lock");
}

/// The issue sequence: in one owner scope a guard is force-unlocked and
/// told; the owner takes the lock again; dropping the old guard then must
/// neither release the new hold nor stop its renewal.
pub async fn old_guard_dropped_after_reacquire_leaves_the_new_hold(h: &dyn Harness) {
    let a = client(h).await;
    let b = client(h).await;
    let name = unique("generation");
    let lock = super::lock(h, &a, &name);
    let other = super::lock(h, &b, &name);
    a.scope(async {
        let old = lock.lock().await.unwrap();
        assert!(other.force_unlock().await.unwrap());
        tokio::time::timeout(WATCHDOG, old.lost())
            .await
            .expect("the old guard is told");
        let new = lock.lock().await.unwrap();
        assert_eq!(new.owner(), old.owner(), "same scope, same owner");
        drop(old);
        a.settle().await;
        assert_eq!(
            lock.hold_count(new.owner()).await.unwrap(),
            1,
            "the old guard released the new hold"
        );
        tokio::time::sleep(WATCHDOG * 2).await;
        assert!(other.try_lock().await.unwrap().is_none(), "renewal stopped");
        assert!(!new.is_lost());
        assert_eq!(a.stats().watched, 1);
        new.unlock().await.unwrap();
    })
    .await;
    assert!(!lock.is_locked().await.unwrap());
}

/// The same with a fixed lease that ran out: the old guard's hold ended, so
/// dropping it must not release the owner's new hold.
pub async fn expired_guard_dropped_after_reacquire_leaves_the_new_hold(h: &dyn Harness) {
    let a = client(h).await;
    let b = client(h).await;
    let name = unique("expired-generation");
    let lock = super::lock(h, &a, &name);
    let lease = Duration::from_millis(200);
    a.scope(async {
        let old = lock.lock_with_lease(lease).await.unwrap();
        old.lost().await;
        tokio::time::sleep(lease).await;
        let new = lock.lock_with_lease(LONG).await.unwrap();
        drop(old);
        a.settle().await;
        assert_eq!(
            lock.hold_count(new.owner()).await.unwrap(),
            1,
            "the expired guard released the new hold"
        );
        assert!(super::lock(h, &b, &name)
            .try_lock()
            .await
            .unwrap()
            .is_none());
        new.unlock().await.unwrap();
    })
    .await;
}
