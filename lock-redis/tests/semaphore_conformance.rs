//! The semaphore kinds' conformance suite against a real redis-server (one
//! per test), without and with a key prefix: every key, channel and request
//! record must follow it.

use std::time::Duration;

use lock_redis::{ClientConfig, KeyLayout, LockClient, RedisConfig};
use lock_testkit::fixtures::RedisHarness;

const PREFIX: &str = "billing:";

async fn connect(url: String, config: ClientConfig) -> LockClient {
    let redis = RedisConfig::new(url)
        .command_timeout(Duration::from_secs(2))
        .connect_timeout(Duration::from_secs(2));
    lock_redis::connect(redis, config)
        .await
        .expect("connect to the fixture")
}

async fn connect_prefixed(url: String, config: ClientConfig) -> LockClient {
    let redis = RedisConfig::new(url)
        .key_prefix(PREFIX)
        .command_timeout(Duration::from_secs(2))
        .connect_timeout(Duration::from_secs(2));
    lock_redis::connect(redis, config)
        .await
        .expect("connect to the fixture")
}

async fn harness() -> RedisHarness {
    RedisHarness::start(KeyLayout::default(), connect).await
}

async fn prefixed_harness() -> RedisHarness {
    RedisHarness::start(KeyLayout::with_prefix(PREFIX), connect_prefixed).await
}

lock_testkit::semaphore_conformance_tests!(
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    harness = harness
);

mod prefixed {
    use super::prefixed_harness;

    lock_testkit::semaphore_conformance_tests!(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        harness = prefixed_harness
    );
}
