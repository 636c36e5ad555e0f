//! Tests of the Redis Cluster fixture itself. Two clusters: one for
//! topology, redirects, resharding and drop; one for failover (it kills a
//! master, so it cannot be shared).

use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use futures::FutureExt;
use lock_testkit::fixtures::redis::{self, Value};
use lock_testkit::fixtures::{RedisCluster, Role};

fn bulk(s: &str) -> Value {
    Value::BulkString(s.as_bytes().to_vec())
}

/// Whether `pid` is a live redis-server (a zombie or a reused pid is not).
fn runs_redis(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/cmdline"))
        .is_ok_and(|c| c.contains("redis-server"))
}

/// Asserts that `port` answers `args` with `-MOVED <slot> 127.0.0.1:<to>`.
fn assert_moved(cluster: &RedisCluster, port: u16, args: &[&str], slot: u16, to: u16) {
    let err = cluster.node(port).try_cmd(args).unwrap_err();
    assert_eq!(err.code(), Some("MOVED"), "{args:?} on {port}: {err}");
    let to = format!("127.0.0.1:{to}");
    assert_eq!(err.redirect_node(), Some((to.as_str(), slot)), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn topology_redirects_resharding_and_drop() {
    let cluster = RedisCluster::start();
    eprintln!("cluster started in {:?}", cluster.startup_time());

    // 6 nodes on loopback, 3 masters covering all 16384 slots, one replica
    // each.
    let ports = cluster.ports();
    assert_eq!(ports.len(), 6);
    assert_eq!(
        cluster.seed_urls(),
        ports
            .iter()
            .map(|p| format!("redis://127.0.0.1:{p}/"))
            .collect::<Vec<_>>()
    );
    let nodes = cluster.nodes();
    assert_eq!(nodes.len(), 6);
    assert!(nodes.iter().all(|n| n.id.len() == 40 && !n.failing));
    let masters = cluster.master_ports();
    assert_eq!(masters.len(), 3);
    let mut ranges: Vec<_> = nodes
        .iter()
        .filter(|n| n.role == Role::Master)
        .flat_map(|n| n.slots.clone())
        .collect();
    ranges.sort_by_key(|r| *r.start());
    let mut next = 0u32;
    for r in &ranges {
        assert_eq!(u32::from(*r.start()), next, "gap or overlap: {ranges:?}");
        next = u32::from(*r.end()) + 1;
    }
    assert_eq!(next, 16384);
    let mut replicas = Vec::new();
    for &master in &masters {
        let of = cluster.replicas_of(master);
        assert_eq!(of.len(), 1, "replicas of {master}: {of:?}");
        replicas.extend(of);
    }
    replicas.sort_unstable();
    let mut all: Vec<u16> = masters.iter().chain(&replicas).copied().collect();
    all.sort_unstable();
    let mut sorted_ports = ports.clone();
    sorted_ports.sort_unstable();
    assert_eq!(all, sorted_ports);
    for &replica in &replicas {
        let info = cluster.node(replica).cmd(&["INFO", "replication"]);
        let Value::BulkString(info) = info else {
            panic!("INFO answered {info:?}")
        };
        assert!(String::from_utf8_lossy(&info).contains("master_link_status:up"));
    }

    // A known slot, and hash tags.
    assert_eq!(cluster.keyslot("foo"), 12182);
    let user = cluster.keyslot("user1000");
    assert_eq!(cluster.keyslot("{user1000}.following"), user);
    assert_eq!(cluster.keyslot("{user1000}.followers"), user);

    // A key lives on its slot's master; the others redirect with -MOVED.
    let key = "{fixture}:k";
    let slot = cluster.keyslot(key);
    let owner = cluster.master_of_slot(slot);
    assert_eq!(cluster.node(owner).cmd(&["SET", key, "v1"]), Value::Okay);
    assert_eq!(cluster.node(owner).cmd(&["GET", key]), bulk("v1"));
    for &port in masters.iter().filter(|p| **p != owner) {
        assert_moved(&cluster, port, &["GET", key], slot, owner);
    }
    // Replicas redirect too (no READONLY on the fixture's connections).
    assert_moved(
        &cluster,
        cluster.replicas_of(owner)[0],
        &["GET", key],
        slot,
        owner,
    );
    cluster.wait_in_sync().await;

    // Step-by-step migration: -ASK for missing keys while importing, the
    // key moves with migrate_keys, -MOVED to the target afterwards.
    let target = *masters.iter().find(|p| **p != owner).unwrap();
    let other_key = "{fixture}:other";
    cluster.begin_migration(slot, target);
    assert_eq!(cluster.node(owner).cmd(&["GET", key]), bulk("v1"));
    let ask = cluster
        .node(owner)
        .try_cmd(&["GET", other_key])
        .unwrap_err();
    assert_eq!(ask.code(), Some("ASK"), "{ask}");
    let target_addr = format!("127.0.0.1:{target}");
    assert_eq!(ask.redirect_node(), Some((target_addr.as_str(), slot)));
    assert_eq!(cluster.migrate_keys(slot), 1);
    assert_eq!(cluster.migrate_keys(slot), 0);
    let ask = cluster.node(owner).try_cmd(&["GET", key]).unwrap_err();
    assert_eq!(ask.code(), Some("ASK"), "{ask}");
    let started = Instant::now();
    cluster.finish_migration(slot).await;
    eprintln!("finish_migration settled in {:?}", started.elapsed());
    assert_eq!(cluster.master_of_slot(slot), target);
    assert_eq!(cluster.node(target).cmd(&["GET", key]), bulk("v1"));
    // Every other node, replicas included, agrees.
    for &port in ports.iter().filter(|p| **p != target) {
        assert_moved(&cluster, port, &["GET", key], slot, target);
    }

    // move_slot in one go, back to the first owner, with several keys.
    for i in 0..250 {
        let k = format!("{{fixture}}:bulk:{i}");
        assert_eq!(cluster.node(target).cmd(&["SET", &k, "x"]), Value::Okay);
    }
    let started = Instant::now();
    cluster.move_slot(slot, owner).await;
    eprintln!("move_slot of 251 keys took {:?}", started.elapsed());
    assert_eq!(cluster.master_of_slot(slot), owner);
    assert_eq!(cluster.node(owner).cmd(&["GET", key]), bulk("v1"));
    assert_eq!(
        cluster.node(owner).cmd(&["GET", "{fixture}:bulk:249"]),
        bulk("x")
    );
    assert_eq!(
        cluster
            .node(owner)
            .cmd(&["CLUSTER", "COUNTKEYSINSLOT", &slot.to_string()]),
        Value::Int(251)
    );
    assert_eq!(
        cluster
            .node(target)
            .cmd(&["CLUSTER", "COUNTKEYSINSLOT", &slot.to_string()]),
        Value::Int(0)
    );

    // A paused node is skipped by topology queries and waits.
    let paused = replicas[0];
    cluster.node(paused).pause();
    assert_eq!(cluster.nodes().len(), 6);
    cluster.wait_settled(Duration::from_secs(5)).await;
    cluster.node(paused).resume();
    cluster.wait_settled(Duration::from_secs(5)).await;

    // A wait that times out panics with what is missing and the nodes' logs.
    let master = cluster.master_of_slot(0);
    cluster.node(master).pause();
    let panic = AssertUnwindSafe(cluster.wait_settled(Duration::from_millis(200)))
        .catch_unwind()
        .await
        .unwrap_err();
    cluster.node(master).resume();
    let message = panic.downcast_ref::<String>().unwrap();
    assert!(
        message.contains(&format!("served by {master}, which is not running")),
        "{message}"
    );
    assert!(
        message.contains(&format!("node 127.0.0.1:{master} (paused)")),
        "{message}"
    );
    assert!(message.contains("Ready to accept connections"), "{message}");
    cluster.wait_settled(Duration::from_secs(10)).await;

    // Dropping the fixture kills every node (a paused one too) and removes
    // the temp dirs.
    cluster.node(paused).pause();
    let pids: Vec<u32> = ports
        .iter()
        .map(|p| cluster.node(*p).pid().unwrap())
        .collect();
    let dirs: Vec<PathBuf> = ports
        .iter()
        .map(|p| cluster.node(*p).dir().to_path_buf())
        .collect();
    assert!(pids.iter().all(|pid| runs_redis(*pid)));
    drop(cluster);
    for pid in pids {
        assert!(!runs_redis(pid), "redis-server {pid} still runs");
    }
    for dir in dirs {
        assert!(!dir.exists(), "{} still exists", dir.display());
    }
}

// On the default current-thread runtime: the waits must not block it.
#[tokio::test]
async fn failover_promotes_the_replica_and_keeps_acknowledged_writes() {
    let mut cluster = RedisCluster::builder()
        .masters(3)
        .replicas_per_master(1)
        .arg("--maxmemory")
        .arg("64mb")
        .start();
    assert_eq!(
        cluster
            .node(cluster.ports()[0])
            .cmd(&["CONFIG", "GET", "maxmemory"]),
        Value::Array(vec![bulk("maxmemory"), bulk(&(64 << 20).to_string())])
    );

    let key = "{failover}:k";
    let slot = cluster.keyslot(key);
    let old = cluster.master_of_slot(slot);
    let replica = cluster.replicas_of(old)[0];
    // Written and acknowledged by the replica before the kill.
    let mut conn = cluster.node(old).client().get_connection().unwrap();
    let () = redis::cmd("SET")
        .arg(key)
        .arg("kept")
        .query(&mut conn)
        .unwrap();
    let acked: i64 = redis::cmd("WAIT")
        .arg(1)
        .arg(2000)
        .query(&mut conn)
        .unwrap();
    assert_eq!(acked, 1);
    cluster.wait_in_sync().await;

    assert_eq!(cluster.kill_master_of_slot(slot), old);
    assert!(cluster.node(old).pid().is_none());
    let started = Instant::now();
    let new = cluster
        .wait_for_failover(slot, Duration::from_secs(15))
        .await;
    eprintln!("failover took {:?}", started.elapsed());
    assert_eq!(new, replica);
    assert_eq!(cluster.master_of_slot(slot), new);
    assert_eq!(cluster.node(new).cmd(&["GET", key]), bulk("kept"));
    let old_view = cluster.nodes().into_iter().find(|n| n.port == old).unwrap();
    assert!(
        old_view.failing && old_view.slots.is_empty(),
        "{old_view:?}"
    );
    for port in cluster.ports().into_iter().filter(|p| *p != old) {
        let Value::BulkString(info) = cluster.node(port).cmd(&["CLUSTER", "INFO"]) else {
            panic!("CLUSTER INFO is a bulk string")
        };
        assert!(String::from_utf8_lossy(&info).contains("cluster_state:ok"));
    }
    // The cluster still takes writes for the slot, and replicates other
    // slots.
    assert_eq!(cluster.node(new).cmd(&["SET", key, "after"]), Value::Okay);
    cluster.wait_in_sync().await;

    // The killed master, restarted, rejoins from its nodes.conf as a
    // replica of the promoted one.
    let started = Instant::now();
    cluster.node_mut(old).restart();
    cluster.wait_settled(Duration::from_secs(15)).await;
    eprintln!("restarted master rejoined in {:?}", started.elapsed());
    assert_eq!(cluster.replicas_of(new), [old]);
    cluster.wait_in_sync().await;
    let mut conn = cluster.node(old).client().get_connection().unwrap();
    let () = redis::cmd("READONLY").query(&mut conn).unwrap();
    let value: String = redis::cmd("GET").arg(key).query(&mut conn).unwrap();
    assert_eq!(value, "after");
}
