//! [`MemoryTransport`]: one client's connection to an [`InMemoryServer`],
//! as a [`Transport`]: the kinds' own scripts run on the store with
//! `EVALSHA`, with the server's injected faults.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use futures::future::{self, BoxFuture, FutureExt};
use lock_redis::lock_core::backend::{self, Channel, NoticeSink};
use lock_redis::{LockError, Result};
use lock_script::error::from_redis;
use lock_script::{Body, ScriptCall, Transport};
use redis::Value;

use super::commands::Published;
use super::reply::ScriptReply;
use super::scripts::NOSCRIPT;
use super::server::{Connection, InMemoryServer, State};
use super::source::script_source;

/// One client's connection to an [`InMemoryServer`]: a [`Transport`] that
/// runs scripts as a single Redis node without replicas does.
///
/// - [`Transport::eval`] sends `EVALSHA`; a script the store does not hold
///   ([`InMemoryServer::flush_scripts`]) is loaded and run once more, as
///   `lock_redis::SingleNode` does on `NOSCRIPT`.
/// - [`Transport::eval_and_wait`] then waits as `WAIT` does on a node
///   without replicas: the whole timeout, and no replica acknowledges.
/// - [`Transport::eval_batch`] runs its calls back to back, as one round
///   trip (one call for the injected faults).
/// - Scripts publish with `PUBLISH`; messages reach subscribed connections
///   after the store's lock is released.
///
/// Every call first meets the server's injected faults: latency, the
/// command timeout, down, failures before the call runs, calls held to run
/// late, and lost replies after it ran. The counted faults (failures, held
/// calls, lost replies) skip the clients' writes of their own records
/// (`lock_script::clients`): those run on a timer of their own, and a test
/// that injects `n` faults for the calls it makes must see all `n` there.
pub struct MemoryTransport {
    server: InMemoryServer,
    connection: Arc<Connection>,
    closed: AtomicBool,
}

impl std::fmt::Debug for MemoryTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryTransport")
            .field("closed", &self.closed.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl MemoryTransport {
    /// Cuts the connection: every later call fails with
    /// [`LockError::Closed`] without reaching the store, and its
    /// subscriptions are gone. A closed client's transport, and a crashed
    /// one's ([`InMemoryServer::crash`]): from the store's side the two
    /// look alike, but a crashed client gave nothing back first.
    pub(crate) fn cut(&self) {
        self.closed.store(true, Ordering::Release);
        let mut connection = self
            .connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        connection.channels.clear();
        connection.sink = None;
    }

    pub(crate) fn new(server: InMemoryServer, connection: Arc<Connection>) -> Self {
        Self {
            server,
            connection,
            closed: AtomicBool::new(false),
        }
    }

    /// One round trip with the server's injected faults: `run` sees the
    /// store's state under its lock and returns its reply, what it
    /// published, and whether the reply is a success (only those can be
    /// lost: an error reply comes back). A call held to run late
    /// ([`InMemoryServer::delay_next`]) runs `late` instead, which owns
    /// what it needs: it outlives the caller.
    /// `counted`: whether the counted faults apply (see the type's docs).
    async fn round_trip<T>(
        &self,
        counted: bool,
        run: impl FnOnce(&mut State) -> (T, Vec<Published>, bool),
        late: impl FnOnce() -> Late,
    ) -> Result<T> {
        if self.closed.load(Ordering::Acquire) {
            return Err(LockError::Closed);
        }
        let (latency, timeout) = {
            let faults = &self.server.state().faults;
            (faults.latency, faults.command_timeout)
        };
        if let Some(limit) = timeout.filter(|limit| latency > *limit) {
            tokio::time::sleep(limit).await;
            return Err(LockError::timeout(format!(
                "in-memory server: no reply within the command timeout of {limit:?}"
            )));
        }
        if !latency.is_zero() {
            tokio::time::sleep(latency).await;
        }
        let ran = {
            let mut state = self.server.state();
            if state.faults.down {
                return Err(LockError::unavailable("in-memory server is down", None));
            }
            if counted && state.faults.fail_before > 0 {
                state.faults.fail_before -= 1;
                return Err(LockError::unavailable("injected failure", None));
            }
            if counted && state.faults.delayed > 0 {
                state.faults.delayed -= 1;
                Err(state.faults.delay)
            } else {
                let (reply, published, success) = run(&mut state);
                let lost_reply = counted && success && state.faults.fail_after > 0;
                if lost_reply {
                    state.faults.fail_after -= 1;
                }
                Ok((reply, published, lost_reply))
            }
        };
        let (reply, published, lost_reply) = match ran {
            Ok(ran) => ran,
            Err(delay) => {
                self.run_late(delay, late());
                if let Some(limit) = timeout {
                    tokio::time::sleep(limit).await;
                }
                return Err(LockError::timeout(
                    "in-memory server: injected delayed request, no reply",
                ));
            }
        };
        self.server.deliver(published);
        if lost_reply {
            return Err(LockError::unavailable("injected lost reply", None));
        }
        Ok(reply)
    }

    /// Runs `late` on the store once `delay` has passed, as a request held
    /// on a stuck connection arrives.
    fn run_late(&self, delay: Duration, late: Late) {
        let server = self.server.clone();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            let published = late(&mut server.state());
            server.deliver(published);
        });
    }
}

/// A call held on the way: it runs on the store's state when it arrives,
/// its reply going nowhere.
type Late = Box<dyn FnOnce(&mut State) -> Vec<Published> + Send>;

/// What a late call runs, owned.
enum LateBody {
    Script(redis::Script),
    Command(&'static str),
}

/// `calls`, owned, as one late arrival (a call's reply is dropped: its
/// caller was told it failed).
fn late(calls: &[ScriptCall<'_>]) -> Late {
    let calls: Vec<(LateBody, Vec<String>, Vec<String>)> = calls
        .iter()
        .map(|call| {
            let body = match call.body {
                Body::Script(script) => LateBody::Script(script.clone()),
                Body::Command(command) => LateBody::Command(command),
            };
            (body, call.keys.clone(), call.args.clone())
        })
        .collect();
    Box::new(move |state| {
        let mut published = Vec::new();
        for (body, keys, args) in calls {
            let call = match &body {
                LateBody::Script(script) => ScriptCall::new(script, keys, args),
                LateBody::Command(command) => ScriptCall::command(command, keys, args),
            };
            published.extend(run_call(state, &call).1);
        }
        published
    })
}

/// Runs `call` on `state`: a script as `EVALSHA` (on `NOSCRIPT` loading it,
/// `SCRIPT LOAD`, and running it once more), a plain command as sent.
/// While the store refuses writes ([`InMemoryServer::refuse_writes`]),
/// a script or write command answers the refusal without running.
fn run_call(state: &mut State, call: &ScriptCall<'_>) -> (ScriptReply, Vec<Published>) {
    let read = matches!(call.body, Body::Command(command) if READS.iter().any(|r| r.eq_ignore_ascii_case(command)));
    if let Some(refusal) = state.faults.refuse_writes.clone().filter(|_| !read) {
        return (ScriptReply::Error(refusal), Vec::new());
    }
    let keys: Vec<Vec<u8>> = call.keys.iter().map(|k| k.as_bytes().to_vec()).collect();
    let args: Vec<Vec<u8>> = call.args.iter().map(|a| a.as_bytes().to_vec()).collect();
    let script = match call.body {
        Body::Script(script) => script,
        Body::Command(command) => {
            let words: Vec<Vec<u8>> = std::iter::once(command.as_bytes().to_vec())
                .chain(keys)
                .chain(args)
                .collect();
            return state.command(&words);
        }
    };
    let sha = script.get_hash();
    let first = state.eval_sha(sha, &keys, &args);
    if !matches!(&first.0, ScriptReply::Error(e) if e == NOSCRIPT) {
        return first;
    }
    match script_source(script) {
        Ok(source) => {
            state.scripts.load(&source);
            state.eval_sha(sha, &keys, &args)
        }
        Err(e) => (ScriptReply::Error(format!("ERR {e}")), Vec::new()),
    }
}

/// The commands a master refusing writes still runs. (Scripts are all
/// refused: the kinds' scripts write, and Redis refuses a script that may
/// write at its first write, before anything was written.)
const READS: [&str; 6] = ["GET", "PTTL", "EXISTS", "HGETALL", "TIME", "PING"];

/// A script's reply as the kinds see it from any transport.
fn decode(reply: ScriptReply, first_key: &str) -> Result<Value> {
    reply.into_redis().map_err(|e| from_redis(&e, first_key))
}

#[async_trait]
impl Transport for MemoryTransport {
    async fn eval(&self, call: ScriptCall<'_>) -> Result<Value> {
        let counted = !lock_script::clients::is_client_key(call.first_key());
        let reply = self
            .round_trip(
                counted,
                |state| {
                    let (reply, published) = run_call(state, &call);
                    let success = !reply.is_error();
                    (reply, published, success)
                },
                || late(std::slice::from_ref(&call)),
            )
            .await?;
        decode(reply, call.first_key())
    }

    async fn eval_and_wait(
        &self,
        call: ScriptCall<'_>,
        replicas: u32,
        timeout: Duration,
    ) -> Result<(Value, u32)> {
        let _ = replicas;
        let value = self.eval(call).await?;
        // `WAIT` on a node without replicas blocks for its whole timeout.
        tokio::time::sleep(timeout).await;
        Ok((value, 0))
    }

    async fn eval_batch(&self, calls: Vec<ScriptCall<'_>>) -> Result<Vec<Result<Value>>> {
        if calls.is_empty() {
            return if self.closed.load(Ordering::Acquire) {
                Err(LockError::Closed)
            } else {
                Ok(Vec::new())
            };
        }
        let replies = self
            .round_trip(
                true,
                |state| {
                    let mut published = Vec::new();
                    let replies: Vec<ScriptReply> = calls
                        .iter()
                        .map(|call| {
                            let (reply, sent) = run_call(state, call);
                            published.extend(sent);
                            reply
                        })
                        .collect();
                    (replies, published, true)
                },
                || late(&calls),
            )
            .await?;
        Ok(replies
            .into_iter()
            .zip(&calls)
            .map(|(reply, call)| decode(reply, call.first_key()))
            .collect())
    }

    fn publish_command(&self) -> &'static str {
        "PUBLISH"
    }
}

/// The engine's half: the connection's subscriptions on the store.
#[async_trait]
impl backend::Connection for MemoryTransport {
    fn set_notice_sink(&self, sink: Arc<dyn NoticeSink>) {
        self.connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .sink = Some(sink);
    }

    /// Registers the subscription at once; the store confirms it at once.
    fn subscribe(&self, channel: &Channel) -> BoxFuture<'static, Result<()>> {
        if self.closed.load(Ordering::Acquire) {
            return future::ready(Err(LockError::Closed)).boxed();
        }
        self.connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .channels
            .insert(channel.as_str().to_owned());
        future::ready(Ok(())).boxed()
    }

    fn unsubscribe(&self, channel: &Channel) {
        self.connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .channels
            .remove(channel.as_str());
    }

    /// The server's [command timeout](InMemoryServer::set_command_timeout).
    fn command_timeout(&self) -> Option<Duration> {
        self.server.state().faults.command_timeout
    }

    /// Cuts the connection: later calls fail with [`LockError::Closed`]
    /// without reaching the store, and its subscriptions are gone.
    async fn close(&self) {
        self.cut();
    }
}
