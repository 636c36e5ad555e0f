//! RW1 readers and a writer: 32 reader tasks over 4 clients take and give
//! back the read side of one read-write lock as fast as they can, while one
//! writer task of a fifth client takes the write side over and over
//! (holding it 1 ms, pausing 10 ms between tries).
//!
//! Measures the readers' throughput against the raw 32-connection
//! `EVALSHA` pair rate (W3's reference), and the writer's waits: p50, p99
//! and the longest — the writer-starvation figure. Readers are admitted
//! whenever the lock is in read mode, also while the writer waits (as in
//! Redisson), so a writer gets in only when the readers' holds happen not
//! to overlap; a wait still going when the readers stop counts, with the
//! time until then, as the longest.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use lock_redis::{ClientConfig, LockClient};
use tokio::sync::Barrier;
use tokio::task::JoinSet;
use tokio::time::Instant;

use super::Bench;
use crate::latency::Latencies;
use crate::report::{Report, Unit};
use crate::target::Kind;

const READER_CLIENTS: usize = 4;
const READERS: usize = 32;
const WRITER_HOLD: Duration = Duration::from_millis(1);
const WRITER_PAUSE: Duration = Duration::from_millis(10);

pub(crate) async fn run(bench: &Bench) -> Result<Report> {
    let target = bench.target(Kind::Reentrant)?;
    let mut clients = Vec::new();
    for _ in 0..=READER_CLIENTS {
        clients.push(target.lib_client(ClientConfig::default()).await?);
    }
    let result = measure(bench, &clients).await;
    for c in &clients {
        let _ = tokio::time::timeout(Duration::from_secs(5), c.close()).await;
    }
    result
}

/// What the writer saw.
struct Writer {
    waits: Latencies,
    longest: Duration,
    /// Whether its last wait was still going when the readers stopped.
    starved_at_end: bool,
}

async fn measure(bench: &Bench, clients: &[LockClient]) -> Result<Report> {
    let window = bench.pick(Duration::from_secs(10), Duration::from_secs(2));
    bench.progress(&format!(
        "RW1 readers and a writer: {READERS} readers ({READER_CLIENTS} clients) and 1 writer on one read-write lock, {window:?}"
    ));
    let name = Arc::new(bench.name("rw1"));
    let stop = Arc::new(AtomicBool::new(false));
    let barrier = Arc::new(Barrier::new(READERS + 2));
    let mut readers = JoinSet::new();
    for task in 0..READERS {
        let lock = clients[task % READER_CLIENTS].read_write_lock(name.as_str())?;
        let (stop, barrier) = (Arc::clone(&stop), Arc::clone(&barrier));
        readers.spawn(async move {
            barrier.wait().await;
            let mut count = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let g = lock.read().lock().await?;
                count += 1;
                g.unlock().await?;
            }
            anyhow::Ok(count)
        });
    }
    let writer = {
        let lock = clients[READER_CLIENTS].read_write_lock(name.as_str())?;
        let (stop, barrier) = (Arc::clone(&stop), Arc::clone(&barrier));
        tokio::spawn(async move {
            barrier.wait().await;
            let mut w = Writer {
                waits: Latencies::default(),
                longest: Duration::ZERO,
                starved_at_end: false,
            };
            while !stop.load(Ordering::Relaxed) {
                let asked = Instant::now();
                let g = lock.write().lock().await?;
                let waited = asked.elapsed();
                if stop.load(Ordering::Relaxed) {
                    // It got in only because the readers stopped.
                    w.starved_at_end = true;
                    w.longest = w.longest.max(waited);
                    g.unlock().await?;
                    break;
                }
                w.waits.push(waited);
                w.longest = w.longest.max(waited);
                tokio::time::sleep(WRITER_HOLD).await;
                g.unlock().await?;
                tokio::time::sleep(WRITER_PAUSE).await;
            }
            anyhow::Ok(w)
        })
    };
    barrier.wait().await;
    let started = Instant::now();
    tokio::time::sleep(window).await;
    stop.store(true, Ordering::Relaxed);
    let mut total = 0;
    while let Some(count) = readers.join_next().await {
        total += count.context("an RW1 reader panicked")??;
    }
    let elapsed = started.elapsed();
    let writer = tokio::time::timeout(Duration::from_secs(30), writer)
        .await
        .context("the writer did not get in within 30 s of the readers stopping")?
        .context("the RW1 writer panicked")??;
    let rate = total as f64 / elapsed.as_secs_f64();
    let (raw, ping) = {
        let base = bench.baseline()?;
        (base.raw32_pairs_per_s, base.ping_p50_us)
    };

    let mut r = Report::new(
        "RW1",
        "readers and a writer",
        Kind::Reentrant.implementation(),
    );
    r.add(
        "reader_acquisitions",
        "reader acquisitions (each + release)",
        total as f64,
        Unit::Count,
    )
    .add(
        "reader_acquisitions_per_s",
        "reader acquisitions/s",
        rate,
        Unit::PerSec,
    )
    .add(
        "reader_rate_vs_raw32",
        "reader acquisitions/s / raw 32-connection pairs/s (W3's reference)",
        rate / raw,
        Unit::Ratio,
    )
    .add(
        "writer_acquisitions",
        "writer acquisitions while readers ran",
        writer.waits.len() as f64,
        Unit::Count,
    );
    let summary = writer.waits.summary();
    r.add(
        "writer_wait_p50_us",
        "writer wait p50",
        summary.map(|s| s.p50_us),
        Unit::Micros,
    )
    .add(
        "writer_wait_p99_us",
        "writer wait p99",
        summary.map(|s| s.p99_us),
        Unit::Micros,
    )
    .add(
        "writer_wait_p50_vs_ping",
        "writer wait p50 / PING p50",
        summary.map(|s| s.p50_us / ping),
        Unit::Ratio,
    )
    .add(
        "writer_longest_wait_us",
        "longest writer wait (starvation)",
        writer.longest.as_secs_f64() * 1e6,
        Unit::Micros,
    );
    if writer.starved_at_end {
        r.note("the writer's last wait ended only when the readers stopped; it counts in the longest wait");
    }
    bench.progress(&format!(
        "RW1: readers {rate:.0}/s = {:.2}× raw; writer got in {} times, longest wait {:?}",
        rate / raw,
        writer.waits.len(),
        writer.longest
    ));
    Ok(r)
}
