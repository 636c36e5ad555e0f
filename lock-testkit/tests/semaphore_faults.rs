//! The semaphore kinds under injected faults (in memory, paused time):
//! retries after lost replies never count twice, an acquisition whose
//! outcome stayed unknown is undone (also when its caller gave up during
//! the retries), a lost notice costs one recheck; a
//! renewed permit whose renewals cannot be confirmed is reported lost by
//! its lease deadline, and a short outage loses nothing.

use std::time::Duration;

use tokio::time::Instant;

use lock_redis::{ClientConfig, RetryPolicy};
use lock_testkit::InMemoryServer;

#[tokio::test(start_paused = true)]
async fn semaphore_changes_retried_after_lost_replies_count_once() {
    let server = InMemoryServer::new();
    let c = server.client().unwrap();
    let s = c.semaphore("lost").unwrap();
    s.try_set_permits(3).await.unwrap();
    server.lose_next_replies(1);
    let two = s.acquire_many(2).await.unwrap();
    assert_eq!(s.available_permits().await.unwrap(), 1, "taken once");
    server.lose_next_replies(1);
    two.release().await.unwrap();
    assert_eq!(s.available_permits().await.unwrap(), 3, "given back once");
    server.lose_next_replies(1);
    s.add_permits(2).await.unwrap();
    assert_eq!(s.available_permits().await.unwrap(), 5, "added once");
    server.lose_next_replies(1);
    assert_eq!(s.drain_permits().await.unwrap(), 5, "the first reply");
}

#[tokio::test(start_paused = true)]
async fn expirable_permits_retried_after_lost_replies_count_once() {
    let server = InMemoryServer::new();
    let c = server.client().unwrap();
    let s = c.permit_expirable_semaphore("lost").unwrap();
    s.try_set_permits(2).await.unwrap();
    server.lose_next_replies(1);
    let permit = s.acquire().await.unwrap();
    assert_eq!(s.available_permits().await.unwrap(), 1, "taken once");
    server.lose_next_replies(1);
    permit.release().await.unwrap();
    assert_eq!(s.available_permits().await.unwrap(), 2, "given back once");
}

/// `try_set_permits` retried after a lost reply answers what its first
/// attempt did (it created the semaphore), not `false`; so do the other
/// changes of both kinds, which count once.
#[tokio::test(start_paused = true)]
async fn try_set_permits_retried_after_a_lost_reply_answers_true() {
    let server = InMemoryServer::new();
    let c = server.client().unwrap();
    let s = c.semaphore("set-lost").unwrap();
    server.lose_next_replies(1);
    assert!(
        s.try_set_permits(3).await.unwrap(),
        "the first attempt created it"
    );
    server.lose_next_replies(1);
    assert!(
        !s.try_set_permits(5).await.unwrap(),
        "the first attempt found it"
    );
    assert_eq!(s.available_permits().await.unwrap(), 3);
    server.lose_next_replies(1);
    assert!(s
        .try_set_permits_with_ttl(1, Duration::from_secs(1))
        .await
        .is_ok_and(|set| !set));
    server.lose_next_replies(1);
    assert!(s.release_if_exists(2).await.unwrap());
    assert_eq!(s.available_permits().await.unwrap(), 5, "given back once");
    let absent = c.semaphore("set-lost-absent").unwrap();
    server.lose_next_replies(1);
    assert!(!absent.release_if_exists(2).await.unwrap());
    assert!(!server.keys().contains(&"set-lost-absent".to_owned()));

    let p = c.permit_expirable_semaphore("pset-lost").unwrap();
    server.lose_next_replies(1);
    assert!(
        p.try_set_permits(4).await.unwrap(),
        "the first attempt created it"
    );
    server.lose_next_replies(1);
    p.set_permits(6).await.unwrap();
    server.lose_next_replies(1);
    let permits = p.acquire_many(3).await.unwrap();
    let ids: Vec<_> = permits.iter().map(|permit| permit.id()).collect();
    assert_eq!(p.available_permits().await.unwrap(), 3, "taken once");
    server.lose_next_replies(1);
    p.set_permits(4).await.unwrap();
    assert_eq!(p.available_permits().await.unwrap(), 1, "moved once");
    server.lose_next_replies(1);
    assert_eq!(
        p.try_release_many(&ids).await.unwrap(),
        3,
        "the first reply"
    );
    assert_eq!(p.available_permits().await.unwrap(), 4, "given back once");
}

/// Every attempt of an acquisition fails after running (its replies lost):
/// a try gets the error, and the permits it took are found and given back
/// in the background. (A waiting acquisition rides the failures out, as a
/// lock's waiter does, and takes the permits once, by a fresh attempt.)
#[tokio::test(start_paused = true)]
async fn an_acquisition_with_an_unknown_outcome_is_undone() {
    let server = InMemoryServer::new();
    let (c, s, attempts) = two_permits(&server, "unknown").await;
    server.lose_next_replies(attempts);
    let err = s.try_acquire_many(2).await.unwrap_err();
    assert!(err.is_retryable(), "{err:?}");
    c.settle().await;
    assert_eq!(s.available_permits().await.unwrap(), 2);

    server.lose_next_replies(attempts);
    let permits = s.acquire_many(2).await.unwrap();
    c.settle().await;
    assert_eq!(s.available_permits().await.unwrap(), 0, "taken once");
    permits.release().await.unwrap();
    assert_eq!(s.available_permits().await.unwrap(), 2);
}

/// Without notices (a pub/sub outage), a waiter still gets a released
/// permit, within the engine's recheck.
#[tokio::test(start_paused = true)]
async fn a_lost_notice_costs_one_recheck() {
    let server = InMemoryServer::new();
    let (a, b) = (server.client().unwrap(), server.client().unwrap());
    let s = a.semaphore("quiet").unwrap();
    s.try_set_permits(1).await.unwrap();
    let held = s.acquire().await.unwrap();
    let waiter = tokio::spawn({
        let s = b.semaphore("quiet").unwrap();
        async move { s.acquire().await.unwrap().forget() }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    server.set_drop_notices(true);
    let released = tokio::time::Instant::now();
    held.release().await.unwrap();
    assert_eq!(waiter.await.unwrap(), 1);
    let waited = released.elapsed();
    let recheck = a.config().no_ttl_recheck;
    assert!(waited <= recheck, "{waited:?}");
    assert!(
        waited >= Duration::from_millis(100),
        "{waited:?}: not woken by a notice"
    );
}

/// The watchdog timeout of the renewal checks below.
const WATCHDOG: Duration = Duration::from_secs(1);

fn watchdog_config() -> ClientConfig {
    ClientConfig::default().watchdog_timeout(WATCHDOG)
}

/// Renewals failing (the server down) until the lease deadline: the
/// permit's guard is told a safety margin before it, not later.
#[tokio::test(start_paused = true)]
async fn permit_renewals_failing_past_the_lease_fire_the_lost_signal() {
    let server = InMemoryServer::new();
    let c = server.client_with(watchdog_config()).unwrap();
    let s = c.permit_expirable_semaphore("outage").unwrap();
    s.try_set_permits(1).await.unwrap();
    let acquired = Instant::now();
    let permit = s.acquire().await.unwrap();
    server.set_down(true);
    tokio::time::timeout(WATCHDOG * 2, permit.lost())
        .await
        .expect("lost signal fires once the lease deadline passes");
    let lost_at = WATCHDOG - watchdog_config().safety_margin(WATCHDOG);
    let after = acquired.elapsed();
    assert!(after <= lost_at, "lost reported late: {after:?}");
    assert!(
        after >= lost_at - Duration::from_millis(1),
        "early: {after:?}"
    );
    assert!(permit.check().unwrap_err().is_lock_lost());
    assert_eq!(c.stats().watched, 0);
    server.set_down(false);
}

/// A renewal that hangs (a partition: no reply until the command timeout)
/// does not delay the loss: it is reported by the lease deadline.
#[tokio::test(start_paused = true)]
async fn permit_loss_during_a_hanging_renewal_is_reported_on_time() {
    let server = InMemoryServer::new();
    server.set_command_timeout(Some(Duration::from_secs(3)));
    let c = server.client_with(watchdog_config()).unwrap();
    let s = c.permit_expirable_semaphore("partition").unwrap();
    s.try_set_permits(1).await.unwrap();
    let permit = s.acquire().await.unwrap();
    let deadline = Instant::now() + WATCHDOG;
    server.set_latency(Duration::from_secs(3600));
    tokio::time::timeout_at(deadline, permit.lost())
        .await
        .expect("lost() resolves by the lease deadline");
    assert!(permit.is_lost());
    assert_eq!(c.stats().watched, 0, "the watchdog dropped it on time");
}

/// An outage shorter than the lease loses nothing: the next renewal
/// extends the permit.
#[tokio::test(start_paused = true)]
async fn short_outage_does_not_lose_the_permit() {
    let server = InMemoryServer::new();
    let c = server.client_with(watchdog_config()).unwrap();
    let s = c.permit_expirable_semaphore("blip").unwrap();
    s.try_set_permits(1).await.unwrap();
    let permit = s.acquire().await.unwrap();
    tokio::time::sleep(WATCHDOG / 3 - Duration::from_millis(10)).await;
    server.set_down(true);
    tokio::time::sleep(WATCHDOG / 2).await;
    server.set_down(false);
    tokio::time::sleep(WATCHDOG * 3).await;
    assert!(!permit.is_lost());
    assert_eq!(s.available_permits().await.unwrap(), 0);
    permit.release().await.unwrap();
    assert_eq!(s.available_permits().await.unwrap(), 1);
}

/// The same when the caller gives up during the retries: the acquisition
/// goes on without it, and when its outcome stays unknown its permits are
/// still found and given back (every copy is held on the way and runs
/// late, the first one taking the permits).
#[tokio::test(start_paused = true)]
async fn a_cancelled_acquisition_with_an_unknown_outcome_is_undone() {
    let server = InMemoryServer::new();
    let (c, s, attempts) = two_permits(&server, "cancelled-unknown").await;
    server.delay_next(attempts, Duration::from_secs(10));
    let gave_up = tokio::time::timeout(Duration::from_millis(10), s.acquire_many(2)).await;
    assert!(gave_up.is_err(), "the caller gave up during the retries");
    c.settle().await;
    tokio::time::sleep(Duration::from_secs(11)).await;
    c.settle().await;
    assert_eq!(s.available_permits().await.unwrap(), 2);
}

/// A client with the default retry policy, semaphore `name` of it with two
/// permits, and how many attempts a call makes.
async fn two_permits(
    server: &InMemoryServer,
    name: &str,
) -> (lock_redis::LockClient, lock_redis::Semaphore, u32) {
    let retry = RetryPolicy::default();
    let attempts = retry.attempts;
    let c = server
        .client_with(ClientConfig::default().retry(retry))
        .unwrap();
    let s = c.semaphore(name).unwrap();
    s.try_set_permits(2).await.unwrap();
    (c, s, attempts)
}

/// A release whose first copy ran, whose reply was lost, and whose store
/// stayed out of reach until its record expired: the background repeat is
/// refused as stale, which no longer proves the first copy never ran, so
/// it must not be made again as a new request. Made again, it gives the
/// permit back twice: one permit more than the semaphore was set to.
#[tokio::test(start_paused = true)]
async fn a_release_whose_record_expired_is_not_made_again() {
    let server = InMemoryServer::new();
    let c = server.client().unwrap();
    let s = c.semaphore("release-record-expired").unwrap();
    s.try_set_permits(1).await.unwrap();
    let permit = s.acquire().await.unwrap();
    server.lose_next_replies(1);
    let releasing = tokio::spawn(permit.release());
    // The first copy has run; its retry waits a backoff.
    tokio::time::sleep(Duration::from_millis(1)).await;
    server.set_down(true);
    let err = releasing.await.unwrap().unwrap_err();
    assert!(err.is_retryable(), "{err}");
    tokio::time::sleep(Duration::from_secs(40)).await;
    server.set_down(false);
    tokio::time::sleep(RetryPolicy::default().max_backoff * 2).await;
    assert_eq!(
        s.available_permits().await.unwrap(),
        1,
        "the permit was given back twice"
    );
}

/// An expirable permit whose reply comes after its lease (less the safety
/// margin) ran out: no permit is handed out, since its guard would be lost
/// already; it is given back, and the caller gets `LockLost`.
#[tokio::test(start_paused = true)]
async fn a_permit_whose_reply_comes_after_its_lease_is_given_back() {
    let server = InMemoryServer::new();
    let c = server.client().unwrap();
    let s = c.permit_expirable_semaphore("late-permit").unwrap();
    s.try_set_permits(1).await.unwrap();
    server.set_latency(Duration::from_millis(1500));
    let late = s.acquire_with_lease(Duration::from_secs(1)).await;
    server.set_latency(Duration::ZERO);
    let err = late.expect_err("a permit lost as it is handed out");
    assert!(
        matches!(err, lock_redis::LockError::LockLost { .. }),
        "{err:?}"
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(s.available_permits().await.unwrap(), 1, "given back");
    assert!(s.try_acquire().await.unwrap().is_some());
}
