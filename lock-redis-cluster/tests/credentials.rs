//! Rotating credentials on a cluster: every node connection, command and
//! sharded pub/sub, asks the provider at each connect, so after the
//! password rotates on every node and the connections are killed, the
//! client reconnects everywhere with the fresh token.

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lock_redis_cluster::lock_redis::{
    async_trait, Credentials, CredentialsError, CredentialsProvider,
};
use lock_redis_cluster::slot::key_slot;
use lock_redis_cluster::{ClientConfig, LockClient, PubSubMode};
use lock_testkit::fixtures::RedisCluster;

const USER: &str = "rotating";
const WAIT: Duration = Duration::from_secs(10);

#[derive(Clone, Default)]
struct Rotating {
    token: Arc<Mutex<String>>,
    calls: Arc<AtomicUsize>,
}

#[async_trait]
impl CredentialsProvider for Rotating {
    async fn credentials(&self) -> Result<Credentials, CredentialsError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Ok(Credentials::user(USER, self.token.lock().unwrap().clone()))
    }
}

fn set_password(cluster: &RedisCluster, token: &str) {
    let password = format!(">{token}");
    for port in cluster.ports() {
        cluster.node(port).cmd(&[
            "ACL", "SETUSER", USER, "reset", "on", &password, "~*", "&*", "+@all",
        ]);
    }
}

/// A name on each master.
fn names(cluster: &RedisCluster) -> Vec<String> {
    cluster
        .master_ports()
        .into_iter()
        .map(|port| {
            (0..)
                .map(|i| format!("rotating:{i}"))
                .find(|n| cluster.master_of_slot(key_slot(n)) == port)
                .expect("some name hashes there")
        })
        .collect()
}

/// Takes `name`, lets another owner wait until it is subscribed (on the
/// master of the name's slot), releases: the waiter is woken by the
/// sharded unlock notice, long before the 30 s lease would end.
async fn handoff(cluster: &RedisCluster, client: &LockClient, name: &str) {
    let guard = client.lock(name).unwrap().lock().await.unwrap();
    let other = client.lock(name).unwrap();
    let waiting = tokio::spawn(async move { other.lock().await });
    let master = cluster.node(cluster.master_of_slot(key_slot(name)));
    let channel = format!("redisson_lock__channel:{{{name}}}");
    let unsubscribed = redis::Value::Array(vec![
        redis::Value::BulkString(channel.as_bytes().to_vec()),
        redis::Value::Int(0),
    ]);
    let subscribed = tokio::time::timeout(WAIT, async {
        while master.cmd(&["PUBSUB", "SHARDNUMSUB", &channel]) == unsubscribed {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(subscribed.is_ok(), "the waiter never subscribed");
    // The subscriber connection and the script connections are the
    // provider's user's (the fixture's default user is open, so a
    // connection that ignored the provider would work too).
    let clients: String = redis::from_redis_value(master.cmd(&["CLIENT", "LIST"])).unwrap();
    let field = |line: &str, name: &str| {
        line.split_whitespace()
            .find_map(|f| f.strip_prefix(name))
            .map(str::to_owned)
    };
    let ours: Vec<&str> = clients
        .lines()
        // Every connection but the one asking: the subscriber, and the
        // command connections, whose last command varies (a script, the
        // replica count replica sync's default asks for, the slot map).
        .filter(|l| field(l, "cmd=").as_deref() != Some("client|list"))
        .collect();
    assert!(
        ours.len() >= 2,
        "a subscriber and a script connection: {clients}"
    );
    for line in ours {
        assert_eq!(field(line, "user=").as_deref(), Some(USER), "{line}");
    }
    guard.unlock().await.unwrap();
    let taken = tokio::time::timeout(WAIT, waiting)
        .await
        .expect("the waiter gets the lock")
        .unwrap()
        .unwrap();
    taken.unlock().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_node_reconnects_with_the_fresh_token() {
    let cluster = RedisCluster::builder().replicas_per_master(0).start();
    set_password(&cluster, "token-1");
    let provider = Rotating::default();
    *provider.token.lock().unwrap() = "token-1".to_owned();
    // Seeds without credentials: the provider gives them.
    let config = common::cluster::config(&cluster, PubSubMode::Auto).credentials(provider.clone());
    let client = lock_redis_cluster::connect(config, ClientConfig::default())
        .await
        .unwrap();
    let names = names(&cluster);
    for name in &names {
        handoff(&cluster, &client, name).await;
    }
    let before = provider.calls.load(Ordering::SeqCst);
    assert!(before >= names.len(), "one connection per master at least");

    set_password(&cluster, "token-2");
    *provider.token.lock().unwrap() = "token-2".to_owned();
    for port in cluster.ports() {
        cluster.node(port).cmd(&["CLIENT", "KILL", "USER", USER]);
    }
    for name in &names {
        handoff(&cluster, &client, name).await;
    }
    let after = provider.calls.load(Ordering::SeqCst);
    assert!(
        after >= before + names.len(),
        "asked again: {before} -> {after}"
    );
    client.close().await;
}
