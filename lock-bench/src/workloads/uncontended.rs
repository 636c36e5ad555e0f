//! W1 uncontended: one task takes and gives back one lock, over and over.
//! Nobody else wants it, so this is the library's own cost per pair.
//! The goals for the reentrant lock (issues 15 and 25, see `crate::goals`):
//! pair p50 ≤ 1.15 × the raw `EVALSHA` pair p50 and ≤ rslock's pair p50, both
//! taken in turn with the library's pairs (`super::alternating`; rslock's
//! not evaluated without feature `rslock`), and at most
//! 35 µs of server time in scripts per pair (an absolute goal). The fair
//! and cluster variants are also compared with the reentrant lock's W1 on
//! the standalone server (goal for the cluster: p50 ≤ 1.1×). The
//! reentrant lock is also compared with the Redisson-protocol raw pair
//! (`super::redisson`) measured right after it: its server time per pair
//! should be at most that pair's.
//!
//! On the cluster, each pair alternates with a pair of the reentrant lock
//! on the standalone server, and the goal compares those: the two
//! deployments are measured a minute apart otherwise, and on a shared
//! machine the noise drifts by more than the 10 % the goal allows. (The
//! fair lock's comparison is with W1 run before it: its server is W1's, so
//! alternating would mix the two locks' command counts.)

use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::alternating::{self, Alternated};
use super::{close_all, redisson};
use crate::goals;
use crate::latency::Latencies;
use crate::locker::{Lib, Locker};
use crate::report::{Goal, Report, Unit};
use crate::target::{Kind, Target};
use crate::LOCK_TIMEOUT;

const WARM_UP: usize = 100;

/// W1 with `t`'s lock (and with rslock next to the reentrant lock).
pub(crate) async fn run(t: &Target<'_>) -> Result<Vec<Report>> {
    let lib = t.lib_lockers(1).await?;
    let alongside = if t.kind == Kind::Cluster {
        t.bench.target(Kind::Reentrant)?.lib_lockers(1).await?
    } else {
        Vec::new()
    };
    // rslock runs next to the reentrant lock and the lean lock, which
    // keeps rslock's layout.
    let peer_goal = match t.kind {
        Kind::Reentrant => Some(goals::W1_P50_VS_RSLOCK),
        Kind::Lean => Some(goals::LEAN_W1_P50_VS_RSLOCK),
        _ => None,
    };
    #[cfg(feature = "rslock")]
    let peer = peer_goal.map(|_| t.bench.rs_lockers(1).remove(0));
    #[cfg(not(feature = "rslock"))]
    let peer: Option<Lib> = None;
    let result: Result<(Report, Option<Latencies>, Option<Report>)> = async {
        let mut ours = measure(t, &lib[0], alongside.first()).await?;
        let mut peer_alternating = None;
        if t.kind != Kind::Cluster {
            let rounds = t.bench.pick(5_000, 1_000);
            let samples = alternating::run(t, &lib[0], peer.as_ref(), rounds, WARM_UP).await?;
            add_alternating(t, &mut ours, &samples)?;
            peer_alternating = samples.peer;
        }
        // The Redisson-protocol raw pair runs right after the reentrant
        // lock, whose protocol it is.
        let mut redisson = None;
        if t.kind == Kind::Reentrant {
            let report = redisson::run(t).await?;
            let pairs = t.bench.pick(5_000, 1_000);
            let in_turn = redisson::server_time_in_turn(t, &lib[0], pairs).await?;
            compare_with_redisson(&mut ours, &report, in_turn);
            redisson = Some(report);
        }
        Ok((ours, peer_alternating, redisson))
    }
    .await;
    close_all(&lib).await;
    close_all(&alongside).await;
    let (mut ours, peer_alternating, redisson) = result?;
    let Some(goal) = peer_goal else {
        return Ok(vec![ours]);
    };
    let peer_report = match &peer {
        Some(peer) => {
            let mut r = measure(t, peer, None).await?;
            if let Some(samples) = peer_alternating.as_ref().and_then(Latencies::summary) {
                r.add(
                    "alternating_p50_us",
                    "pair p50, alternating with the library's and the raw pair",
                    samples.p50_us,
                    Unit::Micros,
                );
            }
            Some(r)
        }
        None => None,
    };
    goals::compare_with_peer(
        &mut ours,
        peer_report.as_ref(),
        "alternating_p50_us",
        "p50_vs_rslock",
        "pair p50 / rslock pair p50 (alternating, same run)",
        goal,
    );
    Ok([ours]
        .into_iter()
        .chain(redisson)
        .chain(peer_report)
        .collect())
}

/// Adds the alternating phase's figures to `ours`: its pair p50 there and
/// the raw pair's, and their ratio (with the goal for the reference lock).
fn add_alternating(t: &Target<'_>, ours: &mut Report, samples: &Alternated) -> Result<()> {
    let mine = samples.ours.summary().context("no alternating samples")?;
    let raw = samples.raw.summary().context("no raw samples")?;
    let vs_raw = mine.p50_us / raw.p50_us;
    let goal = t
        .is_reference(&ours.implementation)
        .then_some(goals::W1_P50_VS_RAW_PAIR);
    ours.add(
        "alternating_p50_us",
        "pair p50, alternating with the raw pair (and rslock)",
        mine.p50_us,
        Unit::Micros,
    )
    .add(
        "raw_pair_alternating_p50_us",
        "raw EVALSHA pair p50, alternating",
        raw.p50_us,
        Unit::Micros,
    )
    .add_goal(
        "p50_vs_raw_pair",
        "pair p50 / raw EVALSHA pair p50 (alternating)",
        vs_raw,
        Unit::Ratio,
        goal,
    );
    t.bench.progress(&format!(
        "{} ({}), alternating: p50 {:.0} µs = {vs_raw:.2}× the raw pair's {:.0} µs",
        ours.workload, ours.implementation, mine.p50_us, raw.p50_us
    ));
    Ok(())
}

/// Adds to the reentrant lock's W1 its pair p50 as a ratio to the
/// Redisson-protocol raw pair's, and its server time per pair as one
/// (with the goal), from `in_turn`: both sides' server time per pair
/// measured in turn ([`redisson::server_time_in_turn`]).
fn compare_with_redisson(ours: &mut Report, redisson: &Report, in_turn: (f64, f64)) {
    let p50 = match (ours.value("p50_us"), redisson.value("p50_us")) {
        (Some(mine), Some(theirs)) if theirs > 0.0 => Some(mine / theirs),
        _ => None,
    };
    let (mine, theirs) = in_turn;
    ours.add(
        "p50_vs_redisson_raw",
        "pair p50 / raw Redisson-protocol pair p50 (same run)",
        p50,
        Unit::Ratio,
    )
    .add(
        "server_us_per_pair_in_turn",
        "server time per pair, in blocks in turn with the raw Redisson-protocol pair",
        mine,
        Unit::Micros,
    )
    .add(
        "redisson_raw_server_us_per_pair_in_turn",
        "raw Redisson-protocol pair's server time per pair, in turn",
        theirs,
        Unit::Micros,
    )
    .add_goal(
        "server_us_vs_redisson_raw",
        "server time per pair / raw Redisson-protocol pair's (in turn)",
        (theirs > 0.0).then(|| mine / theirs),
        Unit::Ratio,
        goals::W1_SERVER_US_VS_REDISSON_RAW,
    );
}

/// One `lock()` + `unlock()` of a free lock, bounded; how long it took.
pub(crate) async fn pair<L: Locker>(locker: &L, name: &str) -> Result<Duration> {
    let started = Instant::now();
    let held = tokio::time::timeout(LOCK_TIMEOUT, locker.lock(name))
        .await
        .with_context(|| format!("lock() of a free lock took over {LOCK_TIMEOUT:?}"))??;
    locker.unlock_bounded(held).await?;
    Ok(started.elapsed())
}

/// W1 with `locker`; with `alongside`, each of its pairs is followed by
/// one of `alongside` on the standalone server.
async fn measure<L: Locker>(t: &Target<'_>, locker: &L, alongside: Option<&Lib>) -> Result<Report> {
    let bench = t.bench;
    let workload = t.workload("W1");
    let pairs = bench.pick(5_000, 1_000);
    bench.progress(&format!(
        "{workload} uncontended ({}): {pairs} lock/unlock pairs",
        locker.name()
    ));
    let name = t.pinned_name(&format!("w1:{}", locker.name()))?;
    let other_name = bench.name(&format!("{workload}:alongside"));
    for _ in 0..WARM_UP {
        pair(locker, &name).await?;
        if let Some(other) = alongside {
            pair(other, &other_name).await?;
        }
    }
    let mut lat = Latencies::with_capacity(pairs);
    let mut other_lat = Latencies::with_capacity(pairs);
    // Time in `locker`'s pairs only: the rate leaves `alongside`'s out.
    let mut busy = Duration::ZERO;
    t.reset_stats().await?;
    for _ in 0..pairs {
        let took = pair(locker, &name).await?;
        busy += took;
        lat.push(took);
        if let Some(other) = alongside {
            other_lat.push(pair(other, &other_name).await?);
        }
    }
    let rate = pairs as f64 / busy.as_secs_f64();
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
    r.add(
        "p50_vs_baseline_pair",
        "pair p50 / the baseline's raw EVALSHA pair p50 (measured apart)",
        vs_raw,
        Unit::Ratio,
    );
    match (t.kind, other_lat.summary()) {
        (Kind::Reentrant, _) => {}
        (Kind::Cluster, Some(other)) => {
            r.add(
                "w1_alongside_p50_us",
                "W1 (standalone) pair p50, alternating",
                other.p50_us,
                Unit::Micros,
            )
            .add_goal(
                "p50_vs_w1",
                "pair p50 / W1 (standalone) p50, alternating",
                s.p50_us / other.p50_us,
                Unit::Ratio,
                Goal::AtMost(1.1),
            );
        }
        (kind, _) => {
            let vs_w1 = bench.reference.w1_p50_us.map(|w1| s.p50_us / w1);
            if vs_w1.is_none() {
                r.note("W1 did not run, so there is no ratio to it");
            }
            r.add_goal(
                "p50_vs_w1",
                "pair p50 / W1 (reentrant, standalone) p50",
                vs_w1,
                Unit::Ratio,
                (kind == Kind::Cluster).then_some(Goal::AtMost(1.1)),
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
        "commands_per_pair",
        "Redis commands per pair (incl. inside scripts)",
        per_pair(commands.total()),
        Unit::Count,
    )
    .add(
        "ping_per_pair",
        "PING per pair",
        per_pair(commands.calls("ping")),
        Unit::Count,
    )
    .add_goal(
        "server_us_per_pair",
        "server time in scripts per pair (EVALSHA µs; absolute goal)",
        per_pair(commands.usec("evalsha")),
        Unit::Micros,
        t.is_reference(locker.name())
            .then_some(goals::W1_SERVER_US_PER_PAIR),
    )
    .add(
        "server_us_per_pair_all",
        "server time per pair in all client requests (µs)",
        per_pair(commands.usec_of(locker.client_commands())),
        Unit::Micros,
    );
    bench.progress(&format!(
        "{workload} ({}): p50 {:.0} µs = {vs_raw:.2}× raw pair",
        locker.name(),
        s.p50_us
    ));
    Ok(r)
}
