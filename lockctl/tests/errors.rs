//! Failures end as one `lockctl: …` line on stderr and a sysexits code,
//! never a panic or a hang.

use crate::common;

use std::time::{Duration, Instant};

use common::*;
use lock_testkit::fixtures::RedisServer;

/// Nothing listens on port 1 of the loopback interface.
const UNREACHABLE: &str = "redis://127.0.0.1:1";

#[test]
fn unreachable_redis_exits_69_quickly() {
    for args in [
        &["status", "job"][..],
        &["force-unlock", "job"],
        &["run", "job", "--", "true"],
    ] {
        let started = Instant::now();
        let output = run(UNREACHABLE, args);
        assert_eq!(code(output.status), 69, "{args:?}: {output:?}");
        assert!(started.elapsed() < Duration::from_secs(3), "{args:?}");
        let line = one_error_line(&output);
        assert!(line.contains("cannot reach Redis at 127.0.0.1:1"), "{line}");
        assert!(output.stdout.is_empty(), "{output:?}");
    }
}

#[test]
fn a_server_that_never_answers_exits_69_within_seconds() {
    // Connections are accepted by the kernel, but nothing ever replies.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("redis://{}", silent.local_addr().unwrap());
    for args in [&["status", "job"][..], &["run", "job", "--", "true"]] {
        let started = Instant::now();
        let output = run(&url, args);
        assert_eq!(code(output.status), 69, "{args:?}: {output:?}");
        assert!(started.elapsed() < Duration::from_secs(4), "{args:?}");
        let line = one_error_line(&output);
        assert!(line.contains("timed out"), "{args:?}: {line}");
    }
}

#[test]
fn bad_arguments_exit_64_before_any_io() {
    for (global, args, says) in [
        (
            UNREACHABLE,
            &["run", "job", "--wait", "5x", "--", "true"][..],
            "unknown unit",
        ),
        (
            UNREACHABLE,
            &["run", "job", "--lease=-1s", "--", "true"],
            "expected a number",
        ),
        (
            UNREACHABLE,
            &["run", "job", "--wait", "5", "--", "true"],
            "no unit",
        ),
        (
            UNREACHABLE,
            &["run", "job", "--wait", "1.5", "--", "true"],
            "no unit",
        ),
        (
            UNREACHABLE,
            &["run", "job", "--wait", "1m 30", "--", "true"],
            "no unit",
        ),
        (UNREACHABLE, &["run", "job"], "<CMD>"),
        (UNREACHABLE, &["run", "job", "--"], "<CMD>"),
        (
            UNREACHABLE,
            &["run", "job", "true"],
            "unexpected argument 'true'",
        ),
        (UNREACHABLE, &["status", ""], "lock name must not be empty"),
        (
            UNREACHABLE,
            &["run", "job", "--lease", "0s", "--", "true"],
            "--lease must be greater than zero",
        ),
        (UNREACHABLE, &["bogus"], "unrecognized subcommand"),
        ("not a url", &["status", "job"], "bad --url"),
        ("http://127.0.0.1:1/", &["status", "job"], "bad --url"),
    ] {
        let output = run(global, args);
        assert_eq!(code(output.status), 64, "{args:?}: {output:?}");
        let line = one_error_line(&output);
        assert!(line.contains(says), "{args:?}: {line}");
    }
    // A watchdog timeout the library rejects is a usage error too.
    let output = run(UNREACHABLE, &["--watchdog-timeout", "1ms", "status", "job"]);
    assert_eq!(code(output.status), 64, "{output:?}");
    assert!(one_error_line(&output).contains("--watchdog-timeout"));
}

#[test]
fn a_key_that_is_not_a_lock_exits_65_and_is_left_alone() {
    let server = RedisServer::start();
    // A list: no lock kind stores one (text would be a lean lock's token).
    server.cmd(&["RPUSH", "job", "not a lock"]);
    // `status` says it in its words, `run` in the library's.
    for (args, says) in [
        (&["status", "job"][..], "not a lock"),
        (
            &["run", "job", "--wait", "0s", "--", "true"],
            "of another type (WRONGTYPE)",
        ),
    ] {
        let output = run(&server.url(), args);
        assert_eq!(code(output.status), 65, "{args:?}: {output:?}");
        let line = one_error_line(&output);
        assert!(line.contains(says), "{args:?}: {line}");
    }
    assert_eq!(
        server.cmd(&["LRANGE", "job", "0", "-1"]),
        lock_testkit::fixtures::redis::Value::Array(vec![
            lock_testkit::fixtures::redis::Value::BulkString(b"not a lock".to_vec())
        ])
    );
}

#[test]
fn help_and_version_exit_0() {
    for args in [&["--help"][..], &["--version"], &["run", "--help"]] {
        let output = run(UNREACHABLE, args);
        assert_eq!(code(output.status), 0, "{args:?}: {output:?}");
        assert!(!output.stdout.is_empty());
    }
    let help = run(UNREACHABLE, &["--help"]);
    let help = String::from_utf8(help.stdout).unwrap();
    assert!(
        help.contains("75      run, hold: lock not acquired within --wait"),
        "{help}"
    );
}

/// A server that disabled a command the locks need: exit 78, naming it.
#[test]
fn a_server_without_a_needed_command_exits_78() {
    let server = RedisServer::builder()
        .arg("--rename-command")
        .arg("EVALSHA")
        .arg("")
        .start();
    let output = run(&server.url(), &["run", "job", "--", "true"]);
    assert_eq!(code(output.status), 78, "{output:?}");
    let line = one_error_line(&output);
    assert!(line.contains("EVALSHA"), "{line}");
}
