//! The multi-lock and RedLock checks over five independent redis-servers
//! (one set per test).

use std::sync::Arc;
use std::time::Duration;

use lock_redis::{ClientConfig, KeyLayout, LockClient, RedisConfig};
use lock_testkit::conformance::{multi::STORES, Harness};
use lock_testkit::fixtures::RedisHarness;

async fn connect(url: String, config: ClientConfig) -> LockClient {
    let redis = RedisConfig::new(url)
        .command_timeout(Duration::from_secs(2))
        .connect_timeout(Duration::from_secs(2));
    lock_redis::connect(redis, config)
        .await
        .expect("connect to the fixture")
}

async fn stores() -> Vec<Arc<dyn Harness>> {
    let mut stores = Vec::with_capacity(STORES);
    for _ in 0..STORES {
        let harness = RedisHarness::start(KeyLayout::default(), connect).await;
        stores.push(Arc::new(harness) as Arc<dyn Harness>);
    }
    stores
}

lock_testkit::multi_conformance_tests!(
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    stores = stores
);
