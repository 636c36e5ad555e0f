//! W4 watchdog scale: one client holds many watchdog-leased locks (10 000,
//! then 100 000) with a 3 s watchdog timeout, so the watchdog renews them
//! every second. Over three renewal ticks it counts, per tick:
//!
//! - round trips: the client's renewal calls (`stats().renew_calls`); the
//!   backend sends each as one pipeline (goal ≤ 1 000 for 100 000 locks);
//! - scripts: `EVALSHA` calls the server ran (`INFO commandstats`); the
//!   backend renews up to 500 locks per script;
//!
//! and the client's memory per held lock: the growth of this process's
//! resident set (RSS, `/proc/self/statm`) while it took the locks, divided
//! by their number, and the same after the three ticks (issue 15's goal:
//! ≤ 300 B both right after taking them and after the ticks). It includes
//! the guards the bench holds and whatever the allocator keeps; it is an
//! upper-bound estimate.
//!
//! The locks of the smaller size stay held (their client closed) while the
//! larger one is measured, so the larger one cannot reuse their freed
//! memory. When W4 ends the clients are closed without unlocking: the locks
//! expire 3 s later.

use std::time::Duration;

use anyhow::{bail, Context, Result};
use futures::{StreamExt, TryStreamExt};
use lock_redis::{ClientConfig, ClientStats, Guard, LockClient};
use tokio::time::Instant;

use super::{bounded, wait_for, Bench};
use crate::goals;
use crate::locker::{Lib, Locker};
use crate::report::{Goal, Report, Unit};
use crate::rss::resident_bytes;
use crate::target::Kind;
use crate::LOCK_TIMEOUT;

const WATCHDOG: Duration = Duration::from_secs(3);
const TICKS: u64 = 3;
/// Acquisitions in flight at once while taking the locks.
const CONCURRENCY: usize = 64;

pub(crate) async fn run(bench: &Bench) -> Result<Report> {
    let sizes = bench.pick([10_000, 100_000], [1_000, 10_000]);
    let mut r = Report::new("W4", "watchdog scale", Kind::Reentrant.implementation());
    r.add(
        "watchdog_timeout_s",
        "watchdog timeout (renewed every third)",
        WATCHDOG.as_secs_f64(),
        Unit::Seconds,
    );
    // Kept until the end, so a later size cannot reuse their memory.
    let mut kept: Vec<Vec<Guard>> = Vec::new();
    for n in sizes {
        let client = bench
            .target(Kind::Reentrant)?
            .lib_client(ClientConfig::default().watchdog_timeout(WATCHDOG))
            .await?;
        let result = one_size(bench, &client, n, &mut r).await;
        // Closed before the guards drop, so they send no releases (the
        // locks expire), and before the next size, so its watchdog does
        // not renew alongside.
        Lib::new(client, Kind::Reentrant).close().await;
        kept.push(result?);
    }
    drop(kept);
    r.note("memory is the RSS growth of the whole process while taking the locks (guards included), divided by their number");
    Ok(r)
}

async fn one_size(
    bench: &Bench,
    client: &LockClient,
    n: usize,
    r: &mut Report,
) -> Result<Vec<Guard>> {
    bench.progress(&format!(
        "W4 watchdog: taking {n} locks ({CONCURRENCY} at a time)"
    ));
    let rss_before = resident_bytes();
    let heap = HeapCounts::start();
    let started = Instant::now();
    let guards: Vec<Guard> = futures::stream::iter(0..n)
        .map(|i| {
            let lock = client.lock(bench.name(&format!("w4:{n}:{i}")));
            async move {
                let lock = lock?;
                tokio::time::timeout(LOCK_TIMEOUT, lock.lock())
                    .await
                    .with_context(|| format!("lock() of a free lock took over {LOCK_TIMEOUT:?}"))?
                    .map_err(anyhow::Error::from)
            }
        })
        .buffer_unordered(CONCURRENCY)
        .try_collect()
        .await?;
    let took = started.elapsed();
    bounded(
        Duration::from_secs(30),
        "settle after taking locks",
        async {
            client.settle().await;
            Ok(())
        },
    )
    .await?;
    let rss_after = resident_bytes();
    let watched = client.stats().watched;
    if watched != n as u64 {
        let lost = guards.iter().filter(|g| g.is_lost()).count();
        let stats = client.stats();
        bail!(
            "W4: holding {n} locks but the watchdog keeps {watched}: {lost} guards report \
             their lock lost; taking them took {:.1} s, the watchdog made {} renew calls \
             renewing {} leases meanwhile",
            took.as_secs_f64(),
            stats.renew_calls,
            stats.renewed
        );
    }

    bench.progress(&format!(
        "W4 watchdog: {n} locks taken in {:.1} s; watching {TICKS} renewal ticks",
        took.as_secs_f64()
    ));
    let heap = heap.locks_taken();
    let (calls, commands, ticks) = watch_ticks(bench, client, n as u64).await?;
    let rss_ticked = resident_bytes();
    heap.ticked(r, n);

    let per_tick = |v: u64| v as f64 / ticks;
    let scripts = per_tick(commands.calls("evalsha"));
    let per_lock = |after: Option<u64>| match (rss_before, after) {
        (Some(before), Some(after)) => Some(after.saturating_sub(before) as f64 / n as f64),
        _ => None,
    };
    let bytes_per_lock = per_lock(rss_after);
    let k = |what: &str| format!("{what}_{n}");
    let l = |what: &str| format!("{n} locks: {what}");
    r.add(k("locks"), l("locks held"), n as f64, Unit::Count)
        .add(
            k("acquisitions_per_s"),
            l("acquisitions/s while taking them"),
            n as f64 / took.as_secs_f64(),
            Unit::PerSec,
        )
        .add_goal(
            k("round_trips_per_tick"),
            l("round trips per tick (renew calls)"),
            per_tick(calls),
            Unit::Count,
            Goal::AtMost(1_000.0),
        )
        .add(
            k("requests_per_tick"),
            l("client requests per tick (EVALSHA, PING, …)"),
            per_tick(commands.sum_of(Kind::Reentrant.client_commands())),
            Unit::Count,
        )
        .add(
            k("scripts_per_tick"),
            l("EVALSHA scripts per tick"),
            scripts,
            Unit::Count,
        )
        .add(
            k("locks_per_script"),
            l("locks per script"),
            (scripts > 0.0).then(|| n as f64 / scripts),
            Unit::Count,
        )
        .add_goal(
            k("bytes_per_lock"),
            l("client memory per held lock (RSS)"),
            bytes_per_lock,
            Unit::Bytes,
            goals::W4_BYTES_PER_LOCK,
        )
        .add_goal(
            k("bytes_per_lock_after_ticks"),
            l("the same, after the three ticks"),
            per_lock(rss_ticked),
            Unit::Bytes,
            goals::W4_BYTES_PER_LOCK,
        );
    bench.progress(&format!(
        "W4 watchdog: {n} locks: {:.1} renew calls and {scripts:.0} scripts per tick, {} B per lock",
        per_tick(calls),
        bytes_per_lock.map_or_else(|| "n/a".to_owned(), |b| format!("{b:.0}"))
    ));
    Ok(guards)
}

/// The heap figures of feature `count-alloc`: bytes allocated and not
/// freed per held lock, right after taking the locks and after the ticks,
/// and the most the ticks had allocated at once beyond that, per lock
/// (what the allocator may keep once they are freed). Nothing without the
/// feature.
#[derive(Clone, Copy)]
struct HeapCounts {
    #[cfg(feature = "count-alloc")]
    start: usize,
    #[cfg(feature = "count-alloc")]
    taken: usize,
}

impl HeapCounts {
    fn start() -> Self {
        Self {
            #[cfg(feature = "count-alloc")]
            start: crate::alloc_count::live(),
            #[cfg(feature = "count-alloc")]
            taken: 0,
        }
    }

    /// After taking the locks, before the ticks: starts the peak.
    fn locks_taken(self) -> Self {
        #[cfg(feature = "count-alloc")]
        return Self {
            taken: crate::alloc_count::reset_peak(),
            ..self
        };
        #[cfg(not(feature = "count-alloc"))]
        self
    }

    #[cfg_attr(not(feature = "count-alloc"), allow(clippy::unused_self))]
    fn ticked(self, r: &mut Report, n: usize) {
        #[cfg(feature = "count-alloc")]
        {
            let per_lock = |bytes: usize| bytes as f64 / n as f64;
            let after = crate::alloc_count::live();
            let peak = crate::alloc_count::peak();
            r.add(
                format!("heap_per_lock_{n}"),
                format!("{n} locks: live heap per held lock (count-alloc)"),
                per_lock(self.taken.saturating_sub(self.start)),
                Unit::Bytes,
            )
            .add(
                format!("heap_per_lock_after_ticks_{n}"),
                format!("{n} locks: the same, after the three ticks"),
                per_lock(after.saturating_sub(self.start)),
                Unit::Bytes,
            )
            .add(
                format!("tick_peak_heap_per_lock_{n}"),
                format!("{n} locks: most heap the ticks took at once, beyond the locks', per lock"),
                per_lock(peak.saturating_sub(self.taken)),
                Unit::Bytes,
            );
        }
        #[cfg(not(feature = "count-alloc"))]
        let _ = (r, n);
    }
}

/// Waits for one renewal tick to complete (so the next starts a second later),
/// resets the server's statistics, then waits for [`TICKS`] renewals of
/// all `n` locks. Returns the client's renew calls and the server's
/// command statistics over those ticks, and how many ticks' worth of
/// leases they renewed (leases renewed / `n`, [`TICKS`] or a little more:
/// the window may start or end inside a tick, when a slow slice looked
/// like a tick's end), which the per-tick figures are divided by.
async fn watch_ticks(
    bench: &Bench,
    client: &LockClient,
    n: u64,
) -> Result<(u64, crate::server::CommandStats, f64)> {
    let interval = WATCHDOG / 3;
    let limit = interval * 2 + Duration::from_secs(30);
    let before = client.stats();
    wait_for(limit, "a watchdog renewal", || {
        client.stats().renewed > before.renewed
    })
    .await?;
    // A tick renews its locks slice after slice, so the renewal seen may
    // be the first of a tick: wait for the tick to end (no renewal for a
    // tenth of the interval, far longer than between two slices), so that
    // the three ticks counted are whole ones.
    let mut seen = client.stats().renewed;
    loop {
        tokio::time::sleep(interval / 10).await;
        let now = client.stats().renewed;
        if now == seen {
            break;
        }
        seen = now;
    }
    bench.server.reset_stats().await?;
    let start = client.stats();
    let limit = interval * (TICKS as u32 + 1) + Duration::from_secs(30);
    let done = wait_for(limit, "three watchdog renewals", || {
        client.stats().renewed >= start.renewed + TICKS * n
    })
    .await;
    let end: ClientStats = client.stats();
    if let Err(e) = done {
        bail!(
            "{e}: renewed {} leases and made {} renew calls for {n} locks (watching {}); \
             the watchdog is late or losing locks",
            end.renewed - start.renewed,
            end.renew_calls - start.renew_calls,
            end.watched
        );
    }
    let commands = bench.server.command_stats().await?;
    let renewed = end.renewed - start.renewed;
    if end.watched != n {
        bail!(
            "W4: {TICKS} ticks renewed {renewed} leases of {n} locks, but the watchdog \
             keeps only {}: it lost some",
            end.watched,
        );
    }
    Ok((
        end.renew_calls - start.renew_calls,
        commands,
        renewed as f64 / n as f64,
    ))
}
