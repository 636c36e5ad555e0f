//! `lockctl run --permits N`: at most N concurrent runs of a command, on an
//! expirable-permit semaphore created with N permits if absent.

use crate::common;

use std::fs;
use std::time::{Duration, Instant};

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

/// One permit, taken (a live lease without expiry, as Redisson's
/// `acquire()` leaves it): the semaphore has 1 permit, none free.
fn one_permit_taken(server: &RedisServer) {
    server.cmd(&["SET", "jobs", "0"]);
    server.cmd(&[
        "ZADD",
        "{jobs}:timeout",
        "922337203685477",
        "0123456789abcdef",
    ]);
}

#[test]
fn no_free_permit_within_wait_exits_75() {
    let server = RedisServer::start();
    one_permit_taken(&server);
    let output = run(
        &server.url(),
        &[
            "run",
            "--permits",
            "1",
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

/// `--permits N` on a semaphore of another size is a usage error (exit
/// 64, naming both counts, as `consul lock` refuses a conflicting `-n`)
/// rather than a run under the stored count. The size is free plus taken
/// permits, so permits held elsewhere do not make it look smaller; nothing
/// is changed.
#[test]
fn permits_that_disagree_with_the_semaphore_exit_64() {
    let server = RedisServer::start();
    let url = server.url();
    // Three permits, one of them held by a run: the size is still 3.
    let holder = Holder::start(&url, &[], &["jobs", "--permits", "3"]);
    assert_eq!(text(&server.cmd(&["GET", "jobs"])), "2");
    for n in ["2", "5"] {
        let output = run(&url, &["run", "--permits", n, "jobs", "--", "true"]);
        assert_eq!(code(output.status), 64, "{n}: {output:?}");
        let line = one_error_line(&output);
        assert!(
            line.contains(&format!(
                "semaphore \"jobs\" has 3 permits (free and taken), not the {n} of --permits; \
                 run with --permits 3, or add --set-permits to make it {n}"
            )),
            "{line}"
        );
    }
    let output = run(&url, &["run", "--permits", "3", "jobs", "--", "true"]);
    assert_eq!(code(output.status), 0, "{output:?}");
    let (status, stderr) = holder.finish();
    assert_eq!(code(status), 0, "{stderr}");
    assert_eq!(text(&server.cmd(&["GET", "jobs"])), "3", "untouched");

    // Every permit taken: a full semaphore of the right size is waited
    // for (75), one of another size refused (64).
    let server = RedisServer::start();
    one_permit_taken(&server);
    let output = run(
        &server.url(),
        &["run", "--permits", "2", "--wait", "0", "jobs", "--", "true"],
    );
    assert_eq!(code(output.status), 64, "{output:?}");
    assert!(one_error_line(&output).contains("has 1 permit (free and taken), not the 2"));
    assert_eq!(text(&server.cmd(&["GET", "jobs"])), "0", "untouched");
}

/// `--set-permits` changes the size instead of refusing: the permit held
/// elsewhere stays held (the free count moves by the difference), and the
/// run takes one of the new ones.
#[test]
fn set_permits_changes_the_size_and_keeps_permits_taken() {
    let server = RedisServer::start();
    let url = server.url();
    one_permit_taken(&server);
    let output = run(
        &url,
        &[
            "run",
            "--permits",
            "3",
            "--set-permits",
            "--wait",
            "0",
            "jobs",
            "--",
            "sh",
            "-c",
            "redis-cli -u \"$0\" GET jobs",
            &url,
        ],
    );
    assert_eq!(code(output.status), 0, "{output:?}");
    // 3 in all, 1 taken elsewhere, 1 by the run itself.
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "1");
    assert_eq!(
        text(&server.cmd(&["GET", "jobs"])),
        "2",
        "3 minus the one taken"
    );
    assert_eq!(int(&server, &["ZCARD", "{jobs}:timeout"]), 1);

    // Without --permits it means nothing: a usage error.
    let output = run(&url, &["run", "--set-permits", "jobs", "--", "true"]);
    assert_eq!(code(output.status), 64, "{output:?}");
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
    assert!(stderr.contains("its lease of 1.0s ran out"), "{stderr}");
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

/// Without `--lease` the watchdog renews the permit: a command running
/// past several watchdog timeouts keeps it, and exits 0.
#[test]
fn a_permit_is_renewed_while_the_command_runs() {
    let server = RedisServer::start();
    let output = run(
        &server.url(),
        &[
            "--watchdog-timeout",
            "1s",
            "run",
            "--permits",
            "1",
            "jobs",
            "--",
            "sleep",
            "2.5",
        ],
    );
    assert_eq!(code(output.status), 0, "{output:?}");
    assert_eq!(
        server.cmd(&["GET", "jobs"]),
        Value::BulkString(b"1".to_vec()),
        "given back once"
    );
}

/// A permit taken away while the command runs (its semaphore's leases
/// deleted) is found at the next renewal: the command is stopped, exit 76.
#[test]
fn a_permit_taken_away_stops_the_command_and_exits_76() {
    let server = RedisServer::start();
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = lockctl(&server.url());
    cmd.args([
        "--watchdog-timeout",
        "1s",
        "run",
        "--permits",
        "1",
        "jobs",
        "--",
        "sh",
        "-c",
    ])
    .arg("echo $$ > pid; exec sleep 30")
    .current_dir(dir.path());
    let proc = Proc::spawn(cmd);
    let command = read_pid(&dir.path().join("pid"));
    wait_until("the permit", PATIENCE, || {
        int(&server, &["ZCARD", "{jobs}:timeout"]) == 1
    });
    server.cmd(&["DEL", "{jobs}:timeout"]);
    let deleted = Instant::now();
    let (status, stderr) = proc.wait(PATIENCE);
    assert_eq!(code(status), 76, "{stderr}");
    // Found at the next renewal (every 333 ms), then SIGTERM ends `sleep`.
    assert!(
        deleted.elapsed() < Duration::from_secs(3),
        "{:?}",
        deleted.elapsed()
    );
    assert!(!process_exists(command), "the command still runs");
    assert!(
        stderr.contains("permit of \"jobs\" was lost while the command ran"),
        "{stderr}"
    );
}
