//! The state one client's engine shares with everything it runs: ids,
//! configuration, the connection, and the tables (waiters, holds, permits,
//! the watchdog, the store's clock, outages). A leaf of the engine: it
//! imports the tables it owns and nothing that uses it, so every part of
//! the engine (and every handle) can read it without an import cycle.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use uuid::Uuid;

use crate::backend::connection::Connection;
use crate::config::ClientConfig;
use crate::engine::holds::Holds;
use crate::engine::live_permits::LivePermits;
use crate::engine::outage::Outages;
use crate::engine::permit_leases::PermitLeases;
use crate::engine::stats::Stats;
use crate::engine::store_clock::StoreClock;
use crate::engine::waiter::WaiterRegistry;
use crate::engine::watchdog::Watchdog;
use crate::error::{LockError, Result};
use crate::owner::Owner;

/// What one client's engine shares (see the module docs). Made once, by
/// [`crate::backend::Engine::new`].
pub(crate) struct ClientInner {
    pub(crate) id: Uuid,
    pub(crate) config: ClientConfig,
    pub(crate) connection: Arc<dyn Connection>,
    pub(crate) waiters: Arc<WaiterRegistry>,
    /// Every hold of this client's guards, by (lock name, owner).
    pub(crate) holds: Arc<Holds>,
    /// Every leased permit of this client's permit guards.
    pub(crate) permits: Arc<PermitLeases>,
    pub(crate) watchdog: Watchdog,
    pub(crate) stats: Arc<Stats>,
    pub(crate) runtime: tokio::runtime::Handle,
    /// The watchdog lease in milliseconds.
    pub(crate) watchdog_ms: u64,
    /// The fair-lock waiter timeout in milliseconds.
    pub(crate) waiter_ms: u64,
    /// The store's clock as this client estimates it: dates every
    /// request's deadline (the `store_clock` module).
    pub(crate) clock: StoreClock,
    /// Waiters riding out a store outage (the `outage` module).
    pub(crate) outages: Outages,
    /// Counted permits of this client's live guards (a plain
    /// semaphore's), given back by the close.
    pub(crate) live_permits: Arc<LivePermits>,
    pub(crate) next_owner: AtomicU64,
    /// Set when a close starts: no new acquisition starts.
    pub(crate) closed: AtomicBool,
    /// Set when a close has given back what it could: background repeats
    /// stop, the connection closes.
    pub(crate) shut: AtomicBool,
}

impl ClientInner {
    pub(crate) fn check_open(&self) -> Result<()> {
        if self.closed.load(Ordering::SeqCst) {
            Err(LockError::Closed)
        } else {
            Ok(())
        }
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// Whether a close finished giving back (or ran out of time): nothing
    /// more reaches the store.
    pub(crate) fn is_shut(&self) -> bool {
        self.shut.load(Ordering::Acquire)
    }

    /// The deadline of a request made now: it may run for
    /// [`ClientConfig::record_ttl`].
    pub(crate) fn request_deadline(&self) -> u64 {
        self.clock.deadline_in(self.config.record_ttl)
    }

    /// Learns from `error` the store's clock, when it refused a request as
    /// stale.
    pub(crate) fn learn_clock(&self, error: &LockError) {
        if let LockError::StaleRequest { store_time_ms } = error {
            self.clock.resync(*store_time_ms);
        }
    }

    pub(crate) fn new_owner(&self) -> Owner {
        Owner::new(self.id, self.next_owner.fetch_add(1, Ordering::Relaxed))
    }
}
