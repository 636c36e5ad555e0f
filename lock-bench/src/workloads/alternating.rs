//! W1's comparisons with what it is judged against — the raw `EVALSHA`
//! pair, and rslock — measured in turn with it: each round takes one pair
//! of the library's lock, one raw pair, and one rslock pair (each first in
//! one round of three), so all three see the same machine noise.
//!
//! Why not the baseline's raw pair, measured at the start of the run: on
//! a shared 2-core machine the round trip drifts over the seconds between
//! the two by more than the 15 % the goal allows. Six runs of one build on
//! 2026-11-27 put W1 at 1.02–1.67× the baseline's raw pair, and at
//! 1.07–1.15× the raw pairs taken in turn with it. The cluster's W1
//! alternates with the standalone W1 for the same reason.
//!
//! The raw pair has a connection of its own, and rslock its own client:
//! three clients on one server, each waiting for its own reply, so none
//! of them sees another's queue. Server time is not measured here (the
//! three share the server's command counters); W1's solo phase measures it.

use anyhow::Result;

use super::raw::{RawLock, Site};
use super::uncontended::pair;
use crate::latency::Latencies;
use crate::locker::Locker;
use crate::target::Target;

/// Samples of one alternating phase.
pub(crate) struct Alternated {
    /// The library's pairs.
    pub(crate) ours: Latencies,
    /// The raw `EVALSHA` pairs taken in turn with them.
    pub(crate) raw: Latencies,
    /// The peer's pairs taken in turn with them, when a peer ran.
    pub(crate) peer: Option<Latencies>,
}

/// `rounds` rounds of one `locker` pair, one raw pair and (with `peer`)
/// one peer pair, each on a lock of its own, after `warm_up` rounds.
pub(crate) async fn run<L: Locker, P: Locker>(
    t: &Target<'_>,
    locker: &L,
    peer: Option<&P>,
    rounds: usize,
    warm_up: usize,
) -> Result<Alternated> {
    let bench = t.bench;
    let workload = t.workload("W1");
    let ours_name = bench.name(&format!("{workload}:alternating:{}", locker.name()));
    let peer_name = bench.name(&format!("{workload}:alternating:peer"));
    let mut raw = RawLock::new(
        Site::Server(&bench.server),
        &bench.name(&format!("{workload}:alternating:raw")),
    )
    .await?;
    let mut out = Alternated {
        ours: Latencies::with_capacity(rounds),
        raw: Latencies::with_capacity(rounds),
        peer: peer.map(|_| Latencies::with_capacity(rounds)),
    };
    for round in 0..warm_up + rounds {
        let measured = round >= warm_up;
        // Each side goes first, second and third in turn, so none always
        // follows the same one (and whatever work it leaves behind).
        for step in 0..3 {
            match (round + step) % 3 {
                0 => {
                    let took = pair(locker, &ours_name).await?;
                    if measured {
                        out.ours.push(took);
                    }
                }
                1 => {
                    let started = std::time::Instant::now();
                    raw.pair().await?;
                    if measured {
                        out.raw.push(started.elapsed());
                    }
                }
                _ => {
                    if let (Some(peer), Some(samples)) = (peer, out.peer.as_mut()) {
                        let took = pair(peer, &peer_name).await?;
                        if measured {
                            samples.push(took);
                        }
                    }
                }
            }
        }
    }
    Ok(out)
}
