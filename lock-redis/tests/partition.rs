//! A holder cut off from Redis learns of its loss before anyone else can
//! take the lock (issue 10, items 5 and 12), end to end through the
//! fault-injecting proxy: the partition makes every renewal hang for the
//! whole command timeout, far past the lease.

use std::time::Duration;

use lock_redis::{ClientConfig, RedisConfig};
use lock_testkit::fixtures::{FaultProxy, RedisServer};
use tokio::time::Instant;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partitioned_holder_is_told_before_another_client_gets_the_lock() {
    let server = RedisServer::start();
    let proxy = FaultProxy::in_front_of(&server);
    let watchdog = Duration::from_millis(900);
    let holder = lock_redis::connect(
        RedisConfig::new(proxy.url()).command_timeout(Duration::from_secs(3)),
        ClientConfig::default().watchdog_timeout(watchdog),
    )
    .await
    .unwrap();
    let other = lock_redis::connect(RedisConfig::new(server.url()), ClientConfig::default())
        .await
        .unwrap();
    let name = "partitioned";
    let guard = holder.lock(name).unwrap().lock().await.unwrap();

    proxy.partition();
    let cut = Instant::now();
    let contender = other.lock(name).unwrap();
    let taken = loop {
        if let Some(taken) = contender.try_lock().await.unwrap() {
            break taken;
        }
        assert!(
            cut.elapsed() < Duration::from_secs(5),
            "the partitioned hold never expired"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let took_over = cut.elapsed();
    assert!(
        guard.is_lost(),
        "another client holds the lock {took_over:?} after the partition, \
         and the partitioned guard still says it holds it"
    );
    assert!(guard.check().is_err());
    taken.unlock().await.unwrap();
    proxy.heal();
    drop(guard);
    other.close().await;
    holder.close().await;
}
