//! [`Endpoint`]: where a transport's connections go, and with which
//! credentials (see the module docs of `sentinel`, and of `credentials`).

use std::sync::Arc;

use lock_core::Result;
use redis::Client;
use tokio::sync::watch;
use tokio::time::Instant;

use super::Master;
use crate::transport::credentials::{self, CredentialsProvider};

/// Where a transport's connections go; see the module docs.
#[derive(Clone)]
pub(crate) struct Endpoint {
    server: Server,
    /// Asked at every connect to a fixed server, when set: the one place
    /// every connection (command and pub/sub) gets rotating credentials.
    /// A Sentinel group's [`Master`] holds its own, for its lookups.
    credentials: Option<Arc<dyn CredentialsProvider>>,
}

#[derive(Clone)]
enum Server {
    /// One server, at a fixed address (boxed: a client is large, and the
    /// endpoint is kept by every connection set and pub/sub task).
    Fixed(Box<Client>),
    /// The current master of a Sentinel group.
    Sentinel(Arc<Master>),
}

impl Endpoint {
    /// The server of `client`.
    pub(crate) fn fixed(client: Client, credentials: Option<Arc<dyn CredentialsProvider>>) -> Self {
        Self {
            server: Server::Fixed(Box::new(client)),
            credentials,
        }
    }

    /// The master of a Sentinel group (which holds the master's
    /// credentials provider, if any: its lookups need it too).
    pub(crate) fn sentinel(master: Arc<Master>) -> Self {
        Self {
            server: Server::Sentinel(master),
            credentials: None,
        }
    }

    /// A client for the server to connect to now, found by `deadline`,
    /// with fresh credentials when a provider is set, and the
    /// [generation](Endpoint::generation) it belongs to.
    pub(crate) async fn client(&self, deadline: Instant) -> Result<(Client, u64)> {
        let (client, generation, fresh) = match &self.server {
            Server::Fixed(client) => {
                let fresh = match &self.credentials {
                    Some(provider) => Some(credentials::fetch(provider, deadline).await?),
                    None => None,
                };
                (Client::clone(client), 0, fresh)
            }
            Server::Sentinel(master) => {
                let fresh = master.fresh_credentials(deadline).await?;
                let (client, generation) = master.client(deadline, fresh.as_ref()).await?;
                (client, generation, fresh)
            }
        };
        match fresh {
            Some(fresh) => Ok((credentials::apply(&client, &fresh)?, generation)),
            None => Ok((client, generation)),
        }
    }

    /// Whether the server may change, so connections to the old one must be
    /// replaced: a `READONLY` reply then means "ask again".
    pub(crate) fn follows_failovers(&self) -> bool {
        matches!(self.server, Server::Sentinel(_))
    }

    /// Forgets the cached master: the next connect asks the sentinels.
    pub(crate) fn invalidate(&self) {
        if let Server::Sentinel(master) = &self.server {
            master.invalidate();
        }
    }

    /// Stops what the endpoint runs in the background (the `+switch-master`
    /// listener).
    pub(crate) fn close(&self) {
        if let Server::Sentinel(master) = &self.server {
            master.close();
        }
    }

    /// Moves on each time the server is found to be another node.
    pub(crate) fn generation(&self) -> u64 {
        match &self.server {
            Server::Fixed(_) => 0,
            Server::Sentinel(master) => master.generation(),
        }
    }

    /// Tells when [`Endpoint::generation`] moves on; `None` for a fixed
    /// server.
    pub(crate) fn changes(&self) -> Option<watch::Receiver<u64>> {
        match &self.server {
            Server::Fixed(_) => None,
            Server::Sentinel(master) => Some(master.changes()),
        }
    }
}
