//! The conformance suites (reentrant, fair and count-down latch; reentrant
//! and fair with polling clients too) on a real 6-node cluster, and our slot
//! function against the cluster's own.
//!
//! All suites run against one cluster (starting one per check would take
//! minutes); the checks use unique lock names, so they do not see each
//! other.

mod common;

use std::sync::Arc;
use std::time::Duration;

use lock_redis_cluster::slot::key_slot;
use lock_redis_cluster::PubSubMode;
use lock_testkit::conformance::polling::Polling;
use lock_testkit::conformance::{run_checks, FairSuite, HandoffSuite, Harness};
use lock_testkit::fixtures::RedisCluster;

const CHECK_LIMIT: Duration = Duration::from_secs(60);

/// Every suite against one cluster, in two lanes of suites run side by
/// side, each lane one check at a time: two checks at once, as the
/// single-node suites run (one test per check, two test threads). More
/// lanes, or a cluster per suite, would load a 2-core machine enough to
/// starve the 300 ms watchdog ticks the checks rely on; one lane took
/// about two minutes. The lanes hold about the same number of checks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_suite_on_one_cluster() {
    let cluster = RedisCluster::start();
    slots_match_cluster_keyslot(&cluster).await;
    let lanes = [
        vec![
            (
                "reentrant, sharded pub/sub",
                Suite::Reentrant(PubSubMode::Sharded),
            ),
            (
                "fair, pub/sub chosen by version",
                Suite::Fair(PubSubMode::Auto),
            ),
            ("reentrant, polling", Suite::PollingReentrant),
            ("latch, sharded pub/sub", Suite::Latch(PubSubMode::Sharded)),
        ],
        vec![
            (
                "reentrant, classic pub/sub",
                Suite::Reentrant(PubSubMode::Classic),
            ),
            (
                "read-write, pub/sub chosen by version",
                Suite::ReadWrite(PubSubMode::Auto),
            ),
            ("fair, polling", Suite::PollingFair),
            // The semaphore kinds on sharded pub/sub: their channel
            // (`redisson_sc:{name}`) shares the count's slot. Classic
            // pub/sub is the transport's, not the kind's: the reentrant
            // suite covers it here, and the single-node suites run every
            // kind on it.
            (
                "semaphores, sharded pub/sub",
                Suite::Semaphores(PubSubMode::Sharded),
            ),
            // A grant goes to the waiter's own channel, which shares the
            // lock's slot like every helper key of the fair lock.
            (
                "direct handoff, sharded pub/sub",
                Suite::Handoff(PubSubMode::Sharded),
            ),
        ],
    ];
    let [a, b] = lanes.map(|lane| run_lane(&cluster, lane));
    let (a, b) = tokio::join!(a, b);
    let failed: Vec<String> = a.into_iter().chain(b).collect();
    assert!(failed.is_empty(), "failed checks: {failed:?}");
}

/// One suite's checks against the cluster, in the given pub/sub mode;
/// the polling suites poll (nothing is subscribed).
enum Suite {
    Reentrant(PubSubMode),
    Fair(PubSubMode),
    Handoff(PubSubMode),
    ReadWrite(PubSubMode),
    Latch(PubSubMode),
    Semaphores(PubSubMode),
    PollingReentrant,
    PollingFair,
}

/// Runs the lane's suites one after another; returns the failed checks as
/// "suite: check".
async fn run_lane(cluster: &RedisCluster, lane: Vec<(&str, Suite)>) -> Vec<String> {
    let mut failed = Vec::new();
    for (suite, kind) in lane {
        let (h, checks): (Arc<dyn Harness>, _) = match kind {
            Suite::Reentrant(mode) => (
                common::cluster::harness(cluster, mode).await,
                lock_testkit::conformance_checks!(),
            ),
            Suite::Fair(mode) => (
                Arc::new(FairSuite(
                    common::cluster::harness(cluster, mode).await as Arc<dyn Harness>,
                )),
                lock_testkit::fair_conformance_checks!(),
            ),
            Suite::Handoff(mode) => (
                Arc::new(HandoffSuite(
                    common::cluster::harness(cluster, mode).await as Arc<dyn Harness>,
                )),
                lock_testkit::handoff_conformance_checks!(),
            ),
            Suite::ReadWrite(mode) => (
                common::cluster::harness(cluster, mode).await,
                lock_testkit::rwlock_conformance_checks!(),
            ),
            Suite::Latch(mode) => (
                common::cluster::harness(cluster, mode).await,
                lock_testkit::latch_conformance_checks!(),
            ),
            Suite::Semaphores(mode) => (
                common::cluster::harness(cluster, mode).await,
                lock_testkit::semaphore_conformance_checks!(),
            ),
            Suite::PollingReentrant => (
                Arc::new(Polling::new(
                    common::cluster::harness(cluster, PubSubMode::Auto).await as Arc<dyn Harness>,
                )),
                lock_testkit::conformance_checks!(),
            ),
            Suite::PollingFair => (
                Arc::new(FairSuite(Polling::new(
                    common::cluster::harness(cluster, PubSubMode::Auto).await as Arc<dyn Harness>,
                ))),
                lock_testkit::fair_conformance_checks!(),
            ),
        };
        for name in run_checks(h, checks, CHECK_LIMIT).await {
            failed.push(format!("{suite}: {name}"));
        }
    }
    failed
}

/// 10 000 random names, half of them with braces, hash to the slot
/// `CLUSTER KEYSLOT` gives.
async fn slots_match_cluster_keyslot(cluster: &RedisCluster) {
    let mut conn = redis::Client::open(cluster.seed_urls()[0].as_str())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let names: Vec<String> = (0..10_000).map(random_name).collect();
    let mut pipe = redis::pipe();
    for name in &names {
        pipe.cmd("CLUSTER").arg("KEYSLOT").arg(name);
    }
    let slots: Vec<u16> = pipe.query_async(&mut conn).await.unwrap();
    for (name, slot) in names.iter().zip(slots) {
        assert_eq!(key_slot(name), slot, "slot of {name:?}");
    }

    // Names with braces, as the crate docs promise: a well-formed tag
    // works, a name whose keys would split across slots is refused.
    let client = common::cluster::client(
        cluster,
        common::cluster::config(cluster, PubSubMode::Auto),
        lock_redis_cluster::ClientConfig::default(),
    )
    .await;
    let tagged = client.lock("{user:7}:orders").unwrap();
    let guard = tagged.lock().await.unwrap();
    assert!(tagged.is_locked().await.unwrap());
    guard.unlock().await.unwrap();
    let err = client
        .lock("a{}b")
        .unwrap()
        .lock()
        .await
        .map(drop)
        .unwrap_err();
    assert!(err.is_invalid_argument(), "{err}");

    // A latch's channel wraps its whole name in braces (Redisson's
    // layout), so a name with its own hash tag cannot share a slot with
    // its key: refused when the handle is made, whatever the slots.
    for name in ["{user:7}:jobs", "a}b", "{x}"] {
        let err = client.count_down_latch(name).unwrap_err();
        assert!(err.is_invalid_argument(), "{name}: {err}");
    }
    let latch = client.count_down_latch("user:7:jobs").unwrap();
    assert!(latch.try_set_count(1).await.unwrap());
    latch.count_down().await.unwrap();
    latch.wait().await.unwrap();
}

fn random_name(i: usize) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789:_-{}";
    let len = fastrand::usize(0..24);
    let mut name: String = (0..len)
        .map(|_| char::from(ALPHABET[fastrand::usize(..ALPHABET.len())]))
        .collect();
    if i.is_multiple_of(2) {
        // A well-formed tag somewhere, sometimes empty, sometimes nested.
        let at = fastrand::usize(..=name.len());
        let tag = ["", "user:7", "{x", "a}b"][fastrand::usize(..4)];
        name.insert_str(at, &format!("{{{tag}}}"));
    }
    name
}
