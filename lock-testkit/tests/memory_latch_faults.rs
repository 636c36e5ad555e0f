//! The count-down latch when replies are lost or the store is down, in
//! memory under paused time: every write is retried with its request id
//! and counts once; a down store is a retryable error after the policy.

use std::time::Duration;

use lock_testkit::InMemoryServer;

#[tokio::test(start_paused = true)]
async fn a_count_down_whose_reply_was_lost_counts_once() {
    let server = InMemoryServer::new();
    let c = server.client().unwrap();
    let l = c.count_down_latch("batch").unwrap();
    assert!(l.try_set_count(3).await.unwrap());
    server.lose_next_replies(2);
    assert_eq!(l.count_down().await.unwrap(), 2);
    assert_eq!(l.count().await.unwrap(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_set_and_a_delete_whose_replies_were_lost_apply_once() {
    let server = InMemoryServer::new();
    let c = server.client().unwrap();
    let l = c.count_down_latch("batch").unwrap();
    server.lose_next_replies(1);
    // The first run set the count; the retry answers its first outcome
    // rather than "already set".
    assert!(l.try_set_count(2).await.unwrap());
    server.lose_next_replies(1);
    assert!(l.delete().await.unwrap());
    assert_eq!(l.count().await.unwrap(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_down_store_is_a_retryable_error_and_a_waiter_gives_up() {
    let server = InMemoryServer::new();
    let c = server.client().unwrap();
    let l = c.count_down_latch("batch").unwrap();
    l.try_set_count(1).await.unwrap();
    server.set_down(true);
    assert!(l.count_down().await.unwrap_err().is_retryable());
    assert!(l
        .wait_for(Duration::from_secs(1))
        .await
        .unwrap_err()
        .is_retryable());
    server.set_down(false);
    assert_eq!(l.count().await.unwrap(), 1);
    assert_eq!(c.stats().subscriptions_active, 0);
}

/// A latch's calls run to completion when their caller goes away, as a
/// semaphore's do: a set whose first attempt failed is retried (after the
/// policy's backoff) although its caller gave up before, and sets the count
/// once.
#[tokio::test(start_paused = true)]
async fn a_set_whose_caller_went_away_during_its_retries_still_sets_the_count() {
    let server = InMemoryServer::new();
    let c = server.client().unwrap();
    let l = c.count_down_latch("batch").unwrap();
    server.fail_next(1);
    // The first attempt fails at once; the retry is 50 ms later.
    let gave_up = tokio::time::timeout(Duration::from_millis(10), l.try_set_count(2)).await;
    assert!(gave_up.is_err(), "the caller gave up during the retries");
    c.settle().await;
    assert_eq!(l.count().await.unwrap(), 2);
    assert!(!l.try_set_count(5).await.unwrap(), "set once, by the retry");
}

/// The same for a delete, and for a count-down whose reply was lost: the
/// retry answers from the request's record, so it counts once.
#[tokio::test(start_paused = true)]
async fn a_delete_and_a_count_down_whose_callers_went_away_apply_once() {
    let server = InMemoryServer::new();
    let c = server.client().unwrap();
    let l = c.count_down_latch("batch").unwrap();
    assert!(l.try_set_count(3).await.unwrap());
    server.lose_next_replies(1);
    let gave_up = tokio::time::timeout(Duration::from_millis(10), l.count_down()).await;
    assert!(gave_up.is_err(), "the caller gave up during the retries");
    c.settle().await;
    assert_eq!(l.count().await.unwrap(), 2, "counted down once");

    server.fail_next(1);
    let gave_up = tokio::time::timeout(Duration::from_millis(10), l.delete()).await;
    assert!(gave_up.is_err(), "the caller gave up during the retries");
    c.settle().await;
    assert_eq!(l.count().await.unwrap(), 0, "deleted by the retry");
}

/// A wait dropped while it sleeps leaves no subscription behind, and a
/// count-down after it still opens the latch for the next waiter.
#[tokio::test(start_paused = true)]
async fn a_dropped_wait_leaves_no_subscription() {
    let server = InMemoryServer::new();
    let c = server.client().unwrap();
    let l = c.count_down_latch("batch").unwrap();
    assert!(l.try_set_count(1).await.unwrap());
    let gave_up = tokio::time::timeout(Duration::from_secs(1), l.wait()).await;
    assert!(gave_up.is_err(), "the latch is still closed");
    assert_eq!(c.stats().subscriptions_active, 0);
    assert_eq!(l.count_down().await.unwrap(), 0);
    assert!(l.wait_for(Duration::from_secs(1)).await.unwrap());
}
