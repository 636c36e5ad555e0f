//! `lockctl run` end to end: exclusion, waiting, the command's environment
//! and exit status, and every way a hold can end while the command runs.

use crate::common;

use std::fs;
use std::time::{Duration, Instant};

use common::*;
use lock_testkit::fixtures::RedisServer;
use nix::sys::signal::Signal;

#[test]
fn contenders_run_their_commands_one_after_the_other() {
    let server = RedisServer::start();
    let dir = tempfile::tempdir().unwrap();
    let spawn = || contender(&server.url(), &[], "job", dir.path());
    let (a, b) = (spawn(), spawn());
    for proc in [a, b] {
        let (status, stderr) = proc.wait(PATIENCE);
        assert_eq!(code(status), 0, "{stderr}");
    }
    let log = fs::read_to_string(dir.path().join("f")).unwrap();
    assert_eq!(log, "start\nend\nstart\nend\n");
    assert_eq!(int(&server, &["EXISTS", "job"]), 0, "released");
}

#[test]
fn a_bounded_wait_on_a_held_lock_exits_75() {
    let server = RedisServer::start();
    let _holder = Holder::start(&server.url(), &[], &["job"]);
    let started = Instant::now();
    let output = run(
        &server.url(),
        &["run", "job", "--wait", "200ms", "--", "true"],
    );
    let took = started.elapsed();
    assert_eq!(code(output.status), 75, "{output:?}");
    assert!(
        took >= Duration::from_millis(150) && took <= Duration::from_millis(1500),
        "gave up after {took:?}"
    );
    let stderr = one_error_line(&output);
    assert!(stderr.contains("not acquired within 200ms"), "{stderr}");
}

#[test]
fn the_commands_exit_status_is_passed_through() {
    let server = RedisServer::start();
    let output = run(&server.url(), &["run", "job", "--", "sh", "-c", "exit 7"]);
    assert_eq!(code(output.status), 7, "{output:?}");
    assert!(output.stderr.is_empty(), "{output:?}");
    // Death by a signal is reported as a shell does: 128 + the signal.
    let output = run(
        &server.url(),
        &["run", "job", "--", "sh", "-c", "kill -9 $$"],
    );
    assert_eq!(code(output.status), 128 + 9, "{output:?}");
    assert_eq!(int(&server, &["EXISTS", "job"]), 0, "released");
}

#[test]
fn the_command_gets_the_lock_name_and_fencing_token() {
    let server = RedisServer::start();
    let url = server.url();
    let env_of = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend(["--", "sh", "-c", "echo \"$LOCK_NAME ${LOCK_TOKEN-unset}\""]);
        // An outer run's token must not leak into a run without --fenced.
        let output = lockctl(&url)
            .env("LOCK_TOKEN", "999")
            .args(&all)
            .output()
            .unwrap();
        assert_eq!(code(output.status), 0, "{output:?}");
        String::from_utf8(output.stdout).unwrap()
    };
    assert_eq!(env_of(&["run", "job"]), "job unset\n");
    let first = env_of(&["run", "job", "--fenced"]);
    let second = env_of(&["run", "job", "--fenced"]);
    let token = |line: &str| -> u64 {
        let (name, token) = line.trim().split_once(' ').unwrap();
        assert_eq!(name, "job");
        token.parse().unwrap()
    };
    assert!(token(&second) > token(&first), "{first} then {second}");
    // The prefix changes the key, not the name the command sees.
    let output = run(
        &url,
        &[
            "--prefix",
            "app:",
            "run",
            "job",
            "--",
            "sh",
            "-c",
            "echo $LOCK_NAME",
        ],
    );
    assert_eq!(String::from_utf8_lossy(&output.stdout), "job\n");
    let holder = Holder::start(&url, &["--prefix", "app:"], &["job"]);
    assert_eq!(int(&server, &["EXISTS", "app:job"]), 1);
    assert_eq!(int(&server, &["EXISTS", "job"]), 0);
    drop(holder);
}

#[test]
fn a_lease_holds_without_renewal_and_stops_the_command_when_it_ends() {
    let server = RedisServer::start();
    // With the watchdog, the 1 s lease would be renewed every 333 ms; with
    // --lease 3s the key's TTL starts above 1 s and only ever goes down.
    let holder = Holder::start(
        &server.url(),
        &["--watchdog-timeout", "1s"],
        &["job", "--lease", "3s"],
    );
    let first = int(&server, &["PTTL", "job"]);
    assert!(first > 1000 && first <= 3000, "PTTL {first}");
    let mut last = first;
    wait_until("the lease to run down by 500 ms", PATIENCE, || {
        let now = int(&server, &["PTTL", "job"]);
        assert!(now <= last, "renewed: PTTL went from {last} to {now}");
        last = now;
        now <= first - 500
    });
    let (status, stderr) = holder.finish();
    assert_eq!(code(status), 0, "{stderr}");

    // A command that outlives its lease is stopped: it would run unlocked.
    let started = Instant::now();
    let output = run(
        &server.url(),
        &["run", "job", "--lease", "300ms", "--", "sleep", "30"],
    );
    assert_eq!(code(output.status), 76, "{output:?}");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(one_error_line(&output).contains("lease of 300ms ran out"));
}

#[test]
fn a_missing_command_exits_127_after_releasing_the_lock() {
    let server = RedisServer::start();
    let output = run(
        &server.url(),
        &["run", "job", "--", "no-such-command-for-lockctl"],
    );
    assert_eq!(code(output.status), 127, "{output:?}");
    assert!(one_error_line(&output).contains("command not found"));
    assert_eq!(int(&server, &["EXISTS", "job"]), 0, "released");

    let dir = tempfile::tempdir().unwrap();
    let not_executable = dir.path().join("script");
    fs::write(&not_executable, "#!/bin/sh\n").unwrap();
    let output = run(
        &server.url(),
        &["run", "job", "--", not_executable.to_str().unwrap()],
    );
    assert_eq!(code(output.status), 126, "{output:?}");
    assert_eq!(int(&server, &["EXISTS", "job"]), 0, "released");
}

#[test]
fn a_killed_holder_frees_the_lock_within_the_watchdog_timeout() {
    let server = RedisServer::start();
    let mut holder = Holder::start(&server.url(), &["--watchdog-timeout", "1s"], &["job"]);
    assert_eq!(int(&server, &["EXISTS", "job"]), 1);
    let proc = holder.proc.as_mut().unwrap();
    proc.signal(Signal::SIGKILL);
    let killed = Instant::now();
    wait_until("the lock to expire", PATIENCE, || {
        int(&server, &["EXISTS", "job"]) == 0
    });
    let took = killed.elapsed();
    assert!(took <= Duration::from_millis(1500), "freed after {took:?}");
    // Someone else gets it straight away.
    let output = run(&server.url(), &["run", "job", "--wait", "0s", "--", "true"]);
    assert_eq!(code(output.status), 0, "{output:?}");
    // The command died with its lockctl (tests/group.rs checks that);
    // should it not have, it must not outlive the test.
    let _ = nix::sys::signal::kill(holder.command_pid(), Signal::SIGKILL);
}

#[test]
fn a_deleted_lock_stops_the_command_and_exits_76() {
    let server = RedisServer::start();
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = lockctl(&server.url());
    cmd.args(["--watchdog-timeout", "1s", "run", "job", "--", "sh", "-c"])
        .arg("echo $$ > pid; exec sleep 30")
        .current_dir(dir.path());
    let proc = Proc::spawn(cmd);
    let command = read_pid(&dir.path().join("pid"));
    wait_until("the lock", PATIENCE, || {
        int(&server, &["EXISTS", "job"]) == 1
    });
    server.cmd(&["DEL", "job"]);
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
        stderr.contains("was lost while the command ran"),
        "{stderr}"
    );
}

#[test]
fn sigterm_is_passed_on_and_the_lock_released() {
    let server = RedisServer::start();
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = lockctl(&server.url());
    cmd.args([
        "run",
        "job",
        "--",
        "sh",
        "-c",
        "echo $$ > pid; exec sleep 30",
    ])
    .current_dir(dir.path());
    let proc = Proc::spawn(cmd);
    let command = read_pid(&dir.path().join("pid"));
    wait_until("the lock", PATIENCE, || {
        int(&server, &["EXISTS", "job"]) == 1
    });
    proc.signal(Signal::SIGTERM);
    let (status, stderr) = proc.wait(PATIENCE);
    assert_eq!(code(status), 128 + 15, "{stderr}");
    assert!(!process_exists(command), "the command still runs");
    assert_eq!(int(&server, &["EXISTS", "job"]), 0, "released");

    // A command that handles the signal decides the exit code.
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = lockctl(&server.url());
    cmd.args(["run", "job", "--", "sh", "-c"])
        .arg("trap 'exit 3' TERM; : > ready; while :; do sleep 0.02; done")
        .current_dir(dir.path());
    let proc = Proc::spawn(cmd);
    let ready = dir.path().join("ready");
    wait_until("the command", PATIENCE, || ready.exists());
    proc.signal(Signal::SIGTERM);
    let (status, stderr) = proc.wait(PATIENCE);
    assert_eq!(code(status), 3, "{stderr}");
    assert_eq!(int(&server, &["EXISTS", "job"]), 0, "released");
}

#[test]
fn an_interrupted_wait_gives_up_and_leaves_the_fair_queue() {
    let server = RedisServer::start();
    let _holder = Holder::start(&server.url(), &[], &["job", "--fair"]);
    let mut cmd = lockctl(&server.url());
    cmd.args(["run", "job", "--fair", "--", "true"]);
    let waiter = Proc::spawn(cmd);
    let queue = layout().queue_key(&lock_name("job"));
    wait_until("the waiter to queue", PATIENCE, || {
        int(&server, &["LLEN", &queue]) == 1
    });
    waiter.signal(Signal::SIGINT);
    let (status, stderr) = waiter.wait(PATIENCE);
    assert_eq!(code(status), 128 + 2, "{stderr}");
    assert_eq!(int(&server, &["LLEN", &queue]), 0, "left the queue");
}

#[test]
fn a_frozen_server_stops_the_command_before_the_lease_ends() {
    let server = RedisServer::start();
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = lockctl(&server.url());
    cmd.args(["--watchdog-timeout", "1500ms", "run", "job", "--"])
        .args([
            "sh",
            "-c",
            // Ignores SIGTERM (its children too): only the SIGKILL at the
            // lease's end stops it. Each beat is the wall clock in ns.
            "trap '' TERM; echo $$ > pid; : > ready; \
             while [ -e ready ]; do date +%s%N > beat.tmp; mv beat.tmp beat; sleep 0.01; done",
        ])
        .current_dir(dir.path());
    let mut lockctl = Proc::spawn(cmd);
    let ready = dir.path().join("ready");
    wait_until("the command to start", PATIENCE, || ready.exists());
    let pid = read_pid(&dir.path().join("pid"));

    // Every renewal sent before the freeze was sent before `frozen`, so the
    // lease ends by `frozen + 1500 ms` at the latest.
    let frozen = std::time::SystemTime::now();
    let frozen_at = Instant::now();
    server.pause();
    let exited = lockctl.exits_within(Duration::from_secs(5));
    let took = frozen_at.elapsed();
    server.resume();
    assert!(exited, "lockctl still runs {took:?} after the freeze");
    wait_until("the command to be gone", PATIENCE, || process_gone(pid));

    let last_beat_ns: u128 = fs::read_to_string(dir.path().join("beat"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let frozen_ns = frozen
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let beat_after_freeze = Duration::from_nanos((last_beat_ns.saturating_sub(frozen_ns)) as u64);
    assert!(
        beat_after_freeze < Duration::from_millis(1500),
        "the command still ran {beat_after_freeze:?} after the freeze, past the lease's end"
    );
    // No waiting for a server that cannot answer once the lock is lost.
    assert!(
        took < Duration::from_millis(2500),
        "lockctl exited {took:?} after the freeze"
    );
    let (status, stderr) = lockctl.wait(PATIENCE);
    assert_eq!(code(status), 76, "{stderr}");
}
