//! What `run` holds while its command runs: one lock, a RedLock over
//! several servers (`--redlock`), or a permit of an expirable-permit
//! semaphore (`--permits N`). All end the same ways (released, lost, their
//! lease over), so `run` treats them alike.

use lock_redis::{ExpirablePermitGuard, Guard, LockName, RedGuard, Result};
use tokio::time::Instant;

/// A held lock of any shape.
pub(crate) enum Held {
    /// A lock on one server or cluster.
    One(Guard),
    /// A majority of the `--redlock` servers.
    Red(RedGuard),
    /// One of the N permits of `--permits N`.
    Permit(ExpirablePermitGuard),
}

impl Held {
    /// Resolves when the hold is lost (for a RedLock: once fewer than a
    /// majority of its servers hold it).
    pub(crate) async fn lost(&self) {
        match self {
            Self::One(guard) => guard.lost().await,
            Self::Red(guard) => guard.lost().await,
            Self::Permit(permit) => permit.lost().await,
        }
    }

    /// After this instant someone else may hold the lock.
    pub(crate) fn lease_deadline(&self) -> Instant {
        match self {
            Self::One(guard) => guard.lease_deadline(),
            Self::Red(guard) => guard.lease_deadline(),
            Self::Permit(permit) => permit.lease_deadline(),
        }
    }

    /// The fencing token, when one was asked for (never for a RedLock:
    /// `--fenced` and `--redlock` exclude each other).
    pub(crate) fn fencing_token(&self) -> Option<u64> {
        match self {
            Self::One(guard) => guard.fencing_token(),
            Self::Red(_) | Self::Permit(_) => None,
        }
    }

    /// Releases it.
    pub(crate) async fn unlock(self) -> Result<()> {
        match self {
            Self::One(guard) => guard.unlock().await,
            Self::Red(guard) => guard.unlock().await,
            Self::Permit(permit) => permit.release().await,
        }
    }
}

/// What `run` holds, named for messages: `lock "NAME"`, or `the permit of
/// "NAME"` for `--permits`.
pub(crate) fn subject(permits: bool, name: &LockName) -> String {
    if permits {
        format!("the permit of {name:?}")
    } else {
        format!("lock {name:?}")
    }
}
