//! A client started while one master is down (killed, its replica not yet
//! promoted): connecting works, names on the healthy masters lock at once,
//! and a name on the dead master's slots locks once the replica takes over,
//! within the caller's wait. And seeds that never answer do not keep a
//! client from connecting through one that does.

use crate::common;

use std::net::TcpListener;
use std::time::Duration;

use common::fake_node::FakeNode;
use lock_redis_cluster::lock_core::backend::Connection;
use lock_redis_cluster::slot::key_slot;
use lock_redis_cluster::{ClientConfig, ClusterConfig, ClusterTransport, PubSubMode};
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
        assert!(
            t.elapsed() < Duration::from_secs(1),
            "{name}: {:?}",
            t.elapsed()
        );
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

/// Seeds that accept connections but never answer (a dead host, a
/// partition): each gets a moment before the next seed is asked too, so the
/// one that answers is reached well within the command timeout.
#[tokio::test]
async fn silent_seeds_do_not_keep_a_client_from_connecting() {
    let silent: Vec<TcpListener> = (0..3)
        .map(|_| TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    let node = FakeNode::start().await;
    node.set_slots(&[(0, 16383, node.port)]);
    let mut seeds: Vec<String> = silent
        .iter()
        .map(|l| format!("redis://{}/", l.local_addr().unwrap()))
        .collect();
    seeds.push(node.url());
    let timeout = Duration::from_secs(3);
    let started = Instant::now();
    let transport = ClusterTransport::connect(
        ClusterConfig::new(seeds)
            .pubsub(PubSubMode::Classic)
            .command_timeout(timeout),
    )
    .await
    .expect("the answering seed gives the map");
    let took = started.elapsed();
    assert!(took < timeout / 2, "took {took:?}");
    assert_eq!(transport.slot_map().master(0), Some(node.addr().as_str()));
    transport.close().await;
}
