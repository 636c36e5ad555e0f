//! docs/acl.md's ACL rule for a lock user, with the cluster's additions
//! (`CLUSTER SLOTS`, `INFO`, `ASKING`, sharded pub/sub), serves locks and
//! wakes waiters on every master; wrong credentials, and unlock channels
//! the user may not subscribe to, are `LockError::Unauthorized`.

use std::time::{Duration, Instant};

use lock_redis_cluster::{ClientConfig, ClusterConfig, LockClient, PubSubMode};
use lock_testkit::fixtures::RedisCluster;

const PREFIX: &str = "locks:";

/// The single-node rule of docs/acl.md plus the cluster's commands.
const CLUSTER_LOCK_USER_RULE: &[&str] = &[
    "resetkeys",
    "resetchannels",
    "-@all",
    "+evalsha",
    "+script|load",
    "+subscribe",
    "+unsubscribe",
    "+ping",
    "+publish",
    "+hexists",
    "+hget",
    "+hgetall",
    "+hincrby",
    "+pexpire",
    "+pttl",
    "+del",
    "+exists",
    "+get",
    "+set",
    "+incr",
    "+type",
    "+time",
    "+lindex",
    "+lpop",
    "+lpos",
    "+lrange",
    "+lrem",
    "+rpush",
    "+zadd",
    "+zrem",
    "+zscore",
    "~locks:*",
    "~redisson_*:{locks:*",
    "&redisson_lock__channel:{locks:*",
    // The cluster's additions.
    "+cluster|slots",
    "+info",
    "+asking",
    "+spublish",
    "+ssubscribe",
    "+sunsubscribe",
];

fn config(cluster: &RedisCluster, user: &str, password: &str) -> ClusterConfig {
    let seeds = cluster
        .ports()
        .into_iter()
        .map(|port| format!("redis://{user}:{password}@127.0.0.1:{port}/"));
    ClusterConfig::new(seeds)
        .key_prefix(PREFIX)
        .pubsub(PubSubMode::Auto)
        .command_timeout(Duration::from_secs(3))
        .connect_timeout(Duration::from_secs(1))
}

async fn connect(config: ClusterConfig) -> lock_redis_cluster::Result<LockClient> {
    lock_redis_cluster::connect(config, ClientConfig::default()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_user_serves_every_master_and_bad_credentials_are_unauthorized() {
    let cluster = RedisCluster::builder().replicas_per_master(0).start();
    // ACL users are per node.
    for port in cluster.ports() {
        let mut args = vec!["ACL", "SETUSER", "locker", "reset", "on", ">s3cret"];
        args.extend_from_slice(CLUSTER_LOCK_USER_RULE);
        cluster.node(port).cmd(&args);
    }
    let holder = connect(config(&cluster, "locker", "s3cret")).await.unwrap();
    let waiter = connect(config(&cluster, "locker", "s3cret")).await.unwrap();
    let mut masters = Vec::new();
    for i in 0.. {
        let name = format!("acl:{i}");
        let master = cluster.master_of_slot(cluster.keyslot(&format!("{PREFIX}{name}")));
        if masters.contains(&master) {
            continue;
        }
        masters.push(master);
        let guard = holder.fenced_lock(&name).unwrap().lock().await.unwrap();
        let lock = waiter.fenced_lock(&name).unwrap();
        let waiting = tokio::spawn(async move {
            let started = Instant::now();
            let got = lock.try_lock_for(Duration::from_secs(3)).await.unwrap();
            (got.map(|g| g.fencing_token()), started.elapsed())
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        let first = guard.fencing_token();
        guard.unlock().await.unwrap();
        let (token, waited) = waiting.await.unwrap();
        assert_eq!(token, Some(first + 1), "{name}");
        assert!(
            waited < Duration::from_secs(2),
            "{name}: woken after {waited:?}"
        );
        if masters.len() == 3 {
            break;
        }
    }

    // A user that may not subscribe to the unlock channels: its waiter is
    // told so at once, rather than never hearing an unlock.
    for port in cluster.ports() {
        let mut args = vec!["ACL", "SETUSER", "deaf", "reset", "on", ">pw"];
        args.extend(
            CLUSTER_LOCK_USER_RULE
                .iter()
                .filter(|rule| !rule.starts_with('&')),
        );
        cluster.node(port).cmd(&args);
    }
    let deaf = connect(config(&cluster, "deaf", "pw")).await.unwrap();
    let held = holder.lock("deaf").unwrap().lock().await.unwrap();
    let started = Instant::now();
    let err = deaf
        .lock("deaf")
        .unwrap()
        .try_lock_for(Duration::from_secs(3))
        .await
        .unwrap_err();
    assert!(err.is_unauthorized(), "{err:?}");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    held.unlock().await.unwrap();

    let started = Instant::now();
    let err = connect(config(&cluster, "locker", "wrong"))
        .await
        .unwrap_err();
    assert!(err.is_unauthorized(), "{err:?}");
    assert!(!err.is_retryable());
    assert!(started.elapsed() < Duration::from_secs(3));
}
