//! Waiting through store outages, on the in-memory backend with paused
//! time: a wait without a deadline rides out an outage of any length, a
//! wait with one keeps trying until its deadline, a call that does not wait
//! keeps the retry policy, and a wait dropped during an outage leaves
//! nothing behind.

use std::time::Duration;

use lock_redis::{LockClient, RetryPolicy};
use lock_testkit::conformance::config;
use lock_testkit::InMemoryServer;
use tokio::time::Instant;

/// Far longer than the retry policy (about 0.4 s).
const OUTAGE: Duration = Duration::from_secs(10);
/// The holder's lease: it runs out inside the outage, so the waiter's
/// re-check at the holder's TTL meets the outage.
const LEASE: Duration = Duration::from_secs(2);

fn setup() -> (InMemoryServer, LockClient, LockClient) {
    let server = InMemoryServer::new();
    let holder = server.client_with(config()).unwrap();
    let waiter = server.client_with(config()).unwrap();
    (server, holder, waiter)
}

/// After the store answers again, a waiter tries within one capped backoff.
fn one_backoff() -> Duration {
    RetryPolicy::default().max_backoff
}

#[tokio::test(start_paused = true)]
async fn an_unbounded_wait_rides_out_an_outage() {
    let (server, holder, waiter) = setup();
    for (name, fair) in [("outage-plain", false), ("outage-fair", true)] {
        let take = |c: &LockClient| {
            if fair {
                c.fair_lock(name).unwrap().as_lock().clone()
            } else {
                c.lock(name).unwrap()
            }
        };
        let _held = take(&holder).lock_with_lease(LEASE).await.unwrap();
        let lock = take(&waiter);
        let waiting = tokio::spawn(async move { lock.lock().await.map(|g| (g, Instant::now())) });
        tokio::time::sleep(Duration::from_millis(500)).await;
        server.set_down(true);
        tokio::time::sleep(OUTAGE).await;
        assert!(!waiting.is_finished(), "{name}: the waiter gave up");
        server.set_down(false);
        let back = Instant::now();
        let (guard, acquired) = waiting.await.unwrap().expect("the waiter gets the lock");
        assert!(
            acquired - back <= one_backoff(),
            "{name}: took {:?} after the store came back",
            acquired - back
        );
        assert!(take(&waiter).is_held_by(guard.owner()).await.unwrap());
        guard.unlock().await.unwrap();
    }
}

#[tokio::test(start_paused = true)]
async fn a_bounded_wait_keeps_trying_until_its_deadline() {
    let (server, holder, waiter) = setup();
    let _held = holder
        .lock("bounded")
        .unwrap()
        .lock_with_lease(LEASE)
        .await
        .unwrap();
    server.set_down(true);
    let started = Instant::now();
    let wait = Duration::from_secs(5);
    let err = waiter
        .lock("bounded")
        .unwrap()
        .try_lock_for(wait)
        .await
        .expect_err("the store never answered");
    assert!(err.is_retryable(), "{err:?}");
    let waited = started.elapsed();
    // The last attempt starts at the deadline and runs its retry policy.
    let policy = RetryPolicy::default();
    assert!(
        waited >= wait && waited <= wait + policy.max_total_backoff(),
        "gave up after {waited:?}"
    );

    // The store comes back before the deadline: the lock is taken then.
    let lock = waiter.lock("bounded").unwrap();
    let waiting = tokio::spawn(async move { lock.try_lock_for(wait).await });
    tokio::time::sleep(Duration::from_secs(3)).await;
    server.set_down(false);
    let guard = waiting
        .await
        .unwrap()
        .unwrap()
        .expect("taken once the store answered and the lease ran out");
    guard.unlock().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn calls_that_do_not_wait_keep_the_retry_policy() {
    let (server, holder, _waiter) = setup();
    let guard = holder
        .lock("no-wait")
        .unwrap()
        .lock_with_lease(LEASE)
        .await
        .unwrap();
    server.set_down(true);
    let policy = RetryPolicy::default();
    let started = Instant::now();
    let lock = holder.lock("no-wait").unwrap();
    assert!(lock.try_lock().await.unwrap_err().is_retryable());
    assert!(started.elapsed() <= policy.max_total_backoff());
    let started = Instant::now();
    assert!(guard.unlock().await.unwrap_err().is_retryable());
    assert!(started.elapsed() <= policy.max_total_backoff());
    server.set_down(false);
}

#[tokio::test(start_paused = true)]
async fn a_wait_dropped_during_an_outage_leaves_nothing() {
    let (server, holder, waiter) = setup();
    let _held = holder
        .lock("dropped")
        .unwrap()
        .lock_with_lease(LEASE)
        .await
        .unwrap();
    let lock = waiter.lock("dropped").unwrap();
    let waiting = tokio::spawn(async move { lock.lock().await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    server.set_down(true);
    tokio::time::sleep(OUTAGE).await;
    waiting.abort();
    assert!(waiting.await.unwrap_err().is_cancelled());
    server.set_down(false);
    // Background reconciling of failed attempts finishes within the record
    // time to live; then nothing is held, queued or subscribed.
    tokio::time::sleep(config().record_ttl + Duration::from_secs(1)).await;
    assert!(!waiter.lock("dropped").unwrap().is_locked().await.unwrap());
    let stats = waiter.stats();
    assert_eq!(stats.in_flight, 0, "{stats:?}");
    assert_eq!(stats.subscriptions_active, 0, "{stats:?}");
}
