//! W5 many waiters: 1 000, then 10 000 tasks of one client wait for one
//! lock that another client holds. Once all of them wait, the holder
//! releases, and they take the lock in turn, each giving it back at once.
//!
//! The library promises one subscription per lock name per client however
//! many wait (goal: 1 opened), one woken waiter per unlock (goal: wake-ups
//! / unlocks = 1), and handoffs as quick as with few waiters (goal: p50 ≤
//! 1.2 × W2H's p50).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use lock_redis::ClientConfig;
use tokio::task::JoinSet;
use tokio::time::Instant;

use super::{wait_for, Bench};
use crate::latency::Latencies;
use crate::locker::{Lib, Locker};
use crate::report::{Goal, Report, Unit};
use crate::target::Kind;
use crate::LOCK_TIMEOUT;

pub(crate) async fn run(bench: &Bench) -> Result<Report> {
    let sizes = bench.pick([1_000, 10_000], [100, 1_000]);
    let mut r = Report::new("W5", "many waiters", Kind::Reentrant.implementation());
    for n in sizes {
        one_size(bench, n, &mut r).await?;
    }
    r.note("unlocks = waiters: the holder's and every waiter's but the last have someone to wake");
    Ok(r)
}

async fn one_size(bench: &Bench, n: usize, r: &mut Report) -> Result<()> {
    bench.progress(&format!("W5 many waiters: {n} waiters on one lock"));
    let target = bench.target(Kind::Reentrant)?;
    let holder = Lib::new(
        target.lib_client(ClientConfig::default()).await?,
        Kind::Reentrant,
    );
    let waiters = Lib::new(
        target.lib_client(ClientConfig::default()).await?,
        Kind::Reentrant,
    );
    let result = measure(bench, n, &holder, &waiters, r).await;
    holder.close().await;
    waiters.close().await;
    result
}

async fn measure(
    bench: &Bench,
    n: usize,
    holder: &Lib,
    waiters: &Lib,
    r: &mut Report,
) -> Result<()> {
    let name = Arc::new(bench.name(&format!("w5:{n}")));
    let held = tokio::time::timeout(LOCK_TIMEOUT, holder.lock(&name))
        .await
        .context("the holder could not take a free lock")??;

    // Every waiter must have its turn by then, or something was lost.
    let deadline = Instant::now() + Duration::from_secs(20) + Duration::from_millis(5) * n as u32;
    let last_release: Arc<Mutex<Option<Instant>>> = Arc::default();
    let mut set = JoinSet::new();
    for _ in 0..n {
        let (client, name, last) = (
            waiters.clone(),
            Arc::clone(&name),
            Arc::clone(&last_release),
        );
        set.spawn(async move {
            let Ok(guard) = tokio::time::timeout_at(deadline, client.lock(&name)).await else {
                bail!("a waiter never got the lock (lost wake-up?)");
            };
            let guard = guard?;
            let now = Instant::now();
            let handoff = last
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take()
                .map(|released| now - released);
            *last.lock().unwrap_or_else(PoisonError::into_inner) = Some(Instant::now());
            tokio::time::timeout(LOCK_TIMEOUT, client.unlock(guard))
                .await
                .context("unlock() took too long")??;
            anyhow::Ok(handoff)
        });
    }
    // All wait once each is parked: after its first try, and its try after
    // subscribing when it was the one to subscribe (the others joined the
    // live subscription and need none).
    let queued = Instant::now();
    let enqueue = wait_for(
        deadline.saturating_duration_since(Instant::now()),
        "every waiter to park",
        || waiters.client.stats().waiting >= n as u64,
    )
    .await;
    if let Err(e) = enqueue {
        let s = waiters.client.stats();
        bail!(
            "{e}: {} tries by {n} waiters, {} subscriptions active",
            s.tries,
            s.subscriptions_active
        );
    }
    let enqueue_time = queued.elapsed();
    let before = waiters.client.stats();

    let released = Instant::now();
    *last_release.lock().unwrap_or_else(PoisonError::into_inner) = Some(released);
    tokio::time::timeout(LOCK_TIMEOUT, holder.unlock(held))
        .await
        .context("the holder's unlock() took too long")??;
    let mut handoffs = Latencies::with_capacity(n);
    let mut missing = 0;
    while let Some(result) = set.join_next().await {
        match result.context("a W5 waiter panicked")?? {
            Some(h) => handoffs.push(h),
            None => missing += 1,
        }
    }
    let drained = released.elapsed();
    if missing > 0 {
        bail!(
            "{missing} waiters found no release before their acquisition: the lock was held twice?"
        );
    }
    let after = waiters.client.stats();

    let s = handoffs.summary().context("no handoffs")?;
    let base = bench.baseline()?;
    let unlocks = n as f64;
    let k = |what: &str| format!("{what}_{n}");
    let l = |what: &str| format!("{n} waiters: {what}");
    r.add(k("waiters"), l("waiters"), n as f64, Unit::Count)
        .add(
            k("enqueue_s"),
            l("time until all waited"),
            enqueue_time.as_secs_f64(),
            Unit::Seconds,
        )
        .add_goal(
            k("subscriptions"),
            l("subscriptions opened"),
            after.subscriptions_opened as f64,
            Unit::Count,
            Goal::Exactly(1.0),
        )
        .add_goal(
            k("wakeups_per_unlock"),
            l("wake-ups per unlock"),
            (after.wakeups - before.wakeups) as f64 / unlocks,
            Unit::Count,
            Goal::Exactly(1.0),
        )
        .add(
            k("tries_per_waiter"),
            l("acquire attempts per waiter (2 = ideal: a first, one when woken)"),
            after.tries as f64 / n as f64,
            Unit::Count,
        )
        .add(k("p50_us"), l("handoff p50"), s.p50_us, Unit::Micros)
        .add(k("p99_us"), l("handoff p99"), s.p99_us, Unit::Micros)
        .add_goal(
            k("p50_vs_w2h"),
            l("handoff p50 / W2H handoff p50"),
            bench.reference.w2h_p50_us.map(|w2h| s.p50_us / w2h),
            Unit::Ratio,
            Goal::AtMost(1.2),
        )
        .add(
            k("p50_vs_ping"),
            l("handoff p50 / PING p50"),
            s.p50_us / base.ping_p50_us,
            Unit::Ratio,
        )
        .add(
            k("handoffs_per_s"),
            l("handoffs/s until all had it"),
            unlocks / drained.as_secs_f64(),
            Unit::PerSec,
        );
    bench.progress(&format!(
        "W5 many waiters: {n}: {} subscriptions, {:.3} wake-ups per unlock, handoff p50 {:.0} µs",
        after.subscriptions_opened,
        (after.wakeups - before.wakeups) as f64 / unlocks,
        s.p50_us
    ));
    Ok(())
}
