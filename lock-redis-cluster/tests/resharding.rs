//! Locks keep working, with no user-visible error and no two holders at
//! once, while their slot migrates between masters.

use crate::common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use lock_redis_cluster::slot::key_slot;
use lock_redis_cluster::{ClientConfig, PubSubMode};
use lock_testkit::fixtures::RedisCluster;
use lock_testkit::ExclusionChecker;

const TASKS: usize = 8;
const LOCKS: usize = 4;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn locks_survive_their_slot_migrating_back_and_forth() {
    let cluster = RedisCluster::start();
    // Every lock in one slot (their names share the hash tag), so the
    // migration moves all of them, holders and waiters alike.
    let names: Vec<String> = (0..LOCKS).map(|i| format!("{{moving}}:{i}")).collect();
    let slot = key_slot(&names[0]);
    let config = common::cluster::config(&cluster, PubSubMode::Auto);
    let client_config = ClientConfig::default().watchdog_timeout(Duration::from_secs(3));
    let clients = [
        common::cluster::client(&cluster, config.clone(), client_config.clone()).await,
        common::cluster::client(&cluster, config, client_config).await,
    ];
    let checkers: Vec<ExclusionChecker> = (0..LOCKS).map(|_| ExclusionChecker::new()).collect();
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();
    for t in 0..TASKS {
        let client = clients[t % 2].clone();
        let names = names.clone();
        let checkers = checkers.clone();
        let stop = stop.clone();
        tasks.push(tokio::spawn(async move {
            let mut errors = Vec::new();
            let mut round = t;
            while !stop.load(Ordering::Relaxed) {
                let i = round % LOCKS;
                round += 1;
                let lock = client.lock(&names[i]).unwrap();
                match lock.lock().await {
                    Ok(guard) => {
                        {
                            let _inside = checkers[i].enter(format!("task {t}"), None);
                            tokio::time::sleep(Duration::from_millis(1)).await;
                        }
                        if let Err(e) = guard.unlock().await {
                            errors.push(format!("unlock: {e}"));
                        }
                    }
                    Err(e) => errors.push(format!("lock: {e}")),
                }
            }
            errors
        }));
    }

    for _ in 0..2 {
        let from = cluster.master_of_slot(slot);
        let to = *cluster.master_ports().iter().find(|&&p| p != from).unwrap();
        cluster.begin_migration(slot, to);
        tokio::time::sleep(Duration::from_millis(300)).await;
        cluster.migrate_keys(slot);
        tokio::time::sleep(Duration::from_millis(300)).await;
        // Moves keys made on the source meanwhile (there should be none),
        // then hands the slot over.
        cluster.finish_migration(slot).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(cluster.master_of_slot(slot), to);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, Ordering::Relaxed);
    let mut errors = Vec::new();
    for task in tasks {
        errors.extend(task.await.unwrap());
    }
    assert!(errors.is_empty(), "user-visible errors: {errors:?}");
    for (name, checker) in names.iter().zip(&checkers) {
        assert!(
            checker.violations().is_empty(),
            "{name}: {:?}",
            checker.violations()
        );
        assert!(
            checker.entries() > 5,
            "{name} was hardly used: {}",
            checker.entries()
        );
    }
    for client in &clients {
        client.close().await;
    }
}

/// A waiter's sharded subscription moves with its slot: after the move, an
/// unlock still wakes it at once, long before the holder's lease would end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_is_woken_after_its_slot_moved() {
    let cluster = RedisCluster::start();
    let name = "moving-waiter";
    let slot = key_slot(name);
    let config = common::cluster::config(&cluster, PubSubMode::Sharded);
    let holder = common::cluster::client(&cluster, config.clone(), ClientConfig::default()).await;
    let waiter = common::cluster::client(&cluster, config, ClientConfig::default()).await;
    let guard = holder
        .lock(name)
        .unwrap()
        .lock_with_lease(Duration::from_secs(30))
        .await
        .unwrap();
    let waiting = {
        let waiter = waiter.clone();
        tokio::spawn(async move { waiter.lock(name).unwrap().lock().await })
    };
    while waiter.stats().waiting == 0 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let from = cluster.master_of_slot(slot);
    let to = *cluster.master_ports().iter().find(|&&p| p != from).unwrap();
    cluster.move_slot(slot, to).await;
    // Give the subscription time to follow (a topology refresh is at most
    // a few hundred milliseconds away).
    tokio::time::sleep(Duration::from_secs(1)).await;
    let unlocked = tokio::time::Instant::now();
    guard.unlock().await.unwrap();
    let got = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .expect("the waiter was not woken after its slot moved")
        .unwrap()
        .unwrap();
    let woken = unlocked.elapsed();
    assert!(woken < Duration::from_secs(2), "woken after {woken:?}");
    got.unlock().await.unwrap();
}
