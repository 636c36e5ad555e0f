//! `lockctl run --permits N`: at most N concurrent runs of a command, on an
//! expirable-permit semaphore created with N permits if absent.

use crate::common;

use std::fs;

use common::*;
use lock_testkit::fixtures::redis::Value;
use lock_testkit::fixtures::RedisServer;

/// Each run appends `start`, and 0.5 s later `end`, to the file `f`.
const SCRIPT: &str = "echo start >> f; sleep 0.5; echo end >> f";

/// The most runs inside at once, from the log.
fn most_inside(log: &str) -> i32 {
    let (mut inside, mut most) = (0, 0);
    for line in log.lines() {
        inside += if line == "start" { 1 } else { -1 };
        most = most.max(inside);
    }
    most
}

#[test]
fn n_plus_one_runs_with_n_permits_run_n_at_a_time() {
    let server = RedisServer::start();
    let dir = tempfile::tempdir().unwrap();
    let procs: Vec<_> = (0..4)
        .map(|_| {
            let mut cmd = lockctl(&server.url());
            cmd.args(["run", "--permits", "3", "jobs", "--", "sh", "-c", SCRIPT])
                .current_dir(dir.path());
            Proc::spawn(cmd)
        })
        .collect();
    for proc in procs {
        let (status, stderr) = proc.wait(PATIENCE);
        assert_eq!(code(status), 0, "{stderr}");
    }
    let log = fs::read_to_string(dir.path().join("f")).unwrap();
    assert_eq!(log.lines().count(), 8, "{log}");
    assert_eq!(most_inside(&log), 3, "{log}");
    // Every permit came back; the semaphore stays for the next runs.
    assert_eq!(
        server.cmd(&["GET", "jobs"]),
        Value::BulkString(b"3".to_vec())
    );
    assert_eq!(int(&server, &["ZCARD", "{jobs}:timeout"]), 0);
}

#[test]
fn no_free_permit_within_wait_exits_75() {
    let server = RedisServer::start();
    server.cmd(&["SET", "jobs", "0"]);
    let output = run(
        &server.url(),
        &[
            "run",
            "--permits",
            "2",
            "--wait",
            "200ms",
            "jobs",
            "--",
            "true",
        ],
    );
    assert_eq!(code(output.status), 75, "{output:?}");
    let stderr = one_error_line(&output);
    assert!(stderr.contains("no permit"), "{stderr}");
    assert_eq!(
        server.cmd(&["GET", "jobs"]),
        Value::BulkString(b"0".to_vec()),
        "kept"
    );
}

#[test]
fn a_permit_whose_lease_runs_out_stops_the_command() {
    let server = RedisServer::start();
    let output = run(
        &server.url(),
        &[
            "run",
            "--permits",
            "1",
            "--lease",
            "1s",
            "jobs",
            "--",
            "sleep",
            "5",
        ],
    );
    assert_eq!(code(output.status), 76, "{output:?}");
    let stderr = one_error_line(&output);
    assert!(stderr.contains("lease ran out"), "{stderr}");
}

#[test]
fn bad_permit_counts_are_usage_errors() {
    let server = RedisServer::start();
    for n in ["0", "-1", "2147483648", "many"] {
        let output = run(
            &server.url(),
            &["run", "--permits", n, "jobs", "--", "true"],
        );
        assert_eq!(code(output.status), 64, "{n}: {output:?}");
    }
    let output = run(
        &server.url(),
        &["run", "--permits", "2", "--fair", "jobs", "--", "true"],
    );
    assert_eq!(code(output.status), 64, "{output:?}");
    assert_eq!(int(&server, &["EXISTS", "jobs"]), 0);
    // A key that is not a semaphore: exit 65, left alone.
    server.cmd(&["HSET", "jobs", "f", "1"]);
    let output = run(
        &server.url(),
        &["run", "--permits", "2", "jobs", "--", "true"],
    );
    assert_eq!(code(output.status), 65, "{output:?}");
}
