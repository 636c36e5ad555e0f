//! `lockctl --cluster` against a real 6-node Redis Cluster: the same
//! commands, routed by slot.

mod common;

use std::fs;

use common::*;
use lock_testkit::fixtures::RedisCluster;

#[test]
fn run_status_and_force_unlock_on_a_cluster() {
    let cluster = RedisCluster::start();
    let seeds = cluster.seed_urls()[..2].join(",");
    let global = ["--cluster", seeds.as_str()];
    // --url points nowhere: --cluster overrides it.
    let nowhere = "redis://127.0.0.1:1";

    let dir = tempfile::tempdir().unwrap();
    let spawn = || contender(nowhere, &global, "cluster-job", dir.path());
    let (a, b) = (spawn(), spawn());
    for proc in [a, b] {
        let (status, stderr) = proc.wait(PATIENCE);
        assert_eq!(code(status), 0, "{stderr}");
    }
    let log = fs::read_to_string(dir.path().join("f")).unwrap();
    assert_eq!(log, "start\nend\nstart\nend\n");

    let holder = Holder::start(nowhere, &global, &["held-on-cluster"]);
    let mut args = global.to_vec();
    args.extend(["status", "held-on-cluster", "--json"]);
    let status = run(nowhere, &args);
    assert_eq!(code(status.status), 0);
    let json: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(json["locked"], true, "{json}");

    let mut args = global.to_vec();
    args.extend(["force-unlock", "held-on-cluster"]);
    assert_eq!(code(run(nowhere, &args).status), 0);
    let (status, _) = holder.finish();
    assert_eq!(code(status), 76, "the holder saw its lock go");
}

#[test]
fn an_unreachable_cluster_is_one_line_and_exit_69() {
    let output = run(
        "redis://127.0.0.1:1",
        &["--cluster", "redis://127.0.0.1:1", "status", "x"],
    );
    assert_eq!(code(output.status), 69);
    let line = one_error_line(&output);
    assert!(line.contains("Redis Cluster"), "{line}");
}
