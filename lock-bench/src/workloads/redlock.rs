//! W1-redlock: W1 (uncontended lock/unlock pairs) with a RedLock over 3
//! and over 5 masters, as ratios to W1 with a single master measured in
//! the same loop (goal for 3 masters: p50 ≤ 1.3×, reachable because the
//! members are taken concurrently, not one after another).
//!
//! The floor next to it: two round trips of PING to 1, 3 and 5 masters
//! (concurrently to each), in the same loop. Taking N members concurrently
//! costs what N concurrent round trips cost on this machine; on two cores
//! shared by the servers and the client that is well above one round trip,
//! and the ratio of the PINGs says how much of the RedLock's ratio is that.
//! A second floor sends the members' own scripts (the baseline's raw
//! `EVALSHA` pair) to 1, 3 and 5 masters concurrently: unlike a `PING`,
//! each costs its server tens of microseconds, and with more servers than
//! cores that time no longer overlaps. The RedLock's ratio over this floor's
//! is what its client adds.
//!
//! The masters are five throw-away redis-servers (`super::masters`).
//! Each round runs one pair of each of the three, one after the other, so
//! drift in the shared machine's noise affects all three alike. Every client has
//! the default configuration, as in W1.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use lock_core::{Lock, RedLock};
use lock_redis::LockClient;
use redis::aio::MultiplexedConnection;

use super::masters::Masters;
use super::raw::{RawLock, Site};
use crate::latency::Latencies;
use crate::locker::close_client;
use crate::report::{Goal, Report, Unit};
use crate::workloads::Bench;
use crate::LOCK_TIMEOUT;

const WARM_UP: usize = 100;
const MASTERS: usize = 5;

/// W1 with one master, a RedLock over 3 and over 5, alternating.
pub(crate) async fn run(bench: &Bench) -> Result<Report> {
    let pairs = bench.pick(3_000, 500);
    bench.progress(&format!(
        "W1-redlock: starting {MASTERS} redis-servers; {pairs} pairs each of 1, 3 and 5 masters"
    ));
    let masters = Masters::start(MASTERS);
    let raw = masters.connections().await?;
    let servers = masters.stats_of(MASTERS)?;
    let mut scripts = Vec::with_capacity(MASTERS);
    for server in &servers {
        scripts.push(RawLock::new(Site::Server(server), &bench.name("w1-redlock:raw")).await?);
    }
    let clients = masters.clients().await?;
    let result = measure(bench, &clients, &raw, &mut scripts, pairs).await;
    for client in &clients {
        close_client(client).await;
    }
    result
}

async fn measure(
    bench: &Bench,
    clients: &[LockClient],
    raw: &[MultiplexedConnection],
    scripts: &mut [RawLock],
    pairs: usize,
) -> Result<Report> {
    let name = bench.name("w1-redlock");
    let single = clients[0].lock(format!("{name}:1"))?;
    let over = |n: usize| -> Result<RedLock> {
        let locks: Vec<Lock> = clients[..n]
            .iter()
            .map(|c| c.lock(format!("{name}:{n}")))
            .collect::<lock_core::Result<_>>()?;
        Ok(RedLock::new(locks)?)
    };
    let (red3, red5) = (over(3)?, over(5)?);
    let mut lat: [Latencies; 9] = std::array::from_fn(|_| Latencies::with_capacity(pairs));
    let mut members = [0usize; 2];
    for i in 0..WARM_UP + pairs {
        let took = [
            single_pair(&single).await?,
            red_pair(&red3, &mut members[0]).await?,
            red_pair(&red5, &mut members[1]).await?,
            pings(&raw[..1]).await?,
            pings(&raw[..3]).await?,
            pings(&raw[..5]).await?,
            script_pairs(&mut scripts[..1]).await?,
            script_pairs(&mut scripts[..3]).await?,
            script_pairs(&mut scripts[..5]).await?,
        ];
        if i >= WARM_UP {
            for (l, t) in lat.iter_mut().zip(took) {
                l.push(t);
            }
        }
    }
    let [one, three, five, ping1, ping3, ping5, script1, script3, script5] =
        lat.map(|l| l.summary().context("no samples"));
    let (one, three, five) = (one?, three?, five?);
    let (ping1, ping3, ping5) = (ping1?, ping3?, ping5?);
    let (script1, script3, script5) = (script1?, script3?, script5?);
    let mut r = Report::new("W1-redlock", "uncontended RedLock", "lock-core RedLock");
    r.add(
        "pairs",
        "lock+unlock pairs of each",
        pairs as f64,
        Unit::Count,
    )
    .add(
        "single_p50_us",
        "1 master: pair p50",
        one.p50_us,
        Unit::Micros,
    )
    .add(
        "red3_p50_us",
        "3 masters: pair p50",
        three.p50_us,
        Unit::Micros,
    )
    .add(
        "red3_p99_us",
        "3 masters: pair p99",
        three.p99_us,
        Unit::Micros,
    )
    .add(
        "red5_p50_us",
        "5 masters: pair p50",
        five.p50_us,
        Unit::Micros,
    )
    .add(
        "red5_p99_us",
        "5 masters: pair p99",
        five.p99_us,
        Unit::Micros,
    )
    .add_goal(
        "red3_vs_single",
        "3 masters p50 / 1 master p50",
        three.p50_us / one.p50_us,
        Unit::Ratio,
        Goal::AtMost(1.3),
    )
    .add(
        "red5_vs_single",
        "5 masters p50 / 1 master p50",
        five.p50_us / one.p50_us,
        Unit::Ratio,
    )
    .add(
        "ping3_vs_single",
        "floor: 2 × PING to 3 masters concurrently p50 / to 1 master p50",
        ping3.p50_us / ping1.p50_us,
        Unit::Ratio,
    )
    .add(
        "ping5_vs_single",
        "floor: 2 × PING to 5 masters concurrently p50 / to 1 master p50",
        ping5.p50_us / ping1.p50_us,
        Unit::Ratio,
    )
    .add_goal(
        "red3_vs_floor",
        "3 masters ratio / PING floor ratio: the RedLock's own cost",
        (three.p50_us / one.p50_us) / (ping3.p50_us / ping1.p50_us),
        Unit::Ratio,
        crate::goals::W1_REDLOCK_VS_FLOOR,
    )
    .add(
        "red5_vs_floor",
        "5 masters ratio / PING floor ratio: the RedLock's own cost",
        (five.p50_us / one.p50_us) / (ping5.p50_us / ping1.p50_us),
        Unit::Ratio,
    )
    .add(
        "script3_vs_single",
        "floor: raw EVALSHA pair to 3 masters concurrently p50 / to 1 master p50",
        script3.p50_us / script1.p50_us,
        Unit::Ratio,
    )
    .add(
        "script5_vs_single",
        "floor: raw EVALSHA pair to 5 masters concurrently p50 / to 1 master p50",
        script5.p50_us / script1.p50_us,
        Unit::Ratio,
    )
    .add(
        "red3_vs_script_floor",
        "3 masters ratio / raw-script floor ratio: what the RedLock's client adds",
        (three.p50_us / one.p50_us) / (script3.p50_us / script1.p50_us),
        Unit::Ratio,
    )
    .add(
        "red5_vs_script_floor",
        "5 masters ratio / raw-script floor ratio: what the RedLock's client adds",
        (five.p50_us / one.p50_us) / (script5.p50_us / script1.p50_us),
        Unit::Ratio,
    )
    .add(
        "red3_members",
        "3 masters: members held per acquisition (mean)",
        members[0] as f64 / (WARM_UP + pairs) as f64,
        Unit::Count,
    )
    .add(
        "red5_members",
        "5 masters: members held per acquisition (mean)",
        members[1] as f64 / (WARM_UP + pairs) as f64,
        Unit::Count,
    )
    .note("the masters are throw-away local redis-servers, whatever --url says");
    bench.progress(&format!(
        "W1-redlock: p50 1 master {:.0} µs, 3 masters {:.2}× (PING floor {:.2}×, raw-script floor {:.2}×), 5 masters {:.2}× ({:.2}×, {:.2}×)",
        one.p50_us,
        three.p50_us / one.p50_us,
        ping3.p50_us / ping1.p50_us,
        script3.p50_us / script1.p50_us,
        five.p50_us / one.p50_us,
        ping5.p50_us / ping1.p50_us,
        script5.p50_us / script1.p50_us
    ));
    Ok(r)
}

/// The raw acquire script on every lock in `locks` concurrently, then the
/// raw release script on all of them concurrently: what a RedLock's pair
/// costs the servers and the round trips, without its client.
async fn script_pairs(locks: &mut [RawLock]) -> Result<Duration> {
    let started = Instant::now();
    for took in futures::future::join_all(locks.iter_mut().map(RawLock::acquire)).await {
        if !took? {
            anyhow::bail!("a raw RedLock floor lock was held by someone else");
        }
    }
    for released in futures::future::join_all(locks.iter_mut().map(RawLock::release)).await {
        released?;
    }
    Ok(started.elapsed())
}

/// Two round trips of PING to every connection in `conns`, concurrently:
/// what a concurrent lock + unlock costs at least.
async fn pings(conns: &[MultiplexedConnection]) -> Result<Duration> {
    let started = Instant::now();
    for _ in 0..2 {
        let round = conns.iter().map(|conn| {
            let mut conn = conn.clone();
            async move { redis::cmd("PING").query_async::<String>(&mut conn).await }
        });
        for reply in futures::future::join_all(round).await {
            reply.context("PING failed")?;
        }
    }
    Ok(started.elapsed())
}

/// One lock + unlock of the free single-master lock.
async fn single_pair(lock: &Lock) -> Result<Duration> {
    let started = Instant::now();
    let guard = tokio::time::timeout(LOCK_TIMEOUT, lock.lock())
        .await
        .with_context(|| format!("lock() of a free lock took over {LOCK_TIMEOUT:?}"))??;
    guard.unlock().await?;
    Ok(started.elapsed())
}

/// One lock + unlock of the free RedLock; counts the members it held.
async fn red_pair(red: &RedLock, members: &mut usize) -> Result<Duration> {
    let started = Instant::now();
    let guard = tokio::time::timeout(LOCK_TIMEOUT, red.lock())
        .await
        .with_context(|| format!("lock() of a free RedLock took over {LOCK_TIMEOUT:?}"))??;
    *members += guard.guards().len();
    guard.unlock().await?;
    Ok(started.elapsed())
}
