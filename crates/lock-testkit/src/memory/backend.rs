//! [`InMemoryBackend`]: the lock scripts, run on the in-memory keyspace.
//!
//! Each operation below is the in-memory twin of one Lua script of
//! `lock-redis` and must stay observably identical to it: same keys, same
//! replies, same effect on hold counts, expiry, latches and the fencing
//! counter.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use futures::future::{self, BoxFuture, FutureExt};
use lock_core::layout::UNLOCK_MESSAGE;
use lock_core::{
    AcquireOutcome, AcquireRequest, Holder, LockBackend, LockError, LockInfo, LockName, NoticeSink,
    ReleaseOutcome, ReleaseRequest, RenewTarget, Result, Topic,
};

use super::keyspace::WrongType;
use super::server::{Connection, InMemoryServer, State};

/// One client's connection to an [`InMemoryServer`].
pub struct InMemoryBackend {
    server: InMemoryServer,
    connection: Arc<Connection>,
    closed: AtomicBool,
}

impl std::fmt::Debug for InMemoryBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InMemoryBackend").finish_non_exhaustive()
    }
}

/// What a script wants published once the store's lock is released.
type Publish = Option<String>;

impl InMemoryBackend {
    pub(crate) fn new(server: InMemoryServer, connection: Arc<Connection>) -> Self {
        Self {
            server,
            connection,
            closed: AtomicBool::new(false),
        }
    }

    /// Runs one script atomically, with the server's injected faults.
    async fn run<T>(&self, script: impl FnOnce(&mut State) -> Result<(T, Publish)>) -> Result<T> {
        if self.closed.load(Ordering::Acquire) {
            return Err(LockError::Closed);
        }
        let latency = self.server.state().faults.latency;
        if !latency.is_zero() {
            tokio::time::sleep(latency).await;
        }
        let (result, lost_reply) = {
            let mut state = self.server.state();
            if state.faults.down {
                return Err(LockError::unavailable("in-memory server is down", None));
            }
            if state.faults.fail_before > 0 {
                state.faults.fail_before -= 1;
                return Err(LockError::unavailable("injected failure", None));
            }
            let result = script(&mut state);
            let lost_reply = result.is_ok() && state.faults.fail_after > 0;
            if lost_reply {
                state.faults.fail_after -= 1;
            }
            (result, lost_reply)
        };
        let (value, publish) = result?;
        if let Some(channel) = publish {
            self.server.publish(&channel, UNLOCK_MESSAGE);
        }
        if lost_reply {
            return Err(LockError::unavailable("injected lost reply", None));
        }
        Ok(value)
    }
}

fn wrong_type(key: &str) -> impl FnOnce(WrongType) -> LockError + '_ {
    move |WrongType| LockError::WrongType {
        key: key.to_owned(),
    }
}

fn ttl_of(pttl: i64) -> Option<Duration> {
    u64::try_from(pttl).ok().map(Duration::from_millis)
}

#[async_trait]
impl LockBackend for InMemoryBackend {
    async fn try_acquire(&self, req: &AcquireRequest) -> Result<AcquireOutcome> {
        let layout = self.server.layout().clone();
        self.run(|state| {
            let keys = &mut state.keys;
            let lock = layout.lock_key(&req.name);
            let latch = layout.acquire_latch(&req.name, &req.request_id.to_string());
            let field = req.owner.field();
            if req.latch_ttl_ms > 0 {
                if let Some(token) = keys.get(&latch).map_err(wrong_type(&lock))? {
                    let token: u64 = token.parse().unwrap_or(0);
                    return Ok((acquired(token), None));
                }
            }
            if !keys.exists(&lock) || keys.hexists(&lock, &field).map_err(wrong_type(&lock))? {
                keys.hincrby(&lock, &field, 1).map_err(wrong_type(&lock))?;
                keys.pexpire(&lock, req.lease_ms);
                let token = if req.fenced {
                    keys.incr(&layout.token_key(&req.name))
                        .map_err(wrong_type(&lock))? as u64
                } else {
                    0
                };
                if req.latch_ttl_ms > 0 {
                    keys.set(&latch, token.to_string(), Some(req.latch_ttl_ms));
                }
                return Ok((acquired(token), None));
            }
            let ttl = ttl_of(keys.pttl(&lock));
            Ok((AcquireOutcome::Held { ttl }, None))
        })
        .await
    }

    async fn release(&self, req: &ReleaseRequest) -> Result<ReleaseOutcome> {
        let layout = self.server.layout().clone();
        self.run(|state| {
            let keys = &mut state.keys;
            let lock = layout.lock_key(&req.name);
            let latch = layout.unlock_latch(&req.name, &req.request_id.to_string());
            let field = req.owner.field();
            if req.latch_ttl_ms > 0 {
                if let Some(v) = keys.get(&latch).map_err(wrong_type(&lock))? {
                    let outcome = if v == "1" {
                        ReleaseOutcome::Released
                    } else {
                        ReleaseOutcome::StillHeld
                    };
                    return Ok((outcome, None));
                }
            }
            if !keys.hexists(&lock, &field).map_err(wrong_type(&lock))? {
                return Ok((ReleaseOutcome::NotHeld, None));
            }
            let left = keys.hincrby(&lock, &field, -1).map_err(wrong_type(&lock))?;
            let (outcome, publish, latched) = if left > 0 {
                keys.pexpire(&lock, req.lease_ms);
                (ReleaseOutcome::StillHeld, None, "0")
            } else {
                keys.del(&lock);
                (
                    ReleaseOutcome::Released,
                    Some(layout.channel(&req.name)),
                    "1",
                )
            };
            if req.latch_ttl_ms > 0 {
                keys.set(&latch, latched.to_owned(), Some(req.latch_ttl_ms));
            }
            Ok((outcome, publish))
        })
        .await
    }

    async fn renew(&self, targets: &[RenewTarget], lease_ms: u64) -> Result<Vec<Result<bool>>> {
        let layout = self.server.layout().clone();
        self.run(|state| {
            let keys = &mut state.keys;
            let results = targets
                .iter()
                .map(|t| {
                    let lock = layout.lock_key(&t.name);
                    let held = keys.type_of(&lock) == "hash"
                        && keys.hexists(&lock, &t.owner.field()).unwrap_or(false);
                    if held {
                        keys.pexpire(&lock, lease_ms);
                    }
                    Ok(held)
                })
                .collect();
            Ok((results, None))
        })
        .await
    }

    async fn force_unlock(&self, name: &LockName) -> Result<bool> {
        let layout = self.server.layout().clone();
        self.run(|state| {
            let keys = &mut state.keys;
            let lock = layout.lock_key(name);
            match keys.type_of(&lock) {
                "none" => Ok((false, None)),
                "hash" => {
                    keys.del(&lock);
                    Ok((true, Some(layout.channel(name))))
                }
                _ => Err(LockError::WrongType { key: lock }),
            }
        })
        .await
    }

    async fn inspect(&self, name: &LockName) -> Result<LockInfo> {
        let layout = self.server.layout().clone();
        self.run(|state| {
            let keys = &mut state.keys;
            let lock = layout.lock_key(name);
            let holders = keys
                .hgetall(&lock)
                .map_err(wrong_type(&lock))?
                .into_iter()
                .map(|(field, count)| Holder {
                    field,
                    count: count.max(0) as u64,
                })
                .collect();
            let ttl = ttl_of(keys.pttl(&lock));
            Ok((
                LockInfo {
                    holders,
                    ttl,
                    queue: Vec::new(),
                },
                None,
            ))
        })
        .await
    }

    fn set_notice_sink(&self, sink: Arc<dyn NoticeSink>) {
        self.connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .sink = Some(sink);
    }

    fn subscribe(&self, topic: &Topic) -> BoxFuture<'static, Result<()>> {
        let channel = self.server.layout().topic_channel(topic);
        self.connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .channels
            .insert(channel, topic.clone());
        future::ready(Ok(())).boxed()
    }

    fn unsubscribe(&self, topic: &Topic) {
        let channel = self.server.layout().topic_channel(topic);
        self.connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .channels
            .remove(&channel);
    }

    async fn close(&self) {
        self.closed.store(true, Ordering::Release);
        let mut connection = self
            .connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        connection.channels.clear();
        connection.sink = None;
    }
}

fn acquired(token: u64) -> AcquireOutcome {
    AcquireOutcome::Acquired {
        fencing_token: (token > 0).then_some(token),
    }
}
