//! A fake kind and a fake connection: the engine's seams with an in-Rust
//! store behind them, so its tests run without Lua, under paused time, in
//! milliseconds.
//!
//! - [`FakeConnection`]: records subscriptions; a test delivers notices.
//! - [`FakeKind`]: exclusive re-entrant locks with request records and
//!   growing leases (the contract of `ExclusiveKind`), and per-call
//!   scripted faults ([`Step`]) with call counts ([`Op`]); with a
//!   `KindBehaviour` that queues waiters, a FIFO per lock, and grants to
//!   its head when the kind hands over ([`Fake::with_behaviour`]).

mod connection;
mod kind;
mod queue;
mod script;
mod store;

use std::sync::Arc;

pub(crate) use connection::FakeConnection;
pub(crate) use kind::FakeKind;
pub(crate) use script::{Op, Step};

use lock_core::backend::{Engine, KindBehaviour};
use lock_core::ClientConfig;

/// `fut`, which must finish within a minute of (paused) time: a broken
/// engine then fails the test instead of hanging it (the watchdog's timers
/// would keep paused time moving forever).
pub(crate) async fn bounded<F: std::future::Future>(fut: F) -> F::Output {
    tokio::time::timeout(std::time::Duration::from_secs(60), fut)
        .await
        .expect("finished within a minute")
}

/// An engine over a fresh fake connection and kind.
pub(crate) struct Fake {
    /// The engine under test.
    pub(crate) engine: Engine,
    /// Its connection.
    pub(crate) connection: Arc<FakeConnection>,
    /// The kind its locks use.
    pub(crate) kind: Arc<FakeKind>,
}

impl Fake {
    /// With the default configuration (30 s watchdog lease, 4 attempts).
    pub(crate) fn new() -> Self {
        Self::with(ClientConfig::default())
    }

    /// With `config`.
    pub(crate) fn with(config: ClientConfig) -> Self {
        Self::over(FakeConnection::new(), config)
    }

    /// With the default configuration, over a kind that behaves as
    /// `behaviour` says.
    pub(crate) fn with_behaviour(behaviour: KindBehaviour) -> Self {
        let connection = FakeConnection::new();
        let kind = FakeKind::with_behaviour(Arc::clone(&connection), behaviour);
        Self::of(connection, kind, ClientConfig::default())
    }

    /// Over `connection`, with `config`.
    pub(crate) fn over(connection: Arc<FakeConnection>, config: ClientConfig) -> Self {
        let kind = FakeKind::new(Arc::clone(&connection));
        Self::of(connection, kind, config)
    }

    fn of(connection: Arc<FakeConnection>, kind: Arc<FakeKind>, config: ClientConfig) -> Self {
        let engine = Engine::new(Arc::clone(&connection) as _, config).expect("engine");
        Self {
            engine,
            connection,
            kind,
        }
    }

    /// Waits until no acquire or release is in flight
    /// (`Engine::settle`); panics when that takes over a minute of (paused)
    /// time, rather than hanging the test.
    pub(crate) async fn settle(&self) {
        tokio::time::timeout(std::time::Duration::from_secs(60), self.engine.settle())
            .await
            .expect("the engine settled");
    }

    /// A handle on the lock `name`.
    pub(crate) fn lock(&self, name: &str) -> lock_core::Lock {
        self.engine.lock(name, self.kind.dyn_kind()).expect("lock")
    }
}
