//! The multi-lock and RedLock checks over five independent in-memory
//! stores, under paused time.

use std::sync::Arc;

use lock_testkit::conformance::{multi::STORES, Harness};
use lock_testkit::InMemoryServer;

async fn stores() -> Vec<Arc<dyn Harness>> {
    (0..STORES)
        .map(|_| Arc::new(InMemoryServer::new()) as Arc<dyn Harness>)
        .collect()
}

lock_testkit::multi_conformance_tests!(
    #[tokio::test(start_paused = true)]
    stores = stores
);
