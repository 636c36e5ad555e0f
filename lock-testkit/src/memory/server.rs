//! [`InMemoryServer`]: the shared store many in-memory clients talk to.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use lock_redis::lock_core::backend::{Channel, Notice, NoticeSink};
use lock_redis::{ClientConfig, LockClient, LockError, Result};
use lock_script::{KeyLayout, ScriptEnv};

use super::commands::{self, Ctx, Published};
use super::keyspace::Keyspace;
use super::reply::ScriptReply;
use super::scripts::Scripts;
use super::transport::MemoryTransport;

/// Faults the server injects into transport calls, to test error paths.
#[derive(Debug, Clone, Default)]
pub(crate) struct Faults {
    pub(crate) down: bool,
    pub(crate) latency: Duration,
    /// The next N calls fail before doing anything.
    pub(crate) fail_before: u32,
    /// The next N calls are applied, then fail: the reply is "lost".
    pub(crate) fail_after: u32,
    /// The next N calls fail at once but run on the store `delay` later:
    /// late originals.
    pub(crate) delayed: u32,
    pub(crate) delay: Duration,
    pub(crate) drop_notices: bool,
    /// Calls slower than this fail after it, without running.
    pub(crate) command_timeout: Option<Duration>,
    /// While set, scripts and write commands answer this error reply
    /// without running, as a master refusing writes does.
    pub(crate) refuse_writes: Option<String>,
}

/// One connection's pub/sub: what it is subscribed to, and who hears it
/// (the engine's notice sink).
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
    /// The transport of each client [`InMemoryServer::client_with`] made,
    /// by client id: what [`InMemoryServer::crash`] cuts.
    clients: HashMap<uuid::Uuid, Weak<MemoryTransport>>,
    /// The store's clock: the wall clock when the server was made, advanced
    /// by tokio time since (so it follows paused time).
    epoch_ms: i64,
    started: tokio::time::Instant,
    /// The script cache and the Lua engine.
    pub(crate) scripts: Scripts,
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

    /// Runs `run` on a command context over this state: the keyspace and
    /// the store's clock. Returns its result and the messages published
    /// meanwhile, for the caller to deliver once it has released the
    /// state's lock. A `PUBLISH` answers how many connections are
    /// subscribed to the channel (0 while notices are dropped).
    fn with_ctx<R>(
        &mut self,
        run: impl FnOnce(&mut Ctx<'_>, &mut Scripts) -> R,
    ) -> (R, Vec<Published>) {
        let (now_us, now) = self.clock();
        let State {
            keys: keyspace,
            faults,
            connections,
            scripts,
            ..
        } = self;
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
        let result = run(&mut cx, scripts);
        (result, cx.published)
    }

    /// `EVAL source` with `keys` and `argv`.
    pub(crate) fn eval(
        &mut self,
        source: &[u8],
        keys: &[Vec<u8>],
        argv: &[Vec<u8>],
    ) -> (ScriptReply, Vec<Published>) {
        self.with_ctx(|cx, scripts| scripts.eval(cx, source, keys, argv))
    }

    /// `EVALSHA sha` with `keys` and `argv`: `NOSCRIPT` when the script
    /// is not loaded.
    pub(crate) fn eval_sha(
        &mut self,
        sha: &str,
        keys: &[Vec<u8>],
        argv: &[Vec<u8>],
    ) -> (ScriptReply, Vec<Published>) {
        self.with_ctx(|cx, scripts| scripts.eval_sha(cx, sha, keys, argv))
    }

    /// One command (`args[0]` names it), as a client sends it.
    pub(crate) fn command(&mut self, args: &[Vec<u8>]) -> (ScriptReply, Vec<Published>) {
        let Some(command) = args.first().and_then(|name| commands::lookup(name)) else {
            return (
                ScriptReply::Error("ERR unknown command".to_owned()),
                Vec::new(),
            );
        };
        if !command.accepts(args.len()) {
            let error = format!(
                "ERR wrong number of arguments for '{}' command",
                command.name
            );
            return (ScriptReply::Error(error), Vec::new());
        }
        self.with_ctx(|cx, _| command.run(cx, args))
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

/// An in-memory Redis for the lock scripts: the keyspace (strings, hashes,
/// lists, sorted sets, expiry on `tokio::time`), `EVALSHA` of the kinds'
/// own Lua scripts on an embedded Lua 5.1, and pub/sub. Time is
/// `tokio::time`, so tests run under `tokio::time::pause()`.
///
/// Clone it to share; [`InMemoryServer::client`] connects a new client
/// through the same registration of kinds as every Redis deployment
/// (`lock_redis::LockClient::new` over a [`MemoryTransport`]), which hands
/// out every kind of lock (reentrant and fair share the keyspace, as on
/// Redis).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> lock_redis::Result<()> {
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

/// The words of a command, as bytes.
fn words(args: &[&str]) -> Vec<Vec<u8>> {
    args.iter().map(|a| a.as_bytes().to_vec()).collect()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

impl InMemoryServer {
    /// An empty store.
    pub fn new() -> Self {
        Self {
            state: Arc::new(Mutex::new(State {
                keys: Keyspace::default(),
                faults: Faults::default(),
                connections: Vec::new(),
                clients: HashMap::new(),
                epoch_ms: std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_millis() as i64),
                started: tokio::time::Instant::now(),
                scripts: Scripts::default(),
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

    /// A new connection: the transport one client uses.
    pub fn transport(&self) -> Arc<MemoryTransport> {
        let connection = Arc::new(Connection::default());
        let mut state = self.state();
        state.connections.retain(|c| c.strong_count() > 0);
        state.connections.push(Arc::downgrade(&connection));
        drop(state);
        Arc::new(MemoryTransport::new(self.clone(), connection))
    }

    /// A new connection's [`ScriptEnv`] (this server's layout, no replica
    /// sync): what the kinds of one client run with, for tests that drive a
    /// kind's store operations directly.
    pub fn env(&self) -> ScriptEnv {
        ScriptEnv::new(self.transport(), self.layout.clone())
    }

    /// A new client with default configuration on a new connection.
    ///
    /// # Errors
    /// As [`LockClient::new`] (e.g. outside a tokio runtime).
    pub fn client(&self) -> Result<LockClient> {
        self.client_with(ClientConfig::default())
    }

    /// A new client with `config` on a new connection, with every kind
    /// registered as on every Redis deployment (`lock_redis::LockClient::new`).
    ///
    /// # Errors
    /// As [`LockClient::new`].
    pub fn client_with(&self, config: ClientConfig) -> Result<LockClient> {
        let transport = self.transport();
        let env = ScriptEnv::new(Arc::clone(&transport) as _, self.layout.clone());
        let client = lock_redis::LockClient::new(env, config)?;
        let mut state = self.state();
        state.clients.retain(|_, t| t.strong_count() > 0);
        state
            .clients
            .insert(client.id(), Arc::downgrade(&transport));
        Ok(client)
    }

    /// Kills `client` as `SIGKILL` kills its process: from now on nothing
    /// of it reaches the store. Its watchdog stops renewing, nothing it
    /// holds is given back, and it hears no notice; its locks, leased
    /// permits and client record stay until their leases run out, as a
    /// crashed holder's do, and a plain semaphore's permits stay for good.
    /// What the test still calls on it (a guard's `unlock`, a new `lock`)
    /// fails with [`LockError::Closed`] and reaches nothing. For the
    /// failover tests of a service: another client takes over after the
    /// lease, under paused time.
    ///
    /// Only a client this server made ([`InMemoryServer::client`],
    /// [`InMemoryServer::client_with`]); `false` for any other.
    pub fn crash(&self, client: &LockClient) -> bool {
        let transport = self.state().clients.remove(&client.id());
        match transport.and_then(|t| t.upgrade()) {
            Some(transport) => {
                transport.cut();
                true
            }
            None => false,
        }
    }

    /// Publishes `message` on `channel` to every subscribed connection;
    /// returns how many received it. Delivery happens after the store's lock
    /// is released, as a Redis reader task would.
    pub fn publish(&self, channel: &str, message: &str) -> usize {
        self.publish_bytes(channel.as_bytes(), message.as_bytes())
    }

    fn publish_bytes(&self, channel: &[u8], message: &[u8]) -> usize {
        let channel = text(channel);
        let sinks: Vec<Arc<dyn NoticeSink>> = {
            let state = self.state();
            if state.faults.drop_notices {
                return 0;
            }
            state
                .connections
                .iter()
                .filter_map(Weak::upgrade)
                .filter_map(|c| {
                    let c = c.lock().unwrap_or_else(PoisonError::into_inner);
                    if !c.channels.contains(&channel) {
                        return None;
                    }
                    c.sink.clone()
                })
                .collect()
        };
        for sink in &sinks {
            sink.deliver(Notice::Message {
                channel: Channel::new(channel.as_str()),
                payload: message.to_vec(),
            });
        }
        sinks.len()
    }

    /// Delivers what a script or command published, once the store's lock
    /// is released.
    pub(crate) fn deliver(&self, published: Vec<Published>) {
        for message in published {
            self.publish_bytes(&message.channel, &message.message);
        }
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
        self.deliver(published);
        reply
    }

    /// Runs one command as another client would send it (`args[0]` names
    /// it; the commands the lock scripts use, listed in the module docs),
    /// without injected faults.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// use lock_testkit::memory::ScriptReply;
    /// let server = lock_testkit::InMemoryServer::new();
    /// server.command(&["HSET", "rw", "mode", "read"]);
    /// assert_eq!(server.command(&["HGET", "rw", "mode"]), ScriptReply::Bulk(b"read".to_vec()));
    /// # }
    /// ```
    pub fn command(&self, args: &[&str]) -> ScriptReply {
        let (reply, published) = self.state().command(&words(args));
        self.deliver(published);
        reply
    }

    /// `SCRIPT FLUSH`: the store forgets every loaded script, as after a
    /// restart or failover; clients load them again on `NOSCRIPT`.
    pub fn flush_scripts(&self) {
        self.state().scripts.flush();
    }

    /// How many connections are subscribed to `channel` (`PUBSUB NUMSUB`).
    pub fn subscribers(&self, channel: &str) -> usize {
        subscribers(&self.state().connections, channel)
    }

    /// Tells every connection its notices may have been lost
    /// ([`Notice::Reset`]), as a Redis transport does after
    /// re-establishing its pub/sub connection.
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
        self.command(&["SET", key, value]);
    }

    /// `GET key`; `None` when missing or not a string.
    pub fn get_string(&self, key: &str) -> Option<String> {
        match self.command(&["GET", key]) {
            ScriptReply::Bulk(value) => Some(text(&value)),
            _ => None,
        }
    }

    /// `HGETALL key`, fields sorted, values read as counts (0 when not an
    /// integer); empty when missing or not a hash.
    pub fn hash(&self, key: &str) -> Vec<(String, i64)> {
        let ScriptReply::Array(items) = self.command(&["HGETALL", key]) else {
            return Vec::new();
        };
        let mut fields: Vec<(String, i64)> = items
            .chunks(2)
            .filter_map(|pair| match pair {
                [ScriptReply::Bulk(field), ScriptReply::Bulk(value)] => {
                    Some((text(field), text(value).parse().unwrap_or(0)))
                }
                _ => None,
            })
            .collect();
        fields.sort();
        fields
    }

    /// `HSET key field value` then `PEXPIRE key ms` when given: a lock
    /// written by another client (e.g. Redisson).
    ///
    /// # Errors
    /// [`LockError::WrongType`] when `key` is not a hash.
    pub fn hset(&self, key: &str, field: &str, value: i64, pexpire_ms: Option<u64>) -> Result<()> {
        if self
            .command(&["HSET", key, field, &value.to_string()])
            .is_error()
        {
            return Err(LockError::WrongType { key: key.into() });
        }
        if let Some(ms) = pexpire_ms {
            self.command(&["PEXPIRE", key, &ms.to_string()]);
        }
        Ok(())
    }

    /// `PTTL key`.
    pub fn pttl(&self, key: &str) -> i64 {
        match self.command(&["PTTL", key]) {
            ScriptReply::Int(ms) => ms,
            _ => -2,
        }
    }

    /// `DEL key` without publishing anything.
    pub fn del(&self, key: &str) -> bool {
        self.command(&["DEL", key]) == ScriptReply::Int(1)
    }

    /// Every live key, sorted (`KEYS *`).
    pub fn keys(&self) -> Vec<String> {
        self.state()
            .keys
            .live_keys()
            .iter()
            .map(|k| text(k))
            .collect()
    }

    /// `LRANGE key 0 -1` (a fair lock's queue).
    pub fn list(&self, key: &str) -> Vec<String> {
        match self.command(&["LRANGE", key, "0", "-1"]) {
            ScriptReply::Array(items) => items
                .iter()
                .filter_map(|item| match item {
                    ScriptReply::Bulk(value) => Some(text(value)),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        }
    }

    /// `ZSCORE key member`, truncated to an integer.
    pub fn zscore(&self, key: &str, member: &str) -> Option<i64> {
        match self.command(&["ZSCORE", key, member]) {
            ScriptReply::Bulk(score) => text(&score).parse::<f64>().ok().map(|s| s as i64),
            _ => None,
        }
    }

    /// `ZADD key score member` (e.g. to age a waiter's deadline).
    pub fn zadd(&self, key: &str, score: i64, member: &str) {
        self.command(&["ZADD", key, &score.to_string(), member]);
    }

    /// `RPUSH key value`.
    pub fn rpush(&self, key: &str, value: &str) {
        self.command(&["RPUSH", key, value]);
    }

    /// The store's clock, milliseconds since the Unix epoch (Redis `TIME`).
    pub fn now_ms(&self) -> i64 {
        self.state().now_ms()
    }

    /// Steps the store's clock (`TIME`) by `by_ms` (back when negative),
    /// as a store whose clock differs from its clients' does: a client
    /// made before or after the step starts by estimating the store's time
    /// from its own clock, which is then that far off. Keys keep the time
    /// to live they had (the in-memory store keeps expiry by tokio's
    /// monotonic clock), so step before writing keys whose expiry matters.
    pub fn step_clock(&self, by_ms: i64) {
        self.state().epoch_ms += by_ms;
    }

    // ---- fault injection ----

    /// While `true`, every transport call fails with a retryable
    /// "unavailable" error, as with a server that is down.
    pub fn set_down(&self, down: bool) {
        self.state().faults.down = down;
    }

    /// Every transport call waits `latency` (tokio time) before it runs.
    pub fn set_latency(&self, latency: Duration) {
        self.state().faults.latency = latency;
    }

    /// The next `n` transport calls fail with a retryable error without
    /// running.
    pub fn fail_next(&self, n: u32) {
        self.state().faults.fail_before = n;
    }

    /// The next `n` transport calls run, then report a retryable error, as
    /// when a reply is lost: tests that retries never count twice. (A call
    /// whose script answered an error keeps its reply.)
    pub fn lose_next_replies(&self, n: u32) {
        self.state().faults.fail_after = n;
    }

    /// The next `n` transport calls are held on the way, as on a stuck
    /// connection: the caller gets a timeout error (after the
    /// [command timeout](InMemoryServer::set_command_timeout) when one is
    /// set, else at once) while the call runs on the store `delay` later,
    /// whatever the store's faults are then. Tests that a request arriving
    /// after its caller gave up (and perhaps retried) never applies twice,
    /// and that one arriving past its deadline is refused.
    pub fn delay_next(&self, n: u32, delay: Duration) {
        let mut state = self.state();
        state.faults.delayed = n;
        state.faults.delay = delay;
    }

    /// Bounds every transport call as a Redis transport's command timeout
    /// does: a call whose [latency](InMemoryServer::set_latency) is longer
    /// fails with a timeout error once `timeout` has passed, without running
    /// (its request was lost on the way, as in a network partition). The
    /// transport reports it as its
    /// [`command_timeout`](lock_redis::lock_core::backend::Connection::command_timeout), which a
    /// client checks when it is made: set it before making clients. `None`
    /// (the default): calls wait out any latency.
    pub fn set_command_timeout(&self, timeout: Option<Duration>) {
        self.state().faults.command_timeout = timeout;
    }

    /// While `Some(reply)`, every script and write command answers the
    /// error reply `reply` (code first: `"NOREPLICAS Not enough good
    /// replicas to write."`, `"MISCONF ..."`) without running, as a Redis
    /// master refusing writes does (`min-replicas-to-write` unmet, a failed
    /// RDB save); reads still answer. The reply reaches the kinds through
    /// the same error mapping as a real server's (`lock_script::error`).
    /// `None` ends the refusal.
    pub fn refuse_writes(&self, reply: Option<&str>) {
        self.state().faults.refuse_writes = reply.map(str::to_owned);
    }

    /// While `true`, published notices reach nobody (a pub/sub outage).
    pub fn set_drop_notices(&self, drop: bool) {
        self.state().faults.drop_notices = drop;
    }
}
