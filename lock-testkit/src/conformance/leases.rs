//! Leases, the watchdog, and the lost-lock signal.

use std::time::Duration;

use tokio::time::Instant;

use super::{client, config, eventually, key, unique, Harness, RedisLayout, WATCHDOG};

/// A fixed lease ends the hold: another client takes the lock afterwards,
/// and not before; a try with a lease (`try_lock_with_lease`) is held for
/// its lease alike.
pub async fn lease_expiry_frees_the_lock(h: &dyn Harness) {
    let a = client(h).await;
    let b = client(h).await;
    let name = unique("lease");
    let lease = Duration::from_millis(300);
    let g = super::lock(h, &a, &name)
        .lock_with_lease(lease)
        .await
        .unwrap();
    assert!(!g.is_renewed());
    let lb = super::lock(h, &b, &name);
    assert!(lb.try_lock().await.unwrap().is_none());
    assert!(lb.try_lock_with_lease(lease).await.unwrap().is_none());
    tokio::time::sleep(lease + Duration::from_millis(50)).await;
    // A try with a lease: not renewed either.
    let taken = lb
        .try_lock_with_lease(lease)
        .await
        .unwrap()
        .expect("free once the lease ran out");
    assert!(g.is_lost());
    let la = super::lock(h, &a, &name);
    assert!(la.try_lock().await.unwrap().is_none());
    tokio::time::sleep(lease + Duration::from_millis(50)).await;
    assert!(taken.is_lost());
    la.try_lock()
        .await
        .unwrap()
        .expect("free once the try's lease ran out")
        .unlock()
        .await
        .unwrap();
}

/// With the watchdog, a lock outlives several watchdog timeouts while its
/// guard lives.
pub async fn watchdog_keeps_lock_past_several_timeouts(h: &dyn RedisLayout) {
    let a = client(h).await;
    let b = client(h).await;
    let name = unique("watchdog");
    let g = super::lock(h, &a, &name).lock().await.unwrap();
    assert!(g.is_renewed());
    let lb = super::lock(h, &b, &name);
    let until = Instant::now() + WATCHDOG * 3;
    while Instant::now() < until {
        tokio::time::sleep(WATCHDOG / 4).await;
        assert!(
            lb.try_lock().await.unwrap().is_none(),
            "the watchdog let the lock expire"
        );
        assert!(h.pttl(&key(h, &name)).await > 0);
    }
    assert!(!g.is_lost());
    assert!(a.stats().renewed >= 6, "{:?}", a.stats());
    g.unlock().await.unwrap();
}

/// Unlocking stops renewal: the client watches nothing, the key is gone and
/// stays gone.
pub async fn renewal_stops_at_unlock(h: &dyn RedisLayout) {
    let a = client(h).await;
    let name = unique("stop");
    let lock = super::lock(h, &a, &name);
    let g = lock.lock().await.unwrap();
    let inner = lock.lock_as(g.owner()).await.unwrap();
    assert_eq!(a.stats().watched, 1, "re-entrant holds share one entry");
    inner.unlock().await.unwrap();
    assert_eq!(a.stats().watched, 1, "still held once");
    g.unlock().await.unwrap();
    assert_eq!(a.stats().watched, 0);
    let renewed = a.stats().renewed;
    tokio::time::sleep(WATCHDOG).await;
    assert_eq!(a.stats().renewed, renewed, "renewed after unlock");
    assert_eq!(h.pttl(&key(h, &name)).await, -2);
}

/// All held locks of a client are renewed together: one backend call per
/// tick and node (lane), not one per lock.
pub async fn watchdog_renews_many_locks_in_one_call_per_tick(h: &dyn Harness) {
    let a = client(h).await;
    let base = unique("many");
    let mut guards = Vec::new();
    for i in 0..200 {
        guards.push(
            super::lock(h, &a, format!("{base}-{i}"))
                .lock()
                .await
                .unwrap(),
        );
    }
    let calls_before = a.stats().renew_calls;
    tokio::time::sleep(WATCHDOG * 2).await;
    let stats = a.stats();
    let calls = stats.renew_calls - calls_before;
    assert!(
        (4..=8 * h.nodes()).contains(&calls),
        "{calls} renewal calls in two timeouts: {stats:?}"
    );
    assert!(stats.renewed >= 200 * 4, "{stats:?}");
    for g in &guards {
        assert!(!g.is_lost());
    }
    for g in guards {
        g.unlock().await.unwrap();
    }
}

/// More held locks than one renewal call carries (the watchdog's slices of
/// 250, issue 15) are renewed in several calls per tick, every one of them
/// every tick: two calls per tick for 251 locks, where one call would do
/// for 250.
pub async fn watchdog_renews_more_locks_than_a_slice_in_several_calls(h: &dyn Harness) {
    const LOCKS: u64 = 251;
    let a = client(h).await;
    let base = unique("sliced");
    let mut guards = Vec::new();
    for i in 0..LOCKS {
        guards.push(
            super::lock(h, &a, format!("{base}-{i}"))
                .lock()
                .await
                .unwrap(),
        );
    }
    let before = a.stats();
    tokio::time::sleep(WATCHDOG * 2).await;
    let stats = a.stats();
    let calls = stats.renew_calls - before.renew_calls;
    let renewed = stats.renewed - before.renewed;
    // As `watchdog_renews_many_locks_in_one_call_per_tick`: 4 to 8 ticks in
    // two timeouts, each of two calls on one node. On several, slices are
    // per node (lane), so the ends of each node's part add up to one call
    // more per tick and further node.
    let per_tick = LOCKS.div_ceil(250);
    assert!(
        (4 * per_tick..=8 * (per_tick + h.nodes() - 1)).contains(&calls),
        "{calls} renewal calls in two timeouts: {stats:?}"
    );
    assert!(renewed >= LOCKS * 4, "{stats:?}");
    for g in &guards {
        assert!(!g.is_lost());
    }
    for g in guards {
        g.unlock().await.unwrap();
    }
}

/// A renewal that finds the lock gone fires the guard's lost signal.
pub async fn deleted_lock_fires_lost_signal(h: &dyn RedisLayout) {
    let a = client(h).await;
    let name = unique("lost");
    let g = super::lock(h, &a, &name).lock().await.unwrap();
    assert!(!g.is_lost());
    assert!(h.del(&key(h, &name)).await);
    let deleted = Instant::now();
    tokio::time::timeout(WATCHDOG, g.lost())
        .await
        .expect("lost signal within one watchdog timeout");
    assert!(deleted.elapsed() <= WATCHDOG / 3 + Duration::from_millis(300));
    assert!(g.is_lost());
    assert!(g.unlock().await.unwrap_err().is_not_held());
}

/// A force unlock by anyone is noticed by the holder.
pub async fn force_unlock_fires_holders_lost_signal(h: &dyn Harness) {
    let a = client(h).await;
    let b = client(h).await;
    let name = unique("forced-lost");
    let g = super::lock(h, &a, &name).lock().await.unwrap();
    assert!(super::lock(h, &b, &name).force_unlock().await.unwrap());
    tokio::time::timeout(WATCHDOG, g.lost())
        .await
        .expect("lost signal within one watchdog timeout");
    assert_eq!(a.stats().watched, 0);
}

/// A leased guard reports loss when its lease runs out.
pub async fn leased_guard_is_lost_when_lease_ends(h: &dyn Harness) {
    let a = client(h).await;
    let lease = Duration::from_millis(250);
    let started = Instant::now();
    let g = super::lock(h, &a, unique("leased-lost"))
        .lock_with_lease(lease)
        .await
        .unwrap();
    // When the loss is due is the deadline's business, checked on the
    // deadline; the clock after the wake-up adds whatever a loaded machine
    // delays the waking task by. (A loaded machine may also return the
    // guard after that: then it is lost already, but not early.)
    let due = g.lease_deadline() - a.config().safety_margin(lease);
    assert!(due <= started + lease, "due before the lease ends");
    let lost_at_once = g.is_lost();
    assert!(!lost_at_once || Instant::now() >= due, "not told early");
    g.lost().await;
    assert!(Instant::now() >= due, "not told early");
    assert!(g.is_lost());
}

/// Dropping a guard releases the lock in the background, promptly.
pub async fn dropped_guard_releases_in_background(h: &dyn Harness) {
    let a = client(h).await;
    let b = client(h).await;
    let name = unique("drop");
    let g = super::lock(h, &a, &name)
        .lock_with_lease(Duration::from_secs(20))
        .await
        .unwrap();
    drop(g);
    let lb = super::lock(h, &b, &name);
    eventually(Duration::from_secs(1), "released after drop", || async {
        !lb.is_locked().await.unwrap()
    })
    .await;
    assert_eq!(a.stats().watched, 0);
}

/// Closing the client gives its locks back: every guard is told at once,
/// watchdog and fixed-lease guards of the same hold alike, the lock is
/// free, and the guards answer `Closed` afterwards (issue 37, item 9: the
/// close used to leave the lock to expire with its lease).
pub async fn close_tells_watchdog_guards(h: &dyn Harness) {
    let a = client(h).await;
    let lock = super::lock(h, &a, unique("closing"));
    let g = lock.lock().await.unwrap();
    let leased = lock
        .acquire(
            lock_redis::AcquireOptions::new()
                .owner(g.owner())
                .lease(Duration::from_secs(20)),
        )
        .await
        .unwrap()
        .unwrap();
    a.close().await;
    assert!(g.is_lost(), "a closed client's watchdog guard is not told");
    assert!(g.check().unwrap_err().is_closed());
    assert!(leased.is_lost());
    tokio::time::timeout(Duration::from_millis(10), g.lost())
        .await
        .expect("lost() resolves at once");
    let b = client(h).await;
    assert!(
        !super::lock(h, &b, lock.name()).is_locked().await.unwrap(),
        "given back by the close"
    );
    assert!(g.unlock().await.unwrap_err().is_closed());
    assert!(leased.unlock().await.unwrap_err().is_closed());
}

/// (a) A re-entry with a shorter lease does not shorten the owner's hold:
/// the lock lives until the longest lease given (issue 10, item 3).
pub async fn short_reentry_does_not_shorten_the_hold(h: &dyn RedisLayout) {
    let (a, b) = (client(h).await, client(h).await);
    let name = unique("short-reentry");
    let lock = super::lock(h, &a, &name);
    let g = lock.lock_with_lease(Duration::from_secs(3)).await.unwrap();
    let inner = lock
        .acquire(
            lock_redis::AcquireOptions::new()
                .owner(g.owner())
                .lease(Duration::from_millis(200)),
        )
        .await
        .unwrap()
        .unwrap();
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(
        super::lock(h, &b, &name)
            .try_lock()
            .await
            .unwrap()
            .is_none(),
        "another client took a lock whose first guard holds it for 3 s"
    );
    assert!(h.pttl(&key(h, &name)).await > 2_000);
    assert!(g.check().is_ok());
    drop(inner);
    g.unlock().await.unwrap();
    eventually(Duration::from_secs(1), "both holds released", || async {
        !lock.is_locked().await.unwrap()
    })
    .await;
}

/// (b) Releasing a short-leased re-entry of a watchdog hold leaves the
/// watchdog's lease in place, not the re-entry's.
pub async fn releasing_a_short_reentry_keeps_the_watchdog_lease(h: &dyn RedisLayout) {
    // A long watchdog timeout: no renewal tick comes to the rescue during
    // the check (the first one is a second away).
    let a = h
        .client(config().watchdog_timeout(Duration::from_secs(3)))
        .await;
    let b = client(h).await;
    let name = unique("short-reentry-watchdog");
    let lock = super::lock(h, &a, &name);
    let g = lock.lock().await.unwrap();
    let inner = lock
        .acquire(
            lock_redis::AcquireOptions::new()
                .owner(g.owner())
                .lease(Duration::from_millis(100)),
        )
        .await
        .unwrap()
        .unwrap();
    inner.unlock().await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        super::lock(h, &b, &name)
            .try_lock()
            .await
            .unwrap()
            .is_none(),
        "another client took a lock a watchdog guard holds"
    );
    assert!(h.pttl(&key(h, &name)).await > 2_000);
    assert!(!g.is_lost());
    g.unlock().await.unwrap();
}

/// (c) A watchdog re-entry of a longer fixed-lease hold neither shortens it
/// while renewed nor when released: the fixed-lease guard still holds the
/// lock until its own lease ends, and its unlock succeeds.
pub async fn watchdog_reentry_does_not_shorten_a_longer_lease(h: &dyn RedisLayout) {
    let (a, b) = (client(h).await, client(h).await);
    let name = unique("watchdog-reentry");
    let lock = super::lock(h, &a, &name);
    let g = lock.lock_with_lease(Duration::from_secs(3)).await.unwrap();
    let inner = lock.lock_as(g.owner()).await.unwrap();
    // At least one renewal tick (every WATCHDOG / 3) while both are held.
    tokio::time::sleep(WATCHDOG / 2).await;
    assert!(h.pttl(&key(h, &name)).await > 2_000, "renewal shortened it");
    inner.unlock().await.unwrap();
    tokio::time::sleep(WATCHDOG + Duration::from_millis(300)).await;
    assert!(
        super::lock(h, &b, &name)
            .try_lock()
            .await
            .unwrap()
            .is_none(),
        "another client took a lock held for 3 s"
    );
    assert!(g.check().is_ok());
    g.unlock().await.unwrap();
}
