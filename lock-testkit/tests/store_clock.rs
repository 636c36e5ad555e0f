//! The client's estimate of the store's clock follows the store both
//! ways: a request's record lives about its window past the request,
//! whether this client's clock runs ahead of the store's or behind it.

use std::time::Duration;

use lock_core::backend::{FOLLOW_TOLERANCE_MS, RECORD_GRACE_MS};
use lock_redis::ClientConfig;
use lock_testkit::conformance::config;
use lock_testkit::InMemoryServer;

const HOUR_MS: i64 = 3_600_000;

/// The longest any request record of `server` has left to live.
fn longest_record_ttl(server: &InMemoryServer) -> i64 {
    server
        .keys()
        .iter()
        .filter(|key| key.contains("_latch:"))
        .map(|key| server.pttl(key))
        .max()
        .expect("the acquisition and the release left request records")
}

/// The bound a record of a client with `config` keeps to: its request's
/// window, the grace past the deadline, and the estimate's tolerance
/// (paused time: the round trips take no time).
fn record_bound(config: &ClientConfig) -> i64 {
    let window = i64::try_from(config.record_ttl.as_millis()).unwrap();
    window + i64::try_from(RECORD_GRACE_MS + FOLLOW_TOLERANCE_MS).unwrap()
}

async fn lock_and_unlock(server: &InMemoryServer, config: ClientConfig) -> i64 {
    let client = server.client_with(config).unwrap();
    // The client's first record write reads the store's clock.
    tokio::time::sleep(Duration::from_millis(1)).await;
    let lock = client.lock("skewed").unwrap();
    let guard = lock.lock().await.unwrap();
    guard.unlock().await.unwrap();
    let longest = longest_record_ttl(server);
    client.close().await;
    longest
}

#[tokio::test(start_paused = true)]
async fn a_client_clock_an_hour_ahead_keeps_records_no_longer_than_their_bound() {
    let server = InMemoryServer::new();
    // The store's clock an hour behind this process's: the client's
    // first estimate, from its own clock, is an hour ahead.
    server.step_clock(-HOUR_MS);
    let longest = lock_and_unlock(&server, config()).await;
    assert!(
        longest <= record_bound(&config()),
        "a record lives {longest} ms: the estimate did not follow the store back"
    );
}

#[tokio::test(start_paused = true)]
async fn a_client_clock_an_hour_behind_is_brought_forward() {
    let server = InMemoryServer::new();
    server.step_clock(HOUR_MS);
    let client = server.client_with(config()).unwrap();
    tokio::time::sleep(Duration::from_millis(1)).await;
    let lock = client.lock("behind").unwrap();
    let guard = lock.lock().await.unwrap();
    guard.unlock().await.unwrap();
    let longest = longest_record_ttl(&server);
    assert!(longest <= record_bound(&config()), "{longest} ms");
    assert!(longest > 0);
    client.close().await;
}

#[tokio::test(start_paused = true)]
async fn a_clock_that_agrees_is_not_moved() {
    let server = InMemoryServer::new();
    let longest = lock_and_unlock(&server, config()).await;
    assert!(longest <= record_bound(&config()), "{longest} ms");
    // The window is the config's, less the time the test took (none).
    assert!(
        longest >= record_bound(&config()) - i64::try_from(FOLLOW_TOLERANCE_MS).unwrap() - 1,
        "{longest} ms: the estimate moved without cause"
    );
}
