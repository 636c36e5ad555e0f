//! Wire compatibility of the count-down latch with Redisson's
//! `RCountDownLatch`, with a raw connection playing the Java service: the
//! commands Redisson's scripts run (`DECR`, `DEL`, `SET`, `PUBLISH` on
//! `redisson_countdownlatch__channel__{<name>}`), and a raw subscriber
//! where a Java waiter would listen.

use std::time::Duration;

use futures::StreamExt;
use lock_redis::{ClientConfig, LockClient, RedisConfig};
use lock_testkit::fixtures::redis::Value;
use lock_testkit::fixtures::RedisServer;
use tokio::sync::mpsc;

const WITHIN: Duration = Duration::from_secs(2);

async fn client(server: &RedisServer, prefix: &str) -> LockClient {
    let redis = RedisConfig::new(server.url())
        .key_prefix(prefix)
        .command_timeout(WITHIN)
        .connect_timeout(WITHIN);
    // Rechecks only after a minute: a waiter back sooner was woken by a
    // message.
    let config = ClientConfig::default().no_ttl_recheck(Duration::from_secs(60));
    lock_redis::connect(redis, config).await.unwrap()
}

/// A Java waiter's subscription: every message on one channel, in order.
struct JavaSubscriber {
    rx: mpsc::UnboundedReceiver<String>,
    task: tokio::task::JoinHandle<()>,
}

impl JavaSubscriber {
    async fn new(server: &RedisServer, channel: &str) -> Self {
        let mut pubsub = server.client().get_async_pubsub().await.unwrap();
        pubsub.subscribe(channel).await.unwrap();
        let (tx, rx) = mpsc::unbounded_channel();
        let task = tokio::spawn(async move {
            let mut messages = pubsub.into_on_message();
            while let Some(msg) = messages.next().await {
                if tx.send(msg.get_payload().unwrap()).is_err() {
                    return;
                }
            }
        });
        Self { rx, task }
    }

    async fn next(&mut self) -> String {
        tokio::time::timeout(WITHIN, self.rx.recv())
            .await
            .expect("a message")
            .expect("subscribed")
    }
}

impl Drop for JavaSubscriber {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Publishes `marker` after whatever was sent before: the next message a
/// subscriber sees is then the marker exactly when nothing came before it.
fn mark(server: &RedisServer, channel: &str, marker: &str) {
    server.cmd(&["PUBLISH", channel, marker]);
}

fn text(value: &Value) -> String {
    match value {
        Value::BulkString(b) => String::from_utf8(b.clone()).unwrap(),
        Value::SimpleString(s) => s.clone(),
        other => panic!("{other:?}"),
    }
}

fn int(value: Value) -> i64 {
    match value {
        Value::Int(n) => n,
        other => panic!("{other:?}"),
    }
}

/// Redisson's countDown, run by hand: DECR, DEL at ≤ 0, `0` at exactly 0.
fn java_count_down(server: &RedisServer, key: &str, channel: &str) {
    let v = int(server.cmd(&["DECR", key]));
    if v <= 0 {
        server.cmd(&["DEL", key]);
    }
    if v == 0 {
        server.cmd(&["PUBLISH", channel, "0"]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_count_is_a_plain_string_without_expiry_and_java_hears_it_set() {
    let server = RedisServer::start();
    let c = client(&server, "").await;
    let channel = "redisson_countdownlatch__channel__{batch}";
    let mut java = JavaSubscriber::new(&server, channel).await;
    assert!(c
        .count_down_latch("batch")
        .unwrap()
        .try_set_count(3)
        .await
        .unwrap());
    assert_eq!(java.next().await, "1");
    assert_eq!(text(&server.cmd(&["TYPE", "batch"])), "string");
    assert_eq!(text(&server.cmd(&["GET", "batch"])), "3");
    assert_eq!(int(server.cmd(&["PTTL", "batch"])), -1);
    // Redisson's trySetCount (EXISTS first) finds ours.
    assert_eq!(int(server.cmd(&["EXISTS", "batch"])), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_last_count_down_deletes_and_publishes_zero_once() {
    let server = RedisServer::start();
    let c = client(&server, "").await;
    let channel = "redisson_countdownlatch__channel__{batch}";
    let latch = c.count_down_latch("batch").unwrap();
    latch.try_set_count(2).await.unwrap();
    let mut java = JavaSubscriber::new(&server, channel).await;
    assert_eq!(latch.count_down().await.unwrap(), 1);
    assert_eq!(text(&server.cmd(&["GET", "batch"])), "1");
    mark(&server, channel, "marker-1");
    assert_eq!(java.next().await, "marker-1", "no message above zero");
    assert_eq!(latch.count_down().await.unwrap(), 0);
    assert_eq!(java.next().await, "0");
    assert_eq!(int(server.cmd(&["EXISTS", "batch"])), 0);
    // Below zero: nothing is stored and nothing announced, as Redisson.
    assert_eq!(latch.count_down().await.unwrap(), 0);
    assert_eq!(int(server.cmd(&["EXISTS", "batch"])), 0);
    mark(&server, channel, "marker-2");
    assert_eq!(java.next().await, "marker-2");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_java_count_down_to_zero_wakes_our_waiters() {
    let server = RedisServer::start();
    let c = client(&server, "").await;
    let channel = "redisson_countdownlatch__channel__{batch}";
    // Redisson's trySetCount: SET, then `1`.
    server.cmd(&["SET", "batch", "2"]);
    server.cmd(&["PUBLISH", channel, "1"]);
    let latch = c.count_down_latch("batch").unwrap();
    assert_eq!(latch.count().await.unwrap(), 2);
    let waiter = tokio::spawn({
        let latch = latch.clone();
        async move { latch.wait_for(Duration::from_secs(30)).await }
    });
    while c.stats().waiting < 1 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    java_count_down(&server, "batch", channel);
    assert_eq!(latch.count().await.unwrap(), 1);
    assert!(!waiter.is_finished());
    java_count_down(&server, "batch", channel);
    let opened = tokio::time::timeout(WITHIN, waiter).await.expect("woken");
    assert!(opened.unwrap().unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_delete_publishes_new_count_and_a_java_count_down_of_ours_counts() {
    let server = RedisServer::start();
    let c = client(&server, "").await;
    let channel = "redisson_countdownlatch__channel__{batch}";
    let latch = c.count_down_latch("batch").unwrap();
    latch.try_set_count(3).await.unwrap();
    java_count_down(&server, "batch", channel);
    assert_eq!(latch.count().await.unwrap(), 2);
    let mut java = JavaSubscriber::new(&server, channel).await;
    assert!(latch.delete().await.unwrap());
    assert_eq!(java.next().await, "1");
    assert!(!latch.delete().await.unwrap());
    mark(&server, channel, "marker");
    assert_eq!(
        java.next().await,
        "marker",
        "no message for nothing deleted"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_with_braces_keeps_redissons_double_braces_and_the_prefix_comes_first() {
    let server = RedisServer::start();
    let c = client(&server, "app:").await;
    let channel = "redisson_countdownlatch__channel__{app:{tenant}jobs}";
    let mut java = JavaSubscriber::new(&server, channel).await;
    let latch = c.count_down_latch("{tenant}jobs").unwrap();
    latch.try_set_count(1).await.unwrap();
    assert_eq!(java.next().await, "1");
    assert_eq!(text(&server.cmd(&["GET", "app:{tenant}jobs"])), "1");
    latch.count_down().await.unwrap();
    assert_eq!(java.next().await, "0");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_negative_count_written_by_java_reads_open() {
    let server = RedisServer::start();
    let c = client(&server, "").await;
    // Redisson's trySetCount(-1) stores it as given.
    server.cmd(&["SET", "batch", "-1"]);
    let latch = c.count_down_latch("batch").unwrap();
    assert_eq!(latch.count().await.unwrap(), 0);
    assert!(latch.wait_for(Duration::from_millis(100)).await.unwrap());
    // Counting down deletes it, as Redisson's DECR-then-DEL does.
    latch.count_down().await.unwrap();
    assert_eq!(int(server.cmd(&["EXISTS", "batch"])), 0);
}
