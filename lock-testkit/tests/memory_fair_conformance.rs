//! The conformance suite for fair locks on the in-memory backend, under
//! paused time: the same server and clients as the reentrant suite, the
//! fair handle of each client.

use lock_testkit::InMemoryServer;

async fn harness() -> InMemoryServer {
    InMemoryServer::new()
}

lock_testkit::fair_conformance_tests!(
    #[tokio::test(start_paused = true)]
    harness = harness
);
