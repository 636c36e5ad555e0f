//! [`CountingStore`]: the few store operations a counting kind (the
//! semaphores, the latch) gives the engine's [`Counter`](super::Counter).

use std::future::Future;

use crate::backend::connection::{Channel, Wake};
use crate::engine::calls::Redate;
use crate::engine::wait_loop::Look;
use crate::error::Result;
use crate::name::LockName;

/// A counting kind's store operations, as the engine's counter calls them.
///
/// # Contract
/// - Each operation is atomic on the store.
/// - A take ([`CountingStore::try_take`]) is the same request on every
///   call with the same [`CountingStore::Take`]: its record answers a
///   repeat with the first outcome ("nothing free" included), and a
///   request that has not run by its deadline never runs, so the counter
///   may repeat it after an unknown outcome without taking twice.
/// - A give-back ([`CountingStore::give_back`]) is likewise recorded by
///   its request id; refused as stale, it never ran, and is made again as
///   a new request ([`Redate`]).
/// - Every change that may let a waiter through is announced on
///   [`CountingStore::channel`] with a payload [`CountingStore::wake`]
///   reads.
///
/// A kind whose waiters take nothing (a condition such as "the count is
/// zero") has a take that only reads, and gives nothing back on undo.
pub trait CountingStore: Send + Sync + 'static {
    /// One take request: what to take, its request id and deadline.
    type Take: Clone + Send + Sync + 'static;
    /// What a take that got through took (handed to the kind's handle).
    type Got: Send + 'static;
    /// One give-back request (recorded by its id, made again when stale).
    type GiveBack: Redate + Send + Sync + 'static;
    /// What a give-back answers.
    type Given: Send + 'static;

    /// The kind's name in spans and metric labels (the `kind` label).
    fn kind_name(&self) -> &'static str;

    /// The channel the kind announces changes of `name`'s count on.
    fn channel(&self, name: &LockName) -> Channel;

    /// What a notice's payload on [`CountingStore::channel`] wakes.
    fn wake(&self, payload: &[u8]) -> Option<Wake>;

    /// Tries the take `req` once: [`Look::Got`] with what it took, or
    /// [`Look::Busy`] with when to look again at the latest.
    ///
    /// # Errors
    /// The store's errors (retryable ones are retried by the counter).
    fn try_take(&self, req: &Self::Take) -> impl Future<Output = Result<Look<Self::Got>>> + Send;

    /// The give-back that undoes `got`, taken by `req`, as a new request
    /// with deadline `deadline_ms`; `None` when a take takes nothing.
    fn undo(&self, req: &Self::Take, got: &Self::Got, deadline_ms: u64) -> Option<Self::GiveBack>;

    /// Runs the give-back `req` once.
    ///
    /// # Errors
    /// The store's errors (the counter retries, and goes on in the
    /// background after an unknown outcome).
    fn give_back(&self, req: &Self::GiveBack) -> impl Future<Output = Result<Self::Given>> + Send;
}
