//! A multi-lock and a RedLock whose members live in different deployments:
//! one lock on a Redis Cluster, one on a single redis-server. The engine's
//! composition knows no deployment, so all-or-nothing, the fixed order and
//! cancellation hold across them.

use std::time::Duration;

use lock_redis_cluster::{ClientConfig, LockClient, MultiLock, PubSubMode, RedLock};
use lock_testkit::conformance::redlock::hold_every_member;
use lock_testkit::conformance::unique;
use lock_testkit::fixtures::{RedisCluster, RedisServer};

use crate::common;

const WATCHDOG: Duration = Duration::from_millis(900);

fn client_config() -> ClientConfig {
    ClientConfig::default().watchdog_timeout(WATCHDOG)
}

async fn single(server: &RedisServer) -> LockClient {
    let redis = lock_redis::RedisConfig::new(server.url())
        .command_timeout(Duration::from_millis(500))
        .connect_timeout(Duration::from_millis(500));
    lock_redis::connect(redis, client_config())
        .await
        .expect("connect to the single node")
}

/// One cluster for both checks: starting one is the slow part.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn locks_of_a_cluster_and_of_single_nodes_compose() {
    let cluster = RedisCluster::start();
    a_multi_lock_spans_a_cluster_and_a_single_node(&cluster).await;
    a_redlock_over_mixed_deployments_keeps_its_majority(&cluster).await;
}

async fn a_multi_lock_spans_a_cluster_and_a_single_node(cluster: &RedisCluster) {
    let server = RedisServer::start();
    let config = common::cluster::config(cluster, PubSubMode::Sharded);
    let on_cluster = common::cluster::client(cluster, config, client_config()).await;
    let on_single = single(&server).await;
    let (a, b) = (unique("mixed-a"), unique("mixed-b"));
    let members = || {
        vec![
            on_cluster.lock(&a).unwrap(),
            on_single.fair_lock(&b).unwrap().as_lock().clone(),
        ]
    };

    let guard = MultiLock::new(members()).unwrap().lock().await.unwrap();
    assert!(on_cluster.lock(&a).unwrap().is_locked().await.unwrap());
    assert!(on_single.lock(&b).unwrap().is_locked().await.unwrap());
    // Another process's multi-lock over the same members, listed the other
    // way round, waits for them (fixed order) and takes nothing meanwhile.
    let other_cluster = common::cluster::client(
        cluster,
        common::cluster::config(cluster, PubSubMode::Sharded),
        client_config(),
    )
    .await;
    let other_single = single(&server).await;
    let reversed = MultiLock::new(vec![
        other_single.fair_lock(&b).unwrap().as_lock().clone(),
        other_cluster.lock(&a).unwrap(),
    ])
    .unwrap();
    assert!(reversed
        .try_lock_for(Duration::from_millis(300))
        .await
        .unwrap()
        .is_none());
    guard.unlock().await.unwrap();
    let theirs = reversed
        .try_lock_for(Duration::from_secs(3))
        .await
        .unwrap()
        .expect("free once unlocked");
    theirs.unlock().await.unwrap();

    // Half taken, then dropped: the single node's member is held by someone
    // else, so the cluster's (first by name) was taken and must be given back.
    let blocker = other_single.fair_lock(&b).unwrap().lock().await.unwrap();
    let waiting = MultiLock::new(members()).unwrap();
    let attempt = tokio::spawn(async move { waiting.lock().await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    attempt.abort();
    let _ = attempt.await;
    blocker.unlock().await.unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(3);
    while on_cluster.lock(&a).unwrap().is_locked().await.unwrap() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the cancelled multi-lock left its cluster member held"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!on_single.lock(&b).unwrap().is_locked().await.unwrap());
}

/// A RedLock over a cluster and two single nodes keeps its majority when
/// one single node dies: that member is lost at its lease end, the guard
/// is not.
async fn a_redlock_over_mixed_deployments_keeps_its_majority(cluster: &RedisCluster) {
    let mut servers = [RedisServer::start(), RedisServer::start()];
    let config = common::cluster::config(cluster, PubSubMode::Sharded);
    let on_cluster = common::cluster::client(cluster, config, client_config()).await;
    let name = unique("mixed-red");
    let mut locks = vec![on_cluster.lock(&name).unwrap()];
    for server in &servers {
        locks.push(single(server).await.lock(&name).unwrap());
    }
    let red = RedLock::new(locks).unwrap();
    // A quorum would do, but the check needs all three held first.
    let guard = hold_every_member(&red).await;
    servers[0].kill();
    tokio::time::sleep(WATCHDOG * 3).await;
    assert_eq!(guard.held(), 2, "the dead node's member is lost");
    assert!(!guard.is_lost(), "two of three still held");
    guard.unlock().await.unwrap();
}
