//! W1-replica: what replica sync by default costs (issue 37, item 8). W1's
//! uncontended lock/unlock pair on a master with one connected replica,
//! with the default (every acquisition waits, `WAIT 1 1000` on a
//! connection of its own, for the replica to acknowledge it) and with
//! replica sync turned off, one pair of each in turn, so both see the same
//! machine noise. Also how many `WAIT`s and `INFO`s the server ran per
//! default pair (the replica count is read from `INFO replication` about
//! once a second).
//!
//! The master and its replica are throw-away redis-servers on loopback,
//! whatever `--url` says (a replica must be set up for it).

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use lock_core::Lock;
use lock_redis::{ClientConfig, LockClient, RedisConfig};
use lock_testkit::fixtures::RedisServer;

use crate::latency::Latencies;
use crate::locker::close_client;
use crate::report::{Report, Unit};
use crate::server::Server;
use crate::workloads::Bench;

const WARM_UP: usize = 100;

pub(crate) async fn run(bench: &Bench) -> Result<Report> {
    let pairs = bench.pick(5_000, 500);
    bench.progress(&format!(
        "W1-replica: a master with one replica; {pairs} pairs each with replica sync by default and off"
    ));
    let master = RedisServer::start();
    let _replica = master.start_replica();
    let connect = |redis: RedisConfig| async move {
        lock_redis::connect(redis, ClientConfig::default())
            .await
            .context("cannot connect a lock client to the replicated master")
    };
    let synced = connect(RedisConfig::new(master.url())).await?;
    let off = connect(RedisConfig::new(master.url()).replica_sync_off()).await?;
    let stats = Server::new(&master.url())?;
    let result = measure(bench, &synced, &off, &stats, pairs).await;
    close_client(&synced).await;
    close_client(&off).await;
    result
}

async fn pair(lock: &Lock) -> Result<Duration> {
    let started = Instant::now();
    let guard = lock.lock().await?;
    guard.unlock().await?;
    Ok(started.elapsed())
}

async fn measure(
    bench: &Bench,
    synced: &LockClient,
    off: &LockClient,
    stats: &Server,
    pairs: usize,
) -> Result<Report> {
    let name = bench.name("w1-replica");
    let (with, without) = (
        synced.lock(format!("{name}:on"))?,
        off.lock(format!("{name}:off"))?,
    );
    let mut on = Latencies::with_capacity(pairs);
    let mut no = Latencies::with_capacity(pairs);
    for _ in 0..WARM_UP {
        pair(&with).await?;
        pair(&without).await?;
    }
    stats.reset_stats().await?;
    let started = Instant::now();
    for _ in 0..pairs {
        on.push(pair(&with).await?);
        no.push(pair(&without).await?);
    }
    let elapsed = started.elapsed();
    let counted = stats.command_stats().await?;
    let on = on.summary().context("no samples")?;
    let no = no.summary().context("no samples")?;
    let mut r = Report::new(
        "W1-replica",
        "uncontended, master with one replica",
        "lock-redis reentrant",
    );
    r.add(
        "pairs",
        "lock+unlock pairs of each",
        pairs as f64,
        Unit::Count,
    )
    .add(
        "default_p50_us",
        "replica sync by default: pair p50",
        on.p50_us,
        Unit::Micros,
    )
    .add(
        "default_p99_us",
        "replica sync by default: pair p99",
        on.p99_us,
        Unit::Micros,
    )
    .add(
        "off_p50_us",
        "replica sync off: pair p50",
        no.p50_us,
        Unit::Micros,
    )
    .add(
        "off_p99_us",
        "replica sync off: pair p99",
        no.p99_us,
        Unit::Micros,
    )
    .add(
        "default_vs_off",
        "default p50 / off p50: what waiting for the replica costs",
        on.p50_us / no.p50_us,
        Unit::Ratio,
    )
    .add(
        "waits_per_pair",
        "WAIT calls per default pair",
        counted.calls("wait") as f64 / pairs as f64,
        Unit::Ratio,
    )
    .add(
        "infos_per_s",
        "INFO calls per second (the replica count, asked about once a second)",
        counted.calls("info") as f64 / elapsed.as_secs_f64(),
        Unit::Ratio,
    );
    r.note("the master and its replica are throw-away redis-servers on loopback; a replica across a network adds its round trip to every default acquisition");
    Ok(r)
}
