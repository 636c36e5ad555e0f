//! A request stuck on the wire that runs after its owner moved on (issue 10,
//! item 2), end to end through the fault-injecting proxy: the original
//! acquisition is held back past the command timeout, its retry (same
//! request id) finds the lock held, the owner then takes the lock with a new
//! request, and only then does the stuck original reach Redis. Its recorded
//! "held" outcome makes it a no-op; before, it added a second hold under one
//! guard and the lock stayed held by nobody after the guard's unlock.

use std::time::Duration;

use lock_redis::{ClientConfig, RedisConfig};
use lock_testkit::fixtures::{redis, FaultProxy, RedisServer};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_duplicate_of_a_held_attempt_takes_no_second_hold() {
    let server = RedisServer::start();
    let proxy = FaultProxy::in_front_of(&server);
    let holder = lock_redis::connect(
        RedisConfig::new(server.url()),
        ClientConfig::default().watchdog_timeout(Duration::from_secs(3)),
    )
    .await
    .unwrap();
    // The waiter talks through the proxy with a short command timeout, so
    // its first attempt times out while held back and is retried on another
    // of its pooled connections.
    let waiter = lock_redis::connect(
        RedisConfig::new(proxy.url()).command_timeout(Duration::from_millis(300)),
        ClientConfig::default().watchdog_timeout(Duration::from_secs(3)),
    )
    .await
    .unwrap();
    let name = "stuck-acquire";
    let held = holder.lock(name).unwrap().lock().await.unwrap();

    // Only the acquire script names the acquire record (Redisson-style
    // `redisson_lock_latch`).
    let stuck = proxy.hold_next(
        format!("redisson_lock_latch:{{{name}}}"),
        Duration::from_millis(1500),
    );
    let lock = waiter.lock(name).unwrap();
    let waiting = tokio::spawn({
        let lock = lock.clone();
        async move { lock.try_lock_for(Duration::from_secs(10)).await }
    });
    stuck.wait_matched().await;
    // The waiter subscribes once its retry has found the lock held.
    let channel = format!("redisson_lock__channel:{{{name}}}");
    for _ in 0..200 {
        let subscribers: Vec<redis::Value> = match server.cmd(&["PUBSUB", "NUMSUB", &channel]) {
            redis::Value::Array(items) => items,
            other => panic!("PUBSUB NUMSUB answered {other:?}"),
        };
        if subscribers.get(1) == Some(&redis::Value::Int(1)) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        !stuck.is_done(),
        "the original ran before the owner moved on"
    );
    held.unlock().await.unwrap();
    let guard = waiting
        .await
        .unwrap()
        .unwrap()
        .expect("the waiter gets the lock");

    // Now the held-back original reaches Redis.
    stuck.wait_done().await;
    assert_eq!(
        lock.hold_count(guard.owner()).await.unwrap(),
        1,
        "the late original took a second hold under one guard"
    );
    guard.unlock().await.unwrap();
    assert!(
        !lock.is_locked().await.unwrap(),
        "the lock stays held by nobody after its only guard's unlock"
    );
    waiter.close().await;
    holder.close().await;
}
