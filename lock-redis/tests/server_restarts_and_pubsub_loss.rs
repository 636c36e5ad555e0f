//! The engine over real Redis when the server itself fails: the pub/sub
//! connection killed while waiters wait, the script cache flushed, the
//! server restarted while a lock is held and while waiters wait, the server
//! frozen past the command timeout. (The same engine under injected faults
//! in memory: lock-testkit's `memory_retries_and_outages`.)

use std::time::Duration;

use lock_redis::{ClientConfig, LockClient, RedisConfig};
use lock_testkit::eventually;
use lock_testkit::fixtures::RedisServer;
use tokio::time::Instant;

const WATCHDOG: Duration = Duration::from_millis(900);
const COMMAND_TIMEOUT: Duration = Duration::from_millis(300);

async fn client(server: &RedisServer) -> LockClient {
    let redis = RedisConfig::new(server.url())
        .command_timeout(COMMAND_TIMEOUT)
        .connect_timeout(COMMAND_TIMEOUT);
    lock_redis::connect(redis, ClientConfig::default().watchdog_timeout(WATCHDOG))
        .await
        .expect("connect")
}

fn subscribers(server: &RedisServer, channel: &str) -> i64 {
    match server.cmd(&["PUBSUB", "NUMSUB", channel]) {
        lock_testkit::fixtures::redis::Value::Array(v) => match v.get(1) {
            Some(lock_testkit::fixtures::redis::Value::Int(n)) => *n,
            other => panic!("unexpected NUMSUB count {other:?}"),
        },
        other => panic!("unexpected NUMSUB reply {other:?}"),
    }
}

/// Starts a waiter on `name` in `client`; resolves to when it got the lock.
fn spawn_waiter(
    client: &LockClient,
    name: &str,
) -> tokio::task::JoinHandle<(lock_redis::Guard, Instant)> {
    let lock = client.lock(name).unwrap();
    tokio::spawn(async move {
        let g = lock.try_lock_for(Duration::from_secs(30)).await.unwrap();
        (g.expect("acquired within 30 s"), Instant::now())
    })
}

async fn wait_subscribed(server: &RedisServer, c: &LockClient, name: &str) {
    let channel = format!("redisson_lock__channel:{{{name}}}");
    eventually(Duration::from_secs(3), "waiter subscribed", || async {
        c.stats().tries >= 2 && subscribers(server, &channel) == 1
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_survive_a_killed_pubsub_connection() {
    let server = RedisServer::start();
    let a = client(&server).await;
    let b = client(&server).await;
    let held = a
        .lock("pubsub-kill")
        .unwrap()
        .lock_with_lease(Duration::from_secs(20))
        .await
        .unwrap();
    let waiter = spawn_waiter(&b, "pubsub-kill");
    wait_subscribed(&server, &b, "pubsub-kill").await;
    assert!(server.kill_pubsub_clients() >= 1);
    // The subscription comes back on a new connection…
    wait_subscribed(&server, &b, "pubsub-kill").await;
    // …and the next unlock notice arrives over it.
    let released = Instant::now();
    held.unlock().await.unwrap();
    let (g, acquired) = waiter.await.unwrap();
    assert!(
        acquired - released < Duration::from_secs(2),
        "{:?}",
        acquired - released
    );
    g.unlock().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unlock_during_a_pubsub_outage_is_noticed_after_reconnect() {
    let server = RedisServer::start();
    let a = client(&server).await;
    let b = client(&server).await;
    let held = a
        .lock("pubsub-gap")
        .unwrap()
        .lock_with_lease(Duration::from_secs(20))
        .await
        .unwrap();
    let waiter = spawn_waiter(&b, "pubsub-gap");
    wait_subscribed(&server, &b, "pubsub-gap").await;
    server.kill_pubsub_clients();
    // Released while the waiter's client has no subscription: the notice
    // is lost, but the reconnect's reset makes the waiter look again long
    // before the holder's 20 s lease would have.
    let released = Instant::now();
    held.unlock().await.unwrap();
    let (g, acquired) = waiter.await.unwrap();
    assert!(
        acquired - released < Duration::from_secs(3),
        "{:?}",
        acquired - released
    );
    g.unlock().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flushed_script_cache_is_reloaded_transparently() {
    let server = RedisServer::start();
    let c = client(&server).await;
    let lock = c.lock("flush").unwrap();
    let g = lock.lock().await.unwrap();
    server.flush_scripts();
    let inner = lock.lock_as(g.owner()).await.unwrap();
    server.flush_scripts();
    inner.unlock().await.unwrap();
    server.flush_scripts();
    assert_eq!(lock.hold_count(g.owner()).await.unwrap(), 1);
    g.unlock().await.unwrap();
    assert!(!lock.is_locked().await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_while_holding_fires_the_lost_signal() {
    let mut server = RedisServer::start();
    let c = client(&server).await;
    let g = c.lock("restart-held").unwrap().lock().await.unwrap();
    // No persistence: the restarted server has forgotten the lock.
    server.restart();
    let restarted = Instant::now();
    tokio::time::timeout(WATCHDOG * 2, g.lost())
        .await
        .expect("lost signal after the restart");
    assert!(restarted.elapsed() < WATCHDOG * 2);
    assert!(g.unlock().await.unwrap_err().is_not_held());
    // The client keeps working on the new server.
    let again = c.lock("restart-held").unwrap().lock().await.unwrap();
    again.unlock().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_acquire_after_a_server_restart() {
    let mut server = RedisServer::start();
    let a = client(&server).await;
    let b = client(&server).await;
    let _held = a
        .lock("restart-wait")
        .unwrap()
        .lock_with_lease(Duration::from_secs(20))
        .await
        .unwrap();
    let waiter = spawn_waiter(&b, "restart-wait");
    wait_subscribed(&server, &b, "restart-wait").await;
    server.restart();
    let restarted = Instant::now();
    let (g, acquired) = waiter.await.unwrap();
    assert!(
        acquired - restarted < Duration::from_secs(5),
        "{:?}",
        acquired - restarted
    );
    g.unlock().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frozen_server_gives_a_retryable_timeout_not_a_hang() {
    let server = RedisServer::start();
    let c = client(&server).await;
    let lock = c.lock("frozen").unwrap();
    server.pause();
    let started = Instant::now();
    // A try: a wait would ride the outage out until the server resumes.
    let err = lock.try_lock().await.unwrap_err();
    let took = started.elapsed();
    server.resume();
    for _ in 0..5 {
        eprintln!(
            "DBG {:?} {:?} {:?}",
            started.elapsed(),
            server.cmd(&["HGETALL", "frozen"]),
            server.cmd(&["INFO", "commandstats"])
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(err.is_retryable() && err.is_timeout(), "{err:?}");
    // Four attempts of at most the command timeout, plus backoffs.
    assert!(
        took < COMMAND_TIMEOUT * 4 + Duration::from_secs(1),
        "took {took:?}"
    );
    // The requests that timed out were still queued in the frozen server and
    // ran when it resumed, taking the lock. The engine finds out and undoes
    // that, well before the orphaned hold's lease would have expired.
    eventually(WATCHDOG / 3, "orphaned acquisition undone", || async {
        !lock.is_locked().await.unwrap()
    })
    .await;
    let g = lock.lock().await.expect("works again once resumed");
    g.unlock().await.unwrap();
}
