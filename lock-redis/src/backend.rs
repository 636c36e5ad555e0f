//! [`RedisBackend`]: the reentrant lock's scripts over a [`Transport`].

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use async_trait::async_trait;
use futures::future::{self, BoxFuture, FutureExt};
use lock_core::layout::UNLOCK_MESSAGE;
use lock_core::{
    AcquireOutcome, AcquireRequest, KeyLayout, LockBackend, LockError, LockInfo, LockName, Notice,
    NoticeSink, ReleaseOutcome, ReleaseRequest, RenewTarget, Result, Topic, Wake,
};

use crate::config::RedisConfig;
use crate::replies;
use crate::scripts::{self, ScriptCall};
use crate::single::SingleNode;
use crate::transport::{PubSubEvent, PubSubHandler, Transport};

/// At most this many locks are renewed by one script call; a bigger batch is
/// split into calls that are pipelined together.
pub const RENEW_CHUNK: usize = 500;

/// The lock backend for Redis: runs the Redisson-compatible scripts (see the
/// crate docs) through a [`Transport`] and turns pub/sub messages into
/// [`Notice`]s.
///
/// One backend is one client's connection to one deployment; share it (it
/// is `Send + Sync`) rather than making one per task.
pub struct RedisBackend {
    transport: Arc<dyn Transport>,
    layout: KeyLayout,
    notices: Arc<Notices>,
    replica_sync: Option<(u32, Duration)>,
}

impl std::fmt::Debug for RedisBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisBackend")
            .field("layout", &self.layout)
            .field("publish_command", &self.transport.publish_command())
            .finish_non_exhaustive()
    }
}

impl RedisBackend {
    /// Connects to one Redis server.
    ///
    /// The configuration is checked first, before any I/O. Then one command
    /// connection is made and every script loaded (so a wrong address or
    /// password shows up here, not at the first lock), and the pub/sub task
    /// is started; it connects in the background. The other command
    /// connections are made on first use. Must be called inside a
    /// tokio runtime with the `time` and `net` drivers enabled.
    ///
    /// ```no_run
    /// # async fn demo() -> lock_core::Result<()> {
    /// use std::time::Duration;
    /// use lock_redis::{RedisBackend, RedisConfig};
    ///
    /// let backend = RedisBackend::connect(
    ///     RedisConfig::new("redis://127.0.0.1:6379/").command_timeout(Duration::from_secs(1)),
    /// )
    /// .await?;
    /// # drop(backend); Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] for a bad configuration (before any
    /// I/O) or rejected credentials; a retryable
    /// [`LockError::Unavailable`] when the server cannot be reached within
    /// the command timeout.
    ///
    /// # Cancel safety
    /// Dropping the future drops the half-made backend and its connections.
    pub async fn connect(config: RedisConfig) -> Result<Self> {
        config.validate()?;
        let transport = SingleNode::new(&config)?;
        transport.check().await?;
        Ok(Self::with_transport(Arc::new(transport), config.layout()))
    }

    /// A backend over any transport (e.g. a cluster transport), with the
    /// given key layout. Installs the backend's pub/sub handler on the
    /// transport.
    pub fn with_transport(transport: Arc<dyn Transport>, layout: KeyLayout) -> Self {
        let notices = Arc::new(Notices::default());
        transport.set_pubsub_handler(notices.clone());
        Self {
            transport,
            layout,
            notices,
            replica_sync: None,
        }
    }

    /// Makes every acquisition wait (`WAIT`) until `replicas` replicas have
    /// it, for at most `timeout`. When fewer acknowledge in time, the hold
    /// just taken is given back and the acquisition fails with
    /// [`LockError::NotReplicated`], so a lock reported taken survives the
    /// failover of its node to one of those replicas. Releases and renewals
    /// do not wait.
    ///
    /// Should giving the hold back fail too, it stays until its lease runs
    /// out (the watchdog does not renew a hold the caller never got).
    #[must_use]
    pub fn with_replica_sync(mut self, replicas: u32, timeout: Duration) -> Self {
        self.replica_sync = Some((replicas, timeout));
        self
    }

    /// Runs `call` (an acquisition by `owner`) with the replica sync, if
    /// configured; see [`RedisBackend::with_replica_sync`].
    async fn acquire_synced(
        &self,
        call: ScriptCall<'_>,
        req: &AcquireRequest,
    ) -> Result<AcquireOutcome> {
        let Some((replicas, timeout)) = self.replica_sync else {
            return replies::acquire(&self.transport.eval(call).await?);
        };
        let (reply, acked) = self
            .transport
            .eval_and_wait(call, replicas, timeout)
            .await?;
        let outcome = replies::acquire(&reply)?;
        if acked >= replicas || !matches!(outcome, AcquireOutcome::Acquired { .. }) {
            return Ok(outcome);
        }
        let undo = ReleaseRequest::new(req.name.clone(), req.owner, req.lease_ms, req.latch_ttl_ms);
        if let Err(e) = self.release(&undo).await {
            tracing::warn!(lock = %req.name, error = %e, "could not give back an unreplicated hold; it lasts until its lease runs out");
        }
        Err(LockError::NotReplicated {
            name: req.name.to_string(),
            wanted: replicas,
            acked,
        })
    }

    /// The key layout (prefix) in use.
    pub fn layout(&self) -> &KeyLayout {
        &self.layout
    }

    /// The transport the scripts run on.
    pub fn transport(&self) -> &Arc<dyn Transport> {
        &self.transport
    }

    fn channel(&self, topic: &Topic) -> Option<String> {
        Some(self.layout.topic_channel(topic))
    }
}

/// Rejects a zero lease before any I/O (every lock script needs a lease of
/// at least 1 ms).
///
/// # Errors
/// [`LockError::InvalidArgument`] for `0`.
pub fn check_lease(lease_ms: u64) -> Result<()> {
    if lease_ms == 0 {
        Err(LockError::invalid("lease must be at least 1 ms"))
    } else {
        Ok(())
    }
}

#[async_trait]
impl LockBackend for RedisBackend {
    /// Runs `acquire.lua`.
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] for a zero lease (before any I/O);
    /// [`LockError::WrongType`] for a non-hash value at the lock key
    /// (nothing is written); retryable errors as described in
    /// [`crate::error`].
    ///
    /// # Cancel safety
    /// Dropping the future after the script was sent may leave the lock
    /// taken. Repeat the request (same request id, within its latch ttl) to
    /// learn the outcome without taking a second hold.
    async fn try_acquire(&self, req: &AcquireRequest) -> Result<AcquireOutcome> {
        check_lease(req.lease_ms)?;
        let id = req.request_id.to_string();
        let call = ScriptCall::new(
            &scripts::ACQUIRE,
            vec![
                self.layout.lock_key(&req.name),
                self.layout.acquire_latch(&req.name, &id),
                self.layout.token_key(&req.name),
            ],
            vec![
                req.lease_ms.to_string(),
                req.owner.field(),
                if req.fenced { "1" } else { "0" }.to_owned(),
                req.latch_ttl_ms.to_string(),
            ],
        )
        .idempotent(req.latch_ttl_ms > 0);
        self.acquire_synced(call, req).await
    }

    /// Runs `release.lua`; publishes `0` on the lock's channel when the
    /// last hold goes.
    ///
    /// # Errors
    /// As [`RedisBackend::try_acquire`](LockBackend::try_acquire).
    ///
    /// # Cancel safety
    /// As [`RedisBackend::try_acquire`](LockBackend::try_acquire): repeat
    /// the request with the same id to learn its first outcome.
    async fn release(&self, req: &ReleaseRequest) -> Result<ReleaseOutcome> {
        check_lease(req.lease_ms)?;
        let id = req.request_id.to_string();
        let call = ScriptCall::new(
            &scripts::RELEASE,
            vec![
                self.layout.lock_key(&req.name),
                self.layout.channel(&req.name),
                self.layout.unlock_latch(&req.name, &id),
            ],
            vec![
                UNLOCK_MESSAGE.to_owned(),
                req.lease_ms.to_string(),
                req.owner.field(),
                self.transport.publish_command().to_owned(),
                req.latch_ttl_ms.to_string(),
            ],
        )
        .idempotent(req.latch_ttl_ms > 0);
        replies::release(&self.transport.eval(call).await?)
    }

    /// Runs `renew.lua` on chunks of at most [`RENEW_CHUNK`] locks (never
    /// mixing [`Transport::key_group`]s), all pipelined at once.
    ///
    /// # Errors
    /// A whole-call error when no connection could be had; otherwise
    /// per-target errors for the chunks that failed or timed out.
    ///
    /// # Cancel safety
    /// Dropping the future may leave any subset of the leases extended,
    /// which is harmless.
    async fn renew(&self, targets: &[RenewTarget], lease_ms: u64) -> Result<Vec<Result<bool>>> {
        if targets.is_empty() {
            return Ok(Vec::new());
        }
        check_lease(lease_ms)?;
        let keys: Vec<String> = targets
            .iter()
            .map(|t| self.layout.lock_key(&t.name))
            .collect();
        // Keys of different groups (cluster slots) never share a call.
        let mut groups: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
        for (i, key) in keys.iter().enumerate() {
            groups
                .entry(self.transport.key_group(key))
                .or_default()
                .push(i);
        }
        let lease = lease_ms.to_string();
        let mut calls = Vec::new();
        let mut members: Vec<&[usize]> = Vec::new();
        for indices in groups.values() {
            for chunk in indices.chunks(RENEW_CHUNK) {
                let chunk_keys = chunk.iter().map(|&i| keys[i].clone()).collect();
                let args = std::iter::once(lease.clone())
                    .chain(chunk.iter().map(|&i| targets[i].owner.field()))
                    .collect();
                // A renewal only ever extends a lease: repeating it is harmless.
                calls.push(ScriptCall::new(&scripts::RENEW, chunk_keys, args).idempotent(true));
                members.push(chunk);
            }
        }
        let results = self.transport.eval_batch(calls).await?;
        if results.len() != members.len() {
            return Err(LockError::protocol(format!(
                "renew: {} replies to {} calls",
                results.len(),
                members.len()
            )));
        }
        let mut out: Vec<Result<bool>> = vec![Ok(false); targets.len()];
        for (result, chunk) in results.into_iter().zip(members) {
            match result.and_then(|reply| replies::renew(&reply, chunk.len())) {
                Ok(renewed) => {
                    for (&i, ok) in chunk.iter().zip(renewed) {
                        out[i] = Ok(ok);
                    }
                }
                Err(e) => {
                    for &i in chunk {
                        out[i] = Err(e.clone());
                    }
                }
            }
        }
        Ok(out)
    }

    /// Runs `force_unlock.lua`.
    ///
    /// # Errors
    /// [`LockError::WrongType`] for a non-hash value at the lock key (left
    /// untouched); retryable errors as described in [`crate::error`].
    ///
    /// # Cancel safety
    /// Dropping the future may leave the lock deleted or not.
    async fn force_unlock(&self, name: &LockName) -> Result<bool> {
        let call = ScriptCall::new(
            &scripts::FORCE_UNLOCK,
            vec![self.layout.lock_key(name), self.layout.channel(name)],
            vec![
                UNLOCK_MESSAGE.to_owned(),
                self.transport.publish_command().to_owned(),
            ],
        );
        replies::force_unlock(&self.transport.eval(call).await?)
    }

    /// Runs `inspect.lua`.
    ///
    /// # Errors
    /// As [`RedisBackend::force_unlock`](LockBackend::force_unlock).
    ///
    /// # Cancel safety
    /// Read-only: safe to drop.
    async fn inspect(&self, name: &LockName) -> Result<LockInfo> {
        let call = ScriptCall::new(&scripts::INSPECT, vec![self.layout.lock_key(name)], vec![])
            .idempotent(true);
        replies::inspect(&self.transport.eval(call).await?)
    }

    fn set_notice_sink(&self, sink: Arc<dyn NoticeSink>) {
        self.notices.set(sink);
    }

    fn subscribe(&self, topic: &Topic) -> BoxFuture<'static, Result<()>> {
        match self.channel(topic) {
            Some(channel) => self.transport.subscribe(channel, topic.clone()),
            None => future::ready(Err(LockError::invalid(format!(
                "the redis backend has no channel for {topic:?}"
            ))))
            .boxed(),
        }
    }

    /// The transport's command timeout, plus the replica wait of
    /// [`RedisBackend::with_replica_sync`] when configured (an acquisition
    /// waits for its replicas after its script ran).
    fn command_timeout(&self) -> Option<Duration> {
        let replica_wait = self.replica_sync.map_or(Duration::ZERO, |(_, wait)| wait);
        Some(
            self.transport
                .command_timeout()?
                .saturating_add(replica_wait),
        )
    }

    fn unsubscribe(&self, topic: &Topic) {
        if let Some(channel) = self.channel(topic) {
            self.transport.unsubscribe(channel);
        }
    }

    /// Closes the command connections (calls in flight finish on theirs)
    /// and the pub/sub connection (waiting, bounded, for the pub/sub task
    /// to stop). Later calls fail with [`LockError::Closed`].
    ///
    /// # Cancel safety
    /// The backend is marked closed before the first await.
    async fn close(&self) {
        self.transport.close().await;
    }
}

/// Turns pub/sub events into notices for the engine's sink.
#[derive(Default)]
struct Notices {
    sink: RwLock<Option<Arc<dyn NoticeSink>>>,
}

impl Notices {
    fn set(&self, sink: Arc<dyn NoticeSink>) {
        *self
            .sink
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(sink);
    }

    fn deliver(&self, notice: Notice) {
        let sink = self
            .sink
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        match sink {
            Some(sink) => sink.deliver(notice),
            None => tracing::debug!(?notice, "notice before a sink was installed; dropped"),
        }
    }
}

impl PubSubHandler for Notices {
    fn on_event(&self, event: PubSubEvent<'_>) {
        match event {
            PubSubEvent::Message { topic, payload } => {
                let wake = match payload {
                    b"0" => Wake::One,
                    b"1" => Wake::All,
                    other => {
                        tracing::debug!(
                            ?topic,
                            payload = %String::from_utf8_lossy(other),
                            "ignoring an unknown unlock message"
                        );
                        return;
                    }
                };
                self.deliver(Notice::Unlocked {
                    topic: topic.clone(),
                    wake,
                });
            }
            PubSubEvent::Reset => self.deliver(Notice::Reset),
        }
    }
}
