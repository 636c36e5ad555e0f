//! W2H-redlock: W2H's contention (`super::contention`: 8 tasks over 4
//! clients, each holding the lock ~1 ms) on a RedLock over 3 masters, and
//! in the same run on the plain lock of the first of those masters. The
//! handoff (from just before the holder's `unlock()` to just after the
//! next holder's `lock()` returns) of the RedLock should take at most
//! 3 × the single master's p50: a contended hand-over within a few round
//! trips of a single lock's.
//!
//! The masters are three throw-away redis-servers (`super::masters`). Each
//! of the 4 RedLock clients is one lock client per master; the single
//! master's side uses the first of each, so both sides run on the same
//! connections.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use lock_redis::LockClient;

use super::contention::{contend, Contention, CLIENTS, TASKS};
use super::masters::Masters;
use crate::goals;
use crate::locker::{close_client, Lib, Locker, Red};
use crate::report::{Report, Unit};
use crate::server::{CommandStats, Server};
use crate::target::Kind;
use crate::workloads::Bench;

const MASTERS: usize = 3;

/// W2H on one master, then on a RedLock over 3.
pub(crate) async fn run(bench: &Bench) -> Result<Report> {
    let window = bench.pick(Duration::from_secs(5), Duration::from_secs(1));
    bench.progress(&format!(
        "W2H-redlock: starting {MASTERS} redis-servers; {TASKS} tasks ({CLIENTS} clients) on one lock of 1 master, then of a RedLock over {MASTERS}, {window:?} each"
    ));
    let masters = Masters::start(MASTERS);
    let mut sets: Vec<Arc<[LockClient]>> = Vec::with_capacity(CLIENTS);
    for _ in 0..CLIENTS {
        sets.push(masters.clients().await?.into());
    }
    let report = measure(bench, &masters, &sets, window).await;
    for client in sets.iter().flat_map(|set| set.iter()) {
        close_client(client).await;
    }
    report
}

/// What one side measured: its contention and the server's commands
/// during it.
struct Side {
    contention: Contention,
    commands: CommandStats,
}

async fn measure(
    bench: &Bench,
    masters: &Masters,
    sets: &[Arc<[LockClient]>],
    window: Duration,
) -> Result<Report> {
    let name = bench.name("w2h-redlock");
    let singles: Vec<Lib> = sets
        .iter()
        .map(|set| Lib::new(set[0].clone(), Kind::Reentrant))
        .collect();
    let reds: Vec<Red> = sets
        .iter()
        .map(|set| Red {
            members: Arc::clone(set),
        })
        .collect();
    let single = side(
        &singles,
        &format!("{name}:1"),
        window,
        &masters.stats_of(1)?,
    )
    .await?;
    let red = side(
        &reds,
        &format!("{name}:{MASTERS}"),
        window,
        &masters.stats_of(MASTERS)?,
    )
    .await?;

    let base = bench.baseline()?;
    let mut r = Report::new("W2H-redlock", "RedLock handoff", "lock-core RedLock");
    let one = figures(&mut r, "single", "1 master", &single, &singles[0]);
    let three = figures(&mut r, "red3", "3 masters", &red, &reds[0]);
    let ratio = match (one, three) {
        (Some(one), Some(three)) if one > 0.0 => Some(three / one),
        _ => None,
    };
    if ratio.is_none() {
        r.note("a side saw no handoff to another task, so there is no ratio");
    }
    r.add_goal(
        "red3_vs_single",
        "3 masters handoff p50 / 1 master handoff p50",
        ratio,
        Unit::Ratio,
        goals::W2H_REDLOCK_VS_SINGLE,
    )
    .add(
        "red3_p50_vs_ping",
        "3 masters handoff p50 / PING p50 (baseline)",
        three.map(|p50| p50 / base.ping_p50_us),
        Unit::Ratio,
    )
    .note("the masters are throw-away local redis-servers, whatever --url says; the 1-master side is the plain lock on the first of them, run just before");
    bench.progress(&format!(
        "W2H-redlock: handoff p50 1 master {} µs, 3 masters {} µs ({}×)",
        one.map_or_else(|| "n/a".to_owned(), |p| format!("{p:.0}")),
        three.map_or_else(|| "n/a".to_owned(), |p| format!("{p:.0}")),
        ratio.map_or_else(|| "n/a".to_owned(), |v| format!("{v:.2}")),
    ));
    Ok(r)
}

/// W2H's contention with `lockers` on `name`, with the command statistics
/// of `servers` (reset just before the tasks start) added up.
async fn side<L: Locker>(
    lockers: &[L],
    name: &str,
    window: Duration,
    servers: &[Server],
) -> Result<Side> {
    let reset = async {
        for server in servers {
            server.reset_stats().await?;
        }
        Ok(())
    };
    let contention = contend(lockers, name, window, reset).await?;
    let mut commands = CommandStats::default();
    for server in servers {
        commands.merge(&server.command_stats().await?);
    }
    Ok(Side {
        contention,
        commands,
    })
}

/// Adds `side`'s figures under keys `<prefix>_…`; its handoff p50, if any.
fn figures<L: Locker>(
    r: &mut Report,
    prefix: &str,
    what: &str,
    side: &Side,
    locker: &L,
) -> Option<f64> {
    let c = &side.contention;
    let count = c.handoffs.len() as f64;
    let s = c.handoffs.summary();
    let w = c.waits.summary();
    let per_handoff = |n: u64| (count > 0.0).then(|| n as f64 / count);
    r.add(
        format!("{prefix}_acquisitions"),
        format!("{what}: acquisitions"),
        c.acquisitions as f64,
        Unit::Count,
    )
    .add(
        format!("{prefix}_handoffs"),
        format!("{what}: handoffs to another task"),
        count,
        Unit::Count,
    )
    .add(
        format!("{prefix}_handoff_share"),
        format!("{what}: share of releases taken over by another task"),
        count / (c.acquisitions.max(2) - 1) as f64,
        Unit::Fraction,
    )
    .add(
        format!("{prefix}_p50_us"),
        format!("{what}: handoff p50"),
        s.map(|s| s.p50_us),
        Unit::Micros,
    )
    .add(
        format!("{prefix}_p99_us"),
        format!("{what}: handoff p99"),
        s.map(|s| s.p99_us),
        Unit::Micros,
    )
    .add(
        format!("{prefix}_wait_p50_us"),
        format!("{what}: waiter wait p50"),
        w.map(|w| w.p50_us),
        Unit::Micros,
    )
    .add(
        format!("{prefix}_wait_p99_us"),
        format!("{what}: waiter wait p99"),
        w.map(|w| w.p99_us),
        Unit::Micros,
    )
    .add(
        format!("{prefix}_evalsha_per_handoff"),
        format!("{what}: EVALSHA per handoff (all masters)"),
        per_handoff(side.commands.calls("evalsha")),
        Unit::Count,
    )
    .add(
        format!("{prefix}_requests_per_handoff"),
        format!("{what}: client requests per handoff (all masters)"),
        per_handoff(side.commands.sum_of(locker.client_commands())),
        Unit::Count,
    );
    s.map(|s| s.p50_us)
}
