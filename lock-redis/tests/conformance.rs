//! The whole conformance suite against a real redis-server (one per test).

use std::time::Duration;

use lock_redis::{ClientConfig, KeyLayout, LockClient, RedisConfig};
use lock_testkit::fixtures::RedisHarness;

async fn connect(url: String, config: ClientConfig) -> LockClient {
    let redis = RedisConfig::new(url)
        .command_timeout(Duration::from_secs(2))
        .connect_timeout(Duration::from_secs(2));
    lock_redis::connect(redis, config)
        .await
        .expect("connect to the fixture")
}

async fn harness() -> RedisHarness {
    RedisHarness::start(KeyLayout::default(), connect).await
}

lock_testkit::conformance_tests!(
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    harness = harness
);
