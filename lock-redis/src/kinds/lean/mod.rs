//! The lean lock: the redis.io single-instance pattern, one string key
//! holding its holder's token — the layout go-redsync, redis-py's `Lock`,
//! node-redlock, rslock and pottery keep, so a Rust service and its Go,
//! Python and Node neighbours exclude each other on one name.
//!
//! Taking it sets the key to the owner's token with a lease (`PX`) when it
//! is absent; releasing deletes it only while it holds that token; renewing
//! extends it only then. What those libraries lack comes from the engine:
//! the watchdog, the lost-lock signal, an opt-in fencing token (`INCR` of
//! `redisson_lock_token:{<name>}`), and wake-ups by notice. Not re-entrant:
//! an owner asking again for a lock it holds is refused
//! ([`lock_core::LockError::ReentryRefused`]).
//!
//! # Two paths: lean, and recorded
//! A lock taken with the client's own owner for the wait (`lock()`,
//! `try_lock()`, …: [`AcquireRequest::private_owner`]) goes the lean way,
//! at the pattern's cost: `SET … NX PX … GET` takes a free lock (`take.lua`
//! when the key is there already), `give_back.lua` releases it, and
//! neither writes anything but the lock key. The token itself tells a
//! repeat what happened: an acquisition whose reply was lost finds the
//! wait's own token and takes it back. A release whose reply was lost
//! finds the key gone, which its first copy may have done or a loss
//! (a force unlock, an eviction) may have: with no record to tell them
//! apart, it reports the lock lost (`NotHeld`; `LockLost` from
//! `run_locked`), never a release it cannot prove. What no record
//! then rules out is a copy of an acquisition held up on the network and
//! delivered after its wait's guard released the lock: it takes the lock
//! again, for no one, until its lease runs out — as a crashed holder's lock
//! stays, and as it does with every library of the pattern. Nobody else
//! holds the lock meanwhile.
//!
//! A fenced acquisition, or one as an explicit owner or in an owner scope
//! (`lock_as`, `AcquireOptions::owner`, `Owner::scope`), goes the recorded
//! way (`acquire.lua`, `release.lua`): each request's outcome is recorded
//! until its deadline, so a repeat or a late copy never applies twice, as
//! for the reentrant lock. An explicit owner may hold the lock again after
//! a release, which a late copy of that release, unrecorded, would undo.
//!
//! Other libraries release without a notice, so a waiter looks again at
//! least every [`FOREIGN_RELEASE_RECHECK`] whatever the holder's time to
//! live says; our own releases wake waiters at once.

use std::sync::LazyLock;
use std::time::Duration;

use async_trait::async_trait;
use lock_core::backend::{
    AcquireOutcome, AcquireRequest, Channel, ExclusiveKind, KindBehaviour, ReleaseOutcome,
    ReleaseRequest, RenewTarget, Wake,
};
use lock_core::{LockError, LockInfo, LockName, Owner, Result};
use lock_script::layout::UNLOCK_MESSAGE;
use lock_script::{check_lease, compose, replies, ScriptCall, ScriptEnv};
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

/// Takes a lean lock for an owner of one wait, unrecorded (`take.lua`).
pub static TAKE: LazyLock<Script> = LazyLock::new(|| compose(&[], include_str!("take.lua")));
/// Releases a lock [`TAKE`] took, unrecorded (`give_back.lua`).
pub static GIVE_BACK: LazyLock<Script> =
    LazyLock::new(|| compose(&[], include_str!("give_back.lua")));
/// Takes a lean lock, recorded (`acquire.lua`).
pub static ACQUIRE: LazyLock<Script> = LazyLock::new(|| compose(&[], include_str!("acquire.lua")));
/// Deletes it while it holds the owner's token, recorded (`release.lua`).
pub static RELEASE: LazyLock<Script> = LazyLock::new(|| compose(&[], include_str!("release.lua")));
/// Extends many lean locks' leases (`renew.lua`).
pub static RENEW: LazyLock<Script> = LazyLock::new(|| compose(&[], include_str!("renew.lua")));
/// Deletes it whoever holds it (`force_unlock.lua`).
pub static FORCE_UNLOCK: LazyLock<Script> =
    LazyLock::new(|| compose(&[], include_str!("force_unlock.lua")));
/// Reads its holder and time to live (`inspect.lua`).
pub static INSPECT: LazyLock<Script> = LazyLock::new(|| compose(&[], include_str!("inspect.lua")));

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
            &TAKE,
            &GIVE_BACK,
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
    /// The fast path keeps no record of which request took the lock (one
    /// hold per owner), and other libraries release without a notice
    /// (a look at least every [`FOREIGN_RELEASE_RECHECK`]).
    fn behaviour(&self) -> KindBehaviour {
        KindBehaviour::exclusive(NAME)
            .one_hold_per_owner()
            .recheck_within(FOREIGN_RELEASE_RECHECK)
    }

    /// Runs `take.lua` for an unfenced acquisition of a
    /// [private owner](AcquireRequest::private_owner), else `acquire.lua`
    /// (with the replica sync of its [`ScriptEnv`]).
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
        if req.fenced || !req.private_owner {
            return reentrant::acquire_with(&self.env, self, &ACQUIRE, req, &[]).await;
        }
        check_lease(req.lease_ms)?;
        let key = || self.env.layout().lock_key(&req.name);
        let (lease, token) = (|| req.lease_ms.to_string(), || req.owner.field());
        // The common case, a free lock, in one plain command: as a script
        // the same step cost about 8 µs more server time per lock/unlock
        // pair (lock-bench's README). `NX` with `GET`: Redis 7.0, Valkey.
        let set = ScriptCall::command(
            "SET",
            vec![key()],
            vec![token(), "NX".into(), "PX".into(), lease(), "GET".into()],
        )
        // Sent again, it finds the owner's token and the script below
        // takes the hold back: same answer.
        .idempotent(true);
        match self.env.acquire_decoded(self, set, req, set_reply).await? {
            AcquireOutcome::Held { .. } => {}
            taken => return Ok(taken),
        }
        // Taken already, by the owner (an earlier attempt of its wait, whose
        // reply was lost) or by someone else: `take.lua` sets the owner's
        // lease anew, or answers the holder's time to live.
        let call = ScriptCall::new(&TAKE, vec![key()], vec![lease(), token()])
            // A second run takes the owner's own hold back: same answer.
            .idempotent(true);
        self.env.acquire(self, call, req).await
    }

    /// Runs `give_back.lua` for a [private owner](ReleaseRequest::private_owner),
    /// else `release.lua`; publishes `0` on the lock's channel when it
    /// deletes the key. `give_back.lua` keeps no record, so a repeat (after
    /// a lost reply) that finds the key gone answers "not held": its first
    /// copy may have deleted it, or the lock was lost meanwhile, and only a
    /// record could tell; the guard then reports the loss it cannot rule
    /// out rather than a release it cannot prove. `release.lua`'s record
    /// answers a repeat exactly.
    ///
    /// # Errors
    /// As [`Lean::try_acquire`](ExclusiveKind::try_acquire).
    ///
    /// # Cancel safety
    /// Repeat the request with the same id to learn its first outcome.
    async fn release(&self, req: &ReleaseRequest) -> Result<ReleaseOutcome> {
        let layout = self.env.layout();
        if req.private_owner {
            let call = ScriptCall::new(
                &GIVE_BACK,
                vec![layout.lock_key(&req.name), layout.channel(&req.name)],
                vec![
                    UNLOCK_MESSAGE.to_owned(),
                    req.owner.field(),
                    self.env.publish_command(),
                ],
            );
            // Not idempotent for the transport: a copy it sent again would
            // find the key gone and could not tell that from a lock lost.
            return given_back(&self.env.eval(call).await?);
        }
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

    /// The reentrant lock's channel name, `redisson_lock__channel:{<name>}`
    /// (in the key's cluster slot; no other kind can hold the key at once).
    fn channel(&self, name: &LockName, _owner: &Owner) -> Channel {
        Channel::new(self.env.layout().channel(name))
    }

    fn wake(&self, payload: &[u8]) -> Option<Wake> {
        lock_script::wake(payload)
    }
}

/// `SET … NX … GET`'s reply: nil when it took the lock (the key was
/// absent); the value it found otherwise, read as held (with no time to
/// live: `take.lua` then tells whose it is and for how long).
fn set_reply(reply: &redis::Value) -> Result<AcquireOutcome> {
    match reply {
        redis::Value::Nil => Ok(AcquireOutcome::Acquired {
            fencing_token: None,
        }),
        redis::Value::BulkString(_) | redis::Value::SimpleString(_) => {
            Ok(AcquireOutcome::Held { ttl: None })
        }
        other => Err(LockError::protocol(format!(
            "SET NX GET: unexpected reply {other:?}"
        ))),
    }
}

/// `give_back.lua`'s reply: `1` released, nil held by another token, `0`
/// the key gone. The key gone is "not held" also for a repeat whose first
/// copy may have deleted it: nothing on the store tells that from a lock
/// lost meanwhile (a force unlock, an eviction), and a loss reported as a
/// release would hide it from the holder (`run_locked` would return the
/// work's result instead of `LockLost`).
fn given_back(reply: &redis::Value) -> Result<ReleaseOutcome> {
    match reply {
        redis::Value::Int(0) | redis::Value::Nil => Ok(ReleaseOutcome::NotHeld),
        redis::Value::Int(1) => Ok(ReleaseOutcome::Released),
        other => Err(LockError::protocol(format!(
            "give_back: unexpected reply {other:?}"
        ))),
    }
}

/// The lean lock's registry entry ([`crate::LockClient::lean_lock`]).
pub const ENTRY: super::KindEntry = super::KindEntry::new(
    NAME,
    "lean",
    |env| std::sync::Arc::new(Lean::new(env.clone())),
    Lean::scripts,
);

impl super::Kinds {
    /// The lean lock.
    pub fn lean(&self) -> std::sync::Arc<Lean> {
        self.bound(NAME, Lean::new)
    }
}

#[cfg(test)]
mod tests {
    /// The unrecorded fast path goes through the one composer too, and
    /// gets nothing but itself: its comments name request records and
    /// give_back, which must not bring common.lua's in (each would cost a
    /// closure per run).
    #[test]
    fn the_fast_path_scripts_are_their_bodies_alone() {
        for body in [include_str!("take.lua"), include_str!("give_back.lua")] {
            assert_eq!(lock_script::compose_lua(&[], body), body);
        }
    }
}
