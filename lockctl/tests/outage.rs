//! `lockctl run --wait` across a Redis restart: a waiter whose holder's
//! lease runs out while Redis is down waits on and gets the lock once it is
//! back; a run started while Redis is down connects once it is back; both
//! within `--wait`.

use crate::common;

use std::thread;
use std::time::{Duration, Instant};

use common::*;
use lock_testkit::fixtures::RedisServer;

/// How long Redis stays down: far longer than the retry policy (~0.4 s).
const DOWN: Duration = Duration::from_secs(2);

fn waiter(url: &str, name: &str, wait: &str) -> Proc {
    let mut cmd = lockctl(url);
    cmd.args(["run", name, "--wait", wait, "--", "true"]);
    Proc::spawn(cmd)
}

#[test]
fn a_waiter_rides_out_a_redis_restart() {
    let mut server = RedisServer::start();
    let url = server.url();
    // Held by someone else for 1.5 s: the waiter looks again when that
    // runs out, which is while Redis is down.
    server.cmd(&["HSET", "job", "someone-else:1", "1"]);
    server.cmd(&["PEXPIRE", "job", "1500"]);
    let waiting = waiter(&url, "job", "20s");
    wait_until("the waiter to subscribe", PATIENCE, || {
        strings(
            &server,
            &["PUBSUB", "NUMSUB", "redisson_lock__channel:{job}"],
        )[1] == "1"
    });
    server.kill();
    thread::sleep(DOWN);
    server.restart();
    let back = Instant::now();
    let (status, stderr) = waiting.wait(PATIENCE);
    assert_eq!(code(status), 0, "{stderr}");
    eprintln!(
        "the waiter got the lock {:?} after Redis was back",
        back.elapsed()
    );
}

#[test]
fn a_run_started_while_redis_is_down_connects_once_it_is_back() {
    let mut server = RedisServer::start();
    let url = server.url();
    server.kill();
    let started = Instant::now();
    let mut waiting = waiter(&url, "job", "20s");
    thread::sleep(DOWN);
    assert!(!waiting.has_exited(), "gave up while Redis was down");
    server.restart();
    let (status, stderr) = waiting.wait(PATIENCE);
    assert_eq!(code(status), 0, "{stderr}");
    assert!(started.elapsed() < DOWN + PATIENCE);
}

#[test]
fn a_redis_that_stays_down_ends_the_wait_with_69() {
    let mut server = RedisServer::start();
    let url = server.url();
    server.kill();
    let started = Instant::now();
    let (status, stderr) = waiter(&url, "job", "1s").wait(PATIENCE);
    let took = started.elapsed();
    assert_eq!(code(status), 69, "{stderr}");
    assert!(stderr.contains("cannot reach Redis"), "{stderr}");
    assert!(
        took >= Duration::from_secs(1) && took < Duration::from_secs(4),
        "{took:?}"
    );
}
