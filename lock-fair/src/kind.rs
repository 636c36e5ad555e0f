//! [`Fair`]: the fair lock's script set over any [`Transport`].

use async_trait::async_trait;
use lock_core::backend::{
    AcquireOutcome, AcquireRequest, Channel, ExclusiveKind, KindBehaviour, ReleaseOutcome,
    ReleaseRequest, RenewTarget, Wake,
};
use lock_core::{LockInfo, LockName, Owner, Result};

use crate::handle::FairLockInfo;
use lock_script::clients::ClientRecords;
use lock_script::layout::UNLOCK_MESSAGE;
use lock_script::{check_lease, replies as shared, KeyLayout, ScriptCall, ScriptEnv};

use crate::replies;
use crate::scripts;

#[cfg(doc)]
use lock_script::Transport;

/// The fair (FIFO) lock kind on Redis: runs the fair scripts (see the crate
/// docs) through a [`Transport`], with the replica sync of its
/// [`ScriptEnv`]. Registered on every client by `lock-redis`; reached with
/// `client.fair_lock(name)`.
///
/// Renewal is the shared batch renewal of lock hashes
/// ([`ScriptEnv::renew`]): the lock hash of a fair lock is the reentrant
/// lock's.
#[derive(Debug, Clone)]
pub struct Fair {
    env: ScriptEnv,
    /// Whether its waiters accept a handoff ([`KindBehaviour::hands_over`](lock_core::backend::KindBehaviour::hands_over)).
    handoff: bool,
}

impl Fair {
    /// The fair kind over `env`.
    pub fn new(env: ScriptEnv) -> Self {
        Self {
            env,
            handoff: false,
        }
    }

    /// The direct-handoff kind over `env`
    /// (`client.handoff_lock(name)`): the fair lock, whose
    /// waiters also accept a handoff, so a release grants the lock to the
    /// queue head instead of telling it to try again. Both kinds run the
    /// same scripts on the same keys: a release through either grants to a
    /// head that accepts it.
    pub fn with_handoff(env: ScriptEnv) -> Self {
        Self { env, handoff: true }
    }

    /// Every script of the kind, for preloading.
    pub fn scripts() -> Vec<&'static lock_script::redis::Script> {
        scripts::all().to_vec()
    }

    fn layout(&self) -> &KeyLayout {
        self.env.layout()
    }

    fn publish_command(&self) -> String {
        self.env.publish_command()
    }

    /// A wait's ticket as the scripts take it, "0" for none (the engine
    /// gives tickets only to waits of a kind that hands over).
    fn ticket(wait_ticket: Option<u64>) -> String {
        wait_ticket.map_or_else(|| "0".to_owned(), |ticket| ticket.to_string())
    }
}

#[async_trait]
impl ExclusiveKind for Fair {
    /// Waiters queue; with hand-over, a release grants the lock to the
    /// queue's head.
    fn behaviour(&self) -> KindBehaviour {
        if self.handoff {
            KindBehaviour::exclusive("handoff").hands_over()
        } else {
            KindBehaviour::exclusive("fair").queues_waiters()
        }
    }

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
    /// described in [`lock_script::error`].
    ///
    /// # Cancel safety
    /// Dropping the future after the script was sent may leave the lock
    /// taken or the waiter queued. Repeat the request (same request id,
    /// within its record ttl) to learn the outcome without taking a second
    /// hold; leave the queue with [`ExclusiveKind::leave_queue`].
    async fn try_acquire(&self, req: &AcquireRequest) -> Result<AcquireOutcome> {
        check_lease(req.lease_ms)?;
        let layout = self.layout();
        let id = req.request_id.to_string();
        let call = ScriptCall::new(
            &scripts::ACQUIRE,
            vec![
                layout.lock_key(&req.name),
                layout.acquire_record(&req.name, &id),
                layout.token_key(&req.name),
                layout.queue_key(&req.name),
                layout.timeout_key(&req.name),
                layout.channel(&req.name),
                layout.handoff_key(&req.name),
            ],
            vec![
                req.lease_ms.to_string(),
                req.owner.field(),
                if req.fenced { "1" } else { "0" }.to_owned(),
                req.deadline_ms.to_string(),
                req.queue_ms.unwrap_or(0).to_string(),
                UNLOCK_MESSAGE.to_owned(),
                self.publish_command(),
                Self::ticket(req.wait_ticket),
            ],
        )
        .idempotent(true);
        self.env.acquire(self, call, req).await
    }

    /// Runs the fair `release.lua`; when the last hold goes, publishes `0`
    /// on the queue head's own channel only.
    ///
    /// # Errors
    /// As [`Fair::try_acquire`](ExclusiveKind::try_acquire).
    ///
    /// # Cancel safety
    /// As [`Fair::try_acquire`](ExclusiveKind::try_acquire):
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
                layout.unlock_record(&req.name, &id),
                layout.queue_key(&req.name),
                layout.timeout_key(&req.name),
                layout.handoff_key(&req.name),
            ],
            vec![
                UNLOCK_MESSAGE.to_owned(),
                req.lease_ms.to_string(),
                req.owner.field(),
                self.publish_command(),
                req.deadline_ms.to_string(),
            ],
        )
        .idempotent(true);
        shared::release(&self.env.eval(call).await?)
    }

    /// The shared batched renewal of lock hashes ([`ScriptEnv::renew`]):
    /// the lock hash of a fair lock is the reentrant lock's.
    ///
    /// # Errors
    /// A whole-call error when no connection could be had; otherwise
    /// per-target errors for the chunks that failed or timed out.
    ///
    /// # Cancel safety
    /// Dropping the future may leave any subset of the leases extended,
    /// which is harmless.
    async fn renew(&self, targets: &[RenewTarget], lease_ms: u64) -> Result<Vec<Result<bool>>> {
        self.env.renew(targets, lease_ms).await
    }

    /// The lane of the node serving the lock ([`ScriptEnv::renew_lane`]).
    fn renew_lane(&self, target: &RenewTarget) -> u64 {
        self.env.renew_lane(&target.name)
    }

    /// Runs the fair `force_unlock.lua`: deletes the lock, keeps the queue,
    /// and tells its head (after evicting stale heads).
    ///
    /// # Errors
    /// [`LockError::WrongType`](lock_core::LockError::WrongType) for a non-hash value at the lock key (left
    /// untouched); retryable errors as described in [`lock_script::error`].
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
                layout.handoff_key(name),
            ],
            vec![UNLOCK_MESSAGE.to_owned(), self.publish_command()],
        );
        shared::force_unlock(&self.env.eval(call).await?)
    }

    /// Runs the fair `inspect.lua`; the lock's half of
    /// [`Fair::inspect_fair`].
    ///
    /// # Errors
    /// As [`Fair::force_unlock`](ExclusiveKind::force_unlock).
    ///
    /// # Cancel safety
    /// Read-only: safe to drop.
    async fn inspect(&self, name: &LockName) -> Result<LockInfo> {
        Ok(self.inspect_fair(name).await?.lock)
    }

    /// A waiter's own channel, `redisson_lock__channel:{<name>}:<owner>`:
    /// only the queue head is told, with message `0`.
    fn channel(&self, name: &LockName, owner: &Owner) -> Channel {
        Channel::new(self.layout().waiter_channel(name, owner))
    }

    /// `0` (look again) as every lock's; `g<ticket>`: the lock was
    /// granted to the wait with that ticket.
    fn wake(&self, payload: &[u8]) -> Option<Wake> {
        match payload.strip_prefix(b"g") {
            Some(ticket) => std::str::from_utf8(ticket)
                .ok()
                .and_then(|t| t.parse().ok())
                .map(Wake::Granted),
            None => lock_script::wake(payload),
        }
    }

    /// Runs `leave_queue.lua`: removes `owner` from the queue, gives back
    /// a lock granted to `wait_ticket`, and, if the lock is free, grants it
    /// to the new head or tells it.
    ///
    /// # Errors
    /// Retryable errors as described in [`lock_script::error`].
    ///
    /// # Cancel safety
    /// Dropping the future may leave the waiter queued or not; a waiter
    /// left queued is evicted once its deadline passes.
    async fn leave_queue(
        &self,
        name: &LockName,
        owner: &Owner,
        wait_ticket: Option<u64>,
    ) -> Result<()> {
        let layout = self.layout();
        let call = ScriptCall::new(
            &scripts::LEAVE_QUEUE,
            vec![
                layout.lock_key(name),
                layout.channel(name),
                layout.queue_key(name),
                layout.timeout_key(name),
                layout.handoff_key(name),
            ],
            vec![
                owner.field(),
                self.publish_command(),
                Self::ticket(wait_ticket),
            ],
        );
        replies::leave_queue(&self.env.eval(call).await?)
    }
}

impl Fair {
    /// Runs the fair `inspect.lua`: holders, time to live, and the queue
    /// with the time each waiter has left (its deadline less the server's
    /// clock, both read by the script), head first. Read-only: stale
    /// waiters are reported, with no time left, not evicted.
    ///
    /// # Errors
    /// As [`Fair::force_unlock`](ExclusiveKind::force_unlock).
    ///
    /// # Cancel safety
    /// Read-only: safe to drop.
    pub async fn inspect_fair(&self, name: &LockName) -> Result<FairLockInfo> {
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
        replies::inspect(&self.env.eval(call).await?)
    }

    /// [`Fair::inspect_fair`], with the record of each holder's and each
    /// waiter's client joined, when that client keeps one
    /// (`lock_script::clients`; best effort: a record that cannot be read
    /// is left out).
    ///
    /// # Errors
    /// As [`Fair::inspect_fair`].
    ///
    /// # Cancel safety
    /// Read-only: safe to drop.
    pub async fn inspect_with_clients(&self, name: &LockName) -> Result<FairLockInfo> {
        let mut info = self.inspect_fair(name).await?;
        let fields = info.lock.holders.iter().map(|h| h.field.as_str());
        let fields = fields.chain(info.queue.iter().map(|w| w.field.as_str()));
        let records = ClientRecords::new(self.env.clone()).of_fields(fields).await;
        records.join_holders(&mut info.lock.holders);
        for waiter in &mut info.queue {
            waiter.client = records.of_field(&waiter.field).cloned();
        }
        Ok(info)
    }
}
