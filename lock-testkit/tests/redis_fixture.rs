//! Tests of the `redis-server` fixture itself.

use std::path::Path;
use std::time::{Duration, Instant};

use lock_testkit::fixtures::redis::{self, Value};
use lock_testkit::fixtures::RedisServer;

fn pong() -> Value {
    Value::SimpleString("PONG".into())
}

#[test]
fn starts_on_loopback_and_answers() {
    let server = RedisServer::start();
    assert!(server.port() > 0);
    assert_eq!(
        server.url(),
        format!("redis://127.0.0.1:{}/", server.port())
    );
    assert_eq!(server.cmd(&["PING"]), pong());
    assert_eq!(server.cmd(&["SET", "k", "v"]), Value::Okay);
    assert_eq!(server.cmd(&["GET", "k"]), Value::BulkString(b"v".to_vec()));
    // Persistence is off.
    assert_eq!(
        server.cmd(&["CONFIG", "GET", "appendonly"]),
        Value::Array(vec![
            Value::BulkString(b"appendonly".to_vec()),
            Value::BulkString(b"no".to_vec())
        ])
    );
}

#[test]
fn two_servers_get_different_ports() {
    let a = RedisServer::start();
    let b = RedisServer::start();
    assert_ne!(a.port(), b.port());
}

#[test]
fn restart_keeps_port_and_starts_empty() {
    let mut server = RedisServer::start();
    let port = server.port();
    let pid = server.pid();
    server.cmd(&["SET", "k", "v"]);
    server.restart();
    assert_eq!(server.port(), port);
    assert_ne!(server.pid(), pid);
    assert_eq!(server.cmd(&["PING"]), pong());
    assert_eq!(server.cmd(&["GET", "k"]), Value::Nil);
}

#[test]
fn kill_refuses_connections_and_restart_brings_it_back() {
    let mut server = RedisServer::start();
    server.kill();
    assert!(!server.is_running());
    let err = server.try_cmd(&["PING"]).unwrap_err();
    assert!(err.is_connection_refusal() || err.is_io_error(), "{err}");
    server.restart();
    assert!(server.is_running());
    assert_eq!(server.cmd(&["PING"]), pong());
}

#[test]
fn pause_blocks_replies_until_resume() {
    let server = RedisServer::start();
    let client = server.client();
    let mut conn = client.get_connection().unwrap();
    conn.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    assert!(!server.is_paused());
    server.pause();
    assert!(server.is_paused());
    let started = Instant::now();
    let err = redis::cmd("PING").query::<String>(&mut conn).unwrap_err();
    assert!(err.is_timeout() || err.is_io_error(), "{err}");
    assert!(started.elapsed() < Duration::from_secs(2));
    server.resume();
    assert!(!server.is_paused());
    assert_eq!(server.cmd(&["PING"]), pong());
}

#[test]
fn drop_kills_the_process() {
    let server = RedisServer::start();
    let pid = server.pid().unwrap();
    let dir = server.dir().to_path_buf();
    assert!(Path::new(&format!("/proc/{pid}")).exists());
    drop(server);
    // Killed and reaped: the pid is gone (barring immediate pid reuse) and
    // the temp dir removed.
    let stat = std::fs::read_to_string(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    assert!(!stat.contains("redis-server"), "process {pid} still runs");
    assert!(!dir.exists());
}

#[test]
fn drop_kills_a_paused_process() {
    let server = RedisServer::start();
    let pid = server.pid().unwrap();
    server.pause();
    drop(server);
    let stat = std::fs::read_to_string(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    assert!(!stat.contains("redis-server"), "process {pid} still runs");
}

#[test]
fn kill_pubsub_clients_closes_subscribers_only() {
    let server = RedisServer::start();
    let client = server.client();
    let mut normal = client.get_connection().unwrap();
    let mut sub = client.get_connection().unwrap();
    sub.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let mut pubsub = sub.as_pubsub();
    pubsub.subscribe("ch").unwrap();
    assert_eq!(server.kill_pubsub_clients(), 1);
    assert!(pubsub.get_message().is_err());
    drop(pubsub);
    assert_eq!(
        redis::cmd("PING").query::<String>(&mut normal).unwrap(),
        "PONG"
    );
    assert_eq!(server.kill_normal_clients(), 1);
    assert!(redis::cmd("PING").query::<String>(&mut normal).is_err());
}

#[test]
fn flush_scripts_empties_the_cache() {
    let server = RedisServer::start();
    let sha = server.cmd(&["SCRIPT", "LOAD", "return 1"]);
    let Value::BulkString(sha) = sha else {
        panic!("SCRIPT LOAD answered {sha:?}")
    };
    let sha = String::from_utf8(sha).unwrap();
    assert_eq!(server.cmd(&["EVALSHA", &sha, "0"]), Value::Int(1));
    server.flush_scripts();
    let err = server.try_cmd(&["EVALSHA", &sha, "0"]).unwrap_err();
    assert_eq!(err.code(), Some("NOSCRIPT"));
}

#[test]
fn password_is_required_and_in_the_url() {
    let server = RedisServer::builder().password("s3cret").start();
    assert_eq!(
        server.url(),
        format!("redis://:s3cret@127.0.0.1:{}/", server.port())
    );
    assert_eq!(server.cmd(&["PING"]), pong());
    let anonymous = redis::Client::open(format!("redis://127.0.0.1:{}/", server.port())).unwrap();
    let mut conn = anonymous.get_connection().unwrap();
    let err = redis::cmd("GET")
        .arg("k")
        .query::<Value>(&mut conn)
        .unwrap_err();
    assert_eq!(err.code(), Some("NOAUTH"));
}

#[test]
fn extra_args_are_passed() {
    let server = RedisServer::builder()
        .arg("--maxmemory")
        .arg("12mb")
        .start();
    assert_eq!(
        server.cmd(&["CONFIG", "GET", "maxmemory"]),
        Value::Array(vec![
            Value::BulkString(b"maxmemory".to_vec()),
            Value::BulkString((12 * 1024 * 1024).to_string().into_bytes())
        ])
    );
}

#[tokio::test]
async fn async_connection_works() {
    let server = RedisServer::start();
    let mut conn = server.conn().await;
    let pong: String = redis::cmd("PING").query_async(&mut conn).await.unwrap();
    assert_eq!(pong, "PONG");
}
