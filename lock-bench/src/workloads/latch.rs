//! Latch: 1 000 tasks of one client wait on one count-down latch; once all
//! of them wait, another client counts it down to zero, and every waiter
//! returns.
//!
//! The library promises one subscription per latch per client however many
//! wait (goal: 1 opened), and that the one zero message wakes them all at
//! once (goal: one wake-up per waiter), each then reading the count once
//! more. The time from the count-down's reply until the last waiter
//! returned is given as a ratio to PING's p50: every waiter's re-read is
//! one script round trip, pipelined on the client's connection.

use std::time::Duration;

use anyhow::{bail, Context, Result};
use lock_redis::ClientConfig;
use tokio::task::JoinSet;
use tokio::time::Instant;

use super::{wait_for, Bench};
use crate::latency::Latencies;
use crate::report::{Goal, Report, Unit};
use crate::target::Kind;
use crate::{CLOSE_TIMEOUT, LOCK_TIMEOUT};

pub(crate) async fn run(bench: &Bench) -> Result<Report> {
    let n = bench.pick(1_000, 100);
    let mut r = Report::new(
        "latch",
        "count-down latch",
        Kind::Reentrant.implementation(),
    );
    bench.progress(&format!("latch: {n} waiters released by one count-down"));
    let target = bench.target(Kind::Reentrant)?;
    let waiters = target.lib_client(ClientConfig::default()).await?;
    let opener = target.lib_client(ClientConfig::default()).await?;
    let result = measure(bench, n, &waiters, &opener, &mut r).await;
    for c in [waiters, opener] {
        let _ = tokio::time::timeout(CLOSE_TIMEOUT, c.close()).await;
    }
    result?;
    r.note("released: from the count-down's reply until each waiter's wait() returned");
    Ok(r)
}

async fn measure(
    bench: &Bench,
    n: usize,
    waiters: &lock_redis::LockClient,
    opener: &lock_redis::LockClient,
    r: &mut Report,
) -> Result<()> {
    let name = bench.name(&format!("latch:{n}"));
    let latch = opener.count_down_latch(&name)?;
    if !latch.try_set_count(1).await? {
        bail!("a fresh latch {name} already had a count");
    }
    let deadline = Instant::now() + Duration::from_secs(20) + Duration::from_millis(5) * n as u32;
    let mut set = JoinSet::new();
    for _ in 0..n {
        let l = waiters.count_down_latch(&name)?;
        set.spawn(async move {
            let Ok(opened) = tokio::time::timeout_at(deadline, l.wait()).await else {
                bail!("a waiter never returned (lost wake-up?)");
            };
            opened?;
            anyhow::Ok(Instant::now())
        });
    }
    let started = Instant::now();
    wait_for(
        deadline.saturating_duration_since(Instant::now()),
        "every waiter to wait",
        || waiters.stats().waiting >= n as u64,
    )
    .await?;
    let parked_in = started.elapsed();
    let before = waiters.stats();

    let left = tokio::time::timeout(LOCK_TIMEOUT, latch.count_down())
        .await
        .context("count_down() took too long")??;
    let opened = Instant::now();
    if left != 0 {
        bail!("the count-down left {left}");
    }
    let mut released = Latencies::with_capacity(n);
    let mut last = Duration::ZERO;
    while let Some(result) = set.join_next().await {
        let returned = result.context("a latch waiter panicked")??;
        let after = returned.saturating_duration_since(opened);
        last = last.max(after);
        released.push(after);
    }
    let after = waiters.stats();
    let s = released.summary().context("no waiter returned")?;
    let ping = bench.baseline()?.ping_p50_us;
    let last_us = last.as_secs_f64() * 1e6;
    r.add("waiters", "waiters", n as f64, Unit::Count)
        .add(
            "parked_s",
            "time until all waited",
            parked_in.as_secs_f64(),
            Unit::Seconds,
        )
        .add_goal(
            "subscriptions",
            "subscriptions opened",
            after.subscriptions_opened as f64,
            Unit::Count,
            Goal::Exactly(1.0),
        )
        .add_goal(
            "wakeups_per_waiter",
            "wake-ups per waiter",
            (after.wakeups - before.wakeups) as f64 / n as f64,
            Unit::Count,
            Goal::Exactly(1.0),
        )
        .add("released_p50_us", "released p50", s.p50_us, Unit::Micros)
        .add("released_p99_us", "released p99", s.p99_us, Unit::Micros)
        .add("all_released_us", "all released", last_us, Unit::Micros)
        .add(
            "all_released_vs_ping",
            "all released / PING p50",
            last_us / ping,
            Unit::Ratio,
        )
        .add(
            "all_released_per_waiter_vs_ping",
            "all released / waiters / PING p50",
            last_us / n as f64 / ping,
            Unit::Ratio,
        );
    bench.progress(&format!(
        "latch: {n} waiters, {} subscriptions, all released in {:.0} µs ({:.1}× PING)",
        after.subscriptions_opened,
        last_us,
        last_us / ping
    ));
    Ok(())
}
