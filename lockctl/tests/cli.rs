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
