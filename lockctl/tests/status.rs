//! `lockctl status` and `lockctl force-unlock` end to end, checked against
//! what Redis itself shows.

mod common;

use std::time::{Duration, Instant};

use common::*;
use lock_testkit::fixtures::RedisServer;
use serde_json::json;

#[test]
fn status_shows_what_redis_shows() {
    let server = RedisServer::start();
    let url = server.url();
    assert_eq!(
        status_json(&url, &["job"]),
        json!({"name": "job", "locked": false, "holders": [], "ttl_ms": null, "queue": []})
    );

    let _holder = Holder::start(&url, &[], &["job"]);
    let fields = strings(&server, &["HGETALL", "job"]);
    let ttl_before = int(&server, &["PTTL", "job"]);
    let status = status_json(&url, &["job"]);
    let ttl_after = int(&server, &["PTTL", "job"]);

    let [field, count] = fields.as_slice() else {
        panic!("HGETALL job: {fields:?}")
    };
    assert_eq!(status["name"], "job");
    assert_eq!(status["locked"], true);
    assert_eq!(
        status["holders"],
        json!([{"field": field, "count": count.parse::<u64>().unwrap()}])
    );
    // The watchdog renews every 10 s, far later than these three reads.
    let ttl = status["ttl_ms"].as_i64().expect("a ttl");
    assert!(
        ttl_after - 5 <= ttl && ttl <= ttl_before + 5,
        "PTTL {ttl_before} then {ttl_after}, status said {ttl}"
    );
    assert_eq!(status["queue"], json!([]));

    let human = run(&url, &["status", "job"]);
    assert_eq!(code(human.status), 0, "{human:?}");
    let human = String::from_utf8(human.stdout).unwrap();
    assert!(human.starts_with("name:   job\nlocked: yes\n"), "{human}");
    assert!(
        human.contains(&format!("holder: {field}  (held once)")),
        "{human}"
    );
}

/// A Redisson read-write lock (a hash with a `mode` field beside its
/// counts) is shown held by its counted fields, not a protocol error.
#[test]
fn status_of_a_redisson_read_write_lock() {
    let server = RedisServer::start();
    let url = server.url();
    let writer = "6d9f6e5c-2f4e-4b1e-9d39-2b8f4f1f7a10:1:write";
    server.cmd(&["HSET", "rw", "mode", "write", writer, "2"]);
    let status = status_json(&url, &["rw"]);
    assert_eq!(
        status,
        json!({"name": "rw", "locked": true, "holders": [{"field": writer, "count": 2}], "ttl_ms": null, "queue": []})
    );
}

#[test]
fn fair_status_shows_the_queue() {
    let server = RedisServer::start();
    let url = server.url();
    let holder = Holder::start(&url, &[], &["job", "--fair"]);
    let mut cmd = lockctl(&url);
    cmd.args(["run", "job", "--fair", "--", "true"]);
    let waiter = Proc::spawn(cmd);
    let name = lock_name("job");
    let queue_key = layout().queue_key(&name);
    let timeout_key = layout().timeout_key(&name);
    wait_until("the waiter to queue", PATIENCE, || {
        int(&server, &["LLEN", &queue_key]) == 1
    });
    let queued = strings(&server, &["LRANGE", &queue_key, "0", "-1"]);
    let deadline_before = text(&server.cmd(&["ZSCORE", &timeout_key, &queued[0]]));
    let status = status_json(&url, &["job", "--fair"]);
    let deadline_after = text(&server.cmd(&["ZSCORE", &timeout_key, &queued[0]]));

    assert_eq!(status["locked"], true);
    let queue = status["queue"].as_array().expect("a queue");
    assert_eq!(queue.len(), 1, "{status}");
    assert_eq!(queue[0]["field"], queued[0].as_str());
    // The waiter refreshes its deadline every few seconds; the status saw
    // one of the two values around it.
    let deadline = queue[0]["deadline_ms"].as_i64().unwrap().to_string();
    assert!(
        deadline == deadline_before || deadline == deadline_after,
        "ZSCORE {deadline_before} / {deadline_after}, status said {deadline}"
    );

    let human = run(&url, &["status", "job", "--fair"]);
    let human = String::from_utf8(human.stdout).unwrap();
    assert!(human.contains("queue:  1 waiting\n"), "{human}");
    assert!(
        human.contains(&format!("     1. {}  deadline in ", queued[0])),
        "{human}"
    );

    // Without --fair the queue is not looked at.
    assert_eq!(status_json(&url, &["job"])["queue"], json!([]));

    let (status, stderr) = holder.finish();
    assert_eq!(code(status), 0, "{stderr}");
    let (status, stderr) = waiter.wait(PATIENCE);
    assert_eq!(code(status), 0, "{stderr}");
}

#[test]
fn force_unlock_wakes_a_waiter_at_once() {
    let server = RedisServer::start();
    let url = server.url();
    // Watchdog lease 30 s: without the force-unlock the waiter would wait
    // as long as the holder runs.
    let _holder = Holder::start(&url, &[], &["job"]);
    let mut cmd = lockctl(&url);
    cmd.args(["run", "job", "--", "true"]);
    let waiter = Proc::spawn(cmd);
    let channel = layout().channel(&lock_name("job"));
    wait_until("the waiter to subscribe", PATIENCE, || {
        strings(&server, &["PUBSUB", "NUMSUB", &channel])[1] == "1"
    });

    let output = run(&url, &["force-unlock", "job"]);
    let unlocked = Instant::now();
    assert_eq!(code(output.status), 0, "{output:?}");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "job: unlocked (it was held; waiters were woken)\n"
    );
    let (status, stderr) = waiter.wait(PATIENCE);
    assert_eq!(code(status), 0, "{stderr}");
    let took = unlocked.elapsed();
    assert!(took < Duration::from_secs(2), "woken after {took:?}");

    // A free lock: nothing to do, and still success.
    let output = run(&url, &["force-unlock", "other"]);
    assert_eq!(code(output.status), 0, "{output:?}");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "other: was not locked; nothing to do\n"
    );
}
