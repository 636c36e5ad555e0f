//! A client's close gives back everything it holds (issue 37, item 9), on
//! the in-memory backend with paused time: every kind's key is gone after
//! `close()`, every guard and permit is told it is lost, and answers
//! `Closed` afterwards; a store that stays down bounds the close by
//! `close_timeout`; an acquisition in flight as the close begins is not
//! left held.

use std::time::Duration;

use lock_redis::{ClientConfig, LockClient, LockError};
use lock_testkit::conformance::config;
use lock_testkit::InMemoryServer;
use tokio::time::Instant;

fn setup() -> (InMemoryServer, LockClient) {
    let server = InMemoryServer::new();
    let client = server.client_with(config()).unwrap();
    (server, client)
}

/// The keys of `names` that stand for a hold (the lock, a fair lock's
/// queue): not the requests' records (`*_latch:{name}:<id>`), which
/// outlive their requests on purpose, nor a fencing counter.
fn lock_keys(server: &InMemoryServer, names: &[&str]) -> Vec<String> {
    server
        .keys()
        .into_iter()
        .filter(|key| names.iter().any(|name| key.contains(name)))
        .filter(|key| !key.contains("_latch:") && !key.contains("lock_token"))
        .collect()
}

fn closed(result: lock_redis::Result<()>) {
    match result {
        Err(LockError::Closed) => {}
        other => panic!("expected Closed, got {other:?}"),
    }
}

/// Locks of every kind (re-entered twice, fixed-lease, fair, both sides of
/// a read-write lock, lean, non-reentrant), an expirable permit under the
/// watchdog and one with a lease, and plain semaphore permits: after
/// `close()`, no lock key is left, the permits are free again, every
/// guard's `lost()` has resolved, and each answers `Closed`.
#[tokio::test(start_paused = true)]
async fn close_gives_back_every_kind_and_tells_every_guard() {
    let (server, c) = setup();
    let lock = c.lock("re").unwrap();
    let outer = lock.lock().await.unwrap();
    let inner = lock.lock_as(outer.owner()).await.unwrap();
    let leased = c
        .lock("leased")
        .unwrap()
        .lock_with_lease(Duration::from_secs(60))
        .await
        .unwrap();
    let fair = c.fair_lock("fair").unwrap().lock().await.unwrap();
    let rw = c.read_write_lock("rw").unwrap();
    let write = rw.write().lock().await.unwrap();
    let read = rw.read().lock_as(write.owner()).await.unwrap();
    let lean = c.lean_lock("lean").unwrap().lock().await.unwrap();
    let nr = c.non_reentrant_lock("nr").unwrap().lock().await.unwrap();
    let fenced = c.fenced_lock("fenced").unwrap().lock().await.unwrap();
    let eps = c.permit_expirable_semaphore("eps").unwrap();
    assert!(eps.try_set_permits(2).await.unwrap());
    let watched = eps.acquire().await.unwrap();
    let leased_permit = eps
        .acquire_with_lease(Duration::from_secs(60))
        .await
        .unwrap();
    let sem = c.semaphore("sem").unwrap();
    assert!(sem.try_set_permits(3).await.unwrap());
    let permits = sem.acquire_many(2).await.unwrap();
    assert_eq!(sem.available_permits().await.unwrap(), 1);

    let names = ["re", "leased", "fair", "rw", "lean", "nr", "fenced"];
    assert!(!lock_keys(&server, &names).is_empty());
    let started = Instant::now();
    c.close().await;
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "a healthy store: {:?}",
        started.elapsed()
    );
    assert_eq!(lock_keys(&server, &names), Vec::<String>::new());

    // Every guard was told, at once.
    for guard in [&outer, &inner, &leased, &fair, &write, &read, &lean, &nr] {
        tokio::time::timeout(Duration::ZERO, guard.lost())
            .await
            .expect("told at close");
        assert!(matches!(guard.check(), Err(LockError::Closed)));
    }
    tokio::time::timeout(Duration::ZERO, watched.lost())
        .await
        .expect("told at close");
    tokio::time::timeout(Duration::ZERO, leased_permit.lost())
        .await
        .expect("told at close");
    assert!(matches!(watched.check(), Err(LockError::Closed)));

    // The permits are back: read straight from the store.
    let other = server.client_with(config()).unwrap();
    assert_eq!(
        other
            .permit_expirable_semaphore("eps")
            .unwrap()
            .available_permits()
            .await
            .unwrap(),
        2
    );
    assert_eq!(
        other
            .semaphore("sem")
            .unwrap()
            .available_permits()
            .await
            .unwrap(),
        3
    );

    // Used afterwards: `Closed`, and nothing sent (the counts stay right).
    closed(inner.unlock().await);
    closed(outer.unlock().await);
    closed(leased.unlock().await);
    closed(fair.unlock().await);
    closed(read.unlock().await);
    closed(write.unlock().await);
    closed(lean.unlock().await);
    closed(nr.unlock().await);
    closed(fenced.unlock().await);
    closed(watched.release().await);
    closed(permits.release().await);
    drop(leased_permit);
    let sem = other.semaphore("sem").unwrap();
    assert_eq!(sem.available_permits().await.unwrap(), 3, "given back once");
}

/// A guard dropped after the close sends nothing, and harms nothing: the
/// lock taken meanwhile by another client stays that client's.
#[tokio::test(start_paused = true)]
async fn a_guard_dropped_after_close_touches_nothing() {
    let (server, c) = setup();
    let guard = c.lock("after").unwrap().lock().await.unwrap();
    let permit = {
        let sem = c.semaphore("after-sem").unwrap();
        sem.try_set_permits(1).await.unwrap();
        sem.acquire().await.unwrap()
    };
    c.close().await;
    let other = server.client_with(config()).unwrap();
    let theirs = other.lock("after").unwrap().try_lock().await.unwrap();
    assert!(theirs.is_some(), "given back by the close");
    let sem = other.semaphore("after-sem").unwrap();
    let their_permit = sem.try_acquire().await.unwrap().expect("given back");
    drop(guard);
    drop(permit);
    other.settle().await;
    let lock = other.lock("after").unwrap();
    assert!(lock
        .is_held_by(theirs.as_ref().unwrap().owner())
        .await
        .unwrap());
    assert_eq!(sem.available_permits().await.unwrap(), 0, "not given twice");
    drop(their_permit);
}

/// A release that fails for a moment during the close is tried again.
#[tokio::test(start_paused = true)]
async fn a_release_failing_for_a_moment_is_retried_within_the_bound() {
    let (server, c) = setup();
    let _guard = c.lock("flaky").unwrap().lock().await.unwrap();
    // More failures than one call's retry policy has attempts.
    server.fail_next(6);
    c.close().await;
    assert_eq!(server.pttl("flaky"), -2, "given back after the failures");
}

/// With the store down the whole time, the close returns once its bound
/// is over (exactly: paused time), and the guards were told at once; the
/// lock then stays until its lease ends.
#[tokio::test(start_paused = true)]
async fn close_with_the_store_down_returns_after_the_bound() {
    let server = InMemoryServer::new();
    let bound = Duration::from_secs(2);
    let c = server
        .client_with(
            config()
                .watchdog_timeout(Duration::from_secs(30))
                .close_timeout(bound),
        )
        .unwrap();
    let guard = c.lock("down").unwrap().lock().await.unwrap();
    server.set_down(true);
    let started = Instant::now();
    let close = c.close();
    tokio::pin!(close);
    tokio::select! {
        _ = &mut close => panic!("closed before the bound with the store down"),
        _ = guard.lost() => {}
    }
    close.await;
    assert_eq!(started.elapsed(), bound, "the bound, then closed");
    server.set_down(false);
    assert!(server.pttl("down") > 0, "left to its lease");
    closed(guard.unlock().await);
}

/// A zero bound gives nothing back and closes at once.
#[tokio::test(start_paused = true)]
async fn a_zero_bound_closes_at_once() {
    let server = InMemoryServer::new();
    let c = server
        .client_with(config().close_timeout(Duration::ZERO))
        .unwrap();
    let guard = c.lock("zero").unwrap().lock().await.unwrap();
    let started = Instant::now();
    c.close().await;
    assert_eq!(started.elapsed(), Duration::ZERO);
    assert!(guard.is_lost());
}

/// An acquisition on the wire when the close begins lands after the
/// tables were closed: its hold is given back, and its caller told
/// `Closed`, so nothing is held after the close that no one releases.
#[tokio::test(start_paused = true)]
async fn an_acquisition_in_flight_during_close_is_not_left_held() {
    let server = InMemoryServer::new();
    let c = server
        .client_with(ClientConfig::default().watchdog_timeout(Duration::from_secs(30)))
        .unwrap();
    server.set_latency(Duration::from_millis(100));
    let lock = c.lock("in-flight").unwrap();
    let acquiring = tokio::spawn(async move { lock.lock().await.map(|g| g.owner()) });
    // The attempt is on its way (it runs on the store 100 ms from now).
    tokio::time::sleep(Duration::from_millis(10)).await;
    c.close().await;
    let outcome = acquiring.await.unwrap();
    assert!(matches!(outcome, Err(LockError::Closed)), "{outcome:?}");
    server.set_latency(Duration::ZERO);
    assert_eq!(server.pttl("in-flight"), -2, "given back as it landed");
}

/// The same for a semaphore's permits and an expirable permit.
#[tokio::test(start_paused = true)]
async fn permits_taken_during_close_are_given_back() {
    let (server, c) = setup();
    let sem = c.semaphore("in-flight-sem").unwrap();
    sem.try_set_permits(1).await.unwrap();
    let eps = c.permit_expirable_semaphore("in-flight-eps").unwrap();
    eps.try_set_permits(1).await.unwrap();
    server.set_latency(Duration::from_millis(100));
    let taking = {
        let sem = sem.clone();
        tokio::spawn(async move { sem.acquire().await.map(|p| p.forget()) })
    };
    let taking_eps = {
        let eps = eps.clone();
        tokio::spawn(async move { eps.acquire().await.map(|p| p.into_id()) })
    };
    tokio::time::sleep(Duration::from_millis(10)).await;
    c.close().await;
    assert!(matches!(taking.await.unwrap(), Err(LockError::Closed)));
    assert!(matches!(taking_eps.await.unwrap(), Err(LockError::Closed)));
    server.set_latency(Duration::ZERO);
    let other = server.client_with(config()).unwrap();
    let sem = other.semaphore("in-flight-sem").unwrap();
    assert_eq!(sem.available_permits().await.unwrap(), 1);
    let eps = other.permit_expirable_semaphore("in-flight-eps").unwrap();
    assert_eq!(eps.available_permits().await.unwrap(), 1);
}

/// A fair lock released by the close is handed to a waiter of the same
/// client, which finds the client closing: it gives it back too, and its
/// caller is told `Closed`.
#[tokio::test(start_paused = true)]
async fn a_lock_handed_to_a_waiter_during_close_is_given_back() {
    let (server, c) = setup();
    let fair = c.fair_lock("handed").unwrap();
    let held = fair.lock().await.unwrap();
    let waiter = {
        let fair = fair.clone();
        tokio::spawn(async move { fair.lock().await.map(|g| g.owner()) })
    };
    tokio::time::sleep(Duration::from_millis(10)).await;
    c.close().await;
    let outcome = tokio::time::timeout(Duration::from_secs(60), waiter)
        .await
        .expect("the waiter ends")
        .unwrap();
    assert!(matches!(outcome, Err(LockError::Closed)), "{outcome:?}");
    drop(held);
    assert_eq!(lock_keys(&server, &["handed"]), Vec::<String>::new());
}

/// A waiter of the closing client, waiting for another client's lock,
/// ends at once with `Closed`, not when that holder lets go.
#[tokio::test(start_paused = true)]
async fn waiters_end_with_closed_at_once() {
    let server = InMemoryServer::new();
    let long = ClientConfig::default().watchdog_timeout(Duration::from_secs(30));
    let holder = server.client_with(long.clone()).unwrap();
    let _held = holder.lock("busy").unwrap().lock().await.unwrap();
    let c = server.client_with(long).unwrap();
    let waiter = {
        let lock = c.lock("busy").unwrap();
        tokio::spawn(async move { lock.lock().await.map(|g| g.owner()) })
    };
    let sem = c.semaphore("empty").unwrap();
    sem.try_set_permits(0).await.unwrap();
    let sem_waiter = tokio::spawn(async move { sem.acquire().await.map(|p| p.forget()) });
    tokio::time::sleep(Duration::from_millis(10)).await;
    let started = Instant::now();
    c.close().await;
    let outcome = tokio::time::timeout(Duration::from_millis(100), waiter)
        .await
        .expect("the waiter ended with the close")
        .unwrap();
    assert!(matches!(outcome, Err(LockError::Closed)), "{outcome:?}");
    let outcome = tokio::time::timeout(Duration::from_millis(100), sem_waiter)
        .await
        .expect("the semaphore's waiter ended with the close")
        .unwrap();
    assert!(matches!(outcome, Err(LockError::Closed)), "{outcome:?}");
    assert!(started.elapsed() < Duration::from_millis(100));
}

/// What the bound left behind is said in a warning, with the count.
#[cfg(feature = "logs")]
#[tokio::test(start_paused = true)]
async fn the_close_warns_how_many_it_left() {
    let warnings = lock_testkit::logs::capture_warnings();
    let server = InMemoryServer::new();
    let c = server
        .client_with(config().close_timeout(Duration::from_secs(1)))
        .unwrap();
    let _a = c.lock("left-a").unwrap().lock().await.unwrap();
    let _b = c.lock("left-b").unwrap().lock().await.unwrap();
    server.set_down(true);
    c.close().await;
    let warned = warnings.all();
    let left = warned
        .iter()
        .find(|w| {
            w.field("message")
                .is_some_and(|m| m.contains("close_timeout"))
        })
        .unwrap_or_else(|| panic!("no warning of what was left: {warned:?}"));
    assert_eq!(left.field("left"), Some("2"), "the count: {left:?}");
}
