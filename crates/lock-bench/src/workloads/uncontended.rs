//! W1 uncontended: one task takes and gives back one lock, over and over.
//! Nobody else wants it, so this is the library's own cost per pair,
//! compared with the raw `EVALSHA` pair (goal: p50 ≤ 1.1×). The fair and
//! cluster variants are also compared with the reentrant lock's W1 on the
//! standalone server (goal for the cluster: p50 ≤ 1.1×).

use std::time::Instant;

use anyhow::{Context, Result};

use super::close_all;
use crate::latency::Latencies;
use crate::locker::Locker;
use crate::report::{Goal, Report, Unit};
use crate::target::{Kind, Target};
use crate::LOCK_TIMEOUT;

const WARM_UP: usize = 100;

/// W1 with `t`'s lock (and with rslock next to the reentrant lock).
pub(crate) async fn run(t: &Target<'_>) -> Result<Vec<Report>> {
    let mut reports = Vec::new();
    let lib = t.lib_lockers(1).await?;
    let result = measure(t, &lib[0]).await;
    close_all(&lib).await;
    reports.push(result?);
    #[cfg(feature = "rslock")]
    if t.kind == Kind::Reentrant {
        let rs = t.bench.rs_lockers(1);
        reports.push(measure(t, &rs[0]).await?);
    }
    Ok(reports)
}

async fn measure<L: Locker>(t: &Target<'_>, locker: &L) -> Result<Report> {
    let bench = t.bench;
    let workload = t.workload("W1");
    let pairs = bench.pick(5_000, 1_000);
    bench.progress(&format!(
        "{workload} uncontended ({}): {pairs} lock/unlock pairs",
        locker.name()
    ));
    let name = t.pinned_name(&format!("w1:{}", locker.name()))?;
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
    t.reset_stats().await?;
    let started = Instant::now();
    for _ in 0..pairs {
        let t = Instant::now();
        pair().await?;
        lat.push(t.elapsed());
    }
    let rate = pairs as f64 / started.elapsed().as_secs_f64();
    let commands = t.command_stats().await?;
    let per_pair = |n: u64| n as f64 / pairs as f64;
    let s = lat.summary().context("no samples")?;
    let base = t.baseline()?;

    let mut r = Report::new(&workload, "uncontended", locker.name());
    r.add("pairs", "lock+unlock pairs", pairs as f64, Unit::Count)
        .add("p50_us", "pair p50", s.p50_us, Unit::Micros)
        .add("p99_us", "pair p99", s.p99_us, Unit::Micros)
        .add("pairs_per_s", "pairs/s", rate, Unit::PerSec);
    let vs_raw = s.p50_us / base.pair_p50_us;
    r.add_goal(
        "p50_vs_raw_pair",
        "pair p50 / raw EVALSHA pair p50",
        vs_raw,
        Unit::Ratio,
        t.is_reference(locker.name()).then_some(Goal::AtMost(1.1)),
    );
    let vs_w1 = bench.reference.w1_p50_us.map(|w1| s.p50_us / w1);
    if t.kind != Kind::Reentrant && vs_w1.is_none() {
        r.note("W1 did not run, so there is no ratio to it");
    }
    match t.kind {
        Kind::Reentrant => {}
        Kind::Fair => {
            r.add(
                "p50_vs_w1",
                "pair p50 / W1 (reentrant) p50",
                vs_w1,
                Unit::Ratio,
            );
        }
        Kind::Cluster => {
            r.add_goal(
                "p50_vs_w1",
                "pair p50 / W1 (standalone) p50",
                vs_w1,
                Unit::Ratio,
                Goal::AtMost(1.1),
            );
        }
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
        per_pair(commands.sum_of(locker.client_commands())),
        Unit::Count,
    )
    .add(
        "ping_per_pair",
        "PING per pair",
        per_pair(commands.calls("ping")),
        Unit::Count,
    );
    bench.progress(&format!(
        "{workload} ({}): p50 {:.0} µs = {vs_raw:.2}× raw pair",
        locker.name(),
        s.p50_us
    ));
    Ok(r)
}
