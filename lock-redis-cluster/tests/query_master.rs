//! `ClusterTransport::query_master`: a command sent as it is to one master,
//! e.g. a `SCAN` per master that together sees every key; a master that is
//! down, an address that is none, or a closed transport, is an error,
//! not a hang.

use crate::common;

use std::collections::BTreeSet;

use lock_redis_cluster::lock_core::backend::Connection;
use lock_redis_cluster::redis::{self, Value};
use lock_redis_cluster::slot::key_slot;
use lock_redis_cluster::{ClusterTransport, LockError, PubSubMode};
use lock_testkit::fixtures::RedisCluster;

/// Every key `SCAN` finds on the master at `addr`, cursor after cursor.
async fn scan(transport: &ClusterTransport, addr: &str) -> BTreeSet<String> {
    let mut keys = BTreeSet::new();
    let mut cursor = "0".to_owned();
    loop {
        let mut cmd = redis::cmd("SCAN");
        cmd.arg(&cursor)
            .arg("MATCH")
            .arg("qm:*")
            .arg("COUNT")
            .arg(100);
        let reply = transport.query_master(addr, &cmd).await.unwrap();
        let Value::Array(parts) = reply else {
            panic!("SCAN reply {reply:?}")
        };
        let [Value::BulkString(next), Value::Array(found)] = parts.as_slice() else {
            panic!("SCAN reply {parts:?}")
        };
        for key in found {
            let Value::BulkString(key) = key else {
                panic!("key {key:?}")
            };
            keys.insert(String::from_utf8(key.clone()).unwrap());
        }
        cursor = String::from_utf8(next.clone()).unwrap();
        if cursor == "0" {
            return keys;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scan_on_each_master_sees_every_key_once() {
    let mut cluster = RedisCluster::start();
    let names: Vec<String> = (0..40).map(|i| format!("qm:{i}")).collect();
    let transport =
        ClusterTransport::connect(common::cluster::config(&cluster, PubSubMode::Classic))
            .await
            .unwrap();
    for name in &names {
        let port = cluster.master_of_slot(key_slot(name));
        cluster.node(port).cmd(&["SET", name, "1"]);
    }
    let masters = transport.slot_map().masters().to_vec();
    assert_eq!(masters.len(), 3);
    let mut seen = BTreeSet::new();
    for master in &masters {
        let keys = scan(&transport, master).await;
        assert!(!keys.is_empty(), "40 keys spread over 3 masters: {master}");
        for key in keys {
            assert!(seen.insert(key.clone()), "{key} on two masters");
        }
    }
    assert_eq!(seen, names.iter().cloned().collect());

    // A master that is down: a retryable error within the command timeout.
    let dead = cluster.master_ports()[0];
    cluster.node_mut(dead).kill();
    let err = transport
        .query_master(&format!("127.0.0.1:{dead}"), &redis::cmd("PING"))
        .await
        .unwrap_err();
    assert!(err.is_retryable(), "{err}");

    // Not an address: refused, not tried.
    let err = transport
        .query_master("no port", &redis::cmd("PING"))
        .await
        .unwrap_err();
    assert!(!err.is_retryable(), "{err}");

    transport.close().await;
    let err = transport
        .query_master(&masters[1], &redis::cmd("PING"))
        .await
        .unwrap_err();
    assert!(matches!(err, LockError::Closed), "{err}");
}
