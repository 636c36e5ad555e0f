//! The expirable-permit semaphore's behaviours
//! ([`lock_redis::PermitExpirableSemaphore`]): ids, leases that end by
//! themselves and wake waiters, releases by id that count once,
//! cancellation, typed errors; and its guard ([`lock_redis::ExpirablePermitGuard`]):
//! renewed by the watchdog, told when the permit is lost, giving it back
//! when dropped.

use std::time::Duration;

use lock_redis::kinds::permit_semaphore::LeaseRelease;
use lock_redis::{LockClient, LockError, LockName, PermitExpirableSemaphore, PermitId};
use tokio::time::Instant;

use super::{client, key, unique, waiting, Harness, RedisLayout};

fn sem(c: &LockClient, name: &str) -> PermitExpirableSemaphore {
    c.permit_expirable_semaphore(name)
        .expect("an expirable-permit semaphore")
}

fn leases_key(h: &dyn RedisLayout, name: &str) -> String {
    h.layout().permit_leases_key(&LockName::new(name).unwrap())
}

/// Woken by a notice or a lease end, well before the engine's recheck
/// (`no_ttl_recheck`, 5 s by default).
const WOKEN_WITHIN: Duration = Duration::from_secs(1);

/// A permit has a fresh 32-hex id; releasing it by id gives it back, once.
pub async fn acquire_gives_an_id_and_release_takes_it(h: &dyn Harness) {
    let a = client(h).await;
    let name = unique("psem-id");
    let s = sem(&a, &name);
    assert!(s.try_set_permits(2).await.unwrap());
    assert!(!s.try_set_permits(5).await.unwrap());
    let first_guard = s.acquire().await.unwrap();
    let second_guard = s
        .try_acquire_with_lease(Duration::from_secs(60))
        .await
        .unwrap()
        .unwrap();
    let (first, second) = (first_guard.id(), second_guard.id());
    assert_ne!(first, second);
    let hex = first.to_string();
    assert_eq!(hex.len(), 32);
    assert!(hex
        .chars()
        .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
    assert_eq!(hex.parse::<PermitId>().unwrap(), first);
    assert_eq!(s.available_permits().await.unwrap(), 0);
    assert!(s.try_acquire().await.unwrap().is_none());
    s.release(first).await.unwrap();
    assert!(first_guard.is_lost(), "released by id under its guard");
    assert!(!s.try_release(first).await.unwrap(), "released once");
    assert!(s.release(first).await.unwrap_err().is_not_held());
    assert!(s.try_release(second).await.unwrap());
    assert_eq!(s.available_permits().await.unwrap(), 2);
    assert!(s.release(PermitId::new()).await.unwrap_err().is_not_held());
    // Guards of permits known gone send nothing when dropped.
    drop((first_guard, second_guard));
    a.settle().await;
    assert_eq!(s.available_permits().await.unwrap(), 2);
}

/// A permit whose lease ended comes back by itself, and can no longer be
/// released.
pub async fn expired_permit_comes_back_by_itself(h: &dyn Harness) {
    let a = client(h).await;
    let s = sem(&a, &unique("psem-expire"));
    s.try_set_permits(1).await.unwrap();
    let id = s
        .acquire_with_lease(Duration::from_millis(200))
        .await
        .unwrap()
        .into_id();
    assert_eq!(s.available_permits().await.unwrap(), 0);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(s.available_permits().await.unwrap(), 1);
    assert!(!s.try_release(id).await.unwrap());
    assert_eq!(
        s.available_permits().await.unwrap(),
        1,
        "not given back twice"
    );
}

/// A waiter sleeps until the earliest lease ends (the script's reply arms
/// its timer) and takes the permit then, with no release and no notice.
pub async fn waiter_takes_a_permit_when_its_lease_ends(h: &dyn Harness) {
    let (a, b) = (client(h).await, client(h).await);
    let name = unique("psem-lease-wait");
    sem(&a, &name).try_set_permits(1).await.unwrap();
    let lease = Duration::from_millis(400);
    let taken = Instant::now();
    let held = sem(&a, &name).acquire_with_lease(lease).await.unwrap();
    let got = sem(&b, &name).acquire().await.unwrap();
    let waited = taken.elapsed();
    assert!(waited >= lease - Duration::from_millis(20), "{waited:?}");
    assert!(waited < lease + WOKEN_WITHIN, "{waited:?}");
    assert!(held.is_lost());
    got.release().await.unwrap();
}

/// A release wakes a waiter at once.
pub async fn release_by_id_wakes_a_waiter(h: &dyn Harness) {
    let (a, b) = (client(h).await, client(h).await);
    let name = unique("psem-wake");
    sem(&a, &name).try_set_permits(1).await.unwrap();
    let held = sem(&a, &name).acquire().await.unwrap();
    let waiter = tokio::spawn({
        let s = sem(&b, &name);
        async move { s.acquire().await.unwrap() }
    });
    waiting(&b, 1).await;
    let released = Instant::now();
    sem(&a, &name).release(held.id()).await.unwrap();
    let got = waiter.await.unwrap();
    assert!(
        released.elapsed() < WOKEN_WITHIN,
        "{:?}",
        released.elapsed()
    );
    sem(&a, &name).release(got.id()).await.unwrap();
}

/// `update_lease_time` moves a taken permit's lease end, `clear_lease_time`
/// removes it; each answers `false` once the permit is gone.
pub async fn update_lease_time_moves_the_lease_end(h: &dyn Harness) {
    let a = client(h).await;
    let s = sem(&a, &unique("psem-update"));
    s.try_set_permits(1).await.unwrap();
    let id = s
        .acquire_with_lease(Duration::from_millis(200))
        .await
        .unwrap()
        .into_id();
    assert!(s
        .update_lease_time(id, Duration::from_secs(60))
        .await
        .unwrap());
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(s.available_permits().await.unwrap(), 0, "extended");
    assert!(s.clear_lease_time(id).await.unwrap());
    assert!(s
        .update_lease_time(id, Duration::from_millis(100))
        .await
        .unwrap());
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(s.available_permits().await.unwrap(), 1, "shortened");
    assert!(!s.clear_lease_time(id).await.unwrap());
    assert!(s
        .update_lease_time(id, Duration::ZERO)
        .await
        .unwrap_err()
        .is_invalid_argument());
}

/// `try_acquire_for` gives up at its deadline; a permit whose lease was
/// lifted (Redisson's permit without a lease), handed on by id, never
/// comes back by itself.
pub async fn unleased_permit_stays_taken(h: &dyn Harness) {
    let a = client(h).await;
    let s = sem(&a, &unique("psem-forever"));
    s.try_set_permits(1).await.unwrap();
    let permit = s.acquire().await.unwrap();
    assert!(s.clear_lease_time(permit.id()).await.unwrap());
    let id = permit.into_id();
    assert_eq!(a.stats().watched, 0, "not renewed once handed on");
    tokio::time::sleep(super::WATCHDOG * 2).await;
    let start = Instant::now();
    assert!(s
        .try_acquire_for(Duration::from_millis(300))
        .await
        .unwrap()
        .is_none());
    assert!(start.elapsed() >= Duration::from_millis(300));
    assert_eq!(a.stats().subscriptions_active, 0);
    assert_eq!(s.available_permits().await.unwrap(), 0);
    s.release(id).await.unwrap();
}

/// `add_permits` adds and removes free permits and wakes waiters.
pub async fn add_permits_wakes_waiters(h: &dyn Harness) {
    let (a, b) = (client(h).await, client(h).await);
    let name = unique("psem-add");
    let s = sem(&a, &name);
    s.add_permits(2).await.unwrap();
    s.add_permits(-2).await.unwrap();
    assert_eq!(s.available_permits().await.unwrap(), 0);
    let waiter = tokio::spawn({
        let s = sem(&b, &name);
        async move { s.acquire().await.unwrap() }
    });
    waiting(&b, 1).await;
    let added = Instant::now();
    s.add_permits(1).await.unwrap();
    let got = waiter.await.unwrap();
    assert!(added.elapsed() < WOKEN_WITHIN);
    assert_eq!(s.available_permits().await.unwrap(), 0);
    got.release().await.unwrap();
}

/// A release repeated with its request id returns its first outcome and
/// gives back once; an acquisition repeated with its permit id takes one.
pub async fn repeated_requests_count_once(h: &dyn Harness) {
    let a = client(h).await;
    let kind = a.kinds().permit_semaphore();
    let name = unique("psem-record");
    let s = sem(&a, &name);
    s.try_set_permits(2).await.unwrap();
    let n = LockName::new(&name).unwrap();
    let take = lock_redis::kinds::permit_semaphore::LeaseRequest::new(n.clone(), None);
    assert_eq!(
        kind.try_acquire(&take).await.unwrap(),
        lock_redis::kinds::permit_semaphore::LeaseOutcome::Acquired
    );
    assert_eq!(
        kind.try_acquire(&take).await.unwrap(),
        lock_redis::kinds::permit_semaphore::LeaseOutcome::Acquired
    );
    assert_eq!(s.available_permits().await.unwrap(), 1, "taken once");
    let ttl = super::request_deadline();
    let give = LeaseRelease::new(n, take.id, ttl);
    assert!(kind.release(&give).await.unwrap());
    assert!(kind.release(&give).await.unwrap(), "first outcome again");
    assert_eq!(s.available_permits().await.unwrap(), 2, "given back once");
}

/// An acquisition dropped at any point leaves no permit taken.
pub async fn dropped_permit_acquire_leaves_no_permit(h: &dyn Harness) {
    let a = client(h).await;
    let s = sem(&a, &unique("psem-cancel"));
    s.try_set_permits(1).await.unwrap();
    for polls in 0..8 {
        // Boxed, so that dropping it drops the future itself.
        let mut fut = Box::pin(s.acquire());
        for _ in 0..polls {
            if let std::task::Poll::Ready(permit) = futures::poll!(fut.as_mut()) {
                // Finished: the caller got the permit, and gives it back.
                permit.unwrap().release().await.unwrap();
                break;
            }
            tokio::task::yield_now().await;
        }
        drop(fut);
        a.settle().await;
        assert_eq!(
            s.available_permits().await.unwrap(),
            1,
            "after {polls} polls"
        );
        assert_eq!(a.stats().watched, 0, "nothing renewed after {polls} polls");
        assert_eq!(a.stats().subscriptions_active, 0);
    }
}

/// Bad leases are refused before any I/O; a key holding something else
/// fails with `WrongType` and is left untouched.
pub async fn bad_input_is_refused(h: &dyn RedisLayout) {
    let a = client(h).await;
    let name = unique("psem-args");
    let s = sem(&a, &name);
    // A lease not longer than its safety margin (lease/100 + 2 ms) would be
    // lost at once.
    for lease in [Duration::ZERO, Duration::from_millis(2), Duration::MAX] {
        assert!(s
            .acquire_with_lease(lease)
            .await
            .unwrap_err()
            .is_invalid_argument());
        assert!(s
            .try_acquire_with_lease(lease)
            .await
            .unwrap_err()
            .is_invalid_argument());
    }
    assert!(s
        .try_set_permits(lock_redis::MAX_PERMITS + 1)
        .await
        .unwrap_err()
        .is_invalid_argument());
    assert!(s
        .add_permits(i64::MIN)
        .await
        .unwrap_err()
        .is_invalid_argument());
    assert!("not-an-id"
        .parse::<PermitId>()
        .unwrap_err()
        .is_invalid_argument());
    assert!(h.keys().await.iter().all(|k| !k.contains(&name)));

    let hashed = unique("psem-hash");
    h.hset(&key(h, &hashed), "f", 1, None).await;
    let s = sem(&a, &hashed);
    let k = key(h, &hashed);
    let wrong = |e: LockError| matches!(e, LockError::WrongType { ref key } if *key == k);
    assert!(wrong(s.try_set_permits(1).await.unwrap_err()));
    assert!(wrong(s.acquire().await.unwrap_err()));
    assert!(wrong(s.available_permits().await.unwrap_err()));
    assert!(wrong(s.try_release(PermitId::new()).await.unwrap_err()));
    assert!(wrong(s.add_permits(1).await.unwrap_err()));
    assert_eq!(h.hash(&k).await, vec![("f".to_owned(), 1)]);
    assert!(h.keys().await.iter().all(|x| *x != leases_key(h, &hashed)));
}

/// A client whose watchdog renews every third of a second-long timeout.
async fn watchdog_client(h: &dyn Harness) -> LockClient {
    h.client(super::config().watchdog_timeout(WATCHDOG)).await
}

/// The watchdog timeout of the guard checks.
const WATCHDOG: Duration = Duration::from_secs(1);

/// Taken without a lease, a permit is renewed by the watchdog past several
/// timeouts while its guard lives, in the same ticks as locks; its
/// release stops the renewal and gives it back.
pub async fn watchdog_renews_a_held_permit(h: &dyn Harness) {
    let (a, b) = (watchdog_client(h).await, client(h).await);
    let name = unique("psem-renew");
    sem(&a, &name).try_set_permits(1).await.unwrap();
    let permit = sem(&a, &name).acquire().await.unwrap();
    let lock = a
        .lock(unique("psem-renew-lock"))
        .unwrap()
        .lock()
        .await
        .unwrap();
    assert!(permit.is_renewed());
    assert_eq!(a.stats().watched, 2, "the permit and the lock");
    let calls = a.stats().renew_calls;
    let first_deadline = permit.lease_deadline();
    let until = Instant::now() + WATCHDOG * 3;
    while Instant::now() < until {
        tokio::time::sleep(WATCHDOG / 4).await;
        assert!(
            sem(&b, &name).try_acquire().await.unwrap().is_none(),
            "the watchdog let the permit expire"
        );
    }
    assert!(!permit.is_lost());
    permit.check().unwrap();
    assert!(permit.lease_deadline() > first_deadline + WATCHDOG);
    let ticks = a.stats().renew_calls - calls;
    assert!(
        ticks >= 2 * 6,
        "{ticks} renewal calls for 2 leases in 3 timeouts"
    );
    permit.release().await.unwrap();
    assert_eq!(a.stats().watched, 1);
    assert_eq!(sem(&b, &name).available_permits().await.unwrap(), 1);
    lock.unlock().await.unwrap();
}

/// A renewal that finds the permit released by id by another client, or
/// its semaphore's leases deleted, tells the guard within a tick; the
/// guard then sends no release.
pub async fn lost_signal_when_permit_taken_away(h: &dyn RedisLayout) {
    let (a, b) = (watchdog_client(h).await, client(h).await);
    let name = unique("psem-lost");
    sem(&a, &name).try_set_permits(2).await.unwrap();
    let permit = sem(&a, &name).acquire().await.unwrap();
    assert!(sem(&b, &name).try_release(permit.id()).await.unwrap());
    let taken_away = Instant::now();
    tokio::time::timeout(WATCHDOG, permit.lost())
        .await
        .expect("lost signalled within one watchdog timeout");
    assert!(taken_away.elapsed() <= WATCHDOG / 3 + WOKEN_WITHIN / 2);
    assert!(permit.is_lost());
    assert!(matches!(permit.check(), Err(LockError::LockLost { .. })));
    assert_eq!(a.stats().watched, 0, "a lost permit is not renewed");
    assert!(permit.release().await.unwrap_err().is_not_held());
    assert_eq!(sem(&b, &name).available_permits().await.unwrap(), 2);

    let permit = sem(&a, &name).acquire().await.unwrap();
    assert!(h.del(&leases_key(h, &name)).await);
    tokio::time::timeout(WATCHDOG, permit.lost())
        .await
        .expect("lost signalled within one watchdog timeout");
    drop(permit);
    a.settle().await;
    assert!(h.keys().await.iter().all(|k| *k != leases_key(h, &name)));
}

/// This client's own release by id tells the permit's guard at once.
pub async fn release_by_id_on_the_same_client_tells_the_guard(h: &dyn Harness) {
    let a = watchdog_client(h).await;
    let s = sem(&a, &unique("psem-own"));
    s.try_set_permits(1).await.unwrap();
    let permit = s.acquire().await.unwrap();
    s.release(permit.id()).await.unwrap();
    assert!(permit.is_lost());
    tokio::time::timeout(Duration::from_millis(10), permit.lost())
        .await
        .expect("already lost");
    assert_eq!(a.stats().watched, 0);
}

/// Dropping a guard gives its permit back (in the background) and stops
/// its renewal; a waiter gets it.
pub async fn dropped_permit_guard_gives_it_back(h: &dyn Harness) {
    let (a, b) = (watchdog_client(h).await, client(h).await);
    let name = unique("psem-drop");
    sem(&a, &name).try_set_permits(1).await.unwrap();
    for lease in [None, Some(Duration::from_secs(60))] {
        let s = sem(&a, &name);
        let permit = match lease {
            Some(lease) => s.acquire_with_lease(lease).await,
            None => s.acquire().await,
        }
        .unwrap();
        let waiter = tokio::spawn({
            let s = sem(&b, &name);
            async move { s.acquire().await.unwrap() }
        });
        waiting(&b, 1).await;
        let dropped = Instant::now();
        drop(permit);
        assert_eq!(a.stats().watched, 0);
        let got = waiter.await.unwrap();
        assert!(dropped.elapsed() < WOKEN_WITHIN, "{:?}", dropped.elapsed());
        got.release().await.unwrap();
    }
    a.settle().await;
    assert_eq!(sem(&a, &name).available_permits().await.unwrap(), 1);
}

/// A permit taken with a lease is not renewed: it comes back when the
/// lease ends, and its guard is told a safety margin before.
pub async fn leased_permit_expires_and_signals(h: &dyn Harness) {
    let (a, b) = (watchdog_client(h).await, client(h).await);
    let name = unique("psem-leased");
    sem(&a, &name).try_set_permits(1).await.unwrap();
    let lease = Duration::from_millis(1500);
    let sent = Instant::now();
    let permit = sem(&a, &name).acquire_with_lease(lease).await.unwrap();
    assert!(!permit.is_renewed());
    assert_eq!(a.stats().watched, 0, "a fixed lease is not renewed");
    assert!(permit.lease_deadline() >= sent + lease);
    assert!(permit.lease_deadline() <= Instant::now() + lease);
    // When it is told is the deadline's business (checked on the deadline,
    // not on the clock after a wake-up, which a loaded machine delays).
    let told_at = permit.lease_deadline() - a.config().safety_margin(lease) - sent;
    assert!(told_at < lease, "told before the lease ends: {told_at:?}");
    assert!(told_at >= lease - Duration::from_millis(100), "{told_at:?}");
    permit.lost().await;
    assert!(Instant::now() >= sent + told_at, "not told early");
    let got = tokio::time::timeout(WOKEN_WITHIN, sem(&b, &name).acquire())
        .await
        .expect("the lease ended")
        .unwrap();
    assert!(sent.elapsed() >= lease - Duration::from_millis(20));
    assert!(permit.release().await.unwrap_err().is_not_held());
    got.release().await.unwrap();
}

/// `update_lease_time` on a guarded permit moves its guard's deadline.
pub async fn update_lease_time_moves_the_guard_deadline(h: &dyn Harness) {
    let a = watchdog_client(h).await;
    let s = sem(&a, &unique("psem-guard-update"));
    s.try_set_permits(1).await.unwrap();
    let permit = s
        .acquire_with_lease(Duration::from_millis(500))
        .await
        .unwrap();
    assert!(s
        .update_lease_time(permit.id(), Duration::from_secs(60))
        .await
        .unwrap());
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert!(!permit.is_lost(), "the longer lease counts");
    assert!(permit.lease_deadline() > Instant::now() + Duration::from_secs(50));
    permit.release().await.unwrap();
}

/// Closing the client gives back every permit its guards hold, renewed
/// or leased, and tells their guards.
pub async fn close_tells_watchdog_permit_guards(h: &dyn Harness) {
    let a = watchdog_client(h).await;
    let s = sem(&a, &unique("psem-close"));
    s.try_set_permits(2).await.unwrap();
    let renewed = s.acquire().await.unwrap();
    let leased = s.acquire_with_lease(Duration::from_secs(60)).await.unwrap();
    a.close().await;
    // Both given back by the close (issue 37, item 9: a leased permit used
    // to stay taken until its lease ended), and both told.
    assert!(renewed.is_lost());
    assert!(leased.is_lost());
    assert!(renewed.check().unwrap_err().is_closed());
    assert!(matches!(
        leased.release().await.unwrap_err(),
        LockError::Closed
    ));
    let b = watchdog_client(h).await;
    assert_eq!(
        sem(&b, s.name().as_str())
            .available_permits()
            .await
            .unwrap(),
        2
    );
}

/// A semaphore whose count was overwritten with another type loses its
/// permit's guard at the next renewal, and the permits of other
/// semaphores renewed in the same batch stay held; the value is left
/// untouched.
pub async fn broken_semaphore_does_not_stop_other_renewals(h: &dyn RedisLayout) {
    let a = watchdog_client(h).await;
    let (good, broken) = (unique("psem-good"), unique("psem-broken"));
    sem(&a, &good).try_set_permits(1).await.unwrap();
    sem(&a, &broken).try_set_permits(1).await.unwrap();
    let kept = sem(&a, &good).acquire().await.unwrap();
    let lost = sem(&a, &broken).acquire().await.unwrap();
    let k = key(h, &broken);
    assert!(h.del(&k).await);
    h.hset(&k, "f", 1, None).await;
    tokio::time::timeout(WATCHDOG, lost.lost())
        .await
        .expect("lost signalled within one watchdog timeout");
    tokio::time::sleep(WATCHDOG * 2).await;
    assert!(!kept.is_lost());
    assert_eq!(sem(&a, &good).available_permits().await.unwrap(), 0);
    assert_eq!(h.hash(&k).await, vec![("f".to_owned(), 1)]);
    kept.release().await.unwrap();
}
