//! `lazy_connect` on a cluster: a client built while every node is down
//! (the slot map and the pub/sub mode are read on first use), whose
//! waiting acquisition rides the outage out and takes the lock once the
//! nodes are back; unlock notices then use the mode learnt late.

use crate::common;

use std::time::Duration;

use lock_redis_cluster::lock_core::backend::Connection;
use lock_redis_cluster::lock_script::ScriptCall;
use lock_redis_cluster::{
    ClientConfig, ClusterConfig, ClusterTransport, LockClient, PubSubMode, Transport,
};
use lock_testkit::fixtures::RedisCluster;

/// Nodes restarting, the cluster agreeing again, our retries: with room
/// for a loaded machine.
const RECOVERY: Duration = Duration::from_secs(30);

async fn connect(config: ClusterConfig) -> lock_redis_cluster::Result<LockClient> {
    lock_redis_cluster::connect(config, ClientConfig::default()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lazy_cluster_client_starts_while_every_node_is_down() {
    let mut cluster = RedisCluster::builder().replicas_per_master(0).start();
    let config = common::cluster::config(&cluster, PubSubMode::Auto)
        .command_timeout(Duration::from_millis(500))
        .connect_timeout(Duration::from_millis(300));
    let ports = cluster.ports();
    for &port in &ports {
        cluster.node_mut(port).kill();
    }

    let eager = connect(config.clone()).await.unwrap_err();
    assert!(eager.is_retryable(), "{eager:?}");
    let config = config.lazy_connect(true);
    let client = connect(config.clone()).await.unwrap();
    // A call built before the transport knows the pub/sub mode carries a
    // placeholder publish command, replaced once the mode is known.
    let transport = ClusterTransport::connect(config).await.unwrap();
    assert!(!transport.is_sharded());
    let echo = redis::Script::new("return ARGV[1]");
    let early = ScriptCall::new(
        &echo,
        vec!["{lazy}:echo".to_owned()],
        vec![transport.publish_command().to_owned()],
    );
    let e = transport.eval(early.clone()).await.unwrap_err();
    assert!(e.is_retryable(), "{e:?}");
    let lock = client.lock("lazy").unwrap();
    let down = lock.try_lock().await.unwrap_err();
    assert!(down.is_retryable(), "{down:?}");

    // A wait waits the outage out.
    let waiting = tokio::spawn(async move { lock.lock().await });
    tokio::task::block_in_place(|| {
        for &port in &ports {
            cluster.node_mut(port).restart();
        }
    });
    cluster.wait_settled(RECOVERY).await;
    let sent = tokio::time::timeout(RECOVERY, async {
        loop {
            match transport.eval(early.clone()).await {
                Ok(value) => return value,
                Err(e) => assert!(e.is_retryable(), "{e:?}"),
            }
        }
    })
    .await
    .expect("the transport starts once the cluster answers");
    assert_eq!(sent, redis::Value::BulkString(b"SPUBLISH".to_vec()));
    assert!(transport.is_sharded());
    transport.close().await;
    let guard = tokio::time::timeout(RECOVERY, waiting)
        .await
        .expect("the wait ends once the cluster answers")
        .unwrap()
        .unwrap();

    // The scripts publish with the mode learnt on first use (Redis 7+:
    // sharded), so a waiter subscribed by it is woken by the unlock
    // notice, long before the 30 s lease would end.
    let other = client.lock("lazy").unwrap();
    let next = tokio::spawn(async move { other.lock().await });
    let master = cluster.node(cluster.master_of_slot(cluster.keyslot("lazy")));
    let subscribed = tokio::time::timeout(RECOVERY, async {
        let channel = "redisson_lock__channel:{lazy}";
        while master.cmd(&["PUBSUB", "SHARDNUMSUB", channel])
            == redis::Value::Array(vec![
                redis::Value::BulkString(channel.as_bytes().to_vec()),
                redis::Value::Int(0),
            ])
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(subscribed.is_ok(), "the waiter never subscribed");
    guard.unlock().await.unwrap();
    let next = tokio::time::timeout(Duration::from_secs(5), next)
        .await
        .expect("the unlock notice wakes the waiter")
        .unwrap()
        .unwrap();
    next.unlock().await.unwrap();
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lazy_cluster_client_with_a_bad_seed_list_still_fails_at_once() {
    let e = connect(ClusterConfig::new(["not a url"]).lazy_connect(true))
        .await
        .unwrap_err();
    assert!(e.is_invalid_argument(), "{e:?}");
}
