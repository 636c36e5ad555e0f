//! The baseline: what the server and the network allow, without the
//! library. Every other figure is also given as a ratio to one of these.
//!
//! - `PING` round trip on one connection;
//! - our acquire + release scripts as two bare `EVALSHA`s on one
//!   connection (the least one lock/unlock pair can cost);
//! - the same pair on 32 connections at once, each on its own lock: the
//!   throughput limit for many independent locks.
//!
//! PING and pair samples alternate, so both see the same machine noise.
//!
//! On a cluster (`baseline-cluster`) the single-connection figures are
//! measured on one master (the one the single-lock workloads use), and the
//! 32 connections each go to the master owning their lock.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use tokio::sync::Barrier;
use tokio::task::JoinSet;

use super::raw::{RawLock, Site};
use super::Bench;
use crate::latency::{Latencies, Summary};
use crate::report::{Report, Unit};

/// Connections (and tasks, and locks) of the throughput baseline.
pub(crate) const RAW_CONNECTIONS: usize = 32;
const WARM_UP: usize = 200;

/// The figures other workloads divide by.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Baseline {
    pub(crate) ping_p50_us: f64,
    pub(crate) pair_p50_us: f64,
    pub(crate) raw32_pairs_per_s: f64,
}

impl Baseline {
    /// The rate of back-to-back pairs on one connection: `1 / pair p50`.
    pub(crate) fn pair_rate(&self) -> f64 {
        1e6 / self.pair_p50_us
    }
}

/// The standalone server's baseline.
pub(crate) async fn run(bench: &Bench) -> Result<(Baseline, Report)> {
    let site = Site::Server(&bench.server);
    let (baseline, mut r, _) =
        measure(bench, site, "baseline", bench.name("baseline"), None).await?;
    r.note(format!(
        "{} samples each; the pair uses the library's own KEYS/ARGV (30 s lease, 30 s request records)",
        bench.pick(5_000, 1_000)
    ));
    Ok((baseline, r))
}

/// The cluster's baseline (`bench.cluster` must be set). Its PING and pair
/// samples alternate with samples on the standalone server, so their
/// ratios show what the deployment costs, free of the machine's drift
/// between the two parts of the run.
pub(crate) async fn run_cluster(bench: &Bench) -> Result<(Baseline, Report)> {
    let cluster = bench
        .cluster
        .as_ref()
        .context("the cluster must be set up before its baseline")?;
    let name = cluster.home_name(bench, "baseline")?;
    let alongside = Some(Site::Server(&bench.server));
    let (baseline, mut r, standalone) = measure(
        bench,
        Site::Cluster(cluster),
        "baseline-cluster",
        name,
        alongside,
    )
    .await?;
    if let Some(standalone) = standalone {
        r.add(
            "ping_vs_standalone",
            "PING p50 / standalone PING p50 (alternating)",
            baseline.ping_p50_us / standalone.ping.p50_us,
            Unit::Ratio,
        )
        .add(
            "pair_vs_standalone",
            "pair p50 / standalone pair p50 (alternating)",
            baseline.pair_p50_us / standalone.pair.p50_us,
            Unit::Ratio,
        );
    }
    if let Some(standalone) = &bench.baseline {
        r.add(
            "raw32_vs_standalone",
            "32-connection pairs/s / standalone baseline's",
            baseline.raw32_pairs_per_s / standalone.raw32_pairs_per_s,
            Unit::Ratio,
        );
    }
    let masters: Vec<&str> = cluster.masters().collect();
    r.note(format!(
        "PING and the pair on master {} (of {}), which owns W1-cluster's and W2H-cluster's lock, alternating with the same on the standalone server; the release script runs {}",
        cluster.home(),
        masters.join(", "),
        cluster.publish
    ));
    Ok((baseline, r))
}

/// PING and pair p50/p99 on one connection.
struct OneConnection {
    ping: Summary,
    pair: Summary,
}

/// PING and pair on one connection to the server of `pair_name`, then the
/// 32-connection throughput, all on `site`. With `alongside`, a second
/// connection there takes its PING and pair samples in turn with the
/// first; its figures are returned too.
async fn measure(
    bench: &Bench,
    site: Site<'_>,
    workload: &str,
    pair_name: String,
    alongside: Option<Site<'_>>,
) -> Result<(Baseline, Report, Option<OneConnection>)> {
    let samples = bench.pick(5_000, 1_000);
    let window = bench.pick(Duration::from_secs(10), Duration::from_secs(1));
    bench.progress(&format!(
        "{workload}: {samples} PINGs and raw EVALSHA pairs, then {RAW_CONNECTIONS} connections for {window:?}"
    ));

    let mut raws = vec![RawLock::new(site, &pair_name).await?];
    if let Some(other) = alongside {
        raws.push(RawLock::new(other, &bench.name(&format!("{workload}:alongside"))).await?);
    }
    let mut measured = sample(&mut raws, samples).await?.into_iter();
    let OneConnection { ping, pair } = measured.next().context("no samples")?;
    let alongside = measured.next();

    let raw32 = throughput(bench, site, window).await?;
    let baseline = Baseline {
        ping_p50_us: ping.p50_us,
        pair_p50_us: pair.p50_us,
        raw32_pairs_per_s: raw32,
    };

    let mut r = Report::new(workload, "physical limit", "raw redis");
    r.add("ping_p50_us", "PING p50", ping.p50_us, Unit::Micros)
        .add("ping_p99_us", "PING p99", ping.p99_us, Unit::Micros)
        .add(
            "pair_p50_us",
            "EVALSHA acquire+release pair p50",
            pair.p50_us,
            Unit::Micros,
        )
        .add(
            "pair_p99_us",
            "EVALSHA acquire+release pair p99",
            pair.p99_us,
            Unit::Micros,
        )
        .add(
            "pair_p50_vs_ping",
            "pair p50 / PING p50",
            pair.p50_us / ping.p50_us,
            Unit::Ratio,
        )
        .add(
            "raw32_pairs_per_s",
            "EVALSHA pairs/s, 32 connections",
            raw32,
            Unit::PerSec,
        )
        .add(
            "raw32_vs_one_connection",
            "32-connection pairs/s / (1 / pair p50)",
            raw32 / baseline.pair_rate(),
            Unit::Ratio,
        );
    bench.progress(&format!(
        "{workload}: PING p50 {:.0} µs, pair p50 {:.0} µs, {raw32:.0} pairs/s on {RAW_CONNECTIONS} connections",
        ping.p50_us, pair.p50_us
    ));
    Ok((baseline, r, alongside))
}

/// `samples` PINGs and pairs on each of `raws`, taken in turn so that all
/// see the same machine noise.
async fn sample(raws: &mut [RawLock], samples: usize) -> Result<Vec<OneConnection>> {
    for raw in raws.iter_mut() {
        for _ in 0..WARM_UP {
            raw.ping().await?;
            raw.pair().await?;
        }
    }
    let mut lat = vec![
        (
            Latencies::with_capacity(samples),
            Latencies::with_capacity(samples)
        );
        raws.len()
    ];
    for _ in 0..samples {
        for (raw, (ping, pair)) in raws.iter_mut().zip(&mut lat) {
            let t = Instant::now();
            raw.ping().await?;
            ping.push(t.elapsed());
            let t = Instant::now();
            raw.pair().await?;
            pair.push(t.elapsed());
        }
    }
    lat.iter()
        .map(|(ping, pair)| {
            Ok(OneConnection {
                ping: ping.summary().context("no PING samples")?,
                pair: pair.summary().context("no pair samples")?,
            })
        })
        .collect()
}

/// Pairs per second with [`RAW_CONNECTIONS`] connections, each looping on
/// its own lock for `window`.
async fn throughput(bench: &Bench, site: Site<'_>, window: Duration) -> Result<f64> {
    let barrier = Arc::new(Barrier::new(RAW_CONNECTIONS + 1));
    let mut tasks = JoinSet::new();
    for i in 0..RAW_CONNECTIONS {
        let mut raw = RawLock::new(site, &bench.name(&format!("raw32:{i}"))).await?;
        raw.pair().await?;
        let barrier = Arc::clone(&barrier);
        tasks.spawn(async move {
            barrier.wait().await;
            let deadline = Instant::now() + window;
            let mut pairs = 0u64;
            while Instant::now() < deadline {
                raw.pair().await?;
                pairs += 1;
            }
            anyhow::Ok(pairs)
        });
    }
    barrier.wait().await;
    let started = Instant::now();
    let mut total = 0;
    while let Some(pairs) = tasks.join_next().await {
        total += pairs.context("a raw throughput task panicked")??;
    }
    // The last pair of each task may end a little after the window.
    Ok(total as f64 / started.elapsed().as_secs_f64())
}
