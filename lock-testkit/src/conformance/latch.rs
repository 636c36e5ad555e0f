//! The count-down latch ([`LockClient::count_down_latch`]): Redisson's
//! `RedissonCountDownLatchTest` scenarios (named after them), then ours —
//! wake-ups by notice, Redisson's wire layout and messages, idempotent
//! retries, typed errors and cancellation.
//!
//! The `latch` row of the suite's table.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use lock_redis::kinds::latch::LatchRequest;
use lock_redis::{CountDownLatch, LockClient, LockName};
use tokio::time::Instant;

use super::{client, config, eventually, key, unique, Harness, RedisLayout};

/// The latch's channel under the harness's layout.
pub fn latch_channel(h: &dyn RedisLayout, name: &str) -> String {
    h.layout().latch_channel(&LockName::new(name).unwrap())
}

fn latch(c: &LockClient, name: &str) -> CountDownLatch {
    c.count_down_latch(name).expect("a latch")
}

/// A generous bound for "woken by the notice": far below the recheck
/// interval these checks configure, far above a round trip.
const NOTICE: Duration = Duration::from_millis(1500);

/// A client whose waiters would recheck only after a minute: anything
/// quicker was a notice.
async fn notice_client(h: &dyn Harness) -> LockClient {
    h.client(config().no_ttl_recheck(Duration::from_secs(60)))
        .await
}

/// testAwaitTimeout: a count-down within the wait's timeout opens it.
pub async fn await_timeout(h: &dyn Harness) {
    let c = client(h).await;
    let name = unique("latch-await-timeout");
    let l = latch(&c, &name);
    assert!(l.try_set_count(1).await.unwrap());
    let counter = l.clone();
    let down = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        counter.count_down().await.unwrap();
    });
    assert_eq!(l.count().await.unwrap(), 1);
    assert!(l.wait_for(Duration::from_secs(3)).await.unwrap());
    down.await.unwrap();
}

/// testAwaitTimeoutFail: a wait whose timeout ends before the count-down
/// answers `false`, no earlier than its timeout.
pub async fn await_timeout_fail(h: &dyn Harness) {
    let c = client(h).await;
    let name = unique("latch-await-timeout-fail");
    let l = latch(&c, &name);
    assert!(l.try_set_count(1).await.unwrap());
    let started = Instant::now();
    assert!(!l.wait_for(Duration::from_millis(300)).await.unwrap());
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(l.count().await.unwrap(), 1);
    l.count_down().await.unwrap();
    assert!(l.wait_for(Duration::from_millis(300)).await.unwrap());
}

/// testMultiAwait: five waiters on five handles, five count-downs a moment
/// later from other handles: every waiter returns `true`.
pub async fn multi_await(h: &dyn Harness) {
    let c = client(h).await;
    let other = client(h).await;
    let name = unique("latch-multi-await");
    latch(&c, &name).try_set_count(5).await.unwrap();
    let opened = Arc::new(AtomicUsize::new(0));
    let mut waiters = Vec::new();
    for _ in 0..5 {
        let l = latch(&c, &name);
        let opened = Arc::clone(&opened);
        waiters.push(tokio::spawn(async move {
            if l.wait_for(Duration::from_secs(10)).await.unwrap() {
                opened.fetch_add(1, Ordering::SeqCst);
            }
        }));
    }
    super::waiting(&c, 5).await;
    for _ in 0..5 {
        latch(&other, &name).count_down().await.unwrap();
    }
    for w in waiters {
        w.await.unwrap();
    }
    assert_eq!(latch(&c, &name).count().await.unwrap(), 0);
    assert_eq!(opened.load(Ordering::SeqCst), 5);
}

/// testCountDown: counts go down one at a time and never below zero; an
/// open latch (counted down, or never set) does not block.
pub async fn count_down(h: &dyn RedisLayout) {
    let c = client(h).await;
    let name = unique("latch-count-down");
    let l = latch(&c, &name);
    assert!(l.try_set_count(2).await.unwrap());
    assert_eq!(l.count().await.unwrap(), 2);
    assert_eq!(l.count_down().await.unwrap(), 1);
    assert_eq!(l.count().await.unwrap(), 1);
    assert_eq!(l.count_down().await.unwrap(), 0);
    assert_eq!(l.count().await.unwrap(), 0);
    l.wait().await.unwrap();
    for _ in 0..2 {
        assert_eq!(l.count_down().await.unwrap(), 0);
        assert_eq!(l.count().await.unwrap(), 0);
        l.wait().await.unwrap();
    }
    let once = latch(&c, &unique("latch-count-down-1"));
    once.try_set_count(1).await.unwrap();
    once.count_down().await.unwrap();
    once.count_down().await.unwrap();
    assert_eq!(once.count().await.unwrap(), 0);
    once.wait().await.unwrap();
    once.wait().await.unwrap();
    let never = latch(&c, &unique("latch-count-down-never"));
    assert_eq!(never.count().await.unwrap(), 0);
    never.wait().await.unwrap();
    never.count_down().await.unwrap();
    assert_eq!(never.count().await.unwrap(), 0);
    never.wait().await.unwrap();
    assert!(h.get_string(&key(h, never.name().as_str())).await.is_none());
}

/// testDelete: deleting a set latch answers `true`.
pub async fn delete(h: &dyn Harness) {
    let c = client(h).await;
    let l = latch(&c, &unique("latch-delete"));
    l.try_set_count(1).await.unwrap();
    assert!(l.delete().await.unwrap());
    assert_eq!(l.count().await.unwrap(), 0);
}

/// testDeleteFailed: deleting a latch that does not exist answers `false`.
pub async fn delete_failed(h: &dyn Harness) {
    let c = client(h).await;
    assert!(!latch(&c, &unique("latch-delete-failed"))
        .delete()
        .await
        .unwrap());
}

/// testTrySetCount: only the first count is set while the latch exists.
pub async fn try_set_count(h: &dyn Harness) {
    let c = client(h).await;
    let l = latch(&c, &unique("latch-try-set-count"));
    assert!(l.try_set_count(1).await.unwrap());
    assert!(!l.try_set_count(2).await.unwrap());
    assert_eq!(l.count().await.unwrap(), 1);
}

/// testCount: a latch never set counts 0.
pub async fn count(h: &dyn Harness) {
    let c = client(h).await;
    assert_eq!(latch(&c, &unique("latch-count")).count().await.unwrap(), 0);
}

/// testSingleCountDownAwait_SingleInstance (RedissonCountDownLatchConcurrentTest):
/// many waiters and as many concurrent count-downs; every waiter returns
/// only after the last count-down, and sees the count at zero.
pub async fn single_count_down_await_single_instance(h: &dyn Harness) {
    const N: usize = 12;
    let c = client(h).await;
    let name = unique("latch-concurrent");
    latch(&c, &name).try_set_count(N as u64).await.unwrap();
    let counted = Arc::new(AtomicUsize::new(0));
    let mut waiters = Vec::new();
    for _ in 0..N {
        let l = latch(&c, &name);
        let counted = Arc::clone(&counted);
        waiters.push(tokio::spawn(async move {
            l.wait().await.unwrap();
            assert_eq!(l.count().await.unwrap(), 0);
            assert_eq!(counted.load(Ordering::SeqCst), N);
        }));
    }
    let mut downs = Vec::new();
    for _ in 0..N {
        let l = latch(&c, &name);
        let counted = Arc::clone(&counted);
        downs.push(tokio::spawn(async move {
            // Counted before the count-down, so a waiter released by the
            // last one sees every increment.
            counted.fetch_add(1, Ordering::SeqCst);
            l.count_down().await.unwrap();
        }));
    }
    for d in downs {
        d.await.unwrap();
    }
    for w in waiters {
        tokio::time::timeout(Duration::from_secs(3), w)
            .await
            .expect("every waiter returns")
            .unwrap();
    }
}

/// The count-down that reaches zero wakes every waiter of every client by
/// its notice, long before any recheck.
pub async fn zero_notice_wakes_every_waiter(h: &dyn Harness) {
    let a = notice_client(h).await;
    let b = notice_client(h).await;
    let name = unique("latch-notice");
    latch(&a, &name).try_set_count(1).await.unwrap();
    let mut waiters = Vec::new();
    for c in [&a, &a, &b, &b] {
        let l = latch(c, &name);
        waiters.push(tokio::spawn(async move { l.wait().await }));
    }
    super::waiting(&a, 2).await;
    super::waiting(&b, 2).await;
    let started = Instant::now();
    latch(&a, &name).count_down().await.unwrap();
    for w in waiters {
        tokio::time::timeout(NOTICE, w)
            .await
            .expect("woken by the notice")
            .unwrap()
            .unwrap();
    }
    assert!(started.elapsed() < NOTICE);
    assert_eq!(a.stats().subscriptions_active, 0);
}

/// A Java count-down (Redisson's own script: DECR, DEL at zero, `0` on
/// the brace-wrapped channel) wakes our waiters.
pub async fn redisson_count_down_wakes_us(h: &dyn RedisLayout) {
    let c = notice_client(h).await;
    let name = unique("latch-java-down");
    let l = latch(&c, &name);
    l.try_set_count(1).await.unwrap();
    let waiter = tokio::spawn({
        let l = l.clone();
        async move { l.wait_for(Duration::from_secs(30)).await }
    });
    super::waiting(&c, 1).await;
    assert!(h.del(&key(h, &name)).await);
    h.publish(&latch_channel(h, &name), "0").await;
    let opened = tokio::time::timeout(NOTICE, waiter)
        .await
        .expect("woken by the notice");
    assert!(opened.unwrap().unwrap());
}

/// `1` (a new count, or a delete) makes waiters read the count again: they
/// return when it reads open and wait on when it does not.
pub async fn new_count_message_makes_waiters_look_again(h: &dyn RedisLayout) {
    let c = notice_client(h).await;
    let name = unique("latch-recheck");
    let l = latch(&c, &name);
    l.try_set_count(2).await.unwrap();
    let waiter = tokio::spawn({
        let l = l.clone();
        async move { l.wait_for(Duration::from_secs(30)).await }
    });
    super::waiting(&c, 1).await;
    // A polling client hears no messages; it looks again at every step.
    if super::subscribes(&c) {
        let wakeups = c.stats().wakeups;
        h.publish(&latch_channel(h, &name), "1").await;
        eventually(NOTICE, "woken to look again", || async {
            c.stats().wakeups > wakeups && c.stats().waiting == 1
        })
        .await;
    }
    assert!(!waiter.is_finished(), "a count of 2 is still closed");
    let started = Instant::now();
    assert!(l.delete().await.unwrap());
    assert!(tokio::time::timeout(NOTICE, waiter)
        .await
        .expect("a delete opens it")
        .unwrap()
        .unwrap());
    assert!(started.elapsed() < NOTICE);
}

/// On the store it is Redisson's layout: the count as a plain integer
/// string at the name, without expiry, gone at zero; writes leave only
/// their request records.
pub async fn layout_is_redissons(h: &dyn RedisLayout) {
    let c = client(h).await;
    let name = unique("latch-layout");
    let l = latch(&c, &name);
    l.try_set_count(3).await.unwrap();
    let k = key(h, &name);
    assert_eq!(h.get_string(&k).await.as_deref(), Some("3"));
    assert_eq!(h.pttl(&k).await, -1);
    l.count_down().await.unwrap();
    assert_eq!(h.get_string(&k).await.as_deref(), Some("2"));
    // A Java client's trySetCount is refused while it exists, and its
    // count-downs are ours.
    h.set_string(&k, "1").await;
    assert_eq!(l.count().await.unwrap(), 1);
    l.count_down().await.unwrap();
    assert!(h.get_string(&k).await.is_none());
    let left: Vec<String> = h
        .keys()
        .await
        .into_iter()
        .filter(|key| key.contains(&name) && !key.starts_with("redisson_unlock_latch:"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// A write repeated with its request id (a retry after a lost reply)
/// returns its first outcome and writes nothing: a count-down counts once,
/// a set does not set again after the latch opened, a delete does not
/// delete a newer count.
pub async fn repeated_writes_count_once(h: &dyn Harness) {
    let c = client(h).await;
    let kind = c.kinds().latch();
    let name = unique("latch-repeat");
    let n = LockName::new(&name).unwrap();
    let ttl = super::request_deadline();
    let set = LatchRequest::new(n.clone(), ttl);
    assert!(kind.try_set_count(&set, 3).await.unwrap());
    let down = LatchRequest::new(n.clone(), ttl);
    assert_eq!(kind.count_down(&down).await.unwrap(), 2);
    assert_eq!(kind.count_down(&down).await.unwrap(), 2);
    assert_eq!(kind.count(&n).await.unwrap(), 2);
    let del = LatchRequest::new(n.clone(), ttl);
    assert!(kind.delete(&del).await.unwrap());
    // The latch is open: a repeated set must not close it again.
    assert!(kind.try_set_count(&set, 3).await.unwrap());
    assert_eq!(kind.count(&n).await.unwrap(), 0);
    // A newer count survives a repeated delete.
    assert!(kind
        .try_set_count(&LatchRequest::new(n.clone(), ttl), 4)
        .await
        .unwrap());
    assert!(kind.delete(&del).await.unwrap());
    assert_eq!(kind.count(&n).await.unwrap(), 4);
}

/// Counts of 0 or beyond Redis's integers are refused before any I/O.
pub async fn invalid_counts_fail_before_io(h: &dyn RedisLayout) {
    let c = client(h).await;
    let name = unique("latch-invalid");
    let l = latch(&c, &name);
    for bad in [0, lock_redis::MAX_COUNT + 1, u64::MAX] {
        let err = l.try_set_count(bad).await.unwrap_err();
        assert!(err.is_invalid_argument(), "{bad}: {err}");
    }
    assert!(h.get_string(&key(h, &name)).await.is_none());
    assert!(c.count_down_latch("").unwrap_err().is_invalid_argument());
    assert!(l.try_set_count(lock_redis::MAX_COUNT).await.unwrap());
    assert_eq!(l.count().await.unwrap(), lock_redis::MAX_COUNT);
}

/// A latch set at [`lock_redis::MAX_COUNT`] counts down exactly (the count
/// never passes through a Lua number, a double, on its way), a count above
/// it is refused with nothing written, and a count another client stored
/// beyond the 64-bit range is reported, not misread.
pub async fn counts_down_exactly_from_the_maximum(h: &dyn RedisLayout) {
    let c = client(h).await;
    let name = unique("latch-max");
    let k = key(h, &name);
    let l = latch(&c, &name);
    let err = l
        .try_set_count(lock_redis::MAX_COUNT + 1)
        .await
        .unwrap_err();
    assert!(err.is_invalid_argument(), "{err}");
    assert!(h.get_string(&k).await.is_none(), "nothing written");

    assert!(l.try_set_count(lock_redis::MAX_COUNT).await.unwrap());
    assert_eq!(l.count_down().await.unwrap(), lock_redis::MAX_COUNT - 1);
    assert_eq!(l.count().await.unwrap(), lock_redis::MAX_COUNT - 1);
    assert_eq!(
        h.get_string(&k).await.as_deref(),
        Some((lock_redis::MAX_COUNT - 1).to_string().as_str())
    );
    assert_eq!(l.count_down().await.unwrap(), lock_redis::MAX_COUNT - 2);

    // One past the largest integer the store counts in: not a count.
    h.del(&k).await;
    h.set_string(&k, "9223372036854775808").await;
    assert!(matches!(
        l.count_down().await,
        Err(lock_redis::LockError::WrongType { .. })
    ));
    assert_eq!(
        h.get_string(&k).await.as_deref(),
        Some("9223372036854775808")
    );
    // The smallest one, counted down: open (deleted), not an overflow.
    h.del(&k).await;
    h.set_string(&k, "-9223372036854775808").await;
    assert_eq!(l.count_down().await.unwrap(), 0);
    assert!(h.get_string(&k).await.is_none());
}

/// A value of another kind at the latch's key — a hash (a lock), or text
/// that is not a count — fails every operation with `WrongType` naming the
/// key, and is left as it was.
pub async fn wrong_type_is_reported_and_left_untouched(h: &dyn RedisLayout) {
    let c = client(h).await;
    let name = unique("latch-wrong-type");
    let k = key(h, &name);
    let l = latch(&c, &name);
    h.hset(&k, "field", 7, None).await;
    assert_wrong_type(&l, &k).await;
    assert_eq!(h.hash(&k).await, vec![("field".to_owned(), 7)]);
    assert!(h.del(&k).await);
    for text in ["abc", "1.5", "007", " 1"] {
        h.set_string(&k, text).await;
        assert_wrong_type(&l, &k).await;
        assert_eq!(h.get_string(&k).await.as_deref(), Some(text));
    }
}

async fn assert_wrong_type(l: &CountDownLatch, k: &str) {
    let errors = [
        l.try_set_count(1).await.map(drop).unwrap_err(),
        l.count_down().await.map(drop).unwrap_err(),
        l.count().await.map(drop).unwrap_err(),
        l.delete().await.map(drop).unwrap_err(),
        l.wait_for(Duration::from_millis(50))
            .await
            .map(drop)
            .unwrap_err(),
    ];
    for err in errors {
        assert!(
            matches!(&err, lock_redis::LockError::WrongType { key } if key == k),
            "{err}"
        );
    }
}

/// A waiter whose future is dropped — before or after it subscribed —
/// leaves no subscription behind.
pub async fn dropped_wait_leaves_no_subscription(h: &dyn RedisLayout) {
    let c = client(h).await;
    let name = unique("latch-drop-wait");
    let l = latch(&c, &name);
    l.try_set_count(1).await.unwrap();
    for _ in 0..3 {
        let gave_up = tokio::time::timeout(Duration::from_millis(150), l.wait()).await;
        assert!(gave_up.is_err());
    }
    let parked = tokio::spawn({
        let l = l.clone();
        async move { l.wait().await }
    });
    super::waiting(&c, 1).await;
    // A polling client has nothing to leave behind, and must not either.
    let subscriptions = u64::from(super::subscribes(&c));
    assert_eq!(c.stats().subscriptions_active, subscriptions);
    parked.abort();
    assert!(parked.await.unwrap_err().is_cancelled());
    assert_eq!(c.stats().subscriptions_active, 0);
    eventually(Duration::from_secs(2), "unsubscribed", || async {
        h.subscribers(&latch_channel(h, &name)).await == 0
    })
    .await;
    assert_eq!(l.count().await.unwrap(), 1);
}

/// A name with its own hash tag (Redisson's channel wraps it in braces
/// again) either works like any other — one node, memory — or, where its
/// key and channel would be in different hash slots (a cluster), is
/// refused when the handle is made, before any I/O.
pub async fn name_with_its_own_hash_tag_works_or_is_refused(h: &dyn RedisLayout) {
    let c = client(h).await;
    let name = format!("{{{}}}:jobs", unique("latch-tag"));
    match c.count_down_latch(&name) {
        Ok(l) => {
            assert!(l.try_set_count(1).await.unwrap());
            let waiter = tokio::spawn({
                let l = l.clone();
                async move { l.wait_for(Duration::from_secs(3)).await }
            });
            l.count_down().await.unwrap();
            assert!(waiter.await.unwrap().unwrap());
        }
        Err(err) => {
            assert!(err.is_invalid_argument(), "{err}");
            assert!(err.to_string().contains("hash slots"), "{err}");
            assert!(h.keys().await.iter().all(|k| !k.contains(&name)));
        }
    }
}

/// After `close()` every operation fails with `Closed`.
pub async fn closed_client_rejects_latch_operations(h: &dyn Harness) {
    let c = client(h).await;
    let l = latch(&c, &unique("latch-closed"));
    c.close().await;
    assert!(matches!(
        l.try_set_count(1).await,
        Err(lock_redis::LockError::Closed)
    ));
    assert!(matches!(
        l.count_down().await,
        Err(lock_redis::LockError::Closed)
    ));
    assert!(matches!(
        l.count().await,
        Err(lock_redis::LockError::Closed)
    ));
    assert!(matches!(l.wait().await, Err(lock_redis::LockError::Closed)));
    assert!(matches!(
        l.delete().await,
        Err(lock_redis::LockError::Closed)
    ));
}
