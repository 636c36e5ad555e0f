//! `lockctl --cluster` against a real 6-node Redis Cluster: the same
//! commands, routed by slot.

use crate::common;

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

/// The issue-13 report: a master is killed and, before its replica is
/// promoted, a new `lockctl --cluster <every master> run NAME --wait`
/// starts. A name on a healthy master locks at once; a name on the dead
/// master's slots locks once the replica took over, within `--wait`.
#[test]
fn a_run_during_a_failover_waits_it_out() {
    // A node timeout of 2 s leaves the healthy run time to finish before
    // the failover, even on a loaded machine.
    let mut cluster = RedisCluster::builder()
        .arg("--cluster-node-timeout")
        .arg("2000")
        .start();
    let masters: Vec<String> = cluster
        .master_ports()
        .iter()
        .map(|port| format!("redis://127.0.0.1:{port}/"))
        .collect();
    let seeds = masters.join(",");
    let global = ["--cluster", seeds.as_str()];
    let doomed_port = cluster.master_ports()[0];
    let name_on = |on_doomed: bool| {
        (0..)
            .map(|i| format!("failover-job-{i}"))
            .find(|n| (cluster.master_of_slot(cluster.keyslot(n)) == doomed_port) == on_doomed)
            .expect("some name hashes there")
    };
    let (doomed, healthy) = (name_on(true), name_on(false));
    let doomed_slot = cluster.keyslot(&doomed);
    cluster.kill_master_of_slot(doomed_slot);

    let started = std::time::Instant::now();
    // No wait at all: connecting and the one try must work as they are.
    let mut args = global.to_vec();
    args.extend(["run", &healthy, "--wait", "0s", "--", "true"]);
    let output = run("redis://127.0.0.1:1", &args);
    assert_eq!(code(output.status), 0, "{output:?}");
    let healthy_took = started.elapsed();
    assert_eq!(
        cluster.master_of_slot(doomed_slot),
        doomed_port,
        "the replica was promoted before the healthy name was tried"
    );

    let mut args = global.to_vec();
    args.extend(["run", &doomed, "--wait", "30s", "--", "true"]);
    let output = run("redis://127.0.0.1:1", &args);
    assert_eq!(code(output.status), 0, "{output:?}");
    assert_ne!(cluster.master_of_slot(doomed_slot), doomed_port);
    eprintln!(
        "healthy name: {healthy_took:?}; dead master's name: {:?} after the kill",
        started.elapsed()
    );
}
