//! Transient failures: retried with the same request id, so a request
//! whose reply was lost applies once; a wait rides out an outage.

use std::time::Duration;

use lock_core::backend::Engine;
use lock_core::ClientConfig;
use lock_core::LockError;
use tokio::time::{sleep, Instant};

use crate::fake::{bounded, Fake, FakeConnection, Op, Step};

fn down() -> Step {
    Step::Fail(LockError::unavailable("fake: no connection", None))
}

#[tokio::test(start_paused = true)]
async fn an_acquire_whose_reply_was_lost_is_retried_as_the_same_request() {
    let fake = Fake::new();
    let lock = fake.lock("a");
    fake.kind.script(Op::Acquire, [Step::ApplyThenLose]);
    let guard = lock.lock().await.unwrap();
    let ids = fake.kind.acquire_ids();
    assert_eq!(ids.len(), 2);
    assert_eq!(ids[0], ids[1], "the retry repeats the request");
    // Held once: the repeat was answered by the request's record.
    assert_eq!(fake.kind.entry("a").map(|e| e.count), Some(1));
    assert_eq!(fake.kind.store().acquires_applied, 1);
    guard.unlock().await.unwrap();
    fake.settle().await;
    assert!(fake.kind.is_empty(), "one release frees it");
}

#[tokio::test(start_paused = true)]
async fn a_release_whose_reply_was_lost_is_retried_as_the_same_request() {
    let fake = Fake::new();
    let lock = fake.lock("a");
    let owner = fake.engine.new_owner();
    let outer = lock.lock_as(owner).await.unwrap();
    let inner = lock.lock_as(owner).await.unwrap();
    assert_eq!(fake.kind.entry("a").map(|e| e.count), Some(2));
    fake.kind.script(Op::Release, [Step::ApplyThenLose]);
    inner.unlock().await.unwrap();
    let ids = fake.kind.release_ids();
    assert_eq!(ids.len(), 2);
    assert_eq!(ids[0], ids[1], "the retry repeats the request");
    // One hold released, not two: the outer guard still holds it.
    assert_eq!(fake.kind.entry("a").map(|e| e.count), Some(1));
    outer.check().unwrap();
    outer.unlock().await.unwrap();
    assert!(fake.kind.is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_failure_before_the_store_ran_it_is_retried() {
    let fake = Fake::new();
    let lock = fake.lock("a");
    fake.kind.script(Op::Acquire, [down(), down()]);
    let guard = lock.lock().await.unwrap();
    assert_eq!(fake.kind.calls(Op::Acquire), 3);
    assert_eq!(fake.kind.entry("a").map(|e| e.count), Some(1));
    guard.unlock().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_try_gives_up_when_the_retry_policy_does() {
    let fake = Fake::new();
    let lock = fake.lock("a");
    fake.kind.always(Op::Acquire, Some(down()));
    let error = lock.try_lock().await.unwrap_err();
    assert!(error.is_unavailable(), "{error}");
    // The default policy: four attempts in all.
    assert_eq!(fake.kind.acquire_ids().len(), 4);
}

#[tokio::test(start_paused = true)]
async fn a_wait_rides_out_an_outage() {
    let fake = Fake::new();
    let lock = fake.lock("a");
    let held = lock.lock().await.unwrap();
    let waiter = tokio::spawn({
        let lock = lock.clone();
        async move { lock.lock().await }
    });
    sleep(Duration::from_secs(1)).await;
    // The store goes away just as the lock is released: the woken
    // waiter's looks fail, well past one retry policy's worth.
    fake.kind.always(Op::Acquire, Some(down()));
    held.unlock().await.unwrap();
    sleep(Duration::from_secs(20)).await;
    assert!(!waiter.is_finished(), "still waiting through the outage");
    fake.kind.always(Op::Acquire, None);
    let guard = bounded(waiter).await.unwrap().unwrap();
    fake.settle().await;
    // The failed looks never ran; the one that did holds it once.
    assert_eq!(fake.kind.entry("a").map(|e| e.count), Some(1));
    assert_eq!(
        fake.kind.entry("a").map(|e| e.field),
        Some(guard.owner().field())
    );
    guard.unlock().await.unwrap();
    fake.settle().await;
    assert!(fake.kind.is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_call_that_never_answers_times_out_and_is_retried() {
    let connection = FakeConnection::with_command_timeout(Duration::from_secs(1));
    let fake = Fake::over(connection, ClientConfig::default());
    let lock = fake.lock("a");
    fake.kind.script(Op::Acquire, [Step::Never, Step::Never]);
    let start = Instant::now();
    let guard = lock
        .try_lock()
        .await
        .unwrap()
        .expect("the third attempt answers");
    // Two command timeouts, and the backoffs between the attempts.
    assert!(Instant::now() - start >= Duration::from_secs(2));
    assert_eq!(fake.kind.calls(Op::Acquire), 3);
    assert_eq!(fake.kind.entry("a").map(|e| e.count), Some(1));
    guard.unlock().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn request_records_must_outlive_every_retry() {
    // Four attempts of up to 10 s each cannot fit in a 5 s record.
    let connection = FakeConnection::with_command_timeout(Duration::from_secs(10));
    let config = ClientConfig::default().record_ttl(Duration::from_secs(5));
    let error = Engine::new(connection, config).unwrap_err();
    assert!(error.is_invalid_argument(), "{error}");
}
