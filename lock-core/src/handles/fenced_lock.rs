//! [`FencedLock`]: a re-entrant exclusive lock whose every acquisition
//! hands out a fencing token.
//!
//! # Promise
//! Every acquisition through a [`FencedLock`] — the first hold, each
//! re-entry, with the watchdog or a fixed lease, waiting or trying — takes
//! the next token of the lock name's counter, so its [`FencedGuard`] carries
//! a token strictly larger than every token handed out before for that name
//! (by any client, a Java service sharing the lock included). Pass it to the storage
//! you write to, which refuses writes with a smaller token than one it has
//! seen: a holder that lost its lock without knowing (a long pause, a
//! partition) can then no longer do harm.
//!
//! It is the same lock as [`Lock`] of that name (same store, same holders):
//! a fenced and a plain handle exclude each other. It is the shared wait loop
//! of [`Lock`] with every acquisition fenced; every other method of [`Lock`]
//! applies (through `Deref`), and [`FencedLock::last_fencing_token`] reads the counter.

use std::sync::Arc;

use crate::backend::kind::ExclusiveKind;
use crate::config::options::AcquireOptions;
use crate::engine::client::Engine;
use crate::error::{LockError, Result};
use crate::handles::guard::Guard;
use crate::handles::lock::Lock;
use crate::name::LockName;
use crate::owner::Owner;

/// Makes a fenced lock's handle (beside the handle, so the engine never
/// imports one).
impl Engine {
    /// A handle on the lock called `name` of the exclusive `kind` whose
    /// every acquisition hands out a fencing token
    /// ([`crate::FencedGuard::fencing_token`]). Makes no I/O.
    ///
    /// # Errors
    /// As [`Engine::lock`].
    pub fn fenced_lock(
        &self,
        name: impl AsRef<str>,
        kind: Arc<dyn ExclusiveKind>,
    ) -> Result<FencedLock> {
        Ok(FencedLock::new(self.clone(), LockName::new(name)?, kind))
    }
}

/// A handle on one named lock whose every acquisition is fenced
/// (`client.fenced_lock(name)`; see the module docs). Every method of
/// [`Lock`] that does not acquire applies. Cheap to clone; makes no I/O
/// until used.
///
/// ```
/// # async fn demo(lock: lock_core::FencedLock) -> lock_core::Result<()> {
/// let guard = lock.lock().await?;
/// let token: u64 = guard.fencing_token(); // larger than every token before it
/// assert_eq!(lock.last_fencing_token().await?, Some(token));
/// // … write to the ledger, passing `token` …
/// guard.unlock().await?;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct FencedLock {
    lock: Lock,
}

impl FencedLock {
    pub(crate) fn new(client: Engine, name: LockName, kind: Arc<dyn ExclusiveKind>) -> Self {
        Self {
            lock: Lock::new(client, name, kind),
        }
    }

    /// Takes the lock as `owner` with a new token, re-entering if `owner`
    /// holds it already: the re-entry's token is larger than the first
    /// hold's.
    ///
    /// # Errors
    /// As [`Lock::lock_as`] and [`FencedLock::lock`].
    ///
    /// # Cancel safety
    /// As [`Lock::lock`].
    pub async fn lock_as(&self, owner: Owner) -> Result<FencedGuard> {
        self.acquire_or_fail(AcquireOptions::new().owner(owner))
            .await
    }

    /// The general acquisition ([`Lock::acquire`]), always fenced whatever
    /// `opts` says. `Ok(None)` when the wait ran out.
    ///
    /// # Errors
    /// As [`Lock::acquire`] and [`FencedLock::lock`].
    ///
    /// # Cancel safety
    /// As [`Lock::acquire`].
    pub async fn acquire(&self, opts: AcquireOptions) -> Result<Option<FencedGuard>> {
        self.lock
            .acquire(opts.fenced())
            .await?
            .map(FencedGuard::new)
            .transpose()
    }

    /// The lock name's last fencing token, read without acquiring
    /// (like `getToken` of the Java fenced lock): the token of the newest
    /// acquisition, by whichever client, held or not. `None` when no token
    /// was ever handed out for this name. The counter is never reset — not
    /// by an unlock, an expiry or [`Lock::force_unlock`] — so a token is
    /// never handed out twice.
    ///
    /// # Errors
    /// [`LockError::WrongType`] naming the counter's key when it holds
    /// something other than an integer (left untouched); backend errors.
    ///
    /// # Cancel safety
    /// Read-only; safe to drop.
    pub async fn last_fencing_token(&self) -> Result<Option<u64>> {
        self.lock.inner().check_open()?;
        self.lock.kind().last_fencing_token(self.lock.name()).await
    }

    /// This lock as a plain [`Lock`] handle (same lock; its acquisitions
    /// are fenced only when asked, [`AcquireOptions::fenced`]).
    pub fn as_lock(&self) -> &Lock {
        &self.lock
    }
}

/// The methods of [`Lock`] that do not acquire: `info`, `is_locked`,
/// `force_unlock`, `unlock_as`, …. Every acquiring method is
/// [`FencedLock`]'s own.
impl std::ops::Deref for FencedLock {
    type Target = Lock;

    fn deref(&self) -> &Lock {
        &self.lock
    }
}

/// A held [`FencedLock`]: a [`Guard`] whose fencing token is always there.
/// Every method of [`Guard`] applies (through `Deref`); release it with
/// [`FencedGuard::unlock`], or drop it to release in the background.
#[must_use = "the lock is released as soon as the guard is dropped"]
#[derive(Debug)]
pub struct FencedGuard {
    guard: Guard,
    token: u64,
}

impl FencedGuard {
    /// Wraps the guard of a fenced acquisition. A guard without a token
    /// (the store's counter was below zero) is dropped, which releases it.
    fn new(guard: Guard) -> Result<Self> {
        match guard.fencing_token() {
            Some(token) => Ok(Self { guard, token }),
            None => Err(LockError::protocol(format!(
                "a fenced acquisition of lock {:?} got no fencing token (is its counter below zero?); the hold is released again",
                guard.name().as_str()
            ))),
        }
    }

    /// This acquisition's fencing token: strictly larger than every token
    /// handed out before for this lock name. [`Guard::fencing_token`] under
    /// the same name, without the `Option`: a fenced guard always has one.
    pub fn fencing_token(&self) -> u64 {
        self.token
    }

    /// Releases this hold ([`Guard::unlock`]).
    ///
    /// # Errors
    /// As [`Guard::unlock`].
    ///
    /// # Cancel safety
    /// As [`Guard::unlock`].
    pub async fn unlock(self) -> Result<()> {
        self.guard.unlock().await
    }

    /// Runs `work` while the lock is held, then unlocks; as
    /// [`Guard::run_locked`].
    ///
    /// # Errors
    /// As [`Guard::run_locked`].
    ///
    /// # Cancel safety
    /// As [`Guard::run_locked`].
    pub async fn run_locked<T>(self, work: impl AsyncFnOnce(&Self) -> T) -> Result<T> {
        crate::backend::held::run_locked(self, work).await
    }

    /// The plain guard (its [`Guard::fencing_token`] is `Some(token)`).
    pub fn into_guard(self) -> Guard {
        self.guard
    }
}

impl std::ops::Deref for FencedGuard {
    type Target = Guard;

    fn deref(&self) -> &Guard {
        &self.guard
    }
}

impl crate::backend::held::Held for FencedGuard {
    async fn lost(&self) {
        self.guard.lost().await;
    }

    fn check(&self) -> Result<()> {
        self.guard.check()
    }

    async fn release(self) -> Result<()> {
        self.unlock().await
    }
}

crate::handles::shorthands::acquire_shorthands!(
    FencedLock,
    FencedGuard,
    "the lock with a new fencing token"
);
