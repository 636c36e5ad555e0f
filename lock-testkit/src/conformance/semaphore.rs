//! The semaphore's behaviours ([`lock_redis::Semaphore`]): counting, waking
//! by the new count, the Redisson style of releasing by name, retries that
//! never count twice, cancellation, typed errors.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use lock_redis::kinds::semaphore::PermitRequest;
use lock_redis::{LockClient, LockError, Semaphore, MAX_PERMITS};
use tokio::time::Instant;

use super::{client, eventually, key, unique, waiting, Harness, RedisLayout};

fn sem(c: &LockClient, name: &str) -> Semaphore {
    c.semaphore(name).expect("a semaphore")
}

fn sem_channel(h: &dyn RedisLayout, name: &str) -> String {
    h.layout()
        .semaphore_channel(&lock_redis::LockName::new(name).unwrap())
}

/// A waiter is woken by a notice well before the engine's recheck
/// (`no_ttl_recheck`, 5 s by default): this bounds "woken by a message".
const WOKEN_WITHIN: Duration = Duration::from_secs(1);

/// `try_set_permits` creates the count once, announces it, and never
/// overwrites an existing one.
pub async fn try_set_permits_sets_once(h: &dyn RedisLayout) {
    let a = client(h).await;
    let name = unique("sem-set");
    let s = sem(&a, &name);
    assert_eq!(s.available_permits().await.unwrap(), 0);
    assert!(s.try_set_permits(3).await.unwrap());
    assert!(!s.try_set_permits(7).await.unwrap());
    assert_eq!(s.available_permits().await.unwrap(), 3);
    assert_eq!(h.get_string(&key(h, &name)).await.as_deref(), Some("3"));
    assert_eq!(h.pttl(&key(h, &name)).await, -1);
}

/// Acquiring takes n at once or nothing; releasing gives them back.
pub async fn acquire_and_release_count_permits(h: &dyn Harness) {
    let a = client(h).await;
    let s = sem(&a, &unique("sem-count"));
    s.try_set_permits(3).await.unwrap();
    let two = s.acquire_many(2).await.unwrap();
    assert_eq!(two.permits(), 2);
    assert_eq!(s.available_permits().await.unwrap(), 1);
    assert!(s.try_acquire_many(2).await.unwrap().is_none());
    assert_eq!(s.available_permits().await.unwrap(), 1, "none taken");
    let one = s.try_acquire().await.unwrap().expect("one free");
    assert_eq!(s.available_permits().await.unwrap(), 0);
    two.release().await.unwrap();
    one.release().await.unwrap();
    assert_eq!(s.available_permits().await.unwrap(), 3);
}

/// A dropped guard gives its permits back in the background.
pub async fn dropped_guard_gives_permits_back(h: &dyn Harness) {
    let a = client(h).await;
    let s = sem(&a, &unique("sem-drop"));
    s.try_set_permits(2).await.unwrap();
    drop(s.acquire_many(2).await.unwrap());
    a.settle().await;
    assert_eq!(s.available_permits().await.unwrap(), 2);
}

/// Redisson's style: permits taken here, kept past the guard, released by
/// another client by name.
pub async fn forgotten_permits_are_released_by_another_client(h: &dyn Harness) {
    let (a, b) = (client(h).await, client(h).await);
    let name = unique("sem-forget");
    let s = sem(&a, &name);
    s.try_set_permits(2).await.unwrap();
    assert_eq!(s.acquire_many(2).await.unwrap().forget(), 2);
    a.settle().await;
    assert_eq!(s.available_permits().await.unwrap(), 0, "still taken");
    sem(&b, &name).release(2).await.unwrap();
    assert_eq!(s.available_permits().await.unwrap(), 2);
}

/// A waiter is woken by a release (the notice), not by a timer.
pub async fn release_wakes_a_waiter(h: &dyn Harness) {
    let (a, b) = (client(h).await, client(h).await);
    let name = unique("sem-wake");
    let s = sem(&a, &name);
    s.try_set_permits(1).await.unwrap();
    let held = s.acquire().await.unwrap();
    let waiter = tokio::spawn({
        let s = sem(&b, &name);
        async move { s.acquire().await }
    });
    waiting(&b, 1).await;
    let released = Instant::now();
    held.release().await.unwrap();
    let got = waiter.await.unwrap().unwrap();
    assert!(
        released.elapsed() < WOKEN_WITHIN,
        "{:?}",
        released.elapsed()
    );
    got.release().await.unwrap();
}

/// A release of n wakes n waiters of a client at once (the payload is the
/// new count), each taking one permit.
pub async fn release_of_n_wakes_n_waiters(h: &dyn Harness) {
    let (a, b) = (client(h).await, client(h).await);
    let name = unique("sem-wake-n");
    sem(&a, &name).try_set_permits(0).await.unwrap();
    let waiters: Vec<_> = (0..3)
        .map(|_| {
            let s = sem(&b, &name);
            tokio::spawn(async move { s.acquire().await.unwrap().forget() })
        })
        .collect();
    waiting(&b, 3).await;
    let released = Instant::now();
    sem(&a, &name).release(3).await.unwrap();
    for w in waiters {
        assert_eq!(w.await.unwrap(), 1);
    }
    assert!(
        released.elapsed() < WOKEN_WITHIN,
        "{:?}",
        released.elapsed()
    );
    assert_eq!(sem(&a, &name).available_permits().await.unwrap(), 0);
}

/// A waiter for more permits than are free waits until enough are.
pub async fn waiter_for_many_waits_until_enough_are_free(h: &dyn Harness) {
    let (a, b) = (client(h).await, client(h).await);
    let name = unique("sem-many");
    sem(&a, &name).try_set_permits(1).await.unwrap();
    let waiter = tokio::spawn({
        let s = sem(&b, &name);
        async move { s.acquire_many(3).await.unwrap().forget() }
    });
    waiting(&b, 1).await;
    sem(&a, &name).release(1).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!waiter.is_finished(), "2 free is not 3");
    sem(&a, &name).release(1).await.unwrap();
    assert_eq!(waiter.await.unwrap(), 3);
}

/// `try_acquire_for` gives up at its deadline, taking nothing.
pub async fn try_acquire_for_honours_its_deadline(h: &dyn Harness) {
    let a = client(h).await;
    let s = sem(&a, &unique("sem-deadline"));
    s.try_set_permits(1).await.unwrap();
    let held = s.acquire().await.unwrap();
    let start = Instant::now();
    let got = s.try_acquire_for(Duration::from_millis(300)).await.unwrap();
    assert!(got.is_none());
    let waited = start.elapsed();
    assert!(waited >= Duration::from_millis(300), "{waited:?}");
    assert!(waited < Duration::from_secs(2), "{waited:?}");
    assert_eq!(a.stats().subscriptions_active, 0);
    held.release().await.unwrap();
    assert_eq!(s.available_permits().await.unwrap(), 1);
}

/// At most `permits` tasks hold at once, and everyone gets a turn.
pub async fn at_most_n_hold_at_once(h: &dyn Harness) {
    let (a, b) = (client(h).await, client(h).await);
    let name = unique("sem-n");
    sem(&a, &name).try_set_permits(2).await.unwrap();
    let inside = Arc::new(AtomicI64::new(0));
    let most = Arc::new(AtomicI64::new(0));
    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let s = sem(if i % 2 == 0 { &a } else { &b }, &name);
            let (inside, most) = (Arc::clone(&inside), Arc::clone(&most));
            tokio::spawn(async move {
                for _ in 0..2 {
                    let p = s.acquire().await.unwrap();
                    let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    inside.fetch_sub(1, Ordering::SeqCst);
                    p.release().await.unwrap();
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    assert!(most.load(Ordering::SeqCst) <= 2);
    assert_eq!(most.load(Ordering::SeqCst), 2, "both permits were used");
    assert_eq!(sem(&a, &name).available_permits().await.unwrap(), 2);
}

/// `add_permits` adds and removes (the count may go negative while
/// permits are taken) and wakes waiters; `drain_permits` takes what is
/// free.
pub async fn add_and_drain_permits(h: &dyn Harness) {
    let (a, b) = (client(h).await, client(h).await);
    let name = unique("sem-add");
    let s = sem(&a, &name);
    s.add_permits(5).await.unwrap();
    assert_eq!(s.available_permits().await.unwrap(), 5);
    let taken = s.acquire_many(4).await.unwrap().forget();
    s.add_permits(-3).await.unwrap();
    assert_eq!(s.available_permits().await.unwrap(), -2);
    let waiter = tokio::spawn({
        let s = sem(&b, &name);
        async move { s.acquire().await.unwrap().forget() }
    });
    waiting(&b, 1).await;
    s.release(taken).await.unwrap();
    assert_eq!(waiter.await.unwrap(), 1, "a release to 2 free wakes");
    assert_eq!(s.available_permits().await.unwrap(), 1);
    assert_eq!(s.drain_permits().await.unwrap(), 1);
    assert_eq!(s.available_permits().await.unwrap(), 0);
    assert_eq!(s.drain_permits().await.unwrap(), 0);
}

/// `try_set_permits_with_ttl` sets the count's time to live; acquisitions
/// and releases keep it, `add_permits` drops it (as Redisson's SET does).
pub async fn ttl_is_kept_by_acquire_and_release_dropped_by_add(h: &dyn RedisLayout) {
    let a = client(h).await;
    let name = unique("sem-ttl");
    let s = sem(&a, &name);
    assert!(s
        .try_set_permits_with_ttl(2, Duration::from_secs(60))
        .await
        .unwrap());
    let k = key(h, &name);
    assert!(h.pttl(&k).await > 50_000);
    s.acquire().await.unwrap().release().await.unwrap();
    assert!(h.pttl(&k).await > 50_000);
    s.add_permits(1).await.unwrap();
    assert_eq!(h.pttl(&k).await, -1);
    let expiring = sem(&a, &unique("sem-ttl-end"));
    expiring
        .try_set_permits_with_ttl(2, Duration::from_millis(200))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(expiring.available_permits().await.unwrap(), 0, "gone");
}

/// A change repeated with its request id (a retry after a lost reply, or a
/// late duplicate) returns its first outcome and counts once.
pub async fn repeated_changes_count_once(h: &dyn Harness) {
    let a = client(h).await;
    let kind = a.kinds().semaphore();
    let name = unique("sem-record");
    let s = sem(&a, &name);
    s.try_set_permits(1).await.unwrap();
    let n = lock_redis::LockName::new(&name).unwrap();
    let ttl = super::request_deadline();
    let take = PermitRequest::new(n.clone(), 1, ttl);
    assert!(kind.try_acquire(&take).await.unwrap());
    assert!(
        kind.try_acquire(&take).await.unwrap(),
        "first outcome again"
    );
    assert_eq!(s.available_permits().await.unwrap(), 0, "taken once");
    let busy = PermitRequest::new(n.clone(), 1, ttl);
    assert!(!kind.try_acquire(&busy).await.unwrap());
    let give = PermitRequest::new(n.clone(), 1, ttl);
    kind.release(&give).await.unwrap();
    kind.release(&give).await.unwrap();
    assert_eq!(s.available_permits().await.unwrap(), 1, "given back once");
    assert!(
        !kind.try_acquire(&busy).await.unwrap(),
        "a late duplicate of a busy attempt takes nothing"
    );
    let add = PermitRequest::new(n.clone(), 5, ttl);
    kind.add_permits(&add).await.unwrap();
    kind.add_permits(&add).await.unwrap();
    assert_eq!(s.available_permits().await.unwrap(), 6, "added once");
    let drain = PermitRequest::new(n, 0, ttl);
    assert_eq!(kind.drain_permits(&drain).await.unwrap(), 6);
    assert_eq!(kind.drain_permits(&drain).await.unwrap(), 6, "first reply");
}

/// An acquisition dropped at any point (waiting or with its request on
/// the wire) leaves no permit taken and no subscription.
pub async fn dropped_acquire_leaves_no_permit(h: &dyn RedisLayout) {
    let a = client(h).await;
    let name = unique("sem-cancel");
    let s = sem(&a, &name);
    s.try_set_permits(2).await.unwrap();
    for polls in 0..8 {
        // Boxed, so that dropping it drops the future itself.
        let mut fut = Box::pin(s.acquire_many(2));
        for _ in 0..polls {
            if futures::poll!(fut.as_mut()).is_ready() {
                break;
            }
            tokio::task::yield_now().await;
        }
        drop(fut);
        a.settle().await;
        assert_eq!(
            s.available_permits().await.unwrap(),
            2,
            "after {polls} polls"
        );
    }
    // A waiter that gives up.
    let held = s.acquire_many(2).await.unwrap();
    let gave_up = tokio::time::timeout(Duration::from_millis(150), s.acquire()).await;
    assert!(gave_up.is_err());
    a.settle().await;
    assert_eq!(a.stats().subscriptions_active, 0);
    eventually(Duration::from_secs(2), "unsubscribed", || async {
        h.subscribers(&sem_channel(h, &name)).await == 0
    })
    .await;
    held.release().await.unwrap();
    assert_eq!(s.available_permits().await.unwrap(), 2);
}

/// A Java client's release (INCRBY, then PUBLISH of the new count on
/// `redisson_sc:{name}`) wakes our waiter.
pub async fn redisson_style_release_wakes_us(h: &dyn RedisLayout) {
    let b = client(h).await;
    let name = unique("sem-java");
    h.set_string(&key(h, &name), "0").await;
    let waiter = tokio::spawn({
        let s = sem(&b, &name);
        async move { s.acquire().await.unwrap().forget() }
    });
    waiting(&b, 1).await;
    // A polling client finds the permit at its next step instead.
    let subscribers = usize::from(super::subscribes(&b));
    assert_eq!(h.subscribers(&sem_channel(h, &name)).await, subscribers);
    let released = Instant::now();
    h.set_string(&key(h, &name), "1").await;
    h.publish(&sem_channel(h, &name), "1").await;
    assert_eq!(waiter.await.unwrap(), 1);
    assert!(
        released.elapsed() < WOKEN_WITHIN,
        "{:?}",
        released.elapsed()
    );
    assert_eq!(h.get_string(&key(h, &name)).await.as_deref(), Some("0"));
}

/// Zero permits, more than a semaphore can hold, and counts pushed past
/// the bound are refused with `InvalidArgument`, writing nothing.
pub async fn bad_permit_counts_are_refused(h: &dyn RedisLayout) {
    let a = client(h).await;
    let name = unique("sem-args");
    let s = sem(&a, &name);
    for n in [0, MAX_PERMITS + 1, u64::MAX] {
        assert!(
            s.acquire_many(n).await.unwrap_err().is_invalid_argument(),
            "{n}"
        );
        assert!(s
            .try_acquire_many(n)
            .await
            .unwrap_err()
            .is_invalid_argument());
        assert!(s.release(n).await.unwrap_err().is_invalid_argument());
    }
    assert!(s
        .try_set_permits(MAX_PERMITS + 1)
        .await
        .unwrap_err()
        .is_invalid_argument());
    for delta in [i64::MAX, i64::MIN, -(MAX_PERMITS as i64) - 1] {
        assert!(s
            .add_permits(delta)
            .await
            .unwrap_err()
            .is_invalid_argument());
    }
    assert!(s
        .try_set_permits_with_ttl(1, Duration::ZERO)
        .await
        .unwrap_err()
        .is_invalid_argument());
    assert_eq!(
        h.keys().await.iter().filter(|k| k.contains(&name)).count(),
        0
    );
    // In range alone, past the bound together: refused in the store.
    s.try_set_permits(MAX_PERMITS).await.unwrap();
    assert!(s.release(1).await.unwrap_err().is_invalid_argument());
    assert!(s.add_permits(1).await.unwrap_err().is_invalid_argument());
    assert_eq!(s.available_permits().await.unwrap(), MAX_PERMITS as i64);
}

/// A key holding something other than a count (a hash, a word) fails every
/// operation with `WrongType` naming the key, and is left untouched.
pub async fn wrong_type_is_reported_and_left_untouched(h: &dyn RedisLayout) {
    let a = client(h).await;
    let hashed = unique("sem-hash");
    h.hset(&key(h, &hashed), "f", 1, None).await;
    let worded = unique("sem-word");
    h.set_string(&key(h, &worded), "many").await;
    for name in [&hashed, &worded] {
        let s = sem(&a, name);
        let k = key(h, name);
        let wrong = |e: LockError| matches!(e, LockError::WrongType { ref key } if *key == k);
        assert!(wrong(s.try_set_permits(1).await.unwrap_err()));
        assert!(wrong(s.add_permits(1).await.unwrap_err()));
        assert!(wrong(s.available_permits().await.unwrap_err()));
        assert!(wrong(s.acquire().await.unwrap_err()));
        assert!(wrong(s.release(1).await.unwrap_err()));
        assert!(wrong(s.drain_permits().await.unwrap_err()));
    }
    assert_eq!(h.hash(&key(h, &hashed)).await, vec![("f".to_owned(), 1)]);
    assert_eq!(
        h.get_string(&key(h, &worded)).await.as_deref(),
        Some("many")
    );
}

/// After `close`, every operation fails with `Closed`.
pub async fn closed_client_rejects_semaphores(h: &dyn Harness) {
    let a = client(h).await;
    let s = sem(&a, &unique("sem-closed"));
    a.close().await;
    assert!(matches!(s.try_set_permits(1).await, Err(LockError::Closed)));
    assert!(matches!(s.acquire().await, Err(LockError::Closed)));
    assert!(matches!(s.release(1).await, Err(LockError::Closed)));
}

/// `release_if_exists` gives back to an existing semaphore (waking a
/// waiter) and leaves a missing one missing, writing nothing.
pub async fn release_if_exists_gives_back_only_to_an_existing_semaphore(h: &dyn RedisLayout) {
    let (a, b) = (client(h).await, client(h).await);
    let missing = unique("sem-rie-none");
    assert!(!sem(&a, &missing).release_if_exists(1).await.unwrap());
    assert!(h.keys().await.iter().all(|k| *k != key(h, &missing)));
    let name = unique("sem-rie");
    let s = sem(&a, &name);
    s.try_set_permits(0).await.unwrap();
    let waiter = tokio::spawn({
        let s = sem(&b, &name);
        async move { s.acquire_many(2).await.unwrap().forget() }
    });
    waiting(&b, 1).await;
    let freed = Instant::now();
    assert!(s.release_if_exists(2).await.unwrap());
    assert_eq!(waiter.await.unwrap(), 2);
    assert!(freed.elapsed() < WOKEN_WITHIN);
    assert!(s.release_if_exists(1).await.unwrap());
    assert_eq!(s.available_permits().await.unwrap(), 1);
    assert!(s
        .release_if_exists(0)
        .await
        .unwrap_err()
        .is_invalid_argument());
    s.add_permits(MAX_PERMITS as i64 - 1).await.unwrap();
    assert!(s
        .release_if_exists(1)
        .await
        .unwrap_err()
        .is_invalid_argument());
    assert_eq!(s.available_permits().await.unwrap(), MAX_PERMITS as i64);
}

/// `try_set_permits` repeated with its request id answers its first reply:
/// `true` for the request that created the semaphore, even once it exists.
pub async fn repeated_try_set_answers_its_first_reply(h: &dyn Harness) {
    let a = client(h).await;
    let kind = a.kinds().semaphore();
    let name = unique("sem-set-record");
    let n = lock_redis::LockName::new(&name).unwrap();
    let ttl = super::request_deadline();
    let create = PermitRequest::new(n.clone(), 2, ttl);
    assert!(kind.try_set_permits(&create, None).await.unwrap());
    assert!(
        kind.try_set_permits(&create, None).await.unwrap(),
        "first reply"
    );
    let late = PermitRequest::new(n, 7, ttl);
    assert!(!kind.try_set_permits(&late, None).await.unwrap());
    assert!(
        !kind.try_set_permits(&late, None).await.unwrap(),
        "first reply"
    );
    assert_eq!(sem(&a, &name).available_permits().await.unwrap(), 2);
}
