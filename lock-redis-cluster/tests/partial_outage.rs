//! A client started while one master is down (killed, its replica not yet
//! promoted): connecting works, names on the healthy masters lock at once,
//! and a name on the dead master's slots locks once the replica takes over,
//! within the caller's wait.

mod common;

use std::time::Duration;

use lock_redis_cluster::slot::key_slot;
use lock_redis_cluster::{ClientConfig, PubSubMode};
use lock_testkit::fixtures::RedisCluster;
use tokio::time::Instant;

/// Node timeout (1 s), election and our topology refresh, with room for a
/// loaded machine.
const RECOVERY: Duration = Duration::from_secs(15);

/// A name whose slot the master on `port` serves (`on`) or does not.
fn name_on(cluster: &RedisCluster, port: u16, on: bool, tag: &str) -> String {
    (0..)
        .map(|i| format!("outage:{tag}:{i}"))
        .find(|n| (cluster.master_of_slot(key_slot(n)) == port) == on)
        .expect("some name hashes there")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_client_works_during_a_failover() {
    let mut cluster = RedisCluster::start();
    let doomed = name_on(&cluster, cluster.master_ports()[0], true, "doomed");
    let slot = key_slot(&doomed);
    // One name per healthy master.
    let healthy: Vec<String> = cluster.master_ports()[1..]
        .iter()
        .map(|&port| name_on(&cluster, port, true, "healthy"))
        .collect();
    let config = common::cluster::config(&cluster, PubSubMode::Auto);

    let killed = cluster.kill_master_of_slot(slot);
    let started = Instant::now();
    let client = lock_redis_cluster::connect(config, ClientConfig::default())
        .await
        .expect("connecting works while a master is down");
    let connected = started.elapsed();
    for name in &healthy {
        let t = Instant::now();
        let guard = client
            .lock(name)
            .unwrap()
            .try_lock()
            .await
            .expect("healthy masters answer")
            .expect("nobody holds it");
        assert!(t.elapsed() < Duration::from_secs(1), "{name}: {:?}", t.elapsed());
        guard.unlock().await.unwrap();
    }
    // Otherwise this test would show nothing about a partial outage.
    assert_eq!(
        cluster.master_of_slot(slot),
        killed,
        "the replica was promoted before the new client was tried"
    );

    let t = Instant::now();
    let guard = client
        .lock(&doomed)
        .unwrap()
        .try_lock_for(RECOVERY)
        .await
        .expect("the wait outlasts the failover")
        .expect("nobody holds it");
    let waited = t.elapsed();
    let promoted = cluster.wait_for_failover(slot, RECOVERY).await;
    assert_ne!(promoted, killed);
    guard.unlock().await.unwrap();
    eprintln!("connected in {connected:?}; the dead master's name locked after {waited:?}");
    client.close().await;
}
