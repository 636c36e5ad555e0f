//! [`PendingHold`]: an acquisition not yet handed to a guard, released
//! again when dropped.

use crate::engine::calls::release::release_until;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::backend::kind::{AcquireRequest, ExclusiveKind, ReleaseRequest};
use crate::engine::state::ClientInner;
use crate::engine::stats::InFlight;

/// An acquisition that has not been handed to a guard yet. Dropping it
/// releases the hold it stands for.
pub(crate) struct PendingHold {
    pub(super) inner: Arc<ClientInner>,
    pub(super) kind: Arc<dyn ExclusiveKind>,
    pub(super) req: AcquireRequest,
    pub(super) armed: bool,
    pub(super) fencing_token: Option<u64>,
    /// When the first attempt was sent: the lease runs from no earlier.
    pub(super) started: Instant,
    /// The lock a release granted to the wait's ticket.
    pub(super) grant: bool,
    #[allow(dead_code)] // held for its Drop: counts the hold as in flight
    pub(super) in_flight: InFlight,
}

impl PendingHold {
    /// The hold a release handed to the wait of `req`
    /// ([`crate::backend::Wake::Granted`]): no call was made for it, and its lease
    /// runs from no earlier than `started`, when the attempt that last
    /// queued the wait was sent (the grant came after that attempt ran).
    pub(crate) fn granted(
        inner: &Arc<ClientInner>,
        kind: &Arc<dyn ExclusiveKind>,
        req: AcquireRequest,
        started: Instant,
    ) -> Self {
        Self {
            in_flight: InFlight::start(&inner.stats),
            inner: Arc::clone(inner),
            kind: Arc::clone(kind),
            req,
            armed: true,
            fencing_token: None,
            started,
            grant: true,
        }
    }

    /// Whether it is the lock a release granted to the wait's ticket.
    pub(crate) fn is_grant(&self) -> bool {
        self.grant
    }

    /// Whether its lease, counted from when it was sent, already reached
    /// the point where a guard of it would be reported lost: its reply
    /// came that late (a store or network slower than the lease, or this
    /// process paused). A guard of it would be lost as it is handed out.
    pub(crate) fn is_overdue(&self) -> bool {
        let lease = Duration::from_millis(self.req.lease_ms);
        self.inner
            .config
            .lease_deadline(self.started, lease)
            .is_lost()
    }

    /// Disarms the drop guard without releasing anything: the hold, if it
    /// is still there, is left to its lease.
    pub(crate) fn forget(mut self) {
        self.armed = false;
    }

    /// Disarms the drop guard and returns what the guard needs.
    pub(crate) fn accept(mut self) -> (AcquireRequest, Option<u64>, Instant) {
        self.armed = false;
        (self.req.clone(), self.fencing_token, self.started)
    }

    /// The kind that took the hold.
    pub(crate) fn kind(&self) -> &Arc<dyn ExclusiveKind> {
        &self.kind
    }

    /// The acquisition that took it.
    pub(crate) fn request(&self) -> &AcquireRequest {
        &self.req
    }

    /// When its first attempt was sent.
    pub(crate) fn started(&self) -> Instant {
        self.started
    }
}

impl Drop for PendingHold {
    fn drop(&mut self) {
        if self.armed {
            let req = &self.req;
            tracing::debug!(lock = %req.name, "acquisition abandoned by its caller; releasing it");
            let undo = ReleaseRequest::new(
                req.name.clone(),
                req.owner,
                req.lease_ms,
                self.inner.request_deadline(),
            )
            .private_owner(req.private_owner);
            // Its lease runs from no earlier than `started`: until it is
            // reported lost, no newer hold of the owner can exist.
            let lease = Duration::from_millis(req.lease_ms);
            let until = self
                .inner
                .config
                .lease_deadline(self.started, lease)
                .lost_at;
            drop(release_until(
                &self.inner,
                &self.kind,
                undo,
                None,
                Some(until),
            ));
        }
    }
}

/// Releases the hold an acquisition `req` of `kind` (first sent at
/// `started`) took, or may have taken, when no guard will have it.
pub(crate) fn release_on_behalf(
    inner: Arc<ClientInner>,
    kind: Arc<dyn ExclusiveKind>,
    req: AcquireRequest,
    started: Instant,
) {
    drop(PendingHold {
        in_flight: InFlight::start(&inner.stats),
        inner,
        kind,
        req,
        armed: true,
        fencing_token: None,
        started,
        grant: false,
    });
}
