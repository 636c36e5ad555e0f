//! Dropped futures: an acquisition on the wire finishes in the background
//! and is given back; a dropped waiter leaves its channel and passes on a
//! wake-up it had not used; a wait ends by its deadline whatever the store
//! does.

use std::time::Duration;

use lock_core::WAIT_OVERSHOOT;
use tokio::time::{sleep, timeout, Instant};

use crate::fake::{bounded, Fake, Op, Step};

#[tokio::test(start_paused = true)]
async fn a_dropped_lock_future_leaves_nothing_held() {
    let fake = Fake::new();
    let lock = fake.lock("a");
    // The store takes 5 s to run the acquisition; the caller leaves at 1 s.
    fake.kind
        .script(Op::Acquire, [Step::Slow(Duration::from_secs(5))]);
    assert!(timeout(Duration::from_secs(1), lock.lock()).await.is_err());
    fake.settle().await;
    // It ran (after the caller left), and was given back.
    assert_eq!(fake.kind.store().acquires_applied, 1);
    assert_eq!(fake.kind.store().releases_applied, 1);
    assert!(fake.kind.is_empty());
    assert_eq!(fake.engine.stats().watched, 0);
}

#[tokio::test(start_paused = true)]
async fn a_dropped_waiter_leaves_its_channel() {
    let fake = Fake::new();
    let lock = fake.lock("a");
    let held = lock.lock().await.unwrap();
    // Another task waits (this one holds the lock: its own wait would be
    // refused as a self-deadlock), and gives up after 1 s.
    let waiter = tokio::spawn({
        let lock = lock.clone();
        async move { timeout(Duration::from_secs(1), lock.lock()).await.is_err() }
    });
    sleep(Duration::from_millis(1)).await;
    assert_eq!(fake.connection.subscriptions().len(), 1);
    assert!(bounded(waiter).await.unwrap(), "gave up");
    assert!(fake.connection.subscriptions().is_empty());
    assert_eq!(fake.connection.subscribe_calls(), 1);
    assert_eq!(fake.connection.unsubscribe_calls(), 1);
    held.unlock().await.unwrap();
    fake.settle().await;
    assert!(fake.kind.is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_waiter_dropped_after_its_wakeup_passes_it_on() {
    let fake = Fake::new();
    let lock = fake.lock("a");
    let held = lock.lock().await.unwrap();
    let first = tokio::spawn({
        let lock = lock.clone();
        async move { lock.lock().await }
    });
    sleep(Duration::from_millis(1)).await;
    let second = tokio::spawn({
        let lock = lock.clone();
        async move { lock.lock().await }
    });
    sleep(Duration::from_millis(1)).await;
    // The notice wakes the first waiter, which goes away before it looks.
    held.unlock().await.unwrap();
    first.abort();
    let guard = timeout(Duration::from_secs(1), second)
        .await
        .expect("the wake-up reached the second waiter, not its 30 s ttl")
        .unwrap()
        .unwrap();
    assert_eq!(
        fake.kind.entry("a").map(|e| e.field),
        Some(guard.owner().field())
    );
}

#[tokio::test(start_paused = true)]
async fn try_lock_for_returns_by_its_deadline_against_a_store_that_never_answers() {
    let fake = Fake::new();
    let lock = fake.lock("a");
    fake.kind.always(Op::Acquire, Some(Step::Never));
    let wait = Duration::from_secs(2);
    let start = Instant::now();
    // Bounded here too, so a wait that never ends fails instead of hanging.
    let result = timeout(Duration::from_secs(60), lock.try_lock_for(wait))
        .await
        .expect("the wait returned");
    let took = Instant::now() - start;
    assert!(took <= wait + WAIT_OVERSHOOT, "took {took:?}");
    // Never answered: the wait cannot say the lock was held.
    let error = result.unwrap_err();
    assert!(error.is_timeout(), "{error}");
}

#[tokio::test(start_paused = true)]
async fn try_lock_for_a_held_lock_against_a_store_gone_silent_runs_out() {
    let fake = Fake::new();
    let lock = fake.lock("a");
    let _held = lock.lock().await.unwrap();
    // The first look is answered "held"; every later one never is.
    fake.kind.always(Op::Acquire, Some(Step::Never));
    fake.kind.script(Op::Acquire, [Step::Answer]);
    let wait = Duration::from_secs(2);
    let start = Instant::now();
    // Another task (this one holds the lock), bounded so a wait that never
    // ends fails instead of hanging.
    let waiter = tokio::spawn({
        let lock = lock.clone();
        async move { lock.try_lock_for(wait).await.map(|guard| guard.is_some()) }
    });
    let result = timeout(Duration::from_secs(60), waiter)
        .await
        .expect("the wait returned")
        .unwrap();
    assert!(Instant::now() - start <= wait + WAIT_OVERSHOOT);
    // The store said it was held: the wait ran out.
    assert!(!result.unwrap());
}
