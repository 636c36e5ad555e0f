//! `lockctl run --read` / `--write`: runs under the two sides of a
//! read-write lock (Redisson's `RReadWriteLock` layout).

use crate::common;

use std::time::{Duration, Instant};

use common::*;
use lock_testkit::fixtures::RedisServer;

#[test]
fn read_runs_share_the_lock() {
    let server = RedisServer::start();
    let first = Holder::start(&server.url(), &[], &["cfg", "--read"]);
    // The second starts while the first still holds: readers share.
    let second = Holder::start(&server.url(), &[], &["cfg", "--read", "--wait", "2s"]);
    assert_eq!(
        server.cmd(&["HGET", "cfg", "mode"]),
        lock_testkit::fixtures::redis::Value::BulkString(b"read".to_vec())
    );
    assert_eq!(int(&server, &["HLEN", "cfg"]), 3, "mode and two readers");
    for holder in [first, second] {
        holder.release();
        let (status, stderr) = holder.finish();
        assert_eq!(code(status), 0, "{stderr}");
    }
    assert_eq!(int(&server, &["EXISTS", "cfg"]), 0, "released");
}

#[test]
fn a_write_run_waits_for_the_readers_and_excludes_them() {
    let server = RedisServer::start();
    let reader = Holder::start(&server.url(), &[], &["cfg", "--read"]);
    let started = Instant::now();
    let output = run(
        &server.url(),
        &["run", "cfg", "--write", "--wait", "200ms", "--", "true"],
    );
    assert_eq!(code(output.status), 75, "{output:?}");
    assert!(started.elapsed() < Duration::from_millis(1500));
    reader.release();
    let (status, stderr) = reader.finish();
    assert_eq!(code(status), 0, "{stderr}");

    let writer = Holder::start(&server.url(), &[], &["cfg", "--write"]);
    assert_eq!(
        server.cmd(&["HGET", "cfg", "mode"]),
        lock_testkit::fixtures::redis::Value::BulkString(b"write".to_vec())
    );
    let output = run(
        &server.url(),
        &["run", "cfg", "--read", "--wait", "200ms", "--", "true"],
    );
    assert_eq!(code(output.status), 75, "{output:?}");
    writer.release();
    let (status, stderr) = writer.finish();
    assert_eq!(code(status), 0, "{stderr}");
    let output = run(&server.url(), &["run", "cfg", "--read", "--", "true"]);
    assert_eq!(code(output.status), 0, "{output:?}");
}

#[test]
fn read_with_write_or_fenced_is_a_usage_error() {
    let server = RedisServer::start();
    for args in [
        &["run", "cfg", "--read", "--write", "--", "true"][..],
        &["run", "cfg", "--read", "--fenced", "--", "true"],
    ] {
        let output = run(&server.url(), args);
        assert_eq!(code(output.status), 64, "{args:?}: {output:?}");
        one_error_line(&output);
    }
}

/// `force-unlock` of a read-write lock held for writing publishes the
/// write unlock (`1`) on the read-write lock's own channel, where its
/// waiters listen, and nothing on the reentrant lock's; the waiting writer
/// then gets in.
#[test]
fn force_unlock_of_a_read_write_lock_tells_its_waiters() {
    let server = RedisServer::start();
    let url = server.url();
    let _holder = Holder::start(&url, &[], &["cfg", "--write"]);
    let mut cmd = lockctl(&url);
    cmd.args(["run", "cfg", "--write", "--", "true"]);
    let waiter = Proc::spawn(cmd);
    let rw_channel = "redisson_rwlock:{cfg}";
    wait_until("the waiter to subscribe", PATIENCE, || {
        strings(&server, &["PUBSUB", "NUMSUB", rw_channel])[1] == "1"
    });

    let mut connection = server.client().get_connection().unwrap();
    let mut sub = connection.as_pubsub();
    let lock_channel = layout().channel(&lock_name("cfg"));
    sub.subscribe(&[rw_channel, lock_channel.as_str()]).unwrap();
    sub.set_read_timeout(Some(PATIENCE)).unwrap();

    let output = run(&url, &["force-unlock", "cfg"]);
    assert_eq!(code(output.status), 0, "{output:?}");
    let notice = sub.get_message().expect("a notice after the force-unlock");
    let payload: String = notice.get_payload().unwrap();
    assert_eq!(
        (notice.get_channel_name(), payload.as_str()),
        (rw_channel, "1")
    );
    drop(sub);
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "cfg: unlocked the read-write lock (it was held; waiters were woken)\n"
    );

    let (status, stderr) = waiter.wait(PATIENCE);
    assert_eq!(code(status), 0, "{stderr}");
}
