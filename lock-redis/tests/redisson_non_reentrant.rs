//! The non-reentrant lock against a real redis-server, shared with
//! Redisson: raw commands play the Java side. Redisson 4.x's
//! `RedissonNonReentrantLock` keeps `RLock`'s hash and channel; its acquire
//! script refuses the holder with the error `NON_REENTRANT_REACQUIRE`
//! (the script below does what it does, in our words), and its unlock is
//! `RLock`'s (last hold: `DEL`, then `PUBLISH` 0 on the lock's channel).

use crate::common;

use std::time::Duration;

use common::{bulk, int};
use lock_redis::{ClientConfig, LockClient, RedisConfig};
use lock_testkit::fixtures::redis::Value;
use lock_testkit::fixtures::RedisServer;

/// What Redisson's thread 1 of another JVM writes as its owner.
const JAVA: &str = "6d9f6e5c-2f4e-4b1e-9d39-2b8f4f1f7a10:1";

/// Java's acquisition: take a free lock, refuse the holder, else the PTTL.
const JAVA_ACQUIRE: &str = "\
    if redis.call('exists', KEYS[1]) == 0 then \
        redis.call('hincrby', KEYS[1], ARGV[2], 1) \
        redis.call('pexpire', KEYS[1], ARGV[1]) \
        return nil \
    end \
    if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then \
        return redis.error_reply(ARGV[3]) \
    end \
    return redis.call('pttl', KEYS[1])";

async fn client(server: &RedisServer) -> LockClient {
    lock_redis::connect(
        RedisConfig::new(server.url())
            .command_timeout(Duration::from_secs(2))
            .connect_timeout(Duration::from_secs(2)),
        ClientConfig::default().watchdog_timeout(Duration::from_secs(2)),
    )
    .await
    .expect("connect to the fixture")
}

fn java_acquire(server: &RedisServer, key: &str) -> redis::RedisResult<Value> {
    let mut conn = server.client().get_connection()?;
    redis::cmd("EVAL")
        .arg(JAVA_ACQUIRE)
        .arg(1)
        .arg(key)
        .arg(30_000)
        .arg(JAVA)
        .arg("NON_REENTRANT_REACQUIRE")
        .query(&mut conn)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_java_holder_blocks_us_and_its_unlock_wakes_us() {
    let server = RedisServer::start();
    let c = client(&server).await;
    let lock = c.non_reentrant_lock("report").unwrap();
    assert_eq!(java_acquire(&server, "report").unwrap(), Value::Nil);
    let again = java_acquire(&server, "report").unwrap_err();
    // A reply of one word gets Redis's `ERR` code; Java looks for the word.
    assert!(
        again.to_string().contains("NON_REENTRANT_REACQUIRE"),
        "{again}"
    );
    assert!(lock.try_lock().await.unwrap().is_none());
    let waiter = tokio::spawn(async move { lock.lock().await.unwrap() });
    tokio::time::sleep(Duration::from_millis(100)).await;
    // Java's last unlock.
    assert_eq!(int(server.cmd(&["DEL", "report"])), 1);
    server.cmd(&["PUBLISH", "redisson_lock__channel:{report}", "0"]);
    let guard = tokio::time::timeout(Duration::from_secs(5), waiter)
        .await
        .expect("Java's unlock notice wakes our waiter")
        .unwrap();
    guard.unlock().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_hold_is_an_rlock_hash_java_waits_on() {
    let server = RedisServer::start();
    let c = client(&server).await;
    let lock = c.non_reentrant_lock("report").unwrap();
    let guard = lock.lock().await.unwrap();
    assert_eq!(
        server.cmd(&["HGETALL", "report"]),
        Value::Array(vec![bulk(&guard.owner().field()), bulk("1")])
    );
    let pttl = int(java_acquire(&server, "report").unwrap());
    assert!(pttl > 0, "Java sees it held: {pttl}");
    // Our holder asking again is refused as Java's is.
    let again = lock.lock_as(guard.owner()).await.unwrap_err();
    assert!(again.is_reentry_refused(), "{again}");
    guard.unlock().await.unwrap();
    assert_eq!(int(server.cmd(&["EXISTS", "report"])), 0);
    assert_eq!(java_acquire(&server, "report").unwrap(), Value::Nil);
}
