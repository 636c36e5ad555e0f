//! `lockctl run --redlock`: a command under a RedLock over three
//! redis-servers, with the exit codes of a plain `run`.

use crate::common;

use std::time::{Duration, Instant};

use common::*;
use lock_testkit::fixtures::RedisServer;

fn servers() -> (Vec<RedisServer>, String) {
    let servers: Vec<RedisServer> = (0..3).map(|_| RedisServer::start()).collect();
    let urls: Vec<String> = servers.iter().map(RedisServer::url).collect();
    (servers, urls.join(","))
}

fn held_on(servers: &[RedisServer], name: &str) -> usize {
    servers
        .iter()
        .filter(|s| int(s, &["EXISTS", name]) == 1)
        .count()
}

#[test]
fn the_command_runs_under_a_majority_and_its_status_passes_through() {
    let (servers, urls) = servers();
    let dir = tempfile::tempdir().unwrap();
    // `--url` names no server at all: --redlock replaces it.
    let output = lockctl("redis://127.0.0.1:1")
        .args(["run", "job", "--redlock", &urls, "--", "sh", "-c"])
        .arg("echo \"$LOCK_NAME ${LOCK_TOKEN-unset}\" > seen; exit 7")
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(code(output.status), 7, "{output:?}");
    let seen = std::fs::read_to_string(dir.path().join("seen")).unwrap();
    assert_eq!(seen, "job unset\n");
    assert_eq!(held_on(&servers, "job"), 0, "released everywhere");
}

#[test]
fn a_held_majority_makes_a_bounded_wait_exit_75() {
    let (servers, urls) = servers();
    // Someone holds the lock on two of the three servers.
    let _first = Holder::start(&servers[0].url(), &[], &["job"]);
    let _second = Holder::start(&servers[1].url(), &[], &["job"]);
    let started = Instant::now();
    let output = run(
        &servers[2].url(),
        &[
            "run",
            "job",
            "--redlock",
            &urls,
            "--wait",
            "300ms",
            "--",
            "true",
        ],
    );
    assert_eq!(code(output.status), 75, "{output:?}");
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(250) && took < Duration::from_secs(3),
        "{took:?}"
    );
    assert!(one_error_line(&output).contains("not acquired within 300ms"));
    assert_eq!(
        int(&servers[2], &["EXISTS", "job"]),
        0,
        "the free one was released"
    );
}

#[test]
fn losing_the_majority_stops_the_command_and_exits_76() {
    let (mut servers, urls) = servers();
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = lockctl(&servers[0].url());
    cmd.args([
        "--watchdog-timeout",
        "1s",
        "run",
        "job",
        "--redlock",
        &urls,
        "--",
        "sh",
        "-c",
    ])
    .arg("echo $$ > pid; exec sleep 30")
    .current_dir(dir.path());
    let proc = Proc::spawn(cmd);
    let command = read_pid(&dir.path().join("pid"));
    // A RedLock takes a quorum: on a loaded machine the third member may
    // answer after its share of the attempt and is given back.
    wait_until("the lock on a majority", PATIENCE, || {
        held_on(&servers, "job") >= 2
    });
    let holders: Vec<usize> = (0..servers.len())
        .filter(|&i| int(&servers[i], &["EXISTS", "job"]) == 1)
        .collect();
    // One server gone, a holder if all three hold it, else the one that
    // does not: two holders remain, a majority.
    let first = if holders.len() == 3 {
        holders[0]
    } else {
        (0..servers.len()).find(|i| !holders.contains(i)).unwrap()
    };
    servers[first].kill();
    std::thread::sleep(Duration::from_secs(2));
    assert!(process_exists(command), "still held by two of three");
    let second = *holders.iter().find(|&&i| i != first).unwrap();
    servers[second].kill();
    let killed = Instant::now();
    let (status, stderr) = proc.wait(PATIENCE);
    assert_eq!(code(status), 76, "{stderr}");
    assert!(
        killed.elapsed() < Duration::from_secs(3),
        "{:?}",
        killed.elapsed()
    );
    assert!(!process_exists(command), "the command still runs");
    assert!(
        stderr.contains("was lost while the command ran"),
        "{stderr}"
    );
}

/// Each member connects on first use: two of five servers down from the
/// start are two members that fail, and the three others are a majority.
#[test]
fn a_minority_of_servers_down_at_the_start_still_locks() {
    let mut servers: Vec<RedisServer> = (0..5).map(|_| RedisServer::start()).collect();
    let urls: Vec<String> = servers.iter().map(RedisServer::url).collect();
    servers[1].kill();
    servers[3].kill();
    let dir = tempfile::tempdir().unwrap();
    let output = lockctl("redis://127.0.0.1:1")
        .args(["run", "job", "--redlock", &urls.join(","), "--wait", "5s"])
        .args(["--", "sh", "-c", "echo ran > ran"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(code(output.status), 0, "{output:?}");
    assert!(dir.path().join("ran").exists(), "the command ran");
    let live = [&servers[0], &servers[2], &servers[4]];
    assert!(
        live.iter().all(|s| int(s, &["EXISTS", "job"]) == 0),
        "released everywhere"
    );
}

/// A majority down: no majority can be taken, and lockctl says so at once
/// (69) rather than waiting for servers that may never come back.
#[test]
fn a_majority_of_servers_down_exits_69_holding_nothing() {
    let (mut servers, urls) = servers();
    servers[0].kill();
    servers[1].kill();
    let output = run(
        &servers[2].url(),
        &["run", "job", "--redlock", &urls, "--", "true"],
    );
    assert_eq!(code(output.status), 69, "{output:?}");
    let line = one_error_line(&output);
    assert!(
        line.contains("too many --redlock servers failed for a majority"),
        "{line}"
    );
    assert_eq!(int(&servers[2], &["EXISTS", "job"]), 0);
}

/// Fewer than three servers tolerate no fault: refused (64) before any
/// I/O, unless `--allow-few-masters` accepts it.
#[test]
fn fewer_than_three_servers_need_allow_few_masters() {
    let (servers, _) = servers();
    let two = format!("{},{}", servers[0].url(), servers[1].url());
    for urls in [servers[0].url(), two.clone()] {
        let output = run(
            &servers[2].url(),
            &["run", "job", "--redlock", &urls, "--", "true"],
        );
        assert_eq!(code(output.status), 64, "{urls}: {output:?}");
        let line = one_error_line(&output);
        assert!(
            line.contains("a RedLock needs at least 3 independent masters")
                && line.contains("--allow-few-masters"),
            "{line}"
        );
    }
    assert_eq!(held_on(&servers, "job"), 0);
    let output = run(
        &servers[2].url(),
        &[
            "run",
            "job",
            "--redlock",
            &two,
            "--allow-few-masters",
            "--",
            "true",
        ],
    );
    assert_eq!(code(output.status), 0, "{output:?}");
    // The flag means nothing without --redlock.
    let output = run(
        &servers[2].url(),
        &["run", "job", "--allow-few-masters", "--", "true"],
    );
    assert_eq!(code(output.status), 64, "{output:?}");
}
