//! [`LatchRequest`]: one write to a latch, identified across its retries.

use lock_core::backend::RequestId;
use lock_core::LockName;

/// One write to one latch (setting its count, counting down, deleting
/// it), identified across its retries.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct LatchRequest {
    /// The latch.
    pub name: LockName,
    /// Identifies this write across retries.
    pub request_id: RequestId,
    /// The request's deadline on the store's clock, in milliseconds since
    /// the Unix epoch: the store runs it only before then, and keeps its
    /// outcome until past then (see [`lock_core::backend::Engine::request_deadline`]).
    pub deadline_ms: u64,
}

impl LatchRequest {
    /// A request with a fresh request id.
    pub fn new(name: LockName, deadline_ms: u64) -> Self {
        Self {
            name,
            request_id: RequestId::new(),
            deadline_ms,
        }
    }
}

// A count-down refused as stale never ran: it is made again as a new
// request (`lock_core::backend::Counter::give_back`).
lock_core::redate!(LatchRequest);
