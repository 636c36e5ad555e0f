//! Lean locks ([`lock_redis::LockClient::lean_lock`]): the redis.io
//! single-instance pattern, one string key holding the holder's token, as
//! go-redsync, redis-py, node-redlock and rslock keep it. Written here as
//! those libraries write it (`SET NX PX`, compare-and-delete) to play their
//! side. The `lean` row of the suite's table.

use std::time::Duration;

use lock_redis::{AcquireOptions, LockError};
use tokio::time::Instant;

use super::{client, key, token_key, unique, RedisLayout, WATCHDOG};

/// The key holds the owner's token as text with the lease as its time to
/// live; the owner asking again is refused at once, leaving it as it was;
/// the unlock deletes it.
pub async fn the_key_holds_the_token_and_the_holder_is_refused(h: &dyn RedisLayout) {
    let c = client(h).await;
    let name = unique("lean-layout");
    let lock = c.lean_lock(&name).unwrap();
    let guard = lock.lock_with_lease(Duration::from_secs(20)).await.unwrap();
    let k = key(h, &name);
    let token = guard.owner().field();
    assert_eq!(h.get_string(&k).await.as_deref(), Some(token.as_str()));
    let pttl = h.pttl(&k).await;
    assert!(pttl > 0 && pttl <= 20_000, "{pttl}");
    match lock.lock_as(guard.owner()).await {
        Err(LockError::ReentryRefused { name: refused }) => assert_eq!(refused, name),
        other => panic!("a re-acquisition by the holder was not refused: {other:?}"),
    }
    assert_eq!(h.get_string(&k).await.as_deref(), Some(token.as_str()));
    assert_eq!(lock.hold_count(guard.owner()).await.unwrap(), 1);
    guard.unlock().await.unwrap();
    assert_eq!(h.get_string(&k).await, None);
}

/// A token written by another library (`SET key token NX PX`) keeps us
/// out; its compare-and-delete, which publishes nothing, lets a waiter in
/// within the bounded re-check, long before the foreign lease would end.
pub async fn a_foreign_holder_excludes_us_and_its_release_is_seen(h: &dyn RedisLayout) {
    let c = client(h).await;
    let name = unique("lean-foreign");
    let k = key(h, &name);
    h.set_string(&k, "redsync-token-1").await;
    let lock = c.lean_lock(&name).unwrap();
    assert!(lock.try_lock().await.unwrap().is_none());
    let waiting = {
        let lock = lock.clone();
        tokio::spawn(async move { lock.try_lock_for(Duration::from_secs(60)).await })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    // The foreign release: compare, then delete; no notice.
    assert_eq!(h.get_string(&k).await.as_deref(), Some("redsync-token-1"));
    let released = Instant::now();
    assert!(h.del(&k).await);
    let guard = tokio::time::timeout(Duration::from_secs(30), waiting)
        .await
        .expect("a waiter sees a foreign release by looking again")
        .unwrap()
        .unwrap()
        .expect("taken within the wait");
    assert!(
        released.elapsed() < Duration::from_secs(30),
        "seen by the re-check, not by a lease"
    );
    guard.unlock().await.unwrap();
}

/// Our release deletes only our own token: once the lease ran out and
/// another library took the name, our unlock says it was not held and leaves
/// their key alone.
pub async fn an_unlock_after_expiry_leaves_the_next_holders_token(h: &dyn RedisLayout) {
    let c = client(h).await;
    let name = unique("lean-expired");
    let k = key(h, &name);
    let lock = c.lean_lock(&name).unwrap();
    let guard = lock
        .lock_with_lease(Duration::from_millis(300))
        .await
        .unwrap();
    // The lease ends; a redis-py client takes the name.
    assert!(h.del(&k).await);
    h.set_string(&k, "redis-py-token").await;
    let unlocked = guard.unlock().await;
    assert!(
        matches!(
            unlocked,
            Err(LockError::NotHeld { .. } | LockError::LockLost { .. })
        ),
        "{unlocked:?}"
    );
    assert_eq!(h.get_string(&k).await.as_deref(), Some("redis-py-token"));
}

/// The watchdog keeps a lean lock past several of its timeouts, and our
/// unlock wakes a waiter of another client by notice.
pub async fn the_watchdog_keeps_it_and_the_unlock_wakes_a_waiter(h: &dyn RedisLayout) {
    let a = client(h).await;
    let b = client(h).await;
    let name = unique("lean-watchdog");
    let guard = a.lean_lock(&name).unwrap().lock().await.unwrap();
    let theirs = b.lean_lock(&name).unwrap();
    let waiter = {
        let theirs = theirs.clone();
        tokio::spawn(async move { theirs.lock().await })
    };
    tokio::time::sleep(WATCHDOG * 3).await;
    assert!(!guard.is_lost());
    assert!(h.pttl(&key(h, &name)).await > 0);
    assert!(!waiter.is_finished(), "the watchdog let the lock expire");
    guard.unlock().await.unwrap();
    let next = tokio::time::timeout(Duration::from_secs(10), waiter)
        .await
        .expect("the unlock wakes the waiter")
        .unwrap()
        .unwrap();
    assert_eq!(
        h.get_string(&key(h, &name)).await,
        Some(next.owner().field())
    );
    next.unlock().await.unwrap();
}

/// Fenced acquisitions take tokens from the name's counter, one more each
/// time.
pub async fn fenced_acquisitions_advance_the_token(h: &dyn RedisLayout) {
    let c = client(h).await;
    let name = unique("lean-fenced");
    let lock = c.lean_lock(&name).unwrap();
    let mut last = 0;
    for _ in 0..3 {
        let guard = lock
            .acquire(AcquireOptions::new().fenced())
            .await
            .unwrap()
            .unwrap();
        let token = guard
            .fencing_token()
            .expect("a fenced acquisition has a token");
        assert!(token > last, "{token} after {last}");
        last = token;
        guard.unlock().await.unwrap();
    }
    assert_eq!(
        h.get_string(&token_key(h, &name)).await,
        Some(last.to_string())
    );
}

/// A value of another type at the key (a reentrant lock's hash) is
/// reported, and nothing is written.
pub async fn a_reentrant_lock_of_the_name_is_the_wrong_type(h: &dyn RedisLayout) {
    let c = client(h).await;
    let name = unique("lean-wrong-type");
    let held = c.lock(&name).unwrap().lock().await.unwrap();
    let lean = c.lean_lock(&name).unwrap();
    let refused = lean.try_lock().await;
    assert!(
        matches!(refused, Err(LockError::WrongType { .. })),
        "{refused:?}"
    );
    assert_eq!(h.hash(&key(h, &name)).await, [(held.owner().field(), 1)]);
    held.unlock().await.unwrap();
}
