//! The client's table of counted permits its live guards hold: permits
//! of a kind whose store keeps only a count (a plain semaphore's), so the
//! client itself must remember what to give back when it closes.
//!
//! # Who gives back
//! Each entry is taken out exactly once: by its guard (released,
//! forgotten or dropped: [`LivePermit::take`]) or by the client's close
//! ([`LivePermits::close`]), and whoever takes it gives the permits back.
//! So a guard used after its client closed sends nothing: the close gave
//! its permits back already. Once closing, the table refuses new entries:
//! an acquisition landing then gives its permits back itself.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use futures::future::BoxFuture;

use crate::error::Result;

/// What gives one guard's permits back: called once, by whoever takes the
/// entry.
pub type GiveBack = Box<dyn FnOnce() -> BoxFuture<'static, Result<()>> + Send>;

#[derive(Default)]
struct Table {
    entries: HashMap<u64, GiveBack>,
    closed: bool,
}

/// Every counted permit of one client's live guards
/// ([`crate::backend::Engine::live_permits`]).
#[derive(Default)]
pub struct LivePermits {
    table: Mutex<Table>,
    next: AtomicU64,
}

impl std::fmt::Debug for LivePermits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LivePermits").finish_non_exhaustive()
    }
}

impl LivePermits {
    fn table(&self) -> MutexGuard<'_, Table> {
        // Every update is one map operation: consistent across a panic.
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers the permits of a guard just handed out, given back by
    /// `give_back` if the client closes first. `None` once the client is
    /// closing: the caller gives them back itself.
    pub fn register(self: &Arc<Self>, give_back: GiveBack) -> Option<LivePermit> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let mut table = self.table();
        if table.closed {
            return None;
        }
        table.entries.insert(id, give_back);
        Some(LivePermit {
            id,
            table: Arc::clone(self),
        })
    }

    /// The client is closing: no entry registers from now on, and every
    /// entry's give-back is handed to the close.
    pub(crate) fn close(&self) -> Vec<GiveBack> {
        let mut table = self.table();
        table.closed = true;
        table
            .entries
            .drain()
            .map(|(_, give_back)| give_back)
            .collect()
    }
}

/// A guard's entry in [`LivePermits`].
pub struct LivePermit {
    id: u64,
    table: Arc<LivePermits>,
}

impl std::fmt::Debug for LivePermit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LivePermit").field("id", &self.id).finish()
    }
}

impl LivePermit {
    /// Takes the entry out: `true` when it was still there, and the caller
    /// gives the permits back; `false` when the client's close took it
    /// (and gave them back).
    pub fn take(&self) -> bool {
        self.table.table().entries.remove(&self.id).is_some()
    }
}
