//! `RedisConfig::lazy_connect`: a client made while its server is down
//! (or its Sentinel master frozen), and a RedLock built while a minority of
//! its masters is down.

use std::time::Duration;

use lock_redis::{ClientConfig, LockClient, RedLock, RedisConfig};
use lock_testkit::fixtures::RedisServer;

const TIMEOUT: Duration = Duration::from_millis(300);

async fn connect(server: &RedisServer, lazy: bool) -> lock_redis::Result<LockClient> {
    let redis = RedisConfig::new(server.url())
        .command_timeout(TIMEOUT)
        .connect_timeout(TIMEOUT)
        .lazy_connect(lazy);
    lock_redis::connect(redis, ClientConfig::default()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lazy_client_starts_while_its_server_is_down_and_locks_once_it_is_up() {
    let mut server = RedisServer::start();
    server.kill();
    let eager = connect(&server, false).await.unwrap_err();
    assert!(eager.is_retryable(), "{eager}");
    let client = connect(&server, true).await.unwrap();
    let lock = client.lock("lazy").unwrap();
    let down = lock.try_lock().await.unwrap_err();
    assert!(down.is_retryable(), "{down}");
    // A wait waits the outage out; the scripts load on first use.
    let waiter = tokio::spawn(async move { lock.lock().await });
    tokio::time::sleep(Duration::from_millis(500)).await;
    server.restart();
    let guard = tokio::time::timeout(Duration::from_secs(10), waiter)
        .await
        .expect("the wait ends once the server answers")
        .unwrap()
        .unwrap();
    assert_eq!(
        server.cmd(&["EXISTS", "lazy"]),
        lock_testkit::fixtures::redis::Value::Int(1)
    );
    guard.unlock().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redlock_is_built_and_taken_with_a_minority_of_masters_down() {
    let mut servers: Vec<RedisServer> = (0..5).map(|_| RedisServer::start()).collect();
    servers[0].kill();
    servers[3].kill();
    let mut locks = Vec::new();
    for server in &servers {
        let redis = RedisConfig::new(server.url())
            .command_timeout(TIMEOUT)
            .connect_timeout(TIMEOUT)
            .lazy_connect(true);
        let config = ClientConfig::default().watchdog_timeout(Duration::from_secs(1));
        let client = lock_redis::connect(redis, config).await.unwrap();
        locks.push(client.lock("red-lazy").unwrap());
    }
    let red = RedLock::new(locks).unwrap();
    let guard = red.lock().await.unwrap();
    assert_eq!(guard.held(), 3);
    // Kept: the live members' watchdogs renew them past several leases.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(guard.held(), 3);
    assert!(!guard.is_lost());
    guard.unlock().await.unwrap();
}

/// Sentinel too: the client is built while its master does not answer
/// (frozen), without asking the sentinels, and locks once it answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lazy_sentinel_client_starts_while_its_master_is_frozen() {
    use lock_testkit::fixtures::{SentinelGroup, SENTINEL_MASTER_NAME};

    let group = tokio::task::block_in_place(SentinelGroup::start_minimal);
    let config = RedisConfig::sentinel(group.sentinel_urls(), SENTINEL_MASTER_NAME)
        .command_timeout(TIMEOUT)
        .connect_timeout(TIMEOUT);
    group.master().pause();
    let eager = lock_redis::connect(config.clone(), ClientConfig::default())
        .await
        .unwrap_err();
    assert!(eager.is_retryable(), "{eager}");
    let client = lock_redis::connect(config.lazy_connect(true), ClientConfig::default())
        .await
        .unwrap();
    let lock = client.lock("lazy-sentinel").unwrap();
    let down = lock.try_lock().await.unwrap_err();
    assert!(down.is_retryable(), "{down}");
    let waiter = tokio::spawn(async move { lock.lock().await });
    group.master().resume();
    let guard = tokio::time::timeout(Duration::from_secs(20), waiter)
        .await
        .expect("the wait ends once the master answers")
        .unwrap()
        .unwrap();
    guard.unlock().await.unwrap();
    client.close().await;
}

/// A client riding an outage, and closing in it, says so once: one
/// warning that the pub/sub connection cannot reconnect (it said so at
/// every attempt), and none at the close for what it gave back in full
/// (it warned "not everything was given back" with nothing left).
#[tokio::test(flavor = "current_thread")]
async fn an_outage_and_a_close_in_it_warn_once() {
    let warnings = lock_testkit::logs::capture_warnings();
    let mut server = RedisServer::start();
    let redis = RedisConfig::new(server.url())
        .command_timeout(TIMEOUT)
        .connect_timeout(TIMEOUT)
        .lazy_connect(true);
    let config = ClientConfig::default().close_timeout(Duration::from_secs(1));
    let client = lock_redis::connect(redis, config).await.unwrap();
    // A wait opens the pub/sub connection.
    let held = connect(&server, true).await.unwrap();
    let guard = held.lock("outage").unwrap().lock().await.unwrap();
    let lock = client.lock("outage").unwrap();
    let waiting = tokio::spawn(async move { lock.try_lock_for(Duration::from_secs(5)).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    guard.unlock().await.unwrap();
    waiting
        .await
        .unwrap()
        .unwrap()
        .expect("woken")
        .unlock()
        .await
        .unwrap();
    server.kill();
    // Seconds of outage: the pub/sub task tries again and again.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let reconnects = warnings.count("pub/sub connect failed");
    assert_eq!(reconnects, 1, "{:#?}", warnings.all());
    client.close().await;
    assert_eq!(
        warnings.count("pub/sub connect failed"),
        1,
        "{:#?}",
        warnings.all()
    );
    assert_eq!(
        warnings.count("not everything was given back"),
        0,
        "{:#?}",
        warnings.all()
    );
}
