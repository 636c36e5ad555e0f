//! One face for the lock implementations under test, so W1, W2H and W3 run
//! the same code against each lock of our library and against `rslock`.

use std::future::Future;
use std::sync::Arc;

use anyhow::{Context, Result};
use lock_redis::{Guard, LockClient, RedGuard, RedLock};

use crate::target::Kind;
use crate::LOCK_TIMEOUT;

/// A client of some lock implementation: takes a named lock, waiting as
/// long as it takes, and gives it back.
pub(crate) trait Locker: Clone + Send + Sync + 'static {
    /// What a held lock is.
    type Held: Send + 'static;

    /// The implementation's name in reports.
    fn name(&self) -> &'static str;

    /// The commands this implementation's clients send to the server
    /// themselves (as opposed to commands its scripts run), lower case: a
    /// count of these is a count of requests.
    fn client_commands(&self) -> &'static [&'static str];

    /// Takes the lock `name`, waiting as long as it takes. Callers bound
    /// the wait with a timeout.
    fn lock(&self, name: &str) -> impl Future<Output = Result<Self::Held>> + Send;

    /// Gives the lock back.
    fn unlock(&self, held: Self::Held) -> impl Future<Output = Result<()>> + Send;

    /// [`Locker::unlock`], failing when it takes over [`LOCK_TIMEOUT`]
    /// (a library bug, not a slow machine).
    fn unlock_bounded(&self, held: Self::Held) -> impl Future<Output = Result<()>> + Send {
        async move {
            tokio::time::timeout(LOCK_TIMEOUT, self.unlock(held))
                .await
                .with_context(|| format!("unlock() took over {LOCK_TIMEOUT:?}"))?
        }
    }

    /// Ends the client (waits, bounded, for background work).
    fn close(&self) -> impl Future<Output = ()> + Send;
}

/// Our library: `client.lock(name)?.lock()` (watchdog lease) and
/// `guard.unlock()`, with any of its locks (the API is the same).
#[derive(Clone, Debug)]
pub(crate) struct Lib {
    pub(crate) client: LockClient,
    kind: Kind,
}

impl Lib {
    /// `client`, a client of the `kind` lock.
    pub(crate) fn new(client: LockClient, kind: Kind) -> Self {
        Self { client, kind }
    }
}

impl Locker for Lib {
    type Held = Guard;

    fn name(&self) -> &'static str {
        self.kind.implementation()
    }

    fn client_commands(&self) -> &'static [&'static str] {
        self.kind.client_commands()
    }

    fn lock(&self, name: &str) -> impl Future<Output = Result<Guard>> + Send {
        // The kind is the handle's: one client serves both.
        let lock = match self.kind {
            Kind::Fair => self
                .client
                .fair_lock(name)
                .map(|fair| fair.as_lock().clone()),
            Kind::Handoff => self
                .client
                .handoff_lock(name)
                .map(|fair| fair.as_lock().clone()),
            Kind::Lean => self.client.lean_lock(name),
            Kind::Reentrant | Kind::Cluster => self.client.lock(name),
        };
        async move { Ok(lock?.lock().await?) }
    }

    async fn unlock(&self, guard: Guard) -> Result<()> {
        Ok(guard.unlock().await?)
    }

    fn close(&self) -> impl Future<Output = ()> + Send {
        let client = self.client.clone();
        async move { close_client(&client).await }
    }
}

/// Closes `client`, warning (and going on) when that takes over
/// [`crate::CLOSE_TIMEOUT`].
pub(crate) async fn close_client(client: &LockClient) {
    if tokio::time::timeout(crate::CLOSE_TIMEOUT, client.close())
        .await
        .is_err()
    {
        eprintln!(
            "lock-bench: warning: closing a lock client took over {:?}",
            crate::CLOSE_TIMEOUT
        );
    }
}

/// Our library's `RedLock` over one client per master:
/// `RedLock::new(members)?.lock()` and `guard.unlock()`.
#[derive(Clone, Debug)]
pub(crate) struct Red {
    /// One client per master, in the same order for every locker, so
    /// contenders queue on the same member first.
    pub(crate) members: Arc<[LockClient]>,
}

impl Locker for Red {
    type Held = RedGuard;

    fn name(&self) -> &'static str {
        "lock-core RedLock"
    }

    fn client_commands(&self) -> &'static [&'static str] {
        Kind::Reentrant.client_commands()
    }

    fn lock(&self, name: &str) -> impl Future<Output = Result<RedGuard>> + Send {
        let red = self
            .members
            .iter()
            .map(|c| c.lock(name))
            .collect::<lock_redis::Result<Vec<_>>>()
            .and_then(RedLock::new);
        async move { Ok(red?.lock().await?) }
    }

    async fn unlock(&self, guard: RedGuard) -> Result<()> {
        Ok(guard.unlock().await?)
    }

    fn close(&self) -> impl Future<Output = ()> + Send {
        let members = Arc::clone(&self.members);
        async move {
            for member in members.iter() {
                close_client(member).await;
            }
        }
    }
}

/// The `rslock` crate (Redlock with one server): `acquire(name, ttl)`
/// (which retries `SET NX PX` until it succeeds) and `release()`.
#[cfg(feature = "rslock")]
#[derive(Clone, Debug)]
pub(crate) struct RsLock {
    pub(crate) manager: rslock::LockManager,
    /// The lock's time to live (rslock has no watchdog).
    pub(crate) ttl: std::time::Duration,
}

#[cfg(feature = "rslock")]
impl Locker for RsLock {
    type Held = rslock::LockGuard;

    fn name(&self) -> &'static str {
        "rslock"
    }

    fn client_commands(&self) -> &'static [&'static str] {
        // `set` (`SET NX PX`) is sent; its unlock script's `get`/`del` are
        // not.
        &["set", "evalsha", "eval", "ping", "script", "client"]
    }

    fn lock(&self, name: &str) -> impl Future<Output = Result<rslock::LockGuard>> + Send {
        let manager = self.manager.clone();
        let name = name.to_owned();
        let ttl = self.ttl;
        async move { Ok(manager.acquire(name.as_bytes(), ttl).await?) }
    }

    async fn unlock(&self, guard: rslock::LockGuard) -> Result<()> {
        guard.release().await;
        Ok(())
    }

    fn close(&self) -> impl Future<Output = ()> + Send {
        // Nothing to wait for: rslock has no background work.
        std::future::ready(())
    }
}
