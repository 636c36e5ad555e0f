//! The connect-time command check on a cluster: a master that does not
//! know a command the client needs fails the connect, naming the master
//! and the command; a lazy connect checks nothing.

use lock_redis_cluster::{ClientConfig, ClusterConfig};
use lock_testkit::fixtures::RedisCluster;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_master_without_a_needed_command_fails_the_connect() {
    let cluster = tokio::task::block_in_place(|| {
        RedisCluster::builder()
            .replicas_per_master(0)
            .arg("--rename-command")
            .arg("ZCOUNT")
            .arg("")
            .start()
    });
    let e = lock_redis_cluster::connect(
        ClusterConfig::new(cluster.seed_urls()),
        ClientConfig::default(),
    )
    .await
    .unwrap_err();
    assert!(e.is_unsupported() && !e.is_retryable(), "{e:?}");
    let message = e.to_string();
    assert!(message.contains("the master at 127.0.0.1:"), "{message}");
    assert!(
        message.contains("ZCOUNT (the expirable-permit semaphore)"),
        "{message}"
    );

    let lazy = ClusterConfig::new(cluster.seed_urls()).lazy_connect(true);
    let client = lock_redis_cluster::connect(lazy, ClientConfig::default())
        .await
        .expect("a lazy connect checks nothing");
    client.close().await;
}

/// Every command a cluster needs is known to a stock cluster (sharded
/// pub/sub's included): the check passes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stock_cluster_passes_the_check() {
    let cluster =
        tokio::task::block_in_place(|| RedisCluster::builder().replicas_per_master(0).start());
    let client = lock_redis_cluster::connect(
        ClusterConfig::new(cluster.seed_urls())
            .replica_sync(1, std::time::Duration::from_millis(10)),
        ClientConfig::default(),
    )
    .await;
    match client {
        Ok(client) => client.close().await,
        Err(e) => panic!("{e:?}"),
    }
}
