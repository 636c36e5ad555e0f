//! The workloads, and what they share: where the server is, how long to
//! run, the baseline every ratio refers to.
//!
//! Every workload runs in the same process against the same server, one
//! after the other, and turns its measurements into a [`Report`]. Each is
//! bounded in time: a wait that does not end is reported as an error (a
//! library bug), never waited out.

use std::future::Future;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::cli::Workload;
use crate::cluster::{Cluster, ClusterSource};
use crate::locker::Locker;
use crate::report::Report;
use crate::server::Server;
use crate::target::{Kind, Target};

mod alternating;
mod baseline;
mod contended;
mod contention;
mod handoff;
mod latch;
mod many_locks;
mod masters;
mod raw;
mod redisson;
mod redlock;
mod redlock_handoff;
mod replica;
mod rwlock;
mod semaphore;
mod uncontended;
mod waiters;
mod watchdog;

pub(crate) use baseline::Baseline;

/// Everything a workload needs to know about the run.
pub(crate) struct Bench {
    pub(crate) url: String,
    pub(crate) quick: bool,
    pub(crate) server: Server,
    /// Put in every key this run makes, so runs (and implementations) never
    /// share a key, even on a server given with `--url`.
    run_id: String,
    started: Instant,
    /// Measured first; every ratio of the standalone workloads refers to it.
    pub(crate) baseline: Option<Baseline>,
    /// Figures of the reentrant lock that later workloads compare with.
    pub(crate) reference: Reference,
    /// Where the cluster workloads' cluster comes from.
    cluster_source: ClusterSource,
    /// Set up (with its own baseline) before the first cluster workload.
    pub(crate) cluster: Option<Cluster>,
}

/// Figures of our reentrant lock on the standalone server that the other
/// locks and W5 are compared with; `None` until measured (or when its
/// workload was not selected).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Reference {
    /// W1's pair p50.
    pub(crate) w1_p50_us: Option<f64>,
    /// W2H's handoff p50.
    pub(crate) w2h_p50_us: Option<f64>,
    /// W3's acquisitions per second.
    pub(crate) w3_per_s: Option<f64>,
}

impl Reference {
    /// Keeps the figures of `r` if it is one of the reference reports.
    fn record(&mut self, r: &Report) {
        if r.implementation != Kind::Reentrant.implementation() {
            return;
        }
        match r.workload.as_str() {
            "W1" => self.w1_p50_us = r.value("p50_us"),
            "W2H" => self.w2h_p50_us = r.value("p50_us"),
            "W3" => self.w3_per_s = r.value("acquisitions_per_s"),
            _ => {}
        }
    }
}

impl Bench {
    /// A run against the server at `url`, and the cluster of
    /// `cluster_source` if any cluster workload runs.
    pub(crate) fn new(url: String, quick: bool, cluster_source: ClusterSource) -> Result<Self> {
        let server = Server::new(&url)?;
        let run_id = uuid::Uuid::new_v4().simple().to_string()[..8].to_owned();
        Ok(Self {
            url,
            quick,
            server,
            run_id,
            started: Instant::now(),
            baseline: None,
            reference: Reference::default(),
            cluster_source,
            cluster: None,
        })
    }

    /// Picks the full or the `--quick` value.
    pub(crate) fn pick<T>(&self, full: T, quick: T) -> T {
        if self.quick {
            quick
        } else {
            full
        }
    }

    /// A lock name unique to this run: `lock-bench:<run>:<what>`.
    pub(crate) fn name(&self, what: &str) -> String {
        format!("lock-bench:{}:{what}", self.run_id)
    }

    /// One progress line on stderr.
    pub(crate) fn progress(&self, msg: &str) {
        eprintln!(
            "[lock-bench {:>6.1}s] {msg}",
            self.started.elapsed().as_secs_f64()
        );
    }

    pub(crate) fn baseline(&self) -> Result<&Baseline> {
        self.baseline
            .as_ref()
            .context("the baseline must run before the other workloads")
    }

    /// The workloads' view of the `kind` lock in this run.
    pub(crate) fn target(&self, kind: Kind) -> Result<Target<'_>> {
        Target::new(self, kind)
    }

    /// `n` rslock managers (one connection each), with a 30 s lock TTL
    /// like our watchdog lease.
    #[cfg(feature = "rslock")]
    pub(crate) fn rs_lockers(&self, n: usize) -> Vec<crate::locker::RsLock> {
        (0..n)
            .map(|_| crate::locker::RsLock {
                manager: rslock::LockManager::new(vec![self.url.clone()]),
                ttl: Duration::from_secs(30),
            })
            .collect()
    }
}

/// Runs `fut`, failing if it takes longer than `limit`.
pub(crate) async fn bounded<T>(
    limit: Duration,
    what: &str,
    fut: impl Future<Output = Result<T>>,
) -> Result<T> {
    match tokio::time::timeout(limit, fut).await {
        Ok(result) => result,
        Err(_) => bail!("{what} did not finish within {limit:?}"),
    }
}

/// Polls `done` every few milliseconds, failing after `limit`.
pub(crate) async fn wait_for(
    limit: Duration,
    what: &str,
    mut done: impl FnMut() -> bool,
) -> Result<()> {
    let deadline = Instant::now() + limit;
    while !done() {
        if Instant::now() >= deadline {
            bail!("waited {limit:?} for {what}");
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Ok(())
}

/// Closes every locker (bounded per locker).
pub(crate) async fn close_all<L: Locker>(lockers: &[L]) {
    for l in lockers {
        l.close().await;
    }
}

/// Runs the selected workloads in order (the baseline always, first; the
/// fair, then the cluster variants last) and hands each report to `emit`
/// as soon as it is ready.
pub(crate) async fn run_all(
    bench: &mut Bench,
    selected: &[Workload],
    emit: &mut dyn FnMut(&Report),
) -> Result<()> {
    let wants = |w: Workload| selected.is_empty() || selected.contains(&w);
    // Only ever reached by a hang: each workload bounds its own waits.
    let limit = bench.pick(Duration::from_secs(600), Duration::from_secs(120));

    let (baseline, report) = bounded(limit, "baseline", baseline::run(bench)).await?;
    bench.baseline = Some(baseline);
    emit(&report);

    if wants(Workload::W1) {
        per_kind(bench, Kind::Reentrant, Workload::W1, limit, emit).await?;
    }
    if wants(Workload::W2) {
        emit(&bounded(limit, "W2", contended::run(bench)).await?);
    }
    if wants(Workload::W2h) {
        per_kind(bench, Kind::Reentrant, Workload::W2h, limit, emit).await?;
    }
    if wants(Workload::W3) {
        per_kind(bench, Kind::Reentrant, Workload::W3, limit, emit).await?;
    }
    if wants(Workload::W4) {
        emit(&bounded(limit, "W4", watchdog::run(bench)).await?);
    }
    if wants(Workload::W5) {
        emit(&bounded(limit, "W5", waiters::run(bench)).await?);
    }
    if wants(Workload::Latch) {
        emit(&bounded(limit, "latch", latch::run(bench)).await?);
    }
    if wants(Workload::W1Redlock) {
        emit(&bounded(limit, "W1-redlock", redlock::run(bench)).await?);
    }
    if wants(Workload::W2hRedlock) {
        emit(&bounded(limit, "W2H-redlock", redlock_handoff::run(bench)).await?);
    }
    if wants(Workload::W1Replica) {
        emit(&bounded(limit, "W1-replica", replica::run(bench)).await?);
    }
    if wants(Workload::S1) {
        emit(&bounded(limit, "S1", semaphore::run(bench)).await?);
    }
    if wants(Workload::Rw1) {
        emit(&bounded(limit, "RW1", rwlock::run(bench)).await?);
    }
    for kind in [Kind::Fair, Kind::Handoff, Kind::Lean, Kind::Cluster] {
        let chosen: Vec<Workload> = Workload::PER_KIND
            .into_iter()
            .filter(|w| wants(w.of(kind)))
            .collect();
        if chosen.is_empty() {
            continue;
        }
        if kind == Kind::Cluster {
            set_up_cluster(bench, limit, emit).await?;
        }
        for w in chosen {
            per_kind(bench, kind, w, limit, emit).await?;
        }
    }
    Ok(())
}

/// Runs W1, W2H or W3 (`base`) with the `kind` lock, and keeps the
/// reentrant lock's figures for the comparisons that follow.
async fn per_kind(
    bench: &mut Bench,
    kind: Kind,
    base: Workload,
    limit: Duration,
    emit: &mut dyn FnMut(&Report),
) -> Result<()> {
    let t = bench.target(kind)?;
    let name = base.of(kind).label();
    let reports = match base {
        Workload::W1 => bounded(limit, &name, uncontended::run(&t)).await?,
        Workload::W2h => bounded(limit, &name, handoff::run(&t)).await?,
        Workload::W3 => bounded(limit, &name, many_locks::run(&t)).await?,
        other => bail!("{other:?} does not run per lock kind"),
    };
    for r in &reports {
        bench.reference.record(r);
        emit(r);
    }
    Ok(())
}

/// Starts a cluster or reads the given one's slot map, and measures its
/// baseline.
async fn set_up_cluster(
    bench: &mut Bench,
    limit: Duration,
    emit: &mut dyn FnMut(&Report),
) -> Result<()> {
    let cluster = Cluster::set_up(bench, &bench.cluster_source).await?;
    bench.progress(&format!(
        "cluster: masters {}; single-lock workloads on {}",
        cluster.masters().collect::<Vec<_>>().join(", "),
        cluster.home()
    ));
    bench.cluster = Some(cluster);
    let (baseline, report) =
        bounded(limit, "baseline-cluster", baseline::run_cluster(bench)).await?;
    if let Some(cluster) = bench.cluster.as_mut() {
        cluster.baseline = Some(baseline);
    }
    emit(&report);
    Ok(())
}
