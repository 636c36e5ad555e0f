//! The conformance suite for read-write locks on the in-memory backend,
//! under paused time: the same server and clients as the reentrant suite,
//! the read-write handle of each client.

use lock_testkit::InMemoryServer;

async fn harness() -> InMemoryServer {
    InMemoryServer::new()
}

lock_testkit::rwlock_conformance_tests!(
    #[tokio::test(start_paused = true)]
    harness = harness
);
