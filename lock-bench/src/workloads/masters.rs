//! Independent masters for the RedLock workloads: throw-away
//! redis-servers on loopback, whatever `--url` says (a RedLock needs
//! masters of its own, and a `--url` names one).

use anyhow::{Context, Result};
use lock_redis::{ClientConfig, LockClient, RedisConfig};
use lock_testkit::fixtures::RedisServer;
use redis::aio::MultiplexedConnection;

use crate::server::Server;

/// Started masters; each is killed when this is dropped.
pub(crate) struct Masters {
    servers: Vec<RedisServer>,
}

impl Masters {
    /// Starts `n` redis-servers.
    pub(crate) fn start(n: usize) -> Self {
        Self {
            servers: (0..n).map(|_| RedisServer::start()).collect(),
        }
    }

    /// A lock client with the default configuration (as W1's) of each
    /// master, in order.
    pub(crate) async fn clients(&self) -> Result<Vec<LockClient>> {
        let mut clients = Vec::with_capacity(self.servers.len());
        for server in &self.servers {
            let client =
                lock_redis::connect(RedisConfig::new(server.url()), ClientConfig::default())
                    .await
                    .context("cannot connect a lock client to a RedLock master")?;
            clients.push(client);
        }
        Ok(clients)
    }

    /// A plain connection to each master, in order.
    pub(crate) async fn connections(&self) -> Result<Vec<MultiplexedConnection>> {
        let mut conns = Vec::with_capacity(self.servers.len());
        for server in &self.servers {
            conns.push(
                server
                    .client()
                    .get_multiplexed_async_connection()
                    .await
                    .context("cannot connect to a RedLock master")?,
            );
        }
        Ok(conns)
    }

    /// The first `n` masters, reached with plain `redis` for their command
    /// statistics.
    pub(crate) fn stats_of(&self, n: usize) -> Result<Vec<Server>> {
        self.servers[..n.min(self.servers.len())]
            .iter()
            .map(|s| Server::new(&s.url()))
            .collect()
    }
}
