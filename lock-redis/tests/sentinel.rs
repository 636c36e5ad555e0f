//! Sentinel deployments: the client finds the master through the sentinels
//! and follows a failover under a held lock and a waiter. The holder keeps
//! its lock when the promoted replica has it (replica sync) and is told it
//! lost it when the replica never got it; the waiter gets the lock either
//! way.

use std::time::Duration;

use lock_redis::{ClientConfig, LockClient, RedisConfig, RetryPolicy};
use lock_testkit::fixtures::redis::Value;
use lock_testkit::fixtures::{SentinelGroup, SENTINEL_MASTER_NAME};
use tokio::time::timeout;

/// Command and connect timeout of the clients: short, so a call to a dead
/// master fails fast and is retried against the new one.
const TIMEOUT: Duration = Duration::from_millis(500);
/// How long a waiter may take to get the lock once it is free: a failover
/// after a kill ends before the test goes on, then the pub/sub task's
/// reconnect backoff (at most 2 s) and one round trip.
const HAND_OVER: Duration = Duration::from_secs(5);

/// The default replica sync rule (on by default), with a `WAIT` timeout
/// short enough that 16 attempts of a call stay within the request
/// records' 30 s (the 1 s default would not: 16 × (0.5 s + 1 s) + backoff).
fn sentinel_config(group: &SentinelGroup) -> RedisConfig {
    RedisConfig::sentinel(group.sentinel_urls(), SENTINEL_MASTER_NAME)
        .command_timeout(TIMEOUT)
        .connect_timeout(TIMEOUT)
        .replica_sync_connected(Duration::from_millis(900))
}

/// Retries spanning a failover after a kill (up to ~6.75 s of backoff), so
/// a call that meets the dead master, or finds no master while the
/// sentinels elect one, is retried until the new one answers. (A waiter
/// re-checks the lock when its lease may have ended; that re-check may fall
/// inside the failover.)
fn client_config() -> ClientConfig {
    let mut retry = RetryPolicy::default();
    retry.attempts = 16;
    retry.max_backoff = Duration::from_millis(500);
    ClientConfig::default().retry(retry)
}

async fn connect(config: RedisConfig) -> LockClient {
    lock_redis::connect(config, client_config())
        .await
        .expect("connect through the sentinels")
}

/// Runs a blocking fixture lever without stalling the client's tasks.
fn blocking<T>(f: impl FnOnce() -> T) -> T {
    tokio::task::block_in_place(f)
}

/// Waits until a client on `server` subscribes the unlock channel of lock
/// `name`: the waiter's subscription followed the master there. (Counting
/// pub/sub clients would not do: the sentinels subscribe to every node.)
async fn wait_for_subscriber(server: &lock_testkit::fixtures::RedisServer, name: &str) {
    wait_for_subscriber_within(server, name, HAND_OVER).await;
}

async fn wait_for_subscriber_within(
    server: &lock_testkit::fixtures::RedisServer,
    name: &str,
    within: Duration,
) {
    let channel = format!("redisson_lock__channel:{{{name}}}");
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let reply = server.cmd(&["PUBSUB", "NUMSUB", &channel]);
        if reply
            != Value::Array(vec![
                Value::BulkString(channel.clone().into_bytes()),
                Value::Int(0),
            ])
        {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "nobody subscribed {channel} on port {}",
            server.port()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_master_is_found_through_the_sentinels() {
    let group = SentinelGroup::start();
    group.wait_replica_synced();
    // The library's defaults, replica sync included.
    let config = RedisConfig::sentinel(group.sentinel_urls(), SENTINEL_MASTER_NAME);
    let client = lock_redis::connect(config, ClientConfig::default())
        .await
        .unwrap();
    let guard = client.lock("found").unwrap().lock().await.unwrap();
    // The lock lives on the master, not on a sentinel.
    let fields = group.master().cmd(&["HLEN", "found"]);
    assert_eq!(fields, Value::Int(1));
    // Replica sync is on by default: the acquisition waited for the
    // group's replica.
    let stats = format!("{:?}", group.master().cmd(&["INFO", "commandstats"]));
    assert!(stats.contains("cmdstat_wait:calls=1,"), "{stats}");
    guard.unlock().await.unwrap();
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_master_name_is_a_retryable_error() {
    let group = SentinelGroup::start();
    let config = RedisConfig::sentinel(group.sentinel_urls(), "no-such-master")
        .command_timeout(TIMEOUT)
        .connect_timeout(TIMEOUT);
    let err = lock_redis::connect(config, ClientConfig::default())
        .await
        .unwrap_err();
    assert!(err.is_retryable(), "{err:?}");
    assert!(err.to_string().contains("no-such-master"), "{err}");
}

#[tokio::test]
async fn bad_sentinel_configurations_are_rejected_before_any_io() {
    for config in [
        RedisConfig::sentinel(Vec::<String>::new(), "m"),
        RedisConfig::sentinel(["redis://127.0.0.1:notaport"], "m"),
        RedisConfig::sentinel(["redis://127.0.0.1:1"], ""),
    ] {
        let err = lock_redis::connect(config, ClientConfig::default())
            .await
            .unwrap_err();
        assert!(err.is_invalid_argument(), "{err:?}");
    }
}

/// `SENTINEL FAILOVER` with the replica in sync: the holder keeps its lock
/// on the new master (its renewals and its unlock go there), and the
/// waiter, whose subscription moved along, is woken by that unlock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_requested_failover_keeps_the_lock_and_wakes_the_waiter() {
    let mut group = SentinelGroup::start();
    let holder = connect(sentinel_config(&group)).await;
    let waiter = connect(sentinel_config(&group)).await;
    let guard = holder.lock("moved").unwrap().lock().await.unwrap();
    let waiting = tokio::spawn({
        let lock = waiter.lock("moved").unwrap();
        async move { lock.lock().await }
    });
    // The waiter is subscribed before the failover.
    let old = group.master().port();
    wait_for_subscriber(group.master(), "moved").await;
    blocking(|| {
        group.wait_replica_synced();
        group.failover();
    });
    assert_ne!(group.master().port(), old);
    // Both clients hear +switch-master and move their subscriptions.
    // (Without +switch-master they would stay on the old master, which
    // still takes writes until the sentinels demote it, seconds later.)
    wait_for_subscriber(group.master(), "moved").await;

    assert!(!guard.is_lost(), "a replicated lock is kept");
    assert_eq!(
        group.master().cmd(&["HLEN", "moved"]),
        Value::Int(1),
        "the new master has the holder's lock"
    );
    guard.unlock().await.expect("unlock on the new master");
    let taken = timeout(HAND_OVER, waiting)
        .await
        .expect("the waiter was woken on the new master")
        .unwrap()
        .unwrap();
    assert!(!taken.is_lost());
    taken.unlock().await.unwrap();
    holder.close().await;
    waiter.close().await;
}

/// The master dies; with replica sync the holder's lock was on the replica
/// before the holder got it, so the holder keeps it across the failover;
/// the waiter (whose pub/sub connection died with the master) reconnects
/// to the promoted replica and gets the lock once the holder lets go.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_master_with_replica_sync_keeps_the_lock() {
    let mut group = SentinelGroup::start();
    let holder = connect(sentinel_config(&group).replica_sync(1, Duration::from_millis(900))).await;
    // After the failover the group has no replica left: a waiter asking
    // for one would never succeed; the default rule waits for none then.
    let waiter = connect(sentinel_config(&group)).await;
    let guard = holder.lock("kept").unwrap().lock().await.unwrap();
    let waiting = tokio::spawn({
        let lock = waiter.lock("kept").unwrap();
        async move { lock.lock().await }
    });
    wait_for_subscriber(group.master(), "kept").await;
    blocking(|| group.kill_master());

    // The holder's renewals reach the new master and find the lock.
    wait_for_subscriber(group.master(), "kept").await;
    assert!(!guard.is_lost(), "a replicated lock is kept");
    assert_eq!(group.master().cmd(&["HLEN", "kept"]), Value::Int(1));
    guard.unlock().await.expect("unlock on the new master");
    let taken = timeout(HAND_OVER, waiting)
        .await
        .expect("the waiter got the lock on the new master")
        .unwrap()
        .unwrap();
    taken.unlock().await.unwrap();
    holder.close().await;
    waiter.close().await;
}

/// The master dies after taking a lock the replica never got (the
/// replica's link was cut first, as when replication lags): the promoted
/// replica does not have it. The holder is told (its lost signal fires at
/// its next renewal) and the waiter gets the lock: nothing is silent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_the_promoted_replica_lacks_is_reported_lost() {
    let mut group = SentinelGroup::start();
    // Renewals every second, so the loss shows soon after the failover.
    let config = client_config().watchdog_timeout(Duration::from_secs(3));
    let holder = lock_redis::connect(sentinel_config(&group), config.clone())
        .await
        .unwrap();
    let waiter = lock_redis::connect(sentinel_config(&group), config)
        .await
        .unwrap();
    // Warm the holder's connection so the acquire below is one round trip.
    assert!(!holder.lock("lost").unwrap().is_locked().await.unwrap());

    // Freeze the replica and cut its link: the next write stays on the
    // master alone.
    group.replica().pause();
    group.master().cmd(&["CLIENT", "KILL", "TYPE", "replica"]);
    let guard = holder.lock("lost").unwrap().lock().await.unwrap();
    let waiting = tokio::spawn({
        let lock = waiter.lock("lost").unwrap();
        async move { lock.lock().await }
    });
    wait_for_subscriber(group.master(), "lost").await;
    blocking(|| group.kill_master());

    timeout(HAND_OVER, guard.lost())
        .await
        .expect("the holder is told its lock is gone");
    let taken = timeout(HAND_OVER, waiting)
        .await
        .expect("the waiter got the lock on the new master")
        .unwrap()
        .unwrap();
    assert!(!taken.is_lost());
    taken.unlock().await.unwrap();
    assert!(
        guard.unlock().await.is_err(),
        "a lost lock cannot be released"
    );
    holder.close().await;
    waiter.close().await;
}

/// Whether a client of `sentinel` is subscribed (to `+switch-master`).
fn has_subscriber(sentinel: &lock_testkit::fixtures::RedisServer) -> bool {
    let list = sentinel.cmd(&["CLIENT", "LIST"]);
    format!("{list:?}").contains(" sub=1 ")
}

/// The `+switch-master` listener lives as long as the client: closing the
/// client closes its connection to the sentinel.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_the_client_stops_listening_to_the_sentinels() {
    let group = blocking(SentinelGroup::start_minimal);
    let sentinel = &group.sentinels()[0];
    let client = connect(sentinel_config(&group)).await;
    let deadline = tokio::time::Instant::now() + HAND_OVER;
    while !has_subscriber(sentinel) {
        assert!(tokio::time::Instant::now() < deadline, "never subscribed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    client.close().await;
    let deadline = tokio::time::Instant::now() + HAND_OVER;
    while has_subscriber(sentinel) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "still listening after close"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Without `+switch-master` (the first "sentinel" is a plain server, which
/// the listener subscribes to in vain and the lookup skips), the client
/// still follows a failover: when the sentinels demote the old master they
/// close its client connections, and the client asks them again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failover_is_followed_without_switch_master_notices() {
    let mut group = SentinelGroup::start();
    let deaf = lock_testkit::fixtures::RedisServer::start();
    let mut urls = vec![deaf.url()];
    urls.extend(group.sentinel_urls());
    let config = RedisConfig::sentinel(urls, SENTINEL_MASTER_NAME)
        .command_timeout(TIMEOUT)
        .connect_timeout(TIMEOUT)
        .replica_sync_connected(Duration::from_millis(900));
    let holder = connect(config.clone()).await;
    let waiter = connect(config).await;
    let guard = holder.lock("deaf").unwrap().lock().await.unwrap();
    let waiting = tokio::spawn({
        let lock = waiter.lock("deaf").unwrap();
        async move { lock.lock().await }
    });
    wait_for_subscriber(group.master(), "deaf").await;
    let old = group.master().port();
    blocking(|| {
        group.wait_replica_synced();
        group.failover();
    });
    // The sentinels demote the old master within their INFO period
    // (10 s), closing every client connection of it.
    let started = std::time::Instant::now();
    wait_for_subscriber_within(group.master(), "deaf", Duration::from_secs(15)).await;
    assert_ne!(group.master().port(), old);
    eprintln!("moved {:?} after the failover", started.elapsed());
    assert!(!guard.is_lost());
    guard.unlock().await.expect("unlock on the new master");
    let taken = timeout(HAND_OVER, waiting)
        .await
        .expect("the waiter was woken on the new master")
        .unwrap()
        .unwrap();
    taken.unlock().await.unwrap();
    holder.close().await;
    waiter.close().await;
}

/// The master's password is the master's own (the sentinel needs none):
/// missing or wrong, it is a configuration error, not an outage to wait
/// out; right, locks work.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_master_password_is_used_and_a_wrong_one_is_not_retried() {
    let group = blocking(|| SentinelGroup::start_minimal_with_password("master-secret"));
    for config in [
        sentinel_config(&group),
        sentinel_config(&group).sentinel_master_auth(None, "wrong"),
    ] {
        let err = lock_redis::connect(config, ClientConfig::default())
            .await
            .unwrap_err();
        assert!(err.is_unauthorized(), "{err:?}");
        assert!(!err.is_retryable(), "{err:?}");
        assert!(!err.to_string().contains("master-secret"), "{err}");
    }
    let client = connect(sentinel_config(&group).sentinel_master_auth(None, "master-secret")).await;
    let guard = client.lock("authed").unwrap().lock().await.unwrap();
    guard.unlock().await.unwrap();
    client.close().await;
}

/// A master whose password comes from a credentials provider: the lookup
/// that follows `+switch-master` asks the provider too, so the waiter's
/// subscription moves to the promoted replica and the waiter is woken
/// there; a new lock works after the failover.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failover_to_a_master_needing_the_providers_password() {
    use lock_redis::{Credentials, StaticCredentials};

    let mut group = blocking(|| SentinelGroup::start_with_password("m4ster"));
    let config =
        || sentinel_config(&group).credentials(StaticCredentials(Credentials::password("m4ster")));
    let holder = connect(config()).await;
    let waiter = connect(config()).await;
    let guard = holder.lock("moved").unwrap().lock().await.unwrap();
    let waiting = tokio::spawn({
        let lock = waiter.lock("moved").unwrap();
        async move { lock.lock().await }
    });
    wait_for_subscriber(group.master(), "moved").await;
    blocking(|| {
        group.wait_replica_synced();
        group.failover();
    });
    wait_for_subscriber(group.master(), "moved").await;
    guard.unlock().await.expect("unlock on the new master");
    let taken = timeout(HAND_OVER, waiting)
        .await
        .expect("the waiter was woken on the new master")
        .unwrap()
        .unwrap();
    taken.unlock().await.unwrap();
    let again = holder.lock("after").unwrap().lock().await.unwrap();
    assert_eq!(group.master().cmd(&["HLEN", "after"]), Value::Int(1));
    again.unlock().await.unwrap();
    holder.close().await;
    waiter.close().await;
}
