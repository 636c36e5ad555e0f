//! `lockctl --sentinel … --master NAME`: the master is found through the
//! sentinels; bad combinations are usage errors (exit 64).

use crate::common;

use common::*;
use lock_testkit::fixtures::{SentinelGroup, SENTINEL_MASTER_NAME};

#[test]
fn run_and_status_through_sentinel() {
    let group = SentinelGroup::start();
    let sentinels = group.sentinel_urls().join(",");
    let global = [
        "--sentinel",
        sentinels.as_str(),
        "--master",
        SENTINEL_MASTER_NAME,
    ];
    // --url points nowhere: --sentinel overrides it.
    let nowhere = "redis://127.0.0.1:1";

    let holder = Holder::start(nowhere, &global, &["via-sentinel"]);
    assert_eq!(
        int(group.master(), &["HLEN", "via-sentinel"]),
        1,
        "the lock is on the master the sentinels name"
    );
    let mut args = global.to_vec();
    args.extend(["status", "via-sentinel", "--json"]);
    let status = run(nowhere, &args);
    assert_eq!(code(status.status), 0);
    let json: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(json["locked"], true, "{json}");
    let (status, stderr) = holder.finish();
    assert_eq!(code(status), 0, "{stderr}");
    assert_eq!(int(group.master(), &["EXISTS", "via-sentinel"]), 0);
}

#[test]
fn sentinel_options_are_checked() {
    for args in [
        &["--sentinel", "redis://127.0.0.1:1", "status", "x"][..],
        &["--master", "m", "status", "x"][..],
        &[
            "--sentinel",
            "redis://127.0.0.1:1",
            "--master",
            "m",
            "--cluster",
            "redis://127.0.0.1:1",
            "status",
            "x",
        ][..],
        &["--sentinel", "not a url", "--master", "m", "status", "x"][..],
    ] {
        let output = run("redis://127.0.0.1:1", args);
        assert_eq!(code(output.status), 64, "{args:?}: {output:?}");
    }
}

#[test]
fn unreachable_sentinels_are_exit_69() {
    let output = run(
        "redis://127.0.0.1:1",
        &[
            "--sentinel",
            "redis://127.0.0.1:1",
            "--master",
            "m",
            "status",
            "x",
        ],
    );
    assert_eq!(code(output.status), 69);
    let line = one_error_line(&output);
    assert!(line.contains("Sentinel"), "{line}");
}

/// The master's password comes from `$REDIS_PASSWORD`, as for `--url`: a
/// wrong one is exit 77, the right one runs the command.
#[test]
fn the_master_password_comes_from_redis_password() {
    let group = SentinelGroup::start_minimal_with_password("master-secret");
    let sentinels = group.sentinel_urls().join(",");
    let args = [
        "--sentinel",
        sentinels.as_str(),
        "--master",
        SENTINEL_MASTER_NAME,
        "run",
        "authed",
        "--",
        "true",
    ];
    for (password, expected) in [("wrong", 77), ("master-secret", 0)] {
        let output = lockctl("redis://127.0.0.1:1")
            .env("REDIS_PASSWORD", password)
            .args(args)
            .output()
            .unwrap();
        assert_eq!(code(output.status), expected, "{password}: {output:?}");
        assert!(!String::from_utf8_lossy(&output.stderr).contains("master-secret"));
    }
}

/// TLS files do not apply to sentinels yet: refused (exit 64), never
/// ignored in silence.
#[test]
fn tls_files_with_sentinel_are_refused() {
    let certs = lock_testkit::fixtures::TlsCerts::generate();
    let ca = certs.ca_path();
    let output = run(
        "redis://127.0.0.1:1",
        &[
            "--sentinel",
            "redis://127.0.0.1:1",
            "--master",
            "m",
            "--tls-ca",
            ca.to_str().unwrap(),
            "status",
            "x",
        ],
    );
    assert_eq!(code(output.status), 64, "{output:?}");
    assert!(one_error_line(&output).contains("--sentinel"), "{output:?}");
}
