//! Connections to the nodes of a cluster: one [`ConnectionSet`] per node
//! address, made on first use with the first seed's credentials and scheme
//! (TLS for a `rediss://` seed, with the configuration's TLS options).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use lock_core::{LockError, Result};
use lock_redis::transport::ConnectionSet;
use lock_script::error::{from_redis, timed_out};
use redis::{ConnectionAddr, ConnectionInfo, Value};
use tokio::time::{timeout_at, Instant};

use crate::config::ClusterConfig;
use crate::topology::Addr;

/// Every node connection of one transport.
pub(crate) struct Nodes {
    config: ClusterConfig,
    /// The first seed's parsed URL: credentials and settings for all nodes.
    template: ConnectionInfo,
    /// The TLS settings of the hand-written pub/sub connections, for a
    /// `rediss://` cluster.
    #[cfg(feature = "tls")]
    pubsub_tls: Option<Arc<rustls::ClientConfig>>,
    sets: Mutex<HashMap<Addr, Arc<ConnectionSet>>>,
    closed: std::sync::atomic::AtomicBool,
    /// Whether any node's connections were ever made, shared by every
    /// node's set: a node first reached after the client connected fails
    /// a connect as the client's others do (`ConnectionSet`'s docs: a
    /// failed reconnect is an outage).
    established: Arc<std::sync::atomic::AtomicBool>,
}

impl Nodes {
    /// # Errors
    /// [`LockError::InvalidArgument`] for a seed that is not a
    /// `redis://host:port` (or `rediss://host:port`) URL, or a `rediss://`
    /// seed without the `tls` feature.
    pub(crate) fn new(config: &ClusterConfig) -> Result<Self> {
        let template = config.node_config(&config.seeds[0]).connection_info()?;
        let tls = match template.addr() {
            ConnectionAddr::Tcp(..) => false,
            ConnectionAddr::TcpTls { .. } => true,
            _ => {
                return Err(LockError::invalid(
                    "cluster seeds must be redis://host:port or rediss://host:port URLs (Unix sockets are not supported for clusters)",
                ))
            }
        };
        #[cfg(feature = "tls")]
        let pubsub_tls = if tls {
            Some(
                config
                    .connection
                    .tls
                    .clone()
                    .unwrap_or_default()
                    .rustls_config()?,
            )
        } else {
            None
        };
        #[cfg(not(feature = "tls"))]
        if tls {
            return Err(LockError::invalid(
                "rediss:// cluster seeds need lock-redis-cluster's `tls` feature",
            ));
        }
        Ok(Self {
            config: config.clone(),
            template,
            #[cfg(feature = "tls")]
            pubsub_tls,
            sets: Mutex::new(HashMap::new()),
            closed: std::sync::atomic::AtomicBool::new(false),
            established: Arc::default(),
        })
    }

    /// The `host:port` of a seed URL.
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] as [`Nodes::new`].
    pub(crate) fn seed_addr(config: &ClusterConfig, url: &str) -> Result<Addr> {
        let info = config.node_config(url).connection_info()?;
        match info.addr() {
            ConnectionAddr::Tcp(host, port) | ConnectionAddr::TcpTls { host, port, .. } => {
                Ok(Arc::from(format!("{host}:{port}")))
            }
            _ => Err(LockError::invalid(format!(
                "cluster seed {url:?} is not a redis://host:port URL"
            ))),
        }
    }

    /// The connection info for `addr`.
    pub(crate) fn connection_info(&self, addr: &str) -> Result<ConnectionInfo> {
        let (host, port) = addr
            .rsplit_once(':')
            .and_then(|(h, p)| Some((h, p.parse::<u16>().ok()?)))
            .ok_or_else(|| LockError::protocol(format!("bad node address {addr:?}")))?;
        let addr = match self.template.addr() {
            ConnectionAddr::TcpTls { insecure, .. } => ConnectionAddr::TcpTls {
                host: host.to_owned(),
                port,
                insecure: *insecure,
                tls_params: None,
            },
            _ => ConnectionAddr::Tcp(host.to_owned(), port),
        };
        Ok(self.template.clone().set_addr(addr))
    }

    /// The TLS settings for a pub/sub connection, for a `rediss://`
    /// cluster.
    #[cfg(feature = "tls")]
    pub(crate) fn pubsub_tls(&self) -> Option<Arc<rustls::ClientConfig>> {
        self.pubsub_tls.clone()
    }

    /// The connections of `addr`, made on first use.
    ///
    /// # Errors
    /// [`LockError::Closed`] after [`Nodes::close`]; a protocol error for
    /// an address that is not `host:port`.
    pub(crate) fn get(&self, addr: &Addr) -> Result<Arc<ConnectionSet>> {
        let mut sets = self.sets.lock().unwrap_or_else(PoisonError::into_inner);
        if self.is_closed() {
            return Err(LockError::Closed);
        }
        if let Some(set) = sets.get(addr) {
            return Ok(set.clone());
        }
        let client = lock_redis::tls::client(
            self.connection_info(addr)?,
            self.config.connection.tls.as_ref(),
        )?;
        let set = Arc::new(
            ConnectionSet::new(
                client,
                &self.config.node_config(&format!("redis://{addr}/")),
            )
            .sharing_established(Arc::clone(&self.established)),
        );
        sets.insert(addr.clone(), set.clone());
        Ok(set)
    }

    /// Sends one command to `addr`, by `deadline`.
    ///
    /// # Errors
    /// As [`ConnectionSet::get`], and the command's own error.
    pub(crate) async fn query(
        &self,
        addr: &Addr,
        cmd: &redis::Cmd,
        deadline: Instant,
    ) -> Result<Value> {
        self.query_raw(addr, cmd, deadline)
            .await?
            .map_err(|e| from_redis(&e, ""))
    }

    /// As [`Nodes::query`], with the server's reply unmapped (for a caller
    /// that reads some errors as answers): the outer error is the
    /// connection's or the deadline's.
    ///
    /// # Errors
    /// As [`ConnectionSet::get`], or a retryable timeout.
    pub(crate) async fn query_raw(
        &self,
        addr: &Addr,
        cmd: &redis::Cmd,
        deadline: Instant,
    ) -> Result<redis::RedisResult<Value>> {
        let set = self.get(addr)?;
        let mut lease = set.get(deadline).await?;
        match timeout_at(deadline, cmd.query_async::<Value>(lease.conn())).await {
            Ok(Ok(value)) => Ok(Ok(value)),
            Ok(Err(e)) => {
                set.report(&lease, &e);
                Ok(Err(e))
            }
            Err(_) => {
                set.report_no_reply(&lease);
                Err(timed_out(
                    "cluster command",
                    self.config.connection.command_timeout,
                ))
            }
        }
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Closes every node's connections; later calls fail with
    /// [`LockError::Closed`].
    pub(crate) fn close(&self) {
        let sets = {
            let mut sets = self.sets.lock().unwrap_or_else(PoisonError::into_inner);
            self.closed
                .store(true, std::sync::atomic::Ordering::Release);
            std::mem::take(&mut *sets)
        };
        for set in sets.values() {
            set.close();
        }
    }
}
