//! W3 many locks: 32 tasks over 4 clients, each taking and giving back a
//! lock picked at random out of 1 024, as fast as it can. Measures total
//! throughput against the raw 32-connection `EVALSHA` pair throughput (goal
//! ≥ 0.9×). Two tasks sometimes want the same lock; then one waits.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use tokio::sync::Barrier;
use tokio::task::JoinSet;
use tokio::time::Instant;

use super::{close_all, Bench};
use crate::locker::{Lib, Locker};
use crate::report::{Goal, Report, Unit};
use crate::LOCK_TIMEOUT;

const CLIENTS: usize = 4;
const TASKS: usize = 32;
const NAMES: usize = 1_024;

pub(crate) async fn run(bench: &Bench) -> Result<Vec<Report>> {
    let mut reports = Vec::new();
    let lib = bench.lib_lockers(CLIENTS).await?;
    let result = measure(bench, &lib).await;
    close_all(&lib).await;
    reports.push(result?);
    #[cfg(feature = "rslock")]
    reports.push(measure(bench, &bench.rs_lockers(CLIENTS)).await?);
    Ok(reports)
}

async fn measure<L: Locker>(bench: &Bench, lockers: &[L]) -> Result<Report> {
    let window = bench.pick(Duration::from_secs(10), Duration::from_secs(1));
    bench.progress(&format!(
        "W3 many locks ({}): {TASKS} tasks ({CLIENTS} clients) on {NAMES} random names, {window:?}",
        L::NAME
    ));
    let names: Arc<Vec<String>> = Arc::new(
        (0..NAMES)
            .map(|i| bench.name(&format!("w3:{}:{i}", L::NAME)))
            .collect(),
    );
    let barrier = Arc::new(Barrier::new(TASKS + 1));
    let mut set = JoinSet::new();
    for task in 0..TASKS {
        let locker = lockers[task % lockers.len()].clone();
        let (names, barrier) = (Arc::clone(&names), Arc::clone(&barrier));
        set.spawn(async move {
            let mut rng = fastrand::Rng::new();
            barrier.wait().await;
            let deadline = Instant::now() + window;
            let mut count = 0u64;
            loop {
                let name = &names[rng.usize(..names.len())];
                let Ok(held) = tokio::time::timeout_at(deadline, locker.lock(name)).await else {
                    break;
                };
                let held = held?;
                count += 1;
                tokio::time::timeout(LOCK_TIMEOUT, locker.unlock(held))
                    .await
                    .with_context(|| format!("unlock() took over {LOCK_TIMEOUT:?}"))??;
                if Instant::now() >= deadline {
                    break;
                }
            }
            anyhow::Ok(count)
        });
    }
    bench.server.reset_stats().await?;
    barrier.wait().await;
    let started = Instant::now();
    let mut total = 0;
    while let Some(count) = set.join_next().await {
        total += count.context("a W3 task panicked")??;
    }
    let rate = total as f64 / started.elapsed().as_secs_f64();
    let commands = bench.server.command_stats().await?;
    let base = bench.baseline()?;
    let ratio = rate / base.raw32_pairs_per_s;

    let mut r = Report::new("W3", "many locks", L::NAME);
    r.add(
        "acquisitions",
        "acquisitions (each + release)",
        total as f64,
        Unit::Count,
    )
    .add("acquisitions_per_s", "acquisitions/s", rate, Unit::PerSec);
    if L::NAME == Lib::NAME {
        r.add_goal(
            "rate_vs_raw32",
            "acquisitions/s / raw 32-connection pairs/s",
            ratio,
            Unit::Ratio,
            Goal::AtLeast(0.9),
        );
    } else {
        r.add(
            "rate_vs_raw32",
            "acquisitions/s / raw 32-connection pairs/s",
            ratio,
            Unit::Ratio,
        );
    }
    r.add(
        "requests_per_acquisition",
        "client requests per acquisition + release (raw: 2)",
        commands.sum_of(L::CLIENT_COMMANDS) as f64 / total.max(1) as f64,
        Unit::Count,
    );
    bench.progress(&format!(
        "W3 ({}): {rate:.0} acquisitions/s = {ratio:.2}× raw",
        L::NAME
    ));
    Ok(r)
}
