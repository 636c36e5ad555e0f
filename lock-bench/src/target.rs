//! Which lock a workload measures, and where: the reentrant lock on the
//! standalone server (what issue 15's goals are set for), the fair
//! lock on the same server, or the reentrant lock on a Redis Cluster.
//!
//! W1, W2H and W3 run once per [`Kind`] with the same code; a [`Target`]
//! supplies what differs: how a client connects, whose command statistics
//! count, which baseline the ratios refer to, and where lock names live.

use std::time::Duration;

use anyhow::{bail, Context, Result};
use lock_redis::{ClientConfig, LockClient, RedisConfig};
use lock_redis_cluster::ClusterConfig;

use crate::cluster::Cluster;
use crate::locker::Lib;
use crate::server::CommandStats;
use crate::workloads::{Baseline, Bench};

/// A lock of our library, with where it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `lock_redis::connect`: the reentrant lock on the standalone server.
    Reentrant,
    /// `lock_redis::connect`'s `fair_lock`: the fair lock on the standalone
    /// server.
    Fair,
    /// `lock_redis::connect`'s `handoff_lock`: the fair lock with direct
    /// handoff on the standalone server.
    Handoff,
    /// `lock_redis::connect`'s `lean_lock`: the single-instance `SET NX PX`
    /// pattern on the standalone server, rslock's own ground.
    Lean,
    /// `lock_redis_cluster::connect`: the reentrant lock on a cluster.
    Cluster,
}

impl Kind {
    /// The name of workload `base` (`W1`, …) with this lock: `W1`,
    /// `W1-fair`, `W1-cluster`.
    pub(crate) fn workload(self, base: &str) -> String {
        match self {
            Self::Reentrant => base.to_owned(),
            Self::Fair => format!("{base}-fair"),
            Self::Handoff => format!("{base}-handoff"),
            Self::Lean => format!("{base}-lean"),
            Self::Cluster => format!("{base}-cluster"),
        }
    }

    /// The implementation's name in reports: the crate a user would add.
    pub(crate) fn implementation(self) -> &'static str {
        match self {
            Self::Reentrant => "lock-redis",
            Self::Fair => "lock-redis fair_lock",
            Self::Handoff => "lock-redis handoff_lock",
            Self::Lean => "lock-redis lean_lock",
            Self::Cluster => "lock-redis-cluster",
        }
    }

    /// The commands its clients send themselves (as opposed to commands
    /// its scripts run), lower case: a count of these is a count of
    /// requests. `client` covers `CLIENT SETINFO` of new connections;
    /// `publish`/`spublish` are run by the release script, not sent.
    pub(crate) fn client_commands(self) -> &'static [&'static str] {
        const SINGLE: &[&str] = &[
            "evalsha",
            "eval",
            "ping",
            "subscribe",
            "unsubscribe",
            "script",
            "client",
        ];
        // Sharded pub/sub, redirects, topology refreshes and replica sync.
        const CLUSTER: &[&str] = &[
            "evalsha",
            "eval",
            "ping",
            "subscribe",
            "unsubscribe",
            "ssubscribe",
            "sunsubscribe",
            "script",
            "client",
            "asking",
            "cluster",
            "wait",
        ];
        // The lean lock takes a free lock with a plain `SET`. Not counted
        // for the other kinds: Redis counts a script's own `SET`s (their
        // request records) under `SET` too, and its time under `EVALSHA`.
        const LEAN: &[&str] = &[
            "evalsha",
            "eval",
            "set",
            "ping",
            "subscribe",
            "unsubscribe",
            "script",
            "client",
        ];
        match self {
            Self::Reentrant | Self::Fair | Self::Handoff => SINGLE,
            Self::Lean => LEAN,
            Self::Cluster => CLUSTER,
        }
    }
}

/// A [`Kind`] in this run: its clients, statistics, baseline and names.
#[derive(Clone, Copy)]
pub(crate) struct Target<'a> {
    pub(crate) bench: &'a Bench,
    pub(crate) kind: Kind,
}

impl<'a> Target<'a> {
    /// The target of `kind`; a cluster needs its side set up first
    /// ([`Bench::cluster`]).
    pub(crate) fn new(bench: &'a Bench, kind: Kind) -> Result<Self> {
        if kind == Kind::Cluster && bench.cluster.is_none() {
            bail!("the cluster must be set up before the cluster workloads");
        }
        Ok(Self { bench, kind })
    }

    fn cluster(&self) -> Result<&'a Cluster> {
        self.bench
            .cluster
            .as_ref()
            .context("the cluster must be set up before the cluster workloads")
    }

    /// The workload `base` with this target's lock: `W1-fair`, ….
    pub(crate) fn workload(&self, base: &str) -> String {
        self.kind.workload(base)
    }

    /// Whether `implementation` under this target is the reentrant lock of
    /// our library on the standalone server: issue 15's goals for W1, W2H
    /// and W3 (`crate::goals`) are its.
    pub(crate) fn is_reference(&self, implementation: &str) -> bool {
        self.kind == Kind::Reentrant && implementation == Kind::Reentrant.implementation()
    }

    /// The baseline every ratio of this target refers to: the standalone
    /// server's, or the cluster's (measured on its masters).
    pub(crate) fn baseline(&self) -> Result<&'a Baseline> {
        match self.kind {
            Kind::Reentrant | Kind::Fair | Kind::Handoff | Kind::Lean => self.bench.baseline(),
            Kind::Cluster => self
                .cluster()?
                .baseline
                .as_ref()
                .context("the cluster baseline must run before the cluster workloads"),
        }
    }

    /// A lock name unique to this run, on any node.
    pub(crate) fn name(&self, what: &str) -> String {
        self.bench.name(what)
    }

    /// A lock name unique to this run, for a workload on one lock: on a
    /// cluster, one owned by the master the cluster baseline measured, so
    /// the ratios compare round trips to the same process.
    pub(crate) fn pinned_name(&self, what: &str) -> Result<String> {
        match self.kind {
            Kind::Reentrant | Kind::Fair | Kind::Handoff | Kind::Lean => Ok(self.bench.name(what)),
            Kind::Cluster => self.cluster()?.home_name(self.bench, what),
        }
    }

    /// `CONFIG RESETSTAT` on the server, or on every master.
    pub(crate) async fn reset_stats(&self) -> Result<()> {
        match self.kind {
            Kind::Reentrant | Kind::Fair | Kind::Handoff | Kind::Lean => {
                self.bench.server.reset_stats().await
            }
            Kind::Cluster => self.cluster()?.reset_stats().await,
        }
    }

    /// `INFO commandstats` of the server, or of every master added up.
    pub(crate) async fn command_stats(&self) -> Result<CommandStats> {
        match self.kind {
            Kind::Reentrant | Kind::Fair | Kind::Handoff | Kind::Lean => {
                self.bench.server.command_stats().await
            }
            Kind::Cluster => self.cluster()?.command_stats().await,
        }
    }

    /// A client of this target's deployment with its own connections. It
    /// serves every lock kind; [`Lib`] picks the handle.
    pub(crate) async fn lib_client(&self, config: ClientConfig) -> Result<LockClient> {
        let connect = async {
            match self.kind {
                Kind::Cluster => {
                    let seeds = self.cluster()?.seeds.clone();
                    lock_redis_cluster::connect(ClusterConfig::new(seeds), config).await
                }
                Kind::Reentrant | Kind::Fair | Kind::Handoff | Kind::Lean => {
                    lock_redis::connect(RedisConfig::new(self.bench.url.clone()), config).await
                }
            }
            .context("cannot connect a lock client")
        };
        match tokio::time::timeout(Duration::from_secs(15), connect).await {
            Ok(client) => client,
            Err(_) => bail!("connecting a lock client took over 15 s"),
        }
    }

    /// `n` clients of this target's lock with default settings.
    pub(crate) async fn lib_lockers(&self, n: usize) -> Result<Vec<Lib>> {
        let mut clients = Vec::with_capacity(n);
        for _ in 0..n {
            let client = self.lib_client(ClientConfig::default()).await?;
            clients.push(Lib::new(client, self.kind));
        }
        Ok(clients)
    }
}
