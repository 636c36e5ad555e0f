//! `lockctl list` end to end: every kind once under its name, its helper
//! keys never; names on every master of a cluster; `--limit`; and its
//! errors.

use crate::common;

use std::collections::BTreeSet;

use common::*;
use lock_testkit::fixtures::{RedisCluster, RedisServer};
use serde_json::Value as Json;

/// `lockctl <global…> list <args…>`, which must exit 0: its stdout, and
/// its stderr.
fn list(url: &str, global: &[&str], args: &[&str]) -> (String, String) {
    let output = run(url, &[global, &["list"], args].concat());
    assert_eq!(code(output.status), 0, "{output:?}");
    (
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

/// `list --json`, parsed: the array.
fn list_json(url: &str, global: &[&str], args: &[&str]) -> Vec<Json> {
    let (stdout, _) = list(url, global, &[&["--json"], args].concat());
    match serde_json::from_str(&stdout).expect("list --json prints JSON") {
        Json::Array(items) => items,
        other => panic!("not an array: {other}"),
    }
}

fn names(items: &[Json]) -> Vec<&str> {
    items
        .iter()
        .map(|item| item["name"].as_str().expect("a name"))
        .collect()
}

/// An object without its `ttl_ms`, which counts down between two reads.
fn timeless(mut object: Json) -> Json {
    let fields = object.as_object_mut().expect("an object");
    fields.remove("ttl_ms");
    // Time left of each leased permit, read at two moments.
    if let Some(Json::Array(permits)) = fields.get_mut("permits") {
        for permit in permits {
            if let Some(permit) = permit.as_object_mut() {
                permit.remove("lease_time_ms");
            }
        }
    }
    object
}

/// Every key `SCAN` sees: what `list` was up against.
fn all_keys(server: &RedisServer) -> BTreeSet<String> {
    let mut keys = BTreeSet::new();
    let mut cursor = "0".to_owned();
    loop {
        let reply = strings_and_cursor(server, &cursor);
        cursor = reply.0;
        keys.extend(reply.1);
        if cursor == "0" {
            return keys;
        }
    }
}

fn strings_and_cursor(server: &RedisServer, cursor: &str) -> (String, Vec<String>) {
    use lock_testkit::fixtures::redis::Value;
    let Value::Array(parts) = server.cmd(&["SCAN", cursor, "COUNT", "1000"]) else {
        panic!("SCAN")
    };
    let [next, Value::Array(keys)] = parts.as_slice() else {
        panic!("SCAN reply {parts:?}")
    };
    (text(next), keys.iter().map(text).collect())
}

/// One of each kind, held the way lockctl and Redisson hold them, so that
/// their helper keys are there too (a fair queue and its deadlines, a
/// fencing counter, request records, leases, read holds): each is listed
/// once, under its name, as `status --json` shows it.
#[test]
fn each_kind_once_and_no_helper_key() {
    let server = RedisServer::start();
    let url = server.url();
    let _job = Holder::start(&url, &[], &["job", "--fenced"]);
    let _fair = Holder::start(&url, &[], &["fair", "--fair"]);
    let mut cmd = lockctl(&url);
    cmd.args(["run", "fair", "--fair", "--wait", "20s", "--", "true"]);
    let _queued = Proc::spawn(cmd);
    wait_until("a fair waiter in the queue", PATIENCE, || {
        int(&server, &["LLEN", "redisson_lock_queue:{fair}"]) == 1
    });
    let _rw = Holder::start(&url, &[], &["rw", "--read"]);
    let _jobs = Holder::start(&url, &[], &["jobs", "--permits", "2"]);
    server.cmd(&["SET", "plain", "3"]); // a semaphore
    server.cmd(&["SET", "latch", "2"]); // a count-down latch
    let _lean = Holder::start(&url, &[], &["lean", "--lean", "--fenced"]);
    // Another library's lean lock (go-redsync, redis-py): text, with a lease.
    server.cmd(&["SET", "text", "r4nd0m", "PX", "60000"]);
    // A lock taken and given back: only its request records are left.
    let output = run(&url, &["run", "gone", "--fenced", "--", "true"]);
    assert_eq!(code(output.status), 0, "{output:?}");
    // Not lock kinds.
    server.cmd(&["RPUSH", "a-list", "x"]);
    server.cmd(&["SADD", "a-set", "x"]);
    server.cmd(&["HSET", "a-hash", "colour", "blue"]);

    let keys = all_keys(&server);
    for helper in [
        "redisson_lock_queue:{fair}",
        "redisson_lock_timeout:{fair}",
        "redisson_lock_token:{job}",
        "redisson_lock_token:{lean}",
        "redisson_lock_token:{gone}",
        "{jobs}:timeout",
    ] {
        assert!(keys.contains(helper), "{helper} in {keys:?}");
    }
    assert!(
        keys.iter()
            .any(|k| k.starts_with("redisson_unlock_latch:{gone}:")),
        "{keys:?}"
    );
    assert!(
        keys.iter()
            .any(|k| k.starts_with("{rw}:") && k.contains(":rwlock_timeout:")),
        "{keys:?}"
    );

    let items = list_json(&url, &[], &[]);
    assert_eq!(
        names(&items),
        ["fair", "job", "jobs", "latch", "lean", "plain", "rw", "text"]
    );
    for item in items {
        let name = item["name"].as_str().unwrap().to_owned();
        assert_eq!(
            timeless(item),
            timeless(status_json(&url, &[&name])),
            "{name}: list shows what status shows"
        );
    }

    let (human, stderr) = list(&url, &[], &[]);
    assert_eq!(stderr, "");
    let rows: Vec<Vec<&str>> = human
        .lines()
        .map(|line| line.split_whitespace().collect())
        .collect();
    let columns: Vec<[&str; 3]> = rows.iter().map(|row| [row[0], row[1], row[2]]).collect();
    assert_eq!(
        columns,
        [
            ["NAME", "KIND", "HOLDERS"],
            ["fair", "lock", "1"],
            ["job", "lock", "1"],
            ["jobs", "semaphore_or_latch", "1"],
            ["latch", "semaphore_or_latch", "-"],
            ["lean", "lean_lock", "1"],
            ["plain", "semaphore_or_latch", "-"],
            ["rw", "read_write_lock", "1"],
            ["text", "lean_lock", "1"],
        ],
        "{human}"
    );
    assert_eq!(rows[3][4], "1", "one of 2 permits free: {human}");
    assert_eq!(rows[6][4], "3", "{human}");
    // A lean lock's ttl, and no value.
    assert_ne!(rows[8][3], "-", "{human}");
    assert_eq!(rows[8][4], "-", "{human}");
}

/// PATTERN is a glob over names, matched without `--prefix`; `--limit`
/// cuts the list and says so.
#[test]
fn pattern_prefix_and_limit() {
    let server = RedisServer::start();
    let url = server.url();
    for key in ["app:job-1", "app:job-2", "app:other", "job-3", "app:*"] {
        server.cmd(&["SET", key, "1"]);
    }
    let prefix = ["--prefix", "app:"];
    assert_eq!(
        names(&list_json(&url, &prefix, &[])),
        ["*", "job-1", "job-2", "other"]
    );
    assert_eq!(
        names(&list_json(&url, &prefix, &["job-*"])),
        ["job-1", "job-2"]
    );
    assert_eq!(names(&list_json(&url, &[], &["job-*"])), ["job-3"]);
    // A prefix with a glob character in it matches only itself.
    server.cmd(&["SET", "a*:x", "1"]);
    server.cmd(&["SET", "ab:y", "1"]);
    assert_eq!(names(&list_json(&url, &["--prefix", "a*:"], &[])), ["x"]);

    let (stdout, stderr) = list(&url, &prefix, &["--limit", "2", "--json"]);
    let items: Vec<Json> = serde_json::from_str(&stdout).unwrap();
    assert_eq!(items.len(), 2, "{stdout}");
    assert_eq!(
        stderr,
        "lockctl: warning: more than 2 names match; listed the first 2 found \
         (narrow PATTERN or raise --limit)\n"
    );
    // Exactly as many as the limit: nothing more matches, nothing said.
    let (_, stderr) = list(&url, &prefix, &["--limit", "4"]);
    assert_eq!(stderr, "");

    // Nothing matches: nothing printed, not even a header; `[]` in JSON.
    let (stdout, _) = list(&url, &[], &["nothing*"]);
    assert_eq!(stdout, "");
    assert!(list_json(&url, &[], &["nothing*"]).is_empty());

    for limit in ["0", "-1", "x", "1000001"] {
        let output = run(&url, &["list", "--limit", limit]);
        assert_eq!(code(output.status), 64, "{limit}: {output:?}");
    }
}

/// On a cluster every master is scanned: names on each of the three are
/// all listed, a held lock among them.
#[test]
fn every_master_of_a_cluster_is_scanned() {
    let cluster = RedisCluster::start();
    let seeds = cluster.seed_urls().join(",");
    let global = ["--cluster", seeds.as_str()];
    let nowhere = "redis://127.0.0.1:1";
    let masters = cluster.master_ports();
    assert_eq!(masters.len(), 3);
    // Two semaphores per master, set on the master that owns each.
    let mut expected = BTreeSet::new();
    for &port in &masters {
        let on_it = (0..)
            .map(|i| format!("sem-{i}"))
            .filter(|n| cluster.master_of_slot(cluster.keyslot(n)) == port)
            .take(2);
        for name in on_it {
            cluster.node(port).cmd(&["SET", &name, "1"]);
            expected.insert(name);
        }
    }
    let _held = Holder::start(nowhere, &global, &["held-on-cluster"]);
    expected.insert("held-on-cluster".to_owned());

    let items = list_json(nowhere, &global, &[]);
    let listed: BTreeSet<String> = names(&items).into_iter().map(str::to_owned).collect();
    assert_eq!(listed, expected);
    assert_eq!(items.len(), expected.len(), "each once");
    let held = items
        .iter()
        .find(|i| i["name"] == "held-on-cluster")
        .unwrap();
    assert_eq!(held["kind"], "lock", "{held}");
    assert_eq!(held["locked"], true, "{held}");
}

#[test]
fn list_errors_are_one_line() {
    // A proxy hides the masters behind one address: refused before any
    // I/O (64, not 69 for the address that answers nothing).
    let output = run("redis://127.0.0.1:1", &["--slot-checking-proxy", "list"]);
    assert_eq!(code(output.status), 64, "{output:?}");
    assert!(one_error_line(&output).contains("use --cluster"));

    let output = run("redis://127.0.0.1:1", &["list"]);
    assert_eq!(code(output.status), 69, "{output:?}");
    assert!(one_error_line(&output).contains("cannot reach Redis at 127.0.0.1:1"));

    // A user the ACL does not allow SCAN: 77, naming the step.
    let server = RedisServer::start();
    server.cmd(&[
        "ACL", "SETUSER", "lister", "on", ">pw", "~*", "&*", "+@all", "-scan",
    ]);
    let url = format!("redis://lister@127.0.0.1:{}/", server.port());
    let output = lockctl(&url)
        .env("REDIS_PASSWORD", "pw")
        .arg("list")
        .output()
        .unwrap();
    assert_eq!(code(output.status), 77, "{output:?}");
    let line = one_error_line(&output);
    assert!(line.contains("SCAN on Redis at"), "{line}");
}
