//! The conformance suite for direct-handoff locks on the in-memory backend,
//! under paused time.

use lock_testkit::InMemoryServer;

async fn harness() -> InMemoryServer {
    InMemoryServer::new()
}

lock_testkit::handoff_conformance_tests!(
    #[tokio::test(start_paused = true)]
    harness = harness
);
