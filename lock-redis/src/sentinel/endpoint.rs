//! [`Endpoint`]: where a transport's connections go (see the module docs
//! of `sentinel`).

use std::sync::Arc;

use lock_core::Result;
use redis::Client;
use tokio::sync::watch;
use tokio::time::Instant;

use super::Master;

/// Where a transport's connections go; see the module docs.
#[derive(Clone)]
pub(crate) enum Endpoint {
    /// One server, at a fixed address (boxed: a client is large, and the
    /// endpoint is kept by every connection set and pub/sub task).
    Fixed(Box<Client>),
    /// The current master of a Sentinel group.
    Sentinel(Arc<Master>),
}

impl Endpoint {
    /// A client for the server to connect to now, found by `deadline`,
    /// and the [generation](Endpoint::generation) it belongs to.
    pub(crate) async fn client(&self, deadline: Instant) -> Result<(Client, u64)> {
        match self {
            Self::Fixed(client) => Ok((Client::clone(client), 0)),
            Self::Sentinel(master) => master.client(deadline).await,
        }
    }

    /// Whether the server may change, so connections to the old one must be
    /// replaced: a `READONLY` reply then means "ask again".
    pub(crate) fn follows_failovers(&self) -> bool {
        matches!(self, Self::Sentinel(_))
    }

    /// Forgets the cached master: the next connect asks the sentinels.
    pub(crate) fn invalidate(&self) {
        if let Self::Sentinel(master) = self {
            master.invalidate();
        }
    }

    /// Stops what the endpoint runs in the background (the `+switch-master`
    /// listener).
    pub(crate) fn close(&self) {
        if let Self::Sentinel(master) = self {
            master.close();
        }
    }

    /// Moves on each time the server is found to be another node.
    pub(crate) fn generation(&self) -> u64 {
        match self {
            Self::Fixed(_) => 0,
            Self::Sentinel(master) => master.generation(),
        }
    }

    /// Tells when [`Endpoint::generation`] moves on; `None` for a fixed
    /// server.
    pub(crate) fn changes(&self) -> Option<watch::Receiver<u64>> {
        match self {
            Self::Fixed(_) => None,
            Self::Sentinel(master) => Some(master.changes()),
        }
    }
}
