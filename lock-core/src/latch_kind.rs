//! The seam between the engine and a count-down latch's store operations:
//! [`LatchKind`].
//!
//! A latch kind runs each operation atomically on the store and names the
//! channel its waiters listen on; waiting, retries and cancellation safety
//! are the engine's ([`crate::CountDownLatch`]). Names of keys, channels
//! and messages are the kind's business.
//!
//! # Contract
//! - Each operation is atomic on the store.
//! - Every write ([`LatchKind::try_set_count`], [`LatchKind::count_down`],
//!   [`LatchKind::delete`]) carries a request id: repeating a request with
//!   the same id before its deadline (`deadline_ms`) returns the first outcome and writes
//!   nothing, so the engine may retry after an unknown outcome (a repeated
//!   set never sets a count again after the latch was counted down, a
//!   repeated delete never deletes a newer count).
//! - A count-down that brings the count to zero announces it on the
//!   latch's channel ([`LatchKind::channel`]), and so do setting a count and
//!   deleting the latch; [`LatchKind::wake`] reads those messages.
//! - A value of another type at the latch's key is reported as
//!   [`crate::LockError::WrongType`] and left untouched by every operation.

use async_trait::async_trait;

use crate::connection::{Channel, Wake};
use crate::error::Result;
use crate::kind::RequestId;
use crate::name::LockName;

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
    /// outcome until past then (see the `store_clock` module of lock-core).
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

/// The store operations of a count-down latch, bound to one client's
/// connection. See the module docs for the contract.
#[async_trait]
pub trait LatchKind: Send + Sync + 'static {
    /// Whether this deployment can serve a latch called `name` at all,
    /// checked without I/O when a handle is made. The default accepts
    /// every name.
    ///
    /// # Errors
    /// [`crate::LockError::InvalidArgument`] saying why not (e.g. its keys
    /// and channel would live on different nodes).
    fn check_name(&self, name: &LockName) -> Result<()> {
        let _ = name;
        Ok(())
    }

    /// Sets the count to `count` (≥ 1) when the latch does not exist;
    /// `false` (nothing written) when it does.
    ///
    /// # Errors
    /// [`crate::LockError::WrongType`] when the key holds something that
    /// is not a count; a retryable error when the store could not be
    /// reached.
    async fn try_set_count(&self, req: &LatchRequest, count: u64) -> Result<bool>;

    /// Counts down by one; at zero the latch is deleted and its waiters
    /// told. Counting down a latch that does not exist changes nothing.
    /// Returns the count left (0: open).
    ///
    /// # Errors
    /// As [`LatchKind::try_set_count`].
    async fn count_down(&self, req: &LatchRequest) -> Result<u64>;

    /// The current count; 0 when the latch does not exist (it is open).
    ///
    /// # Errors
    /// As [`LatchKind::try_set_count`].
    async fn count(&self, name: &LockName) -> Result<u64>;

    /// Deletes the latch (its waiters are told to look again); whether it
    /// existed.
    ///
    /// # Errors
    /// As [`LatchKind::try_set_count`].
    async fn delete(&self, req: &LatchRequest) -> Result<bool>;

    /// The channel on which the latch's waiters are told to look again.
    fn channel(&self, name: &LockName) -> Channel;

    /// What a message on a latch channel asks of its waiters; `None` for a
    /// message to ignore.
    fn wake(&self, payload: &[u8]) -> Option<Wake>;
}
