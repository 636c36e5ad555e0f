//! The lean lock: the redis.io single-instance pattern, one string key
//! holding its holder's token — the layout go-redsync, redis-py's `Lock`,
//! node-redlock, rslock and pottery keep, so a Rust service and its Go,
//! Python and Node neighbours exclude each other on one name.
//!
//! Taking it sets the key to the owner's token with a lease (`PX`) when it
//! is absent; releasing deletes it only while it holds that token; renewing
//! extends it only then. What those libraries lack comes from the engine:
//! the watchdog, the lost-lock signal, an opt-in fencing token (`INCR` of
//! `redisson_lock_token:{<name>}`), request records so a retried request
//! never applies twice, and wake-ups by notice. Not re-entrant: an owner
//! asking again for a lock it holds is refused
//! ([`lock_core::LockError::ReentryRefused`]).
//!
//! Other libraries release without a notice, so a waiter looks again at
//! least every [`FOREIGN_RELEASE_RECHECK`] whatever the holder's time to
//! live says; our own releases wake waiters at once.

use std::sync::LazyLock;
use std::time::Duration;

use async_trait::async_trait;
use lock_core::backend::{
    AcquireOutcome, AcquireRequest, Channel, ExclusiveKind, ReleaseOutcome, ReleaseRequest,
    RenewTarget, Wake,
};
use lock_core::{LockInfo, LockName, Owner, Result};
use lock_script::layout::UNLOCK_MESSAGE;
use lock_script::{replies, with_common, ScriptCall, ScriptEnv};
use redis::Script;

use super::reentrant;

/// The name the kind is registered and measured under.
pub const NAME: &str = "lean";

/// The longest a waiter sleeps between looks at a lean lock held by
/// someone else: a release by another library publishes nothing, so only
/// a look sees it. About what those libraries' own retry delays are
/// (rslock 200 ms, go-redsync 50–250 ms); a release of ours wakes waiters
/// at once.
pub const FOREIGN_RELEASE_RECHECK: Duration = Duration::from_millis(250);

/// Takes a lean lock (`acquire.lua`).
pub static ACQUIRE: LazyLock<Script> =
    LazyLock::new(|| with_common(&[include_str!("acquire.lua")]));
/// Deletes it while it holds the owner's token (`release.lua`).
pub static RELEASE: LazyLock<Script> =
    LazyLock::new(|| with_common(&[include_str!("release.lua")]));
/// Extends many lean locks' leases (`renew.lua`).
pub static RENEW: LazyLock<Script> = LazyLock::new(|| with_common(&[include_str!("renew.lua")]));
/// Deletes it whoever holds it (`force_unlock.lua`).
pub static FORCE_UNLOCK: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("force_unlock.lua")));
/// Reads its holder and time to live (`inspect.lua`).
pub static INSPECT: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("inspect.lua")));

/// The lean lock kind. Reached with [`crate::LockClient::lean_lock`].
#[derive(Debug, Clone)]
pub struct Lean {
    env: ScriptEnv,
}

impl Lean {
    /// The lean kind over `env`.
    pub fn new(env: ScriptEnv) -> Self {
        Self { env }
    }

    /// Every script of the kind, for preloading.
    pub fn scripts() -> Vec<&'static Script> {
        vec![
            &ACQUIRE,
            &RELEASE,
            &RENEW,
            &FORCE_UNLOCK,
            &INSPECT,
            &reentrant::TOKEN,
        ]
    }
}

#[async_trait]
impl ExclusiveKind for Lean {
    /// Runs `acquire.lua` (with the replica sync of its [`ScriptEnv`]).
    ///
    /// # Errors
    /// [`lock_core::LockError::InvalidArgument`] for a zero lease (before any I/O);
    /// [`lock_core::LockError::ReentryRefused`] when the owner holds the lock;
    /// [`lock_core::LockError::WrongType`] for a value that is not a string at the
    /// lock key (nothing is written); retryable errors as described in
    /// [`lock_script::error`].
    ///
    /// # Cancel safety
    /// Dropping the future after the script was sent may leave the lock
    /// taken. Repeat the request (same request id) to learn the outcome.
    async fn try_acquire(&self, req: &AcquireRequest) -> Result<AcquireOutcome> {
        reentrant::acquire_with(&self.env, self, &ACQUIRE, req, &[]).await
    }

    /// [`FOREIGN_RELEASE_RECHECK`]: other libraries release without a
    /// notice.
    fn recheck_within(&self) -> Option<Duration> {
        Some(FOREIGN_RELEASE_RECHECK)
    }

    /// Runs `release.lua`; publishes `0` on the lock's channel when it
    /// deletes the key.
    ///
    /// # Errors
    /// As [`Lean::try_acquire`](ExclusiveKind::try_acquire).
    ///
    /// # Cancel safety
    /// Repeat the request with the same id to learn its first outcome.
    async fn release(&self, req: &ReleaseRequest) -> Result<ReleaseOutcome> {
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
                req.owner.field(),
                self.env.publish_command(),
                req.deadline_ms.to_string(),
            ],
        )
        .idempotent(true);
        replies::release(&self.env.eval(call).await?)
    }

    /// `renew.lua` in the shared batches ([`ScriptEnv::renew_with`]).
    ///
    /// # Errors
    /// A whole-call error when no connection could be had; otherwise
    /// per-target errors for the chunks that failed or timed out.
    ///
    /// # Cancel safety
    /// Dropping the future may leave any subset of the leases extended,
    /// which is harmless.
    async fn renew(&self, targets: &[RenewTarget], lease_ms: u64) -> Result<Vec<Result<bool>>> {
        let layout = self.env.layout();
        self.env
            .renew_with(&RENEW, targets, lease_ms, |t| {
                (vec![layout.lock_key(&t.name)], vec![t.owner.field()])
            })
            .await
    }

    /// The lane of the node serving the lock ([`ScriptEnv::renew_lane`]).
    fn renew_lane(&self, target: &RenewTarget) -> u64 {
        self.env.renew_lane(&target.name)
    }

    /// Runs `force_unlock.lua`.
    ///
    /// # Errors
    /// [`lock_core::LockError::WrongType`] for a value that is not a string (left
    /// untouched); retryable errors as described in [`lock_script::error`].
    ///
    /// # Cancel safety
    /// Dropping the future may leave the lock deleted or not.
    async fn force_unlock(&self, name: &LockName) -> Result<bool> {
        reentrant::force_unlock_with(&self.env, &FORCE_UNLOCK, name).await
    }

    /// Runs `inspect.lua`: the holder is the key's token, with one hold.
    ///
    /// # Errors
    /// As [`Lean::force_unlock`](ExclusiveKind::force_unlock).
    ///
    /// # Cancel safety
    /// Read-only: safe to drop.
    async fn inspect(&self, name: &LockName) -> Result<LockInfo> {
        reentrant::inspect_with(&self.env, &INSPECT, name).await
    }

    /// The reentrant kind's `token.lua`: the counter fenced acquisitions
    /// of either kind `INCR`.
    ///
    /// # Errors
    /// [`lock_core::LockError::WrongType`] naming the counter when it holds something
    /// other than an integer; retryable errors as described in
    /// [`lock_script::error`].
    ///
    /// # Cancel safety
    /// Read-only: safe to drop.
    async fn last_fencing_token(&self, name: &LockName) -> Result<Option<u64>> {
        reentrant::last_fencing_token(&self.env, name).await
    }

    fn kind_name(&self) -> &'static str {
        NAME
    }

    /// The reentrant lock's channel name, `redisson_lock__channel:{<name>}`
    /// (in the key's cluster slot; no other kind can hold the key at once).
    fn channel(&self, name: &LockName, _owner: &Owner) -> Channel {
        Channel::new(self.env.layout().channel(name))
    }

    fn wake(&self, payload: &[u8]) -> Option<Wake> {
        lock_script::wake(payload)
    }
}
