//! [`FairRedisBackend`]: the fair lock's scripts over a [`Transport`].

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::future::BoxFuture;
use lock_core::layout::UNLOCK_MESSAGE;
use lock_core::{
    AcquireOutcome, AcquireRequest, KeyLayout, LockBackend, LockInfo, LockKind, LockName,
    NoticeSink, Owner, ReleaseOutcome, ReleaseRequest, RenewTarget, Result, Topic,
};
use lock_redis::backend::check_lease;
use lock_redis::scripts::ScriptCall;
use lock_redis::{RedisBackend, RedisConfig, Transport};

use crate::replies;
use crate::scripts;

/// The fair (FIFO) lock backend for Redis: runs the fair scripts (see the
/// crate docs) through a [`Transport`].
///
/// Everything the fair lock shares with the reentrant one — renewal (same
/// lock hash, same script), subscriptions, notices, error mapping, script
/// loading — is a [`RedisBackend`] underneath, so both behave the same way
/// on every transport. Its locks are of kind [`LockKind::Fair`]: a
/// [`lock_core::LockClient`] made on it queues its waiters and waits on
/// each waiter's own channel ([`Topic::Waiter`]).
///
/// One backend is one client's connection to one deployment; share it (it
/// is `Send + Sync`) rather than making one per task.
#[derive(Debug)]
pub struct FairRedisBackend {
    redis: RedisBackend,
}

impl FairRedisBackend {
    /// Connects to one Redis server; see [`RedisBackend::connect`], which
    /// this is built on. The fair scripts are loaded on their first use.
    ///
    /// ```no_run
    /// # async fn demo() -> lock_fair::Result<()> {
    /// use lock_fair::{FairRedisBackend, RedisConfig};
    ///
    /// let backend = FairRedisBackend::connect(RedisConfig::new("redis://127.0.0.1:6379/")).await?;
    /// # drop(backend); Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`](lock_core::LockError::InvalidArgument) for a bad configuration (before any
    /// I/O) or rejected credentials; a retryable [`LockError::Unavailable`](lock_core::LockError::Unavailable)
    /// when the server cannot be reached within the command timeout.
    ///
    /// # Cancel safety
    /// Dropping the future drops the half-made backend and its connections.
    pub async fn connect(config: RedisConfig) -> Result<Self> {
        Ok(Self {
            redis: RedisBackend::connect(config).await?,
        })
    }

    /// A backend over any transport (e.g. a cluster transport), with the
    /// given key layout. Installs the backend's pub/sub handler on the
    /// transport.
    pub fn with_transport(transport: Arc<dyn Transport>, layout: KeyLayout) -> Self {
        Self {
            redis: RedisBackend::with_transport(transport, layout),
        }
    }

    /// The key layout (prefix) in use.
    pub fn layout(&self) -> &KeyLayout {
        self.redis.layout()
    }

    /// The transport the scripts run on.
    pub fn transport(&self) -> &Arc<dyn Transport> {
        self.redis.transport()
    }

    fn publish_command(&self) -> String {
        self.transport().publish_command().to_owned()
    }
}

#[async_trait]
impl LockBackend for FairRedisBackend {
    /// Runs the fair `acquire.lua`: takes the lock when it is free and
    /// nobody is queued before `req.owner`, re-enters it for its holder, or
    /// else (with [`AcquireRequest::queue_ms`]) joins the queue or refreshes
    /// this waiter's deadline. `Held { ttl }` is the holder's remaining
    /// time, or, for a free lock another waiter is first for, 50 ms (the
    /// head takes it within a round trip; see the crate docs' *Wake-ups*),
    /// or the time until that waiter's deadline when sooner.
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`](lock_core::LockError::InvalidArgument) for a zero lease (before any I/O);
    /// [`LockError::WrongType`](lock_core::LockError::WrongType) for a non-hash value at the lock key
    /// (nothing is written, the waiter is not queued); retryable errors as
    /// described in [`lock_redis::error`].
    ///
    /// # Cancel safety
    /// Dropping the future after the script was sent may leave the lock
    /// taken or the waiter queued. Repeat the request (same request id,
    /// within its latch ttl) to learn the outcome without taking a second
    /// hold; leave the queue with [`LockBackend::leave_queue`].
    async fn try_acquire(&self, req: &AcquireRequest) -> Result<AcquireOutcome> {
        check_lease(req.lease_ms)?;
        let layout = self.layout();
        let id = req.request_id.to_string();
        let call = ScriptCall::new(
            &scripts::ACQUIRE,
            vec![
                layout.lock_key(&req.name),
                layout.acquire_latch(&req.name, &id),
                layout.token_key(&req.name),
                layout.queue_key(&req.name),
                layout.timeout_key(&req.name),
            ],
            vec![
                req.lease_ms.to_string(),
                req.owner.field(),
                if req.fenced { "1" } else { "0" }.to_owned(),
                req.latch_ttl_ms.to_string(),
                req.queue_ms.unwrap_or(0).to_string(),
            ],
        )
        .idempotent(req.latch_ttl_ms > 0);
        lock_redis::replies::acquire(&self.transport().eval(call).await?)
    }

    /// Runs the fair `release.lua`; when the last hold goes, publishes `0`
    /// on the queue head's own channel only.
    ///
    /// # Errors
    /// As [`FairRedisBackend::try_acquire`](LockBackend::try_acquire).
    ///
    /// # Cancel safety
    /// As [`FairRedisBackend::try_acquire`](LockBackend::try_acquire):
    /// repeat the request with the same id to learn its first outcome.
    async fn release(&self, req: &ReleaseRequest) -> Result<ReleaseOutcome> {
        check_lease(req.lease_ms)?;
        let layout = self.layout();
        let id = req.request_id.to_string();
        let call = ScriptCall::new(
            &scripts::RELEASE,
            vec![
                layout.lock_key(&req.name),
                layout.channel(&req.name),
                layout.unlock_latch(&req.name, &id),
                layout.queue_key(&req.name),
                layout.timeout_key(&req.name),
            ],
            vec![
                UNLOCK_MESSAGE.to_owned(),
                req.lease_ms.to_string(),
                req.owner.field(),
                self.publish_command(),
                req.latch_ttl_ms.to_string(),
            ],
        )
        .idempotent(req.latch_ttl_ms > 0);
        lock_redis::replies::release(&self.transport().eval(call).await?)
    }

    /// The reentrant lock's batched renewal ([`RedisBackend`]'s): the lock
    /// hash of a fair lock is the same.
    ///
    /// # Errors
    /// A whole-call error when no connection could be had; otherwise
    /// per-target errors for the chunks that failed or timed out.
    ///
    /// # Cancel safety
    /// Dropping the future may leave any subset of the leases extended,
    /// which is harmless.
    async fn renew(&self, targets: &[RenewTarget], lease_ms: u64) -> Result<Vec<Result<bool>>> {
        self.redis.renew(targets, lease_ms).await
    }

    /// Runs the fair `force_unlock.lua`: deletes the lock, keeps the queue,
    /// and tells its head (after evicting stale heads).
    ///
    /// # Errors
    /// [`LockError::WrongType`](lock_core::LockError::WrongType) for a non-hash value at the lock key (left
    /// untouched); retryable errors as described in [`lock_redis::error`].
    ///
    /// # Cancel safety
    /// Dropping the future may leave the lock deleted or not.
    async fn force_unlock(&self, name: &LockName) -> Result<bool> {
        let layout = self.layout();
        let call = ScriptCall::new(
            &scripts::FORCE_UNLOCK,
            vec![
                layout.lock_key(name),
                layout.channel(name),
                layout.queue_key(name),
                layout.timeout_key(name),
            ],
            vec![UNLOCK_MESSAGE.to_owned(), self.publish_command()],
        );
        lock_redis::replies::force_unlock(&self.transport().eval(call).await?)
    }

    /// Runs the fair `inspect.lua`: holders, time to live, and the queue
    /// with each waiter's deadline (server clock, epoch ms), head first.
    /// Read-only: stale waiters are reported, not evicted.
    ///
    /// # Errors
    /// As [`FairRedisBackend::force_unlock`](LockBackend::force_unlock).
    ///
    /// # Cancel safety
    /// Read-only: safe to drop.
    async fn inspect(&self, name: &LockName) -> Result<LockInfo> {
        let layout = self.layout();
        let call = ScriptCall::new(
            &scripts::INSPECT,
            vec![
                layout.lock_key(name),
                layout.queue_key(name),
                layout.timeout_key(name),
            ],
            vec![],
        )
        .idempotent(true);
        replies::inspect(&self.transport().eval(call).await?)
    }

    fn kind(&self) -> LockKind {
        LockKind::Fair
    }

    /// Runs `leave_queue.lua`: removes `owner` from the queue and, if the
    /// lock is free, tells the new head.
    ///
    /// # Errors
    /// Retryable errors as described in [`lock_redis::error`].
    ///
    /// # Cancel safety
    /// Dropping the future may leave the waiter queued or not; a waiter
    /// left queued is evicted once its deadline passes.
    async fn leave_queue(&self, name: &LockName, owner: &Owner) -> Result<()> {
        let layout = self.layout();
        let call = ScriptCall::new(
            &scripts::LEAVE_QUEUE,
            vec![
                layout.lock_key(name),
                layout.channel(name),
                layout.queue_key(name),
                layout.timeout_key(name),
            ],
            vec![owner.field(), self.publish_command()],
        );
        replies::leave_queue(&self.transport().eval(call).await?)
    }

    fn set_notice_sink(&self, sink: Arc<dyn NoticeSink>) {
        self.redis.set_notice_sink(sink);
    }

    /// Subscribes to the topic's channel; a fair waiter's
    /// [`Topic::Waiter`] is `redisson_lock__channel:{<name>}:<owner>`,
    /// where message `0` arrives as [`lock_core::Notice::Unlocked`] with
    /// [`lock_core::Wake::One`].
    fn subscribe(&self, topic: &Topic) -> BoxFuture<'static, Result<()>> {
        self.redis.subscribe(topic)
    }

    fn unsubscribe(&self, topic: &Topic) {
        self.redis.unsubscribe(topic);
    }

    fn command_timeout(&self) -> Option<Duration> {
        self.redis.command_timeout()
    }

    /// Closes the pool and the pub/sub connection. Later calls fail with
    /// [`LockError::Closed`](lock_core::LockError::Closed).
    ///
    /// # Cancel safety
    /// The backend is marked closed before the first await.
    async fn close(&self) {
        self.redis.close().await;
    }
}
