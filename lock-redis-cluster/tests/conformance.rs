//! The conformance table on a real 6-node cluster, and our slot function
//! against the cluster's own.
//!
//! Every row runs against one cluster (starting one per check would take
//! minutes); the checks use unique lock names, so they do not see each
//! other. The checks every lock kind shares ran in full in memory and on a
//! single redis-server (lock-redis's `tests/conformance.rs`); here each row
//! runs their smoke subset, which proves the cluster's wiring (slots,
//! pub/sub, the watchdog's per-master lanes), and its kinds' own checks in
//! full.

mod common;

use std::sync::Arc;
use std::time::Duration;

use lock_redis_cluster::slot::key_slot;
use lock_redis_cluster::PubSubMode;
use lock_testkit::conformance::polling::Polling;
use lock_testkit::conformance::{kinds, run_checks, Check, KindChecks, RedisLayout, Shared};
use lock_testkit::fixtures::RedisCluster;

const CHECK_LIMIT: Duration = Duration::from_secs(60);

/// How clients reach the cluster.
#[derive(Debug, Clone, Copy)]
enum Deployment {
    /// Waiters subscribe, in this pub/sub mode.
    PubSub(PubSubMode),
    /// Waiters poll (nothing is subscribed); pub/sub chosen by version.
    Polling,
}

/// Which kinds of the suite's table a row runs.
enum Kinds {
    All,
    Only(&'static [&'static str]),
}

/// The cluster's table: deployment × kinds. Every kind runs on sharded
/// pub/sub, where each kind's channel must share its key's slot (a kind
/// added to the suite's table runs here without further code). Classic
/// pub/sub is the transport's, not the kind's, so the reentrant lock
/// covers it; pub/sub chosen by the servers' version is checked with the
/// fair and read-write locks; polling clients with the plain and the
/// queued lock, whose waits differ.
const TABLE: &[(&str, Deployment, Kinds)] = &[
    (
        "sharded",
        Deployment::PubSub(PubSubMode::Sharded),
        Kinds::All,
    ),
    (
        "classic",
        Deployment::PubSub(PubSubMode::Classic),
        Kinds::Only(&["reentrant"]),
    ),
    (
        "by version",
        Deployment::PubSub(PubSubMode::Auto),
        Kinds::Only(&["fair", "read_write"]),
    ),
    (
        "polling",
        Deployment::Polling,
        Kinds::Only(&["reentrant", "fair"]),
    ),
];

/// One row's kind: its name, how to reach the cluster, its checks.
struct Suite {
    name: String,
    deployment: Deployment,
    kind: KindChecks,
    checks: Vec<(String, Check)>,
}

/// Every row of the table on one cluster, in two lanes of suites run side
/// by side, each lane one check at a time: two checks at once, as the
/// single-node suites run (one test per check, two test threads). More
/// lanes, or a cluster per suite, would load a 2-core machine enough to
/// starve the 300 ms watchdog ticks the checks rely on. The lanes get
/// about the same number of checks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_suite_on_one_cluster() {
    let cluster = RedisCluster::start();
    slots_match_cluster_keyslot(&cluster).await;
    let [a, b] = lanes(suites()).map(|lane| run_lane(&cluster, lane));
    let (a, b) = tokio::join!(a, b);
    let failed: Vec<String> = a.into_iter().chain(b).collect();
    assert!(failed.is_empty(), "failed checks: {failed:?}");
}

/// The table's rows as suites, one per deployment and kind.
fn suites() -> Vec<Suite> {
    let names: Vec<&str> = kinds().iter().map(|k| k.name).collect();
    let mut suites = Vec::new();
    for (row, deployment, kinds_of_row) in TABLE {
        if let Kinds::Only(only) = kinds_of_row {
            for name in *only {
                assert!(names.contains(name), "{row}: no kind {name:?} in {names:?}");
            }
        }
        for kind in kinds() {
            let runs = match kinds_of_row {
                Kinds::All => true,
                Kinds::Only(only) => only.contains(&kind.name),
            };
            if runs {
                suites.push(Suite {
                    name: format!("{row} {}", kind.name),
                    deployment: *deployment,
                    checks: kind.checks(Shared::Smoke),
                    kind,
                });
            }
        }
    }
    suites
}

/// `suites` in two lanes of about as many checks each, largest first.
fn lanes(mut suites: Vec<Suite>) -> [Vec<Suite>; 2] {
    suites.sort_by_key(|s| std::cmp::Reverse(s.checks.len()));
    let mut lanes: [Vec<Suite>; 2] = [Vec::new(), Vec::new()];
    let mut load = [0; 2];
    for suite in suites {
        let i = usize::from(load[1] < load[0]);
        load[i] += suite.checks.len();
        lanes[i].push(suite);
    }
    lanes
}

/// Runs the lane's suites one after another; returns the failed checks as
/// "suite: check".
async fn run_lane(cluster: &RedisCluster, lane: Vec<Suite>) -> Vec<String> {
    let mut failed = Vec::new();
    for suite in lane {
        let h: Arc<dyn RedisLayout> = match suite.deployment {
            Deployment::PubSub(mode) => common::cluster::harness(cluster, mode).await,
            Deployment::Polling => Arc::new(Polling::new(
                common::cluster::harness(cluster, PubSubMode::Auto).await as Arc<dyn RedisLayout>,
            )),
        };
        for name in run_checks(suite.kind.harness(h), suite.checks, CHECK_LIMIT).await {
            failed.push(format!("{}: {name}", suite.name));
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
