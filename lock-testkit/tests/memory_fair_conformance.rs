//! The conformance suite for fair locks on the in-memory backend, under
//! paused time.

use lock_testkit::InMemoryServer;

async fn harness() -> InMemoryServer {
    InMemoryServer::new().fair()
}

lock_testkit::fair_conformance_tests!(
    #[tokio::test(start_paused = true)]
    harness = harness
);
