//! The whole conformance suites (reentrant and fair) with the master found
//! through Sentinel: a master and one sentinel per test; failovers are in
//! `sentinel.rs`.

use std::time::Duration;

use lock_redis::{ClientConfig, KeyLayout, LockClient, RedisConfig};
use lock_testkit::fixtures::{RedisHarness, SentinelGroup, SENTINEL_MASTER_NAME};

/// `url` is the sentinel's.
async fn connect(url: String, config: ClientConfig) -> LockClient {
    let redis = RedisConfig::sentinel([url], SENTINEL_MASTER_NAME)
        .command_timeout(Duration::from_secs(2))
        .connect_timeout(Duration::from_secs(2));
    lock_redis::connect(redis, config)
        .await
        .expect("connect through the sentinel")
}

async fn harness() -> RedisHarness {
    let group = tokio::task::block_in_place(SentinelGroup::start_minimal);
    let raw = group.master().conn().await;
    let sentinel = group.sentinel_urls().remove(0);
    RedisHarness::over(
        raw.clone(),
        vec![raw],
        false,
        sentinel,
        KeyLayout::default(),
        connect,
    )
    .keeping(group)
}

mod reentrant {
    use super::harness;

    lock_testkit::conformance_tests!(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        harness = harness
    );
}

mod fair {
    use super::harness;

    lock_testkit::fair_conformance_tests!(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        harness = harness
    );
}
