//! `--replica-sync N`: a lock lockctl reports taken is on N replicas; with
//! too few in sync the acquisition is given back and the command never
//! runs (exit 75).

use crate::common;

use common::*;
use lock_testkit::fixtures::RedisServer;

#[test]
fn a_run_waits_for_its_replicas_and_fails_without_them() {
    // Replicas sync at once instead of after Redis's default 5 s delay.
    let primary = RedisServer::builder()
        .arg("--repl-diskless-sync-delay")
        .arg("0")
        .start();
    let args = |timeout| {
        [
            "--replica-sync",
            "1",
            "--replica-sync-timeout",
            timeout,
            "run",
            "replicated",
            "--",
            "sh",
            "-c",
            "echo ran",
        ]
    };
    // No replica: the hold is given back, the command does not run.
    let output = run(&primary.url(), &args("300ms"));
    assert_eq!(code(output.status), 75, "{output:?}");
    assert!(output.stdout.is_empty(), "{output:?}");
    assert!(one_error_line(&output).contains("replica"), "{output:?}");
    assert_eq!(int(&primary, &["EXISTS", "replicated"]), 0);

    // A replica in sync: its acknowledgement may be slow on a loaded
    // machine, so the wait for it is generous.
    let _replica = primary.start_replica();
    let output = run(&primary.url(), &args("5s"));
    assert_eq!(code(output.status), 0, "{output:?}");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "ran\n");
}

#[test]
fn replica_sync_options_are_checked() {
    for args in [
        &["--replica-sync", "0", "status", "x"][..],
        &["--replica-sync", "1", "--no-replica-sync", "status", "x"][..],
        &[
            "--replica-sync",
            "1",
            "--replica-sync-timeout",
            "soon",
            "status",
            "x",
        ][..],
    ] {
        let output = run("redis://127.0.0.1:1", args);
        assert_eq!(code(output.status), 64, "{args:?}: {output:?}");
    }
}
