//! [`InMemoryBackend`]: one client's connection; [`InMemoryKind`]: a lock
//! kind bound to it, running the scripts of [`super::scripts`] atomically,
//! with the server's injected faults.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use futures::future::{self, BoxFuture, FutureExt};
use lock_core::{
    AcquireOutcome, AcquireRequest, Channel, Connection as LockConnection, ExclusiveKind, FairKind,
    FairLockInfo, LockError, LockInfo, LockName, NoticeSink, Owner, ReleaseOutcome, ReleaseRequest,
    RenewTarget, Result, Wake,
};
use lock_script::layout::UNLOCK_MESSAGE;

use super::scripts::{self, Ctx, Publish};
use super::server::{Connection, InMemoryServer, State};

/// One client's connection to an [`InMemoryServer`], shared by its kinds.
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

impl InMemoryBackend {
    pub(crate) fn new(server: InMemoryServer, connection: Arc<Connection>) -> Self {
        Self {
            server,
            connection,
            closed: AtomicBool::new(false),
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

/// A lock kind (reentrant or fair) bound to one [`InMemoryBackend`].
pub struct InMemoryKind {
    backend: Arc<InMemoryBackend>,
    fair: bool,
}

impl InMemoryKind {
    /// The reentrant kind on `backend`.
    pub fn reentrant(backend: Arc<InMemoryBackend>) -> Self {
        Self {
            backend,
            fair: false,
        }
    }

    /// The fair kind on `backend`.
    pub fn fair(backend: Arc<InMemoryBackend>) -> Self {
        Self {
            backend,
            fair: true,
        }
    }
}

#[async_trait]
impl ExclusiveKind for InMemoryKind {
    async fn try_acquire(&self, req: &AcquireRequest) -> Result<AcquireOutcome> {
        if self.fair {
            self.backend.run(|cx| scripts::fair_acquire(cx, req)).await
        } else {
            self.backend.run(|cx| scripts::acquire(cx, req)).await
        }
    }

    async fn release(&self, req: &ReleaseRequest) -> Result<ReleaseOutcome> {
        if self.fair {
            self.backend.run(|cx| scripts::fair_release(cx, req)).await
        } else {
            self.backend.run(|cx| scripts::release(cx, req)).await
        }
    }

    async fn renew(&self, targets: &[RenewTarget], lease_ms: u64) -> Result<Vec<Result<bool>>> {
        self.backend
            .run(|cx| Ok((scripts::renew(cx, targets, lease_ms), None)))
            .await
    }

    async fn force_unlock(&self, name: &LockName) -> Result<bool> {
        if self.fair {
            self.backend
                .run(|cx| scripts::fair_force_unlock(cx, name))
                .await
        } else {
            self.backend.run(|cx| scripts::force_unlock(cx, name)).await
        }
    }

    async fn inspect(&self, name: &LockName) -> Result<LockInfo> {
        if self.fair {
            Ok(self.inspect_fair(name).await?.lock)
        } else {
            self.backend.run(|cx| scripts::inspect(cx, name)).await
        }
    }

    async fn fencing_token(&self, name: &LockName) -> Result<Option<u64>> {
        self.backend.run(|cx| scripts::token(cx, name)).await
    }

    fn channel(&self, name: &LockName, owner: &Owner) -> Channel {
        let layout = self.backend.server.layout();
        Channel::new(if self.fair {
            layout.waiter_channel(name, owner)
        } else {
            layout.channel(name)
        })
    }

    fn wake(&self, payload: &[u8]) -> Option<Wake> {
        lock_script::wake(payload)
    }

    fn queues_waiters(&self) -> bool {
        self.fair
    }

    async fn leave_queue(&self, name: &LockName, owner: &Owner) -> Result<()> {
        if !self.fair {
            return Ok(());
        }
        let field = owner.field();
        self.backend
            .run(|cx| scripts::leave_queue(cx, name, &field))
            .await
    }
}

#[async_trait]
impl FairKind for InMemoryKind {
    async fn inspect_fair(&self, name: &LockName) -> Result<FairLockInfo> {
        self.backend.run(|cx| scripts::fair_inspect(cx, name)).await
    }
}

#[async_trait]
impl LockConnection for InMemoryBackend {
    fn command_timeout(&self) -> Option<Duration> {
        self.server.state().faults.command_timeout
    }

    fn set_notice_sink(&self, sink: Arc<dyn NoticeSink>) {
        self.connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .sink = Some(sink);
    }

    fn subscribe(&self, channel: &Channel) -> BoxFuture<'static, Result<()>> {
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
