//! Helpers shared by the integration tests: a server, a fair backend on it
//! with short timeouts, raw views of the queue, and raw subscribers.
// Each test binary uses a different subset of these helpers.
#![allow(dead_code, unreachable_pub)]

use std::time::Duration;

use futures::StreamExt;
use std::sync::Arc;

use lock_core::backend::{
    AcquireOutcome, AcquireRequest, Channel, Connection, ExclusiveKind, NoticeSink, ReleaseOutcome,
    ReleaseRequest,
};
use lock_core::{LockName, Owner, Result};
use lock_fair::Fair;
use lock_fair::FairLockInfo;
use lock_redis::{KeyLayout, RedisConfig, ScriptEnv};

/// The fair kind and the connection it is bound to, as a client has them:
/// the raw store operations (through `Deref`) plus subscriptions.
pub struct FairRedisBackend {
    env: ScriptEnv,
    connection: Arc<dyn Connection>,
    kind: Fair,
}

impl std::fmt::Debug for FairRedisBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FairRedisBackend")
            .field("env", &self.env)
            .finish_non_exhaustive()
    }
}

impl FairRedisBackend {
    pub async fn connect(config: RedisConfig) -> Result<Self> {
        let env = lock_redis::connect_env(&config).await?;
        Ok(Self {
            connection: env.connection(),
            kind: Fair::new(env.clone()),
            env,
        })
    }

    pub fn env(&self) -> &ScriptEnv {
        &self.env
    }

    /// Holders, time to live and queue.
    pub async fn inspect(&self, name: &LockName) -> Result<FairLockInfo> {
        self.kind.inspect_fair(name).await
    }

    pub fn set_notice_sink(&self, sink: Arc<dyn NoticeSink>) {
        self.connection.set_notice_sink(sink);
    }

    pub fn subscribe(&self, channel: &Channel) -> futures::future::BoxFuture<'static, Result<()>> {
        self.connection.subscribe(channel)
    }

    pub fn unsubscribe(&self, channel: &Channel) {
        self.connection.unsubscribe(channel);
    }

    pub async fn close(&self) {
        self.connection.close().await;
    }
}

impl std::ops::Deref for FairRedisBackend {
    type Target = Fair;

    fn deref(&self) -> &Fair {
        &self.kind
    }
}

/// What an unlock notice on `channel` looks like (message `0`).
pub fn unlocked(channel: &Channel) -> lock_core::backend::Notice {
    lock_core::backend::Notice::Message {
        channel: channel.clone(),
        payload: b"0".to_vec(),
    }
}
use lock_testkit::fixtures::redis::Value;
use lock_testkit::fixtures::RedisServer;
use tokio::sync::mpsc;

/// Command and connect timeout of test backends.
pub const TIMEOUT: Duration = Duration::from_millis(500);
/// Record ttl (how long a request may run) used by the request helpers.
pub const RECORD_MS: u64 = 30_000;

/// The deadline of a request made now (by the wall clock) that may run for
/// `RECORD_MS`.
pub fn deadline() -> u64 {
    lock_core::backend::deadline_in(std::time::Duration::from_millis(RECORD_MS))
}
/// Waiter timeout used by the request helpers.
pub const QUEUE_MS: u64 = 10_000;

/// A server, a fair backend connected to it, and the notices it sent.
pub struct Env {
    pub server: RedisServer,
    pub backend: FairRedisBackend,
    pub notices: Notices,
}

pub fn config(server: &RedisServer) -> RedisConfig {
    RedisConfig::new(server.url())
        .command_timeout(TIMEOUT)
        .connect_timeout(TIMEOUT)
}

pub async fn env() -> Env {
    let server = RedisServer::start();
    let backend = FairRedisBackend::connect(config(&server))
        .await
        .expect("connect to the fixture");
    let (sink, notices) = Notices::new();
    backend.set_notice_sink(sink);
    Env {
        server,
        backend,
        notices,
    }
}

pub fn layout() -> KeyLayout {
    KeyLayout::default()
}

pub fn name(s: &str) -> LockName {
    LockName::new(s).unwrap()
}

pub fn owner() -> Owner {
    Owner::new(uuid::Uuid::new_v4(), 1)
}

/// A waiting attempt: joins (or refreshes its place in) the queue.
pub fn wait_req(name: &LockName, owner: Owner, lease_ms: u64) -> AcquireRequest {
    AcquireRequest::new(name.clone(), owner, lease_ms, false, deadline()).queue(Some(QUEUE_MS))
}

/// A non-blocking attempt: never queues.
pub fn try_req(name: &LockName, owner: Owner, lease_ms: u64) -> AcquireRequest {
    AcquireRequest::new(name.clone(), owner, lease_ms, false, deadline())
}

pub fn release(name: &LockName, owner: Owner, lease_ms: u64) -> ReleaseRequest {
    ReleaseRequest::new(name.clone(), owner, lease_ms, deadline())
}

/// Acquires and asserts it worked; returns the fencing token.
pub async fn must_acquire(backend: &FairRedisBackend, req: &AcquireRequest) -> Option<u64> {
    match backend.try_acquire(req).await.unwrap() {
        AcquireOutcome::Acquired { fencing_token } => fencing_token,
        other => panic!("expected to acquire {:?}, got {other:?}", req.name),
    }
}

/// Attempts and asserts it did not take the lock; returns the wait hint.
pub async fn must_wait(backend: &FairRedisBackend, req: &AcquireRequest) -> Option<Duration> {
    match backend.try_acquire(req).await.unwrap() {
        AcquireOutcome::Held { ttl } => ttl,
        other => panic!("expected {:?} not to be taken, got {other:?}", req.name),
    }
}

pub async fn must_release(backend: &FairRedisBackend, req: &ReleaseRequest) -> ReleaseOutcome {
    backend.release(req).await.unwrap()
}

pub fn bulk(s: &str) -> Value {
    Value::BulkString(s.as_bytes().to_vec())
}

pub fn text(v: &Value) -> String {
    match v {
        Value::BulkString(b) => String::from_utf8(b.clone()).unwrap(),
        Value::SimpleString(s) => s.clone(),
        Value::Double(d) => d.to_string(),
        other => panic!("expected a string, got {other:?}"),
    }
}

pub fn int(v: Value) -> i64 {
    match v {
        Value::Int(n) => n,
        other => panic!("expected an integer, got {other:?}"),
    }
}

/// The queue list of `name`, head first.
pub fn queue(server: &RedisServer, name: &LockName) -> Vec<String> {
    match server.cmd(&["LRANGE", &layout().queue_key(name), "0", "-1"]) {
        Value::Array(items) => items.iter().map(text).collect(),
        other => panic!("{other:?}"),
    }
}

/// The deadline zset of `name`, lowest score first.
pub fn deadlines(server: &RedisServer, name: &LockName) -> Vec<(String, i64)> {
    let reply = server.cmd(&[
        "ZRANGE",
        &layout().timeout_key(name),
        "0",
        "-1",
        "WITHSCORES",
    ]);
    let Value::Array(items) = reply else {
        panic!("{reply:?}")
    };
    let score = |v: &Value| text(v).parse::<f64>().unwrap() as i64;
    match items.first() {
        // RESP3: [[member, score], ...]
        Some(Value::Array(_)) => items
            .iter()
            .map(|pair| match pair {
                Value::Array(p) => (text(&p[0]), score(&p[1])),
                other => panic!("{other:?}"),
            })
            .collect(),
        _ => items
            .chunks(2)
            .map(|pair| (text(&pair[0]), score(&pair[1])))
            .collect(),
    }
}

/// The deadline of `field`, if it has one.
pub fn deadline_of(server: &RedisServer, name: &LockName, field: &str) -> Option<i64> {
    deadlines(server, name)
        .into_iter()
        .find(|(f, _)| f == field)
        .map(|(_, s)| s)
}

/// The server's clock in epoch milliseconds.
pub fn server_now_ms(server: &RedisServer) -> i64 {
    match server.cmd(&["TIME"]) {
        Value::Array(t) => {
            let secs: i64 = text(&t[0]).parse().unwrap();
            let micros: i64 = text(&t[1]).parse().unwrap();
            secs * 1000 + micros / 1000
        }
        other => panic!("{other:?}"),
    }
}

/// A raw subscriber: every message on its channels, as (channel, payload).
pub struct RawSub {
    rx: mpsc::UnboundedReceiver<(String, String)>,
    task: tokio::task::JoinHandle<()>,
}

impl RawSub {
    /// Subscribes to `channels` (confirmed when this returns).
    pub async fn new(server: &RedisServer, channels: &[String]) -> Self {
        let mut pubsub = server.client().get_async_pubsub().await.unwrap();
        for channel in channels {
            pubsub.subscribe(channel).await.unwrap();
        }
        let (tx, rx) = mpsc::unbounded_channel();
        let task = tokio::spawn(async move {
            let mut messages = pubsub.into_on_message();
            while let Some(msg) = messages.next().await {
                let payload: String = msg.get_payload().unwrap();
                if tx
                    .send((msg.get_channel_name().to_owned(), payload))
                    .is_err()
                {
                    return;
                }
            }
        });
        Self { rx, task }
    }

    /// The next message, if one comes within `within`.
    pub async fn next(&mut self, within: Duration) -> Option<(String, String)> {
        tokio::time::timeout(within, self.rx.recv())
            .await
            .ok()
            .flatten()
    }

    /// Asserts nothing arrives for `quiet`.
    pub async fn expect_none(&mut self, quiet: Duration) {
        if let Some(m) = self.next(quiet).await {
            panic!("unexpected message {m:?}");
        }
    }
}

impl Drop for RawSub {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Records every notice delivered to it.
pub use lock_testkit::NoticeRecorder as Notices;
