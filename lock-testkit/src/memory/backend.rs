//! [`InMemoryBackend`]: one client's connection; runs the scripts of
//! [`super::scripts`] atomically, with the server's injected faults.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use futures::future::{self, BoxFuture, FutureExt};
use lock_core::layout::UNLOCK_MESSAGE;
use lock_core::{
    AcquireOutcome, AcquireRequest, LockBackend, LockError, LockInfo, LockKind, LockName,
    NoticeSink, Owner, ReleaseOutcome, ReleaseRequest, RenewTarget, Result, Topic,
};

use super::scripts::{self, Ctx, Publish};
use super::server::{Connection, InMemoryServer, State};

/// One client's connection to an [`InMemoryServer`], reentrant or fair.
pub struct InMemoryBackend {
    server: InMemoryServer,
    connection: Arc<Connection>,
    closed: AtomicBool,
    kind: LockKind,
}

impl std::fmt::Debug for InMemoryBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InMemoryBackend").finish_non_exhaustive()
    }
}

impl InMemoryBackend {
    pub(crate) fn new(server: InMemoryServer, connection: Arc<Connection>, kind: LockKind) -> Self {
        Self {
            server,
            connection,
            closed: AtomicBool::new(false),
            kind,
        }
    }

    /// Runs one script atomically, with the server's injected faults.
    async fn run<T>(&self, script: impl FnOnce(&mut Ctx<'_>) -> Result<(T, Publish)>) -> Result<T> {
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
        let (result, lost_reply) = {
            let mut state = self.server.state();
            if state.faults.down {
                return Err(LockError::unavailable("in-memory server is down", None));
            }
            if state.faults.fail_before > 0 {
                state.faults.fail_before -= 1;
                return Err(LockError::unavailable("injected failure", None));
            }
            let now_ms = state.now_ms();
            let State { keys, .. } = &mut *state;
            let mut cx = Ctx {
                keys,
                layout: self.server.layout(),
                now_ms,
            };
            let result = script(&mut cx);
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

#[async_trait]
impl LockBackend for InMemoryBackend {
    async fn try_acquire(&self, req: &AcquireRequest) -> Result<AcquireOutcome> {
        match self.kind {
            LockKind::Fair => self.run(|cx| scripts::fair_acquire(cx, req)).await,
            _ => self.run(|cx| scripts::acquire(cx, req)).await,
        }
    }

    async fn release(&self, req: &ReleaseRequest) -> Result<ReleaseOutcome> {
        match self.kind {
            LockKind::Fair => self.run(|cx| scripts::fair_release(cx, req)).await,
            _ => self.run(|cx| scripts::release(cx, req)).await,
        }
    }

    async fn renew(&self, targets: &[RenewTarget], lease_ms: u64) -> Result<Vec<Result<bool>>> {
        self.run(|cx| Ok((scripts::renew(cx, targets, lease_ms), None)))
            .await
    }

    async fn force_unlock(&self, name: &LockName) -> Result<bool> {
        match self.kind {
            LockKind::Fair => self.run(|cx| scripts::fair_force_unlock(cx, name)).await,
            _ => self.run(|cx| scripts::force_unlock(cx, name)).await,
        }
    }

    async fn inspect(&self, name: &LockName) -> Result<LockInfo> {
        match self.kind {
            LockKind::Fair => self.run(|cx| scripts::fair_inspect(cx, name)).await,
            _ => self.run(|cx| scripts::inspect(cx, name)).await,
        }
    }

    fn kind(&self) -> LockKind {
        self.kind
    }

    fn command_timeout(&self) -> Option<Duration> {
        self.server.state().faults.command_timeout
    }

    async fn leave_queue(&self, name: &LockName, owner: &Owner) -> Result<()> {
        match self.kind {
            LockKind::Fair => {
                let field = owner.field();
                self.run(|cx| scripts::leave_queue(cx, name, &field)).await
            }
            _ => Ok(()),
        }
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
