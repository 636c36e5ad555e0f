//! How the engine's counter takes and gives back expirable permits
//! ([`CountingStore`] for [`PermitSemaphore`]).

use tokio::time::Instant;

use lock_core::backend::{Channel, CountingStore, Look, Wake};
use lock_core::{LockName, Result};

use super::{LeaseOutcome, LeasesRelease, LeasesRequest, PermitSemaphore};

/// One take of leased permits: the request (its ids are its identity
/// across retries) and when it was first sent, from which the guards'
/// lease deadlines are measured (the store starts the lease no earlier;
/// retries repeat the ids without restarting it).
#[derive(Debug, Clone)]
pub struct PermitTake {
    /// The permits asked for, under fresh ids.
    pub req: LeasesRequest,
    /// When the take was first sent.
    pub sent: Instant,
}

impl PermitTake {
    /// `req`, sent now.
    pub fn new(req: LeasesRequest) -> Self {
        Self {
            req,
            sent: Instant::now(),
        }
    }
}

/// A take is "if free ≥ n, take n under these ids" (`acquire.lua`),
/// answering when the earliest lease ends when none is free; it is undone
/// by giving those ids back (`release.lua`).
impl CountingStore for PermitSemaphore {
    type Take = PermitTake;
    type Got = ();
    type GiveBack = LeasesRelease;
    type Given = u64;

    fn kind_name(&self) -> &'static str {
        "permit_semaphore"
    }

    fn channel(&self, name: &LockName) -> Channel {
        PermitSemaphore::channel(self, name)
    }

    fn wake(&self, payload: &[u8]) -> Option<Wake> {
        PermitSemaphore::wake(self, payload)
    }

    async fn try_take(&self, take: &PermitTake) -> Result<Look<()>> {
        Ok(match self.try_acquire_many(&take.req).await? {
            LeaseOutcome::Acquired => Look::Got(()),
            LeaseOutcome::Busy { retry_in } => Look::Busy(retry_in),
        })
    }

    fn undo(&self, take: &PermitTake, _got: &(), deadline_ms: u64) -> Option<LeasesRelease> {
        let ids = take.req.ids.clone();
        Some(LeasesRelease::new(take.req.name.clone(), ids, deadline_ms))
    }

    async fn give_back(&self, req: &LeasesRelease) -> Result<u64> {
        self.release_many(req).await
    }
}
