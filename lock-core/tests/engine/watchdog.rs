//! The watchdog: renews watchdog-leased holds every third of the lease,
//! and tells a guard its lock is lost when the store says it is not held
//! or renewals fail until the lease could have run out.

use std::time::Duration;

use lock_core::LockError;
use tokio::time::{sleep, timeout, Instant};

use crate::fake::{Fake, Op, Step};

#[tokio::test(start_paused = true)]
async fn the_watchdog_keeps_a_held_lock_past_many_leases() {
    let fake = Fake::new();
    let lock = fake.lock("a");
    let guard = lock.lock().await.unwrap();
    // Ten 30 s leases.
    sleep(Duration::from_secs(300)).await;
    guard.check().unwrap();
    let entry = fake.kind.entry("a").expect("still held in the store");
    assert_eq!(entry.field, guard.owner().field());
    // One renewal every 10 s (a third of the lease).
    let renewals = fake.kind.calls(Op::Renew);
    assert!((29..=30).contains(&renewals), "{renewals} renewals");
    guard.unlock().await.unwrap();
    assert!(fake.kind.is_empty());
    // Nothing is renewed once unlocked.
    sleep(Duration::from_secs(60)).await;
    assert_eq!(fake.kind.calls(Op::Renew), renewals);
}

#[tokio::test(start_paused = true)]
async fn a_renewal_answered_not_held_loses_the_guard() {
    let fake = Fake::new();
    let lock = fake.lock("a");
    let guard = lock.lock().await.unwrap();
    sleep(Duration::from_secs(15)).await;
    // Gone from the store behind the client's back (expired, deleted).
    assert!(fake.kind.store().force_unlock(lock.name()));
    timeout(Duration::from_secs(10), guard.lost())
        .await
        .expect("the next renewal (within 10 s) finds it gone");
    assert!(guard.is_lost());
    assert!(matches!(guard.check(), Err(LockError::LockLost { .. })));
    let renewals = fake.kind.calls(Op::Renew);
    sleep(Duration::from_secs(60)).await;
    assert_eq!(
        fake.kind.calls(Op::Renew),
        renewals,
        "a lost hold is not renewed"
    );
}

#[tokio::test(start_paused = true)]
async fn renewals_failing_until_the_lease_deadline_lose_the_guard() {
    let fake = Fake::new();
    let lock = fake.lock("a");
    let start = Instant::now();
    let guard = lock.lock().await.unwrap();
    fake.kind.always(
        Op::Renew,
        Some(Step::Fail(LockError::unavailable("down", None))),
    );
    guard.lost().await;
    // Reported a safety margin (30 s / 100 + 2 ms) before the store may
    // expire the lock, and not before.
    let margin = fake.engine.config().safety_margin(Duration::from_secs(30));
    assert_eq!(Instant::now() - start, Duration::from_secs(30) - margin);
    assert!(fake.kind.calls(Op::Renew) >= 2);
}

#[tokio::test(start_paused = true)]
async fn a_fixed_lease_is_never_renewed() {
    let fake = Fake::new();
    let lock = fake.lock("a");
    let guard = lock.lock_with_lease(Duration::from_secs(5)).await.unwrap();
    sleep(Duration::from_secs(20)).await;
    assert_eq!(fake.kind.calls(Op::Renew), 0);
    assert!(guard.is_lost());
    assert!(fake.kind.is_empty(), "expired in the store");
}

#[tokio::test(start_paused = true)]
async fn a_slow_renewal_does_not_lose_a_hold_it_renews_in_time() {
    let fake = Fake::new();
    let lock = fake.lock("a");
    let guard = lock.lock().await.unwrap();
    // Each renewal takes 5 s to answer: still well within the lease.
    fake.kind
        .always(Op::Renew, Some(Step::Slow(Duration::from_secs(5))));
    sleep(Duration::from_secs(120)).await;
    guard.check().unwrap();
    assert!(fake.kind.entry("a").is_some());
}
