//! The count-down latch's conformance checks against a real redis-server
//! (one per test), without and with a key prefix.

use std::time::Duration;

use lock_redis::{ClientConfig, KeyLayout, LockClient, RedisConfig};
use lock_testkit::fixtures::RedisHarness;

async fn connect(redis: RedisConfig, config: ClientConfig) -> LockClient {
    let redis = redis
        .command_timeout(Duration::from_secs(2))
        .connect_timeout(Duration::from_secs(2));
    lock_redis::connect(redis, config)
        .await
        .expect("connect to the fixture")
}

mod plain {
    use super::*;

    async fn harness() -> RedisHarness {
        RedisHarness::start(KeyLayout::default(), |url, config| {
            connect(RedisConfig::new(url), config)
        })
        .await
    }

    lock_testkit::latch_conformance_tests!(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        harness = harness
    );
}

mod prefixed {
    use super::*;

    const PREFIX: &str = "billing:";

    async fn harness() -> RedisHarness {
        RedisHarness::start(KeyLayout::with_prefix(PREFIX), |url, config| {
            connect(RedisConfig::new(url).key_prefix(PREFIX), config)
        })
        .await
    }

    lock_testkit::latch_conformance_tests!(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        harness = harness
    );
}
