//! The read-write lock's script set: Redisson 4.x's `RReadWriteLock` layout
//! (`RedissonReadLock`, `RedissonWriteLock`).
//!
//! | item | on Redis |
//! | --- | --- |
//! | the lock | one hash `<name>`: `mode` = `read`/`write`; the writer's field `<owner>:write` → count; each reader's field `<owner>` → count |
//! | per read hold | string `{<name>}:<owner>:rwlock_timeout:<n>` = 1, PX = that hold's lease (n = 1..count) |
//! | channel | `redisson_rwlock:{<name>}`: a read unlock that frees the lock publishes `0` (wake one waiter per client), a write unlock `1` (wake all) |
//! | waiting writers (ours) | sorted set `redisson_rwlock_writers:{<name>}`: writer field → epoch ms (server clock) until which it counts as waiting |
//!
//! The two sides are two [`ExclusiveKind`]s over the same hash ([`Read`],
//! [`Write`]), so each is driven by the engine's one wait loop, holds table
//! and watchdog as any lock; they name different hold sides
//! ([`KindBehaviour::hold_side`](lock_core::backend::KindBehaviour::hold_side)), so one owner's read and write holds are
//! tracked apart. One Lua script per operation in this folder (each file's
//! header gives its KEYS, ARGV and replies); writes start with the shared
//! `common.lua` ([`lock_script::compose`]). The write side renews with
//! the shared `renew.lua` on its `<owner>:write` field; the read side with
//! `read_renew.lua`, which also extends every hold key of the owner.
//!
//! # Writers first
//! A waiting writer of ours is a queueing waiter
//! ([`KindBehaviour::queues_waiters`](lock_core::backend::KindBehaviour::queues_waiters)): it enters the set of waiting
//! writers from its first attempt, refreshes its deadline (the client's
//! `waiter_timeout`) at least every third of it, and leaves it when it
//! gets the lock, gives up or is dropped. While the set is not empty, our
//! readers that do not read the lock yet wait, so a stream of our readers
//! cannot starve a writer (a writer whose process died holds readers off
//! until its deadline, at most `waiter_timeout`). Redisson's readers do not
//! know the set: a stream of Java readers can still starve any writer.
//!
//! Both unlock messages wake every waiter of a client (Redisson wakes one on
//! `0`): a waiter woken by a read unlock may be a reader still held off by
//! a waiting writer, and the writer must not miss the wake-up.
//!
//! Where these scripts differ from Redisson's (never in what Java sees as
//! held or free): the waiting writers above; a reader asking for the write side fails with
//! [`lock_core::LockError::UpgradeRefused`] instead of waiting forever; a
//! hash without `mode` (a plain lock of the same name) is reported held
//! rather than written into; renewals and releases never shorten a lease
//! (see the scripts' headers). Neither side hands out fencing tokens.

use std::sync::LazyLock;

mod handle;
pub use handle::{ReadWriteKinds, ReadWriteLock};

use async_trait::async_trait;
use lock_core::backend::{
    AcquireOutcome, AcquireRequest, Channel, ExclusiveKind, KindBehaviour, ReleaseOutcome,
    ReleaseRequest, RenewTarget, Wake,
};
use lock_core::{Holder, LockError, LockInfo, LockName, Owner, Result};
use lock_script::layout::{READ_UNLOCK_MESSAGE, UNLOCK_MESSAGE};
use lock_script::{check_lease, compose, replies, ScriptCall, ScriptEnv};
use redis::Script;
use std::sync::Arc;

/// Takes a read hold (`read_acquire.lua`).
pub static READ_ACQUIRE: LazyLock<Script> =
    LazyLock::new(|| compose(&[], include_str!("read_acquire.lua")));
/// Gives back a read hold (`read_release.lua`).
pub static READ_RELEASE: LazyLock<Script> =
    LazyLock::new(|| compose(&[], include_str!("read_release.lua")));
/// Extends many owners' read holds (`read_renew.lua`).
pub static READ_RENEW: LazyLock<Script> =
    LazyLock::new(|| compose(&[], include_str!("read_renew.lua")));
/// Takes or re-enters the write side (`write_acquire.lua`).
pub static WRITE_ACQUIRE: LazyLock<Script> =
    LazyLock::new(|| compose(&[], include_str!("write_acquire.lua")));
/// Gives back a write hold (`write_release.lua`).
pub static WRITE_RELEASE: LazyLock<Script> =
    LazyLock::new(|| compose(&[], include_str!("write_release.lua")));
/// A waiting writer gives up (`write_leave.lua`).
pub static WRITE_LEAVE: LazyLock<Script> =
    LazyLock::new(|| compose(&[], include_str!("write_leave.lua")));
/// Deletes the lock when it is in one mode (`force_unlock.lua`).
pub static FORCE_UNLOCK: LazyLock<Script> =
    LazyLock::new(|| compose(&[], include_str!("force_unlock.lua")));

/// Both sides of the read-write lock over `env`.
pub fn kinds(env: ScriptEnv) -> ReadWriteKinds {
    ReadWriteKinds::new(Arc::new(Read { env: env.clone() }), Arc::new(Write { env }))
}

/// Every script of the kind, for preloading.
pub fn scripts() -> Vec<&'static Script> {
    vec![
        &READ_ACQUIRE,
        &READ_RELEASE,
        &READ_RENEW,
        &WRITE_ACQUIRE,
        &WRITE_RELEASE,
        &WRITE_LEAVE,
        &FORCE_UNLOCK,
        &lock_script::scripts::RENEW,
        &super::reentrant::INSPECT,
    ]
}

/// How our waiters read a message on the lock's channel: `0` (the last
/// reader left) and `1` (the writer left) both wake every waiter of the
/// client. A Redisson client wakes one waiter on `0`; ours wake all because
/// the waiters of a read-write lock are of two sides: a waiter woken by a
/// read unlock may be a reader still held off by a waiting writer, and the
/// writer must not miss the wake-up.
fn wake(payload: &[u8]) -> Option<Wake> {
    lock_script::wake(payload).map(|_| Wake::All)
}

/// The writer field of `owner`: `<owner>:write`.
pub fn writer_field(owner: &Owner) -> String {
    format!("{}:write", owner.field())
}

fn refuse_fenced(req: &AcquireRequest) -> Result<()> {
    if req.fenced {
        return Err(LockError::invalid(
            "the read-write lock hands out no fencing tokens (Redisson's has none either)",
        ));
    }
    Ok(())
}

/// The lock's name in an [`LockError::UpgradeRefused`] (the transport
/// names the key, which carries the key prefix).
fn name_upgrade(e: LockError, name: &LockName) -> LockError {
    match e {
        LockError::UpgradeRefused { .. } => LockError::UpgradeRefused {
            name: name.to_string(),
        },
        other => other,
    }
}

async fn inspect(env: &ScriptEnv, name: &LockName, write: bool) -> Result<LockInfo> {
    let call = ScriptCall::new(
        &super::reentrant::INSPECT,
        vec![env.layout().lock_key(name)],
        vec![],
    )
    .idempotent(true);
    let all = replies::inspect(&env.eval(call).await?)?;
    // Each side reports its own holders, by owner field.
    let holders: Vec<Holder> = all
        .holders
        .iter()
        .filter_map(|h| match (write, h.field.strip_suffix(":write")) {
            (true, Some(owner)) => Some(Holder::new(owner.to_owned(), h.count)),
            (false, None) => Some(h.clone()),
            _ => None,
        })
        .collect();
    let ttl = if holders.is_empty() { None } else { all.ttl };
    Ok(LockInfo::new(holders, ttl))
}

async fn force_unlock(env: &ScriptEnv, name: &LockName, mode: &str, message: &str) -> Result<bool> {
    let call = ScriptCall::new(
        &FORCE_UNLOCK,
        vec![
            env.layout().lock_key(name),
            env.layout().rwlock_channel(name),
        ],
        vec![mode.to_owned(), message.to_owned(), env.publish_command()],
    );
    replies::force_unlock(&env.eval(call).await?)
}

/// The read side: many owners at once, none while a writer of another
/// owner holds the lock. Reached with
/// [`crate::LockClient::read_write_lock`]`(name).read()`.
#[derive(Debug, Clone)]
pub struct Read {
    env: ScriptEnv,
}

#[async_trait]
impl ExclusiveKind for Read {
    /// Readers share the lock: a task's second read does not wait for its
    /// first.
    fn behaviour(&self) -> KindBehaviour {
        KindBehaviour::exclusive("read_write.read")
            .side("read")
            .shared()
    }

    /// Runs `read_acquire.lua` (with the replica sync of its [`ScriptEnv`]).
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] for a zero lease or a fenced request
    /// (before any I/O); [`LockError::WrongType`] for a non-hash value at
    /// the lock key (nothing is written); retryable errors as described in
    /// [`lock_script::error`].
    ///
    /// # Cancel safety
    /// Dropping the future after the script was sent may leave a hold
    /// taken; repeat the request (same id) to learn the outcome.
    async fn try_acquire(&self, req: &AcquireRequest) -> Result<AcquireOutcome> {
        check_lease(req.lease_ms)?;
        refuse_fenced(req)?;
        let layout = self.env.layout();
        let id = req.request_id.to_string();
        let call = ScriptCall::new(
            &READ_ACQUIRE,
            vec![
                layout.lock_key(&req.name),
                layout.rwlock_hold_key_prefix(&req.name, &req.owner),
                layout.acquire_record(&req.name, &id),
                layout.rwlock_writers_key(&req.name),
            ],
            vec![
                req.lease_ms.to_string(),
                req.owner.field(),
                writer_field(&req.owner),
                req.deadline_ms.to_string(),
            ],
        )
        .idempotent(true);
        self.env.acquire(self, call, req).await
    }

    /// Runs `read_release.lua`: publishes `0` when nobody holds the lock
    /// any more. [`ReleaseOutcome::Released`] means this owner's last read
    /// hold is gone (other readers may remain).
    ///
    /// # Errors
    /// As [`Read::try_acquire`](ExclusiveKind::try_acquire).
    ///
    /// # Cancel safety
    /// Repeat the request with the same id to learn its first outcome.
    async fn release(&self, req: &ReleaseRequest) -> Result<ReleaseOutcome> {
        let layout = self.env.layout();
        let id = req.request_id.to_string();
        let key = layout.lock_key(&req.name);
        let call = ScriptCall::new(
            &READ_RELEASE,
            vec![
                key.clone(),
                layout.rwlock_channel(&req.name),
                layout.rwlock_hold_key_prefix(&req.name, &req.owner),
                layout.tagged_key(&req.name),
                layout.unlock_record(&req.name, &id),
            ],
            vec![
                UNLOCK_MESSAGE.to_owned(),
                req.owner.field(),
                self.env.publish_command(),
                req.deadline_ms.to_string(),
            ],
        )
        .idempotent(true);
        replies::release(&self.env.eval(call).await?)
    }

    /// `read_renew.lua` in batches ([`ScriptEnv::renew_with`]).
    ///
    /// # Errors
    /// A whole-call error when no connection could be had; otherwise
    /// per-target errors for the chunks that failed.
    ///
    /// # Cancel safety
    /// Dropping the future may leave any subset extended: harmless.
    async fn renew(&self, targets: &[RenewTarget], lease_ms: u64) -> Result<Vec<Result<bool>>> {
        self.env
            .renew_with(&READ_RENEW, targets, lease_ms, |t| {
                (
                    vec![
                        self.env.layout().lock_key(&t.name),
                        self.env.layout().rwlock_hold_key_prefix(&t.name, &t.owner),
                    ],
                    vec![t.owner.field()],
                )
            })
            .await
    }

    /// The lane of the node serving the lock ([`ScriptEnv::renew_lane`]).
    fn renew_lane(&self, target: &RenewTarget) -> u64 {
        self.env.renew_lane(&target.name)
    }

    /// Deletes the lock if it is in read mode and publishes `0`
    /// (Redisson's `RedissonReadLock.forceUnlock`).
    ///
    /// # Errors
    /// [`LockError::WrongType`] (left untouched); retryable errors.
    ///
    /// # Cancel safety
    /// Dropping the future may leave the lock deleted or not.
    async fn force_unlock(&self, name: &LockName) -> Result<bool> {
        force_unlock(&self.env, name, "read", UNLOCK_MESSAGE).await
    }

    /// The readers (by owner field) and the hash's TTL.
    ///
    /// # Errors
    /// As [`Read::force_unlock`](ExclusiveKind::force_unlock).
    ///
    /// # Cancel safety
    /// Read-only: safe to drop.
    async fn inspect(&self, name: &LockName) -> Result<LockInfo> {
        inspect(&self.env, name, false).await
    }

    /// `redisson_rwlock:{<name>}`, shared by both sides' waiters.
    fn channel(&self, name: &LockName, _owner: &Owner) -> Channel {
        Channel::new(self.env.layout().rwlock_channel(name))
    }

    /// `0` and `1` both wake every waiter of the client: the waiters are
    /// of two sides, and a writer must not miss a wake-up that a reader
    /// held off by a waiting writer took (see the module docs).
    fn wake(&self, payload: &[u8]) -> Option<Wake> {
        wake(payload)
    }
}

/// The write side: one owner, and no reader but that owner. Reached with
/// [`crate::LockClient::read_write_lock`]`(name).write()`.
#[derive(Debug, Clone)]
pub struct Write {
    env: ScriptEnv,
}

#[async_trait]
impl ExclusiveKind for Write {
    /// Waiting writers queue and hold our new readers off (see the
    /// module docs).
    fn behaviour(&self) -> KindBehaviour {
        KindBehaviour::exclusive("read_write.write")
            .side("write")
            .queues_waiters()
    }

    /// Runs `write_acquire.lua` (with the replica sync of its
    /// [`ScriptEnv`]).
    ///
    /// # Errors
    /// [`LockError::UpgradeRefused`] when the owner holds the read side;
    /// otherwise as [`Read::try_acquire`](ExclusiveKind::try_acquire).
    ///
    /// # Cancel safety
    /// As [`Read::try_acquire`](ExclusiveKind::try_acquire).
    async fn try_acquire(&self, req: &AcquireRequest) -> Result<AcquireOutcome> {
        check_lease(req.lease_ms)?;
        refuse_fenced(req)?;
        let id = req.request_id.to_string();
        let call = ScriptCall::new(
            &WRITE_ACQUIRE,
            vec![
                self.env.layout().lock_key(&req.name),
                self.env.layout().acquire_record(&req.name, &id),
                self.env.layout().rwlock_writers_key(&req.name),
            ],
            vec![
                req.lease_ms.to_string(),
                writer_field(&req.owner),
                req.owner.field(),
                req.deadline_ms.to_string(),
                req.queue_ms.unwrap_or(0).to_string(),
            ],
        )
        .idempotent(true);
        self.env
            .acquire(self, call, req)
            .await
            .map_err(|e| name_upgrade(e, &req.name))
    }

    /// Runs `write_release.lua`: publishes `1` when the lock is free
    /// (nothing on a downgrade to this owner's read holds).
    ///
    /// # Errors
    /// As [`Read::try_acquire`](ExclusiveKind::try_acquire).
    ///
    /// # Cancel safety
    /// Repeat the request with the same id to learn its first outcome.
    async fn release(&self, req: &ReleaseRequest) -> Result<ReleaseOutcome> {
        check_lease(req.lease_ms)?;
        let id = req.request_id.to_string();
        let call = ScriptCall::new(
            &WRITE_RELEASE,
            vec![
                self.env.layout().lock_key(&req.name),
                self.env.layout().rwlock_channel(&req.name),
                self.env.layout().unlock_record(&req.name, &id),
            ],
            vec![
                READ_UNLOCK_MESSAGE.to_owned(),
                req.lease_ms.to_string(),
                writer_field(&req.owner),
                self.env.publish_command(),
                req.deadline_ms.to_string(),
            ],
        )
        .idempotent(true);
        replies::release(&self.env.eval(call).await?)
    }

    /// The shared `renew.lua` on the `<owner>:write` field.
    ///
    /// # Errors
    /// As [`Read::renew`](ExclusiveKind::renew).
    ///
    /// # Cancel safety
    /// As [`Read::renew`](ExclusiveKind::renew).
    async fn renew(&self, targets: &[RenewTarget], lease_ms: u64) -> Result<Vec<Result<bool>>> {
        self.env
            .renew_with(&lock_script::scripts::RENEW, targets, lease_ms, |t| {
                (
                    vec![self.env.layout().lock_key(&t.name)],
                    vec![writer_field(&t.owner)],
                )
            })
            .await
    }

    /// The lane of the node serving the lock ([`ScriptEnv::renew_lane`]).
    fn renew_lane(&self, target: &RenewTarget) -> u64 {
        self.env.renew_lane(&target.name)
    }

    /// Deletes the lock if it is in write mode and publishes `1`
    /// (Redisson's `RedissonWriteLock.forceUnlock`).
    ///
    /// # Errors
    /// As [`Read::force_unlock`](ExclusiveKind::force_unlock).
    ///
    /// # Cancel safety
    /// As [`Read::force_unlock`](ExclusiveKind::force_unlock).
    async fn force_unlock(&self, name: &LockName) -> Result<bool> {
        force_unlock(&self.env, name, "write", READ_UNLOCK_MESSAGE).await
    }

    /// The writer (its owner field, without `:write`) and the hash's TTL.
    ///
    /// # Errors
    /// As [`Read::force_unlock`](ExclusiveKind::force_unlock).
    ///
    /// # Cancel safety
    /// Read-only: safe to drop.
    async fn inspect(&self, name: &LockName) -> Result<LockInfo> {
        inspect(&self.env, name, true).await
    }

    /// `redisson_rwlock:{<name>}`, shared by both sides' waiters.
    fn channel(&self, name: &LockName, _owner: &Owner) -> Channel {
        Channel::new(self.env.layout().rwlock_channel(name))
    }

    /// `0` and `1` both wake every waiter of the client: the waiters are
    /// of two sides, and a writer must not miss a wake-up that a reader
    /// held off by a waiting writer took (see the module docs).
    fn wake(&self, payload: &[u8]) -> Option<Wake> {
        wake(payload)
    }

    /// Runs `write_leave.lua`: the writer no longer holds readers off;
    /// when no writer is left waiting, `1` wakes the readers it held off.
    ///
    /// # Errors
    /// Retryable errors as described in [`lock_script::error`].
    ///
    /// # Cancel safety
    /// Dropping the future may leave the writer in the set until its
    /// deadline.
    async fn leave_queue(
        &self,
        name: &LockName,
        owner: &Owner,
        _wait_ticket: Option<u64>,
    ) -> Result<()> {
        let call = ScriptCall::new(
            &WRITE_LEAVE,
            vec![
                self.env.layout().lock_key(name),
                self.env.layout().rwlock_writers_key(name),
                self.env.layout().rwlock_channel(name),
            ],
            vec![writer_field(owner), self.env.publish_command()],
        )
        .idempotent(true);
        self.env.eval(call).await.map(drop)
    }
}

/// The read-write lock's registry entry (both sides;
/// [`crate::LockClient::read_write_lock`]).
pub const ENTRY: super::KindEntry = super::KindEntry::new(
    "read_write",
    "read_write",
    |env| Arc::new(kinds(env.clone())),
    scripts,
);

impl super::Kinds {
    /// Both sides of the read-write lock.
    pub fn read_write(&self) -> Arc<ReadWriteKinds> {
        self.bound(ENTRY.name, kinds)
    }
}
