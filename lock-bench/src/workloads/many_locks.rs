//! W3 many locks: 32 tasks over 4 clients, each taking and giving back a
//! lock picked at random out of 1 024, as fast as it can. Measures total
//! throughput against the raw 32-connection `EVALSHA` pair throughput and,
//! for the reentrant lock, against rslock's throughput measured right after
//! it (issue 15's goal: ≥ 0.8×; not evaluated without feature `rslock`).
//! Two tasks sometimes want the same lock; then one waits. The
//! fair and cluster variants are also compared with the reentrant lock's
//! W3 on the standalone server; on a cluster the names spread over every
//! master, and so does the raw baseline's.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use tokio::sync::Barrier;
use tokio::task::JoinSet;
use tokio::time::Instant;

use super::close_all;
use crate::goals;
use crate::locker::Locker;
use crate::report::{Report, Unit};
use crate::target::{Kind, Target};

const CLIENTS: usize = 4;
const TASKS: usize = 32;
const NAMES: usize = 1_024;

/// W3 with `t`'s lock (and with rslock next to the reentrant lock).
pub(crate) async fn run(t: &Target<'_>) -> Result<Vec<Report>> {
    let lib = t.lib_lockers(CLIENTS).await?;
    let result = measure(t, &lib).await;
    close_all(&lib).await;
    let mut ours = result?;
    // rslock runs right after the reentrant lock and after the lean lock,
    // which keeps rslock's layout.
    let goal = match t.kind {
        Kind::Reentrant => goals::W3_RATE_VS_RSLOCK,
        Kind::Lean => goals::LEAN_W3_RATE_VS_RSLOCK,
        _ => return Ok(vec![ours]),
    };
    #[cfg(feature = "rslock")]
    let peer = Some(measure(t, &t.bench.rs_lockers(CLIENTS)).await?);
    #[cfg(not(feature = "rslock"))]
    let peer: Option<Report> = None;
    goals::compare_with_peer(
        &mut ours,
        peer.as_ref(),
        "acquisitions_per_s",
        "rate_vs_rslock",
        "acquisitions/s / rslock acquisitions/s (same run)",
        goal,
    );
    Ok([ours].into_iter().chain(peer).collect())
}

async fn measure<L: Locker>(t: &Target<'_>, lockers: &[L]) -> Result<Report> {
    let bench = t.bench;
    let workload = t.workload("W3");
    let first = lockers.first().context("W3 needs a locker")?;
    let (implementation, client_commands) = (first.name(), first.client_commands());
    let window = bench.pick(Duration::from_secs(10), Duration::from_secs(1));
    bench.progress(&format!(
        "{workload} many locks ({implementation}): {TASKS} tasks ({CLIENTS} clients) on {NAMES} random names, {window:?}"
    ));
    let names: Arc<Vec<String>> = Arc::new(
        (0..NAMES)
            .map(|i| t.name(&format!("w3:{implementation}:{i}")))
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
                locker.unlock_bounded(held).await?;
                if Instant::now() >= deadline {
                    break;
                }
            }
            anyhow::Ok(count)
        });
    }
    t.reset_stats().await?;
    barrier.wait().await;
    let started = Instant::now();
    let mut total = 0;
    while let Some(count) = set.join_next().await {
        total += count.context("a W3 task panicked")??;
    }
    let rate = total as f64 / started.elapsed().as_secs_f64();
    let commands = t.command_stats().await?;
    let base = t.baseline()?;
    let ratio = rate / base.raw32_pairs_per_s;

    let mut r = Report::new(&workload, "many locks", implementation);
    r.add(
        "acquisitions",
        "acquisitions (each + release)",
        total as f64,
        Unit::Count,
    )
    .add("acquisitions_per_s", "acquisitions/s", rate, Unit::PerSec);
    r.add(
        "rate_vs_raw32",
        "acquisitions/s / raw 32-connection pairs/s",
        ratio,
        Unit::Ratio,
    );
    if t.kind != Kind::Reentrant {
        if bench.reference.w3_per_s.is_none() {
            r.note("W3 did not run, so there is no ratio to it");
        }
        r.add(
            "rate_vs_w3",
            "acquisitions/s / W3 (reentrant, standalone) acquisitions/s",
            bench.reference.w3_per_s.map(|w3| rate / w3),
            Unit::Ratio,
        );
    }
    r.add(
        "requests_per_acquisition",
        "client requests per acquisition + release (raw: 2)",
        commands.sum_of(client_commands) as f64 / total.max(1) as f64,
        Unit::Count,
    );
    bench.progress(&format!(
        "{workload} ({implementation}): {rate:.0} acquisitions/s = {ratio:.2}× raw"
    ));
    Ok(r)
}
