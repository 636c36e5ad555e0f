//! The engine's own tests, against a fake kind and a fake connection (the
//! `fake` module): no Lua, no store, paused tokio time throughout, so
//! every duration they assert is exact. `queueing` runs the fake as a
//! kind whose waiters queue, and as one that hands over.

mod cancellation;
mod closing;
mod fake;
mod holds;
mod queueing;
mod retries;
mod uncontended;
mod waiting;
mod watchdog;
