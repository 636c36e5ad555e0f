//! The fair-lock conformance suite against a real redis-server (one per
//! test): the checks every lock kind passes, and the fair ones, on clients
//! of `lock_redis::connect` (which hand out both kinds).

use std::time::Duration;

use lock_core::{ClientConfig, LockClient};
use lock_redis::{KeyLayout, RedisConfig};
use lock_testkit::fixtures::RedisHarness;

async fn connect(url: String, config: ClientConfig) -> LockClient {
    let redis = RedisConfig::new(url)
        .command_timeout(Duration::from_secs(2))
        .connect_timeout(Duration::from_secs(2));
    lock_redis::connect(redis, config)
        .await
        .expect("connect to the fixture")
}

pub(crate) async fn harness() -> RedisHarness {
    RedisHarness::start(KeyLayout::default(), connect).await
}

lock_testkit::fair_conformance_tests!(
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    harness = harness
);
