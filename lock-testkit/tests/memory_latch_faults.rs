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
