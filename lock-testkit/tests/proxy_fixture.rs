//! Tests of the fault-injecting proxy fixture, against a real redis-server.

use std::future::Future;
use std::time::Duration;

use futures::StreamExt;
use lock_testkit::fixtures::redis::aio::MultiplexedConnection;
use lock_testkit::fixtures::redis::{self, AsyncCommands, Value};
use lock_testkit::fixtures::{FaultProxy, FaultState, RedisServer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long any single wait in these tests may take before it fails.
const PATIENCE: Duration = Duration::from_secs(10);

async fn within<T>(what: impl Future<Output = T>) -> T {
    tokio::time::timeout(PATIENCE, what)
        .await
        .expect("waited too long")
}

/// A multiplexed connection through `proxy` that gives up on a reply after
/// `response_timeout`.
async fn connect(proxy: &FaultProxy, response_timeout: Duration) -> MultiplexedConnection {
    let config = redis::AsyncConnectionConfig::new()
        .set_connection_timeout(Some(Duration::from_secs(2)))
        .set_response_timeout(Some(response_timeout));
    proxy
        .client()
        .get_multiplexed_async_connection_with_config(&config)
        .await
        .expect("connect through the proxy")
}

fn bulk(s: &str) -> Value {
    Value::BulkString(s.as_bytes().to_vec())
}

/// `args` as one RESP command.
fn resp(args: &[&str]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for arg in args {
        out.extend_from_slice(format!("${}\r\n{arg}\r\n", arg.len()).as_bytes());
    }
    out
}

/// A plain socket through the proxy, to control exactly which bytes go out
/// together.
struct Raw(TcpStream);

impl Raw {
    async fn connect(proxy: &FaultProxy) -> Self {
        Self(
            TcpStream::connect(("127.0.0.1", proxy.port()))
                .await
                .expect("connect to the proxy"),
        )
    }

    async fn send(&mut self, bytes: &[u8]) {
        self.0.write_all(bytes).await.expect("write to the proxy");
    }

    async fn expect(&mut self, reply: &[u8]) {
        let mut got = vec![0; reply.len()];
        within(self.0.read_exact(&mut got))
            .await
            .expect("read from the proxy");
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(reply)
        );
    }

    /// The proxy closed the connection (end of stream or reset), without
    /// sending anything first.
    async fn expect_closed(&mut self) {
        let mut buf = [0; 64];
        match within(self.0.read(&mut buf)).await {
            Ok(0) | Err(_) => {}
            Ok(n) => panic!(
                "expected a closed connection, got {:?}",
                String::from_utf8_lossy(&buf[..n])
            ),
        }
    }
}

#[tokio::test]
async fn forwards_commands_pipelines_and_pubsub() {
    let server = RedisServer::start();
    let proxy = FaultProxy::in_front_of(&server);
    assert_ne!(proxy.port(), server.port());
    assert_eq!(proxy.upstream().port(), server.port());
    assert_eq!(proxy.url(), format!("redis://127.0.0.1:{}/", proxy.port()));

    let mut conn = connect(&proxy, Duration::from_secs(5)).await;
    let () = conn.set("k", "v").await.unwrap();
    assert_eq!(server.cmd(&["GET", "k"]), bulk("v"));
    let v: String = conn.get("k").await.unwrap();
    assert_eq!(v, "v");

    // Larger than one read, so both frames arrive in pieces.
    let big = "x".repeat(200_000);
    let () = conn.set("big", &big).await.unwrap();
    let back: String = conn.get("big").await.unwrap();
    assert_eq!(back.len(), big.len());

    let counts: (i64, i64, i64) = redis::pipe()
        .incr("n", 1)
        .incr("n", 1)
        .incr("n", 1)
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(counts, (1, 2, 3));

    // Inline commands, and blank lines the server skips.
    let mut raw = Raw::connect(&proxy).await;
    raw.send(b"\r\nPING\r\nGET k\r\n").await;
    raw.expect(b"+PONG\r\n$1\r\nv\r\n").await;

    // RESP3 replies (maps, sets) pass through too.
    let resp3 = redis::Client::open(format!("{}?protocol=resp3", proxy.url())).unwrap();
    let mut conn3 = resp3.get_multiplexed_async_connection().await.unwrap();
    let () = conn3.hset("h", "f", 1).await.unwrap();
    let hash: Vec<(String, i64)> = conn3.hgetall("h").await.unwrap();
    assert_eq!(hash, [("f".to_owned(), 1)]);

    // Pub/sub messages flow to a subscriber behind the proxy.
    let mut pubsub = proxy.client().get_async_pubsub().await.unwrap();
    pubsub.subscribe("news").await.unwrap();
    assert_eq!(
        server.cmd(&["PUBLISH", "news", "hello"]),
        Value::Int(1),
        "the subscription reached the server"
    );
    let msg = within(pubsub.on_message().next()).await.unwrap();
    assert_eq!(msg.get_payload::<String>().unwrap(), "hello");

    let stats = proxy.stats();
    assert_eq!(stats.accepted, 4);
    assert_eq!(stats.open, 4);
    assert!(stats.commands >= 10, "{stats:?}");
}

#[tokio::test]
async fn hold_next_delays_the_matching_command_and_what_follows_it_only() {
    let server = RedisServer::start();
    let proxy = FaultProxy::in_front_of(&server);
    let mut other = connect(&proxy, Duration::from_secs(5)).await;
    let mut held = Raw::connect(&proxy).await;
    held.send(&resp(&["RPUSH", "list", "first"])).await;
    held.expect(b":1\r\n").await;

    let hold = proxy.hold_next("held-item", Duration::from_millis(1500));
    assert_eq!(hold.state(), FaultState::Armed);
    // One write: the matching command and one behind it.
    let mut pipeline = resp(&["RPUSH", "list", "held-item"]);
    pipeline.extend(resp(&["RPUSH", "list", "after"]));
    held.send(&pipeline).await;
    within(hold.wait_matched()).await;

    // Another connection is not held.
    let () = other.set("free", 1).await.unwrap();
    let list: Vec<String> = other.lrange("list", 0, -1).await.unwrap();
    assert_eq!(
        list,
        ["first"],
        "neither the held command nor the one behind it ran"
    );
    assert_eq!(hold.state(), FaultState::Matched, "still held");

    within(hold.wait_done()).await;
    held.expect(b":2\r\n:3\r\n").await;
    let list: Vec<String> = other.lrange("list", 0, -1).await.unwrap();
    assert_eq!(list, ["first", "held-item", "after"]);
    // The fault fired once: the same command passes now.
    held.send(&resp(&["RPUSH", "list", "held-item"])).await;
    held.expect(b":4\r\n").await;
}

#[tokio::test]
async fn a_killed_hold_is_abandoned_and_a_disarmed_one_never_fires() {
    let server = RedisServer::start();
    let proxy = FaultProxy::in_front_of(&server);

    let disarmed = proxy.hold_next("SET", Duration::from_secs(30));
    assert!(disarmed.disarm());
    assert!(!disarmed.disarm());
    assert_eq!(disarmed.state(), FaultState::Disarmed);

    let hold = proxy.hold_next("SET", Duration::from_secs(30));
    let mut raw = Raw::connect(&proxy).await;
    raw.send(&resp(&["SET", "k", "v"])).await;
    within(hold.wait_matched()).await;
    assert_eq!(proxy.kill_connections(), 1);
    assert_eq!(hold.state(), FaultState::Abandoned);
    raw.expect_closed().await;
    assert_eq!(server.cmd(&["GET", "k"]), Value::Nil, "never delivered");
}

#[tokio::test]
async fn swallow_reply_next_runs_the_command_and_breaks_the_client() {
    let server = RedisServer::start();
    let proxy = FaultProxy::in_front_of(&server);
    let mut conn = connect(&proxy, Duration::from_secs(5)).await;
    let () = conn.set("before", 1).await.unwrap();

    let swallow = proxy.swallow_reply_next("swallowed-key");
    let err = conn
        .set::<_, _, ()>("swallowed-key", "ran")
        .await
        .unwrap_err();
    assert!(err.is_io_error() || err.is_connection_dropped(), "{err:?}");
    within(swallow.wait_done()).await;
    assert_eq!(server.cmd(&["GET", "swallowed-key"]), bulk("ran"));
    // Both sides of that connection are closed once the reply came.
    within(proxy.wait_stats(|s| s.open == 0)).await;

    // Commands pipelined behind the swallowed one never reach the server.
    let swallow = proxy.swallow_reply_next("second-key");
    let mut raw = Raw::connect(&proxy).await;
    let mut pipeline = resp(&["SET", "second-key", "ran"]);
    pipeline.extend(resp(&["SET", "behind", "ran"]));
    raw.send(&pipeline).await;
    raw.expect_closed().await;
    within(swallow.wait_done()).await;
    assert_eq!(server.cmd(&["GET", "second-key"]), bulk("ran"));
    assert_eq!(server.cmd(&["GET", "behind"]), Value::Nil);

    // New connections work.
    let mut again = connect(&proxy, Duration::from_secs(5)).await;
    let v: String = again.get("swallowed-key").await.unwrap();
    assert_eq!(v, "ran");
}

#[tokio::test]
async fn partition_stalls_every_connection_until_heal() {
    let server = RedisServer::start();
    let proxy = FaultProxy::in_front_of(&server);
    let mut conn = connect(&proxy, Duration::from_millis(300)).await;
    let () = conn.set("k", "before").await.unwrap();

    proxy.partition();
    assert!(proxy.is_partitioned());
    let delivered = proxy.stats().commands;
    let err = conn.set::<_, _, ()>("k", "during").await.unwrap_err();
    assert!(err.is_timeout(), "{err:?}");
    // Kept, not delivered; the server itself is fine.
    assert_eq!(server.cmd(&["GET", "k"]), bulk("before"));

    // New connections are accepted, but nothing flows.
    let mut raw = Raw::connect(&proxy).await;
    raw.send(b"PING\r\n").await;
    within(proxy.wait_stats(|s| s.accepted == 2)).await;
    assert_eq!(proxy.stats().commands, delivered);

    proxy.heal();
    assert!(!proxy.is_partitioned());
    raw.expect(b"+PONG\r\n").await;
    // The SET sent during the partition arrived after the heal, before
    // the GET behind it.
    let v: String = conn.get("k").await.unwrap();
    assert_eq!(v, "during");
}

#[tokio::test]
async fn kill_connections_closes_clients_and_new_ones_work() {
    let server = RedisServer::start();
    let proxy = FaultProxy::in_front_of(&server);
    let mut conn = connect(&proxy, Duration::from_secs(2)).await;
    let () = conn.set("k", "v").await.unwrap();
    let mut raw = Raw::connect(&proxy).await;
    raw.send(b"PING\r\n").await;
    raw.expect(b"+PONG\r\n").await;
    assert_eq!(proxy.stats().open, 2);

    assert_eq!(proxy.kill_connections(), 2);
    assert_eq!(proxy.stats().open, 0);
    raw.expect_closed().await;
    let err = conn.get::<_, String>("k").await.unwrap_err();
    assert!(err.is_io_error() || err.is_connection_dropped(), "{err:?}");

    let mut fresh = connect(&proxy, Duration::from_secs(2)).await;
    let v: String = fresh.get("k").await.unwrap();
    assert_eq!(v, "v");
    let stats = proxy.stats();
    assert_eq!((stats.accepted, stats.open), (3, 1));
}

#[tokio::test]
async fn the_url_carries_the_servers_password() {
    let server = RedisServer::builder().password("s3cret").start();
    let proxy = FaultProxy::in_front_of(&server);
    assert_eq!(
        proxy.url(),
        format!("redis://:s3cret@127.0.0.1:{}/", proxy.port())
    );
    let mut conn = connect(&proxy, Duration::from_secs(5)).await;
    let pong: String = redis::cmd("PING").query_async(&mut conn).await.unwrap();
    assert_eq!(pong, "PONG");
}

#[tokio::test]
async fn server_addrs_name_the_proxys_connections_in_client_list() {
    let server = RedisServer::start();
    let proxy = FaultProxy::in_front_of(&server);
    let other = FaultProxy::in_front_of(&server);
    assert!(proxy.server_addrs().is_empty());
    let mut raw = Raw::connect(&proxy).await;
    raw.send(b"PING\r\n").await;
    raw.expect(b"+PONG\r\n").await;
    let mut bystander = Raw::connect(&other).await;
    bystander.send(b"PING\r\n").await;
    bystander.expect(b"+PONG\r\n").await;

    let addrs = proxy.server_addrs();
    assert_eq!(addrs.len(), 1, "{addrs:?}");
    let addr = addrs[0].to_string();
    let Value::BulkString(list) = server.cmd(&["CLIENT", "LIST"]) else {
        panic!("CLIENT LIST is a bulk string");
    };
    let list = String::from_utf8_lossy(&list);
    assert!(list.contains(&format!(" addr={addr} ")), "{addr} in {list}");
    assert!(!other.server_addrs().contains(&addrs[0]));

    // The server closes exactly that connection; the bystander's stays.
    assert_eq!(
        server.cmd(&["CLIENT", "KILL", "ADDR", &addr]),
        Value::Int(1),
        "CLIENT KILL ADDR closed one connection"
    );
    raw.expect_closed().await;
    bystander.send(b"PING\r\n").await;
    bystander.expect(b"+PONG\r\n").await;
    drop(raw);
    within(proxy.wait_stats(|s| s.open == 0)).await;
    assert!(proxy.server_addrs().is_empty());
}
