//! The machinery, written once for every kind and store: the engine of one
//! client and its state, store calls that finish when their caller goes
//! away, waiting (the waiter registry and the one wait loop), the table of
//! holds and the watchdog that renews it, riding out outages, the store's
//! clock, closing, and counters. Private to the crate: its promises are
//! the public behaviour of the handles (`handles`), and the seams it runs
//! kinds and stores through are in [`crate::backend`].
//!
//! Layering: nothing here imports a handle; `state` (the client's shared
//! state) imports nothing of the rest but the tables it owns, so the
//! files form no import cycle (`scripts/check_engine_layers.py`).

pub(crate) mod calls;
pub(crate) mod client;
pub(crate) mod closing;
pub(crate) mod counter;
pub(crate) mod detached;
pub(crate) mod holds;
pub(crate) mod live_permits;
pub(crate) mod outage;
pub(crate) mod permit_leases;
pub(crate) mod queue_place;
pub(crate) mod state;
pub(crate) mod stats;
pub(crate) mod store_clock;
pub(crate) mod wait_loop;
pub(crate) mod waiter;
pub(crate) mod watchdog;
