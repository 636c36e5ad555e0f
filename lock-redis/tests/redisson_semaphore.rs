//! Interoperability of the semaphore kinds with Redisson's `RSemaphore` and
//! `RPermitExpirableSemaphore`, on a real redis-server: raw commands play
//! the Java side (what Redisson's scripts write and publish), and a raw
//! subscriber listens where a Java waiter would.

use crate::common;

use std::time::Duration;

use common::*;
use lock_core::backend::Channel;
use lock_redis::{ClientConfig, LockClient, PermitId};
use lock_testkit::eventually;
use lock_testkit::fixtures::redis::Value;
use lock_testkit::fixtures::RedisServer;

const NO_LEASE: i64 = 922_337_203_685_477;

async fn our_client(server: &RedisServer) -> LockClient {
    lock_redis::connect(config(server), ClientConfig::default())
        .await
        .unwrap()
}

/// A listener on `redisson_sc:{name}`, as a Java waiter subscribes.
async fn listen(env: &Env, channel: &str) -> Channel {
    let topic = Channel::new(channel);
    env.backend.subscribe(&topic).await.unwrap();
    topic
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_semaphore_is_a_redisson_count() {
    let env = env().await;
    let c = our_client(&env.server).await;
    let s = c.semaphore("jobs").unwrap();
    s.try_set_permits(3).await.unwrap();
    assert_eq!(
        env.server.cmd(&["TYPE", "jobs"]),
        Value::SimpleString("string".into())
    );
    assert_eq!(env.server.cmd(&["GET", "jobs"]), bulk("3"));
    s.acquire_many(2).await.unwrap().forget();
    assert_eq!(env.server.cmd(&["GET", "jobs"]), bulk("1"));
    // Redisson's availablePermits is a GET; its tryAcquire a DECRBY when
    // enough are free: the Java side takes the last one.
    env.server.cmd(&["DECRBY", "jobs", "1"]);
    assert_eq!(s.available_permits().await.unwrap(), 0);
    assert!(s.try_acquire().await.unwrap().is_none());
}

/// Every increase publishes the new count (Redisson's waiters wake up to
/// that many); acquisitions and drains publish nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn we_publish_the_new_count_where_redisson_listens() {
    let mut env = env().await;
    let c = our_client(&env.server).await;
    let topic = listen(&env, "redisson_sc:{jobs}").await;
    let s = c.semaphore("jobs").unwrap();
    s.try_set_permits(2).await.unwrap();
    env.notices
        .expect(&message(&topic, "2"), Duration::from_secs(2))
        .await;
    s.acquire_many(2).await.unwrap().forget();
    s.release(1).await.unwrap();
    env.notices
        .expect(&message(&topic, "1"), Duration::from_secs(2))
        .await;
    s.add_permits(4).await.unwrap();
    env.notices
        .expect(&message(&topic, "5"), Duration::from_secs(2))
        .await;
    s.drain_permits().await.unwrap();
    s.try_acquire().await.unwrap();
    env.notices.expect_none(Duration::from_millis(200)).await;
}

/// What Redisson's release does (INCRBY, then PUBLISH of the new count)
/// wakes our waiter; a payload of 0 wakes nobody, as in Redisson.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redisson_release_wakes_our_waiter() {
    let env = env().await;
    let c = our_client(&env.server).await;
    env.server.cmd(&["SET", "jobs", "0"]);
    let waiter = tokio::spawn({
        let s = c.semaphore("jobs").unwrap();
        async move { s.acquire().await.unwrap().forget() }
    });
    eventually(Duration::from_secs(2), "parked", || async {
        c.stats().waiting == 1
    })
    .await;
    env.server.cmd(&["PUBLISH", "redisson_sc:{jobs}", "0"]);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(c.stats().wakeups, 0, "a payload of 0 wakes nobody");
    let released = std::time::Instant::now();
    env.server.cmd(&["INCRBY", "jobs", "1"]);
    env.server.cmd(&["PUBLISH", "redisson_sc:{jobs}", "1"]);
    assert_eq!(waiter.await.unwrap(), 1);
    assert!(released.elapsed() < Duration::from_secs(1));
    assert_eq!(env.server.cmd(&["GET", "jobs"]), bulk("0"));
}

/// Our permit is a member of `{name}:timeout` holding the id's 16 raw
/// bytes, scored with its lease end (server clock) or Redisson's
/// no-lease score; a permit the watchdog renews is scored with the
/// watchdog timeout from its last renewal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_permit_is_a_redisson_lease() {
    let env = env().await;
    let c = our_client(&env.server).await;
    let s = c.permit_expirable_semaphore("slots").unwrap();
    s.try_set_permits(3).await.unwrap();
    let leased_guard = s.acquire_with_lease(Duration::from_secs(30)).await.unwrap();
    let leased = leased_guard.id();
    let forever = s.acquire().await.unwrap().into_id();
    assert!(s.clear_lease_time(forever).await.unwrap());
    let renewed = s.acquire().await.unwrap();
    assert_eq!(env.server.cmd(&["GET", "slots"]), bulk("0"));
    let mut conn = env.server.conn().await;
    let score = |id: PermitId| {
        let mut cmd = redis::cmd("ZSCORE");
        cmd.arg("{slots}:timeout").arg(&id.as_bytes()[..]);
        cmd
    };
    let now: (String, String) = redis::cmd("TIME").query_async(&mut conn).await.unwrap();
    let now_ms = now.0.parse::<i64>().unwrap() * 1000;
    let leased_end: i64 = score(leased).query_async(&mut conn).await.unwrap();
    assert!(
        (now_ms + 28_000..=now_ms + 31_000).contains(&leased_end),
        "{leased_end} vs now {now_ms}"
    );
    let forever_end: i64 = score(forever).query_async(&mut conn).await.unwrap();
    assert_eq!(forever_end, NO_LEASE);
    let watchdog = c.config().watchdog_timeout.as_millis() as i64;
    let renewed_end: i64 = score(renewed.id()).query_async(&mut conn).await.unwrap();
    assert!(
        (now_ms - 1_000 + watchdog..=now_ms + 1_000 + watchdog).contains(&renewed_end),
        "{renewed_end} vs now {now_ms} + {watchdog}"
    );
    let members: Vec<Vec<u8>> = redis::cmd("ZRANGE")
        .arg("{slots}:timeout")
        .arg(0)
        .arg(-1)
        .query_async(&mut conn)
        .await
        .unwrap();
    assert!(members.iter().all(|m| m.len() == 16));
}

/// A permit Redisson wrote (16 raw bytes, its caller's clock) is ours to
/// release by its hex id; an expired one is reclaimed by our next call,
/// which announces the new count.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redisson_permits_are_released_and_reclaimed_by_us() {
    let mut env = env().await;
    let c = our_client(&env.server).await;
    let topic = listen(&env, "redisson_sc:{slots}").await;
    let s = c.permit_expirable_semaphore("slots").unwrap();
    env.server.cmd(&["SET", "slots", "0"]);
    let java_id: PermitId = "0123456789abcdef0123456789abcdef".parse().unwrap();
    let expired_id: PermitId = "fedcba9876543210fedcba9876543210".parse().unwrap();
    let mut conn = env.server.conn().await;
    let _: i64 = redis::cmd("ZADD")
        .arg("{slots}:timeout")
        .arg(NO_LEASE)
        .arg(&java_id.as_bytes()[..])
        .arg(1) // long past
        .arg(&expired_id.as_bytes()[..])
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(
        s.available_permits().await.unwrap(),
        1,
        "the expired one came back"
    );
    env.notices
        .expect(&message(&topic, "1"), Duration::from_secs(2))
        .await;
    assert!(!s.try_release(expired_id).await.unwrap());
    s.release(java_id).await.unwrap();
    env.notices
        .expect(&message(&topic, "2"), Duration::from_secs(2))
        .await;
    assert_eq!(env.server.cmd(&["ZCARD", "{slots}:timeout"]), Value::Int(0));
}

/// With a key of its own in braces, the leases key and channel follow
/// Redisson's naming (no extra braces), so a cluster keeps them together.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_with_braces_follow_redisson() {
    let env = env().await;
    let c = our_client(&env.server).await;
    let s = c.permit_expirable_semaphore("{tenant}slots").unwrap();
    s.try_set_permits(1).await.unwrap();
    let _permit = s.acquire().await.unwrap();
    assert_eq!(
        env.server.cmd(&["ZCARD", "{tenant}slots:timeout"]),
        Value::Int(1)
    );
}

/// A non-integer or non-string value at the count, or a non-sorted-set at
/// the leases key, is reported as `WrongType` and left untouched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_types_are_reported_and_left_untouched() {
    let env = env().await;
    let c = our_client(&env.server).await;
    env.server.cmd(&["SET", "slots", "1"]);
    env.server.cmd(&["SET", "{slots}:timeout", "x"]);
    let s = c.permit_expirable_semaphore("slots").unwrap();
    assert!(s.acquire().await.unwrap_err().is_wrong_type());
    assert_eq!(env.server.cmd(&["GET", "slots"]), bulk("1"));
    assert_eq!(env.server.cmd(&["GET", "{slots}:timeout"]), bulk("x"));
    env.server.cmd(&["LPUSH", "jobs", "x"]);
    let err = c.semaphore("jobs").unwrap().acquire().await.unwrap_err();
    assert!(err.is_wrong_type(), "{err}");
    assert_eq!(env.server.cmd(&["LLEN", "jobs"]), Value::Int(1));
}

/// `releaseIfExists` as Redisson runs it: on a missing semaphore it
/// writes and publishes nothing (a Java waiter is not woken for it); on an
/// existing one it is a release (INCRBY, the new count published).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_if_exists_is_redissons() {
    let mut env = env().await;
    let c = our_client(&env.server).await;
    let topic = listen(&env, "redisson_sc:{jobs}").await;
    let s = c.semaphore("jobs").unwrap();
    assert!(!s.release_if_exists(2).await.unwrap());
    assert_eq!(env.server.cmd(&["EXISTS", "jobs"]), Value::Int(0));
    env.notices.expect_none(Duration::from_millis(200)).await;
    // The Java side created it with trySetPermits(1).
    env.server.cmd(&["SET", "jobs", "1"]);
    assert!(s.release_if_exists(2).await.unwrap());
    assert_eq!(env.server.cmd(&["GET", "jobs"]), bulk("3"));
    env.notices
        .expect(&message(&topic, "3"), Duration::from_secs(2))
        .await;
}

/// The total is not stored: it is the count plus the members of
/// `{name}:timeout`, Java's permits included, as Redisson's getPermits and
/// acquiredPermits read it. setPermits moves the count by the difference
/// and publishes the total, so a Java waiter wakes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_permits_counts_java_permits_and_publishes_the_total() {
    let mut env = env().await;
    let c = our_client(&env.server).await;
    let topic = listen(&env, "redisson_sc:{slots}").await;
    let s = c.permit_expirable_semaphore("slots").unwrap();
    s.set_permits(3).await.unwrap();
    env.notices
        .expect(&message(&topic, "3"), Duration::from_secs(2))
        .await;
    // A Java client takes one (DECRBY, ZADD of its 16 raw bytes).
    env.server.cmd(&["DECRBY", "slots", "1"]);
    env.server.cmd(&[
        "ZADD",
        "{slots}:timeout",
        &NO_LEASE.to_string(),
        "java-permit-16by",
    ]);
    assert_eq!(s.permits().await.unwrap(), 3);
    assert_eq!(s.acquired_permits().await.unwrap(), 1);
    s.set_permits(5).await.unwrap();
    assert_eq!(env.server.cmd(&["GET", "slots"]), bulk("4"));
    env.notices
        .expect(&message(&topic, "5"), Duration::from_secs(2))
        .await;
    // The same total again: nothing written, nothing published.
    s.set_permits(5).await.unwrap();
    env.notices.expect_none(Duration::from_millis(200)).await;
    s.set_permits(0).await.unwrap();
    assert_eq!(env.server.cmd(&["GET", "slots"]), bulk("-1"));
    assert_eq!(env.server.cmd(&["ZCARD", "{slots}:timeout"]), Value::Int(1));
}

/// Many permits at once are many members under one score; a release of
/// many removes them all and publishes how many came back (Redisson's
/// tryRelease(List) payload), which wakes a Java waiter for each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_permits_are_redisson_leases_and_their_release_publishes_the_number() {
    let mut env = env().await;
    let c = our_client(&env.server).await;
    let topic = listen(&env, "redisson_sc:{slots}").await;
    let s = c.permit_expirable_semaphore("slots").unwrap();
    env.server.cmd(&["SET", "slots", "4"]);
    let ids: Vec<_> = s
        .acquire_many_with_lease(3, Duration::from_secs(30))
        .await
        .unwrap()
        .into_iter()
        .map(|permit| permit.into_id())
        .collect();
    assert_eq!(env.server.cmd(&["GET", "slots"]), bulk("1"));
    let mut conn = env.server.conn().await;
    let mut scores = Vec::new();
    for id in &ids {
        let score: i64 = redis::cmd("ZSCORE")
            .arg("{slots}:timeout")
            .arg(&id.as_bytes()[..])
            .query_async(&mut conn)
            .await
            .unwrap();
        scores.push(score);
    }
    assert!(scores.iter().all(|s| *s == scores[0]), "one lease end");
    s.release_many(&ids).await.unwrap();
    env.notices
        .expect(&message(&topic, "3"), Duration::from_secs(2))
        .await;
    assert_eq!(env.server.cmd(&["GET", "slots"]), bulk("4"));
    assert_eq!(env.server.cmd(&["ZCARD", "{slots}:timeout"]), Value::Int(0));
}

/// A Java permit's lease end (its caller's clock, epoch ms) is read back
/// as Redisson's getLeaseTime reads it; the no-lease score is no lease.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lease_time_reads_java_leases() {
    let env = env().await;
    let c = our_client(&env.server).await;
    let s = c.permit_expirable_semaphore("slots").unwrap();
    env.server.cmd(&["SET", "slots", "0"]);
    let leased: PermitId = "0123456789abcdef0123456789abcdef".parse().unwrap();
    let forever: PermitId = "fedcba9876543210fedcba9876543210".parse().unwrap();
    let mut conn = env.server.conn().await;
    let now: (String, String) = redis::cmd("TIME").query_async(&mut conn).await.unwrap();
    let end = now.0.parse::<i64>().unwrap() * 1000 + 20_000;
    let _: i64 = redis::cmd("ZADD")
        .arg("{slots}:timeout")
        .arg(end)
        .arg(&leased.as_bytes()[..])
        .arg(NO_LEASE)
        .arg(&forever.as_bytes()[..])
        .query_async(&mut conn)
        .await
        .unwrap();
    let left = s.lease_time(leased).await.unwrap().unwrap();
    assert!(
        left > Duration::from_secs(18) && left <= Duration::from_secs(21),
        "{left:?}"
    );
    assert_eq!(s.lease_time(forever).await.unwrap(), None);
    assert!(s
        .lease_time(PermitId::new())
        .await
        .unwrap_err()
        .is_not_held());
}
