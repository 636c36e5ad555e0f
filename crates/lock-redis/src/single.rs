//! The transport of one Redis server (standalone, or a primary reached
//! directly): a `deadpool-redis` pool for scripts and one dedicated pub/sub
//! connection.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::future::{self, BoxFuture, FutureExt};
use lock_core::{LockError, Result, Topic};
use redis::Value;
use tokio::time::{timeout_at, Instant};

use crate::config::RedisConfig;
use crate::error::{from_pool, from_redis, timed_out};
use crate::pubsub::PubSub;
use crate::scripts::{self, ScriptCall};
use crate::transport::{PubSubHandler, Transport};

/// A [`Transport`] to one Redis server.
///
/// Scripts run on connections checked out of a pool of at most
/// [`RedisConfig::pool_size`] multiplexed connections (made on demand, each
/// within [`RedisConfig::connect_timeout`]); one call, from checkout to reply,
/// takes at most [`RedisConfig::command_timeout`]. Unlock notices come over
/// one dedicated pub/sub connection owned by a background task, which
/// reconnects and re-subscribes by itself (see the `pubsub` module docs in
/// the source, and [`Transport::subscribe`]).
///
/// The scripts publish with `PUBLISH`.
pub struct SingleNode {
    pool: deadpool_redis::Pool,
    pubsub: PubSub,
    command_timeout: Duration,
    closed: AtomicBool,
}

impl std::fmt::Debug for SingleNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SingleNode")
            .field("pool", &self.pool.status())
            .field("pubsub", &self.pubsub)
            .field("command_timeout", &self.command_timeout)
            .field("closed", &self.closed.load(Ordering::Relaxed))
            .finish()
    }
}

impl SingleNode {
    /// Builds the transport without waiting for any I/O: pool connections
    /// are made on demand and the pub/sub task connects in the background.
    /// Must be called inside a tokio runtime (it spawns the pub/sub task).
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] for a configuration that does not
    /// [validate](RedisConfig::validate), or when called outside a tokio
    /// runtime.
    pub fn new(config: &RedisConfig) -> Result<Self> {
        config.validate()?;
        #[cfg(feature = "tls")]
        install_crypto_provider();
        let info = config.connection_info()?;
        let connection_config = redis::AsyncConnectionConfig::new()
            .set_connection_timeout(Some(config.connect_timeout))
            .set_response_timeout(Some(config.command_timeout));
        let manager = deadpool_redis::Manager::new_with_config(info.clone(), connection_config)
            .map_err(|e| from_redis(&e, ""))?;
        let pool = deadpool_redis::Pool::builder(manager)
            .max_size(config.pool_size)
            .runtime(deadpool_redis::Runtime::Tokio1)
            .wait_timeout(Some(config.command_timeout))
            .create_timeout(Some(config.connect_timeout))
            .recycle_timeout(Some(config.command_timeout))
            .build()
            .map_err(|e| LockError::invalid(format!("cannot build the redis pool: {e}")))?;
        let client = redis::Client::open(info).map_err(|e| from_redis(&e, ""))?;
        let pubsub = PubSub::spawn(client, config.connect_timeout, config.command_timeout)?;
        Ok(Self {
            pool,
            pubsub,
            command_timeout: config.command_timeout,
            closed: AtomicBool::new(false),
        })
    }

    /// Checks that the server answers, and loads every lock script so the
    /// first calls need no `NOSCRIPT` round trip.
    ///
    /// # Errors
    /// A retryable error when the server cannot be reached in time;
    /// [`LockError::InvalidArgument`] when it rejects the credentials.
    ///
    /// # Cancel safety
    /// Safe to drop at any point; nothing is changed but the script cache.
    pub async fn check(&self) -> Result<()> {
        self.ensure_open()?;
        let deadline = Instant::now() + self.command_timeout;
        let mut conn = self.checkout(deadline).await?;
        let load_all = async {
            for script in scripts::all() {
                scripts::load(&mut conn, script).await?;
            }
            Ok::<_, redis::RedisError>(())
        };
        match timeout_at(deadline, load_all).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(from_redis(&e, "")),
            Err(_) => Err(timed_out("connection check", self.command_timeout)),
        }
    }

    fn ensure_open(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            Err(LockError::Closed)
        } else {
            Ok(())
        }
    }

    async fn checkout(&self, deadline: Instant) -> Result<deadpool_redis::Connection> {
        match timeout_at(deadline, self.pool.get()).await {
            Ok(Ok(conn)) => Ok(conn),
            Ok(Err(e)) => Err(from_pool(&e)),
            Err(_) => Err(timed_out("connection checkout", self.command_timeout)),
        }
    }
}

/// rustls needs a process-wide crypto provider; install `ring`'s unless the
/// application installed one already.
#[cfg(feature = "tls")]
fn install_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Losing a race with another installer is fine: one is installed.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

#[async_trait]
impl Transport for SingleNode {
    async fn eval(&self, call: ScriptCall<'_>) -> Result<Value> {
        self.ensure_open()?;
        let deadline = Instant::now() + self.command_timeout;
        let mut conn = self.checkout(deadline).await?;
        match timeout_at(deadline, scripts::eval(&mut conn, &call)).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) => Err(from_redis(&e, call.first_key())),
            Err(_) => Err(timed_out("script call", self.command_timeout)),
        }
    }

    async fn eval_batch(&self, calls: Vec<ScriptCall<'_>>) -> Result<Vec<Result<Value>>> {
        self.ensure_open()?;
        if calls.is_empty() {
            return Ok(Vec::new());
        }
        let deadline = Instant::now() + self.command_timeout;
        let mut conn = self.checkout(deadline).await?;
        let failed_all = |e: LockError| Ok(vec![Err(e); calls.len()]);
        match timeout_at(deadline, scripts::eval_pipelined(&mut conn, &calls)).await {
            Ok(Ok(results)) => Ok(results
                .into_iter()
                .zip(&calls)
                .map(|(r, call)| r.map_err(|e| from_redis(&e, call.first_key())))
                .collect()),
            Ok(Err(e)) => failed_all(from_redis(&e, "")),
            Err(_) => failed_all(timed_out("pipelined script calls", self.command_timeout)),
        }
    }

    fn publish_command(&self) -> &'static str {
        "PUBLISH"
    }

    fn set_pubsub_handler(&self, handler: Arc<dyn PubSubHandler>) {
        self.pubsub.set_handler(handler);
    }

    fn subscribe(&self, channel: String, topic: Topic) -> BoxFuture<'static, Result<()>> {
        if self.ensure_open().is_err() {
            return future::ready(Err(LockError::Closed)).boxed();
        }
        self.pubsub.subscribe(channel, topic)
    }

    fn unsubscribe(&self, channel: String) {
        self.pubsub.unsubscribe(channel);
    }

    async fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.pool.close();
        self.pubsub.close().await;
    }
}
