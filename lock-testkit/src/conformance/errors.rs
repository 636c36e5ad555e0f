//! Bad input and misuse: typed errors, nothing lost, nothing overwritten.

use std::time::Duration;

use lock_redis::{AcquireOptions, LockError, MAX_LEASE, MAX_NAME_LEN};

use super::{client, key, leftover_keys, token_key, unique, Harness, RedisLayout};

/// Releasing as an owner that does not hold the lock fails with NotHeld and
/// changes nothing.
pub async fn unlock_by_non_owner_is_not_held(h: &dyn Harness) {
    let a = client(h).await;
    let name = unique("non-owner");
    let lock = super::lock(h, &a, &name);
    let g = lock.lock().await.unwrap();
    let stranger = a.new_owner();
    let err = lock.unlock_as(stranger).await.unwrap_err();
    assert!(err.is_not_held(), "{err:?}");
    assert_eq!(lock.hold_count(g.owner()).await.unwrap(), 1);
    let free = super::lock(h, &a, unique("never-held"));
    assert!(free.unlock_as(stranger).await.unwrap_err().is_not_held());
    assert!(
        lock.unlock_as(g.owner()).await.unwrap(),
        "last hold released"
    );
    assert!(g.unlock().await.unwrap_err().is_not_held());
}

/// Unlocking after the lease ran out fails with NotHeld.
pub async fn unlock_after_lease_ran_out_is_not_held(h: &dyn Harness) {
    let a = client(h).await;
    let g = super::lock(h, &a, unique("ran-out"))
        .lock_with_lease(Duration::from_millis(100))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let err = g.unlock().await.unwrap_err();
    assert!(err.is_not_held(), "{err:?}");
}

/// Empty names, zero or absurd leases are rejected before any I/O.
pub async fn invalid_arguments_fail_before_io(h: &dyn RedisLayout) {
    let a = client(h).await;
    assert!(a.lock("").unwrap_err().is_invalid_argument());
    assert!(a
        .lock("x".repeat(MAX_NAME_LEN + 1))
        .unwrap_err()
        .is_invalid_argument());
    let name = unique("args");
    let lock = super::lock(h, &a, &name);
    for lease in [
        Duration::ZERO,
        MAX_LEASE + Duration::from_secs(1),
        Duration::MAX,
    ] {
        let err = lock.lock_with_lease(lease).await.unwrap_err();
        assert!(err.is_invalid_argument(), "{lease:?}: {err:?}");
        let err = lock
            .try_lock_for_with_lease(Duration::ZERO, lease)
            .await
            .unwrap_err();
        assert!(err.is_invalid_argument());
    }
    assert_eq!(a.stats().tries, 0, "nothing was sent");
    assert_eq!(leftover_keys(h, &name).await, Vec::<String>::new());
}

/// Acquiring as an owner of another client is rejected.
pub async fn foreign_owner_is_rejected(h: &dyn Harness) {
    let a = client(h).await;
    let b = client(h).await;
    let lock = super::lock(h, &a, unique("foreign"));
    let err = lock.lock_as(b.new_owner()).await.unwrap_err();
    assert!(err.is_invalid_argument(), "{err:?}");
    let err = lock
        .acquire(AcquireOptions::new().owner(b.new_owner()).no_wait())
        .await
        .unwrap_err();
    assert!(err.is_invalid_argument());
    assert!(!lock.is_locked().await.unwrap());
}

/// A non-hash value at the lock key is reported and never overwritten.
pub async fn wrong_type_is_reported_and_left_untouched(h: &dyn RedisLayout) {
    let a = client(h).await;
    let name = unique("wrongtype");
    let k = key(h, &name);
    h.set_string(&k, "precious").await;
    let lock = super::lock(h, &a, &name);
    let is_wrong_type = |e: LockError| assert!(e.is_wrong_type(), "{e:?}");
    is_wrong_type(lock.try_lock().await.unwrap_err());
    is_wrong_type(
        lock.lock_with_lease(Duration::from_secs(1))
            .await
            .unwrap_err(),
    );
    is_wrong_type(lock.force_unlock().await.unwrap_err());
    is_wrong_type(lock.info().await.unwrap_err());
    is_wrong_type(lock.unlock_as(a.new_owner()).await.unwrap_err());
    assert_eq!(h.get_string(&k).await.as_deref(), Some("precious"));
    assert_eq!(a.stats().subscriptions_active, 0);
}

/// A fencing-token counter that does not hold an integer fails a fenced
/// acquisition with a typed error naming the counter, before anything is
/// written: no hold without a guard (first hold or re-entry), no queue
/// entry, the counter left as it was (issue 10, item 7).
pub async fn bad_token_counter_fails_before_any_write(h: &dyn RedisLayout) {
    let a = client(h).await;
    let name = unique("bad-token");
    let counter = token_key(h, &name);
    h.set_string(&counter, "not a number").await;
    let lock = super::lock(h, &a, &name);
    let is_bad_counter = |e: LockError| {
        assert!(
            matches!(&e, LockError::WrongType { key } if *key == counter),
            "{e:?}"
        );
    };
    let fenced = AcquireOptions::new().fenced();
    is_bad_counter(lock.acquire(fenced.clone().no_wait()).await.unwrap_err());
    is_bad_counter(
        lock.acquire(fenced.clone().wait(Duration::from_millis(300)))
            .await
            .unwrap_err(),
    );
    assert!(!lock.is_locked().await.unwrap(), "a hold without a guard");
    assert_eq!(leftover_keys(h, &name).await, Vec::<String>::new());

    // A fenced re-entry fails the same way and leaves the first hold alone.
    let g = lock.lock().await.unwrap();
    is_bad_counter(
        lock.acquire(fenced.owner(g.owner()).no_wait())
            .await
            .unwrap_err(),
    );
    assert_eq!(lock.hold_count(g.owner()).await.unwrap(), 1);
    g.unlock().await.unwrap();
    assert!(!lock.is_locked().await.unwrap());
    assert_eq!(
        h.get_string(&counter).await.as_deref(),
        Some("not a number")
    );
}

/// After close, operations fail with Closed.
pub async fn closed_client_rejects_operations(h: &dyn Harness) {
    let a = client(h).await;
    let lock = super::lock(h, &a, unique("closed"));
    a.close().await;
    assert!(a.is_closed());
    assert!(matches!(lock.lock().await, Err(LockError::Closed)));
    assert!(matches!(lock.try_lock().await, Err(LockError::Closed)));
    assert!(matches!(lock.is_locked().await, Err(LockError::Closed)));
}
