//! W1 uncontended: one task takes and gives back one lock, over and over.
//! Nobody else wants it, so this is the library's own cost per pair,
//! compared with the raw `EVALSHA` pair (goal: p50 ≤ 1.1×).

use std::time::Instant;

use anyhow::{Context, Result};

use super::{close_all, Bench};
use crate::latency::Latencies;
use crate::locker::{Lib, Locker};
use crate::report::{Goal, Report, Unit};
use crate::LOCK_TIMEOUT;

const WARM_UP: usize = 100;

pub(crate) async fn run(bench: &Bench) -> Result<Vec<Report>> {
    let mut reports = Vec::new();
    let lib = bench.lib_lockers(1).await?;
    reports.push(measure(bench, &lib[0]).await?);
    close_all(&lib).await;
    #[cfg(feature = "rslock")]
    {
        let rs = bench.rs_lockers(1);
        reports.push(measure(bench, &rs[0]).await?);
    }
    Ok(reports)
}

async fn measure<L: Locker>(bench: &Bench, locker: &L) -> Result<Report> {
    let pairs = bench.pick(5_000, 1_000);
    bench.progress(&format!(
        "W1 uncontended ({}): {pairs} lock/unlock pairs",
        L::NAME
    ));
    let name = bench.name(&format!("w1:{}", L::NAME));
    let pair = || async {
        let held = tokio::time::timeout(LOCK_TIMEOUT, locker.lock(&name))
            .await
            .with_context(|| format!("lock() of a free lock took over {LOCK_TIMEOUT:?}"))??;
        tokio::time::timeout(LOCK_TIMEOUT, locker.unlock(held))
            .await
            .with_context(|| format!("unlock() took over {LOCK_TIMEOUT:?}"))??;
        anyhow::Ok(())
    };
    for _ in 0..WARM_UP {
        pair().await?;
    }
    let mut lat = Latencies::with_capacity(pairs);
    bench.server.reset_stats().await?;
    let started = Instant::now();
    for _ in 0..pairs {
        let t = Instant::now();
        pair().await?;
        lat.push(t.elapsed());
    }
    let rate = pairs as f64 / started.elapsed().as_secs_f64();
    let commands = bench.server.command_stats().await?;
    let per_pair = |n: u64| n as f64 / pairs as f64;
    let s = lat.summary().context("no samples")?;
    let base = bench.baseline()?;

    let mut r = Report::new("W1", "uncontended", L::NAME);
    r.add("pairs", "lock+unlock pairs", pairs as f64, Unit::Count)
        .add("p50_us", "pair p50", s.p50_us, Unit::Micros)
        .add("p99_us", "pair p99", s.p99_us, Unit::Micros)
        .add("pairs_per_s", "pairs/s", rate, Unit::PerSec);
    let vs_raw = s.p50_us / base.pair_p50_us;
    if L::NAME == Lib::NAME {
        r.add_goal(
            "p50_vs_raw_pair",
            "pair p50 / raw EVALSHA pair p50",
            vs_raw,
            Unit::Ratio,
            Goal::AtMost(1.1),
        );
    } else {
        r.add(
            "p50_vs_raw_pair",
            "pair p50 / raw EVALSHA pair p50",
            vs_raw,
            Unit::Ratio,
        );
    }
    r.add(
        "p50_vs_ping",
        "pair p50 / PING p50",
        s.p50_us / base.ping_p50_us,
        Unit::Ratio,
    )
    .add(
        "rate_vs_raw_pair",
        "pairs/s / (1 / raw pair p50)",
        rate / base.pair_rate(),
        Unit::Ratio,
    )
    .add(
        "requests_per_pair",
        "client requests per pair (raw: 2)",
        per_pair(commands.sum_of(L::CLIENT_COMMANDS)),
        Unit::Count,
    )
    .add(
        "ping_per_pair",
        "PING per pair",
        per_pair(commands.calls("ping")),
        Unit::Count,
    );
    bench.progress(&format!(
        "W1 ({}): p50 {:.0} µs = {vs_raw:.2}× raw pair",
        L::NAME,
        s.p50_us
    ));
    Ok(r)
}
