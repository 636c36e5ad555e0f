//! `Engine::close`: every live guard is told it is lost, every lock given
//! back, waiting acquisitions end, and later calls answer `Closed`.

use std::time::Duration;

use lock_core::LockError;
use tokio::time::{sleep, timeout};

use crate::fake::{Fake, Op, Step};

#[tokio::test(start_paused = true)]
async fn close_gives_back_a_held_lock_and_later_calls_are_closed() {
    let fake = Fake::new();
    let lock = fake.lock("a");
    let guard = lock.lock().await.unwrap();
    fake.engine.close().await;
    assert!(fake.kind.is_empty(), "given back");
    assert!(guard.is_lost());
    assert!(fake.connection.is_closed());
    assert!(matches!(lock.lock().await, Err(LockError::Closed)));
    assert!(matches!(lock.try_lock().await, Err(LockError::Closed)));
    // The guard's own release has nothing left to give back.
    let releases = fake.kind.calls(Op::Release);
    assert!(matches!(guard.unlock().await, Err(LockError::Closed)));
    assert_eq!(fake.kind.calls(Op::Release), releases);
}

#[tokio::test(start_paused = true)]
async fn close_ends_a_waiting_acquisition_at_once() {
    let fake = Fake::new();
    let lock = fake.lock("a");
    let _held = lock.lock().await.unwrap();
    let waiter = tokio::spawn({
        let lock = lock.clone();
        async move { lock.lock().await }
    });
    sleep(Duration::from_secs(1)).await;
    fake.engine.close().await;
    let result = timeout(Duration::from_millis(1), waiter)
        .await
        .expect("ended by the close, not by the holder's ttl")
        .unwrap();
    assert!(matches!(result, Err(LockError::Closed)));
    assert!(fake.kind.is_empty());
}

#[tokio::test(start_paused = true)]
async fn close_retries_a_give_back_that_fails_for_a_moment() {
    let fake = Fake::new();
    let lock = fake.lock("a");
    let guard = lock.lock().await.unwrap();
    fake.kind.script(
        Op::Release,
        std::iter::repeat_n(
            Step::Fail(LockError::unavailable("fake: failing over", None)),
            6,
        ),
    );
    fake.engine.close().await;
    assert!(fake.kind.is_empty(), "given back once the store answered");
    assert!(fake.kind.calls(Op::Release) > 6);
    assert!(guard.is_lost());
}
