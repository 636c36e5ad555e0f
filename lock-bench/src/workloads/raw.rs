//! The physical limit of a lock operation: our acquire and release scripts
//! sent as bare `EVALSHA`s with plain `redis`, no library in between, to
//! the standalone server or to the cluster master owning the lock.

use anyhow::{bail, Context, Result};
use lock_core::backend::deadline_in;
use lock_core::backend::RequestId;
use lock_redis::kinds::reentrant::{ACQUIRE, RELEASE};
use lock_redis::lock_script::layout::UNLOCK_MESSAGE;
use lock_redis::transport::scripts;
use lock_redis::ScriptCall;
use lock_redis::{lease_millis, ClientConfig, KeyLayout, LockName, Owner};
use redis::aio::MultiplexedConnection;
use std::time::Duration;

use crate::cluster::Cluster;
use crate::server::Server;

/// Where raw locks live.
#[derive(Clone, Copy)]
pub(crate) enum Site<'a> {
    /// Every lock on one server.
    Server(&'a Server),
    /// Each lock on the master owning its slot.
    Cluster(&'a Cluster),
}

impl<'a> Site<'a> {
    fn server_for(self, name: &str) -> Result<&'a Server> {
        match self {
            Self::Server(server) => Ok(server),
            Self::Cluster(cluster) => cluster.server_for(name),
        }
    }

    /// What the release script publishes with, as the library's does here.
    fn publish(self) -> &'static str {
        match self {
            Self::Server(_) => "PUBLISH",
            Self::Cluster(cluster) => cluster.publish,
        }
    }
}

/// One lock taken and given back with raw `EVALSHA`s, with exactly the
/// KEYS and ARGV the library sends under its default configuration
/// (30 s watchdog lease, requests dated 30 s ahead, no fencing token).
pub(crate) struct RawLock {
    conn: MultiplexedConnection,
    layout: KeyLayout,
    name: LockName,
    owner: String,
    lease_ms: String,
    /// How long a request may run: each is dated this far ahead, as the
    /// library dates its own (one clock read and one number formatted per
    /// request, as there).
    window: Duration,
    publish: &'static str,
}

impl RawLock {
    /// A connection of its own to the server of the lock `name` on
    /// `site`, with both scripts loaded.
    pub(crate) async fn new(site: Site<'_>, name: &str) -> Result<Self> {
        let mut conn = site.server_for(name)?.connect().await?;
        for script in [&*ACQUIRE, &*RELEASE] {
            scripts::load(&mut conn, script)
                .await
                .context("SCRIPT LOAD failed")?;
        }
        let config = ClientConfig::default();
        Ok(Self {
            conn,
            layout: KeyLayout::default(),
            name: LockName::new(name)?,
            owner: Owner::new(uuid::Uuid::new_v4(), 1).field(),
            lease_ms: lease_millis(config.watchdog_timeout, "lease")?.to_string(),
            window: config.record_ttl,
            publish: site.publish(),
        })
    }

    /// A plain connection's `PING`.
    pub(crate) async fn ping(&mut self) -> Result<()> {
        let pong: String = redis::cmd("PING")
            .query_async(&mut self.conn)
            .await
            .context("PING failed")?;
        if pong != "PONG" {
            bail!("PING answered {pong:?}");
        }
        Ok(())
    }

    /// `acquire.lua` then `release.lua`; fails unless the first took the
    /// lock and the second freed it.
    pub(crate) async fn pair(&mut self) -> Result<()> {
        if !self.acquire().await? {
            bail!("raw acquire found {} held by someone else", self.name);
        }
        self.release().await
    }

    /// The channel `release.lua` announces this lock's release on.
    pub(crate) fn channel(&self) -> String {
        self.layout.channel(&self.name)
    }

    /// `acquire.lua`: `true` when it took the lock, `false` when another
    /// owner holds it.
    pub(crate) async fn acquire(&mut self) -> Result<bool> {
        let acquire = ScriptCall::new(
            &ACQUIRE,
            vec![
                self.layout.lock_key(&self.name),
                self.layout
                    .acquire_record(&self.name, &RequestId::new().to_string()),
                self.layout.token_key(&self.name),
            ],
            vec![
                self.lease_ms.clone(),
                self.owner.clone(),
                "0".to_owned(),
                deadline_in(self.window).to_string(),
            ],
        );
        let (took, _token): (i64, i64) = acquire
            .to_cmd()
            .query_async(&mut self.conn)
            .await
            .context("raw acquire EVALSHA failed")?;
        Ok(took == 1)
    }

    /// `release.lua`; fails unless it freed the lock (and so published).
    pub(crate) async fn release(&mut self) -> Result<()> {
        let release = ScriptCall::new(
            &RELEASE,
            vec![
                self.layout.lock_key(&self.name),
                self.layout.channel(&self.name),
                self.layout
                    .unlock_record(&self.name, &RequestId::new().to_string()),
            ],
            vec![
                UNLOCK_MESSAGE.to_owned(),
                self.lease_ms.clone(),
                self.owner.clone(),
                self.publish.to_owned(),
                deadline_in(self.window).to_string(),
            ],
        );
        let released: Option<i64> = release
            .to_cmd()
            .query_async(&mut self.conn)
            .await
            .context("raw release EVALSHA failed")?;
        if released != Some(1) {
            bail!("raw release of {} answered {released:?}, not 1", self.name);
        }
        Ok(())
    }
}
