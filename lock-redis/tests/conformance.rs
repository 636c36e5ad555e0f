//! The conformance table of this crate's deployments, one redis-server (or
//! Sentinel group, or five servers) per test. A single server runs every
//! kind with the checks every lock kind shares in full; the other
//! deployments run the smoke subset of those, and their kinds' own checks
//! in full: a key prefix (every key, helper key and channel must follow
//! it), clients that wait by polling (and never subscribe), the master
//! found through Sentinel (failovers are in `sentinel.rs`), and `rediss://`
//! (with the `tls` feature; refused certificates are in `tls.rs`).

use std::sync::Arc;
use std::time::Duration;

use lock_redis::{ClientConfig, KeyLayout, LockClient, RedisConfig};
use lock_testkit::conformance::polling::Polling;
use lock_testkit::conformance::{multi::STORES, RedisLayout};
use lock_testkit::fixtures::{RedisHarness, SentinelGroup, SENTINEL_MASTER_NAME};

const PREFIX: &str = "billing:";

lock_testkit::conformance_table! {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    // deployment   harness            shared checks   kinds
    single       => single_node,       full,           all;
    prefixed     => with_prefix,       smoke,          [reentrant, read_write, latch, semaphores];
    polling      => polling_clients,   smoke,          [reentrant, fair, handoff];
    sentinel     => through_sentinel,  smoke,          [reentrant, fair];
}

// TLS is a transport of its own, behind a feature: one lock kind proves it.
#[cfg(feature = "tls")]
lock_testkit::conformance_table! {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    tls          => over_tls,          smoke,          [reentrant];
}

/// A client of `redis` with short timeouts.
async fn connect(redis: RedisConfig, config: ClientConfig) -> LockClient {
    let redis = redis
        .command_timeout(Duration::from_secs(2))
        .connect_timeout(Duration::from_secs(2));
    lock_redis::connect(redis, config)
        .await
        .expect("connect to the fixture")
}

async fn single_node() -> RedisHarness {
    RedisHarness::start(KeyLayout::default(), |url, config| {
        connect(RedisConfig::new(url), config)
    })
    .await
}

async fn with_prefix() -> RedisHarness {
    RedisHarness::start(KeyLayout::with_prefix(PREFIX), |url, config| {
        connect(RedisConfig::new(url).key_prefix(PREFIX), config)
    })
    .await
}

async fn polling_clients() -> Polling<RedisHarness> {
    Polling::new(single_node().await)
}

/// A master and one sentinel; clients are given the sentinel's URL.
async fn through_sentinel() -> RedisHarness {
    let group = tokio::task::block_in_place(SentinelGroup::start_minimal);
    let raw = group.master().conn().await;
    let sentinel = group.sentinel_urls().remove(0);
    RedisHarness::over(
        raw.clone(),
        vec![raw],
        false,
        sentinel,
        KeyLayout::default(),
        |url, config| connect(RedisConfig::sentinel([url], SENTINEL_MASTER_NAME), config),
    )
    .keeping(group)
}

/// A server speaking TLS with a CA of its own, which clients trust; the
/// harness's raw commands use its plain port.
#[cfg(feature = "tls")]
async fn over_tls() -> RedisHarness {
    use lock_redis::TlsOptions;
    use lock_testkit::fixtures::{RedisServer, TlsCerts};

    let certs = TlsCerts::generate();
    let server = RedisServer::builder().tls(&certs).start();
    let raw = server.conn().await;
    let tls = TlsOptions::new().ca_pem(certs.ca_pem());
    RedisHarness::over(
        raw.clone(),
        vec![raw],
        false,
        server.tls_url(),
        KeyLayout::default(),
        // One connection per client: redis-rs reads and parses the
        // system's root certificates on every TLS connect (about 20 ms in
        // a debug build), so each lazily connected slot of a pool cost a
        // check that much, and under a loaded machine more than the
        // watchdog's 900 ms lease.
        move |url, config| connect(RedisConfig::new(url).tls(tls.clone()).pool_size(1), config),
    )
    .keeping(server)
}

/// Five independent servers.
async fn stores() -> Vec<Arc<dyn RedisLayout>> {
    let mut stores = Vec::with_capacity(STORES);
    for _ in 0..STORES {
        stores.push(Arc::new(single_node().await) as Arc<dyn RedisLayout>);
    }
    stores
}

/// The multi-lock and RedLock checks over five servers.
mod multi {
    use super::stores;

    lock_testkit::multi_conformance_tests!(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        stores = stores
    );
}
