//! [`InMemoryServer`]: the shared store many in-memory clients talk to.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use lock_core::{Channel, ClientConfig, Kinds, LockClient, Notice, NoticeSink, Result};
use lock_script::KeyLayout;

use super::backend::{InMemoryBackend, InMemoryKind};
use super::commands::{Ctx, Published};
use super::keyspace::{Keyspace, WrongType};
use super::lua::ScriptEngine;
use super::reply::ScriptReply;

/// Faults the server injects into backend calls, to test error paths.
#[derive(Debug, Clone, Default)]
pub(crate) struct Faults {
    pub(crate) down: bool,
    pub(crate) latency: Duration,
    /// The next N calls fail before doing anything.
    pub(crate) fail_before: u32,
    /// The next N calls are applied, then fail: the reply is "lost".
    pub(crate) fail_after: u32,
    pub(crate) drop_notices: bool,
    /// Calls slower than this fail after it, without running.
    pub(crate) command_timeout: Option<Duration>,
}

/// What one connection (one backend) is subscribed to.
#[derive(Default)]
pub(crate) struct ConnectionState {
    pub(crate) sink: Option<Arc<dyn NoticeSink>>,
    pub(crate) channels: HashSet<String>,
}

pub(crate) type Connection = Mutex<ConnectionState>;

pub(crate) struct State {
    pub(crate) keys: Keyspace,
    pub(crate) faults: Faults,
    connections: Vec<Weak<Connection>>,
    /// The store's clock: the wall clock when the server was made, advanced
    /// by tokio time since (so it follows paused time).
    epoch_ms: i64,
    started: tokio::time::Instant,
    /// The Lua engine, made by the first script run.
    scripts: Option<ScriptEngine>,
}

impl State {
    /// The store's clock in milliseconds since the Unix epoch (Redis `TIME`).
    pub(crate) fn now_ms(&self) -> i64 {
        self.epoch_ms + self.started.elapsed().as_millis() as i64
    }

    /// The store's clock in microseconds since the Unix epoch, and the
    /// instant it was read at.
    fn clock(&self) -> (i64, tokio::time::Instant) {
        let now = tokio::time::Instant::now();
        let elapsed = i64::try_from((now - self.started).as_micros()).unwrap_or(i64::MAX);
        (self.epoch_ms * 1000 + elapsed, now)
    }

    /// Runs a Lua script as `EVAL` does, on this state. Returns the reply
    /// and the messages it published, for the caller to deliver once it
    /// has released the state's lock. A `PUBLISH` answers how many
    /// connections are subscribed to the channel (0 while notices are
    /// dropped).
    pub(crate) fn eval(
        &mut self,
        source: &[u8],
        keys: &[Vec<u8>],
        argv: &[Vec<u8>],
    ) -> (ScriptReply, Vec<Published>) {
        let (now_us, now) = self.clock();
        let State {
            keys: keyspace,
            faults,
            connections,
            scripts,
            ..
        } = self;
        let engine = match scripts {
            Some(engine) => engine,
            None => match ScriptEngine::new() {
                Ok(engine) => scripts.insert(engine),
                Err(e) => {
                    let error = format!("ERR in-memory script engine unavailable: {e}");
                    return (ScriptReply::Error(error), Vec::new());
                }
            },
        };
        let receivers = |p: &Published| {
            if faults.drop_notices {
                return 0;
            }
            let n = subscribers(connections, &String::from_utf8_lossy(&p.channel));
            i64::try_from(n).unwrap_or(i64::MAX)
        };
        let mut cx = Ctx {
            keys: keyspace,
            now_us,
            now,
            published: Vec::new(),
            receivers: &receivers,
        };
        let reply = engine.eval(&mut cx, source, keys, argv);
        (reply, cx.published)
    }
}

/// How many of `connections` are subscribed to `channel`.
fn subscribers(connections: &[Weak<Connection>], channel: &str) -> usize {
    connections
        .iter()
        .filter_map(Weak::upgrade)
        .filter(|c| {
            c.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .channels
                .contains(channel)
        })
        .count()
}

/// An in-memory lock store with the observable behaviour of a Redis server
/// running this library's scripts: hashes with hold counts, time to live,
/// latches, fencing counters, and pub/sub notices. Time is `tokio::time`, so
/// tests run under `tokio::time::pause()`.
///
/// Clone it to share; [`InMemoryServer::client`] connects a new client,
/// which hands out every kind of lock (reentrant and fair share the
/// keyspace, as on Redis).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> lock_core::Result<()> {
/// use lock_testkit::InMemoryServer;
/// let server = InMemoryServer::new();
/// let a = server.client()?;
/// let b = server.client()?;
/// let guard = a.lock("job")?.lock().await?;
/// assert!(b.lock("job")?.try_lock().await?.is_none());
/// guard.unlock().await?;
/// let fair = a.fair_lock("queue:printer")?.lock().await?;
/// fair.unlock().await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct InMemoryServer {
    state: Arc<Mutex<State>>,
    layout: KeyLayout,
}

impl Default for InMemoryServer {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for InMemoryServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InMemoryServer").finish_non_exhaustive()
    }
}

impl InMemoryServer {
    /// An empty store.
    pub fn new() -> Self {
        Self {
            state: Arc::new(Mutex::new(State {
                keys: Keyspace::default(),
                faults: Faults::default(),
                connections: Vec::new(),
                epoch_ms: std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_millis() as i64),
                started: tokio::time::Instant::now(),
                scripts: None,
            })),
            layout: KeyLayout::default(),
        }
    }

    pub(crate) fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The key layout (no prefix).
    pub fn layout(&self) -> &KeyLayout {
        &self.layout
    }

    /// A new connection: what one client uses.
    pub fn connect(&self) -> Arc<InMemoryBackend> {
        let connection = Arc::new(Connection::default());
        self.state().connections.push(Arc::downgrade(&connection));
        Arc::new(InMemoryBackend::new(self.clone(), connection))
    }

    /// Every kind bound to `backend` (one client's connection).
    pub fn kinds(backend: &Arc<InMemoryBackend>) -> Kinds {
        Kinds::new()
            .reentrant(Arc::new(InMemoryKind::reentrant(Arc::clone(backend))))
            .fair(Arc::new(InMemoryKind::fair(Arc::clone(backend))))
    }

    /// `LRANGE key 0 -1` (a fair lock's queue).
    pub fn list(&self, key: &str) -> Vec<String> {
        self.state().keys.list_all(key).unwrap_or_default()
    }

    /// `ZSCORE key member`.
    pub fn zscore(&self, key: &str, member: &str) -> Option<i64> {
        self.state().keys.zscore(key, member).ok().flatten()
    }

    /// `ZADD key score member` (e.g. to age a waiter's deadline).
    pub fn zadd(&self, key: &str, score: i64, member: &str) {
        let _ = self.state().keys.zadd(key, score, member);
    }

    /// `RPUSH key value`.
    pub fn rpush(&self, key: &str, value: &str) {
        let _ = self.state().keys.rpush(key, value);
    }

    /// The store's clock, milliseconds since the Unix epoch (Redis `TIME`).
    pub fn now_ms(&self) -> i64 {
        self.state().now_ms()
    }

    /// A new client with default configuration on a new connection.
    ///
    /// # Errors
    /// As [`LockClient::new`] (e.g. outside a tokio runtime).
    pub fn client(&self) -> Result<LockClient> {
        self.client_with(ClientConfig::default())
    }

    /// A new client with `config` on a new connection.
    ///
    /// # Errors
    /// As [`LockClient::new`].
    pub fn client_with(&self, config: ClientConfig) -> Result<LockClient> {
        let backend = self.connect();
        LockClient::new(backend.clone(), Self::kinds(&backend), config)
    }

    /// Publishes `message` on `channel` to every subscribed connection;
    /// returns how many received it. Delivery happens after the store's lock
    /// is released, as a Redis reader task would.
    pub fn publish(&self, channel: &str, message: &str) -> usize {
        let deliveries: Vec<Arc<dyn NoticeSink>> = {
            let mut state = self.state();
            if state.faults.drop_notices {
                return 0;
            }
            state.connections.retain(|c| c.strong_count() > 0);
            state
                .connections
                .iter()
                .filter_map(Weak::upgrade)
                .filter_map(|c| {
                    let c = c.lock().unwrap_or_else(PoisonError::into_inner);
                    if !c.channels.contains(channel) {
                        return None;
                    }
                    c.sink.clone()
                })
                .collect()
        };
        for sink in &deliveries {
            sink.deliver(Notice::Message {
                channel: Channel::new(channel),
                payload: message.as_bytes().to_vec(),
            });
        }
        deliveries.len()
    }

    /// Runs the Lua script `source` with `keys` and `args` on this store as
    /// another client's `EVAL` would (Redis 7.0's scripting: `redis.call`,
    /// `redis.pcall`, its sandbox and its reply conversion; see the
    /// commands it knows in the module docs), without injected faults.
    /// Messages the script publishes are delivered after the store's lock
    /// is released, like [`InMemoryServer::publish`].
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// use lock_testkit::memory::ScriptReply;
    /// let server = lock_testkit::InMemoryServer::new();
    /// let script = "redis.call('hset', KEYS[1], 'mode', ARGV[1]); return redis.call('hget', KEYS[1], 'mode')";
    /// let reply = server.eval(script, &["rw"], &["write"]);
    /// assert_eq!(reply, ScriptReply::Bulk(b"write".to_vec()));
    /// # }
    /// ```
    pub fn eval<K: AsRef<[u8]>, A: AsRef<[u8]>>(
        &self,
        source: &str,
        keys: &[K],
        args: &[A],
    ) -> ScriptReply {
        let keys: Vec<Vec<u8>> = keys.iter().map(|k| k.as_ref().to_vec()).collect();
        let args: Vec<Vec<u8>> = args.iter().map(|a| a.as_ref().to_vec()).collect();
        let (reply, published) = self.state().eval(source.as_bytes(), &keys, &args);
        for message in published {
            self.publish(
                &String::from_utf8_lossy(&message.channel),
                &String::from_utf8_lossy(&message.message),
            );
        }
        reply
    }

    /// How many connections are subscribed to `channel` (`PUBSUB NUMSUB`).
    pub fn subscribers(&self, channel: &str) -> usize {
        subscribers(&self.state().connections, channel)
    }

    /// Tells every connection its notices may have been lost, as a Redis
    /// backend does after re-establishing its pub/sub connection.
    pub fn reset_notices(&self) {
        let sinks: Vec<Arc<dyn NoticeSink>> = self
            .state()
            .connections
            .iter()
            .filter_map(Weak::upgrade)
            .filter_map(|c| {
                c.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .sink
                    .clone()
            })
            .collect();
        for sink in sinks {
            sink.deliver(Notice::Reset);
        }
    }

    // ---- raw access, as another Redis client would have ----

    /// `SET key value` (e.g. to put a non-lock value at a lock key).
    pub fn set_string(&self, key: &str, value: &str) {
        self.state().keys.set(key, value.to_owned(), None);
    }

    /// `GET key`; `None` when missing or not a string.
    pub fn get_string(&self, key: &str) -> Option<String> {
        self.state().keys.get(key).ok().flatten()
    }

    /// `HGETALL key`, fields sorted; empty when missing or not a hash.
    pub fn hash(&self, key: &str) -> Vec<(String, i64)> {
        self.state().keys.hgetall(key).unwrap_or_default()
    }

    /// `HSET key field value` then `PEXPIRE key ms` when given: a lock
    /// written by another client (e.g. Redisson).
    ///
    /// # Errors
    /// [`lock_core::LockError::WrongType`] when `key` is not a hash.
    pub fn hset(&self, key: &str, field: &str, value: i64, pexpire_ms: Option<u64>) -> Result<()> {
        let mut state = self.state();
        state
            .keys
            .hset(key, field, value)
            .map_err(|WrongType| lock_core::LockError::WrongType { key: key.into() })?;
        if let Some(ms) = pexpire_ms {
            state.keys.pexpire(key, ms);
        }
        Ok(())
    }

    /// `PTTL key`.
    pub fn pttl(&self, key: &str) -> i64 {
        self.state().keys.pttl(key)
    }

    /// `DEL key` without publishing anything.
    pub fn del(&self, key: &str) -> bool {
        self.state().keys.del(key)
    }

    /// Every live key, sorted (`KEYS *`).
    pub fn keys(&self) -> Vec<String> {
        self.state().keys.keys()
    }

    // ---- fault injection ----

    /// While `true`, every backend call fails with a retryable
    /// "unavailable" error, as with a server that is down.
    pub fn set_down(&self, down: bool) {
        self.state().faults.down = down;
    }

    /// Every backend call waits `latency` (tokio time) before it runs.
    pub fn set_latency(&self, latency: Duration) {
        self.state().faults.latency = latency;
    }

    /// The next `n` backend calls fail with a retryable error without
    /// running.
    pub fn fail_next(&self, n: u32) {
        self.state().faults.fail_before = n;
    }

    /// The next `n` backend calls run, then report a retryable error, as when
    /// a reply is lost: tests that retries never count twice.
    pub fn lose_next_replies(&self, n: u32) {
        self.state().faults.fail_after = n;
    }

    /// Bounds every backend call as a Redis backend's command timeout does:
    /// a call whose [latency](InMemoryServer::set_latency) is longer fails
    /// with a timeout error once `timeout` has passed, without running (its
    /// request was lost on the way, as in a network partition). The backend
    /// reports it as [`lock_core::LockBackend::command_timeout`], which a
    /// client checks when it is made: set it before making clients. `None`
    /// (the default): calls wait out any latency.
    pub fn set_command_timeout(&self, timeout: Option<Duration>) {
        self.state().faults.command_timeout = timeout;
    }

    /// While `true`, published notices reach nobody (a pub/sub outage).
    pub fn set_drop_notices(&self, drop: bool) {
        self.state().faults.drop_notices = drop;
    }
}
