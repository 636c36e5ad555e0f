//! The conformance table of this crate's deployments, one redis-server (or
//! Sentinel group, or five servers) per test. A single server runs every
//! kind with the checks every lock kind shares in full; the other
//! deployments run the smoke subset of those, and their kinds' own checks
//! in full: a key prefix (every key, helper key and channel must follow
//! it), clients that wait by polling (and never subscribe), and the master
//! found through Sentinel (failovers are in `sentinel.rs`).

use std::sync::Arc;
use std::time::Duration;

use lock_redis::{ClientConfig, KeyLayout, LockClient, RedisConfig};
use lock_testkit::conformance::polling::Polling;
use lock_testkit::conformance::{multi::STORES, Harness};
use lock_testkit::fixtures::{RedisHarness, SentinelGroup, SENTINEL_MASTER_NAME};

const PREFIX: &str = "billing:";

lock_testkit::conformance_table! {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    // deployment   harness            shared checks   kinds
    single       => single_node,       full,           all;
    prefixed     => with_prefix,       smoke,          [reentrant, read_write, latch, semaphores];
    polling      => polling_clients,   smoke,          [reentrant, fair, handoff];
    sentinel     => through_sentinel,  smoke,          [reentrant, fair];
}

/// A client of `redis` with short timeouts.
async fn connect(redis: RedisConfig, config: ClientConfig) -> LockClient {
    let redis = redis
        .command_timeout(Duration::from_secs(2))
        .connect_timeout(Duration::from_secs(2));
    lock_redis::connect(redis, config)
        .await
        .expect("connect to the fixture")
}

async fn single_node() -> RedisHarness {
    RedisHarness::start(KeyLayout::default(), |url, config| {
        connect(RedisConfig::new(url), config)
    })
    .await
}

async fn with_prefix() -> RedisHarness {
    RedisHarness::start(KeyLayout::with_prefix(PREFIX), |url, config| {
        connect(RedisConfig::new(url).key_prefix(PREFIX), config)
    })
    .await
}

async fn polling_clients() -> Polling<RedisHarness> {
    Polling::new(single_node().await)
}

/// A master and one sentinel; clients are given the sentinel's URL.
async fn through_sentinel() -> RedisHarness {
    let group = tokio::task::block_in_place(SentinelGroup::start_minimal);
    let raw = group.master().conn().await;
    let sentinel = group.sentinel_urls().remove(0);
    RedisHarness::over(
        raw.clone(),
        vec![raw],
        false,
        sentinel,
        KeyLayout::default(),
        |url, config| connect(RedisConfig::sentinel([url], SENTINEL_MASTER_NAME), config),
    )
    .keeping(group)
}

/// Five independent servers.
async fn stores() -> Vec<Arc<dyn Harness>> {
    let mut stores = Vec::with_capacity(STORES);
    for _ in 0..STORES {
        stores.push(Arc::new(single_node().await) as Arc<dyn Harness>);
    }
    stores
}

/// The multi-lock and RedLock checks over five servers.
mod multi {
    use super::stores;

    lock_testkit::multi_conformance_tests!(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        stores = stores
    );
}
