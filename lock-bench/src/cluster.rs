//! The cluster side of a run: its seeds, its masters (for command
//! statistics and the raw baseline), and the one master that workloads on
//! a single lock use. Without `--cluster`, a throw-away cluster of local
//! `redis-server`s (3 masters with a replica each,
//! [`RedisCluster::start`]) is started when the first cluster workload is
//! about to run, and killed when the run ends.
//!
//! The slot map is read once, with the library's own
//! [`ClusterTransport`], so raw baseline commands go exactly where the
//! library sends its scripts. The bench assumes the map does not change
//! during the run; a raw command that meets a moved slot fails the run
//! (`-MOVED`) rather than measure the wrong node.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use lock_core::backend::Connection;
use lock_redis::{KeyLayout, LockName};
use lock_redis_cluster::slot::key_slot;
use lock_redis_cluster::{ClusterConfig, ClusterTransport, SlotMap};
use lock_testkit::fixtures::RedisCluster;

use crate::server::{CommandStats, Server};
use crate::workloads::{bounded, Baseline, Bench};

/// How many names [`Cluster::home_name`] tries before giving up; with `m`
/// masters a name lands on the home master with chance `1/m`.
const PLACEMENT_TRIES: usize = 10_000;

/// Where the cluster comes from.
#[derive(Debug, Clone)]
pub(crate) enum ClusterSource {
    /// `--cluster`: these seed URLs.
    Given(Vec<String>),
    /// A throw-away local cluster of 3 masters with `replicas` replicas
    /// each (`--cluster-replicas`).
    Throwaway { replicas: usize },
}

/// A Redis Cluster under test.
pub(crate) struct Cluster {
    /// What lock clients are given (`ClusterConfig::new(seeds)`).
    pub(crate) seeds: Vec<String>,
    map: Arc<SlotMap>,
    /// Plain connections to each master, by `host:port`.
    masters: BTreeMap<String, Server>,
    /// The master owning the slot of the run's `cluster` name: the cluster
    /// baseline's single-connection figures are measured on it, and the
    /// single-lock workloads put their lock on it.
    home: String,
    /// `SPUBLISH` or `PUBLISH`: what the library's release script runs on
    /// this cluster, so the raw pair does the same.
    pub(crate) publish: &'static str,
    /// The baseline of the cluster workloads, measured on its masters.
    pub(crate) baseline: Option<Baseline>,
    /// The throw-away cluster, if the bench started it: dropping it kills
    /// the nodes.
    _fixture: Option<RedisCluster>,
}

impl Cluster {
    /// The cluster of `source`, started if need be, with its slot map read
    /// and the home master picked.
    pub(crate) async fn set_up(bench: &Bench, source: &ClusterSource) -> Result<Self> {
        let replicas = match source {
            ClusterSource::Given(seeds) => return Self::discover(bench, seeds.clone(), None).await,
            ClusterSource::Throwaway { replicas } => *replicas,
        };
        bench.progress(&format!(
            "cluster: starting a throw-away cluster (3 masters with {replicas} replica(s) each)"
        ));
        // The fixture blocks while it waits for the cluster to settle.
        let fixture = tokio::task::spawn_blocking(move || {
            RedisCluster::builder()
                .masters(3)
                .replicas_per_master(replicas)
                .start()
        })
        .await
        .context("the throw-away cluster did not start (see the message above)")?;
        bench.progress(&format!(
            "cluster: up in {:.1} s",
            fixture.startup_time().as_secs_f64()
        ));
        Self::discover(bench, fixture.seed_urls(), Some(fixture)).await
    }

    /// Reads the slot map from `seeds` and picks the home master.
    async fn discover(
        bench: &Bench,
        seeds: Vec<String>,
        fixture: Option<RedisCluster>,
    ) -> Result<Self> {
        let Some(first) = seeds.first().cloned() else {
            bail!("a cluster needs at least one seed URL");
        };
        let transport = bounded(
            Duration::from_secs(30),
            "reading the cluster's slot map",
            async {
                ClusterTransport::connect(ClusterConfig::new(seeds.clone()))
                    .await
                    .with_context(|| format!("cannot read the cluster's slot map from {seeds:?}"))
            },
        )
        .await?;
        let map = transport.slot_map();
        let publish = if transport.is_sharded() {
            "SPUBLISH"
        } else {
            "PUBLISH"
        };
        transport.close().await;
        let masters = map
            .masters()
            .iter()
            .map(|addr| Ok((addr.to_string(), Server::at(&first, addr)?)))
            .collect::<Result<BTreeMap<_, _>>>()?;
        let home = master_of(&map, &bench.name("cluster"))?.to_owned();
        Ok(Self {
            seeds,
            map,
            masters,
            home,
            publish,
            baseline: None,
            _fixture: fixture,
        })
    }

    /// The masters, as `host:port`.
    pub(crate) fn masters(&self) -> impl Iterator<Item = &str> {
        self.masters.keys().map(String::as_str)
    }

    /// The home master, as `host:port`.
    pub(crate) fn home(&self) -> &str {
        &self.home
    }

    /// The master owning the lock `name` (its key, and so every key and
    /// channel of the lock).
    pub(crate) fn server_for(&self, name: &str) -> Result<&Server> {
        let addr = master_of(&self.map, name)?;
        self.masters
            .get(addr)
            .with_context(|| format!("no connection for master {addr}"))
    }

    /// `bench.name(what)`, or failing that `bench.name("what:<i>")` for the
    /// first `i` whose name lives on the home master.
    pub(crate) fn home_name(&self, bench: &Bench, what: &str) -> Result<String> {
        for i in 0..PLACEMENT_TRIES {
            let name = if i == 0 {
                bench.name(what)
            } else {
                bench.name(&format!("{what}:{i}"))
            };
            if master_of(&self.map, &name)? == self.home {
                return Ok(name);
            }
        }
        bail!(
            "no name for {what:?} on master {} in {PLACEMENT_TRIES} tries",
            self.home
        )
    }

    /// `CONFIG RESETSTAT` on every master.
    pub(crate) async fn reset_stats(&self) -> Result<()> {
        for server in self.masters.values() {
            server.reset_stats().await?;
        }
        Ok(())
    }

    /// `INFO commandstats` of every master, added up. Replicas are left
    /// out: what they run is replication, not requests.
    pub(crate) async fn command_stats(&self) -> Result<CommandStats> {
        let mut all = CommandStats::default();
        for server in self.masters.values() {
            all.merge(&server.command_stats().await?);
        }
        Ok(all)
    }
}

/// The master owning the slot of the lock `name`'s key (default layout, no
/// prefix, as the bench's clients use).
fn master_of<'m>(map: &'m SlotMap, name: &str) -> Result<&'m str> {
    let key = KeyLayout::default().lock_key(&LockName::new(name)?);
    let slot = key_slot(&key);
    map.master(slot)
        .with_context(|| format!("no master serves slot {slot} (of {name:?})"))
}
