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
use lock_redis::{ClientConfig, LockClient, RedisConfig};

use crate::cli::Workload;
use crate::locker::{Lib, Locker};
use crate::report::Report;
use crate::server::Server;

mod baseline;
mod contended;
mod handoff;
mod many_locks;
mod raw;
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
    /// Measured first; every ratio refers to it.
    pub(crate) baseline: Option<Baseline>,
    /// W2H's handoff p50 with our library, for W5's comparison.
    pub(crate) handoff_p50_us: Option<f64>,
}

impl Bench {
    pub(crate) fn new(url: String, quick: bool) -> Result<Self> {
        let server = Server::new(&url)?;
        let run_id = uuid::Uuid::new_v4().simple().to_string()[..8].to_owned();
        Ok(Self {
            url,
            quick,
            server,
            run_id,
            started: Instant::now(),
            baseline: None,
            handoff_p50_us: None,
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

    /// A client of our library with its own connections.
    pub(crate) async fn lib_client(&self, config: ClientConfig) -> Result<LockClient> {
        let connect = lock_redis::connect(RedisConfig::new(self.url.clone()), config);
        match tokio::time::timeout(Duration::from_secs(15), connect).await {
            Ok(client) => Ok(client.context("cannot connect a lock client")?),
            Err(_) => bail!("connecting a lock client took over 15 s"),
        }
    }

    /// `n` clients of our library with default settings.
    pub(crate) async fn lib_lockers(&self, n: usize) -> Result<Vec<Lib>> {
        let mut clients = Vec::with_capacity(n);
        for _ in 0..n {
            clients.push(Lib(self.lib_client(ClientConfig::default()).await?));
        }
        Ok(clients)
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

/// Runs the selected workloads in order (the baseline always, first) and
/// hands each report to `emit` as soon as it is ready.
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
        for r in bounded(limit, "W1", uncontended::run(bench)).await? {
            emit(&r);
        }
    }
    if wants(Workload::W2) {
        emit(&bounded(limit, "W2", contended::run(bench)).await?);
    }
    if wants(Workload::W2h) {
        for r in bounded(limit, "W2H", handoff::run(bench)).await? {
            if r.implementation == Lib::NAME {
                bench.handoff_p50_us = r.value("p50_us");
            }
            emit(&r);
        }
    }
    if wants(Workload::W3) {
        for r in bounded(limit, "W3", many_locks::run(bench)).await? {
            emit(&r);
        }
    }
    if wants(Workload::W4) {
        emit(&bounded(limit, "W4", watchdog::run(bench)).await?);
    }
    if wants(Workload::W5) {
        emit(&bounded(limit, "W5", waiters::run(bench)).await?);
    }
    Ok(())
}
