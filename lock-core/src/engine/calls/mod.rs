//! Store calls that finish even when their caller goes away.
//!
//! Dropping a future that is waiting on the store must not leave a lock held
//! on nobody's behalf: the request may already be on the wire and run. So
//! every acquire and release is a [`Detached`] future: its caller polls it
//! in place (no task of its own, so the usual path costs no hop between
//! tasks and threads), and if the caller is dropped first, the call is
//! handed, as it stands, to a task of the client's runtime that finishes
//! it. An acquisition nobody receives is handed to a [`PendingHold`], whose
//! `Drop` releases it again.
//!
//! Transient failures are retried here, reusing the request id, so the
//! request's record in the store returns the first outcome instead of
//! applying it twice. A request runs only before its deadline and its
//! record outlives that deadline (the `store_clock` module), so this holds
//! however late a copy of the request arrives; a request refused as stale
//! never ran, and a release refused so is made again as a new request.
//!
//! Every release's outcome goes to the client's table of holds (the
//! `holds` module): a release that freed the lock or found it not held
//! ends the owner's hold, and every guard left of it is told its lock is
//! lost. A guard whose hold is already known lost sends no release at all:
//! the owner's count in the store may belong to a newer hold by then.
//!
//! One file per job: [`retry`](mod@retry) (calls retried, requests redated),
//! [`acquire`](mod@acquire) (an attempt and its settling), [`release`](mod@release), and
//! [`pending_hold`].

pub(crate) mod acquire;
pub(crate) mod pending_hold;
pub(crate) mod release;
pub(crate) mod retry;

pub(crate) use crate::engine::detached::Detached;
pub(crate) use crate::engine::queue_place::QueueTicket;
pub(crate) use acquire::*;
pub(crate) use pending_hold::*;
pub(crate) use release::*;
pub use retry::Redate;
pub(crate) use retry::*;
