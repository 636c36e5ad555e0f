//! Helpers shared by the integration tests: a server, a backend on it with
//! short timeouts, and a sink that records notices.
// Each test binary uses a different subset of these helpers.
#![allow(dead_code, unreachable_pub)]

use std::time::Duration;

use std::sync::Arc;

use lock_core::backend::{
    AcquireOutcome, AcquireRequest, Channel, Connection, ExclusiveKind, NoticeSink, ReleaseOutcome,
    ReleaseRequest,
};
use lock_redis::kinds::Reentrant;
use lock_redis::{LockName, Owner, RedisConfig, Result, ScriptEnv};

/// The reentrant kind and the connection it is bound to, as a client has
/// them: the raw store operations (through `Deref`) plus subscriptions
/// (the transport itself, as the engine's connection).
pub struct RedisBackend {
    env: ScriptEnv,
    connection: Arc<dyn Connection>,
    kind: Reentrant,
}

impl std::fmt::Debug for RedisBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisBackend")
            .field("env", &self.env)
            .finish_non_exhaustive()
    }
}

impl RedisBackend {
    pub async fn connect(config: RedisConfig) -> Result<Self> {
        Ok(Self::over(lock_redis::connect_env(&config).await?))
    }

    pub fn over(env: ScriptEnv) -> Self {
        Self {
            connection: env.connection(),
            kind: Reentrant::new(env.clone()),
            env,
        }
    }

    pub fn env(&self) -> &ScriptEnv {
        &self.env
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

    /// The longest call, replica wait included (what a client checks its
    /// configuration against).
    pub fn command_timeout(&self) -> Option<Duration> {
        self.env.command_timeout()
    }

    pub async fn close(&self) {
        self.connection.close().await;
    }

    /// The lock's unlock channel.
    pub fn channel(&self, name: &LockName) -> Channel {
        Channel::new(self.env.layout().channel(name))
    }
}

impl std::ops::Deref for RedisBackend {
    type Target = Reentrant;

    fn deref(&self) -> &Reentrant {
        &self.kind
    }
}

/// What an unlock notice on `channel` looks like (message `0`).
pub fn unlocked(channel: &Channel) -> lock_core::backend::Notice {
    message(channel, "0")
}

/// A notice of `payload` on `channel`.
pub fn message(channel: &Channel, payload: &str) -> lock_core::backend::Notice {
    lock_core::backend::Notice::Message {
        channel: channel.clone(),
        payload: payload.as_bytes().to_vec(),
    }
}
use lock_testkit::fixtures::redis::Value;
use lock_testkit::fixtures::RedisServer;

/// Command and connect timeout of test backends.
pub const TIMEOUT: Duration = Duration::from_millis(500);
/// Record ttl (how long a request may run) used by the request helpers.
pub const RECORD_MS: u64 = 30_000;

/// The deadline of a request made now (by the wall clock) that may run for
/// `RECORD_MS`.
pub fn deadline() -> u64 {
    lock_core::backend::deadline_in(std::time::Duration::from_millis(RECORD_MS))
}

/// A server, a backend connected to it, and the notices the backend sent.
pub struct Env {
    pub server: RedisServer,
    pub backend: RedisBackend,
    pub notices: Notices,
}

pub fn config(server: &RedisServer) -> RedisConfig {
    RedisConfig::new(server.url())
        .command_timeout(TIMEOUT)
        .connect_timeout(TIMEOUT)
}

pub async fn env() -> Env {
    env_with(|c| c).await
}

pub async fn env_with(tune: impl FnOnce(RedisConfig) -> RedisConfig) -> Env {
    let server = RedisServer::start();
    let backend = RedisBackend::connect(tune(config(&server)))
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

pub fn name(s: &str) -> LockName {
    LockName::new(s).unwrap()
}

pub fn owner() -> Owner {
    Owner::new(uuid::Uuid::new_v4(), 1)
}

pub fn acquire(name: &LockName, owner: Owner, lease_ms: u64) -> AcquireRequest {
    AcquireRequest::new(name.clone(), owner, lease_ms, false, deadline())
}

pub fn release(name: &LockName, owner: Owner, lease_ms: u64) -> ReleaseRequest {
    ReleaseRequest::new(name.clone(), owner, lease_ms, deadline())
}

/// Acquires and asserts it worked; returns the fencing token.
pub async fn must_acquire(backend: &RedisBackend, req: &AcquireRequest) -> Option<u64> {
    match backend.try_acquire(req).await.unwrap() {
        AcquireOutcome::Acquired { fencing_token } => fencing_token,
        other => panic!("expected to acquire {:?}, got {other:?}", req.name),
    }
}

pub async fn must_release(backend: &RedisBackend, req: &ReleaseRequest) -> ReleaseOutcome {
    backend.release(req).await.unwrap()
}

pub fn bulk(s: &str) -> Value {
    Value::BulkString(s.as_bytes().to_vec())
}

pub fn int(v: Value) -> i64 {
    match v {
        Value::Int(n) => n,
        other => panic!("expected an integer, got {other:?}"),
    }
}

/// Records every notice delivered to it.
pub use lock_testkit::NoticeRecorder as Notices;
