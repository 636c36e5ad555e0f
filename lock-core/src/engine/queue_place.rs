//! A waiter's place in a lock's queue, left in the background when the
//! place is dropped unused.

use std::sync::Arc;

use crate::backend::kind::{AcquireRequest, ExclusiveKind};
use crate::engine::calls;
use crate::engine::state::ClientInner;
use crate::engine::stats::InFlight;

/// A place in a lock's queue (a kind whose waiters queue). Dropping it leaves the queue (in the
/// background), unless the place was used ([`QueueTicket::disarm`]).
///
/// An attempt in flight carries its wait's place and hands it back when it
/// lands ([`acquire`](fn@crate::engine::calls::acquire::acquire)), so a waiter cancelled while an attempt is in flight
/// leaves the queue only after that attempt landed: the queue is never
/// left first and joined after.
pub(crate) struct QueueTicket {
    inner: Arc<ClientInner>,
    kind: Arc<dyn ExclusiveKind>,
    name: crate::LockName,
    owner: crate::Owner,
    /// The wait's ticket: leaving gives back a lock granted to it.
    wait_ticket: Option<u64>,
    armed: bool,
}

impl QueueTicket {
    pub(crate) fn new(
        inner: Arc<ClientInner>,
        kind: Arc<dyn ExclusiveKind>,
        req: &AcquireRequest,
    ) -> Self {
        Self {
            inner,
            kind,
            name: req.name.clone(),
            owner: req.owner,
            wait_ticket: req.wait_ticket,
            armed: true,
        }
    }

    /// Leaves without the wait's ticket: the wait took the lock, maybe by
    /// a grant whose entry the store keeps until its holder releases.
    pub(crate) fn forget_wait_ticket(&mut self) {
        self.wait_ticket = None;
    }

    /// The place was used (the lock was taken, which leaves the queue) or
    /// handed to a newer ticket for the same place.
    pub(crate) fn disarm(mut self) {
        self.armed = false;
    }
}

impl Drop for QueueTicket {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let backend = Arc::clone(&self.kind);
        let inner = Arc::clone(&self.inner);
        let (name, owner, ticket) = (self.name.clone(), self.owner, self.wait_ticket);
        let in_flight = InFlight::start(&self.inner.stats);
        self.inner.runtime.spawn(async move {
            let _in_flight = in_flight;
            let left = calls::retried(&inner, "leave_queue", backend.behaviour().name, || {
                backend.leave_queue(&name, &owner, ticket)
            })
            .await;
            if let Err(e) = left {
                tracing::warn!(%e, lock = %name, "could not leave the queue; the entry expires with the waiter timeout");
            }
        });
    }
}
