//! `lockctl force-unlock --permits N` and `--permit ID`: a semaphore's
//! holds broken, its waiters woken; and the refusals where neither option
//! applies.

use crate::common;

use std::thread;
use std::time::Duration;

use common::*;
use lock_redis::{ClientConfig, RedisConfig};
use lock_testkit::fixtures::RedisServer;

/// The semaphore channel both kinds' waiters listen on.
fn channel(name: &str) -> String {
    layout().semaphore_channel(&lock_name(name))
}

fn wait_for_subscriber(server: &RedisServer, name: &str) {
    let channel = channel(name);
    wait_until("the waiter to subscribe", PATIENCE, || {
        strings(server, &["PUBSUB", "NUMSUB", &channel])[1] == "1"
    });
}

/// The ids of the permits `status --json` lists.
fn permit_ids(url: &str, name: &str) -> Vec<String> {
    let status = status_json(url, &[name]);
    status["permits"]
        .as_array()
        .unwrap_or_else(|| panic!("no permits in {status}"))
        .iter()
        .map(|p| p["id"].as_str().expect("an id").to_owned())
        .collect()
}

fn stdout(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Every permit of an expirable-permit semaphore held, a waiter blocked:
/// `--permits 1` drops the held permit and wakes the waiter, which gets in
/// long before its `--wait` (without the wake-up it would wait out the
/// holder, renewed past that wait, and exit 75). The holder finds its
/// permit gone (76).
#[test]
fn permits_n_drops_leased_permits_and_wakes_a_waiter() {
    let server = RedisServer::start();
    let url = server.url();
    let holder = Holder::start(&url, &[], &["jobs", "--permits", "1"]);
    let mut cmd = lockctl(&url);
    cmd.args([
        "run",
        "jobs",
        "--permits",
        "1",
        "--wait",
        "10s",
        "--",
        "true",
    ]);
    let waiter = Proc::spawn(cmd);
    wait_for_subscriber(&server, "jobs");

    let output = run(&url, &["force-unlock", "jobs", "--permits", "1"]);
    assert_eq!(code(output.status), 0, "{output:?}");
    assert_eq!(
        stdout(&output),
        "jobs: reset the expirable-permit semaphore to 1 permit, 1 leased permit dropped \
         (waiters, if any, were woken)\n"
    );
    let (status, stderr) = waiter.wait(PATIENCE);
    assert_eq!(code(status), 0, "{stderr}");
    let (status, stderr) = holder.finish();
    assert_eq!(code(status), 76, "the holder lost its permit: {stderr}");
    assert_eq!(text(&server.cmd(&["GET", "jobs"])), "1", "1 in all, free");
}

/// A plain semaphore (Redisson's RSemaphore: one integer), exhausted, with
/// a waiter of the library's own: `--permits 2` sets the count and wakes
/// it; it takes one of the two.
#[test]
fn permits_n_resets_a_plain_semaphore_and_wakes_a_waiter() {
    let server = RedisServer::start();
    let url = server.url();
    server.cmd(&["SET", "plain", "-1"]);
    let waiter_url = url.clone();
    let waiter = thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let redis = RedisConfig::new(waiter_url);
            // Only a notice can wake it within its wait: its own next look
            // would come after the wait ran out.
            let config = ClientConfig::default().no_ttl_recheck(Duration::from_secs(60));
            let client = lock_redis::connect(redis, config).await?;
            let sem = client.semaphore("plain")?;
            let permit = sem.try_acquire_for(Duration::from_secs(20)).await?;
            let got = permit.map(lock_redis::PermitGuard::forget);
            client.close().await;
            Ok::<_, lock_redis::LockError>(got)
        })
    });
    wait_for_subscriber(&server, "plain");
    let output = run(&url, &["force-unlock", "plain", "--permits", "2"]);
    assert_eq!(code(output.status), 0, "{output:?}");
    assert_eq!(
        stdout(&output),
        "plain: reset the semaphore from -1 to 2 free permits (waiters, if any, were woken)\n"
    );
    let got = waiter.join().expect("the waiter ran").expect("no error");
    assert_eq!(got, Some(1), "the waiter took a permit");
    assert_eq!(text(&server.cmd(&["GET", "plain"])), "1");

    // Back to 0: nothing free, and nobody is told anything can be taken.
    let output = run(&url, &["force-unlock", "plain", "--permits", "0"]);
    assert_eq!(code(output.status), 0, "{output:?}");
    assert!(stdout(&output).contains("from 1 to 0 free permits (no permit is free"));
    assert_eq!(text(&server.cmd(&["GET", "plain"])), "0");
}

/// `--permit ID` gives back that one permit; its holder loses it. A wrong
/// id, then the same id again (no longer taken), exits 65 and changes
/// nothing; a malformed one is a usage error.
#[test]
fn permit_id_releases_one_leased_permit() {
    let server = RedisServer::start();
    let url = server.url();
    let holder = Holder::start(&url, &[], &["jobs", "--permits", "2"]);
    let ids = permit_ids(&url, "jobs");
    let [id] = ids.as_slice() else {
        panic!("one permit taken: {ids:?}")
    };
    let wrong = "0".repeat(32);
    let output = run(&url, &["force-unlock", "jobs", "--permit", &wrong]);
    assert_eq!(code(output.status), 65, "{output:?}");
    let line = one_error_line(&output);
    assert!(
        line.contains(&format!(
            "permit {wrong} of semaphore \"jobs\" is not taken"
        )),
        "{line}"
    );
    assert_eq!(int(&server, &["ZCARD", "{jobs}:timeout"]), 1, "untouched");

    let output = run(&url, &["force-unlock", "jobs", "--permit", id]);
    assert_eq!(code(output.status), 0, "{output:?}");
    assert_eq!(
        stdout(&output),
        format!("jobs: released permit {id} (waiters, if any, were woken)\n")
    );
    assert_eq!(int(&server, &["ZCARD", "{jobs}:timeout"]), 0);
    assert_eq!(text(&server.cmd(&["GET", "jobs"])), "2");
    let (status, stderr) = holder.finish();
    assert_eq!(code(status), 76, "the holder lost its permit: {stderr}");

    // Given back already: nothing stored under the name's leases now.
    let output = run(&url, &["force-unlock", "jobs", "--permit", id]);
    assert_eq!(code(output.status), 65, "{output:?}");
    assert!(one_error_line(&output).contains("no leased permits"));

    let output = run(&url, &["force-unlock", "jobs", "--permit", "xyz"]);
    assert_eq!(code(output.status), 64, "{output:?}");
    assert!(one_error_line(&output).contains("is not a permit id"));
}

/// `--permit` on what is not an expirable-permit semaphore, `--permits` on
/// a lock, and either on nothing or on another value: each says why.
#[test]
fn semaphore_options_where_they_do_not_apply() {
    let server = RedisServer::start();
    let url = server.url();
    let id = "ab".repeat(16);
    server.cmd(&["SET", "plain", "3"]);
    server.cmd(&["HSET", "lock", "c:1", "1"]);
    server.cmd(&["RPUSH", "list", "x"]);
    server.cmd(&["SET", "lean", "r4nd0m", "PX", "60000"]);
    for (args, code_wanted, says) in [
        (
            &["plain", "--permit", &id][..],
            65,
            "holds a semaphore (or count-down latch) with no leased permits",
        ),
        (
            &["lock", "--permits", "2"],
            65,
            "holds a lock, not a semaphore",
        ),
        (
            &["lock", "--permit", &id],
            65,
            "holds a lock, not a semaphore",
        ),
        (
            &["lean", "--permits", "2"],
            65,
            "holds a lock, not a semaphore",
        ),
        (
            &["lean", "--permit", &id],
            65,
            "holds a lock, not a semaphore",
        ),
        (
            &["list", "--permits", "2"],
            65,
            "holds a list, not a semaphore",
        ),
        (
            &["none", "--permit", &id],
            65,
            "nothing is stored under \"none\"",
        ),
        (
            &["plain", "--permits", "2", "--fair"],
            64,
            "cannot be used with",
        ),
        (
            &["plain", "--permits", "2", "--permit", &id],
            64,
            "cannot be used with",
        ),
        (&["plain", "--permits", "2147483648"], 64, "2147483648"),
    ] {
        let output = run(&url, &[&["force-unlock"], args].concat());
        assert_eq!(code(output.status), code_wanted, "{args:?}: {output:?}");
        let line = one_error_line(&output);
        assert!(line.contains(says), "{args:?}: {line}");
    }
    // Nothing stored: left alone, and not an error.
    let output = run(&url, &["force-unlock", "none", "--permits", "2"]);
    assert_eq!(code(output.status), 0, "{output:?}");
    assert_eq!(
        stdout(&output),
        "none: no semaphore there; nothing to do (--permits creates none)\n"
    );
    assert_eq!(int(&server, &["EXISTS", "none"]), 0);
    assert_eq!(text(&server.cmd(&["GET", "plain"])), "3", "untouched");
    assert_eq!(int(&server, &["HLEN", "lock"]), 1, "untouched");
    assert_eq!(text(&server.cmd(&["GET", "lean"])), "r4nd0m", "untouched");
}

/// Without an option, a semaphore or a latch is refused (65), and the
/// message names the option that applies.
#[test]
fn force_unlock_of_a_semaphore_names_the_option_to_use() {
    let server = RedisServer::start();
    let url = server.url();
    server.cmd(&["SET", "plain", "3"]);
    let output = run(&url, &["force-unlock", "plain"]);
    assert_eq!(code(output.status), 65, "{output:?}");
    let line = one_error_line(&output);
    assert!(
        line.contains("holds a semaphore or count-down latch, not a lock: use --permits N"),
        "{line}"
    );

    let _holder = Holder::start(&url, &[], &["jobs", "--permits", "2"]);
    let output = run(&url, &["force-unlock", "jobs"]);
    assert_eq!(code(output.status), 65, "{output:?}");
    let line = one_error_line(&output);
    assert!(
        line.contains("holds an expirable-permit semaphore, not a lock")
            && line.contains("--permits N")
            && line.contains("--permit ID"),
        "{line}"
    );
    assert_eq!(text(&server.cmd(&["GET", "plain"])), "3", "untouched");
    assert_eq!(int(&server, &["ZCARD", "{jobs}:timeout"]), 1, "untouched");
}
