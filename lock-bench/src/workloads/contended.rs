//! W2 contended: 8 tasks (4 clients × 2 tasks) take one lock and give it
//! back in a loop, as fast as they can. Measures throughput on one hot lock
//! and fairness: the fewest acquisitions of any task over the most (goal
//! ≥ 0.25).

use std::sync::Arc;

use anyhow::{Context, Result};
use tokio::sync::Barrier;
use tokio::task::JoinSet;
use tokio::time::Instant;

use super::{close_all, Bench};
use crate::goals;
use crate::locker::Locker;
use crate::report::{Report, Unit};
use crate::target::Kind;

const CLIENTS: usize = 4;
const TASKS_PER_CLIENT: usize = 2;

pub(crate) async fn run(bench: &Bench) -> Result<Report> {
    let window = bench.pick(
        std::time::Duration::from_secs(10),
        std::time::Duration::from_secs(1),
    );
    let tasks = CLIENTS * TASKS_PER_CLIENT;
    bench.progress(&format!(
        "W2 contended: {tasks} tasks ({CLIENTS} clients) on one lock for {window:?}"
    ));
    let lockers = bench.target(Kind::Reentrant)?.lib_lockers(CLIENTS).await?;
    let name = Arc::new(bench.name("w2"));
    let barrier = Arc::new(Barrier::new(tasks + 1));
    let mut set = JoinSet::new();
    for locker in &lockers {
        for _ in 0..TASKS_PER_CLIENT {
            let (locker, name, barrier) = (locker.clone(), Arc::clone(&name), Arc::clone(&barrier));
            set.spawn(async move {
                barrier.wait().await;
                let deadline = Instant::now() + window;
                let mut count = 0u64;
                loop {
                    // A task still waiting when the window closes stops
                    // waiting: the lock is cancel-safe.
                    let Ok(held) = tokio::time::timeout_at(deadline, locker.lock(&name)).await
                    else {
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
    }
    barrier.wait().await;
    let started = Instant::now();
    let mut counts = Vec::with_capacity(tasks);
    while let Some(count) = set.join_next().await {
        counts.push(count.context("a W2 task panicked")??);
    }
    let elapsed = started.elapsed().as_secs_f64();
    close_all(&lockers).await;

    let total: u64 = counts.iter().sum();
    let min = counts.iter().copied().min().unwrap_or(0);
    let max = counts.iter().copied().max().unwrap_or(0);
    let rate = total as f64 / elapsed;
    let fairness = if max == 0 {
        0.0
    } else {
        min as f64 / max as f64
    };
    let base = bench.baseline()?;

    let mut r = Report::new("W2", "contended", Kind::Reentrant.implementation());
    r.add("tasks", "tasks (4 clients × 2)", tasks as f64, Unit::Count)
        .add("seconds", "window", window.as_secs_f64(), Unit::Seconds)
        .add("acquisitions", "acquisitions", total as f64, Unit::Count)
        .add("acquisitions_per_s", "acquisitions/s", rate, Unit::PerSec)
        .add(
            "rate_vs_raw_pair",
            "acquisitions/s / (1 / raw pair p50)",
            rate / base.pair_rate(),
            Unit::Ratio,
        )
        .add(
            "task_min",
            "fewest acquisitions of a task",
            min as f64,
            Unit::Count,
        )
        .add(
            "task_max",
            "most acquisitions of a task",
            max as f64,
            Unit::Count,
        )
        .add_goal(
            "fairness",
            "fairness (min / max)",
            fairness,
            Unit::Fraction,
            goals::W2_FAIRNESS,
        );
    bench.progress(&format!(
        "W2: {rate:.0} acquisitions/s, per task {min}..{max} (fairness {fairness:.2})"
    ));
    Ok(r)
}
