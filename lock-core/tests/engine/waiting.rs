//! Waiting for a held lock: woken by the release's notice, never by
//! polling; a lost notice costs at most the holder's time to live.

use std::time::Duration;

use lock_core::backend::Notice;
use lock_core::{ClientConfig, WaitStrategy};
use tokio::time::{sleep, timeout, Instant};

use crate::fake::{bounded, Fake, FakeKind, Op, Step};

#[tokio::test(start_paused = true)]
async fn a_waiter_is_woken_by_the_release_notice_not_by_polling() {
    let fake = Fake::new();
    let lock = fake.lock("a");
    let held = lock.lock().await.unwrap();
    let waiter = tokio::spawn({
        let lock = lock.clone();
        async move { lock.lock().await }
    });
    // Far less than the holder's 30 s lease: the waiter sleeps on.
    sleep(Duration::from_secs(20)).await;
    assert!(!waiter.is_finished());
    // The waiter's first look, and its look once subscribed (a release
    // between the two would otherwise be missed); nothing since.
    assert_eq!(fake.kind.calls(Op::Acquire), 1 + 2);
    assert_eq!(
        fake.connection.subscriptions(),
        vec![FakeKind::channel_of(lock.name())]
    );

    let released = Instant::now();
    held.unlock().await.unwrap();
    let guard = bounded(waiter).await.unwrap().unwrap();
    // Woken at once by the notice: one more look, and it was enough.
    assert_eq!(Instant::now(), released);
    assert_eq!(fake.kind.calls(Op::Acquire), 1 + 3);
    assert_eq!(
        fake.kind.entry("a").map(|e| e.field),
        Some(guard.owner().field())
    );
    // The last waiter left the channel.
    assert!(fake.connection.subscriptions().is_empty());
    guard.unlock().await.unwrap();
    assert!(fake.kind.is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_lost_notice_costs_at_most_the_holders_ttl() {
    let fake = Fake::new();
    let lock = fake.lock("a");
    let start = Instant::now();
    let held = lock.lock_with_lease(Duration::from_secs(10)).await.unwrap();
    let waiter = tokio::spawn({
        let lock = lock.clone();
        async move { lock.lock().await.map(|guard| (guard, Instant::now())) }
    });
    sleep(Duration::from_secs(2)).await;
    fake.connection.lose_next_messages(1);
    held.unlock().await.unwrap();
    let (guard, acquired_at) = bounded(waiter).await.unwrap().unwrap();
    // Not woken at the release (2 s): it looked again when the holder's
    // lease, as its last look was told, ran out.
    assert_eq!(acquired_at - start, Duration::from_secs(10));
    assert_eq!(fake.kind.calls(Op::Acquire), 1 + 3);
    guard.unlock().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_reset_makes_every_waiter_look_again() {
    let fake = Fake::new();
    let lock = fake.lock("a");
    let _held = lock.lock().await.unwrap();
    let waiter = tokio::spawn({
        let lock = lock.clone();
        async move { lock.lock().await }
    });
    sleep(Duration::from_secs(1)).await;
    // The lock goes away without a notice reaching the client (deleted
    // while its pub/sub connection was down); the reconnect says so.
    assert!(fake.kind.store().force_unlock(lock.name()));
    fake.connection.deliver(Notice::Reset);
    let guard = timeout(Duration::from_millis(1), waiter)
        .await
        .expect("woken by the reset, not the 30 s time to live")
        .unwrap()
        .unwrap();
    assert_eq!(
        fake.kind.entry("a").map(|e| e.field),
        Some(guard.owner().field())
    );
}

#[tokio::test(start_paused = true)]
async fn one_notice_wakes_one_waiter_of_the_client() {
    let fake = Fake::new();
    let lock = fake.lock("a");
    let held = lock.lock().await.unwrap();
    let waiters: Vec<_> = (0..3)
        .map(|_| {
            let lock = lock.clone();
            tokio::spawn(async move { lock.lock().await })
        })
        .collect();
    sleep(Duration::from_secs(1)).await;
    let before = fake.kind.calls(Op::Acquire);
    held.unlock().await.unwrap();
    sleep(Duration::from_millis(1)).await;
    // One waiter looked (and took it); the others sleep on.
    assert_eq!(fake.kind.calls(Op::Acquire), before + 1);
    assert_eq!(waiters.iter().filter(|w| w.is_finished()).count(), 1);
    for waiter in waiters {
        waiter.abort();
    }
}

#[tokio::test(start_paused = true)]
async fn a_release_while_a_look_is_in_flight_still_wakes_the_waiter() {
    let fake = Fake::new();
    let lock = fake.lock("a");
    let held = lock.lock().await.unwrap();
    // The waiter's first look is answered at once; its look once
    // subscribed runs ("held") but its reply takes 2 s to arrive.
    fake.kind.script(
        Op::Acquire,
        [Step::Answer, Step::Late(Duration::from_secs(2))],
    );
    let start = Instant::now();
    let waiter = tokio::spawn({
        let lock = lock.clone();
        async move { lock.lock().await.map(|guard| (guard, Instant::now())) }
    });
    sleep(Duration::from_secs(1)).await;
    // Released while that reply is on its way: the notice must not be lost.
    held.unlock().await.unwrap();
    let (guard, acquired_at) = bounded(waiter).await.unwrap().unwrap();
    assert_eq!(acquired_at - start, Duration::from_secs(2));
    guard.unlock().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_polling_waiter_subscribes_nothing_and_looks_within_a_backoff_step() {
    let config = ClientConfig::default().wait_strategy(WaitStrategy::poll());
    let fake = Fake::with(config);
    let lock = fake.lock("a");
    let held = lock.lock().await.unwrap();
    let waiter = tokio::spawn({
        let lock = lock.clone();
        async move { lock.lock().await.map(|guard| (guard, Instant::now())) }
    });
    sleep(Duration::from_secs(1)).await;
    assert_eq!(fake.connection.subscribe_calls(), 0);
    // Looked again and again (steps of at most 128 ms), not once a lease.
    assert!(fake.kind.calls(Op::Acquire) > 5);
    let released = Instant::now();
    held.unlock().await.unwrap();
    let (guard, acquired_at) = bounded(waiter).await.unwrap().unwrap();
    assert!(acquired_at - released <= Duration::from_millis(128));
    guard.unlock().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_task_waiting_for_its_own_hold_is_refused() {
    let fake = Fake::new();
    let lock = fake.lock("a");
    let _held = lock.lock().await.unwrap();
    // A plain (fresh-owner) wait in the task that holds it would wait
    // forever for itself.
    let error = lock.lock().await.unwrap_err();
    assert!(error.is_self_deadlock(), "{error}");
    // A try does not wait, so it is merely told the lock is held.
    assert!(lock.try_lock().await.unwrap().is_none());
}
