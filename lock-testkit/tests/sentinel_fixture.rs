//! The Sentinel group fixture starts settled and fails over on request and
//! after a kill.

use std::time::Instant;

use lock_testkit::fixtures::{redis::Value, SentinelGroup};

#[test]
fn a_group_fails_over_on_request() {
    let mut group = SentinelGroup::start();
    let first = group.master().port();
    assert_eq!(group.named_master_port(), first);
    assert_eq!(group.sentinel_urls().len(), 3);

    group.master().cmd(&["SET", "k", "v"]);
    group.wait_replica_synced();
    let started = Instant::now();
    group.failover();
    let second = group.master().port();
    assert_ne!(second, first);
    assert_eq!(group.named_master_port(), second);
    assert_eq!(
        group.master().cmd(&["GET", "k"]),
        Value::BulkString(b"v".to_vec()),
        "the promoted replica has the data"
    );
    eprintln!("SENTINEL FAILOVER took {:?}", started.elapsed());
}

#[test]
fn a_killed_master_is_replaced() {
    let mut group = SentinelGroup::start();
    let first = group.master().port();
    let started = Instant::now();
    group.kill_master();
    assert_ne!(group.master().port(), first);
    assert_eq!(group.named_master_port(), group.master().port());
    eprintln!("failover after a kill took {:?}", started.elapsed());
}
