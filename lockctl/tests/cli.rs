//! The command line itself, end to end: durations, where the global options
//! go, `run -c`, `--conflict-exit-code`, `--help` and `completions`.

use crate::common;

use std::time::{Duration, Instant};

use common::*;
use lock_testkit::fixtures::RedisServer;

/// humantime's forms: fractions, sums with and without a space; the wait
/// and the lease are what was written.
#[test]
fn durations_take_fractions_and_sums() {
    let server = RedisServer::start();
    let url = server.url();
    let _holder = Holder::start(&url, &[], &["job"]);
    let started = Instant::now();
    let output = run(&url, &["run", "job", "--wait", "1.5s", "--", "true"]);
    let took = started.elapsed();
    assert_eq!(code(output.status), 75, "{output:?}");
    assert!(
        took >= Duration::from_millis(1400) && took <= Duration::from_millis(3000),
        "gave up after {took:?}"
    );
    assert!(
        one_error_line(&output).contains("not acquired within 1.5s"),
        "{output:?}"
    );

    // A lease of 90 s in both spellings: the key's time to live says so.
    for (name, lease) in [("a", "1m30s"), ("b", "1m 30s")] {
        let holder = Holder::start(&url, &[], &[name, "--wait", "0", "--lease", lease]);
        let pttl = int(&server, &["PTTL", name]);
        assert!((80_000..=90_000).contains(&pttl), "{lease}: PTTL {pttl}");
        let (status, stderr) = holder.finish();
        assert_eq!(code(status), 0, "{stderr}");
    }
}

/// The global options (where the locks are) work before the subcommand, as
/// always, and after it, as in `flock`-style scripts that put the command's
/// own options first.
#[test]
fn global_options_go_before_or_after_the_subcommand() {
    let server = RedisServer::start();
    let url = server.url();
    // Before: the lock `app:job` is held.
    let holder = Holder::start(&url, &["--prefix", "app:"], &["job"]);
    assert_eq!(int(&server, &["EXISTS", "app:job"]), 1);
    // After: the same server and prefix, so the same lock.
    let output = run_bare(&[
        "run", "job", "--url", &url, "--prefix", "app:", "--wait", "0", "--", "true",
    ]);
    assert_eq!(code(output.status), 75, "{output:?}");
    let output = run_bare(&["status", "job", "--json", "--prefix", "app:", "--url", &url]);
    assert_eq!(code(output.status), 0, "{output:?}");
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["locked"], true, "{json}");
    // Mixed: --url before, --prefix after.
    let output = lockctl(&url)
        .args([
            "run", "free", "--prefix", "app:", "--", "sh", "-c", "exit 3",
        ])
        .output()
        .unwrap();
    assert_eq!(code(output.status), 3, "{output:?}");
    let (status, stderr) = holder.finish();
    assert_eq!(code(status), 0, "{stderr}");
    // After `--` they are the command's arguments, not lockctl's.
    let output = run(&url, &["run", "job", "--", "echo", "--url", "nowhere"]);
    assert_eq!(code(output.status), 0, "{output:?}");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "--url nowhere\n");
}
