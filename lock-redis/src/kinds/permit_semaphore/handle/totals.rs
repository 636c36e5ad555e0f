//! The totals of a [`PermitExpirableSemaphore`]: setting and reading the
//! number of permits free and taken, and a permit's remaining lease
//! (Redisson's `setPermits`, `getPermits`, `acquiredPermits`,
//! `getLeaseTime`).

use std::time::Duration;

use super::super::super::semaphore::check_change;
use super::super::{PermitCounts, PermitId, PermitLease};
use super::PermitExpirableSemaphore;
use lock_core::Result;

impl PermitExpirableSemaphore {
    /// Sets the total number of permits, free and taken, to `permits`:
    /// the free count moves by the difference, so permits taken stay taken
    /// (and the free count goes negative when the total drops below them);
    /// creates the semaphore when missing. Waiters are told unless the total
    /// was already `permits`.
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`](lock_core::LockError::InvalidArgument) above [`MAX_PERMITS`](crate::MAX_PERMITS)
    /// (before any I/O) or when the free count would pass
    /// −[`MAX_PERMITS`](crate::MAX_PERMITS) (nothing written); otherwise as
    /// [`PermitExpirableSemaphore::try_set_permits`].
    ///
    /// # Cancel safety
    /// The call runs to completion even when this future is dropped; a
    /// retry never moves the count twice.
    ///
    /// # Examples
    /// ```
    /// # async fn demo(sem: lock_redis::PermitExpirableSemaphore) -> lock_redis::Result<()> {
    /// sem.set_permits(5).await?;
    /// let permit = sem.acquire().await?;
    /// sem.set_permits(3).await?; // one is taken: 2 stay free
    /// assert_eq!((sem.permits().await?, sem.available_permits().await?), (3, 2));
    /// # permit.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn set_permits(&self, permits: u64) -> Result<()> {
        check_change(i128::from(permits), "set_permits")?;
        let req = self.request(permits);
        self.counter
            .call("set_permits", req, |kind, req| async move {
                kind.set_permits(&req).await
            })
            .await
    }

    async fn counts(&self) -> Result<PermitCounts> {
        let name = self.name().clone();
        self.counter
            .call("count permits", name, |kind, name| async move {
                kind.counts(&name).await
            })
            .await
    }

    /// The total number of permits, free and taken, after expired permits
    /// came back: 0 for a semaphore never set (whatever is taken).
    ///
    /// # Errors
    /// As [`PermitExpirableSemaphore::try_set_permits`].
    ///
    /// # Cancel safety
    /// Safe to drop (reclaiming expired permits is harmless either way).
    pub async fn permits(&self) -> Result<i64> {
        Ok(self.counts().await?.permits())
    }

    /// The permits taken now (their leases still running, or without a
    /// lease).
    ///
    /// # Errors
    /// As [`PermitExpirableSemaphore::try_set_permits`].
    ///
    /// # Cancel safety
    /// As [`PermitExpirableSemaphore::permits`].
    pub async fn acquired_permits(&self) -> Result<i64> {
        Ok(self.counts().await?.acquired)
    }

    /// How long the lease of the taken permit `id` still runs; `None` when
    /// it has no lease.
    ///
    /// # Errors
    /// [`LockError::NotHeld`](lock_core::LockError::NotHeld) when the permit is not taken (never was,
    /// released, or its lease ended; Redisson throws there too); otherwise
    /// as [`PermitExpirableSemaphore::try_set_permits`].
    ///
    /// # Cancel safety
    /// As [`PermitExpirableSemaphore::permits`].
    ///
    /// # Examples
    /// ```
    /// # use std::time::Duration;
    /// # async fn demo(sem: lock_redis::PermitExpirableSemaphore) -> lock_redis::Result<()> {
    /// let permit = sem.acquire_with_lease(Duration::from_secs(30)).await?;
    /// assert!(sem.lease_time(permit.id()).await?.unwrap() <= Duration::from_secs(30));
    /// # Ok(()) }
    /// ```
    pub async fn lease_time(&self, id: PermitId) -> Result<Option<Duration>> {
        let name = self.name().clone();
        let lease = self
            .counter
            .call("lease_time", name, move |kind, name| async move {
                kind.lease_time(&name, id).await
            })
            .await?;
        match lease {
            PermitLease::Ends(left) => Ok(Some(left)),
            PermitLease::Unlimited => Ok(None),
            PermitLease::NotTaken => Err(crate::kinds::permit_semaphore::request::permit_not_held(
                self.name().as_str(),
                id,
            )),
        }
    }
}
