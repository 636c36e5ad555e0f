//! S1 semaphore: 16 tasks over 4 clients on one semaphore with 4 permits,
//! each holding its permit about 1 ms, so every release has waiters.
//! Measures acquisitions per second (against the raw pair rate: one
//! acquisition costs at least one round trip, its release another) and
//! the handoff: from just before a task releases its permit to just after
//! another task's `acquire` returns that permit (p50 as a ratio to PING).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use anyhow::{Context, Result};
use lock_redis::{ClientConfig, LockClient, RedisConfig};
use tokio::sync::Barrier;
use tokio::task::JoinSet;
use tokio::time::Instant;

use super::{bounded, Bench};
use crate::latency::Latencies;
use crate::report::{Report, Unit};

const CLIENTS: usize = 4;
const TASKS: usize = 16;
const PERMITS: u64 = 4;
const HOLD: Duration = Duration::from_millis(1);

/// Releases not yet taken over, oldest first.
type Released = Arc<Mutex<VecDeque<Instant>>>;

#[derive(Default)]
struct TaskResult {
    handoffs: Latencies,
    acquisitions: u64,
}

/// Runs S1 against the standalone server.
pub(crate) async fn run(bench: &Bench) -> Result<Report> {
    let window = bench.pick(Duration::from_secs(5), Duration::from_secs(1));
    bench.progress(&format!(
        "S1 semaphore: {TASKS} tasks ({CLIENTS} clients), {PERMITS} permits held ~1 ms each, {window:?}"
    ));
    let mut clients: Vec<LockClient> = Vec::with_capacity(CLIENTS);
    for _ in 0..CLIENTS {
        let connect =
            lock_redis::connect(RedisConfig::new(bench.url.clone()), ClientConfig::default());
        clients.push(
            bounded(Duration::from_secs(15), "connecting a lock client", async {
                connect.await.context("cannot connect a lock client")
            })
            .await?,
        );
    }
    let name = bench.name("s1");
    clients[0]
        .semaphore(&name)?
        .try_set_permits(PERMITS)
        .await?;
    let released: Released = Arc::default();
    let barrier = Arc::new(Barrier::new(TASKS + 1));
    let mut set = JoinSet::new();
    for me in 0..TASKS {
        let sem = clients[me % CLIENTS].semaphore(&name)?;
        let (released, barrier) = (Arc::clone(&released), Arc::clone(&barrier));
        set.spawn(async move {
            barrier.wait().await;
            let deadline = Instant::now() + window;
            let mut out = TaskResult::default();
            loop {
                let Ok(permit) = tokio::time::timeout_at(deadline, sem.acquire()).await else {
                    break;
                };
                let permit = permit?;
                let now = Instant::now();
                let freed = released
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .pop_front();
                if let Some(freed) = freed {
                    out.handoffs.push(now - freed);
                }
                out.acquisitions += 1;
                tokio::time::sleep(HOLD).await;
                released
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push_back(Instant::now());
                permit.release().await?;
                if Instant::now() >= deadline {
                    break;
                }
            }
            anyhow::Ok(out)
        });
    }
    barrier.wait().await;
    let started = Instant::now();
    let mut handoffs = Latencies::default();
    let mut acquisitions = 0;
    while let Some(result) = set.join_next().await {
        let result = result.context("an S1 task panicked")??;
        handoffs.extend(result.handoffs);
        acquisitions += result.acquisitions;
    }
    let elapsed = started.elapsed().as_secs_f64();
    // Waiters cut off by the window may have had an attempt on the wire:
    // what it took is given back in the background.
    for c in &clients {
        bounded(Duration::from_secs(10), "settling a client", async {
            c.settle().await;
            Ok(())
        })
        .await?;
    }
    let left = clients[0].semaphore(&name)?.available_permits().await?;
    for c in &clients {
        c.close().await;
    }

    let base = bench.baseline()?;
    let rate = acquisitions as f64 / elapsed;
    let s = handoffs.summary();
    let p50 = s.map(|s| s.p50_us);
    let mut r = Report::new("S1", "semaphore", "lock-redis");
    r.add(
        "acquisitions",
        "acquisitions",
        acquisitions as f64,
        Unit::Count,
    )
    .add("acquisitions_per_s", "acquisitions/s", rate, Unit::PerSec)
    .add(
        "per_s_vs_raw_pair",
        "acquisitions/s / raw pair rate (one connection)",
        rate / base.pair_rate(),
        Unit::Ratio,
    )
    .add("handoffs", "handoffs", handoffs.len() as f64, Unit::Count)
    .add("p50_us", "handoff p50", p50, Unit::Micros)
    .add("p99_us", "handoff p99", s.map(|s| s.p99_us), Unit::Micros)
    .add(
        "p50_vs_ping",
        "handoff p50 / PING p50",
        p50.map(|p| p / base.ping_p50_us),
        Unit::Ratio,
    )
    .add(
        "permits_left",
        "free permits at the end",
        left as f64,
        Unit::Count,
    );
    bench.progress(&format!(
        "S1: {rate:.0} acquisitions/s, handoff p50 {} µs = {}× PING",
        p50.map_or_else(|| "n/a".to_owned(), |p| format!("{p:.0}")),
        p50.map_or_else(
            || "n/a".to_owned(),
            |p| format!("{:.2}", p / base.ping_p50_us)
        ),
    ));
    Ok(r)
}
