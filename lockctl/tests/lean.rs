//! The lean lock through lockctl: `run --lean` takes the redis.io
//! single-instance layout (one string key holding the holder's token), so
//! it excludes, and is excluded by, a raw `SET NX PX` holder such as
//! go-redsync or redis-py; `status` and `list` show it as a `lean_lock`,
//! whoever wrote the token; `force-unlock` deletes it and wakes our
//! waiters.

use crate::common;

use common::*;
use lock_redis::Owner;
use lock_testkit::fixtures::redis::Value;
use lock_testkit::fixtures::RedisServer;
use serde_json::json;

/// What a go-redsync or redis-py holder writes: random text, with a lease.
const FOREIGN_TOKEN: &str = "sometoken";

fn set_foreign(server: &RedisServer, name: &str) {
    assert_eq!(
        server.cmd(&["SET", name, FOREIGN_TOKEN, "NX", "PX", "60000"]),
        Value::Okay
    );
}

/// The token stored under `name`, checked to be one of our owners.
fn our_token(server: &RedisServer, name: &str) -> String {
    assert_eq!(text(&server.cmd(&["TYPE", name])), "string");
    let token = text(&server.cmd(&["GET", name]));
    assert!(Owner::parse_field(&token).is_some(), "{token}");
    token
}

/// While `run --lean` holds: the key is a string with our token, a raw
/// `SET NX` fails, and `status` shows the token as a lock's holder.
#[test]
fn status_of_a_lean_lock_held_by_run_lean() {
    let server = RedisServer::start();
    let url = server.url();
    let holder = Holder::start(&url, &[], &["job", "--lean"]);
    let token = our_token(&server, "job");
    assert_eq!(
        server.cmd(&["SET", "job", "x", "NX"]),
        Value::Nil,
        "a raw SET NX must fail while held"
    );

    let pttl_before = int(&server, &["PTTL", "job"]);
    let mut status = status_json(&url, &["job"]);
    let ttl = status
        .as_object_mut()
        .unwrap()
        .remove("ttl_ms")
        .and_then(|t| t.as_i64())
        .expect("a ttl");
    // The watchdog renews every 10 s, far later than these reads.
    assert!(
        ttl <= pttl_before + 5 && ttl > pttl_before - 5_000,
        "PTTL {pttl_before}, status said {ttl}"
    );
    // Ours: its client's record (once written) names lockctl (`who`).
    let client = status["holders"][0]
        .as_object_mut()
        .unwrap()
        .remove("client")
        .expect("a client key");
    assert!(
        client.is_null() || client["executable"] == "lockctl",
        "{client}"
    );
    assert_eq!(
        status,
        json!({"name": "job", "kind": "lean_lock", "locked": true,
               "holders": [{"field": token, "count": 1}]})
    );
    let human = run(&url, &["status", "job"]);
    assert_eq!(code(human.status), 0, "{human:?}");
    let human = String::from_utf8(human.stdout).unwrap();
    assert!(
        human.starts_with(&format!(
            "name:      job\nkind:      lean lock\nlocked:    yes\nholder:    {token}  (held once)\n"
        )),
        "{human}"
    );
    assert!(human.contains("\nttl:       "), "{human}");

    let (status, stderr) = holder.finish();
    assert_eq!(code(status), 0, "{stderr}");
    assert_eq!(int(&server, &["EXISTS", "job"]), 0, "released");
}

/// Another library's `SET name token NX PX 60000`: a lean lock held by
/// that token (exit 0), left as it was.
#[test]
fn status_of_a_foreign_lean_lock() {
    let server = RedisServer::start();
    let url = server.url();
    set_foreign(&server, "job");
    let mut status = status_json(&url, &["job"]);
    let ttl = status
        .as_object_mut()
        .unwrap()
        .remove("ttl_ms")
        .and_then(|t| t.as_i64())
        .expect("a ttl");
    assert!((50_000..=60_000).contains(&ttl), "{ttl}");
    assert_eq!(
        status,
        json!({"name": "job", "kind": "lean_lock", "locked": true,
               "holders": [{"field": FOREIGN_TOKEN, "count": 1, "client": null}]})
    );
    let human = run(&url, &["status", "job"]);
    assert_eq!(code(human.status), 0, "{human:?}");
    let human = String::from_utf8(human.stdout).unwrap();
    assert!(
        human.contains(&format!(
            "holder:    {FOREIGN_TOKEN}  (another library's token: go-redsync, redis-py, rslock, …)\n"
        )),
        "{human}"
    );
    assert_eq!(text(&server.cmd(&["GET", "job"])), FOREIGN_TOKEN);
}

/// A raw `SET NX PX` holder excludes `run --lean`: 75 after `--wait`
/// (also `--wait 0`), or `-E`'s code; the command never runs and the
/// holder's token stays.
#[test]
fn run_lean_is_excluded_by_a_raw_set_holder() {
    let server = RedisServer::start();
    let url = server.url();
    set_foreign(&server, "job");
    let dir = tempfile::tempdir().unwrap();
    for (wait, extra, want) in [
        ("200ms", None, 75),
        ("0", None, 75),
        ("0s", Some(["-E", "3"]), 3),
    ] {
        let mut args = vec!["run", "job", "--lean", "--wait", wait];
        args.extend(extra.iter().flatten());
        args.extend(["--", "sh", "-c", ": > ran"]);
        let output = lockctl(&url)
            .args(&args)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert_eq!(code(output.status), want, "{args:?}: {output:?}");
        assert!(
            one_error_line(&output).contains("not acquired within"),
            "{output:?}"
        );
        assert!(
            !dir.path().join("ran").exists(),
            "{args:?}: the command ran"
        );
    }
    assert_eq!(text(&server.cmd(&["GET", "job"])), FOREIGN_TOKEN);
}

/// Lean and plain holders exclude each other through the one key: a
/// `run --lean` holder is no hash, so a plain `run` of the name is refused
/// as the wrong kind (65), not let in beside it; nor, the other way
/// round, is `run --lean` beside a plain holder.
#[test]
fn run_lean_excludes_the_plain_lock_of_its_name() {
    let server = RedisServer::start();
    let url = server.url();
    let holder = Holder::start(&url, &[], &["job", "--lean"]);
    let output = run(&url, &["run", "job", "--wait", "0", "--", "true"]);
    assert_eq!(code(output.status), 65, "{output:?}");
    one_error_line(&output);
    drop(holder);

    let holder = Holder::start(&url, &[], &["job"]);
    let output = run(&url, &["run", "job", "--lean", "--wait", "0", "--", "true"]);
    assert_eq!(code(output.status), 65, "{output:?}");
    one_error_line(&output);
    assert_eq!(text(&server.cmd(&["TYPE", "job"])), "hash", "untouched");
    drop(holder);
}

/// `--lean --fenced`: the command gets a fencing token, larger each time.
#[test]
fn run_lean_fenced_passes_a_growing_token() {
    let server = RedisServer::start();
    let url = server.url();
    let token = || -> u64 {
        let output = run(
            &url,
            &[
                "run",
                "job",
                "--lean",
                "--fenced",
                "--",
                "sh",
                "-c",
                "echo $LOCK_TOKEN",
            ],
        );
        assert_eq!(code(output.status), 0, "{output:?}");
        String::from_utf8(output.stdout)
            .unwrap()
            .trim()
            .parse()
            .expect("a number")
    };
    let (first, second) = (token(), token());
    assert!(second > first, "{first} then {second}");
    assert_eq!(int(&server, &["EXISTS", "job"]), 0, "released");
}

/// A `run --lean --wait 20s` waiter blocked on a lean lock, held by
/// another `run --lean` or by a raw `SET NX PX`, gets in once
/// `force-unlock` deletes it: without that it would wait out its 20 s
/// (the holders last longer) and exit 75. Our holder finds its lock gone
/// (76); the foreign token is gone.
#[test]
fn force_unlock_of_a_lean_lock_lets_a_waiter_in() {
    let server = RedisServer::start();
    let url = server.url();
    let channel = layout().channel(&lock_name("job"));
    for ours in [true, false] {
        // Renewed every 333 ms, so the loss is found well within PATIENCE.
        let holder =
            ours.then(|| Holder::start(&url, &["--watchdog-timeout", "1s"], &["job", "--lean"]));
        if !ours {
            set_foreign(&server, "job");
        }
        let mut cmd = lockctl(&url);
        cmd.args(["run", "job", "--lean", "--wait", "20s", "--", "true"]);
        let waiter = Proc::spawn(cmd);
        wait_until("the waiter to subscribe", PATIENCE, || {
            strings(&server, &["PUBSUB", "NUMSUB", &channel])[1] == "1"
        });

        let output = run(&url, &["force-unlock", "job"]);
        assert_eq!(code(output.status), 0, "{output:?}");
        assert_eq!(
            String::from_utf8_lossy(&output.stdout),
            "job: unlocked the lean lock (it was held; waiters were woken)\n"
        );
        let (status, stderr) = waiter.wait(PATIENCE);
        assert_eq!(code(status), 0, "ours: {ours}: {stderr}");
        if let Some(mut holder) = holder {
            let proc = holder.proc.take().expect("running");
            let (status, stderr) = proc.wait(PATIENCE);
            assert_eq!(code(status), 76, "{stderr}");
        }
        assert_eq!(int(&server, &["EXISTS", "job"]), 0);
    }
    // Gone meanwhile: nothing to do.
    let output = run(&url, &["force-unlock", "job"]);
    assert_eq!(code(output.status), 0, "{output:?}");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "job: was not locked; nothing to do\n"
    );
}

/// The delete goes through the lean lock's own handle, which publishes the
/// unlock notice our waiters sleep on (a bare DEL would leave them to
/// their next look): the server counts one PUBLISH.
#[test]
fn force_unlock_of_a_lean_lock_publishes_a_notice() {
    let server = RedisServer::start();
    let url = server.url();
    set_foreign(&server, "job");
    let before = publishes(&server);
    let output = run(&url, &["force-unlock", "job"]);
    assert_eq!(code(output.status), 0, "{output:?}");
    assert_eq!(publishes(&server), before + 1, "one notice published");
}

/// How many PUBLISH calls the server has run (scripts' included).
fn publishes(server: &RedisServer) -> u64 {
    let stats = match server.cmd(&["INFO", "commandstats"]) {
        Value::VerbatimString { text, .. } => text,
        other => text(&other),
    };
    stats
        .lines()
        .find_map(|line| line.strip_prefix("cmdstat_publish:calls="))
        .map_or(0, |rest| {
            rest.split(',').next().unwrap().parse().expect("a count")
        })
}

/// `--lean` picks the lock's kind: with another kind's flag it is a usage
/// error (64) before any I/O.
#[test]
fn lean_excludes_the_other_kinds() {
    for flag in [
        &["--fair"][..],
        &["--read"],
        &["--write"],
        &["--permits", "2"],
    ] {
        let output = run_bare(&[&["run", "job", "--lean"], flag, &["--", "true"]].concat());
        assert_eq!(code(output.status), 64, "{flag:?}: {output:?}");
        assert!(
            one_error_line(&output).contains("cannot be used with"),
            "{output:?}"
        );
    }
}

/// `--lean --redlock`: a RedLock of lean locks, a string key with our
/// token on a majority while held, gone everywhere after; a raw holder on
/// two of the three servers keeps it out.
#[test]
fn run_lean_redlock_holds_lean_locks_on_a_majority() {
    let servers: Vec<RedisServer> = (0..3).map(|_| RedisServer::start()).collect();
    let urls: Vec<String> = servers.iter().map(RedisServer::url).collect();
    let urls = urls.join(",");
    let holder = Holder::start(
        "redis://127.0.0.1:1",
        &[],
        &["job", "--lean", "--redlock", &urls],
    );
    let holding: Vec<String> = servers
        .iter()
        .filter(|s| int(s, &["EXISTS", "job"]) == 1)
        .map(|s| our_token(s, "job"))
        .collect();
    assert!(holding.len() >= 2, "held on {} servers", holding.len());
    let (status, stderr) = holder.finish();
    assert_eq!(code(status), 0, "{stderr}");
    for s in &servers {
        assert_eq!(int(s, &["EXISTS", "job"]), 0, "released everywhere");
    }

    set_foreign(&servers[0], "job");
    set_foreign(&servers[1], "job");
    let output = run(
        "redis://127.0.0.1:1",
        &[
            "run",
            "job",
            "--lean",
            "--redlock",
            &urls,
            "--wait",
            "200ms",
            "--",
            "true",
        ],
    );
    assert_eq!(code(output.status), 75, "{output:?}");
    assert_eq!(int(&servers[2], &["EXISTS", "job"]), 0, "given back");
}
