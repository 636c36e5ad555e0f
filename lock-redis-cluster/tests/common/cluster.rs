//! Starting a fixture cluster and connecting clients and harnesses to it.

use std::sync::Arc;
use std::time::Duration;

use lock_redis_cluster::{ClientConfig, ClusterConfig, KeyLayout, LockClient, PubSubMode};
use lock_testkit::fixtures::{RedisCluster, RedisHarness};
use redis::cluster_async::ClusterConnection;

/// The cluster configuration tests use: short timeouts, given pub/sub mode.
pub(crate) fn config(cluster: &RedisCluster, mode: PubSubMode) -> ClusterConfig {
    ClusterConfig::new(cluster.seed_urls())
        .pubsub(mode)
        .command_timeout(Duration::from_secs(3))
        .connect_timeout(Duration::from_secs(1))
}

/// The URLs of the cluster's masters.
pub(crate) fn master_urls(cluster: &RedisCluster) -> Vec<String> {
    cluster
        .master_ports()
        .into_iter()
        .map(|port| format!("redis://127.0.0.1:{port}/"))
        .collect()
}

/// A conformance harness over `cluster` whose clients hand out every kind;
/// the suite picks the handle. Raw commands go through `redis`'s own
/// cluster client, acting as another client (or Redisson) would.
pub(crate) async fn harness(
    cluster: &RedisCluster,
    mode: PubSubMode,
) -> Arc<RedisHarness<ClusterConnection>> {
    let base = config(cluster, mode);
    let connect = move |_seed: String, client: ClientConfig| {
        let base = base.clone();
        async move {
            lock_redis_cluster::connect(base, client)
                .await
                .expect("connect to the fixture cluster")
        }
    };
    let raw = redis::cluster::ClusterClient::new(cluster.seed_urls())
        .expect("cluster client")
        .get_async_connection()
        .await
        .expect("raw cluster connection");
    let mut masters = Vec::new();
    for url in master_urls(cluster) {
        let client = redis::Client::open(url).expect("master url");
        masters.push(
            client
                .get_multiplexed_async_connection()
                .await
                .expect("master connection"),
        );
    }
    Arc::new(RedisHarness::over(
        raw,
        masters,
        mode != PubSubMode::Classic,
        cluster.seed_urls()[0].clone(),
        KeyLayout::default(),
        connect,
    ))
}

/// A client of `cluster` with `client` settings.
pub(crate) async fn client(
    cluster: &RedisCluster,
    cfg: ClusterConfig,
    client: ClientConfig,
) -> LockClient {
    let _ = cluster;
    lock_redis_cluster::connect(cfg, client)
        .await
        .expect("connect to the fixture cluster")
}
