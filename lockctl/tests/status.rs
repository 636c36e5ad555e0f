//! `lockctl status` and `lockctl force-unlock` end to end, checked against
//! what Redis itself shows.

use crate::common;

use std::collections::BTreeSet;
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
        json!({"name": "job", "kind": "none", "locked": false, "holders": [], "ttl_ms": null, "queue": null})
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
    assert_eq!(status["kind"], "lock");
    assert_eq!(status["locked"], true);
    assert_eq!(status["holders"][0]["field"], json!(field));
    assert_eq!(
        status["holders"][0]["count"],
        json!(count.parse::<u64>().unwrap())
    );
    // Ours: its client's record (once written) names lockctl (`who`).
    let client = &status["holders"][0]["client"];
    assert!(
        client.is_null() || client["executable"] == "lockctl",
        "{client}"
    );
    // The watchdog renews every 10 s, far later than these three reads.
    let ttl = status["ttl_ms"].as_i64().expect("a ttl");
    assert!(
        ttl_after - 5 <= ttl && ttl <= ttl_before + 5,
        "PTTL {ttl_before} then {ttl_after}, status said {ttl}"
    );
    assert_eq!(status["queue"], json!(null), "not read without --fair");

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
/// counts), held for writing: the writer by its owner, no readers.
#[test]
fn status_of_a_redisson_read_write_lock() {
    let server = RedisServer::start();
    let url = server.url();
    let owner = "6d9f6e5c-2f4e-4b1e-9d39-2b8f4f1f7a10:1";
    let writer = format!("{owner}:write");
    server.cmd(&["HSET", "rw", "mode", "write", &writer, "2"]);
    let status = status_json(&url, &["rw"]);
    assert_eq!(
        status,
        json!({"name": "rw", "kind": "read_write_lock", "locked": true, "mode": "write",
               "writer": {"field": owner, "count": 2, "client": null}, "readers": [], "ttl_ms": null})
    );
}

/// Read mode: readers with their counts (the writer that also took reads
/// among them), the writer, and the hash's time to live, as Redis shows
/// them; the per-hold timeout keys beside it are not holders.
#[test]
fn status_of_a_read_locked_read_write_lock() {
    let server = RedisServer::start();
    let url = server.url();
    let (a, b) = (
        "c0ffee00-0000-4000-8000-000000000001:7",
        "c0ffee00-0000-4000-8000-000000000002:9",
    );
    server.cmd(&["HSET", "rw", "mode", "read", a, "2", b, "1"]);
    server.cmd(&["PEXPIRE", "rw", "30000"]);
    server.cmd(&[
        "SET",
        &format!("{{rw}}:{a}:rwlock_timeout:1"),
        "1",
        "PX",
        "30000",
    ]);
    let pttl_before = int(&server, &["PTTL", "rw"]);
    let status = status_json(&url, &["rw"]);
    assert_eq!(status["kind"], "read_write_lock");
    assert_eq!(status["mode"], "read");
    assert_eq!(status["writer"], json!(null));
    let mut readers = status["readers"].as_array().unwrap().clone();
    readers.sort_by_key(|r| r["field"].as_str().unwrap().to_owned());
    assert_eq!(
        readers,
        vec![
            json!({"field": a, "count": 2, "client": null}),
            json!({"field": b, "count": 1, "client": null})
        ]
    );
    let ttl = status["ttl_ms"].as_i64().unwrap();
    assert!(
        ttl <= pttl_before && ttl > pttl_before - 5_000,
        "{ttl} vs {pttl_before}"
    );

    let human = String::from_utf8(run(&url, &["status", "rw"]).stdout).unwrap();
    assert!(
        human.contains("kind:      read-write lock\nmode:      read\n"),
        "{human}"
    );
    assert!(
        human.contains(&format!("reader:    {a}  (held 2 times)\n")),
        "{human}"
    );
}

/// A semaphore (`SET name permits`, maybe with a ttl) and a count-down
/// latch (`SET name count`, never a ttl) share one layout: both are shown
/// as the one integer, with what it means for each.
#[test]
fn status_of_a_semaphore_or_latch() {
    let server = RedisServer::start();
    let url = server.url();
    server.cmd(&["SET", "permits", "4", "PX", "60000"]);
    let status = status_json(&url, &["permits"]);
    assert_eq!(status["kind"], "semaphore_or_latch");
    assert_eq!(status["value"], 4);
    let ttl = status["ttl_ms"].as_i64().unwrap();
    assert!((50_000..=60_000).contains(&ttl), "{ttl}");

    // A latch as Redisson's trySetCount and ours write it: the count,
    // without expiry.
    server.cmd(&["SET", "batch", "3"]);
    assert_eq!(
        status_json(&url, &["batch"]),
        json!({"name": "batch", "kind": "semaphore_or_latch", "value": 3, "ttl_ms": null, "permits": []})
    );
    let human = String::from_utf8(run(&url, &["status", "batch"]).stdout).unwrap();
    assert!(
        human.contains("semaphore: 3 permits available\n"),
        "{human}"
    );
    assert!(
        human.contains("latch:     count 3 (a latch lives at key \"batch\""),
        "{human}"
    );
}

/// A permit-expirable semaphore: one integer as a plain semaphore, its
/// free permits, and the live leases of
/// `{name}:timeout` (ids as 32 hex characters; an expired lease is not
/// shown, a permit without lease is).
#[test]
fn status_of_a_permit_expirable_semaphore() {
    let server = RedisServer::start();
    let url = server.url();
    let now = server_ms(&server);
    server.cmd(&["SET", "jobs", "2"]);
    let (live, forever, dead) = ("0123456789abcdef", "fedcba9876543210", "aaaaaaaaaaaaaaaa");
    server.cmd(&["ZADD", "{jobs}:timeout", &(now + 60_000).to_string(), live]);
    server.cmd(&["ZADD", "{jobs}:timeout", "922337203685477", forever]);
    server.cmd(&["ZADD", "{jobs}:timeout", &(now - 60_000).to_string(), dead]);
    let mut status = status_json(&url, &["jobs"]);
    let after = server_ms(&server);
    // The live lease's time left, by the server's clock at the read (between
    // `now` and `after`).
    let left = status["permits"][0]["lease_time_ms"]
        .take()
        .as_i64()
        .unwrap();
    assert!(
        (now + 60_000 - after..=60_000).contains(&left),
        "{left} ms left ({now}..={after})"
    );
    let hex = |s: &str| s.bytes().map(|b| format!("{b:02x}")).collect::<String>();
    assert_eq!(
        status,
        json!({"name": "jobs", "kind": "semaphore_or_latch", "value": 2, "ttl_ms": null,
               "permits": [{"id": hex(live), "lease_time_ms": null, "client": null},
                           {"id": hex(forever), "lease_time_ms": null, "client": null}]})
    );
    let human = String::from_utf8(run(&url, &["status", "jobs"]).stdout).unwrap();
    assert!(human.contains("leased:    2 live permits\n"), "{human}");
    assert!(
        human.contains(&format!("permit:    {}  (no lease)\n", hex(forever))),
        "{human}"
    );
}

/// A value no lock kind stores is named by its type, with exit 65 and one
/// line on stderr; nothing is changed. (Text that is not an integer is
/// a lean lock's token: see `lean.rs`.)
#[test]
fn status_of_something_else() {
    let server = RedisServer::start();
    let url = server.url();
    server.cmd(&["RPUSH", "queue", "x"]);
    server.cmd(&["SADD", "tags", "a"]);
    for (key, store_type) in [("queue", "list"), ("tags", "set")] {
        let output = run(&url, &["status", "--json", key]);
        assert_eq!(code(output.status), 65, "{output:?}");
        assert!(one_error_line(&output).contains("not a lock"), "{output:?}");
        let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(
            json,
            json!({"name": key, "kind": "unknown", "store_type": store_type})
        );
    }
    assert_eq!(strings(&server, &["LRANGE", "queue", "0", "-1"]), vec!["x"]);
    assert_eq!(strings(&server, &["SMEMBERS", "tags"]), vec!["a"]);
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
    let deadline = || -> i64 {
        text(&server.cmd(&["ZSCORE", &timeout_key, &queued[0]]))
            .parse()
            .unwrap()
    };
    let (deadline_before, before) = (deadline(), server_ms(&server));
    let status = status_json(&url, &["job", "--fair"]);
    let (deadline_after, after) = (deadline(), server_ms(&server));

    assert_eq!(status["locked"], true);
    let queue = status["queue"].as_array().expect("a queue");
    assert_eq!(queue.len(), 1, "{status}");
    assert_eq!(queue[0]["field"], queued[0].as_str());
    // The waiter refreshes its deadline every few seconds: the status saw
    // one of the two deadlines around it, less the server's clock at the
    // read.
    let left = queue[0]["timeout_ms"].as_i64().unwrap();
    assert!(
        (deadline_before - after..=deadline_after - before).contains(&left),
        "ZSCORE {deadline_before} / {deadline_after} at {before}..={after}, status said {left} ms left"
    );

    let human = run(&url, &["status", "job", "--fair"]);
    let human = String::from_utf8(human.stdout).unwrap();
    assert!(human.contains("queue:  1 waiting\n"), "{human}");
    assert!(
        human.contains(&format!("     1. {}  deadline in ", queued[0])),
        "{human}"
    );

    // Without --fair the queue is not looked at: null, not "nobody".
    assert_eq!(status_json(&url, &["job"])["queue"], json!(null));

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

/// The server's clock (`TIME`) in epoch milliseconds.
fn server_ms(server: &RedisServer) -> i64 {
    let t = strings(server, &["TIME"]);
    t[0].parse::<i64>().unwrap() * 1000 + t[1].parse::<i64>().unwrap() / 1000
}

/// The keys of a JSON object, sorted.
fn keys(json: &serde_json::Value) -> BTreeSet<&str> {
    json.as_object()
        .unwrap_or_else(|| panic!("not an object: {json}"))
        .keys()
        .map(String::as_str)
        .collect()
}

/// `lockctl status --json` once, as a serde_json value: one object on one
/// line, exit 0.
fn parsed(url: &str, args: &[&str]) -> serde_json::Value {
    let json = status_json(url, args);
    assert!(json.is_object(), "{json}");
    json
}

/// Each kind prints the same keys whatever its state: a lock and a fair
/// lock (and "none", nothing stored, which reads as a free lock), a
/// read-write lock, and a semaphore before and after its holders leave
/// (its leases gone, one integer is left: the same kind, with no permits).
/// The queue is `null` unless `--fair` read it.
#[test]
fn status_json_keeps_one_shape_per_kind() {
    let server = RedisServer::start();
    let url = server.url();
    let lock: BTreeSet<&str> = ["name", "kind", "locked", "holders", "ttl_ms", "queue"].into();
    let rw: BTreeSet<&str> = [
        "name", "kind", "locked", "mode", "writer", "readers", "ttl_ms",
    ]
    .into();
    let counter: BTreeSet<&str> = ["name", "kind", "value", "ttl_ms", "permits"].into();
    let lean: BTreeSet<&str> = ["name", "kind", "locked", "holders", "ttl_ms"].into();

    // A lock, held then free.
    let holder = Holder::start(&url, &[], &["job"]);
    let held = parsed(&url, &["job"]);
    assert_eq!(
        (held["kind"].as_str(), keys(&held)),
        (Some("lock"), lock.clone())
    );
    assert_eq!(held["queue"], json!(null), "{held}");
    let (status, stderr) = holder.finish();
    assert_eq!(code(status), 0, "{stderr}");
    let free = parsed(&url, &["job"]);
    assert_eq!(
        (free["kind"].as_str(), keys(&free)),
        (Some("none"), lock.clone())
    );
    assert_eq!(free["queue"], json!(null), "{free}");

    // A fair lock with --fair: the queue read, a list both times.
    let holder = Holder::start(&url, &[], &["fair", "--fair"]);
    let held = parsed(&url, &["fair", "--fair"]);
    assert_eq!(
        (held["kind"].as_str(), keys(&held)),
        (Some("lock"), lock.clone())
    );
    assert_eq!(held["queue"], json!([]), "{held}");
    let (status, stderr) = holder.finish();
    assert_eq!(code(status), 0, "{stderr}");
    let free = parsed(&url, &["fair", "--fair"]);
    assert_eq!(
        (free["kind"].as_str(), keys(&free)),
        (Some("none"), lock.clone())
    );
    assert_eq!(free["queue"], json!([]), "{free}");

    // A lean lock, ours and another library's, then free.
    let holder = Holder::start(&url, &[], &["lean", "--lean"]);
    let held = parsed(&url, &["lean"]);
    assert_eq!(
        (held["kind"].as_str(), keys(&held)),
        (Some("lean_lock"), lean.clone())
    );
    let (status, stderr) = holder.finish();
    assert_eq!(code(status), 0, "{stderr}");
    let free = parsed(&url, &["lean"]);
    assert_eq!(
        (free["kind"].as_str(), keys(&free)),
        (Some("none"), lock.clone())
    );
    server.cmd(&["SET", "lean", "r4nd0m", "PX", "60000"]);
    let foreign = parsed(&url, &["lean"]);
    assert_eq!(
        (foreign["kind"].as_str(), keys(&foreign)),
        (Some("lean_lock"), lean.clone())
    );

    // A read-write lock, held for reading and for writing.
    for side in ["--read", "--write"] {
        let holder = Holder::start(&url, &[], &["rw", side]);
        let held = parsed(&url, &["rw"]);
        assert_eq!(
            (held["kind"].as_str(), keys(&held)),
            (Some("read_write_lock"), rw.clone()),
            "{side}"
        );
        let (status, stderr) = holder.finish();
        assert_eq!(code(status), 0, "{stderr}");
        let free = parsed(&url, &["rw"]);
        assert_eq!(
            (free["kind"].as_str(), keys(&free)),
            (Some("none"), lock.clone())
        );
    }

    // A semaphore of 2 permits: one held, then none.
    let holder = Holder::start(&url, &[], &["jobs", "--permits", "2"]);
    let held = parsed(&url, &["jobs"]);
    assert_eq!(
        (held["kind"].as_str(), keys(&held)),
        (Some("semaphore_or_latch"), counter.clone())
    );
    assert_eq!(held["value"], 1, "{held}");
    assert_eq!(held["permits"].as_array().map(Vec::len), Some(1), "{held}");
    let (status, stderr) = holder.finish();
    assert_eq!(code(status), 0, "{stderr}");
    assert_eq!(
        int(&server, &["EXISTS", "{jobs}:timeout"]),
        0,
        "leases gone"
    );
    let free = parsed(&url, &["jobs"]);
    assert_eq!(
        (free["kind"].as_str(), keys(&free)),
        (Some("semaphore_or_latch"), counter.clone())
    );
    assert_eq!(free["value"], 2, "{free}");
    assert_eq!(free["permits"], json!([]), "{free}");

    // A latch (or plain semaphore) counted down to nothing is gone: "none".
    server.cmd(&["SET", "batch", "1"]);
    let counting = parsed(&url, &["batch"]);
    assert_eq!(keys(&counting), counter);
    server.cmd(&["DEL", "batch"]);
    assert_eq!(keys(&parsed(&url, &["batch"])), lock);

    // Something else: its own three keys (exit 65).
    server.cmd(&["RPUSH", "list", "x"]);
    let output = run(&url, &["status", "--json", "list"]);
    assert_eq!(code(output.status), 65, "{output:?}");
    let other: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(keys(&other), ["name", "kind", "store_type"].into());
}
