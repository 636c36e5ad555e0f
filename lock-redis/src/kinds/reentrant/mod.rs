//! The reentrant lock's script set: Redisson 4.x's `RedissonLock` layout.
//!
//! One Lua script per operation in this folder (each file's header gives
//! its KEYS, ARGV and replies; `token.lua` reads the fencing-token counter
//! for [`lock_core::FencedLock::last_fencing_token`]); acquire and release start with the shared
//! `common.lua` ([`lock_script::compose`]), and renewal is the shared
//! batch renewal of lock hashes ([`ScriptEnv::renew`]).

use std::sync::LazyLock;

use async_trait::async_trait;
use lock_core::backend::{
    AcquireOutcome, AcquireRequest, Channel, ExclusiveKind, KindBehaviour, ReleaseOutcome,
    ReleaseRequest, RenewTarget, Wake,
};
use lock_core::{LockError, LockInfo, LockName, Owner, Result};
use lock_script::layout::UNLOCK_MESSAGE;
use lock_script::{check_lease, compose, replies, ScriptCall, ScriptEnv};
use redis::Script;

/// Takes or re-enters a lock (`acquire.lua`).
pub static ACQUIRE: LazyLock<Script> = LazyLock::new(|| compose(&[], include_str!("acquire.lua")));
/// Gives back one hold (`release.lua`).
pub static RELEASE: LazyLock<Script> = LazyLock::new(|| compose(&[], include_str!("release.lua")));
/// Deletes a lock whoever holds it (`force_unlock.lua`).
pub static FORCE_UNLOCK: LazyLock<Script> =
    LazyLock::new(|| compose(&[], include_str!("force_unlock.lua")));
/// Reads a lock's holders and time to live (`inspect.lua`).
pub static INSPECT: LazyLock<Script> = LazyLock::new(|| compose(&[], include_str!("inspect.lua")));

/// Reads a lock's fencing-token counter (`token.lua`).
pub static TOKEN: LazyLock<Script> = LazyLock::new(|| compose(&[], include_str!("token.lua")));

/// The reentrant lock kind: any waiter may win a free lock; every waiter
/// of a lock listens on its one channel, and an unlock wakes one waiter per
/// client. Reached with [`crate::LockClient::lock`].
#[derive(Debug, Clone)]
pub struct Reentrant {
    env: ScriptEnv,
    /// Refuse an owner's re-entry (the non-reentrant lock) instead of
    /// counting it.
    refuse_reentry: bool,
    kind_name: &'static str,
}

impl Reentrant {
    /// The reentrant kind over `env`.
    pub fn new(env: ScriptEnv) -> Self {
        Self {
            env,
            refuse_reentry: false,
            kind_name: "reentrant",
        }
    }

    /// The same layout and scripts, refusing an owner's re-entry
    /// (`NON_REENTRANT_REACQUIRE`): the non-reentrant lock, `kind_name`.
    pub(crate) fn refusing_reentry(env: ScriptEnv, kind_name: &'static str) -> Self {
        Self {
            env,
            refuse_reentry: true,
            kind_name,
        }
    }

    /// Every script of the kind, for preloading.
    pub fn scripts() -> Vec<&'static Script> {
        vec![
            &ACQUIRE,
            &RELEASE,
            &lock_script::scripts::RENEW,
            &FORCE_UNLOCK,
            &INSPECT,
            &TOKEN,
        ]
    }
}

#[async_trait]
impl ExclusiveKind for Reentrant {
    /// The non-reentrant lock holds once per owner: whatever an unknown
    /// attempt of a wait that took the lock took is the guard's hold, or a
    /// hold that has expired since; its record, which may outlive a short
    /// lease, must not make the engine release the owner's hold on its
    /// behalf.
    fn behaviour(&self) -> KindBehaviour {
        let plain = KindBehaviour::exclusive(self.kind_name);
        if self.refuse_reentry {
            plain.one_hold_per_owner()
        } else {
            plain
        }
    }

    /// Runs `acquire.lua` (with the replica sync of its [`ScriptEnv`]).
    ///
    /// # Errors
    /// [`lock_core::LockError::InvalidArgument`] for a zero lease (before
    /// any I/O); [`lock_core::LockError::WrongType`] for a non-hash value at
    /// the lock key (nothing is written); retryable errors as described in
    /// [`lock_script::error`].
    ///
    /// # Cancel safety
    /// Dropping the future after the script was sent may leave the lock
    /// taken. Repeat the request (same request id, within its record ttl) to
    /// learn the outcome without taking a second hold.
    async fn try_acquire(&self, req: &AcquireRequest) -> Result<AcquireOutcome> {
        let refuse = if self.refuse_reentry { "1" } else { "0" };
        acquire_with(&self.env, self, &ACQUIRE, req, &[refuse]).await
    }

    /// Runs `release.lua`; publishes `0` on the lock's channel when the
    /// last hold goes.
    ///
    /// # Errors
    /// As [`Reentrant::try_acquire`](ExclusiveKind::try_acquire).
    ///
    /// # Cancel safety
    /// As [`Reentrant::try_acquire`](ExclusiveKind::try_acquire): repeat
    /// the request with the same id to learn its first outcome.
    async fn release(&self, req: &ReleaseRequest) -> Result<ReleaseOutcome> {
        check_lease(req.lease_ms)?;
        let layout = self.env.layout();
        let id = req.request_id.to_string();
        let call = ScriptCall::new(
            &RELEASE,
            vec![
                layout.lock_key(&req.name),
                layout.channel(&req.name),
                layout.unlock_record(&req.name, &id),
            ],
            vec![
                UNLOCK_MESSAGE.to_owned(),
                req.lease_ms.to_string(),
                req.owner.field(),
                self.env.publish_command(),
                req.deadline_ms.to_string(),
            ],
        )
        .idempotent(true);
        replies::release(&self.env.eval(call).await?)
    }

    /// The shared batch renewal ([`ScriptEnv::renew`]).
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

    /// Runs `force_unlock.lua`.
    ///
    /// # Errors
    /// [`lock_core::LockError::WrongType`] for a non-hash value at the lock
    /// key (left untouched); retryable errors as described in
    /// [`lock_script::error`].
    ///
    /// # Cancel safety
    /// Dropping the future may leave the lock deleted or not.
    async fn force_unlock(&self, name: &LockName) -> Result<bool> {
        force_unlock_with(&self.env, &FORCE_UNLOCK, name).await
    }

    /// Runs `inspect.lua`.
    ///
    /// # Errors
    /// As [`Reentrant::force_unlock`](ExclusiveKind::force_unlock).
    ///
    /// # Cancel safety
    /// Read-only: safe to drop.
    async fn inspect(&self, name: &LockName) -> Result<LockInfo> {
        inspect_with(&self.env, &INSPECT, name).await
    }

    /// Runs `token.lua`: the counter `redisson_lock_token:{<name>}` that
    /// fenced acquisitions (ours and Redisson's `RFencedLock`) `INCR`.
    ///
    /// # Errors
    /// [`lock_core::LockError::WrongType`] naming the counter when it holds
    /// a non-string value or one that is not an integer (left untouched);
    /// retryable errors as described in [`lock_script::error`].
    ///
    /// # Cancel safety
    /// Read-only: safe to drop.
    async fn last_fencing_token(&self, name: &LockName) -> Result<Option<u64>> {
        last_fencing_token(&self.env, name).await
    }

    /// The lock's channel, `redisson_lock__channel:{<name>}`, shared by
    /// every waiter of the lock.
    fn channel(&self, name: &LockName, _owner: &Owner) -> Channel {
        Channel::new(self.env.layout().channel(name))
    }

    /// `0` wakes one waiter per client, `1` (a Redisson read unlock) all.
    fn wake(&self, payload: &[u8]) -> Option<Wake> {
        lock_script::wake(payload)
    }
}

/// Runs a kind's `force_unlock.lua` (KEYS: the lock, its channel; ARGV:
/// the unlock message, the publish command), which answers 1 or 0: the
/// reentrant lock's and the lean lock's.
pub(super) async fn force_unlock_with(
    env: &ScriptEnv,
    script: &'static Script,
    name: &LockName,
) -> Result<bool> {
    let layout = env.layout();
    let call = ScriptCall::new(
        script,
        vec![layout.lock_key(name), layout.channel(name)],
        vec![UNLOCK_MESSAGE.to_owned(), env.publish_command()],
    );
    replies::force_unlock(&env.eval(call).await?)
}

/// Runs a kind's `inspect.lua` (KEYS: the lock), which answers the
/// holders as a flat field/count array and the PTTL.
pub(super) async fn inspect_with(
    env: &ScriptEnv,
    script: &'static Script,
    name: &LockName,
) -> Result<LockInfo> {
    let call = ScriptCall::new(script, vec![env.layout().lock_key(name)], vec![]).idempotent(true);
    replies::inspect(&env.eval(call).await?)
}

/// Runs `token.lua`: the counter `redisson_lock_token:{<name>}` that
/// fenced acquisitions of every kind sharing it (ours and Redisson's
/// `RFencedLock`) `INCR`.
pub(super) async fn last_fencing_token(env: &ScriptEnv, name: &LockName) -> Result<Option<u64>> {
    let counter = env.layout().token_key(name);
    let call = ScriptCall::new(&TOKEN, vec![counter.clone()], vec![]).idempotent(true);
    replies::token(&env.eval(call).await?, &counter)
}

/// Runs a kind's `acquire.lua` (KEYS: the lock, the request's record, the
/// fencing counter; ARGV: lease, owner field, fenced, deadline, then
/// `extra`), with the replica sync of `env`: the reentrant lock's and the
/// lean lock's. A refused re-entry names the lock, not its prefixed key.
pub(super) async fn acquire_with(
    env: &ScriptEnv,
    kind: &dyn ExclusiveKind,
    script: &'static Script,
    req: &AcquireRequest,
    extra: &[&str],
) -> Result<AcquireOutcome> {
    check_lease(req.lease_ms)?;
    let layout = env.layout();
    let id = req.request_id.to_string();
    let mut args = vec![
        req.lease_ms.to_string(),
        req.owner.field(),
        if req.fenced { "1" } else { "0" }.to_owned(),
        req.deadline_ms.to_string(),
    ];
    args.extend(extra.iter().map(|a| (*a).to_owned()));
    let call = ScriptCall::new(
        script,
        vec![
            layout.lock_key(&req.name),
            layout.acquire_record(&req.name, &id),
            layout.token_key(&req.name),
        ],
        args,
    )
    .idempotent(true);
    env.acquire(kind, call, req).await.map_err(|e| match e {
        LockError::ReentryRefused { .. } => LockError::ReentryRefused {
            name: req.name.to_string(),
        },
        other => other,
    })
}

/// The reentrant lock's registry entry ([`crate::LockClient::lock`],
/// [`crate::LockClient::fenced_lock`]).
pub const ENTRY: super::KindEntry = super::KindEntry::new(
    "reentrant",
    "reentrant",
    |env| std::sync::Arc::new(Reentrant::new(env.clone())),
    Reentrant::scripts,
);

impl super::Kinds {
    /// Redisson's reentrant lock.
    pub fn reentrant(&self) -> std::sync::Arc<Reentrant> {
        self.bound(ENTRY.name, Reentrant::new)
    }
}
