//! Credentials: the password comes from `$REDIS_PASSWORD` or the URL (there
//! is no flag for it); rejected credentials and missing ACL permissions
//! exit 77, a bad URL 64.

use crate::common;

use common::*;
use lock_testkit::fixtures::RedisServer;

#[test]
fn the_password_comes_from_redis_password() {
    let server = RedisServer::builder().password("s3cret").start();
    let url = format!("redis://127.0.0.1:{}/", server.port());
    let ok = lockctl(&url)
        .env("REDIS_PASSWORD", "s3cret")
        .args(["run", "job", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(code(ok.status), 0, "{ok:?}");

    // With a user from the URL too (an ACL user).
    server.cmd(&[
        "ACL",
        "SETUSER",
        "locker",
        "on",
        ">p@ss word",
        "~*",
        "&*",
        "+@all",
    ]);
    let user_url = format!("redis://locker@127.0.0.1:{}/", server.port());
    let ok = lockctl(&user_url)
        .env("REDIS_PASSWORD", "p@ss word")
        .args(["status", "job"])
        .output()
        .unwrap();
    assert_eq!(code(ok.status), 0, "{ok:?}");

    let wrong = lockctl(&url)
        .env("REDIS_PASSWORD", "wrong")
        .args(["run", "job", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(code(wrong.status), 77, "{wrong:?}");
    let line = one_error_line(&wrong);
    assert!(line.contains("credentials"), "{line}");
    assert!(
        !line.contains("wrong"),
        "the password must not be echoed: {line}"
    );

    // No password at all.
    let none = run(&url, &["status", "job"]);
    assert_eq!(code(none.status), 77, "{none:?}");
}

#[test]
fn there_is_no_password_flag() {
    let output = run("redis://127.0.0.1:1", &["--password", "x", "status", "job"]);
    assert_eq!(code(output.status), 64, "{output:?}");
}

#[test]
fn a_missing_acl_permission_exits_77_and_a_bad_url_64() {
    let server = RedisServer::start();
    // May read nothing but its own keys: the lock script is refused.
    server.cmd(&["ACL", "SETUSER", "reader", "on", ">pw", "~other:*", "+@all"]);
    let url = format!("redis://reader:pw@127.0.0.1:{}/", server.port());
    let output = run(&url, &["run", "job", "--", "true"]);
    assert_eq!(code(output.status), 77, "{output:?}");
    assert!(one_error_line(&output).contains("permissions"));

    for bad in ["redis://127.0.0.1:notaport/", "not a url"] {
        let output = run(bad, &["status", "job"]);
        assert_eq!(code(output.status), 64, "{bad}: {output:?}");
    }
}

/// A script refused a channel (here the unlock notice of `force-unlock`):
/// the server words it apart from `NOPERM`, and each server its own way
/// (Redis 7.0 "The user executing the script can't publish …", Valkey and
/// Redis 7.2 "ACL failure in script: …"), and it is still exit 77.
#[test]
fn a_channel_the_script_may_not_publish_to_exits_77() {
    let server = RedisServer::start();
    server.cmd(&[
        "ACL",
        "SETUSER",
        "mute",
        "on",
        ">pw",
        "~*",
        "+@all",
        "resetchannels",
    ]);
    server.cmd(&["HSET", "job", "someone", "1"]);
    let url = format!("redis://mute:pw@127.0.0.1:{}/", server.port());
    let output = run(&url, &["force-unlock", "job"]);
    assert_eq!(code(output.status), 77, "{output:?}");
    assert!(one_error_line(&output).contains("channel"), "{output:?}");
}

/// `$REDIS_PASSWORD` is given to the library as credentials, not written
/// into the URL: a Unix socket URL, which has no place for a password,
/// takes it too.
#[test]
fn a_unix_socket_takes_the_password_from_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("redis.sock");
    let socket = socket.to_str().unwrap();
    let _server = RedisServer::builder()
        .password("s0cket")
        .arg("--unixsocket")
        .arg(socket)
        .start();
    let url = format!("redis+unix://{socket}");
    let ok = lockctl(&url)
        .env("REDIS_PASSWORD", "s0cket")
        .args(["run", "job", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(code(ok.status), 0, "{ok:?}");
}

/// A URL the library refuses is named as given: the password of the
/// environment is in no URL, so not even a redacted `***` of it shows.
#[test]
fn a_bad_url_is_named_without_the_environments_password() {
    let output = lockctl("redis://127.0.0.1:6379/notadb")
        .env("REDIS_PASSWORD", "s3cret")
        .args(["status", "job"])
        .output()
        .unwrap();
    assert_eq!(code(output.status), 64, "{output:?}");
    let line = one_error_line(&output);
    assert!(line.contains("\"redis://127.0.0.1:6379/notadb\""), "{line}");
    assert!(!line.contains("***") && !line.contains("s3cret"), "{line}");
}

/// `$REDIS_USERNAME` names the ACL user when the URL names none; the URL's
/// own password wins over `$REDIS_PASSWORD`.
#[test]
fn the_user_may_come_from_redis_username_and_the_urls_password_wins() {
    let server = RedisServer::builder().password("s3cret").start();
    server.cmd(&[
        "ACL", "SETUSER", "locker", "on", ">l0cker", "~*", "&*", "+@all",
    ]);
    let url = format!("redis://127.0.0.1:{}/", server.port());
    let as_locker = lockctl(&url)
        .env("REDIS_USERNAME", "locker")
        .env("REDIS_PASSWORD", "l0cker")
        .args(["run", "job", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(code(as_locker.status), 0, "{as_locker:?}");
    let clients = format!("{:?}", server.cmd(&["ACL", "LOG"]));
    assert!(!clients.contains("locker"), "no refused attempt: {clients}");

    let own = format!("redis://:s3cret@127.0.0.1:{}/", server.port());
    let ok = lockctl(&own)
        .env("REDIS_PASSWORD", "wrong")
        .args(["status", "job"])
        .output()
        .unwrap();
    assert_eq!(code(ok.status), 0, "{ok:?}");
}

/// Every `--redlock` server gets the password of the environment.
#[test]
fn redlock_servers_take_the_password_from_the_environment() {
    let servers: Vec<_> = (0..3)
        .map(|_| RedisServer::builder().password("r3d").start())
        .collect();
    let urls: Vec<_> = servers
        .iter()
        .map(|s| format!("redis://127.0.0.1:{}/", s.port()))
        .collect();
    let output = lockctl_bare()
        .env("REDIS_PASSWORD", "r3d")
        .args(["run", "job", "--redlock", &urls.join(","), "--", "true"])
        .output()
        .unwrap();
    assert_eq!(code(output.status), 0, "{output:?}");
    let wrong = lockctl_bare()
        .env("REDIS_PASSWORD", "wrong")
        .args(["run", "job", "--redlock", &urls.join(","), "--", "true"])
        .output()
        .unwrap();
    assert_ne!(code(wrong.status), 0, "{wrong:?}");
}
