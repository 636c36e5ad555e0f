//! The read-write lock's conformance suite against a real redis-server
//! (one per test), without and with a key prefix: every key, hold key and
//! channel must follow it.

use std::time::Duration;

use lock_redis::{ClientConfig, KeyLayout, LockClient, RedisConfig};
use lock_testkit::fixtures::RedisHarness;

async fn connect_with(prefix: &str, url: String, config: ClientConfig) -> LockClient {
    let redis = RedisConfig::new(url)
        .key_prefix(prefix)
        .command_timeout(Duration::from_secs(2))
        .connect_timeout(Duration::from_secs(2));
    lock_redis::connect(redis, config)
        .await
        .expect("connect to the fixture")
}

mod plain {
    use super::*;

    async fn connect(url: String, config: ClientConfig) -> LockClient {
        connect_with("", url, config).await
    }

    async fn harness() -> RedisHarness {
        RedisHarness::start(KeyLayout::default(), connect).await
    }

    lock_testkit::rwlock_conformance_tests!(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        harness = harness
    );
}

mod prefixed {
    use super::*;

    const PREFIX: &str = "billing:";

    async fn connect(url: String, config: ClientConfig) -> LockClient {
        connect_with(PREFIX, url, config).await
    }

    async fn harness() -> RedisHarness {
        RedisHarness::start(KeyLayout::with_prefix(PREFIX), connect).await
    }

    lock_testkit::rwlock_conformance_tests!(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        harness = harness
    );
}
