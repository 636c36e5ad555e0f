//! Failover of the master holding a lock: the replica is promoted, calls
//! resume within a bounded time, waiters still get the lock, and with
//! replica sync a lock acknowledged to the caller survives.

use crate::common;

use std::time::Duration;

use lock_redis_cluster::slot::key_slot;
use lock_redis_cluster::{ClientConfig, LockError, PubSubMode};
use lock_testkit::fixtures::RedisCluster;
use tokio::time::Instant;

/// How long calls may fail after the master dies: node timeout (1 s),
/// election, and our topology refresh, with room for a loaded machine.
const RECOVERY: Duration = Duration::from_secs(10);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn locks_survive_the_failover_of_their_master() {
    let mut cluster = RedisCluster::start();
    let name = "failover:orders";
    let slot = key_slot(name);
    let config =
        common::cluster::config(&cluster, PubSubMode::Auto).replica_sync(1, Duration::from_secs(1));
    // Renewals every 2 s: a lease of 6 s outlasts the failover.
    let client_config = ClientConfig::default().watchdog_timeout(Duration::from_secs(6));
    let holder = common::cluster::client(&cluster, config.clone(), client_config.clone()).await;
    let waiter = common::cluster::client(&cluster, config, client_config).await;

    let guard = holder.lock(name).unwrap().lock().await.unwrap();
    let waiting = {
        let waiter = waiter.clone();
        tokio::spawn(async move {
            // Keep trying across the failover: errors while the cluster
            // recovers are allowed, not after.
            let started = Instant::now();
            loop {
                match waiter.lock(name).unwrap().lock().await {
                    Ok(g) => return (g, started.elapsed()),
                    // Until the old master is back as a replica, the new
                    // master has none, and replica sync refuses the lock.
                    Err(e)
                        if (e.is_retryable() || matches!(e, LockError::NotReplicated { .. }))
                            && started.elapsed() < RECOVERY => {}
                    Err(e) => panic!("waiter failed: {e}"),
                }
            }
        })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;

    cluster.wait_in_sync().await;
    let old = cluster.kill_master_of_slot(slot);
    let killed = Instant::now();
    let promoted = cluster.wait_for_failover(slot, RECOVERY).await;
    assert_ne!(promoted, old);

    // The holder's calls resume, and its lock is still there.
    let lock = holder.lock(name).unwrap();
    let held = loop {
        match lock.is_held_by(guard.owner()).await {
            Ok(held) => break held,
            Err(e) if e.is_retryable() && killed.elapsed() < RECOVERY => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("calls did not resume after the failover: {e}"),
        }
    };
    let resumed = killed.elapsed();
    assert!(held, "the replicated lock was lost in the failover");
    assert!(!guard.is_lost());
    eprintln!("calls resumed {resumed:?} after the master was killed");

    // The old master comes back as a replica of the new one.
    cluster.node_mut(old).restart();
    cluster.wait_in_sync().await;
    guard.unlock().await.unwrap();
    let (got, waited) = waiting.await.unwrap();
    eprintln!("the waiter got the lock after {waited:?}");
    got.unlock().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_enough_replicas_the_lock_is_given_back() {
    let cluster = RedisCluster::start();
    // The one replica must be in sync and given time to acknowledge, so the
    // count it reports is 1, not a 0 from a replica still catching up.
    cluster.wait_in_sync().await;
    let config =
        common::cluster::config(&cluster, PubSubMode::Auto).replica_sync(2, Duration::from_secs(1));
    let client = common::cluster::client(&cluster, config, ClientConfig::default()).await;
    let lock = client.lock("needs-two-replicas").unwrap();
    let err = lock.lock().await.unwrap_err();
    assert!(
        matches!(
            err,
            LockError::NotReplicated {
                wanted: 2,
                acked: 1,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(!err.is_retryable());
    assert!(
        !lock.is_locked().await.unwrap(),
        "the unreplicated hold was given back"
    );
}

/// Replica sync is on by default on a cluster (issue 37, item 8): an
/// acquisition with the default configuration waits for the replica of the
/// master owning its slot (that master runs `WAIT`), renewals and releases
/// do not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn by_default_an_acquisition_waits_for_its_masters_replica() {
    let cluster = tokio::task::block_in_place(RedisCluster::start);
    let name = "synced:orders";
    let master = cluster.node(cluster.master_of_slot(key_slot(name)));
    let deadline = Instant::now() + Duration::from_secs(10);
    while !format!("{:?}", master.cmd(&["INFO", "replication"])).contains("state=online") {
        assert!(Instant::now() < deadline, "the replica never came online");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let config = common::cluster::config(&cluster, PubSubMode::Auto);
    let client = common::cluster::client(&cluster, config, ClientConfig::default()).await;
    master.cmd(&["CONFIG", "RESETSTAT"]);
    for _ in 0..3 {
        let guard = client.lock(name).unwrap().lock().await.unwrap();
        guard.unlock().await.unwrap();
    }
    let stats = format!("{:?}", master.cmd(&["INFO", "commandstats"]));
    // At least one per acquisition (one more for an acquisition answered
    // NOSCRIPT: its pipeline is sent again after loading the script).
    let waits: u64 = stats
        .split("cmdstat_wait:calls=")
        .nth(1)
        .and_then(|rest| rest.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(waits >= 3, "{stats}");
    client.close().await;
}
