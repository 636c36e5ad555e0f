//! One dead master must not make the healthy masters' locks expire: the
//! watchdog renews each master's locks on their own, so renewals stuck on
//! the dead master (waiting out the command timeout, again and again)
//! delay no renewal of a healthy master's lock.
//!
//! The cluster has no replicas and `cluster-require-full-coverage no`, so
//! the dead master's slots stay dead and the healthy masters keep serving
//! theirs: exactly the partial outage the crate docs promise to survive.

use crate::common;

use std::collections::BTreeMap;
use std::time::Duration;

use lock_redis_cluster::slot::key_slot;
use lock_redis_cluster::{ClientConfig, PubSubMode};
use lock_testkit::fixtures::RedisCluster;

/// Short, so a few of them pass quickly; every renewal tick (a third of it)
/// is then shorter than the windows of the old renewal together waiting out
/// their command timeouts.
const WATCHDOG: Duration = Duration::from_secs(2);
/// Short too, but long enough for a healthy master on a loaded machine.
const COMMAND_TIMEOUT: Duration = Duration::from_millis(500);
/// Locks per master: enough that one renewal of all of them takes many
/// calls (one per slot).
const PER_MASTER: usize = 40;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_master_does_not_make_healthy_masters_locks_expire() {
    let mut cluster = RedisCluster::builder()
        .replicas_per_master(0)
        .arg("--cluster-require-full-coverage")
        .arg("no")
        .start();
    let masters = cluster.master_ports();
    let mut names: BTreeMap<u16, Vec<String>> = BTreeMap::new();
    for i in 0.. {
        let name = format!("dead-master:{i}");
        let port = cluster.master_of_slot(key_slot(&name));
        let on_port = names.entry(port).or_default();
        if on_port.len() < PER_MASTER {
            on_port.push(name);
        }
        if names.len() == masters.len() && names.values().all(|n| n.len() == PER_MASTER) {
            break;
        }
    }
    let config =
        common::cluster::config(&cluster, PubSubMode::Classic).command_timeout(COMMAND_TIMEOUT);
    let client =
        lock_redis_cluster::connect(config, ClientConfig::default().watchdog_timeout(WATCHDOG))
            .await
            .expect("connect");
    let mut guards: BTreeMap<u16, Vec<_>> = BTreeMap::new();
    for (&port, on_port) in &names {
        for name in on_port {
            let guard = client.lock(name).unwrap().lock().await.expect("lock");
            guards.entry(port).or_default().push(guard);
        }
    }

    let dead = masters[0];
    cluster.node_mut(dead).kill();
    // Several leases: every healthy lock must have been renewed a few times
    // over, and every dead one must have run out.
    tokio::time::sleep(WATCHDOG * 4).await;

    for (&port, on_port) in &guards {
        let lost = on_port.iter().filter(|g| g.is_lost()).count();
        if port == dead {
            assert_eq!(lost, on_port.len(), "every lock on the dead master is lost");
            continue;
        }
        assert_eq!(
            lost, 0,
            "{lost} of {} locks on the healthy master {port} were reported lost",
            PER_MASTER
        );
        for name in &names[&port] {
            let ttl = match cluster.node(port).cmd(&["PTTL", name]) {
                redis::Value::Int(ttl) => ttl,
                other => panic!("PTTL {name}: {other:?}"),
            };
            assert!(
                ttl > 0,
                "{name} on the healthy master {port}: PTTL {ttl} (the key expired)"
            );
        }
    }
    for (port, on_port) in guards {
        if port != dead {
            for guard in on_port {
                guard
                    .unlock()
                    .await
                    .expect("a healthy master's lock unlocks");
            }
        }
    }
    client.close().await;
}
