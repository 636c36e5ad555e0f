//! A single address that checks hash slots (a proxy in front of a cluster;
//! here a one-node cluster owning every slot, which answers `CROSSSLOT` the
//! same way): with `slot_checking_proxy`, the watchdog's batched renewals
//! are split by slot and every lock is kept; without it, a renewal spanning
//! slots is refused and the locks are lost at the end of their lease.

use std::time::Duration;

use lock_redis::lock_script::slot::key_slot;
use lock_redis::{ClientConfig, Guard, LockClient, RedisConfig};
use lock_testkit::fixtures::RedisServer;
use tokio::time::timeout;

/// The watchdog lease: renewals every third of it.
const LEASE: Duration = Duration::from_millis(900);
/// Locks held at once: names in many slots, so every renewal batch spans
/// slots.
const LOCKS: usize = 20;

async fn client(server: &RedisServer, slot_checking: bool) -> LockClient {
    let redis = RedisConfig::new(server.url())
        .command_timeout(Duration::from_millis(300))
        .connect_timeout(Duration::from_millis(300))
        .slot_checking_proxy(slot_checking);
    lock_redis::connect(redis, ClientConfig::default().watchdog_timeout(LEASE))
        .await
        .unwrap()
}

async fn hold_many(client: &LockClient) -> Vec<Guard> {
    let names: Vec<String> = (0..LOCKS).map(|i| format!("proxied-{i}")).collect();
    let slots: std::collections::BTreeSet<u16> = names.iter().map(|n| key_slot(n)).collect();
    assert!(slots.len() > 1, "the names must span slots");
    let mut guards = Vec::new();
    for name in &names {
        guards.push(client.lock(name).unwrap().lock().await.unwrap());
    }
    guards
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renewals_grouped_by_slot_keep_every_lock() {
    let server = RedisServer::start_one_node_cluster();
    let client = client(&server, true).await;
    let guards = hold_many(&client).await;
    // Three leases: each lock is renewed several times or lost.
    let any_lost = futures::future::select_all(guards.iter().map(|g| Box::pin(g.lost())));
    assert!(
        timeout(LEASE * 3, any_lost).await.is_err(),
        "a lock was lost behind a slot-checking server"
    );
    for guard in guards {
        assert!(!guard.is_lost());
        guard.unlock().await.unwrap();
    }
    client.close().await;
}

/// The failure the option prevents: the same locks without it are lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ungrouped_renewals_are_refused_and_the_locks_lost() {
    let server = RedisServer::start_one_node_cluster();
    let client = client(&server, false).await;
    let guards = hold_many(&client).await;
    // Every lock is lost but those left in one slot: once the others are
    // lost, the survivors' renewal no longer spans slots and goes through.
    // (On a loaded machine the locks are taken far apart, so the last
    // taken can outlive the rest.) The bound only keeps a failing run from
    // hanging.
    let live_slots = || -> std::collections::BTreeSet<u16> {
        guards
            .iter()
            .filter(|g| !g.is_lost())
            .map(|g| key_slot(g.name().as_str()))
            .collect()
    };
    timeout(LEASE * 10, async {
        while live_slots().len() > 1 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("a renewal spanning slots is refused (CROSSSLOT)");
    assert!(
        guards.iter().any(|g| g.is_lost()),
        "a renewal spanning slots is refused (CROSSSLOT)"
    );
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn key_groups_are_hash_slots_only_with_the_option() {
    let server = RedisServer::start();
    for (on, expect_slot) in [(true, true), (false, false)] {
        let config = RedisConfig::new(server.url()).slot_checking_proxy(on);
        let env = lock_redis::connect_env(&config).await.unwrap();
        for key in ["a", "b", "{orders}:x", "redisson_lock__channel:{orders}"] {
            let want = if expect_slot {
                u32::from(key_slot(key))
            } else {
                0
            };
            assert_eq!(env.transport().key_group(key), want, "{key} (option {on})");
        }
        env.transport().close().await;
    }
}
