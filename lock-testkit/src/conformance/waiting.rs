//! Waiting: deadlines, wake-ups, lost notices, one wake-up per unlock.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Barrier;
use tokio::time::Instant;

use super::{
    channel, client, contended, eventually, key, subscribes, unique, waiting, Contended, Harness,
    RedisLayout, WATCHDOG,
};
use crate::ExclusionChecker;

/// A wait that runs out returns `None` no earlier than its deadline and not
/// much later.
pub async fn try_lock_for_honours_its_deadline(h: &dyn Harness) {
    let a = client(h).await;
    let b = client(h).await;
    let name = unique("deadline");
    let _held = super::lock(h, &a, &name).lock().await.unwrap();
    let wait = Duration::from_millis(300);
    let started = Instant::now();
    let got = super::lock(h, &b, &name).try_lock_for(wait).await.unwrap();
    let took = started.elapsed();
    assert!(got.is_none());
    assert!(
        took >= wait,
        "gave up after {took:?}, before its {wait:?} deadline"
    );
    assert!(
        took < wait + Duration::from_millis(400),
        "gave up late: {took:?}"
    );
}

/// An unlock notice wakes a waiter long before the holder's TTL would
/// (a polling waiter finds the lock free at its next look, within one
/// backoff step, without any notice).
pub async fn unlock_wakes_a_waiter_before_the_ttl(h: &dyn Harness) {
    let Contended { b, name, held, .. } = contended(h, "wake").await;
    let lb = super::lock(h, &b, &name);
    let waiter = tokio::spawn(async move {
        let g = lb.try_lock_for(Duration::from_secs(30)).await.unwrap();
        (g, Instant::now())
    });
    waiting(&b, 1).await;
    let released = Instant::now();
    held.unlock().await.unwrap();
    let (g, acquired) = waiter.await.unwrap();
    let g = g.expect("woken waiter takes the lock");
    let handoff = acquired - released;
    assert!(
        handoff < Duration::from_secs(2),
        "handoff took {handoff:?}, TTL was 20 s"
    );
    if subscribes(&b) && h.kind() == super::Kind::Reentrant {
        assert_eq!(b.stats().wakeups, 1);
    } else if subscribes(&b) {
        // A queued waiter also looks again every third of the waiter
        // timeout (to keep its place); on a loaded machine that look may
        // find the lock before the notice is read.
        assert!(b.stats().wakeups <= 1, "woken more than once");
    } else {
        assert_eq!(b.stats().wakeups, 0, "a polling waiter hears no notice");
        assert_eq!(
            b.stats().subscriptions_opened,
            0,
            "a polling waiter subscribed"
        );
    }
    g.unlock().await.unwrap();
}

/// A holder whose lease runs out sends no notice; the waiter still gets the
/// lock once the TTL it was told has passed.
pub async fn waiter_acquires_when_holder_lease_expires(h: &dyn Harness) {
    let a = client(h).await;
    let b = client(h).await;
    let name = unique("expire");
    let lease = Duration::from_millis(400);
    let _held = super::lock(h, &a, &name)
        .lock_with_lease(lease)
        .await
        .unwrap();
    let started = Instant::now();
    let g = super::lock(h, &b, &name)
        .try_lock_for(Duration::from_secs(5))
        .await
        .unwrap()
        .expect("the lease runs out");
    let took = started.elapsed();
    assert!(took < lease + Duration::from_millis(500), "took {took:?}");
    assert_eq!(b.stats().wakeups, 0, "nothing was published");
    g.unlock().await.unwrap();
}

/// A lock deleted behind the holder's back, with no notice published, is
/// taken by a waiter within one TTL.
pub async fn deleted_lock_without_notice_is_taken_within_ttl(h: &dyn RedisLayout) {
    let a = client(h).await;
    let b = client(h).await;
    let name = unique("lost-notice");
    let _held = super::lock(h, &a, &name).lock().await.unwrap();
    let lb = super::lock(h, &b, &name);
    let waiter = tokio::spawn(async move { lb.try_lock_for(Duration::from_secs(10)).await });
    waiting(&b, 1).await;
    let deleted = Instant::now();
    assert!(h.del(&key(h, &name)).await);
    let g = waiter.await.unwrap().unwrap().expect("taken after the TTL");
    assert!(deleted.elapsed() <= WATCHDOG + Duration::from_millis(500));
    g.unlock().await.unwrap();
}

/// With several waiters in one client, one unlock wakes exactly one
/// (polling waiters: one of them takes the lock, none subscribed).
pub async fn one_unlock_wakes_one_waiter(h: &dyn Harness) {
    let Contended { b, name, held, .. } = contended(h, "wake-one").await;
    let release_all = Arc::new(tokio::sync::Notify::new());
    let mut waiters = Vec::new();
    for _ in 0..5 {
        let lock = super::lock(h, &b, &name);
        let release_all = Arc::clone(&release_all);
        waiters.push(tokio::spawn(async move {
            let notified = release_all.notified();
            let g = lock
                .try_lock_for(Duration::from_secs(30))
                .await
                .unwrap()
                .unwrap();
            notified.await;
            g
        }));
    }
    waiting(&b, 5).await;
    if !subscribes(&b) {
        assert_eq!(b.stats().subscriptions_opened, 0);
        held.unlock().await.unwrap();
        eventually(
            Duration::from_secs(2),
            "one waiter took the lock",
            || async { super::lock(h, &b, &name).is_locked().await.unwrap() },
        )
        .await;
        assert_eq!(b.stats().wakeups, 0);
        release_all.notify_waiters();
        for w in waiters {
            w.abort();
        }
        return;
    }
    assert_eq!(b.stats().subscriptions_opened, 1);
    // Parked waiters have made all their attempts (a waiter that joined the
    // subscription once live makes one fewer: see the next check).
    let before = b.stats().tries;
    held.unlock().await.unwrap();
    eventually(
        Duration::from_secs(2),
        "one waiter took the lock",
        || async {
            b.stats().tries > before && super::lock(h, &b, &name).is_locked().await.unwrap()
        },
    )
    .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let stats = b.stats();
    assert_eq!(stats.wakeups, 1, "{stats:?}");
    assert_eq!(
        stats.tries,
        before + 1,
        "only the woken waiter tried again: {stats:?}"
    );
    release_all.notify_waiters();
    for w in waiters {
        w.abort();
    }
}

/// A waiter that joins a subscription its client's other waiters have live
/// already parks after its first attempt (it does not look again: a
/// release since was announced to them), and every waiter still gets the
/// lock in turn, woken by the unlocks (polling waiters: found at their next
/// look, nothing subscribed).
pub async fn waiter_joining_a_live_subscription_tries_once(h: &dyn Harness) {
    let Contended { b, name, held, .. } = contended(h, "live-join").await;
    let take_and_give_back = |lock: lock_redis::Lock| async move {
        let g = lock
            .try_lock_for(Duration::from_secs(5))
            .await
            .unwrap()
            .expect("woken in turn");
        g.unlock().await.unwrap();
    };
    let first = tokio::spawn(take_and_give_back(super::lock(h, &b, &name)));
    waiting(&b, 1).await;
    let before = b.stats().tries;
    let second = tokio::spawn(take_and_give_back(super::lock(h, &b, &name)));
    waiting(&b, 2).await;
    let stats = b.stats();
    if subscribes(&b) {
        assert_eq!(
            stats.tries,
            before + 1,
            "joined live, tried once: {stats:?}"
        );
        assert_eq!(stats.subscriptions_opened, 1, "{stats:?}");
    } else {
        assert_eq!(stats.subscriptions_opened, 0, "a polling waiter subscribed");
    }
    held.unlock().await.unwrap();
    tokio::time::timeout(Duration::from_secs(2), async {
        first.await.unwrap();
        second.await.unwrap();
    })
    .await
    .expect("both waiters took the lock in turn, long before the TTL");
    assert!(!super::lock(h, &b, &name).is_locked().await.unwrap());
}

/// Force unlock announces the unlock: a waiter takes the lock at once.
pub async fn force_unlock_wakes_a_waiter(h: &dyn Harness) {
    let Contended {
        a,
        b,
        name,
        held: _held,
    } = contended(h, "force-wake").await;
    let lb = super::lock(h, &b, &name);
    let waiter = tokio::spawn(async move { lb.try_lock_for(Duration::from_secs(30)).await });
    waiting(&b, 1).await;
    let forced = Instant::now();
    assert!(super::lock(h, &a, &name).force_unlock().await.unwrap());
    let g = waiter
        .await
        .unwrap()
        .unwrap()
        .expect("woken by the force unlock");
    assert!(forced.elapsed() < Duration::from_secs(2));
    g.unlock().await.unwrap();
}

/// However many tasks wait on one lock, the client holds one subscription,
/// and drops it when the last waiter leaves. Polling waiters hold none:
/// no `SUBSCRIBE` reaches the store at all.
pub async fn many_waiters_share_one_subscription(h: &dyn RedisLayout) {
    let Contended { b, name, held, .. } = contended(h, "share").await;
    let start = Arc::new(Barrier::new(51));
    let mut waiters = Vec::new();
    for _ in 0..50 {
        let lock = super::lock(h, &b, &name);
        let start = Arc::clone(&start);
        waiters.push(tokio::spawn(async move {
            start.wait().await;
            // Long enough for all 50 to park on a loaded machine (their
            // first tries share one connection), so they overlap.
            lock.try_lock_for(Duration::from_secs(3)).await.unwrap()
        }));
    }
    start.wait().await;
    waiting(&b, 50).await;
    let expected = usize::from(subscribes(&b));
    assert_eq!(b.stats().subscriptions_opened, expected as u64);
    assert_eq!(h.subscribers(&channel(h, &name)).await, expected);
    for w in waiters {
        assert!(w.await.unwrap().is_none());
    }
    assert_eq!(b.stats().subscriptions_active, 0);
    eventually(Duration::from_secs(2), "unsubscribed", || async {
        h.subscribers(&channel(h, &name)).await == 0
    })
    .await;
    held.unlock().await.unwrap();
}

/// Waiters queued behind a holder all get the lock, one after another,
/// each by a wake-up rather than a timeout.
pub async fn waiters_acquire_in_turn(h: &dyn Harness) {
    let a = client(h).await;
    let b = client(h).await;
    let name = unique("turns");
    let held = super::lock(h, &a, &name).lock().await.unwrap();
    let checker = ExclusionChecker::new();
    let mut waiters = Vec::new();
    for i in 0..6 {
        let lock = super::lock(h, &b, &name);
        let checker = checker.clone();
        waiters.push(tokio::spawn(async move {
            let g = lock
                .try_lock_for(Duration::from_secs(20))
                .await
                .unwrap()
                .unwrap();
            let section = checker.enter(i, None);
            tokio::time::sleep(Duration::from_millis(5)).await;
            drop(section);
            g.unlock().await.unwrap();
        }));
    }
    waiting(&b, 6).await;
    let started = Instant::now();
    held.unlock().await.unwrap();
    for w in waiters {
        w.await.unwrap();
    }
    assert_eq!(checker.entries(), 6);
    assert!(
        checker.violations().is_empty(),
        "{:?}",
        checker.violations()
    );
    assert!(
        started.elapsed() < WATCHDOG,
        "six handoffs took {:?}: waiters waited for TTLs instead of wake-ups",
        started.elapsed()
    );
}
