//! Waiters over real Redis through outages longer than the retry policy:
//! the holder's lease runs out while the server is down (killed, then
//! restarted) or frozen (paused, then resumed), so the waiter's look at the
//! holder's TTL meets the outage; it waits on and gets the lock once the
//! server answers, and a wait with a deadline ends with a retryable error
//! at its deadline, not before.

use std::time::Duration;

use lock_redis::{ClientConfig, LockClient, RedisConfig};
use lock_testkit::fixtures::RedisServer;
use tokio::time::Instant;

const COMMAND_TIMEOUT: Duration = Duration::from_millis(300);
/// The holder's lease: it runs out inside the outage.
const LEASE: Duration = Duration::from_millis(800);
/// Far longer than the retry policy (about 0.4 s plus command timeouts).
const OUTAGE: Duration = Duration::from_secs(3);
/// After the server answers again: one capped backoff (1 s), reconnecting,
/// and room for a loaded machine.
const RECOVERY: Duration = Duration::from_secs(4);

async fn client(server: &RedisServer) -> LockClient {
    let redis = RedisConfig::new(server.url())
        .command_timeout(COMMAND_TIMEOUT)
        .connect_timeout(COMMAND_TIMEOUT);
    lock_redis::connect(redis, ClientConfig::default())
        .await
        .expect("connect")
}

/// `name` held by another client for [`LEASE`], and a waiter on it.
async fn held_and_waited_for(
    server: &RedisServer,
    name: &'static str,
) -> tokio::task::JoinHandle<lock_redis::Result<(lock_redis::Guard, Instant)>> {
    // Held as another client would hold it, expiring by itself.
    server.cmd(&["HSET", name, "someone-else:1", "1"]);
    server.cmd(&["PEXPIRE", name, &LEASE.as_millis().to_string()]);
    let waiter = client(server).await;
    let lock = waiter.lock(name).unwrap();
    let waiting = tokio::spawn(async move { lock.lock().await.map(|g| (g, Instant::now())) });
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!waiting.is_finished());
    waiting
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_rides_out_a_server_that_is_down() {
    let mut server = RedisServer::start();
    let waiting = held_and_waited_for(&server, "outage-down").await;
    server.kill();
    tokio::time::sleep(OUTAGE).await;
    assert!(
        !waiting.is_finished(),
        "the waiter gave up during the outage"
    );
    server.restart();
    let back = Instant::now();
    let (guard, acquired) = tokio::time::timeout(RECOVERY, waiting)
        .await
        .expect("the waiter gets the lock soon after the restart")
        .unwrap()
        .unwrap();
    eprintln!("acquired {:?} after the restart", acquired - back);
    guard.unlock().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_rides_out_a_frozen_server() {
    let server = RedisServer::start();
    let waiting = held_and_waited_for(&server, "outage-frozen").await;
    server.pause();
    tokio::time::sleep(OUTAGE).await;
    let finished = waiting.is_finished();
    server.resume();
    assert!(!finished, "the waiter gave up during the outage");
    let (guard, _) = tokio::time::timeout(RECOVERY, waiting)
        .await
        .expect("the waiter gets the lock soon after the server resumed")
        .unwrap()
        .unwrap();
    guard.unlock().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bounded_wait_ends_at_its_deadline_with_a_retryable_error() {
    let mut server = RedisServer::start();
    let c = client(&server).await;
    server.kill();
    let wait = Duration::from_secs(2);
    let started = Instant::now();
    let err = c
        .lock("outage-bounded")
        .unwrap()
        .try_lock_for(wait)
        .await
        .expect_err("the server never came back");
    let took = started.elapsed();
    assert!(err.is_retryable(), "{err:?}");
    // The last attempt starts at the deadline and runs its retry policy.
    assert!(
        took >= wait && took < wait + COMMAND_TIMEOUT * 4 + Duration::from_secs(1),
        "took {took:?}"
    );
    server.restart();
}
