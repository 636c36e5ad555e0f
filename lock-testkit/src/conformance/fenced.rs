//! Fenced locks ([`lock_redis::LockClient::fenced_lock`]), Redisson's
//! `RFencedLock`: every acquisition takes the next token of the name's
//! counter, `last_fencing_token()` reads it without acquiring, and a
//! fenced lock is the plain lock of its name. Part of the `reentrant` row
//! of the suite's table.

use std::time::Duration;

use lock_redis::{AcquireOptions, Guard, LockError};

use super::{client, key, token_key, unique, Harness, RedisLayout};

/// Redisson's `RedissonFencedLockTest`: five plain `lock()`/`unlock()`
/// rounds hand out tokens 1, 2, 3, 4, 5, and `last_fencing_token()` follows them.
pub async fn five_rounds_hand_out_tokens_one_to_five(h: &dyn Harness) {
    let c = client(h).await;
    let lock = c.fenced_lock(unique("fenced-rounds")).unwrap();
    let mut tokens = Vec::new();
    for _ in 0..5 {
        let g = lock.lock().await.unwrap();
        // The plain guard's token is the fenced guard's.
        assert_eq!(Guard::fencing_token(&g), Some(g.fencing_token()));
        assert_eq!(
            lock.last_fencing_token().await.unwrap(),
            Some(g.fencing_token())
        );
        tokens.push(g.fencing_token());
        g.unlock().await.unwrap();
    }
    assert_eq!(tokens, [1, 2, 3, 4, 5]);
    assert_eq!(
        lock.last_fencing_token().await.unwrap(),
        Some(5),
        "an unlock keeps it"
    );
}

/// Every way of acquiring is fenced: each takes exactly the next token,
/// re-entries too (`lock_as`, and a plain acquisition inside a scope).
pub async fn every_acquisition_advances_the_token(h: &dyn Harness) {
    let c = client(h).await;
    let lock = c.fenced_lock(unique("fenced-every")).unwrap();
    let lease = Duration::from_secs(10);
    let wait = Duration::from_millis(200);

    let first = lock.lock().await.unwrap();
    assert_eq!(first.fencing_token(), 1);
    let owner = first.owner();
    let reentry = lock.lock_as(owner).await.unwrap();
    assert_eq!(reentry.fencing_token(), 2, "a re-entry advances the token");
    assert_eq!(lock.hold_count(owner).await.unwrap(), 2);
    let in_scope = owner
        .scope(async {
            let a = lock.lock_with_lease(lease).await.unwrap();
            let b = lock.try_lock().await.unwrap().unwrap();
            let c = lock.try_lock_for(wait).await.unwrap().unwrap();
            let d = lock
                .try_lock_for_with_lease(wait, lease)
                .await
                .unwrap()
                .unwrap();
            // Not asking for a token gets one all the same.
            let e = lock.acquire(AcquireOptions::new()).await.unwrap().unwrap();
            [a, b, c, d, e]
        })
        .await;
    let tokens: Vec<u64> = in_scope.iter().map(|g| g.fencing_token()).collect();
    assert_eq!(tokens, [3, 4, 5, 6, 7]);
    assert_eq!(lock.hold_count(owner).await.unwrap(), 7);
    assert_eq!(lock.last_fencing_token().await.unwrap(), Some(7));
    for g in in_scope {
        g.unlock().await.unwrap();
    }
    reentry.unlock().await.unwrap();
    first.unlock().await.unwrap();
    assert!(!lock.is_locked().await.unwrap());
}

/// `last_fencing_token()` reads without acquiring: `None` before any token, the last
/// token after, unchanged by reads, failed tries, unlocks, expiry and
/// `force_unlock`, and never reset: the next token is the next integer, and
/// the counter never expires.
pub async fn token_reads_the_counter_which_is_never_reset(h: &dyn RedisLayout) {
    let a = client(h).await;
    let b = client(h).await;
    let name = unique("fenced-read");
    let lock = a.fenced_lock(&name).unwrap();
    let other = b.fenced_lock(&name).unwrap();
    assert_eq!(lock.last_fencing_token().await.unwrap(), None);
    assert_eq!(h.get_string(&token_key(h, &name)).await, None, "read wrote");

    let g = lock.lock().await.unwrap();
    assert_eq!(g.fencing_token(), 1);
    assert_eq!(
        other.last_fencing_token().await.unwrap(),
        Some(1),
        "seen by every client"
    );
    assert!(other.try_lock().await.unwrap().is_none());
    assert!(other
        .try_lock_for(Duration::from_millis(100))
        .await
        .unwrap()
        .is_none());
    assert_eq!(
        lock.last_fencing_token().await.unwrap(),
        Some(1),
        "a failed try takes none"
    );

    assert!(other.force_unlock().await.unwrap());
    drop(g);
    assert_eq!(
        lock.last_fencing_token().await.unwrap(),
        Some(1),
        "force_unlock keeps it"
    );
    let g = other
        .lock_with_lease(Duration::from_millis(300))
        .await
        .unwrap();
    assert_eq!(g.fencing_token(), 2, "never reused");
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(!lock.is_locked().await.unwrap(), "the lease ran out");
    assert_eq!(
        lock.last_fencing_token().await.unwrap(),
        Some(2),
        "expiry keeps it"
    );
    drop(g);
    assert_eq!(lock.lock().await.unwrap().fencing_token(), 3);
    assert_eq!(h.pttl(&token_key(h, &name)).await, -1, "never expires");
}

/// A fenced lock is the plain lock of its name (one hash, Redisson's
/// `RFencedLock` extends `RedissonLock`): each excludes the other, and a
/// plain acquisition takes no token.
pub async fn fenced_and_plain_locks_of_a_name_exclude_each_other(h: &dyn RedisLayout) {
    let a = client(h).await;
    let b = client(h).await;
    let name = unique("fenced-plain");
    let fenced = a.fenced_lock(&name).unwrap();
    let plain = b.lock(&name).unwrap();

    let g = fenced.lock().await.unwrap();
    assert!(plain.try_lock().await.unwrap().is_none());
    assert!(plain.is_held_by(g.owner()).await.unwrap());
    assert_eq!(h.hash(&key(h, &name)).await, [(g.owner().field(), 1)]);
    g.unlock().await.unwrap();

    let p = plain.lock().await.unwrap();
    assert_eq!(p.fencing_token(), None);
    assert!(fenced.try_lock().await.unwrap().is_none());
    assert!(fenced.is_locked().await.unwrap());
    p.unlock().await.unwrap();
    assert_eq!(
        fenced.last_fencing_token().await.unwrap(),
        Some(1),
        "plain takes none"
    );
    assert_eq!(fenced.try_lock().await.unwrap().unwrap().fencing_token(), 2);
}

/// A counter that is not an integer: `last_fencing_token()` and every fenced
/// acquisition fail with `WrongType` naming the counter, writing nothing;
/// a counter of another type alike.
pub async fn wrong_type_at_the_token_key_is_reported_and_left_untouched(h: &dyn RedisLayout) {
    let c = client(h).await;
    let name = unique("fenced-bad");
    let counter = token_key(h, &name);
    let lock = c.fenced_lock(&name).unwrap();
    let is_bad_counter = |e: LockError| {
        assert!(
            matches!(&e, LockError::WrongType { key } if *key == counter),
            "{e:?}"
        );
    };
    for value in ["not a number", "1.5"] {
        h.set_string(&counter, value).await;
        is_bad_counter(lock.last_fencing_token().await.unwrap_err());
        is_bad_counter(lock.try_lock().await.unwrap_err());
        is_bad_counter(lock.lock().await.unwrap_err());
        assert_eq!(h.get_string(&counter).await.as_deref(), Some(value));
        assert!(!lock.is_locked().await.unwrap(), "a hold without a guard");
    }
    assert!(h.del(&counter).await);
    h.hset(&counter, "field", 1, None).await;
    is_bad_counter(lock.last_fencing_token().await.unwrap_err());
    is_bad_counter(lock.try_lock().await.unwrap_err());
    assert_eq!(h.hash(&counter).await, [("field".to_owned(), 1)]);
    assert!(!lock.is_locked().await.unwrap());

    // Repaired (an integer again), counting goes on from it.
    assert!(h.del(&counter).await);
    h.set_string(&counter, "41").await;
    assert_eq!(lock.last_fencing_token().await.unwrap(), Some(41));
    assert_eq!(lock.lock().await.unwrap().fencing_token(), 42);
}
