//! The direct-handoff conformance suite against a real redis-server (one
//! per test): the checks every lock kind passes, and the handoff ones, on
//! clients of `lock_redis::connect`.

use lock_testkit::fixtures::RedisHarness;

async fn harness() -> RedisHarness {
    crate::conformance::harness().await
}

lock_testkit::handoff_conformance_tests!(
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    harness = harness
);
