//! The conformance table of the in-memory store, under paused time: every
//! kind, with the checks every lock kind shares in full, on clients that
//! subscribe to unlock notices (`memory`) and on clients that wait by
//! polling and never subscribe (`polling`: the engine's other way of
//! waiting, checked in full here, where it costs no real time); and the
//! multi-lock and RedLock checks over five independent stores.

use std::sync::Arc;

use lock_testkit::conformance::polling::Polling;
use lock_testkit::conformance::{multi::STORES, RedisLayout};
use lock_testkit::InMemoryServer;

async fn memory() -> InMemoryServer {
    InMemoryServer::new()
}

async fn polling() -> Polling<InMemoryServer> {
    Polling::new(InMemoryServer::new())
}

lock_testkit::conformance_table! {
    #[tokio::test(start_paused = true)]
    // deployment   harness   shared checks   kinds
    memory       => memory,   full,           all;
    polling      => polling,  full,           all;
}

async fn stores() -> Vec<Arc<dyn RedisLayout>> {
    (0..STORES)
        .map(|_| Arc::new(InMemoryServer::new()) as Arc<dyn RedisLayout>)
        .collect()
}

mod multi {
    use super::stores;

    lock_testkit::multi_conformance_tests!(
        #[tokio::test(start_paused = true)]
        stores = stores
    );
}
