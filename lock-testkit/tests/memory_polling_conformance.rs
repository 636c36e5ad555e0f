//! The whole conformance suite (reentrant, fair, read-write, latch, semaphores) on the in-memory
//! backend with clients that wait by polling and never subscribe.

use lock_testkit::conformance::polling::Polling;
use lock_testkit::InMemoryServer;

async fn harness() -> Polling<InMemoryServer> {
    Polling::new(InMemoryServer::new())
}

lock_testkit::conformance_tests!(
    #[tokio::test(start_paused = true)]
    harness = harness
);

mod fair {
    use super::*;

    lock_testkit::fair_conformance_tests!(
        #[tokio::test(start_paused = true)]
        harness = harness
    );
}

mod handoff {
    use super::*;

    lock_testkit::handoff_conformance_tests!(
        #[tokio::test(start_paused = true)]
        harness = harness
    );
}

mod latch {
    use super::*;

    lock_testkit::latch_conformance_tests!(
        #[tokio::test(start_paused = true)]
        harness = harness
    );
}

mod semaphores {
    use super::*;

    lock_testkit::semaphore_conformance_tests!(
        #[tokio::test(start_paused = true)]
        harness = harness
    );
}

mod read_write {
    use super::*;

    lock_testkit::rwlock_conformance_tests!(
        #[tokio::test(start_paused = true)]
        harness = harness
    );
}
